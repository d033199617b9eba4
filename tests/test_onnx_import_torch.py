"""Models exported by PyTorch's TorchScript exporter (opsets 17 and 21) import into dongjing
with PyTorch's outputs and input gradients, eagerly and as a dj.Session at optimize=2."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import dongjing as dj

pytest.importorskip("onnx")
torch = pytest.importorskip("torch")


def _models():
    tnn = torch.nn
    torch.manual_seed(0)
    layer = tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    return {
        "transformer_encoder": (lambda: tnn.TransformerEncoder(layer, 2,
                                                               enable_nested_tensor=False),
                                (2, 5, 8)),
        "mlp_layer_norm": (lambda: tnn.Sequential(tnn.Linear(4, 8), tnn.LayerNorm(8),
                                                  tnn.GELU(), tnn.Linear(8, 3)), (3, 4)),
        "gelu_tanh": (lambda: tnn.GELU("tanh"), (3, 4)),
        "conv_transpose": (lambda: tnn.ConvTranspose2d(3, 4, 3, stride=2, padding=1,
                                                       output_padding=1), (2, 3, 4, 5)),
        "group_norm": (lambda: tnn.GroupNorm(2, 4), (2, 4, 3, 3)),
        "pixel_shuffle": (lambda: tnn.PixelShuffle(2), (1, 8, 3, 3)),
    }


def _export(model, x, opset: int) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buffer, dynamo=False, opset_version=opset,
                          input_names=["x"], output_names=["y"])
    return buffer.getvalue()


@pytest.mark.parametrize("opset", [17, 21])
@pytest.mark.parametrize("name", sorted(_models()))
def test_torch_export_imports_with_same_outputs_and_gradients(name, opset):
    make, shape = _models()[name]
    torch.manual_seed(1)
    model = make().eval()
    x = torch.randn(*shape, requires_grad=True)
    want = model(x)
    (want * want).sum().backward()
    proto = _export(model, x.detach(), opset)

    imported = dj.onnx.to_module(proto)
    xd = dj.tensor(x.detach().numpy(), requires_grad=True)
    got = imported(xd)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    (got * got).sum().backward()
    np.testing.assert_allclose(xd.grad.numpy(), x.grad.numpy(), rtol=1e-3, atol=1e-4)

    graph = dj.onnx.load(proto)
    static = dj.Session(graph, optimize=2).run(graph.outputs["y"],
                                               {graph.inputs["x"]: x.detach().numpy()})
    np.testing.assert_allclose(static, want.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_torch_parameter_gradients_through_imported_layer_norm_mlp():
    make, shape = _models()["mlp_layer_norm"]
    torch.manual_seed(2)
    model = make().eval()
    x = torch.randn(*shape)
    (model(x) ** 2).sum().backward()
    imported = dj.onnx.to_module(_export(model, x, 17))
    (imported(dj.tensor(x.numpy())) ** 2).sum().backward()
    params = dict(imported.named_parameters())
    for torch_name, p in model.named_parameters():
        attr = next(a for a, o in imported.onnx_names.items() if o == torch_name)
        np.testing.assert_allclose(params[attr].grad.numpy(), p.grad.numpy(), rtol=1e-3,
                                   atol=1e-5)


@pytest.mark.parametrize("name", ["transformer_encoder"])  # each export takes seconds
def test_default_dynamo_exporter_models_import(name):
    """torch.onnx.export's default (dynamo) exporter, which needs onnxscript (the onnx extra)."""
    pytest.importorskip("onnxscript")
    make, shape = _models()[name]
    torch.manual_seed(3)
    model = make().eval()
    x = torch.randn(*shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, (x,), dynamo=True, input_names=["x"],
                                    output_names=["y"])
    imported = dj.onnx.to_module(program.model_proto)
    np.testing.assert_allclose(imported(x.numpy()).numpy(), model(x).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
