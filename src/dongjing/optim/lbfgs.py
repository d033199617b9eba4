"""L-BFGS (PyTorch's `torch.optim.LBFGS`): a quasi-Newton method over all parameters as one
flat vector, driven by a closure that re-evaluates the loss; optional strong-Wolfe line
search. The same iteration as PyTorch's (two-loop recursion, first step scaled by 1/|g|_1,
cubic interpolation in the line search), so runs match PyTorch's step for step. Eager only, on
parameters held on the host (CPU)."""

from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import enable_grad, no_grad
from ..tensor import Tensor
from .optimizer import Optimizer


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None) -> float:
    """The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to
    `bounds` (default: between x1 and x2); their midpoint when the cubic has none."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = float(np.sqrt(d2_square))
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step t along d meeting the strong Wolfe conditions: bracket, then zoom.
    `evaluate(t)` -> (loss, flat gradient) at the start point plus t * d."""
    d_norm = float(np.abs(d).max())
    f_new, g_new = evaluate(t)
    evals, gtd_new = 1, float(g_new @ d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g.copy(), gtd
    done, ls_iter = False, 0
    while ls_iter < max_ls:
        sufficient = not (f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev))
        if sufficient and abs(gtd_new) <= -c2 * gtd:  # both Wolfe conditions: accept t
            bracket, bracket_f, bracket_g, bracket_gtd = [t], [f_new], [g_new], [gtd_new]
            done = True
            break
        if not sufficient or gtd_new >= 0:  # a minimum lies between t_prev and t
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        low, high = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                          (low, high))
        f_prev, g_prev, gtd_prev = f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(t)
        evals, gtd_new, ls_iter = evals + 1, float(g_new @ d), ls_iter + 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g, bracket_gtd = [0.0, t], [f, f_new], [g, g_new], \
            [gtd, gtd_new]
    insufficient = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1],
                               bracket_f[1], bracket_gtd[1])
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:  # too close to an end: move away unless progressing
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        evals, gtd_new, ls_iter = evals + 1, float(g_new @ d), ls_iter + 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], evals


class LBFGS(Optimizer):
    """L-BFGS over every parameter (one parameter group). `step(closure)` runs up to
    `max_iter` iterations; the closure clears the gradients, computes the loss, calls
    `backward()` and returns the loss."""

    def __init__(self, params, lr: float = 1.0, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None):
        if lr <= 0:
            raise ValueError(f"LBFGS: invalid learning rate {lr}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        max_eval = max_iter * 5 // 4 if max_eval is None else max_eval
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._lbfgs: dict = {"func_evals": 0, "n_iter": 0}

    # --- the parameters as one flat vector ---------------------------------------------------
    def _flat_grad(self) -> np.ndarray:
        parts = [np.zeros(int(np.prod(p.shape)), p.dtype) if p.grad is None
                 else np.asarray(p.grad.numpy()).reshape(-1) for p in self._params]
        return np.concatenate(parts)

    def _add(self, step: float, direction: np.ndarray) -> None:
        offset = 0
        with no_grad():
            for p in self._params:
                n = int(np.prod(p.shape))
                p._data[...] = p._data + step * direction[offset:offset + n].reshape(p.shape)
                p._version[0] += 1
                offset += n

    def _values(self) -> list:
        return [p._data.copy() for p in self._params]

    def _restore(self, values: list) -> None:
        for p, v in zip(self._params, values):
            p._data[...] = v
            p._version[0] += 1

    def _evaluate(self, closure) -> float:
        with enable_grad():
            return float(closure())

    def step(self, closure):
        """One call: up to `max_iter` L-BFGS iterations; returns the first loss evaluated."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        state = self._lbfgs
        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss.item() if isinstance(orig_loss, Tensor) else orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.abs(flat_grad).max() <= tol_grad:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        old_dirs, old_steps = state.get("old_dirs", []), state.get("old_stps", [])
        ro, h_diag = state.get("ro", []), state.get("H_diag", 1.0)
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, old_dirs, old_steps, ro, h_diag = -flat_grad, [], [], [], 1.0
            else:
                y, s = flat_grad - prev_flat_grad, d * t
                ys = float(y @ s)
                if ys > 1e-10:  # keep the curvature pair only when it is positive
                    if len(old_dirs) == group["history_size"]:
                        old_dirs.pop(0)
                        old_steps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_steps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y @ y)
                alphas = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    alphas[i] = float(old_steps[i] @ q) * ro[i]
                    q = q - alphas[i] * old_dirs[i]
                d = q * h_diag
                for i in range(len(old_dirs)):
                    beta = float(old_dirs[i] @ d) * ro[i]
                    d = d + (alphas[i] - beta) * old_steps[i]
            prev_flat_grad, prev_loss = flat_grad.copy(), loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(np.abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = float(flat_grad @ d)
            if gtd > -tol_change:  # not a descent direction
                break
            ls_evals = 0
            if group["line_search_fn"] is not None:
                start = self._values()

                def along(step, start=start, d=d):
                    self._add(step, d)
                    value = self._evaluate(closure)
                    grad = self._flat_grad()
                    self._restore(start)
                    return value, grad

                loss, flat_grad, t, ls_evals = _strong_wolfe(along, t, d, loss, flat_grad, gtd)
                self._add(t, d)
                converged = np.abs(flat_grad).max() <= tol_grad
            else:
                self._add(t, d)
                converged = False
                if n_iter != max_iter:
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    converged = np.abs(flat_grad).max() <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals
            if n_iter == max_iter or evals >= max_eval or converged:
                break
            if np.abs(d * t).max() <= tol_change or abs(loss - prev_loss) < tol_change:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_steps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
