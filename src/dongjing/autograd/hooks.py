"""Hooks the tape installs for users: `Tensor.register_hook`, and `retain_grad` on a non-leaf
tensor (attached to the Tensor class here: the class sits below the tape)."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from ..tensor import Tensor
from .function import _HookHandle


def retain_grad_hook(tensor):
    """A grad_fn pre-hook that stores the gradient of `tensor` in its `.grad` (accumulating)."""
    ref = weakref.ref(tensor)

    def hook(grad):
        t = ref()
        if t is not None:
            g = grad.detach()
            t._grad = g.clone() if t._grad is None else t._grad + g
        return None

    return hook


def retain_grad(self: Tensor) -> None:
    """Keep `.grad` of this non-leaf tensor after backward."""
    if self.grad_fn is None:
        return
    if getattr(self, "_retains_grad", False):
        return
    self._retains_grad = True
    self.grad_fn.register_hook(retain_grad_hook(self))


def register_hook(self: Tensor, hook: Callable[[Tensor], Tensor | None]) -> _HookHandle:
    """Call `hook(grad)` when this tensor's gradient is computed; it may return a new one."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        return self.grad_fn.register_hook(hook)
    if getattr(self, "_hooks", None) is None:
        self._hooks = []
    self._hooks.append(hook)
    return _HookHandle(self._hooks, hook)


Tensor.retain_grad = retain_grad
Tensor.register_hook = register_hook
