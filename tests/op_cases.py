"""The case table behind the registry-driven op tests: every op in the op table has cases here.

A case is a function of Tensors and the input arrays to call it with. Float inputs are
differentiated (gradcheck, in float64); integer/bool inputs are passed as they are. An op added
to the table without a case here fails `test_every_op_has_a_case`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import dongjing as dj
from dongjing.ops.broadcast import sum_to_like
from dongjing.ops.index import Slot, getitem_grad, slice_assign
from dongjing.ops.scatter import index_in_range


@dataclass
class Case:
    fn: object  # (*tensors) -> Tensor
    inputs: tuple  # numpy arrays
    name: str = ""
    grad: bool = True  # gradcheck this case (False: forward / graph checks only)
    tags: tuple = field(default_factory=tuple)
    tol: dict = field(default_factory=dict)  # gradcheck eps/atol/rtol overrides


def _r(*shape, seed=0, low=-1.0, high=1.0):
    return np.random.default_rng(seed + len(shape)).uniform(low, high, shape)


def _pos(*shape, seed=0):
    return _r(*shape, seed=seed, low=0.5, high=2.0)


def _apart(*shape, seed=0):
    """Values at least 0.1 apart, so max/min/relu/abs kinks are not straddled by gradcheck."""
    n = int(np.prod(shape))
    vals = np.random.default_rng(seed).permutation(n) * 0.1 - n * 0.05 + 0.037
    return vals.reshape(shape)


def _ints(*shape, high=3, seed=0):
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int64)


CASES: dict[str, list[Case]] = {
    "add": [Case(dj.add, (_r(3, 4), _r(3, 4, seed=1))),
            Case(dj.add, (_r(3, 4), _r(4, seed=1)), "broadcast"),
            Case(dj.add, (_r(3, 1), _r(1, 4, seed=1)), "broadcast both")],
    "sub": [Case(dj.sub, (_r(2, 3), _r(3, seed=1)), "broadcast")],
    "mul": [Case(dj.mul, (_r(2, 3), _r(2, 1, seed=1)), "broadcast"),
            Case(lambda a: a * a, (_r(4),), "same input twice")],
    "div": [Case(dj.div, (_r(2, 3), _pos(3, seed=1)), "broadcast")],
    "neg": [Case(dj.neg, (_r(5),))],
    "pow": [Case(dj.pow, (_pos(2, 3), _r(3, seed=1)), "tensor exponent")],
    "pow_scalar": [Case(lambda x: x**3, (_r(4),)), Case(lambda x: x**2, (_r(2, 2),)),
                   Case(lambda x: dj.pow(x, 1.5), (_pos(4),)),
                   Case(lambda x: dj.pow(x, -1), (_pos(3),))],
    "exp": [Case(dj.exp, (_r(3, 2),))],
    "log": [Case(dj.log, (_pos(4),)),
            Case(lambda x: dj.logsumexp(x, dim=1), (_r(2, 5),), "logsumexp")],
    "sqrt": [Case(dj.sqrt, (_pos(4),))],
    "abs": [Case(dj.abs, (_apart(5),))],
    "tanh": [Case(dj.tanh, (_r(3, 3),))],
    "tanh_backward": [Case(dj.ops.elementwise.tanh_backward, (_r(3, 3), _r(3, 3, seed=1)))],
    "sigmoid": [Case(dj.sigmoid, (_r(6) * 5,))],
    "relu": [Case(dj.relu, (_apart(2, 5),))],
    "binary_cross_entropy": [
        Case(dj.ops.bce.binary_cross_entropy, (_r(3, 4, low=0.1, high=0.9),
                                               _r(3, 4, seed=1, low=0.0, high=1.0))),
        Case(dj.ops.bce.binary_cross_entropy, (_r(2, 3, low=0.2, high=0.8),
                                               _r(3, seed=2, low=0.0, high=1.0)), "broadcast")],
    "log_softmax": [Case(lambda x: dj.log_softmax(x, dim=1), (_r(3, 4) * 3,)),
                    Case(lambda x: dj.softmax(x, dim=0), (_r(3, 2),), "softmax")],
    "relu_backward": [Case(dj.ops.elementwise.relu_backward, (_r(2, 5), _apart(2, 5)))],
    "index_in_range": [Case(lambda i, x: index_in_range(i, x, 1, "test"),
                            (_ints(5, high=4), _r(2, 4)), grad=False)],
    "sign": [Case(dj.sign, (_apart(4),)),
             Case(dj.sign, (_ints(4, high=9) - 4,), "int", grad=False)],
    "maximum": [Case(dj.maximum, (_apart(3, 4), _apart(4, seed=1) + 0.03), "broadcast")],
    "minimum": [Case(dj.minimum, (_apart(3, 4), _apart(3, 1, seed=1) + 0.03), "broadcast")],
    "where": [Case(lambda c, a, b: dj.where(c, a, b),
                   (np.array([True, False, True]), _r(2, 3), _r(3, seed=1)), "broadcast")],
    "clip": [Case(lambda x: dj.clip(x, -0.3, 0.42), (_apart(8) * 0.9,))],
    "eq": [Case(dj.eq, (_apart(3), _apart(3)), grad=False)],
    "ne": [Case(dj.ne, (_apart(3), _apart(3, seed=1)), grad=False)],
    "lt": [Case(dj.lt, (_r(3), _r(3, seed=1)), grad=False)],
    "le": [Case(dj.le, (_r(3), _r(3, seed=1)), grad=False)],
    "gt": [Case(dj.gt, (_r(3), _r(3, seed=1)), grad=False)],
    "ge": [Case(dj.ge, (_r(2, 3), _r(3, seed=1)), grad=False)],
    "logical_and": [Case(dj.logical_and, (np.array([True, False]), np.array([True, True])),
                         grad=False)],
    "logical_or": [Case(dj.logical_or, (np.array([True, False]), np.array([False, False])),
                        grad=False)],
    "logical_not": [Case(dj.logical_not, (np.array([True, False]),), grad=False)],
    "cast": [Case(lambda x: dj.ops.cast(x, dj.float32), (_r(3),), "float64 to float32",
                  tol=dict(eps=1e-2, atol=1e-4)),
             Case(lambda x: dj.ops.cast(x, dj.float64), (_ints(3),), "int to float",
                  grad=False)],
    "clone": [Case(dj.ops.clone, (_r(3),))],
    "fill_like": [Case(lambda x: dj.ops.full_like(x, 2.5), (_r(2, 2),), grad=False)],
    "stop_gradient": [Case(lambda x: dj.stop_gradient(x) * x, (_r(3),))],
    "sum": [Case(lambda x: dj.sum(x), (_r(3, 4),), "all"),
            Case(lambda x: dj.sum(x, dim=1), (_r(3, 4),), "dim"),
            Case(lambda x: dj.sum(x, dim=(0, 2), keepdim=True), (_r(2, 3, 4),), "keepdim")],
    "amax": [Case(lambda x: dj.amax(x, dim=1), (_apart(3, 4),)),
             Case(lambda x: dj.amax(x), (_apart(3, 4),), "all"),
             Case(lambda x: dj.amax(x, dim=0, keepdim=True), (_apart(3, 4),), "keepdim")],
    "amin": [Case(lambda x: dj.amin(x, dim=-1), (_apart(2, 5),))],
    "argmax": [Case(lambda x: dj.argmax(x, dim=1), (_apart(3, 4),), grad=False)],
    "argmin": [Case(lambda x: dj.argmin(x), (_apart(3, 4),), grad=False)],
    "count": [Case(lambda x: dj.mean(x, dim=0), (_r(3, 2),), "mean is sum / count")],
    "matmul": [Case(dj.matmul, (_r(3, 4), _r(4, 2, seed=1)), "2-d"),
               Case(dj.matmul, (_r(4), _r(4, 2, seed=1)), "1-d @ 2-d"),
               Case(dj.matmul, (_r(3, 4), _r(4, seed=1)), "2-d @ 1-d"),
               Case(dj.matmul, (_r(4), _r(4, seed=1)), "1-d @ 1-d"),
               Case(dj.matmul, (_r(2, 3, 4), _r(4, 2, seed=1)), "batched, broadcast"),
               Case(dj.matmul, (_r(2, 1, 3, 4), _r(3, 4, 2, seed=1)), "broadcast batch dims")],
    "reshape": [Case(lambda x: dj.reshape(x, (4, -1)), (_r(2, 3, 2),))],
    "reshape_like": [Case(lambda x, y: dj.ops.reshape_like(x, y), (_r(6), _r(2, 3)))],
    "permute": [Case(lambda x: dj.permute(x, (2, 0, 1)), (_r(2, 3, 4),)),
                Case(lambda x: x.T, (_r(2, 3),), ".T")],
    "expand": [Case(lambda x: dj.expand(x, (2, 3, 4)), (_r(3, 1),))],
    "broadcast_to_like": [Case(lambda x, y: dj.ops.broadcast_to_like(x, y), (_r(1, 3), _r(2, 3)))],
    "unsqueeze": [Case(lambda x: dj.unsqueeze(x, 1), (_r(2, 3),))],
    "squeeze": [Case(lambda x: dj.squeeze(x, 1), (_r(2, 1, 3),))],
    "concat": [Case(lambda a, b: dj.concat([a, b], dim=1), (_r(2, 3), _r(2, 2, seed=1))),
               Case(lambda a, b: dj.stack([a, b], dim=0), (_r(3), _r(3, seed=1)), "stack")],
    "getitem": [Case(lambda x: x[1], (_r(3, 4),), "int"),
                Case(lambda x: x[:, 1:3], (_r(3, 4),), "slice"),
                Case(lambda x: x[None, ..., ::2], (_r(3, 4),), "None, Ellipsis, step"),
                Case(lambda x: x[np.array([0, 2, 0])], (_r(3, 4),), "int array, repeats"),
                Case(lambda x, i: x[dj.arange(4), i], (_r(4, 3), _ints(4)), "gather pairs"),
                Case(lambda x: x[x > 0], (_apart(3, 4),), "bool mask")],
    "sum_to_like": [Case(lambda g, x: sum_to_like(g, x), (_r(2, 3, 4), _r(3, 1, seed=1)),
                         "broadcast dims summed at run time")],
    "slice_assign": [Case(lambda x, v: slice_assign(x, v, (1, ("slice", 0, 3, 2))),
                          (_r(3, 4), _r(2, seed=1)), "the CopySlices behind view writes")],
    "getitem_grad": [Case(lambda g, x: getitem_grad(g, x, [], (0,)), (_r(4), _r(3, 4)),
                          "the scatter-add behind getitem's gradient"),
                     Case(lambda g, x, i: getitem_grad(g, x, [i], (Slot(0),)),
                          (_r(3, 4), _r(2, 4), np.array([1, 0, 1])), "repeated rows add up")],
}


from op_cases_linalg import LINALG_CASES  # noqa: E402
from op_cases_nn import NN_CASES  # noqa: E402

CASES.update(NN_CASES)
CASES.update(LINALG_CASES)

# dj.distributed's op: at world size 1 (pytest) an identity whose rules still go through the op
CASES["all_reduce"] = [
    Case(lambda x: dj.distributed.functional.all_reduce(x, "sum"), (_r(3, 4),), "sum"),
    Case(lambda x: dj.distributed.functional.all_reduce(x * x, "mean"), (_r(5),), "mean"),
    Case(lambda x: dj.distributed.functional.all_reduce(x, "max"), (_apart(2, 3),), "max"),
]
# dj.distributed.tensor_parallel's ops: at world size 1 identities (split and gather whole)
_tp = dj.distributed.tensor_parallel
CASES["tp_copy"] = [Case(lambda x: _tp.copy(x * x), (_r(3, 4),))]
CASES["tp_reduce"] = [Case(lambda x: _tp.reduce(x * x), (_r(3, 4),))]
CASES["tp_gather"] = [Case(lambda x: _tp.gather(x * x, -1), (_r(3, 4),))]
CASES["tp_split"] = [Case(lambda x: _tp.split(x * x, 0), (_r(3, 4),))]
CASES["tp_reduce_scatter"] = [Case(lambda x: _tp.reduce_scatter(x * x, 1), (_r(3, 4),))]

from dongjing.compat.v1.random_ops import _random  # noqa: E402  (registered by compat.v1)
from dongjing.dispatch import apply, apply1  # noqa: E402

CASES["tf_random"] = [Case(lambda x: x + apply1(
    _random, x, shape=(3, 2), dtype=np.dtype("float64"), dist="normal", a=0.0, b=1.0, rng=None),
    (_r(3, 2),), grad=False)]

# compat.v1's ops of run-time shapes, sampling, tf.case's check and tf.Print
import dongjing.compat.v1.control_more as _tf_control  # noqa: E402
import dongjing.compat.v1.dynamic_shape as _tf_shapes  # noqa: E402
import dongjing.compat.v1.nn_ops as _tf_nn  # noqa: E402

CASES["tf_shape"] = [Case(lambda x: x * dj.cast(_tf_shapes.shape_of(x)[0], dj.float64),
                          (_r(3, 2),), grad=False)]
CASES["tf_reshape_to"] = [Case(lambda x: _tf_shapes.reshape_to(
    x, _tf_shapes.shape_of(x.T)) * 2.0, (_r(3, 2),))]


def _tf_range_case(x):
    n = dj.cast(_tf_shapes.shape_of(x)[0], dj.int64)
    return x * dj.cast(_tf_shapes.arange(n * 0, n, n * 0 + 1, np.int64), dj.float64)


CASES["tf_range"] = [Case(_tf_range_case, (_r(3),), grad=False)]
CASES["tf_unique"] = [Case(lambda x: apply1(_tf_shapes.unique_op, x), (np.array([3, 1, 3, 2]),),
                          grad=False)]
CASES["tf_unique_index"] = [Case(lambda x: apply1(_tf_shapes.unique_index_op, x,
                                                  dtype=np.dtype(np.int32)),
                                 (np.array([3, 1, 3, 2]),), grad=False)]
from dongjing.compat.v1 import data as _tf_data  # noqa: E402
from dongjing.core.registry import Spec as _Spec  # noqa: E402

# iterators over endless datasets of one repeated element: every read gives the same values
_tf_it = _tf_data.Iterator(_tf_data.Dataset.from_tensors(
    (np.array([1.0, 2.0]), np.array([[3.0], [4.0]]))).repeat(), started=True)
_tf_spec = _Spec((2,), np.dtype(np.float64))


def _tf_next(x):
    return apply1(_tf_data._next_op, x, iterator=_tf_it, spec=_tf_spec)


CASES["tf_iterator_next"] = [Case(lambda x: x * _tf_next(x), (_r(2),), grad=False)]
CASES["tf_iterator_component"] = [Case(lambda x: x * apply(
    _tf_data._component_op, _tf_next(x), iterator=_tf_it, index=1,
    spec=_Spec((2, 1), np.dtype(np.float64))), (_r(2, 1),), grad=False)]
CASES["tf_iterator_restart"] = [Case(lambda x: apply1(_tf_data._restart_op, x * 2.0,
                                                      iterator=_tf_it), (_r(3),), grad=False)]
import dongjing.compat.v1.linalg_ops as _tf_linalg  # noqa: E402
import dongjing.compat.v1.py_function as _tf_py  # noqa: E402

_tf_square = _r(2, 3, 3) + 2.0 * np.eye(3)  # well away from singular
CASES["tf_matrix_inverse"] = [Case(_tf_linalg.inverse, (_tf_square,))]
CASES["tf_matrix_determinant"] = [Case(lambda a: apply1(_tf_linalg._det, a), (_tf_square,))]
CASES["tf_where_indices"] = [Case(lambda x: apply1(_tf_shapes.where_op, x > 0.0), (_r(3, 2),),
                                  grad=False)]
CASES["tf_fill"] = [Case(lambda x, v: x * apply(_tf_shapes.fill_op, _tf_shapes.shape_of(x),
                                                 dj.sum(v), hint=(3, 2)),
                         (_r(3, 2), _r(2, seed=1)))]
CASES["tf_placeholder_with_default"] = [Case(lambda x: apply1(
    _tf_shapes.with_shape_op, x * x, shape=(None, 2)), (_r(3, 2),))]
_tf_call = _tf_py._Call(lambda a: (np.sort(a, -1).astype(np.float64), a * 2.0),
                        [np.dtype(np.float64), np.dtype(np.float64)])
_tf_py_spec = _Spec((None, None), np.dtype(np.float64))


def _tf_py_first(x):
    return apply(_tf_py._call_op, x, call=_tf_call, index=0, spec=_tf_py_spec)


CASES["tf_py_func"] = [Case(lambda x: x * _tf_py_first(x), (_r(2, 3),), grad=False)]
CASES["tf_py_func_result"] = [Case(lambda x: apply(_tf_py._result_op, _tf_py_first(x),
                                                   call=_tf_call, index=1, spec=_tf_py_spec),
                                   (_r(2, 3),), grad=False)]
def _tf_ints(x, values):
    """An int32 vector tensor of `values` computed from x (so it lives where x does)."""
    zero = dj.cast(dj.sum(x * 0.0), dj.int32)
    return dj.stack([zero + v for v in values])


CASES["tf_tile"] = [Case(lambda x: apply(_tf_shapes.tile_op, x * x, _tf_ints(x, (2, 1)),
                                         hint=(6, 2)), (_r(3, 2),))]
CASES["tf_tile_grad"] = [Case(lambda g, x: apply(_tf_shapes.tile_grad_op, g, x,
                                                 _tf_ints(x, (2, 1))),
                              (_r(6, 2, seed=1), _r(3, 2)))]
CASES["tf_slice"] = [Case(lambda x: apply(_tf_shapes.slice_op, x * x, _tf_ints(x, (1, 0)),
                                          _tf_ints(x, (2, -1)), hint=(2, None)), (_r(3, 2),))]
CASES["tf_slice_grad"] = [Case(lambda g, x: apply(_tf_shapes.slice_grad_op, g, x,
                                                  _tf_ints(x, (1, 0)), _tf_ints(x, (2, -1))),
                               (_r(2, 2, seed=1), _r(3, 2)))]
CASES["tf_log_uniform_candidates"] = [Case(lambda y: apply1(
    _tf_nn._candidates, y, num_sampled=3, range_max=10, unique=True), (_ints(4, 1, high=10),),
    grad=False)]
CASES["tf_case_exclusive"] = [Case(lambda x: apply(
    _tf_control._exclusive, x * x, dj.cast(dj.sum(x * 0.0), dj.int32) + 1), (_r(3, 2),))]
CASES["tf_print"] = [Case(lambda x: apply(_tf_control._print, x * x, message="", summarize=1,
                                          stream="stdout"), (_r(2),))]

# --- issue 12's op surface (ops/math, scan, scatter, sorting, layout, einsum) -----------------
_UNARY = {"sin": _r(3, 4), "cos": _r(3, 4), "tan": _r(3, 4), "asin": _r(3, 4) * 0.9,
          "acos": _r(3, 4) * 0.9, "atan": _r(3, 4) * 3, "sinh": _r(3, 4), "cosh": _r(3, 4),
          "log1p": _pos(3, 4) - 0.4, "expm1": _r(3, 4), "log2": _pos(3, 4),
          "log10": _pos(3, 4)}
for _name, _x in _UNARY.items():
    CASES[_name] = [Case(getattr(dj, _name), (_x,))]
for _name in ("floor", "ceil", "round", "trunc"):
    _fn = getattr(dj, _name)
    CASES[_name] = [Case(_fn, (_apart(3, 4) * 7.3,)),
                    Case(_fn, (_ints(4, high=9),), "int", grad=False)]
CASES["round"].append(Case(lambda x: x.round(decimals=1), (_apart(3, 4) * 0.73,), "decimals"))
CASES.update({
    "floor_divide": [Case(lambda a, b: a // b, (_r(3, 4) * 5 + 0.013, _pos(4, seed=1) + 1)),
                     Case(lambda a: 7 // a, (_ints(5, high=4) + 1,), "reflected ints",
                          grad=False)],
    "remainder": [Case(lambda a, b: a % b, (_r(3, 4) * 5 + 0.013, _pos(4, seed=1) * 1.3 + 1)),
                  Case(lambda a: 2.5 % a, (_r(4) + 3.01,), "reflected")],
    "atan2": [Case(dj.atan2, (_r(3, 4), _r(4, seed=1)), "broadcast")],
    "isnan": [Case(lambda x: dj.isnan(dj.log(x)), (_r(5),), grad=False)],
    "isinf": [Case(lambda x: dj.isinf(1.0 / x), (np.array([0.0, 1.0, -2.0]),), grad=False)],
    "isfinite": [Case(dj.isfinite, (_r(5),), grad=False),
                 Case(dj.isfinite, (_ints(3),), "int", grad=False)],
    "prod": [Case(lambda x: dj.prod(x, dim=1), (_r(3, 4) + 0.1,)),
             Case(lambda x: dj.prod(x), (_pos(2, 3),), "all"),
             Case(lambda x: x.prod(0, keepdim=True),
                  (np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0], [0.5, 3.0, 0.0]]),), "zeros")],
    "cumsum": [Case(lambda x: dj.cumsum(x, dim=1), (_r(3, 4),)),
               Case(lambda x: x.cumsum(0), (_ints(3, 2),), "ints", grad=False)],
    "cumprod": [Case(lambda x: dj.cumprod(x, dim=-1), (_pos(2, 4),)),
                Case(lambda x: dj.cumprod(x, 1),
                     (np.array([[1.5, 0.0, 2.0, 0.0, 3.0], [0.5, 2.0, -1.0, 0.0, 1.2]]),),
                     "zeros")],
    "all": [Case(lambda x: dj.all(x > 0, dim=1), (_r(3, 4),), grad=False),
            Case(lambda x: x.all(), (_pos(3),), "float", grad=False)],
    "any": [Case(lambda x: dj.any(x > 0.5, dim=0, keepdim=True), (_r(3, 4),), grad=False)],
    "norm2": [Case(lambda x: dj.norm(x), (_r(3, 4),)),
              Case(lambda x: x.norm(dim=1, keepdim=True), (_r(3, 4),), "dim")],
    "count": CASES["count"] + [Case(lambda x: dj.std(x, dim=0) + x.var(correction=0),
                                     (_r(4, 3),), "std, var")],
    "argsort": [Case(lambda x: dj.argsort(x, dim=1, descending=True), (_apart(3, 4),),
                     grad=False)],
    "topk": [Case(lambda x: dj.topk(x, 2).values, (_apart(3, 5),)),
             Case(lambda x: x.topk(2, dim=0, largest=False).indices, (_apart(3, 5),),
                  "indices", grad=False)],
    "gather": [Case(lambda x, i: dj.gather(x, 1, i), (_r(3, 4), _ints(3, 5, high=4))),
               Case(lambda x: dj.sort(x, dim=0).values, (_apart(3, 4),), "sort values")],
    "scatter_add": [Case(lambda x, i, s: dj.scatter_add(x, 0, i, s),
                         (_r(3, 4), _ints(2, 4, high=3), _r(2, 4, seed=1)))],
    "scatter": [Case(lambda x, i, s: x.scatter(1, i, s),
                     (_r(3, 4), np.array([[0, 2], [1, 3], [3, 0]]), _r(3, 3, seed=1))),
                Case(lambda x, i: dj.scatter(x, 0, i, value=0.5),
                     (_r(3, 4), np.array([[2, 0, 1, 2]])), "value")],
    "roll": [Case(lambda x: dj.roll(x, (1, -2), (0, 1)), (_r(3, 4),)),
             Case(lambda x: x.roll(3), (_r(3, 4),), "flat")],
    "flip": [Case(lambda x: dj.flip(x, (0, -1)), (_r(3, 4),))],
    "tril": [Case(lambda x: dj.tril(x, -1), (_r(2, 3, 3),))],
    "triu": [Case(lambda x: x.triu(1), (_r(3, 4),))],
    "einsum": [Case(lambda a, b: dj.einsum("bij,bjk->bik", a, b),
                    (_r(2, 3, 4), _r(2, 4, 2, seed=1))),
               Case(lambda a, b: dj.einsum("ij,k->jk", a, b), (_r(3, 4), _r(2, seed=1)),
                    "summed letter, outer"),
               Case(lambda a, b, c: dj.einsum("i,ij,j", a, b, c),
                    (_r(3), _r(3, 4, seed=1), _r(4, seed=2)), "implicit, 3 operands")],
})
CASES.update({  # ops/torch_compat_math.py
    "hypot": [Case(dj.hypot, (_r(3, 4), _pos(4, seed=1)), "broadcast")],
    "logaddexp": [Case(dj.logaddexp, (_r(3, 4) * 3, _r(4, seed=1) * 3), "broadcast"),
                  Case(lambda a: dj.logaddexp(a, a), (_r(3),), "tie")],
    "fmod": [Case(dj.fmod, (_r(3, 4) * 5 + 0.013, _pos(4, seed=1) * 1.3 + 1)),
             Case(lambda a: dj.fmod(a, -1.7), (_r(5) * 4 + 0.011,), "negative divisor"),
             Case(dj.fmod, (_ints(5, high=9) - 4, _ints(5, high=3, seed=1) + 1), "ints",
                  grad=False)],
})

# torch-compat compositions whose index arrays are made on the input's backend, as cases of the
# primitive they reach (the table-driven tests run them eagerly, in graphs, on the test backend)
CASES["scatter"].append(Case(lambda v: dj.diag(v, 1), (_r(3),), "diag of a vector"))
CASES["getitem"] += [Case(lambda m: dj.diag(m, -1), (_r(3, 4),), "diag of a matrix"),
                     Case(dj.trace, (_r(3, 3),), "trace"),
                     Case(lambda x: dj.repeat_interleave(x, 2, dim=1), (_r(2, 3),),
                          "repeat_interleave"),
                     Case(lambda x: dj.repeat_interleave(x, 3), (_r(2, 2),),
                          "repeat_interleave flat")]
CASES["scatter_add"].append(Case(lambda x, i, s: dj.index_add(x, 0, i, s, alpha=0.5),
                                 (_r(3, 4), np.array([2, 0, 2]), _r(3, 4, seed=1)),
                                 "index_add"))
CASES["where"] += [Case(dj.nan_to_num, (np.array([np.nan, np.inf, -np.inf, 0.5]),),
                        "nan_to_num", grad=False),
                   Case(dj.lerp, (_r(3, 4), _r(3, 4, seed=1), _r(4, seed=2)), "lerp")]
CASES["reshape"].append(Case(lambda x: dj.unflatten(x, 1, (2, -1)), (_r(3, 4),), "unflatten"))

OWN_TESTS = {"source", "effect", "control"}  # kinds whose ops are tested by their own suites


def case_params():
    """Every case of every op outside OWN_TESTS, as pytest params `(op_name, case)` with ids
    `op-casename` (the table-driven tests share this enumeration)."""
    import pytest

    from dongjing.ops.registry import OPS

    for op_name, cases in sorted(CASES.items()):
        if OPS[op_name].kind in OWN_TESTS:
            continue
        for i, case in enumerate(cases):
            yield pytest.param(op_name, case, id=f"{op_name}-{case.name or i}")


def case_inputs(case, place=None) -> list:
    """A case's inputs as leaf tensors: floats in float64 and requiring grad, each first made
    from its array by `place` (default: a CPU tensor; a test may put it on another backend)."""
    out = []
    for a in case.inputs:
        a = np.array(a)
        grad = a.dtype.kind == "f"
        if grad:
            a = a.astype(np.float64)
        t = place(a) if place is not None else dj.Tensor._make(a, False)
        out.append(t.requires_grad_(True) if grad else t)
    return out


def as_list(result) -> list:
    """An op's result as a list of tensors (one, or the members of a tuple)."""
    return list(result) if isinstance(result, (tuple, list)) else [result]

from op_cases_torch import TORCH_CASES  # noqa: E402

CASES.update(TORCH_CASES)
