"""Hooks the tape installs for users: retain_grad on a non-leaf tensor."""

from __future__ import annotations

import weakref


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
