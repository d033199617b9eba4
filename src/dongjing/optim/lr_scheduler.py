"""Learning-rate schedules (PyTorch's closed forms): StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, LambdaLR, OneCycleLR, ConstantLR, LinearLR, MultiplicativeLR, PolynomialLR,
CosineAnnealingWarmRestarts, CyclicLR; and ReduceLROnPlateau, driven by a metric."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .optimizer import Optimizer

_Lambda = Callable[[int], float]

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..types import StateDict


class LRScheduler:
    """Sets each group's `lr` from its `initial_lr` and the epoch count; call `step()` once per
    epoch, after `optimizer.step()`."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)

    def step(self) -> None:
        self.last_epoch += 1
        for i, (group, base) in enumerate(zip(self.optimizer.param_groups, self.base_lrs)):
            group["lr"] = self.lr_at(base, self.last_epoch, i)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> StateDict:
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: StateDict) -> None:
        self.last_epoch = int(state["last_epoch"])
        self.base_lrs = list(state["base_lrs"])


class StepLR(LRScheduler):
    """lr = base * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.step_size, self.gamma = int(step_size), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1):
        self.T_max, self.eta_min = int(T_max), eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        cos = (1 + math.cos(math.pi * epoch / self.T_max)) / 2
        return self.eta_min + (base_lr - self.eta_min) * cos


class LambdaLR(LRScheduler):
    """lr = base * lr_lambda(epoch) (one function, or one per group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: _Lambda | Sequence[_Lambda],
                 last_epoch: int = -1):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else \
            [lr_lambda] * n
        if len(self.lr_lambdas) != n:
            raise ValueError(f"LambdaLR: {len(self.lr_lambdas)} functions for {n} groups")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        return base_lr * self.lr_lambdas[index](epoch)


class MultiStepLR(LRScheduler):
    """lr = base * gamma ** (number of milestones reached)."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1):
        self.milestones, self.gamma = sorted(int(m) for m in milestones), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ExponentialLR(LRScheduler):
    """lr = base * gamma ** epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        return base_lr * self.gamma ** epoch


def _per_group(value, optimizer: Optimizer, name: str) -> list:
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name}: {len(value)} values for {n} parameter groups")
        return list(value)
    return [value] * n


class OneCycleLR(LRScheduler):
    """The 1cycle policy, stepped once per batch: lr rises from max_lr/div_factor to max_lr over
    the first `pct_start` of `total_steps`, then anneals to initial_lr/final_div_factor (cosine
    or linear); momentum (or Adam's beta1) cycles the opposite way."""

    def __init__(self, optimizer: Optimizer, max_lr: float | Sequence[float],
                 total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum: float | Sequence[float] = 0.85,
                 max_momentum: float | Sequence[float] = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = int(epochs) * int(steps_per_epoch)
        if int(total_steps) <= 0:
            raise ValueError(f"OneCycleLR: total_steps must be positive, got {total_steps}")
        if not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = int(total_steps), anneal_strategy
        groups = optimizer.param_groups
        for group, top in zip(groups, _per_group(max_lr, optimizer, "OneCycleLR max_lr")):
            group["initial_lr"] = top / div_factor
            group["max_lr"], group["min_lr"] = top, group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("OneCycleLR: optimizer has neither momentum nor betas; pass "
                                 "cycle_momentum=False")
            bases = _per_group(base_momentum, optimizer, "OneCycleLR base_momentum")
            tops = _per_group(max_momentum, optimizer, "OneCycleLR max_momentum")
            for group, low, high in zip(groups, bases, tops):
                group["base_momentum"], group["max_momentum"] = low, high
        total = float(self.total_steps)
        if three_phase:
            self.phases = [(pct_start * total - 1, "initial_lr", "max_lr", "max_momentum",
                            "base_momentum"),
                           (2 * pct_start * total - 2, "max_lr", "initial_lr", "base_momentum",
                            "max_momentum"),
                           (total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self.phases = [(pct_start * total - 1, "initial_lr", "max_lr", "max_momentum",
                            "base_momentum"),
                           (total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def _values(self, group: dict, step: int) -> tuple[float, float | None]:
        start_step = 0.0
        for i, (end_step, lr0, lr1, m0, m1) in enumerate(self.phases):
            if step <= end_step or i == len(self.phases) - 1:
                pct = (step - start_step) / (end_step - start_step)
                lr = self._anneal(group[lr0], group[lr1], pct)
                momentum = self._anneal(group[m0], group[m1], pct) if self.cycle_momentum \
                    else None
                return lr, momentum
            start_step = end_step
        raise AssertionError("unreachable")

    def step(self) -> None:
        self.last_epoch += 1
        if self.last_epoch > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {self.last_epoch} times, more than "
                             f"total_steps={self.total_steps}")
        for group in self.optimizer.param_groups:
            lr, momentum = self._values(group, self.last_epoch)
            group["lr"] = lr
            if momentum is not None:
                key = "betas" if "betas" in group else "momentum"
                value = (momentum, group["betas"][1]) if key == "betas" else momentum
                if hasattr(group, "schedule"):
                    group.schedule(key, value)
                else:
                    group[key] = value
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class ReduceLROnPlateau:
    """Multiply each group's lr by `factor` once the metric passed to `step(metric)` has not
    improved for more than `patience` calls (then wait `cooldown` calls); never below
    `min_lr`."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr=0.0, eps: float = 1e-8):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be below 1, got {factor}")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: bad mode {mode!r} or threshold_mode "
                             f"{threshold_mode!r}")
        self.optimizer, self.mode, self.factor = optimizer, mode, factor
        self.patience, self.threshold, self.threshold_mode = patience, threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.min_lrs = _per_group(min_lr, optimizer, "ReduceLROnPlateau min_lr")
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs, self.cooldown_counter, self.last_epoch = 0, 0, 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            bound = best * (1.0 - self.threshold) if self.threshold_mode == "rel" else \
                best - self.threshold
            return a < bound
        bound = best * (1.0 + self.threshold) if self.threshold_mode == "rel" else \
            best + self.threshold
        return a > bound

    def step(self, metrics: float | Tensor) -> None:
        """Record one epoch's metric (a number or one-element tensor)."""
        current = float(metrics)
        self.last_epoch += 1
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                new_lr = max(group["lr"] * self.factor, floor)
                if group["lr"] - new_lr > self.eps:
                    group["lr"] = new_lr
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        return list(self._last_lr)

    def state_dict(self) -> StateDict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: StateDict) -> None:
        self.__dict__.update(state)


class ConstantLR(LRScheduler):
    """lr = base * factor for the first `total_iters` epochs, then base."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if not 0 <= factor <= 1:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, int(total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        return base_lr * self.factor if epoch < self.total_iters else base_lr


class LinearLR(LRScheduler):
    """lr = base * factor, the factor moving linearly from `start_factor` to `end_factor` over
    `total_iters` epochs, then staying."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1):
        if not 0 < start_factor <= 1 or not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1] and end_factor in "
                             f"[0, 1], got {start_factor} and {end_factor}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = int(total_iters)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        done = min(epoch, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)


class MultiplicativeLR(LRScheduler):
    """lr = previous lr * lr_lambda(epoch) (one function, or one per group); base at epoch 0."""

    def __init__(self, optimizer: Optimizer, lr_lambda: _Lambda | Sequence[_Lambda],
                 last_epoch: int = -1):
        self.lr_lambdas = _per_group(lr_lambda, optimizer, "MultiplicativeLR lr_lambda")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        if epoch <= 0:
            return base_lr
        return self.optimizer.param_groups[index]["lr"] * self.lr_lambdas[index](epoch)


class PolynomialLR(LRScheduler):
    """lr = base * (1 - min(epoch, total_iters) / total_iters) ** power."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters, self.power = int(total_iters), power
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        return base_lr * (1.0 - min(epoch, self.total_iters) / self.total_iters) ** self.power


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing from base to eta_min over T_i epochs, restarting at base; the
    period starts at T_0 and is multiplied by T_mult at each restart."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if int(T_0) <= 0 or int(T_mult) < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_0 must be positive and T_mult at "
                             f"least 1, got {T_0} and {T_mult}")
        self.T_0, self.T_mult, self.eta_min = int(T_0), int(T_mult), eta_min
        super().__init__(optimizer, last_epoch)

    def _position(self, epoch: int) -> tuple[int, int]:
        """(epochs since the last restart, the current period)."""
        if self.T_mult == 1:
            return epoch % self.T_0, self.T_0
        period, start = self.T_0, 0
        while epoch >= start + period:
            start += period
            period *= self.T_mult
        return epoch - start, period

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        t_cur, t_i = self._position(max(epoch, 0))
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017), stepped once per batch: lr moves between base_lr
    and max_lr over step_size_up + step_size_down steps, scaled per cycle ("triangular2",
    "exp_range" or `scale_fn`); momentum cycles the opposite way when `cycle_momentum`."""

    def __init__(self, optimizer: Optimizer, base_lr: float | Sequence[float],
                 max_lr: float | Sequence[float], step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float | Sequence[float] = 0.8,
                 max_momentum: float | Sequence[float] = 0.9, last_epoch: int = -1):
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be triangular, triangular2 or exp_range, "
                             f"got {mode!r}")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size, self.step_ratio = up + down, up / (up + down)
        self.mode, self.gamma = mode, gamma
        self.scale_fn, self.scale_mode = scale_fn, scale_mode if scale_fn else (
            "iterations" if mode == "exp_range" else "cycle")
        groups = optimizer.param_groups
        self.max_lrs = _per_group(max_lr, optimizer, "CyclicLR max_lr")
        if last_epoch == -1:
            for group, low in zip(groups, _per_group(base_lr, optimizer, "CyclicLR base_lr")):
                group["initial_lr"] = group["lr"] = low
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("CyclicLR: optimizer has neither momentum nor betas; pass "
                                 "cycle_momentum=False")
            self.base_momentums = _per_group(base_momentum, optimizer, "CyclicLR base_momentum")
            self.max_momentums = _per_group(max_momentum, optimizer, "CyclicLR max_momentum")
            for group, top in zip(groups, self.max_momentums):
                self._set_momentum(group, top)
        super().__init__(optimizer, last_epoch)

    def _scale(self, x: float) -> float:
        if self.scale_fn is not None:
            return self.scale_fn(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def _factors(self, epoch: int) -> tuple[float, float]:
        cycle = math.floor(1 + epoch / self.total_size)
        x = 1.0 + epoch / self.total_size - cycle
        height = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self._scale(cycle if self.scale_mode == "cycle" else epoch)
        return height, scale

    def lr_at(self, base_lr: float, epoch: int, index: int) -> float:
        height, scale = self._factors(epoch)
        return base_lr + (self.max_lrs[index] - base_lr) * height * scale

    @staticmethod
    def _set_momentum(group, value) -> None:
        key = "betas" if "betas" in group else "momentum"
        new = (value, group["betas"][1]) if key == "betas" else value
        if hasattr(group, "schedule"):
            group.schedule(key, new)
        else:
            group[key] = new

    def step(self) -> None:
        super().step()
        if self.cycle_momentum:
            height, scale = self._factors(self.last_epoch)
            for group, low, top in zip(self.optimizer.param_groups, self.base_momentums,
                                       self.max_momentums):
                self._set_momentum(group, top - (top - low) * height * scale)
