"""ONNX import: `to_module(model)` is an nn.Module whose float initializers are Parameters and
whose forward runs the ONNX graph with dongjing ops (so it runs eagerly, in a graph, under
dj.jit, and trains); `load(model)` builds that forward into a `dj.Graph`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..graph.builder import placeholder
from ..graph.graph import Graph
from ..nn.module import Module
from ..nn.parameter import Parameter, buffer
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .errors import OnnxImportError, require_onnx
from .fold_budget import too_big_to_fold
from .graph_order import ordered_nodes, subgraphs
from .import_ops import UNKNOWN_DIM
from .import_source import read_model, tensor_array
from .import_table import imports
from .op_exports import NOT_TRAINABLE

if TYPE_CHECKING:
    import os

    from onnx import ModelProto

_STATIC_RESULTS = {"Shape", "Constant", "ConstantOfShape"}  # eager results known at build time
# ops that only move the entries of a shape value around: the unknown-dim marker survives them
_SHAPE_MOVES = {"Gather", "Unsqueeze", "Squeeze", "Concat", "Slice", "Cast", "Identity"}
_READS_UNKNOWN = {"Reshape", "Expand", "ConstantOfShape"}  # rules that understand the marker
_NEVER_FOLD = {"RNN", "LSTM", "GRU", "If", "Loop", "Dropout"}
_BUFFER_INPUTS = {"BatchNormalization": (3, 4)}  # running mean / var: state, not trained


def _op_types(graph, found: set) -> set:
    helper = require_onnx(OnnxImportError).helper

    for node in graph.node:
        found.add(node.op_type)
        for attr in node.attribute:
            value = helper.get_attribute_value(attr)
            for sub in value if isinstance(value, list) else [value]:
                if hasattr(sub, "node"):
                    _op_types(sub, found)
    return found


def check_supported(model) -> None:
    """Raise OnnxImportError listing every op type of `model` that dongjing cannot import."""
    domains = {o.domain for o in model.opset_import} - {"", "ai.onnx"}
    unknown = sorted(_op_types(model.graph, set()) - set(imports()))
    if unknown or any(n.domain not in ("", "ai.onnx") for n in model.graph.node):
        raise OnnxImportError(
            f"the ONNX model uses op types dongjing cannot import: {', '.join(unknown)}"
            + (f" (custom domains {sorted(domains)})" if domains else ""))


class Context:
    """What the ONNX interpreter knows while building: the opset and which values are static
    (known at import time: constants, int initializers, shapes, and what is folded from them)."""

    def __init__(self, opset: int, subgraph_constants: dict | None = None,
                 base_dir: str | None = None):
        self.opset = opset
        # id(GraphProto) -> (GraphProto, {name: array}): the initializers of Loop/If bodies
        self.subgraph_constants = {} if subgraph_constants is None else subgraph_constants
        self.base_dir = base_dir  # where external data of a Constant may be read, or None
        self.static_names: set = set()
        self.env: dict = {}
        self.marked: list = []  # nodes whose unknown dims a shape value refers to
        self.outputs_wanted = 1  # how many outputs the node being imported names

    def mark(self, t: Tensor, dim: int) -> int:
        """The marker standing for dim `dim` of `t`, unknown until run time."""
        if t._node not in self.marked:
            self.marked.append(t._node)
        return UNKNOWN_DIM - (self.marked.index(t._node) * 64 + dim)

    def marked_dim(self, value: int) -> tuple:
        """(node, dim) a marker stands for."""
        index, dim = divmod(UNKNOWN_DIM - value, 64)
        return self.marked[index], dim

    def is_static(self, t) -> bool:
        """Whether `t` is a value known now (not a parameter, not computed at run time)."""
        if not isinstance(t, Tensor):
            return False
        if t._node is not None:
            return t._node.op.name == "constant"
        return not t.requires_grad

    def static(self, t, what: str, unknown_dims: bool = False) -> np.ndarray:
        """The value of input `what`, which must be known when the model is built (a shape
        value may hold UNKNOWN_DIM entries only where `unknown_dims` says the rule handles
        them)."""
        if isinstance(t, Tensor) and t._node is None:
            value = t._data
        elif isinstance(t, Tensor) and t._node.op.name == "constant":
            value = t._node.attrs["value"]
        else:
            raise OnnxImportError(f"input {what!r} must be a constant (known when the model "
                                  "is built), but it is computed at run time")
        if not unknown_dims and _has_unknown(value):
            raise OnnxImportError(f"input {what!r} depends on a dim that is unknown until run "
                                  "time (a symbolic input dim)")
        return value


def _has_unknown(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype == np.int64 and bool(
        (value <= UNKNOWN_DIM).any())


def _check_unknown(node, ins) -> None:
    """Refuse to compute with a shape value holding an unknown dim (its marker is no number)."""
    if node.op_type in _SHAPE_MOVES or node.op_type in _READS_UNKNOWN:
        return
    for name, t in zip(node.input, ins):
        if isinstance(t, Tensor) and t._node is None and _has_unknown(t._data):
            raise OnnxImportError(
                f"{node.op_type} node {node.name!r} computes with {name!r}, a shape holding a "
                "dim unknown until run time; build with known input shapes (dj.onnx.to_module "
                "runs eagerly or under dj.jit, where every shape is known)")


def run_graph(ctx: Context, graph, env: dict) -> list:
    """Run the nodes of an ONNX GraphProto on `env` (name -> Tensor); the outputs' tensors."""
    helper = require_onnx(OnnxImportError).helper

    table = imports()
    for name, array in ctx.subgraph_constants.get(id(graph), (None, {}))[1].items():
        env[name] = Tensor._make(array)
        ctx.static_names.add(name)
    for node in ordered_nodes(graph, env):
        ins = [env[name] if name else None for name in node.input]
        _check_unknown(node, ins)
        outs_wanted = [name for name in node.output]
        if _foldable(node, ins, ctx):
            try:
                values = _fold(node, ins)
            except Exception as exc:  # the reference evaluator's own error, whatever its type
                raise OnnxImportError(f"{node.op_type} node {node.name or outs_wanted[0]!r} "
                                      f"on constant inputs: {type(exc).__name__}: {exc}") from None
            for name, value in zip(outs_wanted, values):
                if name:
                    env[name] = Tensor._make(np.asarray(value))
                    ctx.static_names.add(name)
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        ctx.env = env
        ctx.outputs_wanted = len(outs_wanted)  # Split's count when no sizes are given
        try:
            result = table[node.op_type](ctx, ins, attrs)
        except OnnxImportError as exc:
            raise OnnxImportError(f"{node.op_type} node {node.name or outs_wanted[0]!r}: "
                                  f"{exc}") from None
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        for i, name in enumerate(outs_wanted):
            if not name:
                continue
            if i >= len(results):
                raise OnnxImportError(f"{node.op_type} node {node.name!r}: output {i} "
                                      f"({name!r}) is not supported")
            env[name] = results[i]
            if node.op_type in _STATIC_RESULTS and results[i]._node is None:
                ctx.static_names.add(name)
    missing = [o.name for o in graph.output if o.name not in env]
    if missing:
        raise OnnxImportError(f"graph outputs {missing} are not produced by any node, input or "
                              "initializer")
    return [env[o.name] for o in graph.output]


def _foldable(node, ins, ctx) -> bool:
    """Whether a node can be computed now: every input static, and no unknown-dim marker
    reaching an op that would compute with it as a number."""
    if node.op_type in _NEVER_FOLD or not ins:
        return False
    if not all(name == "" or name in ctx.static_names for name in node.input):
        return False
    if too_big_to_fold(node, ins):  # computed at run time instead (see fold_budget)
        return False
    return node.op_type in _SHAPE_MOVES or not any(
        t is not None and _has_unknown(t._data) for t in ins)


def _fold(node, ins) -> list:
    """Evaluate a node whose inputs are all static with ONNX's reference implementation."""
    onnx = require_onnx(OnnxImportError, reference=True)
    ReferenceEvaluator = onnx.reference.ReferenceEvaluator

    feeds = {name: np.asarray(t._data) for name, t in zip(node.input, ins) if name}
    return ReferenceEvaluator(node).run(None, feeds)


def _attribute_name(name: str, taken: set) -> str:
    base = re.sub(r"\W", "_", name) or "value"
    if base[0].isdigit():
        base = "p_" + base
    out, i = base, 0
    while out in taken:
        i += 1
        out = f"{base}_{i}"
    taken.add(out)
    return out


class OnnxModule(Module):
    """An imported ONNX model as a Module: float initializers are trainable Parameters (running
    statistics and initializers dongjing exported as not trainable are buffers); calling it
    runs the ONNX graph with dongjing ops.

    `onnx_names` maps each attribute name to its initializer's ONNX name; `input_names` and
    `output_names` are the model's. One output is returned as a tensor, several as a tuple.
    """

    def __init__(self, model: str | os.PathLike[str] | bytes | ModelProto,
                 external_data_dir: str | os.PathLike[str] | None = None) -> None:
        super().__init__()
        proto, self._base_dir = read_model(model, external_data_dir)
        check_supported(proto)
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                          1)
        self.graph_proto = proto.graph
        buffers = {node.input[i] for node in proto.graph.node
                   for i in _BUFFER_INPUTS.get(node.op_type, ()) if i < len(node.input)}
        self.onnx_names: dict = {}
        self._constants: dict = {}
        taken: set = set()
        for init in proto.graph.initializer:
            array = tensor_array(init, self._base_dir)
            if array.dtype.kind != "f":
                self._constants[init.name] = array
                continue
            attr = _attribute_name(init.name, taken)
            if init.name in buffers or init.doc_string == NOT_TRAINABLE:
                self.register_buffer(attr, buffer(array))
            else:
                self.register_parameter(attr, Parameter(array))
            self.onnx_names[attr] = init.name
        self._subgraph_constants = _subgraph_constants(proto.graph, self._base_dir)
        names = set(self._constants) | set(self.onnx_names.values())
        self.input_names = [i.name for i in proto.graph.input if i.name not in names]
        self.output_names = [o.name for o in proto.graph.output]

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise OnnxImportError(f"the model takes {len(self.input_names)} inputs "
                                  f"({', '.join(self.input_names)}), got {len(inputs)}")

        ctx = Context(self.opset, self._subgraph_constants, self._base_dir)
        env = {name: as_tensor(x) for name, x in zip(self.input_names, inputs)}
        for name, array in self._constants.items():
            env[name] = Tensor._make(array)
            ctx.static_names.add(name)
        tables = dict(self.named_parameters())
        tables.update(self.named_buffers())
        for attr, onnx_name in self.onnx_names.items():
            env[onnx_name] = tables[attr]
        outs = run_graph(ctx, self.graph_proto, env)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def extra_repr(self) -> str:
        return f"inputs={self.input_names}, outputs={self.output_names}, opset={self.opset}"


def _subgraph_constants(graph, base_dir) -> dict:
    """id(body) -> (body, {name: array}) of the initializers of every Loop/If body inside
    `graph` (the body itself is kept: protobuf hands out the same object only while it lives,
    so its id stays a valid key)."""
    found: dict = {}
    for node in graph.node:
        for sub in subgraphs(node):
            found[id(sub)] = (sub, {init.name: tensor_array(init, base_dir)
                                    for init in sub.initializer})
            found.update(_subgraph_constants(sub, base_dir))
    return found


def to_module(model: str | os.PathLike[str] | bytes | ModelProto,
              external_data_dir: str | os.PathLike[str] | None = None) -> OnnxModule:
    """An nn.Module running the ONNX model (a path, bytes or ModelProto) with dongjing ops;
    its float initializers are trainable Parameters, so it can be fine-tuned. Raises
    OnnxImportError listing every unsupported op type at once.

    Weights kept as external data are read from the model file's folder, only inside it; a
    model given as bytes or a ModelProto reads them only from `external_data_dir`."""
    return OnnxModule(model, external_data_dir)


class ImportedGraph(Graph):
    """A `dj.Graph` built from an ONNX model: `inputs` (name -> placeholder), `outputs` (name ->
    symbolic tensor), `module` (the OnnxModule holding the initializers as Variables)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.inputs: dict = {}
        self.outputs: dict = {}
        self.module: OnnxModule | None = None


def _dims(value_info) -> tuple:
    shape = value_info.type.tensor_type.shape
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in shape.dim)


def load(model, external_data_dir=None) -> ImportedGraph:
    """Build an ONNX model (a path, bytes or ModelProto) into a dongjing Graph: one placeholder
    per input (symbolic dims -> None), its initializers as Variables (external data: see
    `to_module`).

    >>> g = dj.onnx.load(dj.onnx.export(dj.nn.Linear(3, 2), dj.ones(1, 3)))
    >>> dj.Session(g).run(g.outputs["output"], {g.inputs["x"]: np.ones((1, 3))}).shape
    (1, 2)
    """

    module = to_module(model, external_data_dir)
    helper = require_onnx(OnnxImportError).helper

    graph = ImportedGraph(module.graph_proto.name or "onnx")
    graph.module = module
    by_name = {i.name: i for i in module.graph_proto.input}
    with graph.as_default():
        for name in module.input_names:
            info = by_name[name]
            dtype = helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)
            graph.inputs[name] = placeholder(_dims(info), dtype, name=name)
        outs = module(*graph.inputs.values())
    outs = outs if isinstance(outs, tuple) else (outs,)
    graph.outputs = dict(zip(module.output_names, outs))
    return graph
