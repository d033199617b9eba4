"""`dj.distributed.optim`: ZeRO stage 1 (Rajbhandari et al., 2020), data-parallel training in
which each rank keeps and updates the optimizer state of its own shard of the parameters only,
then hands the updated parameters to the others. The state memory per rank falls by the world
size; the parameters and gradients stay whole on every rank (reduce the gradients first: DDP,
or `minimize(distributed=True)`). PyTorch's name and place:
`torch.distributed.optim.ZeroRedundancyOptimizer`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from ..tensor import Tensor
from . import p2p
from .collectives import broadcast
from .world import DistributedError, ensure_init

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from ..optim.optimizer import Optimizer
    from ..types import StateDict

_TAG_META, _TAG_ARRAY = 11, 12


def partition_parameters(sizes: list[int], world_size: int) -> list[int]:
    """The owning rank of each parameter (by element count): largest first, each to the rank
    holding the fewest elements so far (ties: the lower rank), so the shards come out even."""
    owners = [0] * len(sizes)
    load = [0] * world_size
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        rank = min(range(world_size), key=lambda r: (load[r], r))
        owners[i] = rank
        load[rank] += sizes[i]
    return owners


class ZeroRedundancyOptimizer:
    """`ZeroRedundancyOptimizer(params, optimizer_class, **defaults)`: `optimizer_class(shard,
    **defaults)` on this rank's shard of `params` (one parameter group), the updated values
    broadcast from each shard's owner after every `step()`. Every rank passes the same
    parameters in the same order. With one process it is `optimizer_class(params, ...)`."""

    def __init__(self, params: Iterable[Tensor], optimizer_class: type[Optimizer],
                 **defaults: Any) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if any(isinstance(p, dict) for p in self.params):
            raise DistributedError("ZeroRedundancyOptimizer takes one list of parameters, not "
                                   "parameter groups")
        world = ensure_init()
        self.rank, self.world_size = world.rank, world.size
        self.owners = partition_parameters([p.numel() for p in self.params], world.size)
        self.owned = [i for i, r in enumerate(self.owners) if r == self.rank]
        self.optimizer_class, self.defaults = optimizer_class, dict(defaults)
        shard = [self.params[i] for i in self.owned]
        self.optim = optimizer_class(shard, **defaults) if shard else None
        self._consolidated: dict | None = None

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        """The shard optimizer's parameter groups (an lr scheduler changes them on every rank)."""
        return self.optim.param_groups if self.optim is not None else []

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient (the whole model's, not only the shard's)."""
        for p in self.params:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad = p.grad * 0

    def step(self, closure: Callable[[], Tensor] | None = None) -> Tensor | None:
        """Update this rank's shard from the (already averaged) gradients, then share it."""
        loss = closure() if closure is not None else None
        if self.optim is not None:
            self.optim.step()
        self._share_parameters()
        return loss

    def _share_parameters(self) -> None:
        """Each owner broadcasts its updated parameters: one flat message per (owner, dtype)."""
        if self.world_size == 1:
            return
        for owner in range(self.world_size):
            groups: dict = {}
            for i, r in enumerate(self.owners):
                if r == owner:
                    groups.setdefault(np.dtype(self.params[i].dtype), []).append(self.params[i])
            for dtype, members in groups.items():
                if owner == self.rank:
                    flat = np.concatenate([np.asarray(p._data).reshape(-1) for p in members])
                else:
                    flat = np.empty(sum(p.numel() for p in members), dtype)
                broadcast(Tensor._make(flat), src=owner)
                start = 0
                for p in members:
                    n = p.numel()
                    if owner != self.rank:
                        p._data[...] = flat[start:start + n].reshape(p.shape)
                        p._version[0] += 1
                    start += n

    # --- checkpoints ------------------------------------------------------------------------
    def shard_state_dict(self) -> StateDict:
        """This rank's shard of the state, in the whole optimizer's layout (parameters numbered
        in the order given to the constructor): {"state": {index: {name: array}},
        "param_groups": [{hyperparameters, "params": [this shard's indices]}]}."""
        if self.optim is None:
            return {"state": {}, "param_groups": []}
        local = self.optim.state_dict()
        state = {self.owned[int(k)]: {n: _plain(v) for n, v in entry.items()}
                 for k, entry in local["state"].items()}
        groups = [dict(g, params=[self.owned[int(i)] for i in g["params"]])
                  for g in local["param_groups"]]
        return {"state": state, "param_groups": groups}

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's shard on rank `to` (every rank must call it); `state_dict()` on
        that rank then returns the whole state."""
        if not 0 <= to < self.world_size:
            raise DistributedError(f"consolidate_state_dict: rank {to} is not in a world of "
                                   f"{self.world_size}")
        mine = self.shard_state_dict()
        if self.world_size == 1:
            self._consolidated = merge_shards([mine], len(self.params))
            return
        comm = ensure_init().comm
        if self.rank != to:
            sender = p2p.Sender(comm)
            _send_shard(sender, mine, to)
            sender.finish("consolidate_state_dict")
            self._consolidated = None
            return
        shards = [mine if r == to else _recv_shard(comm, r) for r in range(self.world_size)]
        self._consolidated = merge_shards(shards, len(self.params))

    def state_dict(self) -> StateDict:
        """The whole optimizer's state dict (after `consolidate_state_dict`, on its rank): the
        layout of `optimizer_class(params)` in one process, so it loads there too."""
        if self._consolidated is None:
            raise DistributedError("ZeroRedundancyOptimizer.state_dict: call "
                                   "consolidate_state_dict(to=rank) on every rank first, then "
                                   "state_dict() on that rank")
        return self._consolidated

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a whole state dict (from `state_dict()`, from `merge_shards` of saved shards, or
        from `optimizer_class(params).state_dict()`), whatever the world size it was saved at:
        each rank takes its shard's entries."""
        groups = state_dict.get("param_groups")
        if not groups or "state" not in state_dict:
            raise DistributedError("ZeroRedundancyOptimizer.load_state_dict: needs 'state' and "
                                   "one entry in 'param_groups'")
        count = sum(len(g["params"]) for g in groups)
        if len(groups) != 1 or count != len(self.params):
            raise DistributedError(f"ZeroRedundancyOptimizer.load_state_dict: the state dict "
                                   f"holds {len(groups)} group(s) of {count} parameters; this "
                                   f"optimizer has one group of {len(self.params)}")
        if self.optim is None:
            return
        local_of = {g: i for i, g in enumerate(self.owned)}
        state = {local_of[int(k)]: entry for k, entry in state_dict["state"].items()
                 if int(k) in local_of}
        hyper = {k: v for k, v in groups[0].items() if k != "params"}
        self.optim.load_state_dict({"state": state,
                                    "param_groups": [dict(hyper, params=list(range(len(
                                        self.owned))))]})


def merge_shards(shards: list[dict], count: int) -> dict:
    """One whole state dict from the shards of every rank (`shard_state_dict()`, saved at any
    world size): the layout of the plain optimizer over all `count` parameters."""
    state: dict = {}
    hyper = None
    for shard in shards:
        state.update({int(k): v for k, v in shard["state"].items()})
        for group in shard["param_groups"]:
            hyper = hyper or {k: v for k, v in group.items() if k != "params"}
    if hyper is None:
        raise DistributedError("merge_shards: no shard holds a parameter group")
    return {"state": dict(sorted(state.items())),
            "param_groups": [dict(hyper, params=list(range(count)))]}


def _plain(value):
    return np.array(value._data) if isinstance(value, Tensor) else value


def _send_shard(sender: p2p.Sender, shard: dict, dest: int) -> None:
    """A shard as JSON (indices, names, numbers; arrays as their position) and its arrays."""
    arrays: list = []

    def encode(v):
        if isinstance(v, np.ndarray):
            arrays.append(v)
            return {"array": len(arrays) - 1}
        return v

    meta = {"state": {str(k): {n: encode(v) for n, v in e.items()}
                      for k, e in shard["state"].items()},
            "param_groups": shard["param_groups"]}
    text = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    sender.send(text, dest, _TAG_META, "consolidate_state_dict")
    for array in arrays:
        sender.send(array, dest, _TAG_ARRAY, "consolidate_state_dict")


def _recv_shard(comm, source: int) -> dict:
    meta = json.loads(p2p.recv(comm, source, _TAG_META, "consolidate_state_dict").tobytes())
    count = sum(isinstance(v, dict) and "array" in v
                for e in meta["state"].values() for v in e.values())
    arrays = [p2p.recv(comm, source, _TAG_ARRAY, "consolidate_state_dict") for _ in range(count)]
    state = {int(k): {n: arrays[v["array"]] if isinstance(v, dict) else v for n, v in e.items()}
             for k, e in meta["state"].items()}
    return {"state": state, "param_groups": meta["param_groups"]}
