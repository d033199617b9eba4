"""tf.random_normal / random_uniform / truncated_normal: a random graph op (a fresh draw every
run, so a Variable's initializer draws again). Seeds follow TF 1.x: with a graph seed
(`tf.set_random_seed`) or an op seed, each op has its own stream, seeded by the pair TF derives
(an unseeded op takes the graph's op count as its op seed), which every new Session starts
over; with neither, the op draws from dongjing's generator (`dj.manual_seed`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...core.registry import Spec, register
from ...devices.random import generator
from ...dispatch import apply1
from ...errors import DTypeError
from ...graph.builder import constant as _dj_constant
from ...tensor import Tensor
from .dtypes import as_dtype
from .dynamic_shape import shape_hint, shape_tensor
from .graph_state import state_of
from .graphs import building, get_default_graph
from .session_state import Stream

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...types import DTypeLike, GraphShape


def _draw(rng, shape, dtype, dist, a, b) -> np.ndarray:
    if dist == "normal":
        return (rng.standard_normal(shape) * b + a).astype(dtype)
    if dist == "truncated_normal":  # redraw what falls beyond two standard deviations
        z = rng.standard_normal(shape)
        bad = np.abs(z) > 2.0
        while bad.any():
            z[bad] = rng.standard_normal(int(bad.sum()))
            bad = np.abs(z) > 2.0
        return (z * b + a).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(a, b, shape).astype(dtype)
    return rng.uniform(a, b, shape).astype(dtype)


def _forward(anchor, shape, dtype, dist, a, b, rng, source="attr"):
    if source == "values":  # the anchor is the shape, a tensor's value at run time
        shape = tuple(int(d) for d in anchor.reshape(-1))
    elif source == "like":  # the anchor's own shape
        shape = anchor.shape
    return _draw(rng.generator() if rng is not None else generator(), shape, dtype, dist, a, b)


def _infer(anchor: Spec, shape, dtype, dist, a, b, rng, source="attr"):
    if source == "like":
        return anchor.shape, dtype
    return shape, dtype  # (for "values": what is known of the shape when building)


# the input is a 0-d anchor that places the op in a graph; the op reads only its attributes
_random = register("tf_random", forward=_forward, infer=_infer, random=True,
                   onnx_reason="random (compat.v1's draws): ONNX's random ops cannot reproduce "
                   "the generator")


def random_tensor(shape: GraphShape | Sequence[int | Tensor], dtype: DTypeLike, dist: str,
                  a: float | Tensor, b: float | Tensor, seed: int | None = None) -> Tensor:
    """A graph op drawing a fresh array of `shape` each run (used by the tf.random_* names).
    `shape` may be a tensor (read at run time); `a`, `b` (mean and stddev, or the bounds) may
    be tensors: then a standard draw is scaled by graph ops."""
    dtype = as_dtype(dtype)
    with building((shape, a, b)) as graph:
        rng = stream_for(graph, seed)
        shape = shape_tensor(shape, f"tf.{dist}")
        scaled = isinstance(a, Tensor) or isinstance(b, Tensor)
        attrs = dict(dtype=dtype, dist=dist, a=0.0 if scaled else a, b=1.0 if scaled else b,
                     rng=rng)
        if isinstance(shape, Tensor):
            out = apply1(_random, shape, shape=shape_hint(shape), source="values", **attrs)
        else:
            out = apply1(_random, _dj_constant(np.zeros((), dtype)), shape=shape, **attrs)
        if not scaled:
            return out
        if dist == "uniform":  # a + (b - a) * U[0, 1)
            return out * (b - a) + a
        return out * b + a


def random_like(x, dist: str, a=0.0, b=1.0, seed=None):
    """A fresh draw of x's shape (read at run time) each run."""
    with building((x,)) as graph:
        return apply1(_random, x, shape=(), dtype=x.dtype, dist=dist, a=a, b=b,
                      rng=stream_for(graph, seed), source="like")


def random_normal(shape: GraphShape | Sequence[int | Tensor], mean: float | Tensor = 0.0,
                  stddev: float | Tensor = 1.0, dtype: DTypeLike = "float32",
                  seed: int | None = None, name: str | None = None) -> Tensor:
    """Normal samples of `shape` (fresh every run)."""
    if as_dtype(dtype).kind != "f":
        raise DTypeError("tf.random_normal: dtype must be floating point")
    return random_tensor(shape, dtype, "normal", _number(mean), _number(stddev), seed)


def truncated_normal(shape: GraphShape | Sequence[int | Tensor], mean: float | Tensor = 0.0,
                     stddev: float | Tensor = 1.0, dtype: DTypeLike = "float32",
                     seed: int | None = None, name: str | None = None) -> Tensor:
    """Normal samples within two standard deviations of the mean (fresh every run)."""
    if as_dtype(dtype).kind != "f":
        raise DTypeError("tf.truncated_normal: dtype must be floating point")
    return random_tensor(shape, dtype, "truncated_normal", _number(mean), _number(stddev), seed)


def random_uniform(shape: GraphShape | Sequence[int | Tensor], minval: float | Tensor = 0,
                   maxval: float | Tensor | None = None, dtype: DTypeLike = "float32",
                   seed: int | None = None, name: str | None = None) -> Tensor:
    """Uniform samples in [minval, maxval) (maxval defaults to 1 for floats; integers need it)."""
    dtype = as_dtype(dtype)
    if maxval is None:
        if dtype.kind != "f":
            raise DTypeError("tf.random_uniform: an integer dtype needs maxval")
        maxval = 1.0
    if isinstance(minval, Tensor) or isinstance(maxval, Tensor):
        if dtype.kind != "f":
            raise DTypeError("tf.random_uniform: tensor bounds need a float dtype")
        return random_tensor(shape, dtype, "uniform", minval, maxval, seed)
    if not minval < maxval:
        raise DTypeError(f"tf.random_uniform: minval {minval} must be below maxval {maxval}")
    return random_tensor(shape, dtype, "uniform", minval, maxval, seed)


def _number(value):
    """A Python float, or a graph tensor as it is (TF takes either)."""
    return value if isinstance(value, Tensor) else float(value)


_DEFAULT_GRAPH_SEED = 87654321  # TF's graph seed for an op seeded without a graph seed


def stream_for(graph, op_seed) -> Stream | None:
    """The stream of a random op created now in `graph` with `op_seed`, by TF 1.x's rules."""
    graph_seed = state_of(graph).seed
    if graph_seed is None and op_seed is None:
        return None
    if op_seed is None:
        op_seed = len(graph.nodes)  # TF uses the graph's op count so far
    if graph_seed is None:
        graph_seed = _DEFAULT_GRAPH_SEED
    return Stream((int(graph_seed) % 2**63, int(op_seed) % 2**63))


def set_random_seed(seed: int) -> None:
    """Set the default graph's seed: its random ops draw reproducible, per-op streams that
    each new Session starts over (an op's own `seed=` picks its stream within it)."""
    graph = get_default_graph()
    state_of(graph).seed = None if seed is None else int(seed)
    graph.seed = state_of(graph).seed


def get_seed(op_seed):
    """(graph seed, op seed) as TF 1.x derives them for an op created now (None, None: none)."""
    graph = get_default_graph()
    stream = stream_for(graph, op_seed)
    return (None, None) if stream is None else stream.seeds
