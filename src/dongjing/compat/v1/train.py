"""tf.train: TF1's optimizers (their update rules, on dongjing's optimizer machinery) and the
global step."""

from __future__ import annotations

import numpy as np

from ... import ops as _ops
from ...graph.gradients import gradients as _dj_gradients
from ...ops.state import assign as _dj_assign
from ...ops.state import group as _dj_group
from ...optim import SGD as _SGD
from ...optim import Adam as _Adam
from ...tensor import Tensor
from .graphs import get_default_graph, state_of, tf_function
from .session import Operation
from .unsupported import module_getattr, not_provided
from .variables import Variable, trainable_variables

__getattr__ = module_getattr("tf.train")


class _TFOptimizer:
    """What TF1 optimizers share: `minimize`, `compute_gradients`, `apply_gradients`, on a
    dongjing optimizer (`self._rule`) that owns the update rule and the slot Variables."""

    def __init__(self, rule, learning_rate):
        if isinstance(learning_rate, Tensor):
            not_provided("a tensor learning_rate (decay schedules); give a Python number")
        self._rule = rule

    def compute_gradients(self, loss, var_list=None, gate_gradients=1, aggregation_method=None,
                          colocate_gradients_with_ops=False, grad_loss=None):
        """[(gradient, variable)] for the trainable Variables (gradient None where the loss does
        not depend on the variable)."""
        return _compute_gradients(loss, var_list, grad_loss)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None) -> Operation:
        """One op applying the update rule with the given gradients (and incrementing
        `global_step`)."""
        return _apply_gradients(self, grads_and_vars, global_step, name)

    def minimize(self, loss, global_step=None, var_list=None, gate_gradients=1,
                 aggregation_method=None, colocate_gradients_with_ops=False, name=None,
                 grad_loss=None) -> Operation:
        """The train op: compute_gradients then apply_gradients."""
        return _minimize(self, loss, global_step, var_list, name, grad_loss)


@tf_function
def _compute_gradients(loss, var_list, grad_loss):
    if var_list is None:
        var_list = [v for v in trainable_variables()]
        graph_vars = loss._node.graph.trainable_variables()
        var_list += [v for v in graph_vars if not any(v is w for w in var_list)]
    var_list = list(var_list)
    if not var_list:
        from ...errors import GraphError

        raise GraphError("minimize: no trainable variables to optimize")
    grad_ys = None if grad_loss is None else [grad_loss]
    if grad_ys is None and loss.shape != () and any(d != 1 for d in loss.shape):
        grad_ys = [_ops.ones_like(loss)]  # TF differentiates the sum of a non-scalar loss
    grads = _dj_gradients(loss, var_list, grad_ys)
    return list(zip(grads, var_list))


@tf_function
def _apply_gradients(opt, grads_and_vars, global_step, name):
    rule = opt._rule
    effects = []
    pairs = [(g, v) for g, v in grads_and_vars if g is not None]
    if not pairs:
        from ...errors import GraphError

        raise GraphError("apply_gradients: no gradients for any variable (does the loss depend "
                         "on a trainable tf.Variable?)")
    known = {id(p) for group in rule.param_groups for p in group["params"]}
    new = [v for _, v in pairs if id(v) not in known]
    if new:
        rule.add_param_group({"params": new})
    for g, v in pairs:
        effects += rule._apply(v, g, rule._group_of(v))
    if global_step is not None:
        effects.append(_dj_assign(global_step, global_step + 1))
    return Operation(_dj_group(*effects), name)


@tf_function
def _minimize(opt, loss, global_step, var_list, name, grad_loss):
    return _apply_gradients(opt, _compute_gradients(loss, var_list, grad_loss), global_step,
                            name)


class GradientDescentOptimizer(_TFOptimizer):
    """var <- var - learning_rate * gradient."""

    def __init__(self, learning_rate, use_locking: bool = False, name: str = "GradientDescent"):
        super().__init__(_SGD(None, lr=float(learning_rate)), learning_rate)


class MomentumOptimizer(_TFOptimizer):
    """accum <- momentum * accum + gradient; var <- var - learning_rate * accum
    (Nesterov: var <- var - learning_rate * (gradient + momentum * accum))."""

    def __init__(self, learning_rate, momentum, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False):
        super().__init__(_SGD(None, lr=float(learning_rate), momentum=float(momentum),
                              nesterov=bool(use_nesterov)), learning_rate)


class _TFAdamRule(_Adam):
    """TF1's Adam: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
    var <- var - lr_t * m / (sqrt(v) + epsilon) (epsilon outside the bias correction)."""

    def update(self, p, g, state, group):
        """One TF1 Adam step for parameter `p` with gradient `g` (dongjing ops)."""
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        step = state["step"] + 1.0
        m = state["exp_avg"] * b1 + g * (1.0 - b1)
        v = state["exp_avg_sq"] * b2 + g * g * (1.0 - b2)
        t = _ops.cast(step, p.dtype)
        lr_t = lr * _ops.sqrt(1.0 - _ops.pow(b2, t)) / (1.0 - _ops.pow(b1, t))
        return p - lr_t * m / (_ops.sqrt(v) + eps), {"step": step, "exp_avg": m, "exp_avg_sq": v}


class AdamOptimizer(_TFOptimizer):
    """Adam as TF1 computes it (see _TFAdamRule)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-08,
                 use_locking: bool = False, name: str = "Adam"):
        super().__init__(_TFAdamRule(None, lr=float(learning_rate), betas=(beta1, beta2),
                                     eps=float(epsilon)), learning_rate)


def get_or_create_global_step(graph=None) -> Variable:
    """The graph's global step: a non-trainable int64 Variable starting at 0."""
    state = state_of(graph or get_default_graph())
    if state.global_step is None:
        with (graph or get_default_graph()).as_default():
            state.global_step = Variable(np.int64(0), trainable=False, name="global_step")
    return state.global_step


def get_global_step(graph=None):
    """The graph's global step, or None if none was created."""
    return state_of(graph or get_default_graph()).global_step


create_global_step = get_or_create_global_step
