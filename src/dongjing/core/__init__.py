"""The ground floor: the op record and table, shape inference, argument checks, eager-mode flags."""
