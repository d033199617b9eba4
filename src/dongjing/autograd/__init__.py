"""The eager tape: backward nodes, the backward engine, grad modes, gradcheck."""

from .api import backward, grad
from .custom_function import Function, FunctionCtx
from .function import AccumulateGrad, BackwardNode
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck
from .variable import Variable
