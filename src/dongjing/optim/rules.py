"""The optimizers' update rules (PyTorch's documented algorithms), each written once with
dongjing ops so the same code updates eagerly and builds a static train op."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import ops
from ..backends import backend_of
from . import fused
from .optimizer import Optimizer, check_implementation

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..types import ParamsLike


def _zeros(p) -> np.ndarray:
    return _full(p, p.shape, 0.0, p.dtype)


def _step0(p) -> np.ndarray:
    return _full(p, (), 0.0, np.float32)


def _full(p, shape, value, dtype):
    """An array on `p`'s backend and device (state lives with its parameter)."""
    data = p._data
    if data is None or type(data) is np.ndarray:  # symbolic, or on the CPU
        return np.full(shape, value, dtype)

    backend = backend_of(data)
    with backend.using(backend.index_of(data)):
        return backend.full(shape, value, dtype)


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (dampening, Nesterov) and weight decay.

    g <- g + wd*p; b <- g (first step) or mu*b + (1-dampening)*g; g <- g + mu*b (Nesterov) or b;
    p <- p - lr*g.
    """

    def __init__(self, params: ParamsLike,
                 lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None):
        check_implementation("SGD", differentiable)
        if lr < 0 or momentum < 0 or weight_decay < 0:
            raise ValueError(f"SGD: invalid lr={lr}, momentum={momentum} or "
                             f"weight_decay={weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        if not group["momentum"]:
            return {}
        if not group["dampening"]:
            return {"momentum_buffer": _zeros(p)}
        return {"momentum_buffer": _zeros(p), "step": _step0(p)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        new = {}
        mu, dampening = group["momentum"], group["dampening"]
        if mu and not dampening:  # from a zero buffer, the first step gives b = g as it should
            buf = new["momentum_buffer"] = state["momentum_buffer"] * mu + g
        elif mu:  # dampening does not apply to the first step: b = g there
            step = state["step"]
            later = state["momentum_buffer"] * mu + g * (1.0 - dampening)
            buf = new["momentum_buffer"] = ops.where(ops.eq(step, 0.0), g, later)
            new["step"] = step + 1.0
        if mu:
            g = g + buf * mu if group["nesterov"] else buf
        return p - g * group["lr"], new

    def _fused_update(self, p, g, state, group):
        return fused.sgd(p, g, state, group)

    def _fused_group(self, group):
        return fused.sgd_group(self, group)

    _fused_of = update


class Adam(Optimizer):
    """Adam: m <- b1*m + (1-b1)*g; v <- b2*v + (1-b2)*g^2;
    p <- p - lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps). `weight_decay` is L2 (added to g).
    """

    decoupled = False

    def __init__(self, params: ParamsLike,
                 lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False):
        check_implementation(type(self).__name__, differentiable)
        if decoupled_weight_decay:
            self.decoupled = True  # AdamW's rule
        if lr < 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"{type(self).__name__}: invalid lr={lr}, betas={betas} or eps={eps}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = {"step": _step0(p), "exp_avg": _zeros(p), "exp_avg_sq": _zeros(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _zeros(p)
        return state

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        lr, (b1, b2), wd = group["lr"], group["betas"], group["weight_decay"]
        if wd and self.decoupled:
            p = p * (1.0 - lr * wd)
        elif wd:
            g = g + p * wd
        step = state["step"] + 1.0
        m = state["exp_avg"] * b1 + g * (1.0 - b1)
        v = state["exp_avg_sq"] * b2 + g * g * (1.0 - b2)
        new = {"step": step, "exp_avg": m, "exp_avg_sq": v}
        if group["amsgrad"]:
            v = new["max_exp_avg_sq"] = ops.maximum(state["max_exp_avg_sq"], v)
        t = ops.cast(step, p.dtype)  # bias corrections in the parameter's precision
        m_hat = m / (1.0 - ops.pow(b1, t))
        v_hat = v / (1.0 - ops.pow(b2, t))
        return p - m_hat * lr / (ops.sqrt(v_hat) + group["eps"]), new

    def _fused_update(self, p, g, state, group):
        return fused.adam(p, g, state, group, self.decoupled)

    _fused_of = update


class AdamW(Adam):
    """Adam with decoupled weight decay: p <- p * (1 - lr*wd) before the Adam step."""

    decoupled = True

    def __init__(self, params: ParamsLike,
                 lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         differentiable=differentiable)


class RMSprop(Optimizer):
    """RMSprop: v <- alpha*v + (1-alpha)*g^2 (centered: minus the squared running mean of g);
    p <- p - lr * g / (sqrt(v) + eps), through a momentum buffer when `momentum` > 0."""

    def __init__(self, params: ParamsLike,
                 lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False):
        check_implementation("RMSprop", differentiable)
        if lr < 0 or eps < 0 or momentum < 0 or not 0 <= alpha <= 1:
            raise ValueError(f"RMSprop: invalid lr={lr}, alpha={alpha}, eps={eps} or "
                             f"momentum={momentum}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = {"step": _step0(p), "square_avg": _zeros(p)}
        if group["momentum"]:
            state["momentum_buffer"] = _zeros(p)
        if group["centered"]:
            state["grad_avg"] = _zeros(p)
        return state

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        alpha = group["alpha"]
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        v = state["square_avg"] * alpha + g * g * (1.0 - alpha)
        new = {"step": state["step"] + 1.0, "square_avg": v}
        if group["centered"]:
            mean = new["grad_avg"] = state["grad_avg"] * alpha + g * (1.0 - alpha)
            v = v - mean * mean
        scaled = g / (ops.sqrt(v) + group["eps"])
        if group["momentum"]:
            scaled = new["momentum_buffer"] = state["momentum_buffer"] * group["momentum"] + scaled
        return p - scaled * group["lr"], new


class Adadelta(Optimizer):
    """Adadelta: v <- rho*v + (1-rho)*g^2; d <- sqrt(u + eps) / sqrt(v + eps) * g;
    u <- rho*u + (1-rho)*d^2; p <- p - lr*d. `weight_decay` is L2 (added to g)."""

    def __init__(self, params: ParamsLike, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False, differentiable: bool = False):
        check_implementation("Adadelta", differentiable)
        if lr < 0 or eps < 0 or weight_decay < 0 or not 0 <= rho <= 1:
            raise ValueError(f"Adadelta: invalid lr={lr}, rho={rho}, eps={eps} or "
                             f"weight_decay={weight_decay}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": _step0(p), "square_avg": _zeros(p), "acc_delta": _zeros(p)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        rho, eps = group["rho"], group["eps"]
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        v = state["square_avg"] * rho + g * g * (1.0 - rho)
        delta = ops.sqrt(state["acc_delta"] + eps) / ops.sqrt(v + eps) * g
        u = state["acc_delta"] * rho + delta * delta * (1.0 - rho)
        new = {"step": state["step"] + 1.0, "square_avg": v, "acc_delta": u}
        return p - delta * group["lr"], new


class Adagrad(Optimizer):
    """Adagrad: s <- s + g^2; p <- p - lr / (1 + (t-1)*lr_decay) * g / (sqrt(s) + eps).
    `weight_decay` is L2 (added to g); s starts at `initial_accumulator_value`."""

    def __init__(self, params: ParamsLike, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None):
        check_implementation("Adagrad", differentiable)
        if lr < 0 or lr_decay < 0 or weight_decay < 0 or eps < 0 or \
                initial_accumulator_value < 0:
            raise ValueError(f"Adagrad: invalid lr={lr}, lr_decay={lr_decay}, eps={eps}, "
                             f"weight_decay={weight_decay} or initial_accumulator_value="
                             f"{initial_accumulator_value}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": _step0(p),
                "sum": _full(p, p.shape, group["initial_accumulator_value"], p.dtype)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        step = state["step"] + 1.0
        lr = group["lr"]
        if group["lr_decay"]:
            lr = lr / (ops.cast(step - 1.0, p.dtype) * group["lr_decay"] + 1.0)
        total = state["sum"] + g * g
        return p - g / (ops.sqrt(total) + group["eps"]) * lr, {"step": step, "sum": total}
