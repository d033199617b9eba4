"""`dj.autograd.Variable`: the legacy PyTorch (< 0.4) wrapper that old tutorials still import.
It returns a plain Tensor; it is not the static graph's state holder `dj.Variable`."""

from __future__ import annotations

import warnings

from ..tensor import Tensor


def Variable(data, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # noqa: N802
    """`data` as a Tensor (itself when it already is one and `requires_grad` is False; a leaf
    sharing its memory that requires grad otherwise), as PyTorch >= 0.4 does."""
    if volatile:
        warnings.warn("volatile was removed and has no effect; use `with dj.no_grad():` instead",
                      UserWarning, stacklevel=2)
    if not isinstance(data, Tensor):
        if hasattr(data, "__array__") or isinstance(data, (list, tuple, int, float)):
            return Tensor(data, requires_grad=requires_grad)
        raise TypeError(f"Variable(data): data must be a Tensor, got {type(data).__name__}")
    if not requires_grad:
        return data
    return data.detach().requires_grad_(True)
