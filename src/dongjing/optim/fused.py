"""In-place NumPy versions of the built-in update rules, for the eager `step()` (the idea of
PyTorch's `foreach`/`fused` steps): a few whole-array NumPy calls per parameter instead of one
dispatched op per term, writing into the parameter's and the state's existing arrays.

Each function does exactly the arithmetic of its rule in `rules.py` (the same ufuncs, in the
same order, on scalars of the same dtypes), so the results are bit-identical to the reference
path. It returns False, having changed nothing, when its preconditions do not hold (a device
array, mixed dtypes, a tensor hyperparameter, state of an unexpected form, ...); the caller
then runs the rule itself.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ..cpu_kernels import kernels
from ..dtypes import is_floating, scalar_dtype
from ..tensor import Tensor

_ndarray = np.ndarray


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


def _arrays(p: Tensor, g: Tensor):
    """(parameter array, gradient array) when both are plain NumPy arrays of one floating
    dtype and shape, not aliasing each other; else None."""
    pd, gd = p._data, g._data
    if (type(pd) is not _ndarray or type(gd) is not _ndarray or g._node is not None
            or p._node is not None):
        return None
    if pd.dtype != gd.dtype or not is_floating(pd.dtype) or pd.shape != gd.shape:
        return None
    if not pd.flags.writeable or np.may_share_memory(pd, gd):
        return None
    return pd, gd


def _operands(p: Tensor, g: Tensor, hyper: tuple):
    """`_arrays(p, g)` when every hyperparameter in `hyper` is a plain number; else None."""
    if not all(_number(h) for h in hyper):
        return None
    return _arrays(p, g)


def _state_arrays(state: dict, names, like: np.ndarray):
    """The arrays of the state Variables `names` (each of `like`'s shape and dtype), or None."""
    found = []
    for name in names:
        data = _buffer(state.get(name), like)
        if data is None:
            return None
        found.append(data)
    return found


def _buffer(t, like: np.ndarray):
    """The array of state tensor `t` when it can be updated in place beside `like`, or None."""
    data = t._data if isinstance(t, Tensor) else None
    if (type(data) is not _ndarray or t._node is not None or data.dtype != like.dtype
            or data.shape != like.shape or not data.flags.writeable
            or np.may_share_memory(data, like)):
        return None
    return data


def _step_array(state: dict):
    """The float32 0-d array of a rule's step counter, or None."""
    t = state.get("step")
    data = getattr(t, "_data", None) if isinstance(t, Tensor) else None
    if type(data) is not _ndarray or t._node is not None or data.shape != () or \
            data.dtype != np.float32 or not data.flags.writeable:
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
    pd, gd = arrays
    dt = pd.dtype
    bufs = step = None
    if mu:
        bufs = _state_arrays(state, ("momentum_buffer",), pd)
        if bufs is None:
            return False
        if damp:
            step = _step_array(state)
            if step is None:
                return False
    if wd:
        gd = gd + pd * _scalar(wd, dt)
    if mu:
        buf = bufs[0]
        if not damp:
            np.multiply(buf, _scalar(mu, dt), out=buf)
            np.add(buf, gd, out=buf)
        else:  # dampening does not apply to the first step: b = g there
            if step == 0:
                np.copyto(buf, gd)
            else:
                np.multiply(buf, _scalar(mu, dt), out=buf)
                np.add(buf, gd * _scalar(1.0 - damp, dt), out=buf)
            np.add(step, _scalar(1.0, step.dtype), out=step)
            _bump(state["step"])
        _bump(state["momentum_buffer"])
        gd = gd + buf * _scalar(mu, dt) if group["nesterov"] else buf
    np.subtract(pd, np.multiply(gd, _scalar(lr, dt), out=_scratch(pd)), out=pd)
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
    pd, gd = arrays
    dt = pd.dtype
    names = ("exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())
    moments = _state_arrays(state, names, pd)
    step = _step_array(state)
    if moments is None or step is None:
        return False
    if wd and decoupled:
        np.multiply(pd, _scalar(1.0 - lr * wd, dt), out=pd)
    elif wd:
        gd = gd + pd * _scalar(wd, dt)
    np.add(step, _scalar(1.0, step.dtype), out=step)
    m, v = moments[0], moments[1]
    np.multiply(m, _scalar(b1, dt), out=m)
    np.add(m, gd * _scalar(1.0 - b1, dt), out=m)
    np.multiply(v, _scalar(b2, dt), out=v)
    np.add(v, gd * gd * _scalar(1.0 - b2, dt), out=v)
    if group["amsgrad"]:
        v = np.maximum(moments[2], v, out=moments[2])
    t = step.astype(dt)  # bias corrections in the parameter's precision
    one = _scalar(1.0, dt)
    m_hat = m / np.subtract(one, np.power(_scalar(b1, dt), t))
    v_hat = v / np.subtract(one, np.power(_scalar(b2, dt), t))
    denom = np.sqrt(v_hat) + _scalar(eps, dt)
    np.subtract(pd, (m_hat * _scalar(lr, dt)) / denom, out=pd)
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
    scalars: dict = {}  # dtype -> (mu, lr) as that dtype's 0-d arrays
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
        pd, gd = arrays
        if mu:
            state = states.get(p) or opt._state_of(p)
            buf_t = state.get("momentum_buffer")
            buf = _buffer(buf_t, pd)
            if buf is None:
                left.append(p)
                continue
        dt = pd.dtype
        found = scalars.get(dt)
        if found is None:
            found = scalars[dt] = (_scalar(mu, dt), _scalar(lr, dt))
        mu_s, lr_s = found
        if mu and (kernel := _sgd_kernel(dt)) is not None and pd.flags.c_contiguous and (
                gd.flags.c_contiguous and buf.flags.c_contiguous
                and not np.may_share_memory(gd, buf)):
            kernel(pd.size, mu_s[()], lr_s[()], gd.reshape(-1), buf.reshape(-1), pd.reshape(-1))
            buf_t._version[0] += 1
            p._version[0] += 1
            continue
        if mu:
            np.multiply(buf, mu_s, out=buf)
            gd = np.add(buf, gd, out=buf)
            buf_t._version[0] += 1
        np.subtract(pd, np.multiply(gd, lr_s, out=_scratch(pd, pool)), out=pd)
        p._version[0] += 1
    return left
