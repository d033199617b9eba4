"""Binary cross-entropy on probabilities, unreduced, as one elementwise primitive: its value
clamps each log at -100 and its gradient is PyTorch's, (x - t) / max(x (1 - x), 1e-12), so a
probability of exactly 0 or 1 gives a large finite gradient, not 0 * inf = NaN."""

from __future__ import annotations

import contextlib

from ..core import infer as inf
from ..core.registry import Cost, Kind, Spec, define
from ..errors import DTypeError
from .bindings import binary
from .elementwise import clip, div, log, mul, sub

_EPS = 1e-12  # PyTorch's floor on x (1 - x) in the gradient


def _forward(xp, x, t):
    with _quiet(xp):
        log_x = xp.maximum(xp.log(x), -100)
        log_1mx = xp.maximum(xp.log(1 - x), -100)
    return -(t * log_x + (1 - t) * log_1mx)


def _quiet(xp):
    errstate = getattr(xp, "errstate", None)
    if errstate is None:  # a backend without NumPy's error state
        return contextlib.nullcontext()
    return errstate(divide="ignore")


def _infer(x: Spec, t: Spec):
    shape, dtype = inf.elementwise("binary_cross_entropy")(x, t)
    if dtype.kind != "f":
        raise DTypeError(f"binary_cross_entropy: expects floating point input and target, got "
                         f"{x.dtype} and {t.dtype}")
    return shape, dtype


def _grad_input(g, x, t):
    return div(mul(g, sub(x, t)), clip(mul(x, sub(1.0, x)), _EPS))


def _grad_target(g, x, t):  # PyTorch's: the logs unclamped (infinite at x = 0 or 1)
    return mul(g, sub(log(sub(1.0, x)), log(x)))


_bce = define("binary_cross_entropy", forward=_forward, infer=_infer, kind=Kind.ELEMENTWISE,
              cost=Cost.TRANSCENDENTAL, grads=(_grad_input, _grad_target), binding=binary,
              grad_name="BinaryCrossEntropyBackward0", onnx=None,
              onnx_reason="exported through nn.functional's composition, not yet written",
              doc="-(t log x + (1 - t) log(1 - x)) elementwise, each log clamped at -100.")
binary_cross_entropy = _bce.binding
