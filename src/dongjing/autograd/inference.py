"""`dj.inference_mode`: PyTorch's inference mode, which here is exactly `no_grad`."""

from __future__ import annotations

from .grad_mode import set_grad_enabled, state, write


class inference_mode(set_grad_enabled):  # noqa: N801 - PyTorch's spelling
    """`with dj.inference_mode():`, `@dj.inference_mode()` or bare `@dj.inference_mode`: ops
    inside record nothing for backward. This is `dj.no_grad` under PyTorch's name: tensors made
    inside are ordinary tensors (PyTorch's extra "inference tensor" restrictions and speed-ups
    do not apply). ``inference_mode(False)`` leaves the grad mode as it is, as PyTorch's."""

    _applies_at_once = False

    def __new__(cls, mode=True):
        if mode is None or isinstance(mode, bool):
            return super().__new__(cls)
        if callable(mode):  # used bare as a decorator: @dj.inference_mode
            return cls()(mode)
        raise TypeError(f"inference_mode: mode must be a bool, got {type(mode).__name__}")

    def __enter__(self):
        self.prev = state.grad_enabled
        if self.mode:
            write(False)
        return self

    def _fresh(self):
        return inference_mode(self.mode)
