"""ONNX imports of elementwise functions, reductions and indexing ops beyond the op table's 1:1
inverses: `MATH_IMPORTS[op_type](ctx, ins, attrs)` as in `import_ops`, each written with
dongjing ops (eager, graph, dj.jit, gradients)."""

from __future__ import annotations

import numpy as np

from .. import ops
from ..tensor import Tensor
from .errors import OnnxImportError
from .import_ops import _reduce


def _axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def _opt(ins: list, i: int):
    return ins[i] if len(ins) > i else None


def _static_ints(ctx, t, what: str) -> list:
    return [int(v) for v in np.asarray(ctx.static(t, what)).reshape(-1)]


# --- elementwise ---------------------------------------------------------------------------
def _mod(ctx, ins, attrs):
    a, b = ins
    if attrs.get("fmod", 0):
        return ops.fmod(a, b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        raise OnnxImportError("fmod=0 on floats is invalid ONNX (floats need fmod=1)")
    return ops.remainder(a, b)


def _mean(ctx, ins, attrs):
    out = ins[0]
    for other in ins[1:]:
        out = out + other
    return out / float(len(ins)) if len(ins) > 1 else out


def _xor(ctx, ins, attrs):
    a, b = ins
    if a.dtype != np.bool_ or b.dtype != np.bool_:
        raise OnnxImportError(f"expects bool inputs, got {a.dtype} and {b.dtype}")
    return ops.ne(a, b)


def _pow(ctx, ins, attrs):
    """Pow; a float base to a constant scalar exponent is dongjing's pow_scalar (x**2 and x**3
    as products, as dongjing computes them), so a round trip gives the same bits."""
    x, exponent = ins
    if x.dtype.kind == "f" and ctx.is_static(exponent) and exponent.ndim == 0:
        value = float(np.asarray(ctx.static(exponent, "Y")))
        return ops.pow(x, int(value) if value.is_integer() else value)
    return ops.cast(ops.pow(x, exponent), x.dtype)


def _cast_like(ctx, ins, attrs):
    return ops.cast(ins[0], ins[1].dtype)


ELEMENTWISE: dict = {
    "Mod": _mod,
    "Reciprocal": lambda ctx, ins, attrs: ops.reciprocal(ins[0]),
    "Floor": lambda ctx, ins, attrs: ops.floor(ins[0]),
    "Ceil": lambda ctx, ins, attrs: ops.ceil(ins[0]),
    "Round": lambda ctx, ins, attrs: ops.round(ins[0]),  # half to even, as ONNX
    "Asinh": lambda ctx, ins, attrs: ops.asinh(ins[0]),
    "Acosh": lambda ctx, ins, attrs: ops.acosh(ins[0]),
    "Atanh": lambda ctx, ins, attrs: ops.atanh(ins[0]),
    "Mean": _mean,
    "Xor": _xor,
    "CastLike": _cast_like,
    "Pow": _pow,
}


# --- reductions ----------------------------------------------------------------------------
def _prod(x, axes, keep):
    for a in sorted(axes, reverse=True):
        x = ops.prod(x, a, keepdim=True)
    return x if keep else ops.squeeze(x, tuple(axes))


def _sum_square(x, axes, keep):
    return ops.sum(x * x, axes, keepdim=keep)


def _log_sum_exp(x, axes, keep):
    top = ops.stop_gradient(ops.amax(x, axes, keepdim=True))  # for range only: cancels out
    top = ops.where(ops.isinf(top), ops.zeros_like(top), top)
    out = ops.log(ops.sum(ops.exp(x - top), axes, keepdim=True)) + top
    return out if keep else ops.squeeze(out, axes)


REDUCTIONS: dict = {
    "ReduceProd": _reduce(_prod, 18),
    "ReduceSumSquare": _reduce(_sum_square, 18),
    "ReduceL1": _reduce(lambda x, axes, keep: ops.sum(ops.abs(x), axes, keepdim=keep), 18),
    "ReduceL2": _reduce(lambda x, axes, keep: ops.sqrt(_sum_square(x, axes, keep)), 18),
    "ReduceLogSum": _reduce(lambda x, axes, keep: ops.log(ops.sum(x, axes, keepdim=keep)), 18),
    "ReduceLogSumExp": _reduce(_log_sum_exp, 18),
}


# --- sequences and indexing ----------------------------------------------------------------
def _cumsum(ctx, ins, attrs):
    x = ins[0]
    axis = _axis(_static_ints(ctx, ins[1], "axis")[0], x.ndim)
    out = ops.scan.running_sum(x, axis, reverse=bool(attrs.get("reverse", 0)))
    return out - x if attrs.get("exclusive", 0) else out


def _range(ctx, ins, attrs):
    start, limit, delta = (np.asarray(ctx.static(t, name)) for t, name in
                           zip(ins, ("start", "limit", "delta")))
    if delta == 0:
        raise OnnxImportError("delta must not be zero")
    count = max(int(np.ceil((limit - start) / delta)), 0)
    return Tensor._make((start + np.arange(count) * delta).astype(start.dtype))


def _tile(ctx, ins, attrs):
    x = ins[0]
    reps = _static_ints(ctx, ins[1], "repeats")
    if len(reps) != x.ndim:
        raise OnnxImportError(f"repeats {reps} must have one entry per dim of {x.shape}")
    return ops.tile(x, tuple(reps))


def _split(ctx, ins, attrs):
    x = ins[0]
    axis = _axis(attrs.get("axis", 0), x.ndim)
    size = x.shape[axis]
    if size is None:
        raise OnnxImportError(f"the split dim of {x.shape} must be known")
    if ctx.opset < 13:
        sizes = attrs.get("split")
    else:
        sizes = _static_ints(ctx, ins[1], "split") if _opt(ins, 1) is not None else None
    if sizes is None:
        parts = attrs.get("num_outputs") or ctx.outputs_wanted
        chunk = -(-size // parts)
        sizes = [min(chunk, size - i * chunk) for i in range(parts)]
    if sum(sizes) != size or any(s < 0 for s in sizes):
        raise OnnxImportError(f"split sizes {list(sizes)} do not add up to dim {axis} of "
                              f"{x.shape}")
    bounds = np.cumsum([0] + list(sizes))
    lead = (slice(None),) * axis
    return tuple(x[lead + (slice(int(a), int(b)),)] for a, b in zip(bounds[:-1], bounds[1:]))


def _topk(ctx, ins, attrs):
    x = ins[0]
    k = _static_ints(ctx, ins[1], "K")[0] if ctx.opset >= 10 else int(attrs["k"])
    values, indices = ops.topk(x, k, _axis(attrs.get("axis", -1), x.ndim),
                               largest=bool(attrs.get("largest", 1)),
                               sorted=bool(attrs.get("sorted", 1)))
    return values, ops.cast(indices, np.int64)


def _einsum(ctx, ins, attrs):
    equation = attrs["equation"]
    return ops.einsum(equation.decode() if isinstance(equation, bytes) else equation, *ins)


def _wrap(index: Tensor, size: int) -> Tensor:
    """ONNX's negative indices count from the end."""
    return ops.where(index < 0, index + size, index)


def _gather_nd(ctx, ins, attrs):
    """GatherND (batch_dims=0): the last axis of `indices` indexes the leading dims of x."""
    x, index = ins
    if attrs.get("batch_dims", 0):
        raise OnnxImportError(f"batch_dims={attrs['batch_dims']} is not supported (only 0)")
    depth = index.shape[-1]
    if depth is None or depth > x.ndim:
        raise OnnxImportError(f"indices {index.shape} must end in a known dim of at most "
                              f"{x.ndim} (the data's rank)")
    key = tuple(index[..., j] if x.shape[j] is None else _wrap(index[..., j], x.shape[j])
                for j in range(depth))
    return x[key]


def _one_hot(ctx, ins, attrs):
    indices, values = ins[0], ins[2]
    depth = int(np.asarray(ctx.static(ins[1], "depth")).reshape(()))
    index = _wrap(ops.cast(indices, np.int64), depth)
    hot = ops.one_hot(index, depth, dtype=np.bool_)
    out = ops.where(hot, values[1], values[0])
    axis = _axis(attrs.get("axis", -1), indices.ndim + 1)
    return ops.moveaxis(out, -1, axis) if axis != indices.ndim else out


def _gather_elements(ctx, ins, attrs):
    x, index = ins
    axis = _axis(attrs.get("axis", 0), x.ndim)
    return ops.gather(x, axis, _wrap(index, x.shape[axis]))


def _scatter_elements(ctx, ins, attrs):
    data, index, updates = ins
    axis = _axis(attrs.get("axis", 0), data.ndim)
    reduction = attrs.get("reduction", b"none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    if reduction not in ("none", "add"):
        raise OnnxImportError(f"reduction={reduction!r} is not supported (none, add)")
    index = _wrap(index, data.shape[axis])
    if reduction == "add":
        return ops.scatter_add(data, axis, index, updates)
    return ops.scatter(data, axis, index, updates)


def _trilu(ctx, ins, attrs):
    x = ins[0]
    k = _static_ints(ctx, ins[1], "k")[0] if _opt(ins, 1) is not None else 0
    return ops.triu(x, k) if attrs.get("upper", 1) else ops.tril(x, k)


def _size(ctx, ins, attrs):
    x = ins[0]
    if any(d is None for d in x.shape):
        raise OnnxImportError(f"the shape {x.shape} must be known")
    return Tensor._make(np.asarray(int(np.prod(x.shape)), dtype=np.int64))


def _non_zero(ctx, ins, attrs):
    """(ndim, count) indices of the nonzero entries: each dim's coordinates selected by the
    mask (data-dependent length, as masked_select)."""
    x = ins[0]
    if any(d is None for d in x.shape):
        raise OnnxImportError(f"the shape {x.shape} must be known")
    if x.ndim == 0:
        x = ops.reshape(x, (1,))
    mask = ops.ne(x, ops.zeros_like(x))
    grids = np.indices(x.shape, dtype=np.int64)
    return ops.stack([ops.masked_select(Tensor._make(g), mask) for g in grids], 0)


INDEXING: dict = {
    "CumSum": _cumsum,
    "Range": _range,
    "Tile": _tile,
    "Split": _split,
    "TopK": _topk,
    "Einsum": _einsum,
    "OneHot": _one_hot,
    "GatherElements": _gather_elements,
    "GatherND": _gather_nd,
    "ScatterElements": _scatter_elements,
    "Trilu": _trilu,
    "Size": _size,
    "NonZero": _non_zero,
}

MATH_IMPORTS: dict = {**ELEMENTWISE, **REDUCTIONS, **INDEXING}
