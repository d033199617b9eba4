"""ONNX export: trace a model or function into a dongjing Graph (as dj.jit does), then write each
node through the export its op record declares (`op_exports.rule_for`); parameters become
initializers named after them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes
from ..errors import DongjingError
from ..graph.builder import placeholder, to_node
from ..graph.graph import Graph
from ..nn.module import Module
from ..runtime.autograph import entry
from ..runtime.fetch_structure import flatten
from ..runtime.interpreter import needed_nodes
from ..runtime.signature import map_tensors
from ..runtime.tracing import _parameter_names, _placeholder_name
from ..tensor import Tensor
from .emitter import MIN_OPSET, Emitter, value_info
from .errors import OnnxExportError, require_onnx
from .op_exports import Onnx, rule_for
from .patterns import recognize
from .rnn_export import recurrent_nodes

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Mapping, Sequence

    from onnx import ModelProto

    from ..types import TensorLike


# --- one node, many nodes ----------------------------------------------------------------
def _where(node) -> str:
    return f" (node %{node.name}" + (f", built at {node.source})" if node.source else ")")


def emit_node(e: Emitter, node):
    """Export one dongjing node through its rule; returns the ONNX name(s) of its value."""
    name = node.op.name
    rule, reason = rule_for(node.op)
    if rule is None:
        raise OnnxExportError(f"op {name!r}{_where(node)} has no ONNX export: {reason}")
    ins = [e.values[i] for i in node.inputs]
    e.current = node
    try:
        recognised = recognize(e, node)
        if recognised is not None:
            return recognised
        if isinstance(rule, Onnx):
            return _direct(e, node, rule, ins)
        return rule(e, node, ins)
    except OnnxExportError as exc:
        where = _where(node)
        if exc.args and where not in str(exc.args[0]):
            exc.args = (f"op {name!r}{where}: {exc.args[0]}",) + exc.args[1:]
        raise
    finally:
        e.current = None


def _direct(e: Emitter, node, rule: Onnx, ins: list):
    if rule.cast is not None:
        specs = [i.dtype for i in node.inputs]
        if rule.cast == "out":
            target = node.dtype
        else:
            target = specs[0]
            for d in specs[1:]:
                target = dtypes.promote(target, d)
        ins = [e.cast(n, d, target) for n, d in zip(ins, specs)]
    attrs = {onnx_name: node.attrs[dj_name] for onnx_name, dj_name in rule.attrs.items()}
    attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in attrs.items()}
    return e.node(rule.op_type, ins, **attrs)


def emit_nodes(e: Emitter, nodes) -> None:
    """Export `nodes` (in order), skipping those already bound."""
    for node in nodes:
        if node not in e.values:
            e.values[node] = emit_node(e, node)


# --- a whole graph -----------------------------------------------------------------------
def check_opset(opset) -> int:
    """`opset` as an int this exporter and the installed `onnx` both support."""
    onnx = require_onnx()
    newest = onnx.defs.onnx_opset_version()
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)):
        raise OnnxExportError(f"opset must be an int, got {opset!r}")
    if not MIN_OPSET <= int(opset) <= newest:
        raise OnnxExportError(f"opset {opset} is not supported: dj.onnx exports opsets "
                              f"{MIN_OPSET} to {newest} (the installed onnx's newest)")
    return int(opset)


def _dim_names(name: str, shape, axes) -> dict:
    """Symbolic names of the dynamic dims of one input or output."""
    names = {}
    if isinstance(axes, dict):
        names.update({int(a) % max(len(shape), 1): str(v) for a, v in axes.items()})
    elif axes is not None:
        names.update({int(a) % max(len(shape), 1): f"{name}_dim{int(a)}" for a in axes})
    for i, d in enumerate(shape):
        if d is None and i not in names:
            names[i] = f"{name}_dim{i}"
    return names


def build_model(graph, fetch_nodes: list, opset: int = 17, output_names=None,
                dynamic_axes: dict | None = None):
    """The checked ModelProto computing `fetch_nodes` of `graph` from its placeholders."""
    onnx = require_onnx()
    opset = check_opset(opset)
    dynamic_axes = dynamic_axes or {}
    e = Emitter(opset)
    needed = needed_nodes(fetch_nodes, set())
    for node in needed:
        if node.op.name == "placeholder":
            e._taken.add(node.name)
            e.inputs.append(value_info(node.name, node.dtype, node.shape,
                                       _dim_names(node.name, node.shape,
                                                  dynamic_axes.get(node.name))))
            e.values[node] = node.name
    emit_nodes(e, [n for n in needed if n.op.name == "variable"])  # names kept as they are
    emit_nodes(e, needed)
    output_names = _output_names(output_names, len(fetch_nodes))
    known = [i.name for i in e.inputs] + output_names
    unknown = [name for name in dynamic_axes if name not in known]
    if unknown:
        raise OnnxExportError(f"dynamic_axes names {unknown}, which are not inputs or outputs "
                              f"of the model ({', '.join(known)})")
    outputs = []
    for fetch, out_name in zip(fetch_nodes, output_names):
        if out_name in e._taken:
            raise OnnxExportError(f"output name {out_name!r} is already the name of a value")
        e._taken.add(out_name)
        value = e.values[fetch]
        if isinstance(value, list):
            raise OnnxExportError(f"fetch {fetch.name!r} is a control-flow op, not a value")
        e.node("Identity", [value], outputs=[out_name], name=out_name)
        outputs.append(value_info(out_name, fetch.dtype, fetch.shape,
                                  _dim_names(out_name, fetch.shape, dynamic_axes.get(out_name))))
    model = onnx.helper.make_model(
        e.graph(graph.name, outputs), producer_name="dongjing",
        opset_imports=[onnx.helper.make_opsetid("", opset)])
    model.ir_version = onnx.helper.find_min_ir_version_for(list(model.opset_import))
    try:
        onnx.checker.check_model(model, full_check=True)
    except onnx.checker.ValidationError as exc:
        raise OnnxExportError(f"the exported model fails onnx.checker: {exc}") from None
    except onnx.shape_inference.InferenceError as exc:
        raise OnnxExportError(f"the exported model fails ONNX shape inference: {exc}") from None
    return model


def _output_names(output_names, n: int) -> list:
    if output_names is None:
        return ["output"] if n == 1 else [f"output_{i}" for i in range(n)]
    names = [str(s) for s in output_names]
    if len(names) != n:
        raise OnnxExportError(f"output_names has {len(names)} names for {n} outputs")
    return names


def _fetch_nodes(graph, fetches) -> list:
    items = list(fetches) if isinstance(fetches, (list, tuple)) else [fetches]
    nodes = []
    for item in items:
        node = item._node if isinstance(item, Tensor) else item
        if node is None or getattr(node, "graph", None) is not graph:
            raise OnnxExportError(f"fetch {item!r} is not a value of graph {graph.name!r}")
        nodes.append(node)
    return nodes


def export_graph(graph, fetches, path=None, opset: int = 17, output_names=None,
                 dynamic_axes: dict | None = None):
    """Write the part of a hand-built `dj.Graph` computing `fetches` as an ONNX model.

    Placeholders become the model's inputs (their `None` dims symbolic), Variables its
    initializers. Returns the ModelProto (also saved to `path` when given).
    """
    model = build_model(graph, _fetch_nodes(graph, fetches), opset, output_names, dynamic_axes)
    if path is not None:
        require_onnx().save(model, str(path))
    return model


# --- tracing -----------------------------------------------------------------------------
def _converted(call, module):
    """`call` with its Python `if` / `while` / `for` on tensors converted, as `dj.jit` does."""
    return entry(call, module)[0]


def trace(model_or_fn, example_args, input_names=None, dynamic_axes: dict | None = None):
    """Trace `model_or_fn(*example_args)` into a Graph (modules in eval mode); returns
    (graph, output nodes). Tensor arguments become placeholders named after the function's
    parameters (or `input_names`), with `None` at their `dynamic_axes`."""
    fn = model_or_fn
    if isinstance(getattr(fn, "module", None), Module):  # dj.jit(module): export the module
        fn = fn.module
    is_module = isinstance(fn, Module)
    call = fn.__call__ if is_module else fn
    if not callable(call):
        raise TypeError(f"dj.onnx.export needs a function or an nn.Module, got {type(fn)}")
    args = tuple(example_args) if isinstance(example_args, (tuple, list)) else (example_args,)
    names = _parameter_names(call)
    dynamic_axes = dynamic_axes or {}
    made: list = []

    def make(path: str, value):
        data = value._data if isinstance(value, Tensor) else np.asarray(value)
        i = len(made)
        if input_names is not None and i >= len(input_names):
            raise OnnxExportError(f"input_names has {len(input_names)} names, but the example "
                                  "arguments hold more tensors")
        name = input_names[i] if input_names is not None else _placeholder_name(path, names)
        axes = dynamic_axes.get(name, ())
        axes = {int(a) % max(data.ndim, 1) for a in axes}
        shape = tuple(None if i in axes else d for i, d in enumerate(data.shape))
        t = placeholder(shape, data.dtype, name=name)
        made.append(t)
        return t

    flags = [(m, m.training) for m in fn.modules()] if is_module else []
    graph = Graph(name=getattr(fn, "__name__", None) or type(fn).__name__)
    try:
        if is_module:
            fn.eval()
        with graph.as_default():
            sym_args, _ = map_tensors(args, {}, make)
            if input_names is not None and len(input_names) != len(made):
                raise OnnxExportError(f"input_names has {len(input_names)} names for "
                                      f"{len(made)} tensor arguments")
            try:
                with recurrent_nodes(fn):  # nn.RNN / LSTM / GRU as ONNX recurrent nodes
                    out = _converted(call, fn if is_module else None)(*sym_args)
            except DongjingError as exc:
                if exc.args and isinstance(exc.args[0], str):
                    exc.args = (exc.args[0] + " [raised while dj.onnx.export traced the model]",)
                raise
            leaves: list = []
            flatten(out, leaves, lambda v: isinstance(v, Tensor))
            if not leaves:
                raise OnnxExportError("the traced function returned no tensor to export")
            out_nodes = [to_node(graph, t) for t in leaves]
    finally:
        for module, training in flags:
            module.training = training
    return graph, out_nodes


def export(model_or_fn: Module | Callable[..., object],
           example_args: TensorLike | Sequence[TensorLike],
           path: str | os.PathLike[str] | None = None, opset: int = 17,
           input_names: Sequence[str] | None = None, output_names: Sequence[str] | None = None,
           dynamic_axes: Mapping[str, Mapping[int, str] | Sequence[int]] | None = None
           ) -> ModelProto:
    """Export a model (or a function of tensors) to ONNX by tracing it on `example_args`.

    Modules are traced in eval mode (restored afterwards). Parameters and buffers become
    initializers named after them (`0.weight`); `dynamic_axes` (e.g. `{"x": {0: "batch"}}`, or
    `{"x": [0]}`) makes dims symbolic, so the model accepts any size there. `dj.cond` exports
    as `If`, `dj.while_loop` as `Loop`. An op with no export raises OnnxExportError naming the
    op and the line of your code that built it. Returns the checked ModelProto (also saved to
    `path` when given).

    Examples:
        >>> model = dj.nn.Linear(3, 2)
        >>> proto = dj.onnx.export(model, dj.ones(4, 3), dynamic_axes={"x": [0]})
        >>> [i.name for i in proto.graph.initializer]
        ['weight', 'bias']
    """
    graph, out_nodes = trace(model_or_fn, example_args, input_names, dynamic_axes)
    model = build_model(graph, out_nodes, opset, output_names, dynamic_axes)
    if path is not None:
        require_onnx().save(model, str(path))
    return model
