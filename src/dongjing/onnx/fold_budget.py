"""How much a node computed at import time (constant folding) may allocate. A tiny model can
ask for a huge tensor (`ConstantOfShape` of [100000, 100000]); computing it while importing
would cost that memory before anything runs. Nodes whose outputs would exceed `FOLD_BUDGET`
are left to run time (as graph nodes, or broadcast views when run eagerly)."""

from __future__ import annotations

import numpy as np

from .errors import OnnxImportError

FOLD_BUDGET = 64 << 20  # bytes one folded node may produce
MAX_BYTES = 2 ** 62  # no array is larger: a shape past this is refused outright


def shape_bytes(shape, dtype, what: str) -> int:
    """Bytes of an array of `shape` (ints, checked non-negative) and `dtype`."""
    count = 1
    for d in shape:
        if d < 0:
            raise OnnxImportError(f"{what}: negative dim in shape {list(shape)}")
        count *= d
    size = count * np.dtype(dtype).itemsize
    if size > MAX_BYTES:
        raise OnnxImportError(f"{what}: shape {list(shape)} is too large for any array")
    return size


def _broadcast(*shapes) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        out.append(max(sizes) if sizes else 1)
    return tuple(out)


def _ints(t) -> list:
    return [int(v) for v in np.asarray(t._data).reshape(-1)]


def folded_bytes(node, ins) -> int | None:
    """An upper estimate of the bytes `node`'s outputs take when computed now from the static
    tensors `ins`, or None where the op's size is not estimated."""
    present = [t for t in ins if t is not None]
    if not present:
        return None
    itemsize = max(np.asarray(t._data).dtype.itemsize for t in present)
    op = node.op_type
    if op == "ConstantOfShape":
        return shape_bytes(_ints(ins[0]), np.float64, op)
    if op == "Expand" and len(ins) > 1:
        return shape_bytes(_broadcast(ins[0].shape, tuple(_ints(ins[1]))), np.float64, op)
    if op == "Pad" and len(ins) > 1:  # each dim grows by at most all the positive pads
        grow = sum(max(p, 0) for p in _ints(ins[1]))
        return itemsize * _product([d + grow for d in ins[0].shape])
    if op in ("MatMul", "Gemm") and len(present) >= 2:
        a, b = present[0].shape, present[1].shape
        batch = _broadcast(a[:-2], b[:-2])
        rows = a[-2] if len(a) > 1 else 1
        return itemsize * _product(batch) * rows * (b[-1] if b else 1)
    return itemsize * _product(_broadcast(*[t.shape for t in present]))


def _product(shape) -> int:
    out = 1
    for d in shape:
        out *= max(int(d), 0)
    return out


def too_big_to_fold(node, ins) -> bool:
    """True when folding `node` now would allocate more than FOLD_BUDGET."""
    try:
        size = folded_bytes(node, ins)
    except OnnxImportError:
        return True  # a bad shape: the op's own import rule reports it, naming the node
    except (ValueError, TypeError, IndexError):
        return False  # the reference evaluator reports it
    return size is not None and size > FOLD_BUDGET
