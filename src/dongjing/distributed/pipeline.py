"""Pipeline parallelism for eager `nn.Sequential` models: each rank holds one stage (a run of
consecutive layers), and a batch flows through the stages as micro-batches, activations
forward and their gradients back over MPI point-to-point messages, in a GPipe or a 1F1B
schedule (`schedules.py`). With one process every stage is local."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core import profiler_hooks as hooks
from ..tensor import Tensor
from . import p2p
from .schedules import SCHEDULES, schedule_order
from .world import DistributedError, ensure_init, wait

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from ..nn.container import Sequential
    from ..nn.parameter import Parameter

_REDUCTIONS = ("mean", "sum")


class Pipe:
    """`Pipe(model, balance, chunks=1, schedule="gpipe")`: `model` (an `nn.Sequential`) cut
    into `len(balance)` stages of `balance[i]` layers, stage i on rank i.

    Under `mpiexec -n K`, `len(balance)` must be K. `parameters()` are this rank's stage's, for
    its optimizer; `step(x, y, loss_fn)` runs forward and backward of the whole batch in
    `chunks` micro-batches and returns the batch loss on every rank.
    """

    def __init__(self, model: Sequential, balance: Sequence[int], chunks: int = 1,
                 schedule: str = "gpipe") -> None:
        if not (hasattr(model, "__len__") and hasattr(model, "__getitem__")):
            raise TypeError(f"Pipe: expects an nn.Sequential (layers in order), got "
                            f"{type(model).__name__}")
        balance = [int(b) for b in balance]
        if not balance or any(b <= 0 for b in balance) or sum(balance) != len(model):
            raise DistributedError(f"Pipe: balance {balance} must be positive layer counts that "
                                   f"add up to the model's {len(model)} layers")
        if int(chunks) != chunks or chunks < 1:
            raise DistributedError(f"Pipe: chunks must be a positive integer, got {chunks!r}")
        if schedule not in SCHEDULES:
            raise DistributedError(f"Pipe: schedule must be one of {SCHEDULES}, got "
                                   f"{schedule!r}")
        world = ensure_init()
        if world.size > 1 and len(balance) != world.size:
            raise DistributedError(f"Pipe: balance {balance} has {len(balance)} stages for a "
                                   f"world of {world.size} ranks; give one stage per rank")
        self.model, self.balance = model, balance
        self.chunks, self.schedule = int(chunks), schedule
        ends = np.cumsum(balance)
        self.partitions = [model[int(end - b):int(end)] for b, end in zip(balance, ends)]
        if world.size == 1:  # every stage here: one local stage holding all of them
            self.stage, self.stages, self.local, self.comm = 0, 1, model[0:len(model)], None
        else:
            self.stage, self.stages = world.rank, world.size
            self.local = self.partitions[world.rank]
            self.comm = world.comm.Dup()  # the pipe's messages never meet anyone else's

    def parameters(self) -> Iterator[Parameter]:
        """The parameters of this rank's stage (every stage's with one process)."""
        return self.local.parameters()

    def named_parameters(self) -> list[tuple[str, Parameter]]:
        """(name, parameter) pairs of this rank's stage, named as in the whole model."""
        names = {id(p): n for n, p in self.model.named_parameters()}
        return [(names[id(p)], p) for p in self.local.parameters()]

    def step(self, x: Tensor, y: Tensor, loss_fn: Callable[[Tensor, Tensor], Tensor],
             reduction: str = "mean") -> Tensor:
        """Forward and backward of the batch (`x`, targets `y`) in micro-batches; gradients
        accumulate into the stage's `.grad` (call the optimizer's `zero_grad` first).

        `loss_fn(output, target)` gives one micro-batch's loss; with `reduction="mean"` it
        must average over the micro-batch's rows (e.g. `F.cross_entropy`) and the batch loss is
        the row-weighted mean of the micro-batches'; with "sum" it must sum, and so does the
        batch loss. Either way loss and gradients equal one step on the unsplit batch. Every
        rank passes the same `x` and `y` (only the first stage reads `x`, only the last `y`).
        Returns the batch loss (a 0-dim tensor, no graph) on every rank.
        """
        if reduction not in _REDUCTIONS:
            raise DistributedError(f"Pipe.step: reduction must be one of {_REDUCTIONS}, got "
                                   f"{reduction!r}")
        first, last = self.stage == 0, self.stage == self.stages - 1
        rows = _rows(x if first else y if last else x, "x" if first or not last else "y")
        if rows < self.chunks:
            raise DistributedError(f"Pipe.step: a batch of {rows} rows cannot make "
                                   f"{self.chunks} micro-batches (chunks)")
        bounds = np.cumsum([0] + [len(a) for a in np.array_split(np.arange(rows), self.chunks)])
        run = _StepRun(self, x, y, loss_fn, reduction, bounds)
        for kind, m in schedule_order(self.schedule, self.stage, self.stages, self.chunks):
            start = hooks.clock() if hooks.on else None
            run.forward(m) if kind == "F" else run.backward(m)
            if start is not None and hooks.on:  # a range on dj.profiler's timeline
                hooks.emit(start, hooks.clock(), "pipeline", f"{kind}{m}",
                           {"stage": self.stage, "micro_batch": m})
        run.sender.finish("Pipe.step")
        return self._share_loss(run.loss, run.loss_dtype)

    def _share_loss(self, value: float, dtype) -> Tensor:
        """The last stage's loss, on every rank."""
        if self.comm is not None:
            message = np.array([value, -1 if dtype is None else p2p.DTYPES.index(dtype)])
            wait(self.comm.Ibcast(message, root=self.stages - 1), "Pipe.step (the loss)")
            value, dtype = message[0], p2p.DTYPES[int(message[1])]
        return Tensor._make(np.asarray(value, dtype=dtype))


def _rows(t, name: str) -> int:
    shape = getattr(t, "shape", None)
    if not shape:
        raise DistributedError(f"Pipe.step: {name} must be a tensor with a batch dimension, got "
                               f"{type(t).__name__} of shape {shape}")
    return int(shape[0])


def _as_tensor(t) -> Tensor:
    return t if isinstance(t, Tensor) else Tensor._make(np.asarray(t))


class _StepRun:
    """One `Pipe.step` on one rank: the micro-batches' saved inputs and outputs."""

    def __init__(self, pipe: Pipe, x, y, loss_fn, reduction: str, bounds):
        self.pipe, self.loss_fn, self.reduction, self.bounds = pipe, loss_fn, reduction, bounds
        self.x = None if x is None else _as_tensor(x)
        self.y = None if y is None else _as_tensor(y)
        self.sender = p2p.Sender(pipe.comm)
        self.saved: dict[int, tuple] = {}  # micro-batch -> (stage input, output or loss)
        self.loss, self.loss_dtype = 0.0, None

    def forward(self, m: int) -> None:
        pipe, lo, hi = self.pipe, int(self.bounds[m]), int(self.bounds[m + 1])
        if pipe.stage == 0:
            inp = self.x[lo:hi]
        else:
            inp = Tensor._make(p2p.recv(pipe.comm, pipe.stage - 1, 2 * m, "Pipe.step forward"))
            if inp.dtype.kind == "f":
                inp.requires_grad_(True)
        out = pipe.local(inp)
        if not isinstance(out, Tensor):
            raise DistributedError(f"Pipe.step: stage {pipe.stage} returned "
                                   f"{type(out).__name__}; a stage must return one tensor")
        if pipe.stage == pipe.stages - 1:
            loss = self.loss_fn(out, self.y[lo:hi])
            if self.reduction == "mean":
                loss = loss * ((hi - lo) / int(self.bounds[-1]))
            self.loss += float(loss.item())
            self.loss_dtype = np.dtype(loss.dtype)
            self.saved[m] = (inp, loss)
        else:
            self.sender.send(np.asarray(out.detach().numpy()), pipe.stage + 1, 2 * m,
                             "Pipe.step forward")
            self.saved[m] = (inp, out)

    def backward(self, m: int) -> None:
        pipe = self.pipe
        inp, out = self.saved.pop(m)
        if pipe.stage == pipe.stages - 1:
            out.backward()
        else:
            grad = p2p.recv(pipe.comm, pipe.stage + 1, 2 * m + 1, "Pipe.step backward")
            if out.requires_grad:
                out.backward(Tensor._make(grad))
        if pipe.stage > 0:
            grad = inp.grad
            data = np.zeros(inp.shape, inp.numpy().dtype) if grad is None else grad.numpy()
            self.sender.send(np.asarray(data), pipe.stage - 1, 2 * m + 1, "Pipe.step backward")
