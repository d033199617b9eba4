"""The errors of ONNX export and import."""

from __future__ import annotations

from ..errors import DongjingError


class OnnxExportError(DongjingError, ValueError):
    """A graph that cannot be written as ONNX: an op with no export, a too-old opset, ..."""


class OnnxImportError(DongjingError, ValueError):
    """An ONNX model that dongjing cannot build: unsupported op types or attributes."""


def require_onnx(error: type = OnnxExportError, reference: bool = False):
    """The `onnx` package (with `onnx.reference` loaded when asked), or a clear `error` saying
    how to install it: the one place dj.onnx imports it (an optional dependency)."""
    try:
        import onnx
        if reference:
            import onnx.reference
    except ImportError:  # pragma: no cover - depends on the environment
        raise error(
            "dj.onnx needs the `onnx` package: pip install 'dongjing[onnx]' (or onnx onnxruntime)"
        ) from None
    return onnx
