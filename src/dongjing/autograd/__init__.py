"""The eager tape: backward nodes, the backward engine, grad modes, gradcheck."""

from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .api import backward, grad
from .custom_function import Function, FunctionCtx
from .function import AccumulateGrad, BackwardNode
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck
from .hooks import register_hook, retain_grad  # noqa: F401  (attach the Tensor methods)
from .variable import Variable
