"""`dj.func` (PyTorch's `torch.func`): function transforms over dongjing's autograd.

`grad`, `grad_and_value`, `vjp` and `jacrev` are reverse mode; `jacfwd` and `hessian` give the
same values through reverse mode as well (dongjing has no forward-mode AD); `vmap` maps a
function over a batch dim by calling it once per example and stacking the results (a loop,
not a vectorizing transform); `functional_call` runs a module with other parameters and
buffers. The transforms nest (`grad(grad(f))`)."""

from __future__ import annotations

from .call import functional_call
from .transforms import grad, grad_and_value, hessian, jacfwd, jacrev, vjp, vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "vjp",
           "vmap"]
