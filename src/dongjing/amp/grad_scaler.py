"""`GradScaler` (PyTorch's `torch.amp.GradScaler`, also `torch.cuda.amp.GradScaler`): loss
scaling for low-precision training. The loss is multiplied by a scale before `backward()`;
`step` divides the gradients by it, skips the update when any gradient is infinite or NaN,
and `update` halves the scale after such a step and doubles it after `growth_interval` clean
ones.

The scale and the growth tracker are Variables, read by reference, so the same calls also work
inside a `dj.jit` traced train step, where the gradients are symbolic: there the inf check, the
skipped update (each parameter and optimizer-state write becomes `where(found_inf, old, new)`)
and the scale's adaptation are graph ops (`grad_scaler_graph`). For a static graph,
`minimize(optimizer, loss)` builds the whole scaled train op."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, overload

from .. import dtypes, ops
from ..autograd.grad_mode import no_grad
from ..backends import for_device_type
from ..errors import ArgumentError
from ..graph.variable import Variable
from ..ops.state import assign
from ..tensor import Tensor
from . import grad_scaler_graph as graph_mode

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..optim.optimizer import Optimizer
    from ..types import StateDict


class GradScaler:
    """Scale losses, unscale gradients, skip steps with non-finite gradients, adapt the scale.

    `device="cuda"` (PyTorch's default) on a host without a CUDA backend disables the scaler
    with a warning, as PyTorch does; `device="cpu"` scales on the CPU.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        if growth_factor <= 1.0:
            raise ArgumentError(f"GradScaler: growth_factor must exceed 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ArgumentError(f"GradScaler: backoff_factor must be in (0, 1), got "
                                f"{backoff_factor}")
        if int(growth_interval) < 1:
            raise ArgumentError(f"GradScaler: growth_interval must be positive, got "
                                f"{growth_interval}")
        self.device = str(device)
        if enabled and self.device.startswith("cuda"):
            if for_device_type("cuda") is None:  # no backend serves "cuda" (CuPy, or a test's)
                warnings.warn("GradScaler is enabled, but CUDA is not available; disabling "
                              "(as PyTorch does). Use GradScaler('cpu') to scale on the CPU.",
                              UserWarning, stacklevel=2)
                enabled = False
        self._enabled = bool(enabled)
        self._init_scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        # Variables: a traced step reads their current values and assigns the new ones
        # on the device it scales for, as PyTorch's (a step there then never reads the host)
        place = self.device if self._enabled and self.device.startswith("cuda") else None
        self._scale = Variable(self._init_scale, dtype=dtypes.float32, trainable=False,
                               device=place)
        self._growth_tracker = Variable(0, dtype=dtypes.int64, trainable=False, device=place)
        self._per_optimizer: dict[int, dict] = {}

    # --- scaling ------------------------------------------------------------------------------
    @overload
    def scale(self, outputs: Tensor) -> Tensor: ...
    @overload
    def scale(self, outputs: list[Tensor]) -> list[Tensor]: ...
    @overload
    def scale(self, outputs: tuple[Tensor, ...]) -> tuple[Tensor, ...]: ...

    def scale(self, outputs: Tensor | list[Tensor] | tuple[Tensor, ...]
              ) -> Tensor | list[Tensor] | tuple[Tensor, ...]:
        """`outputs` (a tensor, or a list/tuple of them) multiplied by the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if outputs._node is not None:  # read by reference in the graph
                return ops.mul(outputs, self._scale)
            return ops.mul(outputs, ops.cast(self._scale, outputs.dtype)
                           if dtypes.is_floating(outputs.dtype) else self._scale)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: expects a tensor or a list/tuple of tensors, got "
                        f"{type(outputs).__name__}")

    def unscale_(self, optimizer: Optimizer) -> None:
        """Divide `optimizer`'s gradients by the scale, in place, and note whether any is
        infinite or NaN (then `step` skips). At most once per optimizer between updates."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["unscaled"]:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update()")
        if graph_mode.symbolic_grads(optimizer):
            state["found_inf"] = graph_mode.unscale(optimizer, self._scale)
            state["unscaled"] = True
            return
        inverse = 1.0 / self.get_scale()
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.mul_(inverse)
                    if not bool(ops.all(ops.isfinite(p.grad))):
                        found_inf = True
        state["unscaled"], state["found_inf"] = True, found_inf

    def step(self, optimizer: Optimizer, *args: Any, **kwargs: Any) -> Tensor | None:
        """Unscale (unless done), then `optimizer.step(*args, **kwargs)` when every gradient
        is finite; returns what the step returned, or None when it was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("GradScaler.step: a closure is not supported (as in PyTorch)")
        state = self._state(optimizer)
        if not state["unscaled"]:
            self.unscale_(optimizer)
        state["stepped"] = True
        if isinstance(state["found_inf"], Tensor):  # a traced step: decided when it runs
            return graph_mode.guarded_step(optimizer, state["found_inf"])
        if state["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adapt the scale after the step(s): back off if any gradient was non-finite, grow
        after `growth_interval` clean updates in a row; or set it to `new_scale`."""
        if not self._enabled:
            return None
        found = [s["found_inf"] for s in self._per_optimizer.values()]
        self._per_optimizer = {}
        if new_scale is not None:
            assign(self._scale, float(new_scale))
            return None
        if any(isinstance(f, Tensor) for f in found):  # a traced step: graph ops
            return graph_mode.update(self, found)
        if found:
            scale, tracker = self.get_scale(), int(self._growth_tracker.item())
            if any(found):
                scale, tracker = scale * self._backoff_factor, 0
            else:
                tracker += 1
                if tracker == self._growth_interval:
                    scale, tracker = scale * self._growth_factor, 0
            assign(self._scale, scale)
            assign(self._growth_tracker, tracker)
        return None

    def minimize(self, optimizer: Optimizer, loss: Tensor,
                 var_list: Iterable[Tensor] | None = None) -> Tensor | None:
        """A static graph's scaled train op (PyTorch's scale/backward/step/update as one op,
        like TensorFlow's LossScaleOptimizer): gradients of `loss * scale`, unscaled; the
        optimizer's update where they are all finite, none otherwise; the scale adapted."""
        if not self._enabled:
            return optimizer.minimize(loss, var_list)
        return graph_mode.minimize(self, optimizer, loss, var_list)

    def _state(self, optimizer) -> dict:
        return self._per_optimizer.setdefault(
            id(optimizer), {"unscaled": False, "found_inf": False, "stepped": False})

    # --- queries and state --------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return float(self._scale.item()) if self._enabled else 1.0

    def is_enabled(self) -> bool:
        return self._enabled

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def state_dict(self) -> StateDict:
        """PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval and
        _growth_tracker (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": int(self._growth_tracker.item())}

    def load_state_dict(self, state: StateDict) -> None:
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty (saved "
                               "from a disabled scaler)")
        assign(self._scale, float(state["scale"]))
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        assign(self._growth_tracker, int(state["_growth_tracker"]))
