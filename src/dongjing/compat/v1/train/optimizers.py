"""tf.train's optimizers with TF 1.15's update rules, written with dongjing ops.

Slots (Adam's m and v, Momentum's accumulator, ...) are tf.Variables named as TF names them
(`w/Adam`, `w/Adam_1`), in GLOBAL_VARIABLES: the initializer resets them and each Session
owns their values. All reads of one step see the values from before the step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .... import ops as _ops
from ....errors import GraphError
from ....graph.gradients import gradients as _dj_gradients
from ....ops.state import assign as _dj_assign
from ....ops.state import group as _dj_group
from ....tensor import Tensor
from ..deferred import has_deferred
from ..graphs import building, tf_function
from ..scopes import name_scope
from ..session import Operation
from ..variables import Variable, trainable_variables

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence


class Optimizer:
    """TF1's Optimizer: `minimize`, `compute_gradients`, `apply_gradients`, `get_slot`.
    A subclass gives its slots (`_slot_specs`) and one step for a variable (`_update`)."""

    _slot_specs: tuple = ()  # (slot name, initial fill value) per slot, in TF's order

    def __init__(self, use_locking: bool = False, name: str = "Optimizer"):
        self._name = name
        self._slots: dict = {}  # (slot name, id(var)) -> slot Variable
        self._non_slots: dict = {}  # (name, id(graph)) -> Variable

    def get_name(self) -> str:
        """The optimizer's name (its slots are named `var/name`)."""
        return self._name

    def compute_gradients(self, loss: Tensor | Callable[[], Tensor],
                          var_list: Sequence[Tensor] | None = None, gate_gradients: int = 1,
                          aggregation_method: object = None,
                          colocate_gradients_with_ops: bool = False,
                          grad_loss: Tensor | None = None) -> list[tuple[Tensor | None, Tensor]]:
        """[(gradient, variable)] for `var_list` (default: the trainable variables); the
        gradient is None where the loss does not depend on the variable."""
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        return _compute_gradients(loss, var_list, grad_loss)

    def apply_gradients(self, grads_and_vars: Iterable[tuple[Tensor | None, Tensor]],
                        global_step: Tensor | None = None, name: str | None = None) -> Operation:
        """One op applying one step with the given gradients (and adding 1 to
        `global_step`)."""
        grads_and_vars = list(grads_and_vars)
        if has_deferred([g for g, _ in grads_and_vars]):
            self._make_state([v for g, v in grads_and_vars if g is not None])
        return _apply_gradients(self, grads_and_vars, global_step, name)

    def minimize(self, loss: Tensor | Callable[[], Tensor], global_step: Tensor | None = None,
                 var_list: Sequence[Tensor] | None = None, gate_gradients: int = 1,
                 aggregation_method: object = None, colocate_gradients_with_ops: bool = False,
                 name: str | None = None, grad_loss: Tensor | None = None) -> Operation:
        """The train op: compute_gradients then apply_gradients."""
        if callable(loss) and not isinstance(loss, Tensor):
            loss = loss()
        if has_deferred((loss,)):  # built at run time: make the state now, as TF does
            self._make_state(trainable_variables() if var_list is None else var_list)
        return _minimize(self, loss, global_step, var_list, name, grad_loss)

    def get_slot_names(self) -> list[str]:
        """The names of this optimizer's slots."""
        return [name for name, _ in self._slot_specs]

    def get_slot(self, var: Tensor, name: str) -> Variable | None:
        """The slot `name` of `var` (None if it was not made)."""
        return self._slots.get((name, id(var)))

    def variables(self) -> list[Variable]:
        """The optimizer's own variables (slots and non-slot state)."""
        return list(self._slots.values()) + list(self._non_slots.values())

    def _make_state(self, var_list) -> None:
        """Make the slots of `var_list` and the non-slot state now (before the initializer)."""
        var_list = [v for v in var_list if isinstance(v, Variable)]
        if var_list:
            with var_list[0]._graph.as_default():
                self._prepare(var_list[0]._graph)
                for var in var_list:
                    self._make_slots(var)

    # --- for subclasses ------------------------------------------------------------------------
    def _make_slots(self, var) -> None:
        for i, (slot, fill) in enumerate(self._slot_specs):
            if (slot, id(var)) in self._slots:
                continue
            suffix = self._name if i == 0 else f"{self._name}_{i}"
            value = np.full(var.shape, fill, var.dtype)
            with name_scope(None):
                self._slots[(slot, id(var))] = Variable(
                    value, trainable=False, name=f"{var.var_name}/{suffix}", _exact_name=True)

    def _non_slot(self, name: str, value, graph) -> Variable:
        key = (name, id(graph))
        if key not in self._non_slots:
            with graph.as_default(), name_scope(None):
                self._non_slots[key] = Variable(np.float32(value), trainable=False, name=name)
        return self._non_slots[key]

    def _prepare(self, graph) -> None:
        """Per-step values shared by all variables (graph tensors)."""

    def _update(self, grad, var) -> list:
        """[(Variable, new value)] for one step of `var`."""
        raise NotImplementedError

    def _finish(self, graph) -> list:
        """[(Variable, new value)] after all variables' steps (Adam's beta powers)."""
        return []

    def _slot(self, var, name: str) -> Variable:
        return self._slots[(name, id(var))]

    def _hyper(self, value, var):
        """A hyperparameter (number or tensor) in `var`'s dtype."""
        if isinstance(value, Tensor) and value._node is not None:
            return value if value.dtype == var.dtype else _ops.cast(value, var.dtype)
        if callable(value):
            return self._hyper(value(), var)
        return float(value)


def _read(var) -> Tensor:
    return var.value()


@tf_function
def _compute_gradients(loss, var_list, grad_loss):
    if var_list is None:
        var_list = list(trainable_variables())
        graph_vars = loss._node.graph.trainable_variables()
        var_list += [v for v in graph_vars if not any(v is w for w in var_list)]
    var_list = list(var_list)
    if not var_list:
        raise ValueError("No variables to optimize.")
    grad_ys = None if grad_loss is None else [grad_loss]
    if grad_ys is None and loss.shape != () and any(d != 1 for d in loss.shape):
        grad_ys = [_ops.ones_like(loss)]  # TF differentiates the sum of a non-scalar loss
    grads = _dj_gradients(loss, var_list, grad_ys)
    return list(zip(grads, var_list))


@tf_function
def _minimize(opt, loss, global_step, var_list, name, grad_loss):
    grads = _compute_gradients(loss, var_list, grad_loss)
    if not any(g is not None for g, _ in grads):
        raise ValueError(f"No gradients provided for any variable, check your graph for ops "
                         f"that do not support gradients, between variables "
                         f"{[v.name for _, v in grads]} and loss {loss}.")
    return _apply_gradients(opt, grads, global_step, name)


@tf_function
def _apply_gradients(opt, grads_and_vars, global_step, name):
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    if not pairs:
        raise ValueError(f"No gradients provided for any variable: "
                         f"{[v.name for _, v in grads_and_vars]}")
    with building((pairs[0][0],)) as graph:
        updates = []
        opt._prepare(graph)  # non-slot state first, as TF creates it
        for _, v in pairs:
            if not isinstance(v, Variable):
                raise GraphError(f"apply_gradients: {v!r} is not a tf.Variable")
            opt._make_slots(v)
        for g, v in pairs:
            g = Tensor._symbolic(g._node) if isinstance(g, Tensor) else g
            updates += opt._update(g, v)
        updates += opt._finish(graph)
        effects = [_dj_assign(var, value) for var, value in updates]
        if global_step is not None:
            effects.append(_dj_assign(global_step, _read(global_step) + 1))
        return Operation(_dj_group(*effects), name or opt._name)


class GradientDescentOptimizer(Optimizer):
    """var <- var - learning_rate * grad."""

    def __init__(self, learning_rate, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._lr = learning_rate

    def _update(self, grad, var):
        return [(var, _read(var) - self._hyper(self._lr, var) * grad)]


class MomentumOptimizer(Optimizer):
    """accum <- momentum * accum + grad; var <- var - lr * accum
    (Nesterov: var <- var - lr * grad - lr * momentum * accum, with the new accum)."""

    _slot_specs = (("momentum", 0.0),)

    def __init__(self, learning_rate, momentum, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False):
        super().__init__(use_locking, name)
        self._lr, self._momentum, self._nesterov = learning_rate, momentum, bool(use_nesterov)

    def _update(self, grad, var):
        lr, mu = self._hyper(self._lr, var), self._hyper(self._momentum, var)
        accum = self._slot(var, "momentum")
        new_accum = _read(accum) * mu + grad
        if self._nesterov:
            new_var = _read(var) - (grad * lr + new_accum * mu * lr)
        else:
            new_var = _read(var) - lr * new_accum
        return [(accum, new_accum), (var, new_var)]


class AdamOptimizer(Optimizer):
    """TF's Adam: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m)(1 - beta1);
    v += (g^2 - v)(1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon) (epsilon outside the bias
    correction: the "epsilon hat" of the paper). beta1^t, beta2^t are the non-slot Variables
    `beta1_power`, `beta2_power`."""

    _slot_specs = (("m", 0.0), ("v", 0.0))

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking: bool = False, name: str = "Adam"):
        super().__init__(use_locking, name)
        self._lr, self._beta1, self._beta2, self._epsilon = learning_rate, beta1, beta2, epsilon

    def _prepare(self, graph):
        self._powers = (self._non_slot("beta1_power", self._beta1, graph),
                        self._non_slot("beta2_power", self._beta2, graph))

    def _update(self, grad, var):
        b1, b2 = self._hyper(self._beta1, var), self._hyper(self._beta2, var)
        eps = self._hyper(self._epsilon, var)
        p1, p2 = (_ops.cast(_read(p), var.dtype) if p.dtype != var.dtype else _read(p)
                  for p in self._powers)
        lr = self._hyper(self._lr, var) * _ops.sqrt(1.0 - p2) / (1.0 - p1)
        m, v = self._slot(var, "m"), self._slot(var, "v")
        new_m = _read(m) + (grad - _read(m)) * (1.0 - b1)
        new_v = _read(v) + (grad * grad - _read(v)) * (1.0 - b2)
        new_var = _read(var) - (new_m * lr) / (_ops.sqrt(new_v) + eps)
        return [(m, new_m), (v, new_v), (var, new_var)]

    def _finish(self, graph):
        p1, p2 = self._powers
        return [(p1, _read(p1) * float(self._beta1)), (p2, _read(p2) * float(self._beta2))]


class RMSPropOptimizer(Optimizer):
    """TF's RMSProp: ms += (g^2 - ms)(1 - decay); mom = momentum * mom + lr * g / sqrt(ms +
    epsilon); var -= mom. Centered: mg += (g - mg)(1 - decay), and the root is of
    ms - mg^2 + epsilon. The `rms` slot starts at 1 (TF 1.x), `momentum` and `mg` at 0."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking: bool = False, centered: bool = False, name: str = "RMSProp"):
        super().__init__(use_locking, name)
        self._lr, self._decay, self._momentum = learning_rate, decay, momentum
        self._epsilon, self._centered = epsilon, bool(centered)
        self._slot_specs = (("rms", 1.0), ("momentum", 0.0)) + (
            (("mg", 0.0),) if centered else ())

    def _update(self, grad, var):
        lr, rho = self._hyper(self._lr, var), self._hyper(self._decay, var)
        mu, eps = self._hyper(self._momentum, var), self._hyper(self._epsilon, var)
        ms, mom = self._slot(var, "rms"), self._slot(var, "momentum")
        new_ms = _read(ms) + (grad * grad - _read(ms)) * (1.0 - rho)
        out = [(ms, new_ms)]
        if self._centered:
            mg = self._slot(var, "mg")
            new_mg = _read(mg) + (grad - _read(mg)) * (1.0 - rho)
            denom = (new_ms - new_mg * new_mg) + eps
            out.append((mg, new_mg))
        else:
            denom = new_ms + eps
        new_mom = _read(mom) * mu + (grad * lr) / _ops.sqrt(denom)
        return out + [(mom, new_mom), (var, _read(var) - new_mom)]


class AdagradOptimizer(Optimizer):
    """accum += g^2; var -= lr * g / sqrt(accum) (accum starts at
    initial_accumulator_value)."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking: bool = False,
                 name: str = "Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._slot_specs = (("accumulator", float(initial_accumulator_value)),)

    def _update(self, grad, var):
        accum = self._slot(var, "accumulator")
        new_accum = _read(accum) + grad * grad
        new_var = _read(var) - grad * self._hyper(self._lr, var) * _ops.rsqrt(new_accum)
        return [(accum, new_accum), (var, new_var)]


class AdadeltaOptimizer(Optimizer):
    """accum = rho accum + (1 - rho) g^2; update = sqrt(accum_update + eps) / sqrt(accum + eps)
    * g; accum_update = rho accum_update + (1 - rho) update^2; var -= lr * update."""

    _slot_specs = (("accum", 0.0), ("accum_update", 0.0))

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-08, use_locking: bool = False,
                 name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _update(self, grad, var):
        lr, rho = self._hyper(self._lr, var), self._hyper(self._rho, var)
        eps = self._hyper(self._epsilon, var)
        accum, accum_update = self._slot(var, "accum"), self._slot(var, "accum_update")
        new_accum = _read(accum) * rho + grad * grad * (1.0 - rho)
        update = _ops.sqrt(_read(accum_update) + eps) * _ops.rsqrt(new_accum + eps) * grad
        new_update = _read(accum_update) * rho + update * update * (1.0 - rho)
        return [(accum, new_accum), (accum_update, new_update),
                (var, _read(var) - update * lr)]


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal as TF's kernel computes it: new_accum = accum + g^2;
    linear += g' - (new_accum^-p - accum^-p) / lr * var (g' = g + 2 l2_shrinkage var);
    var = (sign(linear) l1 - linear) / (new_accum^-p / lr + 2 l2) where |linear| > l1, else 0
    (p: learning_rate_power)."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "Ftrl", accum_name=None,
                 linear_name=None, l2_shrinkage_regularization_strength=0.0):
        if learning_rate_power > 0.0 or initial_accumulator_value < 0.0:
            raise ValueError("FtrlOptimizer: learning_rate_power must be <= 0 and "
                             "initial_accumulator_value >= 0")
        super().__init__(use_locking, name)
        self._lr, self._power = learning_rate, float(learning_rate_power)
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._shrinkage = l2_shrinkage_regularization_strength
        self._slot_specs = (("accum", float(initial_accumulator_value)), ("linear", 0.0))

    def _update(self, grad, var):
        lr = self._hyper(self._lr, var)
        l1, l2 = self._hyper(self._l1, var), self._hyper(self._l2, var)
        accum, linear = self._slot(var, "accum"), self._slot(var, "linear")
        old_accum, old_var = _read(accum), _read(var)
        new_accum = old_accum + grad * grad
        shrunk = grad + 2.0 * self._shrinkage * old_var if self._shrinkage else grad
        if self._power == -0.5:
            new_root, old_root = _ops.sqrt(new_accum), _ops.sqrt(old_accum)
        else:
            new_root = _ops.pow(new_accum, -self._power)
            old_root = _ops.pow(old_accum, -self._power)
        new_linear = _read(linear) + shrunk - (new_root - old_root) / lr * old_var
        x = _ops.sign(new_linear) * l1 - new_linear
        y = new_root / lr + 2.0 * l2
        new_var = _ops.where(_ops.abs(new_linear) > l1, x / y, _ops.zeros_like(x))
        return [(accum, new_accum), (linear, new_linear), (var, new_var)]
