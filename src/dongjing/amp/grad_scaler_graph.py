"""`GradScaler`'s graph half: unscale, inf check, the skipped step and the scale's adaptation as
graph ops, for a `dj.jit` traced train step (symbolic gradients) and for a static graph's train
op (`GradScaler.minimize`). The step is never skipped on the host: each write the optimizer
makes becomes `where(found_inf, old value, new value)`, decided when the program runs."""

from __future__ import annotations

from .. import dtypes, ops
from ..autograd.grad_mode import no_grad
from ..errors import GraphError
from ..graph.gradients import gradients
from ..ops.state import assign
from ..ops.state import group as group_effects
from ..tensor import Tensor, grad_scope


def symbolic_grads(optimizer) -> bool:
    """Whether `optimizer`'s gradients are graph values (a traced step)."""
    return any(p.grad is not None and p.grad._node is not None
               for group in optimizer.param_groups for p in group["params"])


def _not_finite(grads) -> Tensor:
    """One boolean: whether any of `grads` holds an infinity or a NaN."""
    flags = [ops.logical_not(ops.all(ops.isfinite(g))) for g in grads]
    found = flags[0]
    for flag in flags[1:]:
        found = ops.logical_or(found, flag)
    return found


def unscale(optimizer, scale: Tensor) -> Tensor:
    """Divide the symbolic gradients by `scale` (in float32, as PyTorch's unscale kernel), and
    return whether any is not finite."""
    inverse = ops.div(1.0, scale)
    grads = []
    with no_grad():
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                g = ops.cast(ops.mul(ops.cast(g, dtypes.float32), inverse), g.dtype)
                p.grad = g
                grads.append(g)
    if not grads:
        return ops.cast(0, dtypes.bool_)
    return _not_finite(grads)


def guarded_step(optimizer, found_inf: Tensor, pairs=None):
    """The optimizer's update of every parameter with a gradient (or of `pairs` of
    (parameter, gradient)), each write kept only where `found_inf` is false; a group op."""
    if pairs is None:
        pairs = [(p, p.grad) for group in optimizer.param_groups for p in group["params"]
                 if p.grad is not None]
    effects = []
    with no_grad():
        for p, g in pairs:
            group = optimizer._group_of(p).for_graph(static=grad_scope.current is None)
            state = optimizer._state_of(p)
            new_p, new_state = optimizer.update(p, g, state, group)
            writes = [(p, new_p)] + [(state[k], v) for k, v in new_state.items()]
            for target, value in writes:
                effects.append(assign(target, ops.where(found_inf, target, value)))
    return group_effects(*effects)


def update(scaler, found: list):
    """The scale's adaptation as assignments: back off after a non-finite step, grow after
    `growth_interval` clean ones."""
    flags = [f if isinstance(f, Tensor) else ops.cast(bool(f), dtypes.bool_) for f in found]
    found_inf = flags[0]
    for flag in flags[1:]:
        found_inf = ops.logical_or(found_inf, flag)
    return _adapt(scaler, found_inf)


def _adapt(scaler, found_inf: Tensor):
    scale, tracker = scaler._scale, scaler._growth_tracker
    counted = ops.add(tracker, 1)
    grow = ops.eq(counted, scaler._growth_interval)
    new_scale = ops.where(found_inf, ops.mul(scale, scaler._backoff_factor),
                          ops.where(grow, ops.mul(scale, scaler._growth_factor), scale))
    new_tracker = ops.where(ops.logical_or(found_inf, grow), ops.mul(tracker, 0), counted)
    return group_effects(assign(scale, new_scale), assign(tracker, new_tracker))


def minimize(scaler, optimizer, loss: Tensor, var_list=None):
    """`GradScaler.minimize`: the whole scaled, guarded train op of a static graph."""
    if not isinstance(loss, Tensor) or loss._node is None:
        raise GraphError("GradScaler.minimize(optimizer, loss) needs a symbolic loss built in a "
                         "dj.Graph; eagerly use scaler.scale(loss).backward(), "
                         "scaler.step(optimizer) and scaler.update()")
    graph = loss._node.graph
    if var_list is None:
        var_list = [p for group in optimizer.param_groups for p in group["params"]]
        if not var_list:
            var_list = graph.trainable_variables()
            optimizer.add_param_group({"params": var_list})
    var_list = list(var_list)
    with graph.as_default():
        grads = gradients(ops.mul(loss, scaler._scale), var_list)
        inverse = ops.div(1.0, scaler._scale)
        pairs = [(p, ops.cast(ops.mul(ops.cast(g, dtypes.float32), inverse), g.dtype))
                 for p, g in zip(var_list, grads) if g is not None]
        if not pairs:
            raise GraphError("GradScaler.minimize: the loss depends on none of the variables")
        found_inf = _not_finite([g for _, g in pairs])
        return group_effects(guarded_step(optimizer, found_inf, pairs), _adapt(scaler, found_inf))
