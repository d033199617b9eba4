"""Anomaly mode: the first op whose forward or backward output holds NaN or inf raises an
AnomalyError naming the op, its inputs' shapes and ranges, and the user's source line.

Off by default. When off, eager dispatch and the backward engine pay one flag check per op;
nothing is inspected. Static graphs check with `dj.Session(g, check_numerics=True)`, jitted
functions with `dj.jit(f, check_numerics=True)` or while anomaly mode is on.
"""

from __future__ import annotations

import contextlib
import functools
import threading

from ..backends import backend_of, is_array, numpy_backend
from ..core import eager_modes as _eager_modes
from ..dtypes import is_floating
from ..errors import AnomalyError
from .provenance import caller, describe

xp = numpy_backend.xp  # the host namespace the checks run in (values are copied there)


def _host(array):
    """`array` as a host (NumPy) array, from whichever backend holds it."""
    return backend_of(array).to_numpy(array) if is_array(array) else xp.asarray(array)


class _State:
    """`on`: anomaly mode is on (process-wide, as in PyTorch)."""

    on = False


state = _State()


class _Backward(threading.local):
    depth = 0  # > 0 while this thread runs backward: ops there are checked per tape node


_backward = _Backward()


@contextlib.contextmanager
def in_backward():
    """While the engine runs backward: forward checks defer to `check_backward`."""
    _backward.depth += 1
    try:
        yield
    finally:
        _backward.depth -= 1


def _set(mode: bool) -> None:
    state.on = bool(mode)
    _eager_modes.note("anomaly", state.on)


def set_detect_anomaly(mode: bool) -> None:
    """Turn anomaly mode on or off for the whole process (see `detect_anomaly`)."""
    _set(mode)


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on."""
    return state.on


class detect_anomaly:
    """`with dj.autograd.detect_anomaly():` (or as a decorator): every eager op's output and
    every gradient computed by backward is checked for NaN and inf; the first one found raises
    `dj.AnomalyError` naming the op and the user's line that ran it (for a gradient: the line
    of the forward op whose gradient went bad). Slow: for debugging only."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)
        self.prev = False

    def __enter__(self):
        self.prev = state.on
        _set(self.mode)
        return self

    def __exit__(self, *exc) -> bool:
        _set(self.prev)
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(mode):
                return fn(*args, **kwargs)

        return wrapper


def bad_values(array) -> str | None:
    """"NaN", "inf" or "NaN and inf" if a floating/complex `array` holds such values."""
    a = _host(array)
    if not (is_floating(a.dtype) or a.dtype.kind == "c") or a.size == 0:
        return None
    if xp.isfinite(a).all():
        return None
    nan = bool(xp.isnan(a).any())
    inf = bool(xp.isinf(a).any())
    return " and ".join(w for w, has in (("NaN", nan), ("inf", inf)) if has)


def value_range(array) -> str:
    """`shape float32 in [lo, hi]` (finite part, with counts of NaN/inf) for a message."""
    a = _host(array)
    head = f"{tuple(a.shape)} {a.dtype}"
    if a.size == 0 or a.dtype.kind not in "fciub":
        return head
    if not (is_floating(a.dtype) or a.dtype.kind == "c"):
        return f"{head} in [{a.min()}, {a.max()}]"
    finite = a[xp.isfinite(a)]
    text = f"{head} in [{finite.min():.6g}, {finite.max():.6g}]" if finite.size else head
    extra = [f"{int(n)} {w}" for w, n in (("NaN", xp.isnan(a).sum()), ("inf", xp.isinf(a).sum()))
             if n]
    return text + (f" ({', '.join(extra)})" if extra else "")


def _inputs_text(arrays) -> str:
    return "; ".join(f"input {i}: {value_range(a)}" for i, a in enumerate(arrays)) or "no inputs"


def check_forward(op, arrays, out) -> None:
    """Eager forward: raise if `out` (the result array of `op` on `arrays`) is not finite."""
    if _backward.depth:
        return
    what = bad_values(out)
    if what is not None:
        raise AnomalyError(
            f"anomaly mode: {op.name} produced {what} in its output {value_range(out)}; "
            f"{_inputs_text(arrays)}; at {describe(caller())}"
        )


def check_backward(node, grad, results) -> None:
    """Backward: raise if a gradient `node` computed (from `grad`) is not finite."""
    for i, g in enumerate(results):
        if g is None:
            continue
        what = bad_values(g._data)
        if what is not None:
            raise AnomalyError(
                f"anomaly mode: the gradient of {node.name()} (op {node.op.name!r}) for its "
                f"input {i} holds {what}: {value_range(g._data)}; the incoming gradient was "
                f"{value_range(grad._data)}; the forward op ran at "
                f"{describe(getattr(node, 'where', None))}"
            )


def check_node(node, arrays, out) -> None:
    """A static graph node (check_numerics): raise if its output is not finite."""
    values = out if isinstance(out, tuple) else (out,)
    for value in values:
        if not (is_array(value) or isinstance(value, (xp.generic, float))):
            continue
        what = bad_values(value)
        if what is not None:
            raise AnomalyError(
                f"check_numerics: node {node.name!r} (op {node.op.name!r}) produced {what} in "
                f"its output {value_range(value)}; {_inputs_text(arrays)}; built at "
                f"{node.source or 'an unknown line'}"
            )
