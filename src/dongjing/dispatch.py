"""The one place that decides how an op runs: eagerly now (recording the tape), or as a graph node.

`apply(op, *inputs, **attrs)` takes Tensors. With no default graph and no symbolic input it runs
`op.forward` on the arrays and, when gradients are wanted, records a backward node; otherwise it
adds a node to the graph (shape and dtype from `op.infer`).

Eager results obey the op's `infer` dtype rule too: the rule is asked once per combination of
input dtypes and attributes (which also checks the inputs before any work is done) and the
answer is kept in `op.dtype_rules`; a forward whose array library picks another dtype has its
result cast, so eager and graph execution cannot disagree on dtypes.

float16 and bfloat16 inputs take the full path (their dtype verdicts are never cached for the
short paths): an op that computes runs on float32 copies and its result is rounded once
(`core.low_precision`). Inside an autocast region (which turns plain mode off) the full paths
first cast the inputs as autocast's op lists say (`autocasting`).

Arrays are NumPy's on the hot path (`op.forward`, bound to NumPy). When an input holds another
backend's array the op runs on that backend's namespace (`op.forward_for(backend.xp)`), with any
NumPy inputs (constants made from Python scalars) converted to that backend first.
"""

from __future__ import annotations

from .autocasting import cast_op_inputs
from .autograd import anomaly as _anomaly_mode
from .autograd import grad_mode as _grad_mode
from .autograd.function import record, record1, record2
from .backends import backend_of, default_backend, numpy_backend
from .backends.buffer_pool import pool as _pool
from .core import eager_modes as _eager_modes
from .core import late
from .core import profiler_hooks as _profiler  # `_profiler.on`: a profiler is recording
from .core.low_precision import needs_widening, widen
from .core.registry import Kind, Op, Spec
from .cpu_kernels import parallel as _parallel
from .devices.device import device_of_array
from .dtypes import LOW_PRECISION
from .errors import DeviceError, DongjingError, ShapeError
from .graph import builder as _builder
from .short_paths import declare as _declare_short_path
from .tensor import Tensor, ndarray

# Reading the per-thread state (the default graph; grad mode, a context variable) costs as much
# as a small op's bookkeeping, so the hot paths first ask the process-wide counts
# (`graphs_open`, `disabled_threads`) whether any thread could differ. The checks are written
# out at each site: a helper function would cost the call they save.
_graph_state = _builder.state
_recording = _grad_mode.recording
_anomaly = _anomaly_mode.state  # `_anomaly.on`: anomaly mode checks every output
_make = Tensor._make
_plain = _eager_modes.plain  # `_plain.on`: nothing unusual anywhere (eager_modes)
_numpy_asarray = numpy_backend.xp.asarray
_numpy_scalar = numpy_backend.xp.generic
_broadcast_shapes = numpy_backend.xp.broadcast_shapes
_ELEMENTWISE = Kind.ELEMENTWISE


# The short paths below are taken only in plain mode (`_plain.on`), which
# `short_paths.disabled()` turns off.
_declare_short_path("dispatch.apply1", __name__, "one-input ops on an eager NumPy tensor: the "
                    "graph, profiler and anomaly checks, and a full reduction's NumPy scalar "
                    "turned into a 0-d array at once")
_declare_short_path("dispatch.apply2", __name__, "two-input ops on eager NumPy tensors: the "
                    "graph, profiler and anomaly checks")
_declare_short_path("dispatch.apply_binary", __name__, "binary operators on two eager NumPy "
                    "tensors of one dtype: conversion, promotion and the dtype rule's lookup")
_declare_short_path("dispatch.off_tape", __name__, "gradient rules computing on NumPy arrays "
                    "directly (the backward engine without create_graph), without dispatch")


def _poolable(op: Op, dtype, expected, attrs: dict) -> bool:
    """Whether `op`'s result (of `expected` dtype, inputs of `dtype`) may be written into a
    pooled buffer: an elementwise op with an out= form keeping a float dtype."""
    return (op.kind is _ELEMENTWISE and op.forward_out is not None and expected is dtype
            and dtype.kind == "f" and (not attrs or op.forward_out is not op.ufunc))


def _pooled(op: Op, arrays, dtype, attrs: dict):
    """`op.forward(*arrays)` written into a buffer of the eager pool (backends.buffer_pool):
    large results reused from step to step instead of faulted in afresh."""
    shape = arrays[0].shape
    for a in arrays[1:]:
        if a.shape != shape:
            shape = _broadcast_shapes(shape, a.shape)
    out = _pool.empty(shape, dtype)
    if (not attrs and _parallel.numpy_halves_pay(out, *arrays)
            and all(a.flags.c_contiguous for a in arrays)):
        # as relu's forward did before the pool: two halves on two threads where that pays
        _parallel.split_ufunc(op.forward_out, out, *arrays)
    else:
        op.forward_out(*arrays, out=out, **attrs)
    return out


def _rule_key(dtypes: tuple, attrs: dict):
    return dtypes + tuple(attrs.items()) if attrs else dtypes


def expected_dtype(op: Op, inputs, attrs: dict):
    """The dtype `op.infer` gives for `inputs` (Tensors with data), cached per dtypes+attrs."""
    in_dtypes = tuple([t._data.dtype for t in inputs])
    key = _rule_key(in_dtypes, attrs)
    try:
        found = op.dtype_rules.get(key)
    except TypeError:  # an unhashable attribute: ask the rule every time
        return _infer_dtype(op, inputs, attrs)
    if found is None:
        found = _infer_dtype(op, inputs, attrs)
        if _cacheable(op, in_dtypes):
            op.dtype_rules[key] = found
    return found


def _cacheable(op: Op, in_dtypes) -> bool:
    """Whether a dtype verdict may be cached, where the short paths find it: not for 16-bit
    floating inputs of an op that computes (those take the full path, which widens them)."""
    return op.keeps_dtype or not any(d in LOW_PRECISION for d in in_dtypes)


def _infer_dtype(op: Op, inputs, attrs: dict):
    specs = [Spec(t._data.shape, t._data.dtype) for t in inputs]
    result = op.infer(*specs, **attrs)
    return result[1] if isinstance(result, tuple) and len(result) == 2 else None


def _finish(op: Op, out, expected, inputs, attrs, requires: bool) -> Tensor:
    if type(out) is not ndarray:
        out = _as_array(out, inputs)
    if expected is not None and out.dtype is not expected and out.dtype != expected:
        out = out.astype(expected)
    if _anomaly.on:  # anomaly mode: NaN/inf in the output raises, naming op and line
        _anomaly_mode.check_forward(op, [t._data for t in inputs], out)
    if (requires and op.vjp is not None
            and (not _grad_mode.disabled_threads or _recording())):
        result = _make(out, True)
        record(op, inputs, attrs, result)
        return result
    return _make(out, False)


def apply(op: Op, *inputs: Tensor, **attrs) -> Tensor:
    """Run `op` on `inputs` (Tensors) eagerly or symbolically; the only entry to the op table."""
    if not _plain.on:  # autocast regions turn plain mode off
        inputs = cast_op_inputs(op, inputs)
    if _builder.graphs_open and _graph_state.graph is not None:
        return _builder.add(op, inputs, attrs)
    requires = foreign = low = False
    arrays = []
    for t in inputs:
        if t._node is not None:
            return _builder.add(op, inputs, attrs)
        data = t._data
        arrays.append(data)
        if type(data) is not ndarray:
            foreign = True
        if data.dtype in LOW_PRECISION:  # on a device too: summed in float32, as PyTorch
            low = True
        if t.requires_grad:
            requires = True
    expected = expected_dtype(op, inputs, attrs)
    if low and needs_widening(op, [a.dtype for a in arrays]):
        arrays = widen(arrays)
    try:
        if foreign:
            out = _run_foreign(op, arrays, attrs)
        elif not _profiler.on:
            out = op.forward(*arrays, **attrs)
        else:  # profiler hook: the same call, timed
            out = _profiler.op_forward(op, arrays, attrs)
    except DongjingError:
        raise
    except Exception as exc:  # the array library's message is replaced by ours (op, shapes)
        raise explain_failure(op, inputs, attrs, exc) from None
    return _finish(op, out, expected, inputs, attrs, requires)


def apply1(op: Op, x: Tensor, **attrs) -> Tensor:
    """`apply` for one input: the hot path of unary elementwise ops."""
    data = x._data
    if not (_plain.on and type(data) is ndarray and x._node is None):
        return _apply1_full(op, x, attrs)
    # short path: dispatch.apply1
    # The common case: an eager NumPy tensor, no graph, no profiler or anomaly.
    # Verdicts for 16-bit floats are never cached: a miss on them takes the full path.
    if attrs:
        if op.keeps_dtype:  # movement ops: one verdict per dtype, whatever the attrs
            expected = op.dtype_rules.get(data.dtype)
            if expected is None:
                expected = _learn1(op, x, attrs, data.dtype)
        else:
            try:
                expected = op.dtype_rules[(data.dtype, *attrs.items())]
            except (KeyError, TypeError):
                if data.dtype in LOW_PRECISION:
                    return _apply1_full(op, x, attrs)
                expected = _learn1(op, x, attrs)
    else:
        try:
            expected = op.dtype_rules[data.dtype]
        except KeyError:
            if data.dtype in LOW_PRECISION:
                return _apply1_full(op, x, attrs)
            expected = _learn1(op, x, attrs)
    try:
        if data.nbytes >= _pool.min_bytes and _poolable(op, data.dtype, expected, attrs):
            out = _pooled(op, (data,), expected, attrs)
        else:
            out = op.forward(data, **attrs)
    except DongjingError:
        raise
    except Exception as exc:
        raise explain_failure(op, (x,), attrs, exc) from None
    if type(out) is not ndarray and isinstance(out, _numpy_scalar):  # a full reduction's
        out = _numpy_asarray(out)
    if type(out) is ndarray and out.dtype is expected:
        if (x.requires_grad and op.vjp
                and (not _grad_mode.disabled_threads or _recording())):
            result = _make(out, True)
            record1(op, x, attrs, result)
            return result
        return _make(out, False)
    return _finish(op, out, expected, (x,), attrs, x.requires_grad)


def _apply1_full(op: Op, x: Tensor, attrs: dict) -> Tensor:
    """`apply1` with every check asked of its owner: autocast, graphs, grad mode, profiler,
    anomaly; and 16-bit floats, widened."""
    if not _plain.on:
        (x,) = cast_op_inputs(op, (x,))
    if x._node is not None or (_builder.graphs_open and _graph_state.graph is not None):
        return _builder.add(op, (x,), attrs)
    data = x._data
    if attrs and op.keeps_dtype:
        expected = op.dtype_rules.get(data.dtype)
        if expected is None:
            expected = _learn1(op, x, attrs, data.dtype)
    else:
        try:
            expected = op.dtype_rules[(data.dtype, *attrs.items()) if attrs else data.dtype]
        except (KeyError, TypeError):
            expected = _learn1(op, x, attrs)
    if data.dtype in LOW_PRECISION and needs_widening(op, (data.dtype,)):  # a device's too
        data = widen((data,))[0]
    try:
        if type(data) is not ndarray:
            out = _run_foreign(op, (data,), attrs)
        elif not _profiler.on:
            out = op.forward(data, **attrs)
        else:  # profiler hook: the same call, timed
            out = _profiler.op_forward(op, (data,), attrs)
    except DongjingError:
        raise
    except Exception as exc:
        raise explain_failure(op, (x,), attrs, exc) from None
    return _finish(op, out, expected, (x,), attrs, x.requires_grad)


def _learn1(op: Op, x: Tensor, attrs: dict, key=None):
    expected = _infer_dtype(op, (x,), attrs)
    if not _cacheable(op, (x._data.dtype,)):
        return expected
    if key is None:
        key = (x._data.dtype, *attrs.items()) if attrs else x._data.dtype
    try:
        op.dtype_rules[key] = expected
    except TypeError:
        pass
    return expected


def _expected2(op: Op, a: Tensor, b: Tensor, attrs: dict):
    """The dtype rule's verdict for two inputs (the op's last verdict when it applies)."""
    last = op.last_rule[0]  # (dtype a, dtype b, result): the verdict asked for most recently
    if not attrs and last[0] is a._data.dtype and last[1] is b._data.dtype:
        return last[2]
    expected = expected_dtype(op, (a, b), attrs)
    if not attrs and _cacheable(op, (a._data.dtype, b._data.dtype)):
        op.last_rule[0] = (a._data.dtype, b._data.dtype, expected)  # one store: thread-safe
    return expected


def _cached2(op: Op, a: Tensor, b: Tensor, attrs: dict):
    """The cached dtype verdict for two inputs, or None (then the full path learns it)."""
    last = op.last_rule[0]
    if not attrs and last[0] is a._data.dtype and last[1] is b._data.dtype:
        return last[2]
    key = _rule_key((a._data.dtype, b._data.dtype), attrs)
    try:
        return op.dtype_rules.get(key)
    except TypeError:
        return None


def apply2(op: Op, a: Tensor, b: Tensor, **attrs) -> Tensor:
    """`apply` for two inputs: the hot path of binary elementwise ops and matmul."""
    da, db = a._data, b._data
    if not (_plain.on and type(da) is ndarray and type(db) is ndarray
            and a._node is None and b._node is None):
        return _apply2_full(op, a, b, attrs)
    # short path: dispatch.apply2
    expected = _cached2(op, a, b, attrs)
    if expected is None:  # not learnt yet: learnt now, except for 16-bit floats
        if da.dtype in LOW_PRECISION or db.dtype in LOW_PRECISION:
            return _apply2_full(op, a, b, attrs)
        expected = _expected2(op, a, b, attrs)
    try:
        if ((da.nbytes >= _pool.min_bytes or db.nbytes >= _pool.min_bytes)
                and da.dtype is db.dtype and _poolable(op, da.dtype, expected, attrs)):
            out = _pooled(op, (da, db), expected, attrs)
        else:
            out = op.forward(da, db, **attrs)
    except DongjingError:
        raise
    except Exception as exc:
        raise explain_failure(op, (a, b), attrs, exc) from None
    if type(out) is ndarray and out.dtype is expected:
        if ((a.requires_grad or b.requires_grad) and op.vjp
                and (not _grad_mode.disabled_threads or _recording())):
            result = _make(out, True)
            record2(op, a, b, attrs, result)
            return result
        return _make(out, False)
    return _finish(op, out, expected, (a, b), attrs, a.requires_grad or b.requires_grad)


def _apply2_full(op: Op, a: Tensor, b: Tensor, attrs: dict) -> Tensor:
    """`apply2` with every check asked of its owner: autocast, graphs, grad mode, profiler,
    anomaly; and 16-bit floats, widened."""
    if not _plain.on:
        a, b = cast_op_inputs(op, (a, b))
    if (a._node is not None or b._node is not None
            or (_builder.graphs_open and _graph_state.graph is not None)):
        return _builder.add(op, (a, b), attrs)
    da, db = a._data, b._data
    expected = _expected2(op, a, b, attrs)
    if ((da.dtype in LOW_PRECISION or db.dtype in LOW_PRECISION)
            and needs_widening(op, (da.dtype, db.dtype))):
        da, db = widen((da, db))
    try:
        if type(da) is not ndarray or type(db) is not ndarray:
            out = _run_foreign(op, (da, db), attrs)
        elif not _profiler.on:
            out = op.forward(da, db, **attrs)
        else:  # profiler hook: the same call, timed
            out = _profiler.op_forward(op, (da, db), attrs)
    except DongjingError:
        raise
    except Exception as exc:
        raise explain_failure(op, (a, b), attrs, exc) from None
    return _finish(op, out, expected, (a, b), attrs, a.requires_grad or b.requires_grad)


def apply_binary(op: Op, a, b, pair) -> Tensor:
    """`apply2(op, *pair(a, b))` with the common case done in one call: two eager NumPy Tensors
    of one dtype, whose verdict the op's dtype rule gave last time, in plain mode (see
    `eager_modes`). Anything else takes `pair` (conversion, promotion) and `apply2`."""
    if _plain.on and isinstance(a, Tensor) and isinstance(b, Tensor):
        # short path: dispatch.apply_binary
        da, db = a._data, b._data
        if type(da) is ndarray and type(db) is ndarray:  # eager NumPy (symbolic: no data)
            dtype = da.dtype
            last = op.last_rule[0]
            if (last[0] is dtype and last[1] is dtype and db.dtype is dtype
                    and a._node is None and b._node is None):
                try:
                    if ((da.nbytes >= _pool.min_bytes or db.nbytes >= _pool.min_bytes)
                            and _poolable(op, dtype, last[2], {})):
                        out = _pooled(op, (da, db), dtype, {})
                    else:
                        out = op.forward(da, db)
                except DongjingError:
                    raise
                except Exception as exc:
                    raise explain_failure(op, (a, b), {}, exc) from None
                if type(out) is ndarray and out.dtype is last[2]:
                    if ((a.requires_grad or b.requires_grad) and op.vjp
                            and (not _grad_mode.disabled_threads or _recording())):
                        result = _make(out, True)
                        record2(op, a, b, {}, result)
                        return result
                    return _make(out, False)
                return _finish(op, out, last[2], (a, b), {},
                               a.requires_grad or b.requires_grad)
    a, b = pair(a, b)
    return apply2(op, a, b)


def off_tape(*tensors) -> bool:
    """Whether a gradient rule may compute on these tensors' NumPy arrays directly, as the
    op's forward would, skipping dispatch: eager NumPy arrays of one dtype, nothing recording
    (the backward engine without create_graph) and plain mode (no profiler event or anomaly
    check is due)."""
    # short path: dispatch.off_tape (its callers' direct NumPy calls)
    if not _plain.on or (not _grad_mode.disabled_threads or _recording()):
        return False
    dtype = tensors[0]._data.dtype if type(tensors[0]._data) is ndarray else None
    if dtype in LOW_PRECISION:  # NumPy would sum and multiply them in 16 bits
        return False
    for t in tensors:
        data = t._data
        if type(data) is not ndarray or data.dtype is not dtype:
            return False
    return True


def _backend_of_arrays(arrays):
    """The backend of the first non-NumPy array among `arrays` (NumPy when there is none)."""
    default = default_backend()
    for a in arrays:
        found = backend_of(a, default)
        if found is not default:
            return found
    return default


def _check_devices(op: Op, backend, arrays) -> None:
    """All of `arrays` on `backend`'s device, before any work; a NumPy 0-d array (a CPU
    scalar, as PyTorch allows) or an array of another backend on the same device type may be
    converted. Anything else raises DeviceError naming the op and both devices."""
    first = None
    for a in arrays:
        if backend.owns(a):
            if backend.multi_device:
                here = backend.index_of(a)
                if first is None:
                    first = here
                elif here != first:
                    _mixed(op, backend, arrays)
            continue
        other = backend_of(a, None)
        if other is None or other.device_type == backend.device_type:
            continue
        if other is default_backend() and getattr(a, "ndim", 0) == 0:
            continue
        _mixed(op, backend, arrays)


def _mixed(op: Op, backend, arrays):
    seen = []
    for a in arrays:
        if backend_of(a, None) is not None:
            d = str(device_of_array(a))
            if d not in seen:
                seen.append(d)
    raise DeviceError(f"{op.name}: expected all tensors on the same device, but found at least "
                      f"two devices, {seen[0]} and {seen[1]}; move them with .to(device)")


def _run_foreign(op: Op, arrays, attrs: dict):
    """`op`'s forward on the backend of `arrays` (not all of them NumPy ndarrays)."""
    backend = _backend_of_arrays(arrays)
    if backend is default_backend():
        return op.forward(*arrays, **attrs)
    _check_devices(op, backend, arrays)
    if backend.multi_device:  # kernels run on the device of the data
        with backend.using(next(backend.index_of(a) for a in arrays if backend.owns(a))):
            return backend.run_forward(op, arrays, attrs)
    return backend.run_forward(op, arrays, attrs)


def _as_array(value, inputs=()):
    """A forward's result `value` as an array of the inputs' backend."""
    for t in inputs:
        if type(t._data) is not ndarray:
            break
    else:  # a NumPy scalar from a NumPy forward (full reductions)
        return _numpy_asarray(value)
    backend = _backend_of_arrays([t._data for t in inputs])
    return value if isinstance(value, backend.array_types[0]) else backend.asarray(value)


def explain_failure(op: Op, inputs, attrs, exc: Exception) -> Exception:
    """Turn a failure inside `op.forward` into a dongjing error naming the op and the shapes.

    Shape inference usually finds the fault and raises its own message; otherwise the original
    error is wrapped with the op and the shapes involved. Callers raise it `from None`: the
    array library's error stays out of the report (it is `__context__`), so a short path, which
    runs the forward before the rule's checks, raises what the general path raises.
    """
    specs = [Spec(t._data.shape, t._data.dtype) for t in inputs]
    try:
        op.infer(*specs, **attrs)
    except DongjingError as found:
        return found
    shapes = ", ".join(str(tuple(s.shape)) for s in specs)
    return ShapeError(f"{op.name}: cannot apply to inputs of shapes {shapes}: {exc}")


late.provide(apply=apply)  # the tape and the graph, below, run op records through it
