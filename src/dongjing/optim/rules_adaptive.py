"""More of PyTorch's optimizers, each an update rule written once with dongjing ops (eager
`step()`, static `minimize()` and `dj.jit` alike): Adamax, NAdam, RAdam, ASGD, Rprop,
SparseAdam, Adafactor and Muon. The algorithms are PyTorch's documented ones; every branch on
the step count is a `where` on the step tensor so a built train op follows it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import dtypes, ops
from ..errors import ArgumentError
from .optimizer import Optimizer
from .rules import _full, _step0, _zeros

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..types import ParamsLike


def _check(name: str, **values) -> None:
    for key, value in values.items():
        if not isinstance(value, (int, float, np.number)) or value < 0:
            raise ValueError(f"{name}: invalid {key}={value!r} (must be a number >= 0)")


def _betas(name: str, betas) -> tuple:
    betas = tuple(betas)
    if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
        raise ValueError(f"{name}: invalid betas={betas!r} (two numbers in [0, 1))")
    return betas


def _accept_flags(name: str, differentiable: bool) -> None:
    """`foreach` and `capturable` choose PyTorch's kernels, not the arithmetic; a
    differentiable step (gradients through the update) is not provided."""
    if differentiable:
        raise ArgumentError(f"{name}: differentiable=True (gradients through the optimizer "
                            "step) is not supported; leave it False")


def _t(step, p):
    """The step count in the parameter's precision."""
    return ops.cast(step, p.dtype)


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm): m <- b1*m + (1-b1)*g; u <- max(b2*u, |g| + eps);
    p <- p - lr / (1 - b1^t) * m / u. `weight_decay` is L2 (added to g)."""

    def __init__(self, params: ParamsLike,
                 lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        _check("Adamax", lr=lr, eps=eps, weight_decay=weight_decay)
        _accept_flags("Adamax", differentiable)
        super().__init__(params, dict(lr=lr, betas=_betas("Adamax", betas), eps=eps,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": _step0(p), "exp_avg": _zeros(p), "exp_inf": _zeros(p)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        (b1, b2), lr = group["betas"], group["lr"]
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        step = state["step"] + 1.0
        m = state["exp_avg"] * b1 + g * (1.0 - b1)
        u = ops.maximum(state["exp_inf"] * b2, ops.abs(g) + group["eps"])
        clr = lr / (1.0 - ops.pow(b1, _t(step, p)))
        return p - m / u * clr, {"step": step, "exp_avg": m, "exp_inf": u}


class NAdam(Optimizer):
    """NAdam (Adam with Nesterov momentum, Dozat 2016) with PyTorch's momentum schedule
    mu_t = b1 * (1 - 0.5 * 0.96^(t * momentum_decay)). `decoupled_weight_decay=True` decays
    the parameter as AdamW does; otherwise `weight_decay` is L2."""

    def __init__(self, params: ParamsLike,
                 lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        _check("NAdam", lr=lr, eps=eps, weight_decay=weight_decay,
               momentum_decay=momentum_decay)
        _accept_flags("NAdam", differentiable)
        super().__init__(params, dict(
            lr=lr, betas=_betas("NAdam", betas), eps=eps, weight_decay=weight_decay,
            momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
            foreach=foreach, maximize=maximize, capturable=capturable,
            differentiable=differentiable))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": _step0(p), "mu_product": _full(p, (), 1.0, np.float32),
                "exp_avg": _zeros(p), "exp_avg_sq": _zeros(p)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        (b1, b2), lr, wd = group["betas"], group["lr"], group["weight_decay"]
        step = state["step"] + 1.0
        t = _t(step, p)
        if wd and group["decoupled_weight_decay"]:
            p = p * (1.0 - lr * wd)
        elif wd:
            g = g + p * wd
        decay = group["momentum_decay"]
        mu = (1.0 - ops.pow(0.96, t * decay) * 0.5) * b1
        mu_next = (1.0 - ops.pow(0.96, (t + 1.0) * decay) * 0.5) * b1
        mu_product = ops.cast(state["mu_product"], p.dtype) * mu
        m = state["exp_avg"] * b1 + g * (1.0 - b1)
        v = state["exp_avg_sq"] * b2 + g * g * (1.0 - b2)
        denom = ops.sqrt(v / (1.0 - ops.pow(b2, t))) + group["eps"]
        p = p - g / denom * (lr * (1.0 - mu) / (1.0 - mu_product))
        p = p - m / denom * (lr * mu_next / (1.0 - mu_product * mu_next))
        return p, {"step": step, "mu_product": ops.cast(mu_product, np.float32),
                   "exp_avg": m, "exp_avg_sq": v}


class RAdam(Optimizer):
    """RAdam (Liu et al. 2019): Adam whose adaptive step is switched on, rectified, once the
    variance of the adaptive learning rate is tractable (rho_t > 5); before that the step is
    SGD with momentum. `decoupled_weight_decay=True` decays as AdamW does."""

    def __init__(self, params: ParamsLike,
                 lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False):
        _check("RAdam", lr=lr, eps=eps, weight_decay=weight_decay)
        _accept_flags("RAdam", differentiable)
        super().__init__(params, dict(
            lr=lr, betas=_betas("RAdam", betas), eps=eps, weight_decay=weight_decay,
            decoupled_weight_decay=decoupled_weight_decay, foreach=foreach, maximize=maximize,
            capturable=capturable, differentiable=differentiable))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": _step0(p), "exp_avg": _zeros(p), "exp_avg_sq": _zeros(p)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        (b1, b2), lr, wd = group["betas"], group["lr"], group["weight_decay"]
        step = state["step"] + 1.0
        t = _t(step, p)
        if wd and group["decoupled_weight_decay"]:
            p = p * (1.0 - lr * wd)
        elif wd:
            g = g + p * wd
        m = state["exp_avg"] * b1 + g * (1.0 - b1)
        v = state["exp_avg_sq"] * b2 + g * g * (1.0 - b2)
        correction2 = 1.0 - ops.pow(b2, t)
        m_hat = m / (1.0 - ops.pow(b1, t))
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        rho_t = rho_inf - t * ops.pow(b2, t) * 2.0 / correction2
        # clamped at 0 so the unused branch (rho_t <= 5) takes no square root of a negative
        rect = ops.sqrt(ops.maximum((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                                    / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t), 0.0))
        adaptive = ops.sqrt(correction2) / (ops.sqrt(v) + group["eps"])
        scale = ops.where(ops.gt(rho_t, 5.0), rect * adaptive, ops.ones_like(v))
        return p - m_hat * lr * scale, {"step": step, "exp_avg": m, "exp_avg_sq": v}


class ASGD(Optimizer):
    """Averaged SGD (Polyak and Juditsky 1992): p <- p * (1 - lambd*eta) - eta*g; the average
    `ax` follows p from step `t0` on; eta = lr / (1 + lambd*lr*t)^alpha."""

    def __init__(self, params: ParamsLike,
                 lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        _check("ASGD", lr=lr, weight_decay=weight_decay)
        _accept_flags("ASGD", differentiable)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": _step0(p), "eta": _full(p, (), group["lr"], np.float32),
                "mu": _full(p, (), 1.0, np.float32), "ax": _zeros(p)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        lr, lambd = group["lr"], group["lambd"]
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        step = state["step"] + 1.0
        eta, mu = ops.cast(state["eta"], p.dtype), ops.cast(state["mu"], p.dtype)
        p = p * (1.0 - eta * lambd) - g * eta
        ax = ops.where(ops.eq(mu, 1.0), p, state["ax"] + (p - state["ax"]) * mu)
        t = ops.cast(step, np.float32)
        new_eta = lr / ops.pow(t * (lambd * lr) + 1.0, group["alpha"])
        new_mu = 1.0 / ops.maximum(t - group["t0"], 1.0)
        return p, {"step": step, "eta": ops.cast(new_eta, np.float32),
                   "mu": ops.cast(new_mu, np.float32), "ax": ax}


class Rprop(Optimizer):
    """Resilient backpropagation: each element's step size grows by `etas[1]` while its
    gradient keeps its sign and shrinks by `etas[0]` when it flips (that element then skips
    one update), within `step_sizes`; p <- p - sign(g) * step_size."""

    def __init__(self, params: ParamsLike,
                 lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False):
        _check("Rprop", lr=lr)
        etas, step_sizes = tuple(etas), tuple(step_sizes)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Rprop: invalid etas={etas!r} (need 0 < etaminus < 1 < etaplus)")
        _accept_flags("Rprop", differentiable)
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": _step0(p), "prev": _zeros(p),
                "step_size": _full(p, p.shape, group["lr"], p.dtype)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        (eta_minus, eta_plus), (low, high) = group["etas"], group["step_sizes"]
        sign = ops.sign(g * state["prev"])
        factor = ops.where(ops.gt(sign, 0.0), ops.full_like(g, eta_plus),
                           ops.where(ops.lt(sign, 0.0), ops.full_like(g, eta_minus),
                                     ops.ones_like(g)))
        step_size = ops.clip(state["step_size"] * factor, low, high)
        g = ops.where(ops.lt(sign, 0.0), ops.zeros_like(g), g)
        return p - ops.sign(g) * step_size, {"step": state["step"] + 1.0, "prev": g,
                                             "step_size": step_size}


class SparseAdam(Optimizer):
    """Lazy Adam for embeddings: only the rows (slices along dim 0) that the gradient touches
    are updated, their moments included; the others keep their values and moments. PyTorch
    reads the touched rows off a sparse gradient; dongjing's gradients are dense, so a touched
    row is one with any nonzero gradient element (a looked-up row whose gradient is exactly
    zero counts as untouched)."""

    def __init__(self, params: ParamsLike,
                 lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False):
        _check("SparseAdam", lr=lr, eps=eps)
        super().__init__(params, dict(lr=lr, betas=_betas("SparseAdam", betas), eps=eps,
                                      maximize=maximize))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": _step0(p), "exp_avg": _zeros(p), "exp_avg_sq": _zeros(p)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        (b1, b2), lr = group["betas"], group["lr"]
        step = state["step"] + 1.0
        t = _t(step, p)
        touched = ops.ne(g, 0.0)
        if g.ndim > 1:
            touched = ops.any(touched, dim=tuple(range(1, g.ndim)), keepdim=True)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        new_m = ops.where(touched, m + (g - m) * (1.0 - b1), m)
        new_v = ops.where(touched, v + (g * g - v) * (1.0 - b2), v)
        step_size = lr * ops.sqrt(1.0 - ops.pow(b2, t)) / (1.0 - ops.pow(b1, t))
        delta = new_m / (ops.sqrt(new_v) + group["eps"]) * step_size
        new_p = ops.where(touched, p - delta, p)
        return new_p, {"step": step, "exp_avg": new_m, "exp_avg_sq": new_v}


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern 2018) as PyTorch writes it: the second moment of a matrix
    (or a stack of matrices) is kept as row and column factors; the step is relative to the
    parameter's RMS and clipped by `d`. `eps=(eps1, eps2)`: eps1 None means the dtype's
    machine epsilon. `weight_decay` decays the parameter (decoupled)."""

    def __init__(self, params: ParamsLike, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps=(None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False):
        _check("Adafactor", lr=lr, d=d, weight_decay=weight_decay)
        if beta2_decay > 0:
            raise ValueError(f"Adafactor: beta2_decay should be <= 0, got {beta2_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = {"step": _step0(p)}
        if p.ndim > 1:
            state["row_var"] = _full(p, p.shape[:-1] + (1,), 0.0, p.dtype)
            state["col_var"] = _full(p, p.shape[:-2] + (1, p.shape[-1]), 0.0, p.dtype)
        else:
            state["variance"] = _zeros(p)
        return state

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        lr, (eps1, eps2) = group["lr"], group["eps"]
        if eps1 is None:
            eps1 = float(dtypes.finfo(p.dtype).eps)
        step = state["step"] + 1.0
        t = _t(step, p)
        weight = ops.pow(t, group["beta2_decay"])
        rho = ops.minimum(ops.rsqrt(t), lr)
        size = max(int(np.prod(p.shape)), 1)
        alpha = ops.maximum(ops.norm(p) / math.sqrt(size), eps2) * rho
        if group["weight_decay"]:
            p = p * (1.0 - lr * group["weight_decay"])
        new = {"step": step}
        if p.ndim > 1:
            row = state["row_var"]
            row = new["row_var"] = row + (ops.mean(g * g, dim=-1, keepdim=True) - row) * weight
            col = state["col_var"]
            col = new["col_var"] = col + (ops.mean(g * g, dim=-2, keepdim=True) - col) * weight
            estimate = ops.matmul(row, col) / ops.clip(
                ops.mean(row, dim=-2, keepdim=True), eps1, None)
        else:
            var = state["variance"]
            estimate = new["variance"] = var + (g * g - var) * weight
        step_dir = ops.rsqrt(ops.clip(estimate, eps1 * eps1, None)) * g
        denom = ops.maximum(ops.norm(step_dir) / (math.sqrt(size) * group["d"]), 1.0)
        return p - step_dir * (alpha / denom), new


def _orthogonalized(g, coefficients, steps: int, eps: float):
    """The Newton-Schulz quintic iteration of Muon: g with its singular values pushed towards
    one (roughly U V^T of g's SVD)."""
    a, b, c = coefficients
    wide = g.shape[0] <= g.shape[1]
    x = g if wide else ops.transpose(g, 0, 1)
    x = x / ops.clip(ops.norm(x), eps, None)
    for _ in range(steps):
        gram = ops.matmul(x, ops.transpose(x, 0, 1))
        update = gram * b + ops.matmul(gram, gram) * c
        x = x * a + ops.matmul(update, x)
    return x if wide else ops.transpose(x, 0, 1)


class Muon(Optimizer):
    """Muon (Jordan et al. 2024) for 2-d parameters: SGD momentum (Nesterov by default) whose
    update is orthogonalized by `ns_steps` Newton-Schulz iterations, with decoupled weight
    decay and PyTorch's learning-rate adjustment (`adjust_lr_fn`: None/"original" scales by
    sqrt(max(1, rows/cols)), "match_rms_adamw" by 0.2*sqrt(max(rows, cols))). The iteration
    runs in the parameter's dtype (PyTorch runs it in bfloat16), so results agree with
    PyTorch's to bfloat16 precision."""

    def __init__(self, params: ParamsLike, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps: float = 1e-7,
                 ns_steps: int = 5, adjust_lr_fn: str | None = None):
        _check("Muon", lr=lr, weight_decay=weight_decay, momentum=momentum)
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Muon: adjust_lr_fn must be None, 'original' or "
                             f"'match_rms_adamw', got {adjust_lr_fn!r}")
        if not 0 <= ns_steps < 100 or len(tuple(ns_coefficients)) != 3:
            raise ValueError(f"Muon: ns_steps={ns_steps} must be in [0, 100) and "
                             f"ns_coefficients three numbers, got {ns_coefficients!r}")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=tuple(ns_coefficients),
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon: only 2-d parameters are supported, got one of "
                                     f"shape {tuple(p.shape)}")

    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"momentum_buffer": _zeros(p)}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        mu, lr = group["momentum"], group["lr"]
        buf = state["momentum_buffer"]
        buf = buf + (g - buf) * (1.0 - mu)
        direction = g + (buf - g) * mu if group["nesterov"] else buf
        direction = _orthogonalized(direction, group["ns_coefficients"], group["ns_steps"],
                                    group["eps"])
        rows, cols = p.shape
        if group["adjust_lr_fn"] == "match_rms_adamw":
            ratio = 0.2 * math.sqrt(max(rows, cols))
        else:
            ratio = math.sqrt(max(1.0, rows / cols))
        p = p * (1.0 - lr * group["weight_decay"])
        return p - direction * (lr * ratio), {"momentum_buffer": buf}
