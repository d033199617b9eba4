"""Eager `cross_entropy` on class indices as one tape node (log_softmax and the pick together).

The composed loss records five nodes (log_softmax, mul, sum, neg, mean) whose backward runs
five vjps; this node's backward is `softmax(z) - one_hot(y)` scaled by the incoming gradient,
in a few NumPy calls. The arithmetic is the composed path's, term for term, so values and
gradients are bit-identical to it. Used only for plain eager NumPy tensors with every target
a valid class (`fused_cross_entropy` returns None otherwise and the composed path runs, with
its errors); graphs and traces keep the composed ops.
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import ops
from ..autograd.anomaly import state as anomaly_state
from ..autograd.function import BackwardNode, accumulator_of
from ..autograd.grad_mode import state as grad_state
from ..autograd.provenance import caller
from ..core import profiler_hooks as _profiler
from ..dtypes import LOW_PRECISION, is_floating
from ..graph.builder import state as graph_state
from ..ops.activation import _log_softmax_out
from ..ops.reduce import _sum_forward
from ..tensor import Tensor, grad_scope

_ndarray = np.ndarray


class CrossEntropyLossBackward0(BackwardNode):
    """The tape node of an eager `F.cross_entropy` on class indices (log_softmax + nll)."""

    __slots__ = ()


class _Op:
    """What the engine asks of a node's `op`."""

    name = "cross_entropy"
    saves_output = False

    @staticmethod
    def vjp(grad, inputs, out, needs, attrs):
        return (_backward(grad, inputs[0], attrs),)


_OP = _Op()


def fused_cross_entropy(logits: Tensor, target: Tensor, reduction: str, ignore_index: int):
    """The loss as one node, or None when the fused path does not apply."""
    z, y = logits._data, target._data
    if (type(z) is not _ndarray or type(y) is not _ndarray or logits._node is not None
            or target._node is not None or z.ndim != 2 or y.ndim != 1 or z.shape[0] != y.shape[0]
            or not is_floating(z.dtype) or z.dtype in LOW_PRECISION  # 16-bit: widened there
            or y.dtype.kind not in "iu" or z.shape[0] == 0
            or z.shape[1] == 0 or reduction not in ("mean", "sum", "none")):
        return None
    if (_profiler.on or anomaly_state.on or grad_scope.current is not None
            or graph_state.graph is not None):
        return None
    classes = z.shape[1]
    if 0 <= ignore_index < classes or _unsigned(y).max() >= classes:
        return None  # an ignored or invalid class: the composed path masks or raises
    log_probs = _log_softmax_out(np, z, 1, np.empty_like(z))
    rows = _rows(y.shape[0])
    per_example = np.negative(log_probs[rows, y])
    if reduction == "none":
        value = per_example
    else:
        value = _sum_forward(np, per_example)
        if reduction == "mean":
            value = np.true_divide(value, np.asarray(y.shape[0], z.dtype))
    value = np.asarray(value, z.dtype)
    if not (logits.requires_grad and grad_state.grad_enabled):
        return Tensor._make(value)
    result = Tensor._make(value, True)
    node = CrossEntropyLossBackward0.__new__(CrossEntropyLossBackward0)
    node.op = _OP
    attrs = {"reduction": reduction}
    node.attrs = attrs
    node.inputs = (logits,)
    node.versions = (logits._version[0],)
    fn = logits.grad_fn
    node.next_functions = ((fn if fn is not None else accumulator_of(logits), 0),)
    node.needs = (True,)
    node.out_data = (log_probs, y)  # dropped by the engine after a backward without retain
    node.pre_hooks = None
    node.freed = False
    node.where = caller()
    attrs["node"] = weakref.ref(node)
    result.grad_fn = node
    return result


def _unsigned(y: np.ndarray) -> np.ndarray:
    """Integer labels as unsigned integers of their width (a view): a negative label becomes
    larger than any class count, so one `max` checks both bounds."""
    return y if y.dtype.kind == "u" else y.view(f"u{y.dtype.itemsize}")


_ROWS: dict = {}  # n -> a read-only arange(n), the row index of every pick


def _rows(n: int) -> np.ndarray:
    found = _ROWS.get(n)
    if found is None:
        if len(_ROWS) > 64:  # many batch sizes: start over
            _ROWS.clear()
        found = np.arange(n)
        found.flags.writeable = False
        _ROWS[n] = found
    return found


_ZEROS: dict = {}  # dtype -> a read-only 0-d zero


def _zero(dtype) -> np.ndarray:
    found = _ZEROS.get(dtype)
    if found is None:
        found = _ZEROS[dtype] = np.zeros((), dtype)
        found.flags.writeable = False
    return found


def _backward(grad: Tensor, logits: Tensor, attrs: dict) -> Tensor:
    """softmax(z) * c - one_hot(y) * c, c the gradient of each example's loss, as the composed
    path computes it: 0 - e * (-c) off the target (so + 0.0, which turns a -0.0 into +0.0) and
    -c - e * (-c) at it, where e = exp(log_probs)."""
    log_probs, y = attrs["node"]().out_data
    reduction = attrs["reduction"]
    if grad_state.grad_enabled:  # create_graph: the same terms as recorded ops
        return _differentiable(grad, logits, y, reduction)
    dtype = log_probs.dtype
    c = np.asarray(grad._data, dtype)
    if reduction == "mean":
        c = np.asarray(np.true_divide(c, np.asarray(y.shape[0], dtype)), dtype)
    out = np.exp(log_probs)
    np.multiply(out, c[:, None] if reduction == "none" else c, out=out)
    np.add(out, _zero(dtype), out=out)
    out[_rows(y.shape[0]), y] -= c
    return Tensor._make(out)


def _differentiable(grad: Tensor, logits: Tensor, y, reduction: str) -> Tensor:
    probs = ops.exp(ops.log_softmax(logits, 1))
    q = ops.one_hot(Tensor._make(y), logits.shape[1], logits.dtype)
    if reduction == "mean":
        grad = grad / float(y.shape[0])
    if reduction == "none":
        grad = ops.unsqueeze(grad, 1)
    return (probs - q) * grad
