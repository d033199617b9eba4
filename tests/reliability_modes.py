"""One function of tensors run in every mode: eagerly, in a Session at optimize 0/1/2 and under
dj.jit; the reliability tests compare each with the expected value."""

from __future__ import annotations

import numpy as np

import dongjing as dj

MODES = ("eager", "O0", "O1", "O2", "jit")


def run_in(mode: str, fn, *arrays):
    """`fn(*tensors)` in `mode`, as a NumPy array (or a list of them for several outputs)."""
    if mode == "eager":
        return _values(fn(*[dj.tensor(a) for a in arrays]))
    if mode == "jit":
        return _values(dj.jit(fn)(*[dj.tensor(a) for a in arrays]))
    g = dj.Graph()
    with g.as_default():
        holders = [dj.placeholder(a.shape, a.dtype) for a in arrays]
        out = fn(*holders)
    sess = dj.Session(g, optimize=int(mode[1]))
    fetched = sess.run(list(out) if isinstance(out, (tuple, list)) else out,
                       dict(zip(holders, arrays)))
    return fetched if isinstance(fetched, list) else np.asarray(fetched)


def _values(out):
    if isinstance(out, (tuple, list)):
        return [o.numpy() for o in out]
    return out.numpy()


def grads_in(mode: str, fn, *arrays):
    """The gradients of `fn(*xs).sum()` with respect to every input, in `mode` (eager and jit
    by backward(), graphs by dj.gradients)."""
    if mode in ("eager", "jit"):
        xs = [dj.tensor(a, requires_grad=True) for a in arrays]
        f = fn if mode == "eager" else dj.jit(fn)
        f(*xs).sum().backward()
        return [x.grad.numpy() for x in xs]
    g = dj.Graph()
    with g.as_default():
        holders = [dj.placeholder(a.shape, a.dtype) for a in arrays]
        grads = dj.gradients(fn(*holders).sum(), holders)
    return dj.Session(g, optimize=int(mode[1])).run(grads, dict(zip(holders, arrays)))
