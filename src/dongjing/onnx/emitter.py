"""The ONNX graph under construction: value names, nodes, initializers and typed inputs/outputs.

One `Emitter` per ONNX graph (the main graph, or an If / Loop body): export rules call
`node(...)` and `const(...)` on it and get back the names of the values they made.
"""

from __future__ import annotations

import numpy as np

from ..backends import backend_of, is_array
from .errors import OnnxExportError, require_onnx
from .patterns import prune

MIN_OPSET = 13
MAX_OPSET = 21


def elem_type(dtype) -> int:
    """The ONNX TensorProto element type of a NumPy dtype."""
    helper = require_onnx().helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def value_info(name: str, dtype, shape, dim_names: dict | None = None):
    """A typed ValueInfo; `None` dims become a named symbol (from `dim_names`) or stay unnamed."""
    helper = require_onnx().helper

    dims = []
    for i, d in enumerate(shape):
        if d is None:
            dims.append((dim_names or {}).get(i))
        else:
            dims.append(int(d))
    return helper.make_tensor_value_info(name, elem_type(dtype), dims)


def host_array(value, dtype=None) -> np.ndarray:
    """`value` (a scalar, a nested list, or an array of any backend) as a C-ordered NumPy
    array of `dtype`: the form ONNX tensors are made from."""
    if is_array(value) and not isinstance(value, np.ndarray):
        value = backend_of(value).to_numpy(value)
    return np.array(np.asarray(value, dtype=dtype), order="C")


class Emitter:
    """Collects the nodes of one ONNX graph. `values` maps a dongjing Node to its ONNX name
    (or a list of names, for control-flow ops with several results)."""

    def __init__(self, opset: int, prefix: str = "", parent: Emitter | None = None):
        self.onnx = require_onnx()
        self.opset = opset
        self.prefix = prefix
        self.parent = parent
        self.nodes: list = []
        self.initializers: list = []
        self.inputs: list = []
        self.values: dict = {}
        self._taken: set = set() if parent is None else parent._taken
        self.current = None  # the dongjing node being exported (for error messages)

    def fresh(self, base: str) -> str:
        """A value name used nowhere else in the model (sub-graphs included)."""
        base = self.prefix + base
        name, i = base, 0
        while name in self._taken:
            i += 1
            name = f"{base}__{i}"
        self._taken.add(name)
        return name

    def node(self, op_type: str, inputs, n_out: int = 1, name: str | None = None,
             outputs: list | None = None, **attrs):
        """Append an ONNX node; return its output name (or the list of names if n_out > 1).

        Outputs are named after `name` (default: the dongjing node being exported), or exactly
        `outputs` (names the caller reserved)."""
        base = name or (self.current.name if self.current is not None else op_type.lower())
        outs = list(outputs) if outputs is not None else [
            self.fresh(base if n_out == 1 else f"{base}_{i}") for i in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.onnx.helper.make_node(
            op_type, list(inputs), outs, name=self.fresh(f"{op_type}:{base}"), **attrs))
        return outs[0] if n_out == 1 else outs

    def const(self, value, dtype=None, name: str | None = None,
              initializer: bool = False, doc: str = "") -> str:
        """A constant value: a Constant node, or (`initializer=True`, for parameters and other
        state) an initializer of the main graph, which importers treat as trainable.

        `value` is a Python scalar or (nested) list, or an array of any backend: ONNX
        constants are host arrays, so device data is copied to the host here."""
        out = self.fresh(name or "const")
        tensor = self.onnx.numpy_helper.from_array(host_array(value, dtype), out)
        tensor.doc_string = doc
        if initializer and self.parent is None:
            self.initializers.append(tensor)
        else:
            self.nodes.append(self.onnx.helper.make_node(
                "Constant", [], [out], name=self.fresh(f"Constant:{out}"), value=tensor))
        return out

    def ints(self, values, name: str = "ints") -> str:
        """An int64 1-d constant (shapes, axes, pads)."""
        return self.const(list(values), np.int64, name=name)

    def int64(self, value: int, name: str = "int64") -> str:
        """An int64 0-d constant (an index, an axis, a depth)."""
        return self.const(value, np.int64, name=name)

    def tensor(self, values, dtype):
        """`values` as an ONNX TensorProto of `dtype`, for a tensor-valued attribute (e.g. the
        fill value of ConstantOfShape)."""
        return self.onnx.numpy_helper.from_array(host_array(values, dtype))

    def cast(self, name: str, from_dtype, to_dtype) -> str:
        """`name` cast to `to_dtype` (no node when the dtypes already agree)."""
        if np.dtype(from_dtype) == np.dtype(to_dtype):
            return name
        return self.node("Cast", [name], name=f"{name}_as_{np.dtype(to_dtype).name}",
                         to=elem_type(to_dtype))

    def error(self, message: str) -> OnnxExportError:
        """The export error for a rule to raise (rules live in `dongjing.ops`, outside this
        package): ``raise e.error("...")``."""
        return OnnxExportError(message)

    def graph(self, name: str, outputs: list):
        """The GraphProto of everything emitted that the outputs use (inputs and initializers
        included)."""
        nodes = prune(self.nodes, [o.name for o in outputs])
        return self.onnx.helper.make_graph(nodes, name, self.inputs, outputs,
                                           initializer=self.initializers)
