"""In-place NumPy versions of the built-in update rules, for the eager `step()` (the idea of
PyTorch's `foreach`/`fused` steps): a few whole-array NumPy calls per parameter instead of one
dispatched op per term, writing into the parameter's and the state's existing arrays.

Each function does exactly the arithmetic of its rule in `rules.py` (the same ufuncs, in the
same order, on scalars of the same dtypes), so the results are bit-identical to the reference
path. It returns False, having changed nothing, when its preconditions do not hold (arrays of
two backends or devices, mixed dtypes, a tensor hyperparameter, state of an unexpected form,
...); the caller then runs the rule itself. On a device (CuPy) the same calls go to the
backend's namespace with its cached device scalars: a few kernel launches per parameter and no
host-to-device copy, where the rule's dispatched ops cost a launch, a copy and the dispatch.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ..backends import backend_of
from ..cpu_kernels import kernels
from ..dtypes import is_floating, scalar_dtype
from ..tensor import Tensor

_ndarray = np.ndarray


class _Place:
    """Where an update runs: the array namespace, its 0-d scalars and scratch arrays."""

    __slots__ = ("xp", "scalar", "scratch", "backend")

    def __init__(self, xp, scalar, scratch, backend=None):
        self.xp, self.scalar, self.scratch, self.backend = xp, scalar, scratch, backend


_places: dict = {}  # id(backend) -> its _Place


def _device_place(backend) -> _Place:
    found = _places.get(id(backend))
    if found is None or found.backend is not backend:
        def scalar(value, dtype):
            return backend.scalar(_scalar(value, dtype))

        def scratch(like, pool=None):
            return backend.xp.empty_like(like)

        found = _places[id(backend)] = _Place(backend.xp, scalar, scratch, backend)
    return found


def _number(value) -> bool:
    return type(value) is float or type(value) is int


_SCALARS: dict = {}  # (type, value, dtype, is -0.0) -> a read-only 0-d array, reused per step


def _scalar(value, dtype):
    """A Python number as the 0-d array an eager op beside a `dtype` tensor would use."""
    key = (type(value), value, dtype, value == 0 and math.copysign(1.0, value) < 0)  # -0.0
    found = _SCALARS.get(key)
    if found is None:
        if len(_SCALARS) > 256:  # numbers that keep changing (a schedule): start over
            _SCALARS.clear()
        found = np.asarray(value, scalar_dtype(value, dtype))
        found.flags.writeable = False
        _SCALARS[key] = found
    return found


_HOST: _Place  # NumPy's, made below once `_scratch` exists


def _place_of(pd, gd):
    """The `_Place` of arrays `pd` and `gd` when both are NumPy's or both one device's; else
    None."""
    if type(pd) is _ndarray:
        return _HOST if type(gd) is _ndarray else None
    backend = backend_of(pd, None)
    if (backend is None or backend.device_type == "cpu" or not backend.owns(gd)
            or backend.index_of(pd) != backend.index_of(gd)):
        return None
    return _device_place(backend)


def _writable(data) -> bool:
    flags = data.flags
    return getattr(flags, "writeable", True)  # CuPy's arrays have no read-only flag


def _arrays(p: Tensor, g: Tensor):
    """(parameter array, gradient array, place) when both are arrays of one place (NumPy or
    one device), of one floating dtype and shape, not aliasing each other; else None."""
    pd, gd = p._data, g._data
    if g._node is not None or p._node is not None:
        return None
    place = _place_of(pd, gd)
    if place is None:
        return None
    if pd.dtype != gd.dtype or not is_floating(pd.dtype) or pd.shape != gd.shape:
        return None
    if not _writable(pd) or place.xp.may_share_memory(pd, gd):
        return None
    return pd, gd, place


def _operands(p: Tensor, g: Tensor, hyper: tuple):
    """`_arrays(p, g)` when every hyperparameter in `hyper` is a plain number; else None."""
    if not all(_number(h) for h in hyper):
        return None
    return _arrays(p, g)


def _state_arrays(state: dict, names, like, place: _Place):
    """The arrays of the state Variables `names` (each of `like`'s shape and dtype), or None."""
    found = []
    for name in names:
        data = _buffer(state.get(name), like, place)
        if data is None:
            return None
        found.append(data)
    return found


def _buffer(t, like, place: _Place):
    """The array of state tensor `t` when it can be updated in place beside `like`, or None."""
    data = t._data if isinstance(t, Tensor) else None
    if (data is None or _place_of(data, like) is not place or t._node is not None
            or data.dtype != like.dtype or data.shape != like.shape or not _writable(data)
            or place.xp.may_share_memory(data, like)):
        return None
    return data


def _step_array(state: dict, like, place: _Place):
    """The float32 0-d array of a rule's step counter (beside `like`), or None."""
    t = state.get("step")
    data = getattr(t, "_data", None) if isinstance(t, Tensor) else None
    if data is None or _place_of(data, like) is not place or t._node is not None or \
            data.shape != () or data.dtype != np.float32 or not _writable(data):
        return None
    return data


_local = threading.local()  # per thread: (shape, dtype) -> a scratch array for the update


def _pool() -> dict:
    pool = getattr(_local, "pool", None)
    if pool is None:
        pool = _local.pool = {}
    return pool


def _scratch(like: np.ndarray, pool: dict | None = None) -> np.ndarray:
    """A reusable array of `like`'s shape and dtype for a temporary of the update (no fresh
    allocation per parameter and step; each thread has its own `_pool()`)."""
    if pool is None:
        pool = _pool()
    key = (like.shape, like.dtype)
    found = pool.get(key)
    if found is None:
        if len(pool) > 64:  # many shapes (many models): start over
            pool.clear()
        found = pool[key] = np.empty_like(like, order="C")
    return found


_HOST = _Place(np, _scalar, _scratch)


def _bump(*tensors) -> None:
    for t in tensors:
        t._version[0] += 1


def sgd(p: Tensor, g: Tensor, state: dict, group: dict) -> bool:
    """`SGD.update` in place; False (nothing changed) when it does not apply."""
    lr, mu, damp, wd = group["lr"], group["momentum"], group["dampening"], \
        group["weight_decay"]
    arrays = _operands(p, g, (lr, mu, damp, wd))
    if arrays is None:
        return False
    pd, gd, place = arrays
    xp, sc = place.xp, place.scalar
    dt = pd.dtype
    bufs = step = None
    if mu:
        bufs = _state_arrays(state, ("momentum_buffer",), pd, place)
        if bufs is None:
            return False
        if damp:
            step = _step_array(state, pd, place)
            if step is None:
                return False
    if wd:
        gd = gd + pd * sc(wd, dt)
    if mu:
        buf = bufs[0]
        if not damp:
            xp.multiply(buf, sc(mu, dt), out=buf)
            xp.add(buf, gd, out=buf)
        else:  # dampening does not apply to the first step: b = g there
            if place is _HOST and step == 0:
                np.copyto(buf, gd)
            elif place is not _HOST:  # the step count stays on the device: no host read
                later = xp.add(xp.multiply(buf, sc(mu, dt)), gd * sc(1.0 - damp, dt))
                xp.copyto(buf, xp.where(step == sc(0.0, step.dtype), gd, later))
            else:
                np.multiply(buf, sc(mu, dt), out=buf)
                np.add(buf, gd * sc(1.0 - damp, dt), out=buf)
            xp.add(step, sc(1.0, step.dtype), out=step)
            _bump(state["step"])
        _bump(state["momentum_buffer"])
        gd = gd + buf * sc(mu, dt) if group["nesterov"] else buf
    xp.subtract(pd, xp.multiply(gd, sc(lr, dt), out=place.scratch(pd)), out=pd)
    _bump(p)
    return True


def adam(p: Tensor, g: Tensor, state: dict, group: dict, decoupled: bool) -> bool:
    """`Adam.update` (AdamW's with `decoupled`) in place; False when it does not apply."""
    lr, betas, wd, eps = group["lr"], group["betas"], group["weight_decay"], group["eps"]
    if not (isinstance(betas, tuple) and len(betas) == 2):
        return False
    b1, b2 = betas
    arrays = _operands(p, g, (lr, b1, b2, wd, eps))
    if arrays is None:
        return False
    pd, gd, place = arrays
    xp, sc = place.xp, place.scalar
    dt = pd.dtype
    names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
    moments = _state_arrays(state, names, pd, place)
    step = _step_array(state, pd, place)
    if moments is None or step is None:
        return False
    if wd and decoupled:
        xp.multiply(pd, sc(1.0 - lr * wd, dt), out=pd)
    elif wd:
        gd = gd + pd * sc(wd, dt)
    xp.add(step, sc(1.0, step.dtype), out=step)
    m, v = moments[0], moments[1]
    xp.multiply(m, sc(b1, dt), out=m)
    xp.add(m, gd * sc(1.0 - b1, dt), out=m)
    xp.multiply(v, sc(b2, dt), out=v)
    xp.add(v, gd * gd * sc(1.0 - b2, dt), out=v)
    if group["amsgrad"]:
        v = xp.maximum(moments[2], v, out=moments[2])
    t = step.astype(dt)  # bias corrections in the parameter's precision
    one = sc(1.0, dt)
    m_hat = m / xp.subtract(one, xp.power(sc(b1, dt), t))
    v_hat = v / xp.subtract(one, xp.power(sc(b2, dt), t))
    denom = xp.sqrt(v_hat) + sc(eps, dt)
    xp.subtract(pd, (m_hat * sc(lr, dt)) / denom, out=pd)
    _bump(p, *(state[name] for name in ("step",) + names))
    return True


# momentum SGD in one pass over each parameter (NumPy's four ufunc calls make four), with
# NumPy's rounding: every product and sum is of the parameter's dtype, no fused multiply-add
_SGD_SOURCE = """def _sgd_momentum(n, mu, lr, g, buf, p):
    for i in range(n):
        v = buf[i] * mu + g[i]
        buf[i] = v
        p[i] = p[i] - v * lr
"""
_sgd_kernels: dict = {}


def _sgd_kernel(dtype):
    """The one-pass momentum update for `dtype` (compiled once, kept on disk with the
    compiler's kernels), or None without a kernel library or for other dtypes."""
    if dtype in _sgd_kernels:
        return _sgd_kernels[dtype]
    kernel = None
    if dtype.name in ("float32", "float64"):
        if kernels.available():
            name = dtype.name
            params = (("scalar", name), ("scalar", name), ("array", name), ("out", name),
                      ("out", name))
            kernel = kernels.compile_kernel(_SGD_SOURCE, "_sgd_momentum", {}, params)
    _sgd_kernels[dtype] = kernel
    return kernel


def sgd_group(opt, group: dict) -> list:
    """`sgd` over the parameters of `group` that have a gradient, for plain momentum SGD (no
    dampening, weight decay or Nesterov): the hyperparameters are checked and their 0-d arrays
    made once per group, not per parameter. Returns the parameters it left (the per-parameter
    path takes them: other settings, or arrays `sgd` would refuse)."""
    lr, mu = group["lr"], group["momentum"]
    params = group["params"]
    if (group["dampening"] or group["weight_decay"] or group["nesterov"]
            or not (_number(lr) and _number(mu))):
        return params
    left = []
    scalars: dict = {}  # (dtype, place) -> (mu, lr) as that dtype's 0-d arrays there
    states = opt.state
    pool = _pool()
    for p in params:
        g = p._grad if p.grad_fn is None else p.grad  # a leaf's, without the property's checks
        if g is None:
            continue
        arrays = _arrays(p, g)
        if arrays is None:
            left.append(p)
            continue
        pd, gd, place = arrays
        if mu:
            state = states.get(p) or opt._state_of(p)
            buf_t = state.get("momentum_buffer")
            buf = _buffer(buf_t, pd, place)
            if buf is None:
                left.append(p)
                continue
        dt = pd.dtype
        found = scalars.get((dt, place))
        if found is None:
            found = scalars[dt, place] = (place.scalar(mu, dt), place.scalar(lr, dt))
        mu_s, lr_s = found
        xp = place.xp
        if mu and place is _HOST and (kernel := _sgd_kernel(dt)) is not None and (
                pd.flags.c_contiguous and gd.flags.c_contiguous and buf.flags.c_contiguous
                and not np.may_share_memory(gd, buf)):
            kernel(pd.size, mu_s[()], lr_s[()], gd.reshape(-1), buf.reshape(-1), pd.reshape(-1))
            buf_t._version[0] += 1
            p._version[0] += 1
            continue
        if mu:
            xp.multiply(buf, mu_s, out=buf)
            gd = xp.add(buf, gd, out=buf)
            buf_t._version[0] += 1
        xp.subtract(pd, xp.multiply(gd, lr_s, out=place.scratch(pd, pool)), out=pd)
        p._version[0] += 1
    return left
