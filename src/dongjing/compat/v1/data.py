"""tf.data for TF1 programs: `Dataset` (from_tensor_slices, from_tensors, range, batch,
shuffle, repeat, map, take, skip, prefetch) and its iterators. A dataset is a pipeline over
NumPy arrays in Python; `iterator.get_next()` gives graph tensors whose value is the next
element each time a Session run needs them (one element per run, shared by all of its
components). The end of the data raises tf.errors.OutOfRangeError, as in TensorFlow."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from ...core.registry import Spec, register
from ...devices.random import generator
from ...dispatch import apply, apply1
from ...errors import GraphError, IndexOutOfRangeError
from ...graph import Graph
from ...graph.builder import constant, placeholder
from ...runtime.session import Session as _DjSession
from ...tensor import Tensor
from .graphs import building
from .math_ops import _t
from .session import Operation
from .unsupported import module_getattr, not_provided

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterator as _Iterator

    from ...types import Nested

__getattr__ = module_getattr("tf.data")


def _flatten(structure) -> list:
    if isinstance(structure, (tuple, list)):
        return [a for s in structure for a in _flatten(s)]
    if isinstance(structure, dict):
        return [a for k in sorted(structure) for a in _flatten(structure[k])]
    return [structure]


def _pack(structure, flat: list):
    items = iter(flat)

    def build(s):
        if isinstance(s, tuple):
            return tuple(build(x) for x in s)
        if isinstance(s, list):
            return [build(x) for x in s]
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        return next(items)

    return build(structure)


def _as_array(value) -> np.ndarray:
    if isinstance(value, Tensor):
        if value._node is not None:
            not_provided("tf.data.Dataset from graph tensors (give NumPy arrays or Python "
                         "values)")
        return np.asarray(value._data)
    array = np.asarray(value)
    if array.dtype == np.float64 and not isinstance(value, np.ndarray):
        array = array.astype(np.float32)  # Python floats become float32, as TF converts them
    if array.dtype == np.int64 and not isinstance(value, np.ndarray):
        array = array.astype(np.int32)
    return array


class Dataset:
    """A sequence of elements (arrays, or tuples/dicts of arrays) built by chaining methods."""

    def __init__(self, make: Callable[[dict[str, Any]], _Iterator[list[np.ndarray]]],
                 structure: Nested, shapes: list[tuple[int | None, ...]],
                 dtypes: list[np.dtype]) -> None:
        # make(ctx) -> an iterator over elements (each a flat list of arrays); ctx is a dict
        # that lives as long as one start of an iterator (a seeded shuffle keeps its stream)
        self._make = make
        self._structure = structure
        self._shapes = shapes  # per component: its static shape (None where it varies)
        self._dtypes = dtypes

    # --- sources -------------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Nested) -> Dataset:
        """One element per row of the arrays (all with the same first dim)."""
        flat = [_as_array(a) for a in _flatten(tensors)]
        lengths = {a.shape[0] if a.ndim else None for a in flat}
        if None in lengths or len(lengths) != 1:
            raise GraphError(f"tf.data.Dataset.from_tensor_slices: every component needs the "
                             f"same first dim, got shapes {[a.shape for a in flat]}")
        n = lengths.pop()
        return Dataset(lambda ctx: ([a[i] for a in flat] for i in range(n)), tensors,
                       [a.shape[1:] for a in flat], [a.dtype for a in flat])

    @staticmethod
    def from_tensors(tensors: Nested) -> Dataset:
        """A dataset of the one element `tensors`."""
        flat = [_as_array(a) for a in _flatten(tensors)]
        return Dataset(lambda ctx: iter([flat]), tensors, [a.shape for a in flat],
                       [a.dtype for a in flat])

    @staticmethod
    def range(*args: int) -> Dataset:
        """int64 values as Python's range(*args) gives them."""
        values = np.arange(*args, dtype=np.int64)
        return Dataset(lambda ctx: ([np.asarray(v)] for v in values), 0, [()], [np.dtype(np.int64)])

    # --- transformations -------------------------------------------------------------------------
    def _derive(self, make, shapes=None, structure=None, dtypes=None) -> Dataset:
        return Dataset(make, self._structure if structure is None else structure,
                       self._shapes if shapes is None else shapes,
                       self._dtypes if dtypes is None else dtypes)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> Dataset:
        """Elements stacked `batch_size` at a time (the last batch may be smaller)."""
        size = int(batch_size)
        if size < 1:
            raise GraphError(f"Dataset.batch: batch_size must be positive, got {batch_size}")
        source = self._make

        def make(ctx):
            chunk = []
            for element in source(ctx):
                chunk.append(element)
                if len(chunk) == size:
                    yield [np.stack(c) for c in zip(*chunk)]
                    chunk = []
            if chunk and not drop_remainder:
                yield [np.stack(c) for c in zip(*chunk)]

        lead = size if drop_remainder else None
        return self._derive(make, [(lead, *s) for s in self._shapes])

    def repeat(self, count: int | None = None) -> Dataset:
        """The elements `count` times over (None or -1: forever)."""
        source = self._make
        count = None if count is None or int(count) < 0 else int(count)

        def make(ctx):
            passes = 0
            while count is None or passes < count:
                empty = True
                for element in source(ctx):
                    empty = False
                    yield element
                passes += 1
                if empty:
                    return

        return self._derive(make)

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool = True) -> Dataset:
        """Elements drawn at random from a buffer of `buffer_size` filled in order (TF's
        algorithm); the generator is dongjing's (tf.set_random_seed), or `seed`'s own."""
        size = int(buffer_size)
        if size < 1:
            raise GraphError(f"Dataset.shuffle: buffer_size must be positive, got {buffer_size}")
        source = self._make

        key = object()

        def make(ctx):
            if seed is None:
                rng = generator()
            elif reshuffle_each_iteration:  # one stream per iterator start: a new order per pass
                rng = ctx.setdefault(key, np.random.default_rng(int(seed)))
            else:
                rng = np.random.default_rng(int(seed))
            buffer = []
            for element in source(ctx):
                buffer.append(element)
                if len(buffer) == size:
                    yield buffer.pop(int(rng.integers(len(buffer))))
            while buffer:
                yield buffer.pop(int(rng.integers(len(buffer))))

        return self._derive(make)

    def map(self, map_func: Callable[..., Nested], num_parallel_calls: int | None = None
            ) -> Dataset:
        """`map_func` applied to each element (its components as arguments when it is a
        tuple). As in TF, the function is traced once into a graph (of placeholders shaped
        like the elements) and that graph runs for each element."""
        graph = Graph("dataset_map")
        with graph.as_default():
            holders = [placeholder(tuple(s), d, name=f"element_{i}")
                       for i, (s, d) in enumerate(zip(self._shapes, self._dtypes))]
            out = _apply_map(map_func, _pack(self._structure, holders))
            flat_out = [_t(v) for v in _flatten(out)]
        session = _DjSession(graph, optimize=2)
        source = self._make

        def make(ctx):
            for element in source(ctx):
                yield session.run(flat_out, dict(zip(holders, element)))

        structure = out if isinstance(out, (tuple, list, dict)) else 0
        return self._derive(make, [tuple(v.shape) for v in flat_out], structure,
                            [v.dtype for v in flat_out])

    def take(self, count: int) -> Dataset:
        """The first `count` elements (-1: all)."""
        source, count = self._make, int(count)

        def make(ctx):
            for i, element in enumerate(source(ctx)):
                if 0 <= count <= i:
                    return
                yield element

        return self._derive(make)

    def skip(self, count: int) -> Dataset:
        """All but the first `count` elements."""
        source, count = self._make, int(count)

        def make(ctx):
            for i, element in enumerate(source(ctx)):
                if i >= count:
                    yield element

        return self._derive(make)

    def prefetch(self, buffer_size: int) -> Dataset:
        """The same elements (dongjing reads them when a run needs them)."""
        return self

    def cache(self, filename: str = "") -> Dataset:
        """The same elements (they are NumPy arrays in memory already)."""
        return self

    @property
    def output_shapes(self) -> Any:
        return _pack(self._structure, [tuple(s) for s in self._shapes])

    @property
    def output_types(self) -> Any:
        return _pack(self._structure, list(self._dtypes))

    def make_one_shot_iterator(self) -> Iterator:
        """An iterator that starts at the first element (no initializer needed)."""
        return Iterator(self, started=True)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Iterator:
        """An iterator to start (and restart) with `sess.run(iterator.initializer)`."""
        return Iterator(self, started=False)

    def __iter__(self) -> NoReturn:
        not_provided("iterating over a tf.data.Dataset in Python (eager TF2 style): use "
                     "make_one_shot_iterator().get_next() in a graph")


def _apply_map(fn, element):
    return fn(*element) if isinstance(element, tuple) else fn(element)


class Iterator:
    """Gives the dataset's elements to a graph: `get_next()` tensors read the next element in
    each run that needs them."""

    def __init__(self, dataset: Dataset, started: bool):
        self._dataset = dataset
        self._it = iter(dataset._make({})) if started else None
        self._current = None
        self._next_tensors = None

    def _advance(self):
        if self._it is None:
            raise GraphError("the iterator is not initialized: run "
                             "sess.run(iterator.initializer) first (make_initializable_iterator)")
        try:
            self._current = self._it.__next__()
        except StopIteration:
            raise IndexOutOfRangeError("End of sequence: the tf.data iterator has no more "
                                       "elements (tf.errors.OutOfRangeError)") from None
        return self._current

    def _restart(self):
        self._it = iter(self._dataset._make({}))

    @property
    def initializer(self) -> Operation:
        """The op that (re)starts the iterator at the dataset's first element."""
        with building():
            anchor = constant(np.zeros((), np.float32))
            return Operation(apply1(_restart_op, anchor, iterator=self), "iterator_init")

    def get_next(self, name: str | None = None) -> Any:
        """The next element as graph tensors (the same structure as the dataset's elements)."""
        if self._next_tensors is None:
            ds = self._dataset
            with building():
                anchor = constant(np.zeros((), np.float32))
                first = apply1(_next_op, anchor, iterator=self, spec=Spec(
                    tuple(ds._shapes[0]), ds._dtypes[0]))
                flat = [first] + [apply(_component_op, first, iterator=self, index=k,
                                        spec=Spec(tuple(ds._shapes[k]), ds._dtypes[k]))
                                  for k in range(1, len(ds._shapes))]
            self._next_tensors = _pack(ds._structure, flat)
        return self._next_tensors


def _next_forward(anchor, iterator, spec):
    return iterator._advance()[0]


def _component_forward(first, iterator, index, spec):
    return iterator._current[index]


def _spec_infer(anchor: Spec, iterator, spec, index=None):
    return spec.shape, spec.dtype


def _restart_forward(anchor, iterator):
    iterator._restart()
    return anchor


def _restart_infer(anchor: Spec, iterator):
    return anchor.shape, anchor.dtype


# Each reads Python state that changes from run to run: declared random, so the compiler never
# folds them into constants or merges two of them.
_next_op = register("tf_iterator_next", forward=_next_forward, infer=_spec_infer, random=True,
                    onnx_reason="reads a compat.v1 tf.data iterator",
                    doc="The first component of a tf.data iterator's next element.")
_component_op = register("tf_iterator_component", forward=_component_forward,
                         infer=lambda first, iterator, index, spec: (spec.shape, spec.dtype),
                         random=True, onnx_reason="reads a compat.v1 tf.data iterator",
                         doc="Another component of the element tf_iterator_next read.")
_restart_op = register("tf_iterator_restart", forward=_restart_forward, infer=_restart_infer,
                       random=True, onnx_reason="restarts a compat.v1 tf.data iterator",
                       doc="Starts a tf.data iterator over (its initializer).")
