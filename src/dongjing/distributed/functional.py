"""The `all_reduce` op of the op table: a differentiable, out-of-place all-reduce that runs
eagerly, in static graphs and in dj.jit traces (data parallelism inside a compiled step)."""

from __future__ import annotations

from ..core.registry import Spec, define
from ..dispatch import apply1
from ..ops.convert import as_tensor
from .collectives import REDUCE_OPS, mpi_op, start_all_reduce
from .world import DistributedError, ensure_init, wait


def _infer(x: Spec, reduce: str):
    if reduce not in REDUCE_OPS:
        raise DistributedError(f"all_reduce: op must be one of {REDUCE_OPS}, got {reduce!r}")
    mpi_op(reduce, x.dtype)  # raises a DTypeError naming the op for a dtype it cannot reduce
    return x.shape, x.dtype


def _forward(xp, x, reduce: str):
    out = xp.array(x, order="C", copy=True)  # a fresh result; the input is never written
    world = ensure_init()
    if world.size > 1:
        wait(start_all_reduce(out, reduce), "all_reduce")
        if reduce == "mean":
            xp.divide(out, world.size, out=out)
    return out


def _grad(g, x, reduce: str, out):
    if reduce in ("sum", "mean"):
        # d/dx_r of sum_s L_s(y), y = reduce(x): every rank's gradient, reduced the same way
        return all_reduce(g, reduce)
    # max: the gradient goes to the elements that attained it, split evenly among ties
    hit = (x == out).to(g.dtype)
    return g * hit / all_reduce(hit, "sum")


# Not pure (random=True keeps constant folding and CSE away): the value depends on the other
# ranks, and every rank must run each all_reduce of the graph, in the same order.
_all_reduce = define("all_reduce", forward=_forward, infer=_infer, grads=(_grad,), random=True,
                     grad_name="AllReduceBackward0",
                     onnx_reason="a collective across processes has no ONNX form")


def all_reduce(x, op: str = "sum"):
    """`x` reduced over all ranks ("sum", "mean" or "max"), as a new tensor on the tape or in the
    graph; its gradient is the all-reduced gradient (for "max": to the maxima, ties shared).

    With world size 1 it is the identity (a copy).
    """
    x = as_tensor(x)
    return apply1(_all_reduce, x, reduce=str(op))
