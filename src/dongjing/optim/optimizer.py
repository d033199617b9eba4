"""Optimizer: parameter groups, state as non-trainable Variables, and the two ways to apply an
update rule written once with dongjing ops: eager `step()` and static `minimize(loss)`."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..autograd.grad_mode import no_grad
from ..errors import GraphError, StateDictError
from ..graph.variable import Variable
from ..profiler import hooks as _profiler  # `_profiler.on`: a profiler is recording
from ..tensor import Tensor


class ParamGroup(dict):
    """A parameter group: a dict of `params` and hyperparameters. Graphs read its `lr` from a
    Variable that follows every `group["lr"] = ...` (schedulers), so a built train op or a
    traced step uses the current learning rate."""

    _lr = None

    def lr_variable(self) -> Variable:
        if self._lr is None:
            self._lr = Variable(np.float32(self["lr"]), name="lr", trainable=False)
        return self._lr

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        if key == "lr" and self._lr is not None:
            self._lr.data[...] = value
            self._lr._version[0] += 1


class Optimizer:
    """Base class. A subclass defines `defaults`, `init_state(p, group) -> {name: array}` and
    `update(p, g, state, group) -> (new_p, {name: new_value})` with dongjing ops."""

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: dict = {}  # parameter -> {name: Variable}
        if params is None:  # static graphs: minimize() adds the graph's trainable Variables
            return
        if isinstance(params, Tensor):
            raise TypeError("params must be an iterable of tensors or of dicts, got a Tensor")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters with its own hyperparameters (others from `defaults`)."""
        group = ParamGroup(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in group["params"]:
            if not isinstance(p, Tensor) or p.grad_fn is not None:
                raise TypeError("optimizer can only optimize leaf tensors (Parameters/Variables)")
            if id(p) in seen:
                raise ValueError("some parameters appear in more than one parameter group")
            seen.add(id(p))
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    # --- the rule (subclasses) ----------------------------------------------------------------
    def init_state(self, p: Tensor, group: dict) -> dict:
        return {}

    def update(self, p: Tensor, g: Tensor, state: dict, group: dict):
        raise NotImplementedError

    def _state_of(self, p: Tensor) -> dict:
        state = self.state.get(p)
        if state is None:
            state = {name: Variable(value, trainable=False)
                     for name, value in self.init_state(p, self._group_of(p)).items()}
            self.state[p] = state
        return state

    def _group_of(self, p: Tensor) -> dict:
        for group in self.param_groups:
            if any(q is p for q in group["params"]):
                return group
        raise KeyError("parameter not in this optimizer")

    # --- eager ---------------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of all optimized parameters (to None, or to zeros)."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:  # no read first: a dj.jit trace would record it as an input
                    p.grad = None
                elif p.grad is not None:
                    p.grad = Tensor._make(np.zeros_like(p.data))

    def step(self, closure=None):
        """Update every parameter that has a `.grad`, in place (state too).

        Inside a graph being traced, the updates become `dj.assign` ops; their group is returned.
        """
        if _profiler.on:  # profiler hook: one event per step
            return _profiler.optimizer_step(self, self._step, closure)
        return self._step(closure)

    def _step(self, closure=None):
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        effects = []
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        effects += self._apply(p, p.grad, group)
        if effects:
            import dongjing

            return dongjing.group(*effects)
        return loss

    def _apply(self, p: Tensor, g: Tensor, group: dict) -> list:
        state = self._state_of(p)
        if g._node is not None:  # building a graph: the learning rate is read when it runs
            group = {**group, "lr": group.lr_variable()}
        new_p, new_state = self.update(p, g, state, group)
        writes = [(p, new_p)] + [(state[k], v) for k, v in new_state.items()]
        if not any(v._node is not None for _, v in writes):
            for target, value in writes:  # eager: write into the existing arrays
                np.copyto(target.data, value.data, casting="unsafe")
                target._version[0] += 1
            return []
        import dongjing

        return [dongjing.assign(target, value) for target, value in writes]

    # --- static ---------------------------------------------------------------------------------
    def minimize(self, loss: Tensor, var_list: Iterable | None = None,
                 distributed: bool = False, bucket_cap_mb: float = 25.0):
        """A train op for the graph of symbolic `loss`: one `dj.group` of `dj.assign`s updating
        each parameter (default: this optimizer's) and its state; also runs the batch-norm
        updates the graph collected (`dj.nn.update_ops`). With `distributed=True` the gradients
        are averaged over all ranks (bucketed `all_reduce` ops) before the updates."""
        import dongjing

        from ..nn.updates import take_update_ops

        if not isinstance(loss, Tensor) or loss._node is None:
            raise GraphError("minimize(loss) needs a symbolic loss built in a dj.Graph; eagerly "
                             "call loss.backward() and optimizer.step()")
        graph = loss._node.graph
        if var_list is None:
            if not self.param_groups:
                found = graph.trainable_variables()
                if not found:
                    raise GraphError("minimize: the loss's graph reads no trainable Variable")
                self.add_param_group({"params": found})
            var_list = [p for group in self.param_groups for p in group["params"]]
        else:
            var_list = list(var_list)
            known = {id(p) for group in self.param_groups for p in group["params"]}
            extra = [p for p in var_list if id(p) not in known]
            if extra:
                self.add_param_group({"params": extra})
        with graph.as_default():
            grads = dongjing.gradients(loss, var_list)
            if distributed:  # data parallel: reduce in the order backward produces them
                from ..distributed import all_reduce_gradients

                grads = all_reduce_gradients(grads[::-1], bucket_cap_mb)[::-1]
            effects = []
            for p, g in zip(var_list, grads):
                if g is not None:
                    effects += self._apply(p, g, self._group_of(p))
            effects += take_update_ops(graph)
            return dongjing.group(*effects)

    # --- state dicts ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """PyTorch's layout: {"state": {index: {name: tensor}}, "param_groups": [{..., "params":
        [indices]}]}, parameters numbered in group order."""
        index, groups = {}, []
        for group in self.param_groups:
            entry = {k: v for k, v in group.items() if k != "params"}
            entry["params"] = []
            for p in group["params"]:
                index[id(p)] = len(index)
                entry["params"].append(index[id(p)])
            groups.append(entry)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    state[index[id(p)]] = {k: v.detach() for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and state saved by `state_dict` (same parameter layout)."""
        groups = state_dict.get("param_groups")
        if groups is None or "state" not in state_dict:
            raise StateDictError("optimizer state dict needs 'state' and 'param_groups' keys")
        if len(groups) != len(self.param_groups):
            raise StateDictError(f"optimizer state dict has {len(groups)} parameter groups, "
                                 f"this optimizer has {len(self.param_groups)}")
        params = {}
        for saved, group in zip(groups, self.param_groups):
            if len(saved["params"]) != len(group["params"]):
                raise StateDictError(
                    f"a parameter group of the state dict has {len(saved['params'])} parameters, "
                    f"the optimizer's has {len(group['params'])}"
                )
            params.update({int(i): p for i, p in zip(saved["params"], group["params"])})
        staged = {}
        for key, entries in state_dict["state"].items():
            p = params.get(int(key))
            if p is None:
                raise StateDictError(f"optimizer state for unknown parameter index {key!r}")
            fresh = self.init_state(p, self._group_of(p))
            staged[p] = {}
            for name, value in entries.items():
                array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
                want = np.shape(fresh.get(name, array))
                if array.shape != want:
                    raise StateDictError(f"optimizer state {name!r} of parameter {key}: shape "
                                         f"{array.shape}, expected {want}")
                staged[p][name] = array
        for saved, group in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    group[k] = v
        for p, entries in staged.items():
            state = self._state_of(p)
            for name, array in entries.items():
                if name in state:
                    np.copyto(state[name].data, array, casting="unsafe")
                    state[name]._version[0] += 1
                else:
                    state[name] = Variable(array, trainable=False)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k, v in sorted(group.items()):
                if k != "params":
                    lines.append(f"    {k}: {v}")
        return "\n".join(lines + [")"])
