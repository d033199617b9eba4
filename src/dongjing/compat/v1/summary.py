"""tf.summary: scalar and histogram summaries, merged, run to serialized `Summary` protos, and
`FileWriter` writing real TensorBoard event files (with the graph), through the `tensorboard`
package's writer and protos (`pip install dongjing[tensorboard]`)."""

from __future__ import annotations

import re
import time

import numpy as np

from ...graph.builder import constant
from ...tensor import Tensor
from .graph_collections import GraphKeys, add_to_collection, get_collection
from .graph_state import state_of
from .graphs import building, get_default_graph
from .unsupported import module_getattr, not_provided

__getattr__ = module_getattr("tf.summary")


def _protos():
    try:
        from tensorboard.compat.proto import summary_pb2
    except ImportError:
        not_provided("tf.summary without the `tensorboard` package (pip install "
                     "'dongjing[tensorboard]')")
    return summary_pb2


class SummaryTensor:
    """What tf.summary.scalar / histogram / merge give: fetched by `sess.run`, it is a
    serialized `Summary` protocol buffer (bytes), as in TF."""

    def __init__(self, kind: str, tag: str, tensor=None, parts=()):
        self.kind, self.tag, self.tensor, self.parts = kind, tag, tensor, list(parts)
        self.name = tag

    def _fetch_tensors(self) -> tuple:
        if self.kind == "merged":
            return tuple(p._fetch_tensors() for p in self.parts)
        return (self.tensor,)

    def _finish(self, values) -> bytes:
        summary = _protos().Summary()
        self._add_values(summary, values)
        return summary.SerializeToString()

    def _add_values(self, summary, values) -> None:
        if self.kind == "merged":
            for part, value in zip(self.parts, values):
                part._add_values(summary, value)
        elif self.kind == "scalar":
            summary.value.add(tag=self.tag, simple_value=float(np.asarray(values[0])))
        else:
            summary.value.add(tag=self.tag, histo=_histogram(np.asarray(values[0])))

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.tag}' summary ({self.kind})>"


def _register(summary: SummaryTensor, collections) -> SummaryTensor:
    for key in collections if collections is not None else [GraphKeys.SUMMARIES]:
        add_to_collection(key, summary)
    return summary


def scalar(name: str, tensor, collections=None, family=None) -> SummaryTensor:
    """A summary of a scalar tensor, tagged `name` (inside the current name scope)."""
    with building((tensor,)) as graph:
        tensor = tensor if isinstance(tensor, Tensor) else _constant(tensor)
        if tensor.shape not in ((), (1,)):
            raise ValueError(f"tf.summary.scalar {name!r}: needs a scalar, got shape "
                             f"{tensor.shape}")
        return _register(SummaryTensor("scalar", _tag(graph, name, family), tensor),
                         collections)


def histogram(name: str, values, collections=None, family=None) -> SummaryTensor:
    """A histogram summary of `values` (TF's bucket boundaries), tagged `name`."""
    with building((values,)) as graph:
        values = values if isinstance(values, Tensor) else _constant(values)
        return _register(SummaryTensor("histogram", _tag(graph, name, family), values),
                         collections)


def merge(inputs, collections=None, name=None) -> SummaryTensor:
    """One summary holding all of `inputs`' values."""
    summary = SummaryTensor("merged", name or "Merge/MergeSummary", parts=list(inputs))
    for key in collections or ():
        add_to_collection(key, summary)
    return summary


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """The merge of every summary in collection `key` (None when there are none)."""
    parts = get_collection(key, scope)
    return merge(parts, name=name) if parts else None


def _tag(graph, name: str, family) -> str:
    """The summary's tag: TF's cleaned name (characters other than letters, digits and `_./-`
    become `_`) inside the current name scope."""
    prefix = state_of(graph).name_scope
    name = re.sub(r"[^-/\w.]", "_", name).lstrip("/")
    return f"{prefix}{family}/{name}" if family else f"{prefix}{name}"


def _constant(value):
    return constant(np.asarray(value, np.float32))


def _bucket_limits() -> np.ndarray:
    """TF's default histogram buckets: +-1e-12 * 1.1^k up to 1e20, and 0."""
    positive = []
    v = 1e-12
    while v < 1e20:
        positive.append(v)
        v *= 1.1
    positive = np.array(positive)
    return np.concatenate([-positive[::-1], [0.0], positive, [np.finfo(np.float64).max]])


_LIMITS = _bucket_limits()


def _histogram(values: np.ndarray):
    summary_pb2 = _protos()
    flat = values.astype(np.float64).ravel()
    proto = summary_pb2.HistogramProto()
    if flat.size == 0:
        return proto
    proto.min, proto.max = float(flat.min()), float(flat.max())
    proto.num, proto.sum = float(flat.size), float(flat.sum())
    proto.sum_squares = float((flat * flat).sum())
    counts = np.bincount(np.searchsorted(_LIMITS, flat, side="left"), minlength=len(_LIMITS))
    used = np.nonzero(counts)[0]
    first, last = max(used[0] - 1, 0), min(used[-1] + 1, len(_LIMITS) - 1)
    proto.bucket_limit.extend(_LIMITS[first:last + 1].tolist())
    proto.bucket.extend(counts[first:last + 1].astype(np.float64).tolist())
    return proto


class FileWriter:
    """Writes TensorBoard event files in `logdir`: `add_summary(summary, global_step)` (the
    bytes `sess.run` gives for a summary), `add_graph(graph)`; `graph=` adds it at once."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        try:
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
        except ImportError:
            not_provided("tf.summary.FileWriter without the `tensorboard` package (pip "
                         "install 'dongjing[tensorboard]')")
        self._logdir = str(logdir)
        self._writer = EventFileWriter(self._logdir, max_queue, flush_secs,
                                       filename_suffix or "")
        if graph is not None or graph_def is not None:
            self.add_graph(graph if graph is not None else get_default_graph())

    def get_logdir(self) -> str:
        """The directory written to."""
        return self._logdir

    def add_event(self, event) -> None:
        """Write an `Event` proto."""
        self._writer.add_event(event)

    def add_summary(self, summary, global_step=None) -> None:
        """Write a summary (serialized bytes or a `Summary` proto) at `global_step`."""
        from tensorboard.compat.proto import event_pb2, summary_pb2

        if isinstance(summary, (bytes, bytearray)):
            summary = summary_pb2.Summary.FromString(bytes(summary))
        event = event_pb2.Event(wall_time=time.time(), summary=summary)
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def add_graph(self, graph, global_step=None, graph_def=None) -> None:
        """Write `graph` (a dongjing graph; its nodes, ops and inputs) for TensorBoard's
        Graphs tab."""
        from tensorboard.compat.proto import event_pb2

        event = event_pb2.Event(wall_time=time.time(),
                                graph_def=_graph_def(graph).SerializeToString())
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def flush(self) -> None:
        """Write pending events to disk."""
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the file."""
        self._writer.close()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False


_DTYPES = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
           "int64": 9, "bool": 10, "float16": 19}


def _graph_def(graph):
    from tensorboard.compat.proto import attr_value_pb2, graph_pb2, tensor_shape_pb2

    graph_def = graph_pb2.GraphDef()
    for node in graph.nodes:
        node_def = graph_def.node.add(name=node.name, op=node.op.name,
                                      input=[i.name for i in node.inputs])
        if node.dtype is not None:
            node_def.attr["dtype"].CopyFrom(
                attr_value_pb2.AttrValue(type=_DTYPES.get(np.dtype(node.dtype).name, 0)))
            shape = tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else int(d))
                     for d in node.shape])
            node_def.attr["_output_shapes"].CopyFrom(attr_value_pb2.AttrValue(
                list=attr_value_pb2.AttrValue.ListValue(shape=[shape])))
    return graph_def
