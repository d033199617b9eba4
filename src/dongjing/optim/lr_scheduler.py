"""Learning-rate schedules (PyTorch's closed forms): StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, LambdaLR, OneCycleLR; and ReduceLROnPlateau, driven by a metric."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence

from .optimizer import Optimizer


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

    def state_dict(self) -> dict:
        return {"last_epoch": self.last_epoch, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: dict) -> None:
        self.last_epoch = int(state["last_epoch"])
        self.base_lrs = list(state["base_lrs"])


class StepLR(LRScheduler):
    """lr = base * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1):
        self.step_size, self.gamma = int(step_size), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, index):
        return base_lr * self.gamma ** (epoch // self.step_size)


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1):
        self.T_max, self.eta_min = int(T_max), eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, index):
        cos = (1 + math.cos(math.pi * epoch / self.T_max)) / 2
        return self.eta_min + (base_lr - self.eta_min) * cos


class LambdaLR(LRScheduler):
    """lr = base * lr_lambda(epoch) (one function, or one per group)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable | list, last_epoch: int = -1):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else \
            [lr_lambda] * n
        if len(self.lr_lambdas) != n:
            raise ValueError(f"LambdaLR: {len(self.lr_lambdas)} functions for {n} groups")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, index):
        return base_lr * self.lr_lambdas[index](epoch)


class MultiStepLR(LRScheduler):
    """lr = base * gamma ** (number of milestones reached)."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1):
        self.milestones, self.gamma = sorted(int(m) for m in milestones), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, index):
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ExponentialLR(LRScheduler):
    """lr = base * gamma ** epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr, epoch, index):
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

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
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

    def step(self, metrics) -> None:
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

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update(state)
