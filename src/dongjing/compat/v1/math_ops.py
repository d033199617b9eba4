"""TF1's tensor functions (tf.add, tf.reduce_sum, tf.matmul, tf.constant, ...), each a call of
the dongjing op it names, built in a graph (`tf_function`)."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import numpy as np

from ... import ops as _ops
from ...errors import DTypeError, ShapeError
from ...graph.builder import constant as _dj_constant
from ...tensor import Tensor
from .dtypes import as_dtype, to_array
from .dynamic_shape import arange, reshape_to, shape_tensor
from .graphs import building, tf_function
from .unsupported import not_provided

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ...types import Dim, DTypeLike, GraphShape, Number, Shape, TensorLike
    from .deferred import Deferred

# array_ops (built on this module) hands these over when it loads
_array_ops = types.SimpleNamespace(where_indices=None, fill_to=None)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _t(value: TensorLike) -> Tensor:
    """A tensor for `value` (Python values converted as TF1 does: ints -> int32)."""
    if isinstance(value, Tensor):
        return value
    return _dj_constant(to_array(value))


def _operand(value, like):
    """A non-tensor operand beside tensor `like`: arrays and lists convert to `like`'s dtype
    (as TF converts them); Python numbers stay weakly typed."""
    if isinstance(value, (Tensor, bool, int, float)):
        return value
    return _dj_constant(to_array(value, like.dtype))


def _binary(dj_fn: Callable[[TensorLike, TensorLike], Tensor], doc: str, tf_name: str):
    def fn(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
        if isinstance(x, Tensor):
            y = _operand(y, x)
        elif isinstance(y, Tensor):
            x = _operand(x, y)
        else:
            x = _t(x)
            y = _operand(y, x)
        return dj_fn(x, y)

    return _named(fn, tf_name, doc)


def _named(fn: Callable[_P, _R], tf_name: str, doc: str) -> Callable[_P, _R | Deferred]:
    fn.__name__ = fn.__qualname__ = tf_name
    fn.__doc__ = doc
    return tf_function(fn)


add = _binary(_ops.add, "x + y, elementwise with broadcasting.", "add")
subtract = _binary(_ops.sub, "x - y, elementwise.", "subtract")
multiply = _binary(_ops.mul, "x * y, elementwise.", "multiply")
truediv = divide = _binary(_ops.div, "x / y, elementwise (true division).", "divide")
pow = _binary(_ops.pow, "x ** y, elementwise.", "pow")  # noqa: A001
maximum = _binary(_ops.maximum, "The larger of x and y, elementwise.", "maximum")
minimum = _binary(_ops.minimum, "The smaller of x and y, elementwise.", "minimum")
equal = _binary(_ops.eq, "x == y, elementwise (a bool tensor).", "equal")
not_equal = _binary(_ops.ne, "x != y, elementwise.", "not_equal")
less = _binary(_ops.lt, "x < y, elementwise.", "less")
less_equal = _binary(_ops.le, "x <= y, elementwise.", "less_equal")
greater = _binary(_ops.gt, "x > y, elementwise.", "greater")
greater_equal = _binary(_ops.ge, "x >= y, elementwise.", "greater_equal")
logical_and = _binary(_ops.logical_and, "x and y, elementwise on bools.", "logical_and")
logical_or = _binary(_ops.logical_or, "x or y, elementwise on bools.", "logical_or")


@tf_function
def div(x: TensorLike, y: TensorLike, name: str | None = None) -> Tensor:
    """TF1's `tf.div`: true division on floats (floor division on integers is not provided)."""
    x, y = _t(x), _t(y)
    if x.dtype.kind != "f" or y.dtype.kind != "f":
        not_provided("tf.div on integer tensors (floor division)")
    return _ops.div(x, y)


def _unary(dj_fn: Callable[[Tensor], Tensor], doc: str, tf_name: str):
    def fn(x: TensorLike, name: str | None = None) -> Tensor:
        return dj_fn(_t(x))

    return _named(fn, tf_name, doc)


negative = _unary(_ops.neg, "-x, elementwise.", "negative")
exp = _unary(_ops.exp, "e ** x, elementwise.", "exp")
log = _unary(_ops.log, "Natural logarithm, elementwise.", "log")
sqrt = _unary(_ops.sqrt, "Square root, elementwise.", "sqrt")
abs = _unary(_ops.abs, "|x|, elementwise.", "abs")  # noqa: A001
sign = _unary(_ops.sign, "-1, 0 or 1 by the sign of x, elementwise.", "sign")
tanh = _unary(_ops.tanh, "Hyperbolic tangent, elementwise.", "tanh")
sigmoid = _unary(_ops.sigmoid, "1 / (1 + exp(-x)), elementwise.", "sigmoid")
logical_not = _unary(_ops.logical_not, "not x, elementwise on bools.", "logical_not")
identity = _unary(_ops.clone, "A copy of x (a graph op).", "identity")
stop_gradient = _unary(_ops.stop_gradient, "x, with no gradient flowing through.", "stop_gradient")


@tf_function
def square(x: TensorLike, name: str | None = None) -> Tensor:
    """x * x, elementwise."""
    x = _t(x)
    return x * x


@tf_function
def matmul(a: TensorLike, b: TensorLike, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: str | None = None) -> Tensor:
    """Matrix product of a and b (either transposed first)."""
    if a_is_sparse or b_is_sparse:
        not_provided("tf.matmul on sparse matrices")
    a, b = _t(a), _t(b)
    if transpose_a or adjoint_a:
        a = _ops.transpose(a, -2, -1)
    if transpose_b or adjoint_b:
        b = _ops.transpose(b, -2, -1)
    return _ops.matmul(a, b)


@tf_function
def cast(x: TensorLike, dtype: DTypeLike, name: str | None = None) -> Tensor:
    """x converted to `dtype` (float to int truncates toward zero, as TF does)."""
    return _ops.cast(_t(x), as_dtype(dtype))


def to_float(x: TensorLike, name: str | None = None) -> Tensor | Deferred:
    """x as float32 (the pre-1.13 spelling of tf.cast(x, tf.float32))."""
    return cast(x, "float32")


def to_int32(x: TensorLike, name: str | None = None) -> Tensor | Deferred:
    """x as int32."""
    return cast(x, "int32")


def to_int64(x: TensorLike, name: str | None = None) -> Tensor | Deferred:
    """x as int64."""
    return cast(x, "int64")


@tf_function
def clip_by_value(t: TensorLike, clip_value_min: TensorLike, clip_value_max: TensorLike,
                  name: str | None = None) -> Tensor:
    """t with every element put into [clip_value_min, clip_value_max]."""
    t = _t(t)
    if isinstance(clip_value_min, Tensor) or isinstance(clip_value_max, Tensor):
        return _ops.minimum(_ops.maximum(t, clip_value_min), clip_value_max)
    lo, hi = float(np.asarray(clip_value_min)), float(np.asarray(clip_value_max))
    if lo > hi:
        raise ShapeError(f"tf.clip_by_value: clip_value_min {lo} > clip_value_max {hi}")
    return _ops.clip(t, lo, hi)


# --- reductions ----------------------------------------------------------------------------------
def _axes(what: str, axis, reduction_indices, keepdims, keep_dims):
    if axis is not None and reduction_indices is not None:
        raise ShapeError(f"{what}: give axis or reduction_indices, not both")
    if keepdims is not None and keep_dims is not None:
        raise ShapeError(f"{what}: give keepdims or keep_dims, not both")
    axis = axis if axis is not None else reduction_indices
    if isinstance(axis, Tensor):
        not_provided(f"{what} with a tensor axis")
    if isinstance(axis, (list, tuple, np.ndarray)):
        axis = tuple(int(a) for a in np.asarray(axis).reshape(-1))
        if not axis:
            return (), bool(keepdims or keep_dims)
    elif axis is not None:
        axis = int(axis)
    return axis, bool(keepdims or keep_dims)


def _reduction(dj_fn: Callable[[Tensor, Dim, bool], Tensor], what: str,
               floats_only: bool = False):
    def fn(input_tensor: TensorLike, axis: Dim = None, keepdims: bool | None = None,
           name: str | None = None, reduction_indices: Dim = None, keep_dims: bool | None = None
           ) -> Tensor:
        x = _t(input_tensor)
        dims, keep = _axes(what, axis, reduction_indices, keepdims, keep_dims)
        if floats_only and x.dtype.kind != "f":
            not_provided(f"{what} of an integer tensor (TensorFlow rounds the mean to an "
                         "integer): cast it to a float dtype first")
        if dims == ():
            return x
        if x.dtype.kind == "b" and dj_fn is _ops.sum:
            raise DTypeError(f"{what}: bool tensors cannot be summed (TensorFlow refuses too)")
        result = dj_fn(x, dims, keep)
        if dj_fn is _ops.sum and result.dtype != x.dtype:
            result = _ops.cast(result, x.dtype)  # TF sums in the input's dtype
        return result

    return _named(fn, what[3:], f"{what}(input_tensor, axis=None, keepdims=False): over all "
                  "elements or over `axis` (alias reduction_indices; keepdims alias keep_dims).")


reduce_sum = _reduction(_ops.sum, "tf.reduce_sum")
reduce_mean = _reduction(_ops.mean, "tf.reduce_mean", floats_only=True)
reduce_max = _reduction(_ops.amax, "tf.reduce_max")
reduce_min = _reduction(_ops.amin, "tf.reduce_min")


def _arg_extreme(dj_fn: Callable[[Tensor, int], Tensor], what: str):
    def fn(input: TensorLike, axis: int | None = None, name: str | None = None,  # noqa: A002
           dimension: int | None = None, output_type: DTypeLike = "int64") -> Tensor:
        if axis is not None and dimension is not None:
            raise ShapeError(f"{what}: give axis or dimension, not both")
        axis = axis if axis is not None else dimension
        if axis is None:
            axis = 0  # TF1's default: along the first axis (not over the flattened tensor)
        if isinstance(axis, Tensor):
            not_provided(f"{what} with a tensor axis")
        result = dj_fn(_t(input), int(axis))
        out = as_dtype(output_type)
        return result if result.dtype == out else _ops.cast(result, out)

    return _named(fn, what[3:], f"{what}(input, axis=0): index of the extreme value along "
                  "`axis` (int64).")


argmax = _arg_extreme(_ops.argmax, "tf.argmax")
argmin = _arg_extreme(_ops.argmin, "tf.argmin")


# --- shapes ------------------------------------------------------------------------------------
def _static_shape(shape, what: str) -> tuple:
    if isinstance(shape, Tensor):
        not_provided(f"{what} with a tensor shape")
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(d) for d in shape)


@tf_function
def reshape(tensor: TensorLike, shape: GraphShape | Sequence[int | Tensor],
            name: str | None = None) -> Tensor:
    """`tensor` with a new shape (one dim may be -1); the shape may be a tensor (or a list
    holding tensors), read when the graph runs."""
    x = _t(tensor)
    target = shape_tensor(shape, "tf.reshape")
    if isinstance(target, Tensor):
        return reshape_to(x, target)
    return _ops.reshape(x, target)


@tf_function
def transpose(a: TensorLike, perm: Sequence[int] | None = None, name: str | None = None,
              conjugate: bool = False) -> Tensor:
    """`a` with its dims permuted (default: reversed)."""
    a = _t(a)
    if perm is None:
        perm = tuple(range(a.ndim - 1, -1, -1))
    return _ops.permute(a, tuple(int(p) for p in perm))


@tf_function
def expand_dims(input: TensorLike, axis: int | None = None, name: str | None = None,  # noqa: A002
                dim: int | None = None) -> Tensor:
    """`input` with a new dim of size 1 at `axis`."""
    axis = axis if axis is not None else dim
    if axis is None:
        raise ShapeError("tf.expand_dims needs an axis")
    return _ops.unsqueeze(_t(input), int(axis))


@tf_function
def squeeze(input: TensorLike, axis: int | Sequence[int] | None = None,  # noqa: A002
            name: str | None = None, squeeze_dims: int | Sequence[int] | None = None) -> Tensor:
    """`input` without its dims of size 1 (all, or those in `axis`)."""
    axis = axis if axis is not None else squeeze_dims
    if isinstance(axis, (list, tuple)):
        axis = tuple(int(a) for a in axis)
        if len(axis) == 1:
            axis = axis[0]
    return _ops.squeeze(_t(input), axis)


@tf_function
def concat(values: Sequence[TensorLike], axis: int, name: str = "concat") -> Tensor:
    """The tensors of `values` joined along `axis`."""
    return _ops.concat([_t(v) for v in values], int(axis))


@tf_function
def stack(values: Sequence[TensorLike], axis: int = 0, name: str = "stack") -> Tensor:
    """The tensors of `values` stacked along a new dim `axis`."""
    return _ops.stack([_t(v) for v in values], int(axis))


@tf_function
def where(condition: TensorLike, x: TensorLike | None = None, y: TensorLike | None = None,
          name: str | None = None) -> Tensor:
    """x where condition, else y (both x and y are needed: the index form is not provided)."""
    if x is None and y is None:

        return _array_ops.where_indices(condition)
    if x is None or y is None:
        raise ShapeError("tf.where: give both x and y, or neither (the indices form)")
    return _ops.where(_t(condition), x, y)


@tf_function
def one_hot(indices: TensorLike, depth: int, on_value: Number | None = None,
            off_value: Number | None = None, axis: int | None = None,
            dtype: DTypeLike | None = None, name: str | None = None) -> Tensor:
    """Rows of the identity (`depth` columns) for integer `indices`; float32 unless `dtype`
    (or the on/off values) say otherwise; an index outside [0, depth) raises."""
    if axis not in (None, -1):
        not_provided("tf.one_hot(axis=...) other than -1")
    if dtype is None:
        given = [v for v in (on_value, off_value) if v is not None]
        dtype = to_array(given[0]).dtype if given else np.float32
    dtype = as_dtype(dtype)
    hot = _ops.one_hot(_t(indices), int(depth), dtype)
    if on_value is None and off_value is None:
        return hot
    on = 1 if on_value is None else on_value
    off = 0 if off_value is None else off_value
    return hot * (on - off) + _ops.cast(_dj_constant(to_array(off, dtype)), dtype)


# --- constants -----------------------------------------------------------------------------------
def constant(value: TensorLike, dtype: DTypeLike | None = None, shape: Shape | None = None,
             name: str = "Const", verify_shape: bool = False) -> Tensor:
    """A constant tensor of the graph. With `shape`, a scalar (or one-element) value fills it
    and a value of as many elements is reshaped to it, as TF does."""
    array = to_array(value, dtype)
    if shape is not None:
        shape = _static_shape(shape, "tf.constant")
        if array.size == 1:
            array = np.full(shape, array.reshape(()), array.dtype)
        elif verify_shape and array.shape != shape:
            raise ShapeError(f"tf.constant: value of shape {array.shape} is not {shape}")
        elif array.size == int(np.prod(shape)):
            array = array.reshape(shape)
        else:
            raise ShapeError(f"tf.constant: {array.size} values do not fill shape {shape}")
    with building():
        return _dj_constant(array, name=name)


def _tensor_dims(dims, what: str):
    """`dims` as a run-time shape tensor if it holds tensors not known when building, else
    None (then the static path applies)."""
    if isinstance(dims, Tensor) or (isinstance(dims, (list, tuple)) and any(
            isinstance(d, Tensor) for d in dims)):

        with building((dims,)):
            dims = shape_tensor(dims, what)
        return dims if isinstance(dims, Tensor) else tuple(dims)
    return None


def zeros(shape: GraphShape | Sequence[int | Tensor], dtype: DTypeLike = "float32",
          name: str | None = None) -> Tensor:
    """A constant of zeros (the shape may be a tensor, read at run time)."""
    dims = _tensor_dims(shape, "tf.zeros")
    if dims is not None:
        return _filled(dims, 0, dtype)
    return constant(np.zeros(_static_shape(shape, "tf.zeros"), as_dtype(dtype)), name=name or
                    "zeros")


def ones(shape: GraphShape | Sequence[int | Tensor], dtype: DTypeLike = "float32",
         name: str | None = None) -> Tensor:
    """A constant of ones (the shape may be a tensor, read at run time)."""
    dims = _tensor_dims(shape, "tf.ones")
    if dims is not None:
        return _filled(dims, 1, dtype)
    return constant(np.ones(_static_shape(shape, "tf.ones"), as_dtype(dtype)), name=name or
                    "ones")


def _filled(dims, value, dtype):

    if not isinstance(dims, Tensor):
        return constant(np.full(dims, value, as_dtype(dtype)))
    with building((dims,)):
        return _array_ops.fill_to(dims, constant(np.asarray(value, as_dtype(dtype))))


def fill(dims: GraphShape | Sequence[int | Tensor], value: TensorLike,
         name: str | None = None) -> Tensor:
    """`value` repeated to shape `dims` (dims and value may be tensors)."""
    shape = _tensor_dims(dims, "tf.fill")
    if shape is not None or isinstance(value, Tensor):

        with building((dims, value)):
            if not isinstance(shape, Tensor):
                known = _static_shape(dims, "tf.fill") if shape is None else shape
                shape = _dj_constant(np.asarray(known, np.int32))
            return _array_ops.fill_to(shape, value)
    array = to_array(value)
    return constant(np.full(_static_shape(dims, "tf.fill"), array, array.dtype),
                    name=name or "Fill")


@tf_function
def zeros_like(tensor: TensorLike, dtype: DTypeLike | None = None, name: str | None = None,
               optimize: bool = True) -> Tensor:
    """Zeros of the shape (and dtype, unless given) of `tensor`."""
    return _ops.zeros_like(_t(tensor), None if dtype is None else as_dtype(dtype))


@tf_function
def ones_like(tensor: TensorLike, dtype: DTypeLike | None = None, name: str | None = None,
              optimize: bool = True) -> Tensor:
    """Ones of the shape (and dtype, unless given) of `tensor`."""
    return _ops.ones_like(_t(tensor), None if dtype is None else as_dtype(dtype))


def range_(start: Number | Tensor, limit: Number | Tensor | None = None,
           delta: Number | Tensor = 1, dtype: DTypeLike | None = None, name: str = "range"
           ) -> Tensor | Deferred:
    """A constant [start, start + delta, ...) up to `limit` (ints are int32, as in TF)."""
    if limit is None:
        start, limit = 0, start
    if any(isinstance(v, Tensor) for v in (start, limit, delta)):
        return _range_tensor(start, limit, delta, dtype)
    values = np.arange(start, limit, delta)
    return constant(values, dtype, name=name)


@tf_function
def _range_tensor(start, limit, delta, dtype):
    values = [_t(v) for v in (start, limit, delta)]
    if dtype is None:
        kinds = [v.dtype for v in values]
        dtype = next((k for k in kinds if k.kind == "f"), kinds[0])
    dtype = as_dtype(dtype)
    return arange(*[_ops.cast(v, dtype) if v.dtype != dtype else v for v in values], dtype)


range_.__name__ = range_.__qualname__ = "range"
