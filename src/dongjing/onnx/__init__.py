"""ONNX export and import (`onnx` extra): `dj.onnx.export`, `export_graph`, `load`,
`to_module`, and `check_with_onnxruntime`. Each op's export is declared on its op record
(``define(..., onnx=...)``); `op_exports.rule_for` reads it."""

from . import control_export, import_control  # noqa: F401  (If/Loop import and export rules)
from .check import check_with_onnxruntime, run_onnxruntime
from .errors import OnnxExportError, OnnxImportError
from .exporter import export, export_graph
from .importer import ImportedGraph, OnnxModule, load, to_module

__all__ = [
    "export", "export_graph", "load", "to_module", "OnnxModule", "ImportedGraph",
    "check_with_onnxruntime", "run_onnxruntime",
    "OnnxExportError", "OnnxImportError",
]
