"""Tensor parallelism for products (Megatron-LM's split): a `Linear` whose weight is cut across
ranks by output features (`ColumnParallelLinear`) or by input features (`RowParallelLinear`),
and the five ops of the op table that join the pieces, each differentiable:

    copy(x)               identity forward, all-reduce (sum) of the gradient backward
    reduce(x)             all-reduce (sum) forward, identity backward
    gather(x, dim)        all-gather along `dim` forward, this rank's slice of the gradient back
    split(x, dim)         this rank's slice along `dim` forward, all-gather of the gradient back
    reduce_scatter(x, dim)  sum over ranks, then this rank's slice; all-gather backward

They follow Megatron's convention: a value outside the split region is the same on every rank
(replicated), and a gradient is the gradient of that one loss, not of a sum over ranks (which
is `functional.all_reduce`'s data-parallel convention). A column-split layer followed by a
row-split one (`gather_output=False`, `input_is_parallel=True`) needs one all-reduce forward
(`reduce`) and one backward (`copy`'s). With one process every op is the identity and every
layer holds its whole weight. They run eagerly, in static graphs and in dj.jit traces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import nn
from ..core.registry import Spec, define
from ..dispatch import apply1
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .world import DistributedError, ensure_init, wait

if TYPE_CHECKING:
    from ..types import DTypeLike

_NOT_ONNX = "a collective across processes has no ONNX form"


def _world():
    world = ensure_init()
    return world.rank, world.size


def _axis(ndim: int, dim: int, what: str) -> int:
    if not -ndim <= dim < max(ndim, 1):
        raise DistributedError(f"tensor_parallel.{what}: dim {dim} is out of range for a tensor "
                               f"of {ndim} dimension(s)")
    return dim % ndim


def _parts(size, ranks: int, what: str, dim):
    """`size` // `ranks`; `dim` names the split dim in the error (an index or a name)."""
    if size is not None and size % ranks:
        where = f"dim {dim}" if isinstance(dim, int) else dim
        raise DistributedError(f"tensor_parallel.{what}: {where} of size {size} does not split "
                               f"evenly over {ranks} ranks")
    return None if size is None else size // ranks


def _copy_forward(xp, x):
    return xp.array(x, order="C", copy=True)


def _reduce_forward(xp, x):
    out = xp.array(x, order="C", copy=True)
    world = ensure_init()
    if world.size > 1:
        wait(world.comm.Iallreduce(world.mpi.IN_PLACE, out, op=world.mpi.SUM), "tensor_parallel")
    return out


def _gather_forward(xp, x, dim: int):
    rank, ranks = _world()
    if ranks == 1:
        return xp.array(x, order="C", copy=True)
    data = np.ascontiguousarray(x)
    blocks = np.empty((ranks,) + data.shape, data.dtype)
    wait(ensure_init().comm.Iallgather(data, blocks), "tensor_parallel.gather")
    return np.concatenate(list(blocks), axis=dim)


def _split_forward(xp, x, dim: int):
    rank, ranks = _world()
    size = x.shape[dim] // ranks
    index = (slice(None),) * dim + (slice(rank * size, (rank + 1) * size),)
    return xp.array(x[index], order="C", copy=True)


def _reduce_scatter_forward(xp, x, dim: int):
    rank, ranks = _world()
    if ranks == 1:
        return xp.array(x, order="C", copy=True)
    blocks = np.ascontiguousarray(np.stack(np.split(np.asarray(x), ranks, axis=dim)))
    out = np.empty(blocks.shape[1:], blocks.dtype)
    world = ensure_init()
    wait(world.comm.Ireduce_scatter_block(blocks, out, op=world.mpi.SUM),
         "tensor_parallel.reduce_scatter")
    return out


def _same(x: Spec):
    return x.shape, x.dtype


def _scaled(x: Spec, dim: int, what: str, grow: bool):
    shape = list(x.shape)
    _, ranks = _world()
    if grow:
        shape[dim] = None if shape[dim] is None else shape[dim] * ranks
    else:
        shape[dim] = _parts(shape[dim], ranks, what, dim)
    return tuple(shape), x.dtype


# Not pure (random=True keeps folding and CSE away): values depend on the other ranks, and every
# rank must run each of these ops, in the same order.
_copy = define("tp_copy", forward=_copy_forward, infer=_same,
               grads=(lambda g, x: reduce(g),), random=True, onnx_reason=_NOT_ONNX)
_reduce = define("tp_reduce", forward=_reduce_forward, infer=_same,
                 grads=(lambda g, x: copy(g),), random=True, onnx_reason=_NOT_ONNX)
_gather = define("tp_gather", forward=_gather_forward,
                 infer=lambda x, dim: _scaled(x, dim, "gather", True),
                 grads=(lambda g, x, dim: split(g, dim),), random=True, onnx_reason=_NOT_ONNX)
_split = define("tp_split", forward=_split_forward,
                infer=lambda x, dim: _scaled(x, dim, "split", False),
                grads=(lambda g, x, dim: gather(g, dim),), random=True, onnx_reason=_NOT_ONNX)
_reduce_scatter = define("tp_reduce_scatter", forward=_reduce_scatter_forward,
                         infer=lambda x, dim: _scaled(x, dim, "reduce_scatter", False),
                         grads=(lambda g, x, dim: gather(g, dim),), random=True,
                         onnx_reason=_NOT_ONNX)


def copy(x) -> Tensor:
    """`x` unchanged; backward, its gradient summed over ranks (the input of a column split)."""
    return apply1(_copy, as_tensor(x))


def reduce(x) -> Tensor:
    """`x` summed over ranks (the partial products of a row split); backward, the identity."""
    return apply1(_reduce, as_tensor(x))


def gather(x, dim: int = -1) -> Tensor:
    """Every rank's `x` concatenated along `dim` in rank order; backward, this rank's slice."""
    x = as_tensor(x)
    return apply1(_gather, x, dim=_axis(len(x.shape), int(dim), "gather"))


def split(x, dim: int = -1) -> Tensor:
    """This rank's even slice of `x` along `dim`; backward, the slices' gradients gathered."""
    x = as_tensor(x)
    return apply1(_split, x, dim=_axis(len(x.shape), int(dim), "split"))


def reduce_scatter(x, dim: int = 0) -> Tensor:
    """`x` summed over ranks, of which this rank keeps its even slice along `dim`; backward,
    the slices' gradients gathered."""
    x = as_tensor(x)
    return apply1(_reduce_scatter, x, dim=_axis(len(x.shape), int(dim), "reduce_scatter"))


class _ParallelLinear:
    """What the two splits share: the rank's slice of a whole `nn.Linear`'s weight."""

    @staticmethod
    def _shard(module, linear, axis: int, what: str) -> None:
        rank, ranks = _world()
        out_f, in_f = linear.weight.shape
        size = (out_f, in_f)[axis]
        _parts(size, ranks, what, ("out_features", "in_features")[axis])
        weight = np.split(linear.weight.numpy(), ranks, axis=axis)[rank]
        module.in_features, module.out_features = in_f, out_f
        module.weight = nn.Parameter(np.ascontiguousarray(weight))
        bias = linear.bias
        if bias is not None and axis == 0:
            bias = np.split(bias.numpy(), ranks)[rank]
        elif bias is not None:
            bias = bias.numpy()
        if bias is None:
            module.register_parameter("bias", None)
        else:
            module.bias = nn.Parameter(np.array(bias, copy=True))


class ColumnParallelLinear(nn.Module, _ParallelLinear):
    """`nn.Linear(in_features, out_features)` with its output features split over ranks: rank
    r holds rows r*out/K..(r+1)*out/K of the weight (and of the bias). The whole weight is drawn
    as `nn.Linear` draws it (the same seed gives the same layer), then sliced.

    `gather_output=True` all-gathers the output (every rank gets all features); False leaves
    each rank its slice, for a `RowParallelLinear(input_is_parallel=True)` to consume.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 gather_output: bool = True, dtype: DTypeLike | None = None):
        super().__init__()
        whole = nn.Linear(in_features, out_features, bias=bias, dtype=dtype)
        self._shard(self, whole, 0, "ColumnParallelLinear")
        self.gather_output = bool(gather_output)

    @classmethod
    def from_linear(cls, linear: nn.Linear, gather_output: bool = True) -> ColumnParallelLinear:
        """This rank's column split of an existing `nn.Linear` (its values copied)."""
        layer = cls.__new__(cls)
        nn.Module.__init__(layer)
        cls._shard(layer, linear, 0, "ColumnParallelLinear")
        layer.gather_output = bool(gather_output)
        return layer

    def forward(self, x: Tensor) -> Tensor:
        y = nn.functional.linear(copy(x), self.weight, self.bias)
        return gather(y, -1) if self.gather_output else y

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features} "
                f"(this rank: {self.weight.shape[0]}), gather_output={self.gather_output}")


class RowParallelLinear(nn.Module, _ParallelLinear):
    """`nn.Linear(in_features, out_features)` with its input features split over ranks: rank r
    holds columns r*in/K..(r+1)*in/K of the weight; the bias is whole on every rank. Each rank's
    partial product is summed over ranks (one all-reduce), then the bias is added.

    `input_is_parallel=True` takes this rank's slice of the input features (a
    `ColumnParallelLinear(gather_output=False)`'s output); False slices a whole input here.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 input_is_parallel: bool = True, dtype: DTypeLike | None = None):
        super().__init__()
        whole = nn.Linear(in_features, out_features, bias=bias, dtype=dtype)
        self._shard(self, whole, 1, "RowParallelLinear")
        self.input_is_parallel = bool(input_is_parallel)

    @classmethod
    def from_linear(cls, linear: nn.Linear, input_is_parallel: bool = True) -> RowParallelLinear:
        """This rank's row split of an existing `nn.Linear` (its values copied)."""
        layer = cls.__new__(cls)
        nn.Module.__init__(layer)
        cls._shard(layer, linear, 1, "RowParallelLinear")
        layer.input_is_parallel = bool(input_is_parallel)
        return layer

    def forward(self, x: Tensor) -> Tensor:
        if not self.input_is_parallel:
            x = split(x, -1)
        y = reduce(nn.functional.linear(x, self.weight))
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features} (this rank: {self.weight.shape[1]}), "
                f"out_features={self.out_features}, input_is_parallel={self.input_is_parallel}")
