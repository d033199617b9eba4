"""Optimizer: parameter groups, state as non-trainable Variables, and the two ways to apply an
update rule written once with dongjing ops: eager `step()` and static `minimize(loss)`."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

import dongjing

from ..autograd.anomaly import state as anomaly_state
from ..autograd.grad_mode import enable_grad, no_grad
from ..backends import backend_of, is_array
from ..core import profiler_hooks as _profiler  # `_profiler.on`: a profiler is recording
from ..devices.device import move_array
from ..distributed import all_reduce_gradients
from ..errors import GraphError, StateDictError
from ..graph.builder import state as graph_state
from ..graph.variable import Variable
from ..nn.updates import take_update_ops
from ..tensor import Tensor, grad_scope
from ..tensor.transfer import copy_into, move_in_place, same_device, zeros_like_array

if TYPE_CHECKING:
    from ..types import ParamsLike, StateDict


class ParamGroup(dict):
    """A parameter group: a dict of `params` and hyperparameters. Graphs read its `lr`, and any
    `momentum` or `betas` a scheduler changes (OneCycleLR), from Variables that follow every
    `group[key] = ...`, so a built train op or a traced step uses the current values. Other
    hyperparameters are constants in a built graph: changing one afterwards raises."""

    _variables = None  # (key, position) -> Variable
    _scheduled = frozenset()  # keys set by a scheduler (`schedule`)
    _baked = frozenset()  # keys a built graph holds as constants

    def variable(self, key: str, position: int | None = None) -> Variable:
        """The Variable a graph reads for `self[key]` (`self[key][position]` for a tuple)."""
        if self._variables is None:
            self._variables = {}
        var = self._variables.get((key, position))
        if var is None:
            value = self[key] if position is None else self[key][position]
            var = Variable(np.float32(value), name=key, trainable=False)
            self._variables[(key, position)] = var
        params = self.get("params") or ()
        if params and not same_device(var._data, params[0]._data):  # the parameters' device
            var._data = move_array(var._data, params[0].device)
        return var

    def lr_variable(self) -> Variable:
        return self.variable("lr")

    def schedule(self, key: str, value) -> None:
        """Set `momentum` or `betas` as a scheduler does: from now on graphs read it from a
        Variable, so changing it needs no retrace."""
        self[key] = value
        self._scheduled = self._scheduled | {key}

    def runtime_keys(self) -> frozenset:
        """The hyperparameters a graph reads from Variables (a dj.jit trace need not retrace
        when they change)."""
        scheduled = self._scheduled & {"momentum", "betas"}
        return frozenset({"lr"} | scheduled | {name for name, _ in (self._variables or {})})

    def for_graph(self, static: bool = True) -> dict:
        """This group with the scheduled hyperparameters replaced by their Variables; for a
        static train op (`static`), later changes of the other hyperparameters raise (dj.jit
        retraces on them instead)."""
        out = {**self, "lr": self.variable("lr")}
        if "momentum" in self._scheduled and self.get("momentum"):
            out["momentum"] = self.variable("momentum")
        if "betas" in self._scheduled:
            out["betas"] = (self.variable("betas", 0), self.variable("betas", 1))
        if not static:
            return out
        self._baked = frozenset(k for k, v in out.items() if not isinstance(v, (Variable, tuple))
                                and k != "params") | (
            {"betas"} if "betas" in out and "betas" not in self._scheduled else set())
        return out

    def __setitem__(self, key, value) -> None:
        if key in self._baked and key != "params" and value != self.get(key):
            raise RuntimeError(
                f"param_groups[...][{key!r}] = {value!r}: a built graph or dj.jit trace holds "
                f"{key}={self.get(key)!r} as a constant; set it before building the graph (only "
                "lr, and momentum/betas changed by a scheduler before tracing, follow changes)"
            )
        super().__setitem__(key, value)
        for (name, position), var in (self._variables or {}).items():
            if name == key:
                var._data[...] = value if position is None else value[position]
                var._version[0] += 1


def _state_variable(value) -> Variable:
    """A non-trainable Variable holding `value`; an array of a device backend stays there."""
    if isinstance(value, np.ndarray) or not is_array(value):
        return Variable(value, trainable=False)
    var = Variable(np.zeros((), value.dtype), trainable=False)
    var._data = value
    return var


def _follow(p: Tensor, state: dict) -> None:
    """Move `p`'s state to `p`'s device when the parameter moved (after `model.to(...)`)."""
    for value in state.values():
        if isinstance(value, Tensor) and value._node is None and not same_device(
                value._data, p._data):
            move_in_place(value, p.device)


def _eager_only(step, name: str):
    """Wrap a custom `step()`: its in-place updates run eagerly; a dj.jit trace refuses it."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if grad_scope.current is not None:
            raise GraphError(
                f"{name}.step() updates tensors in place, which a dj.jit trace cannot record; "
                "call it outside the jitted function, or write the optimizer with "
                "init_state()/update() (see dj.optim.SGD) so its step traces"
            )
        return step(self, *args, **kwargs)

    return wrapper



def check_implementation(name: str, differentiable: bool) -> None:
    """PyTorch's implementation switches: `foreach`, `fused` and `capturable` choose among
    implementations of one update (dongjing has its own, with the same results), so any value is
    accepted; `differentiable=True` (gradients through the step) is refused."""
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True (autograd through the "
                                  "optimizer step) is not supported")

class Optimizer:
    """Base class. A subclass defines `defaults`, `init_state(p, group) -> {name: array}` and
    `update(p, g, state, group) -> (new_p, {name: new_value})` with dongjing ops."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:  # a PyTorch-style optimizer with its own in-place step()
            cls.step = _eager_only(cls.step, cls.__name__)

    def __init__(self, params: ParamsLike | None, defaults: Mapping[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        # parameter -> {name: value}; a defaultdict as in PyTorch, so custom optimizers can
        # write `state = self.state[p]` (the built-in rules keep Variables there)
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
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

    def add_param_group(self, group: Mapping[str, Any]) -> None:
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
    def init_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {}

    def update(self, p: Tensor, g: Tensor, state: dict[str, Tensor], group: dict[str, Any]
               ) -> tuple[Tensor, dict[str, Tensor]]:
        raise NotImplementedError

    def _state_of(self, p: Tensor) -> dict:
        state = self.state.get(p)
        if not state:
            state = {name: _state_variable(value)
                     for name, value in self.init_state(p, self._group_of(p)).items()}
            self.state[p] = state
        elif p._data is not None and type(p._data) is not np.ndarray:
            _follow(p, state)
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
                    p.grad = Tensor._make(zeros_like_array(p._data))

    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        """Update every parameter that has a `.grad`, in place (state too).

        Inside a graph being traced, the updates become `dj.assign` ops; their group is returned.
        """
        if _profiler.on and graph_state.graph is None:  # profiler hook: one event per step
            return _profiler.optimizer_step(self, self._step, closure)
        return self._step(closure)

    def _step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        effects = []
        fused = self._fused_rule()
        fused_group = None if fused is None else self._fused_group
        with no_grad():
            for group in self.param_groups:
                if group.get("maximize"):  # ascend: the rule runs on the negated gradient
                    effects += [e for p in group["params"] if p.grad is not None
                                for e in self._apply(p, -p.grad, group)]
                    continue
                params = group["params"] if fused_group is None else fused_group(group)
                for p in params:
                    g = p.grad
                    if g is not None and (fused is None
                                          or not fused(self, p, g, self._state_of(p), group)):
                        effects += self._apply(p, g, group)
        if effects:
            return dongjing.group(*effects)
        return loss

    _fused_update = None  # the rule's in-place NumPy version (optim/fused.py), if it has one
    _fused_group = None  # ... and one over a whole group, returning the parameters it left
    _fused_of = None  # ... valid while the class's `update` is this function

    def _fused_rule(self):
        """`_fused_update` when an eager step may use it: the class's `update` is the one it
        mirrors (a subclass overriding `update` gets its own rule run), and neither a trace,
        the profiler (which times the update's ops) nor anomaly mode is on."""
        cls = type(self)
        if cls._fused_update is None or cls.update is not cls._fused_of:
            return None
        if (_profiler.on or anomaly_state.on or grad_scope.current is not None
                or graph_state.graph is not None):
            return None
        return cls._fused_update

    def _apply(self, p: Tensor, g: Tensor, group: dict) -> list:
        state = self._state_of(p)
        if g._node is not None:  # building a graph: scheduled values are read when it runs
            group = group.for_graph(static=grad_scope.current is None)
        new_p, new_state = self.update(p, g, state, group)
        writes = [(p, new_p)] + [(state[k], v) for k, v in new_state.items()]
        if not any(v._node is not None for _, v in writes):
            for target, value in writes:  # eager: write into the existing arrays
                data = target._data
                if type(data) is np.ndarray:
                    np.copyto(data, value._data, casting="unsafe")
                else:  # on a device backend: its own copy, never via the host
                    backend_of(data).copy_into(data, value._data)
                target._version[0] += 1
            return []

        return [dongjing.assign(target, value) for target, value in writes]

    # --- static ---------------------------------------------------------------------------------
    def minimize(self, loss: Tensor, var_list: Iterable[Tensor] | None = None,
                 distributed: bool = False, bucket_cap_mb: float = 25.0) -> Tensor | None:
        """A train op for the graph of symbolic `loss`: one `dj.group` of `dj.assign`s updating
        each parameter (default: this optimizer's) and its state; also runs the batch-norm
        updates the graph collected (`dj.nn.update_ops`). With `distributed=True` the gradients
        are averaged over all ranks (bucketed `all_reduce` ops) before the updates."""
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

                grads = all_reduce_gradients(grads[::-1], bucket_cap_mb)[::-1]
            effects = []
            for p, g in zip(var_list, grads):
                if g is not None:
                    group = self._group_of(p)
                    effects += self._apply(p, -g if group.get("maximize") else g, group)
            effects += take_update_ops(graph)
            return dongjing.group(*effects)

    # --- state dicts ----------------------------------------------------------------------------
    def state_dict(self) -> StateDict:
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
                if self.state.get(p):
                    state[index[id(p)]] = {k: v.detach() if isinstance(v, Tensor) else v
                                           for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: StateDict) -> None:
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
                if not isinstance(value, (Tensor, np.ndarray)):  # a custom optimizer's number
                    staged[p][name] = value
                    continue
                array = (value._value("load_state_dict") if isinstance(value, Tensor)
                         else np.asarray(value))
                want = tuple(getattr(fresh.get(name, array), "shape", ()))
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
                if not is_array(array):
                    state[name] = array
                elif isinstance(state.get(name), Tensor):  # onto the state's (its
                    copy_into(state[name], array)          # parameter's) device
                else:
                    state[name] = _state_variable(move_array(array, p.device))

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k, v in sorted(group.items()):
                if k != "params":
                    lines.append(f"    {k}: {v}")
        return "\n".join(lines + [")"])
