"""ONNX import: round trips (export -> import -> same outputs and gradients, eagerly, as a graph
at every optimisation level, under dj.jit), control flow back from If / Loop, models exported by
PyTorch (or a vendored one), and the error listing every unsupported op type."""

from __future__ import annotations

import io
import os
import warnings

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
from dongjing.onnx import OnnxImportError

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

VENDORED = os.path.join(os.path.dirname(__file__), "data", "torch_cnn.onnx")


def _cnn():
    dj.manual_seed(4)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 3 * 3, 5))


def _grads(model, x):
    model.zero_grad()
    out = model(x)
    (out * out).sum().backward()
    return out.numpy(), [p.grad.numpy() for p in model.parameters()]


def test_round_trip_same_outputs_and_gradients():
    model = _cnn().eval()
    x = dj.randn(2, 1, 6, 6)
    imported = dj.onnx.to_module(dj.onnx.export(model, x, dynamic_axes={"x": [0]}))
    assert set(imported.onnx_names.values()) == {
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
        "5.weight", "5.bias"}
    assert {name for name, _ in imported.named_buffers()} == {"p_1_running_mean",
                                                               "p_1_running_var"}
    want_out, want_grads = _grads(model, x)
    got_out, got_grads = _grads(imported, x)
    np.testing.assert_allclose(got_out, want_out, rtol=1e-5, atol=1e-5)
    by_name = dict(imported.named_parameters())
    for (name, _), g in zip(model.named_parameters(), want_grads):
        attr = next(a for a, o in imported.onnx_names.items() if o == name)
        np.testing.assert_allclose(by_name[attr].grad.numpy(), g, rtol=1e-4, atol=1e-5)


def test_imported_graph_runs_at_every_level_and_under_jit():
    model = _cnn().eval()
    proto = dj.onnx.export(model, dj.randn(2, 1, 6, 6), dynamic_axes={"x": [0]})
    graph = dj.onnx.load(proto)
    assert graph.inputs["x"].shape == (None, 1, 6, 6)
    for n in (2, 5):
        x = np.random.default_rng(n).standard_normal((n, 1, 6, 6)).astype(np.float32)
        want = model(dj.tensor(x)).numpy()
        for level in (0, 1, 2):
            got = dj.Session(graph, optimize=level).run(graph.outputs["output"],
                                                        {graph.inputs["x"]: x})
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        jitted = dj.jit(dj.onnx.to_module(proto))
        np.testing.assert_allclose(jitted(dj.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)


def test_fine_tuning_an_imported_model_lowers_the_loss():
    dj.manual_seed(5)
    proto = dj.onnx.export(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)),
                           dj.randn(3, 4))
    model = dj.onnx.to_module(proto)
    opt = dj.optim.SGD(model.parameters(), lr=0.1)
    x, y = dj.randn(16, 4), dj.randn(16, 1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8


def test_control_flow_round_trip():
    w = dj.randn(3, 3)

    def f(x):
        y = dj.cond(x.sum() > 0, lambda: x @ w, lambda: -x)
        return dj.while_loop(lambda t, h: t < 3, lambda t, h: (t + 1, dj.tanh(h @ w + y)),
                             (dj.tensor(0), y))[1]

    proto = dj.onnx.export(f, dj.randn(2, 3))
    model = dj.onnx.to_module(proto)
    graph = dj.onnx.load(proto)
    for sign in (1.0, -1.0):
        x = np.abs(np.random.default_rng(6).standard_normal((2, 3))).astype(np.float32) * sign
        want = f(dj.tensor(x)).numpy()
        np.testing.assert_allclose(model(dj.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-5)
        got = dj.Session(graph).run(graph.outputs["output"], {graph.inputs["x"]: x})
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_unsupported_op_types_are_listed_at_once():
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Shrink", ["a"], ["b"]),
             helper.make_node("Hardmax", ["b"], ["c"]), helper.make_node("Shrink", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(OnnxImportError, match="Hardmax, Shrink"):
        dj.onnx.to_module(helper.make_model(graph))


def _torch_models(torch):
    class CNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.features = torch.nn.Sequential(
                torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 6, 3), torch.nn.Sigmoid(),
                torch.nn.AvgPool2d(2, padding=1), torch.nn.AdaptiveAvgPool2d(1))
            self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(6, 10),
                                            torch.nn.LogSoftmax(-1))

        def forward(self, x):
            return self.head(self.features(x))

    class Recurrent(torch.nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(5, 7, num_layers=2, bidirectional=True)
            self.fc = torch.nn.Linear(14, 3)

        def forward(self, x):
            y, _ = self.rnn(x)
            return torch.softmax(self.fc(y[-1]), -1)

    torch.manual_seed(0)
    return [(CNN(), (3, 1, 12, 12))] + [(Recurrent(k), (6, 2, 5))
                                         for k in ("LSTM", "GRU", "RNN")]


def test_models_exported_by_pytorch():
    torch = pytest.importorskip("torch")
    for model, shape in _torch_models(torch):
        model.eval()
        x = torch.randn(*shape)
        buffer = io.BytesIO()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), buffer, input_names=["x"], dynamo=False,
                              opset_version=17)
        imported = dj.onnx.to_module(buffer.getvalue())
        want = model(x).detach().numpy()
        np.testing.assert_allclose(imported(dj.tensor(x.numpy())).numpy(), want, rtol=1e-5,
                                   atol=1e-5)


def test_vendored_pytorch_cnn():
    """A CNN exported by torch.onnx.export (opset 17), kept in the repository for machines
    without PyTorch; its expected output was computed by PyTorch and stored beside it."""
    model = dj.onnx.to_module(VENDORED)
    expected = np.load(VENDORED.replace(".onnx", "_expected.npz"))
    got = model(dj.tensor(expected["x"])).numpy()
    np.testing.assert_allclose(got, expected["y"], rtol=1e-5, atol=1e-5)
    graph = dj.onnx.load(VENDORED)
    got = dj.Session(graph).run(list(graph.outputs.values())[0],
                                {graph.inputs["x"]: expected["x"]})
    np.testing.assert_allclose(got, expected["y"], rtol=1e-5, atol=1e-5)


def _ops_model(opset: int):
    """A model touching the shape and arithmetic op types an exporter emits, for `opset`."""
    from onnx import TensorProto, helper, numpy_helper

    def const(name, value):
        return helper.make_node("Constant", [], [name],
                                value=numpy_helper.from_array(np.asarray(value), name))

    axes13 = opset >= 13
    nodes = [
        const("shape", np.array([0, 3, 4], np.int64)),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),  # (2, 12) -> (2, 3, 4)
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),  # (2, 4, 3)
        const("idx", np.array([2, 0], np.int64)),
        helper.make_node("Gather", ["t", "idx"], ["g"], axis=1),  # (2, 2, 3)
        helper.make_node("Sub", ["g", "w"], ["s"]),
        helper.make_node("Div", ["s", "w"], ["d"]),
        helper.make_node("Softmax", ["d"], ["sm"], axis=1 if not axes13 else -1),
        helper.make_node("Concat", ["sm", "g"], ["c"], axis=-1),  # (2, 2, 6)
        const("starts", np.array([1], np.int64)), const("ends", np.array([5], np.int64)),
        const("axes", np.array([2], np.int64)), const("steps", np.array([2], np.int64)),
        helper.make_node("Slice", ["c", "starts", "ends", "axes", "steps"], ["sl"]),
        const("lo", np.array(-0.5, np.float32)), const("hi", np.array(0.5, np.float32)),
        helper.make_node("Clip", ["sl", "lo", "hi"], ["cl"]),
    ]
    if axes13:
        nodes += [const("ax", np.array([0, 3], np.int64)),
                  helper.make_node("Unsqueeze", ["cl", "ax"], ["u"]),
                  helper.make_node("Squeeze", ["u", "ax"], ["q"])]
    else:
        nodes += [helper.make_node("Unsqueeze", ["cl"], ["u"], axes=[0, 3]),
                  helper.make_node("Squeeze", ["u"], ["q"], axes=[0, 3])]
    nodes += [helper.make_node("ReduceMean", ["q"], ["m"], axes=[1], keepdims=0),
              helper.make_node("LeakyRelu", ["m"], ["y"], alpha=0.2)]
    w = numpy_helper.from_array(np.linspace(1, 2, 3, dtype=np.float32), "w")
    graph = helper.make_graph(nodes, "ops",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
                              initializer=[w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = helper.find_min_ir_version_for(list(model.opset_import))
    return model


@pytest.mark.parametrize("opset", [11, 17])
def test_shape_and_arithmetic_ops_match_onnxruntime(opset):
    model = _ops_model(opset)
    onnx.checker.check_model(model, full_check=True)
    x = np.random.default_rng(7).standard_normal((2, 12)).astype(np.float32)
    (want,) = dj.onnx.run_onnxruntime(model, {"x": x})
    imported = dj.onnx.to_module(model)
    assert [name for name, _ in imported.named_parameters()] == ["w"]
    np.testing.assert_allclose(imported(dj.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    graph = dj.onnx.load(model)
    got = dj.Session(graph).run(graph.outputs["y"], {graph.inputs["x"]: x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _flatten_by_shape_model(computed: bool):
    """x (batch?, 2, 3) -> Reshape(x, [batch, -1]) with the batch read by Shape -> Gather ->
    Unsqueeze -> Concat (how PyTorch exports `x.view(x.size(0), -1)`); `computed` also multiplies
    the batch by 1, which needs its value."""
    from onnx import TensorProto, helper, numpy_helper

    def const(name, value):
        return helper.make_node("Constant", [], [name],
                                value=numpy_helper.from_array(np.asarray(value), name))

    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("zero", np.array(0, np.int64)),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             const("ax", np.array([0], np.int64)),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             const("rest", np.array([-1], np.int64))]
    if computed:
        nodes += [const("one", np.array([1], np.int64)),
                  helper.make_node("Mul", ["n1", "one"], ["n2"])]
    nodes += [helper.make_node("Concat", ["n2" if computed else "n1", "rest"], ["shape"], axis=0),
              helper.make_node("Reshape", ["x", "shape"], ["flat"]),
              const("zeros_shape", np.array([1, 6], np.int64)),
              helper.make_node("Expand", ["flat", "zeros_shape"], ["y"])]
    graph = helper.make_graph(
        nodes, "flatten",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 6])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_shape_computations_on_an_unknown_batch_dim():
    graph = dj.onnx.load(_flatten_by_shape_model(computed=False))
    assert graph.inputs["x"].shape == (None, 2, 3)
    for n in (1, 4):
        x = np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3)
        got = dj.Session(graph).run(graph.outputs["y"], {graph.inputs["x"]: x})
        np.testing.assert_array_equal(got, x.reshape(n, 6))
    with pytest.raises(OnnxImportError, match="Mul node.*unknown until run time"):
        dj.onnx.load(_flatten_by_shape_model(computed=True))
    model = dj.onnx.to_module(_flatten_by_shape_model(computed=True))  # eager: shapes known
    np.testing.assert_array_equal(model(dj.ones(3, 2, 3)).numpy(), np.ones((3, 6)))


def test_pytorch_models_with_a_dynamic_batch_load_as_graphs():
    torch = pytest.importorskip("torch")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.lstm = torch.nn.Conv2d(1, 2, 3), torch.nn.LSTM(12, 5)
            self.fc = torch.nn.Linear(2 * 6 * 6 + 5, 3)

        def forward(self, images, seq):
            y = self.conv(images)
            h = self.lstm(seq)[0][-1]  # initial state: zeros of the (dynamic) batch size
            return self.fc(torch.cat([y.view(y.size(0), -1), h], 1))

    torch.manual_seed(1)
    net = Net().eval()
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.randn(2, 1, 8, 8), torch.randn(4, 2, 12)), buffer,
                          input_names=["images", "seq"], dynamo=False,
                          dynamic_axes={"images": {0: "batch"}, "seq": {1: "batch"}})
    graph = dj.onnx.load(buffer.getvalue())
    session = dj.Session(graph)
    for n in (2, 5):
        images, seq = torch.randn(n, 1, 8, 8), torch.randn(4, n, 12)
        feed = {graph.inputs["images"]: images.numpy(), graph.inputs["seq"]: seq.numpy()}
        got = session.run(list(graph.outputs.values())[0], feed)
        np.testing.assert_allclose(got, net(images, seq).detach().numpy(), rtol=1e-5, atol=1e-5)
