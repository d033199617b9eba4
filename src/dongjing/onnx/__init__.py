"""ONNX export and import (`onnx` extra): `dj.onnx.export`, `export_graph`, `load`,
`to_module`, and `check_with_onnxruntime`. Each op's export rule is in `op_exports`."""

from .check import check_with_onnxruntime, run_onnxruntime
from .errors import OnnxExportError, OnnxImportError
from .exporter import export, export_graph
from .importer import ImportedGraph, OnnxModule, load, to_module
from .op_exports import NOT_EXPORTABLE, OP_EXPORTS

__all__ = [
    "export", "export_graph", "load", "to_module", "OnnxModule", "ImportedGraph",
    "check_with_onnxruntime", "run_onnxruntime",
    "OnnxExportError", "OnnxImportError", "OP_EXPORTS", "NOT_EXPORTABLE",
]
