"""Run an exported model in onnxruntime and compare it with dongjing (the demo's one-liner)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..autograd import no_grad
from ..nn.module import Module
from ..runtime.fetch_structure import flatten
from ..tensor import Tensor
from .errors import OnnxExportError
from .exporter import export

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ..nn.module import Module
    from ..types import TensorLike


def run_onnxruntime(model_proto, feeds: dict) -> list:
    """The outputs of `model_proto` (a ModelProto) run by onnxruntime on `feeds` (name -> array)."""
    try:
        import onnxruntime
    except ImportError:  # pragma: no cover - depends on the environment
        raise OnnxExportError("running an ONNX model needs onnxruntime: "
                              "pip install 'dongjing[onnx]'") from None
    session = onnxruntime.InferenceSession(model_proto.SerializeToString(),
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def check_with_onnxruntime(model: Module | Callable[..., object],
                           example_args: TensorLike | Sequence[TensorLike],
                           opset: int = 17) -> float:
    """Export `model` (a module or function) on `example_args`, run it in onnxruntime, and return
    the largest absolute difference from dongjing's own outputs (modules in eval mode).

    >>> dj.onnx.check_with_onnxruntime(dj.nn.Linear(3, 2), dj.ones(4, 3)) < 1e-5
    True
    """
    args = tuple(example_args) if isinstance(example_args, (tuple, list)) else (example_args,)
    proto = export(model, args, opset=opset)
    leaves: list = []
    flatten(args, leaves, lambda v: isinstance(v, (Tensor, np.ndarray)))
    names = [i.name for i in proto.graph.input]
    feeds = {name: np.asarray(v.numpy() if isinstance(v, Tensor) else v)
             for name, v in zip(names, leaves)}
    got = run_onnxruntime(proto, feeds)
    flags = [(m, m.training) for m in model.modules()] if isinstance(model, Module) else []
    try:
        if isinstance(model, Module):
            model.eval()
        with no_grad():
            want: list = []
            flatten(model(*args), want, lambda v: isinstance(v, Tensor))
    finally:
        for module, training in flags:
            module.training = training
    return max((float(np.max(np.abs(np.asarray(g, np.float64) - w.numpy())))
                for g, w in zip(got, want) if np.size(g)), default=0.0)
