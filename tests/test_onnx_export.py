"""ONNX export checked in onnxruntime: the digits MLP and CNN, BatchNorm + Dropout in eval mode,
dj.cond -> If, a dj.while_loop RNN -> Loop, each at two batch sizes through a dynamic axis;
hand-built graphs, opset checks, and the error for an op with no export."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
from dongjing.onnx import OnnxExportError
from dongjing.ops.registry import OPS

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

_PATH = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "digits.py")


def _digits():
    spec = importlib.util.spec_from_file_location("digits_example_onnx", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _check_batches(model, example, tmp_path, batch_axis=0, sizes=(3, 7), **kw):
    """Export with a dynamic batch axis; onnxruntime equals dongjing at two batch sizes."""
    path = tmp_path / "model.onnx"
    proto = dj.onnx.export(model, example, path, input_names=["x"],
                           dynamic_axes={"x": {batch_axis: "batch"}}, **kw)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    if isinstance(model, nn.Module):
        model.eval()  # the reference: export traces modules in eval mode
    rng = np.random.default_rng(0)
    for n in sizes:
        shape = list(example.shape)
        shape[batch_axis] = n
        x = rng.standard_normal(shape).astype(np.float32)
        (got,) = dj.onnx.run_onnxruntime(proto, {"x": x})
        with dj.no_grad():
            want = model(dj.tensor(x)).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return proto


def test_every_op_has_an_export_or_a_reason():
    """On the op record itself: `onnx=` (a type, an `Onnx` record or a rule) or `onnx_reason=`."""
    from dongjing.ops import Onnx

    both = sorted(name for name, op in OPS.items() if op.onnx is not None and op.onnx_reason)
    assert not both, f"an export and a reason: {both}"
    missing = sorted(name for name, op in OPS.items() if op.onnx is None and not op.onnx_reason)
    assert not missing, f"ops with no ONNX export and no reason: {missing}"
    for name, op in OPS.items():
        assert op.onnx is None or isinstance(op.onnx, (str, Onnx)) or callable(op.onnx), name
        assert op.onnx_reason is None or isinstance(op.onnx_reason, str), name


def test_an_op_record_may_declare_its_own_export():
    from types import SimpleNamespace

    from dongjing.onnx.op_exports import Onnx, rule_for

    assert rule_for(SimpleNamespace(name="new_op", onnx="Softplus")) == (Onnx("Softplus"), None)
    assert rule_for(SimpleNamespace(name="new_op", onnx=None, onnx_reason="random")) == (
        None, "random")
    assert rule_for(OPS["mul"]) == (Onnx("Mul", cast="out"), None)  # the record, as declared
    assert rule_for(OPS["tanh"]) == (Onnx("Tanh"), None)
    assert rule_for(OPS["fold2d"])[1].startswith("a gradient op")


def test_onnx_record_is_one_object_everywhere():
    """The leaf registry defines `Onnx`; dongjing.ops and dongjing.onnx.op_exports re-export it."""
    from dongjing import ops
    from dongjing.core import registry
    from dongjing.onnx import op_exports

    assert ops.Onnx is registry.Onnx is op_exports.Onnx


def test_digits_mlp(tmp_path):
    model = _digits().build("mlp", seed=0)
    proto = _check_batches(model, dj.randn(5, 64), tmp_path)
    names = [init.name for init in proto.graph.initializer]
    assert names[:6] == ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and dims[1].dim_value == 64


def test_digits_cnn(tmp_path):
    proto = _check_batches(_digits().build("cnn", seed=0), dj.randn(4, 64), tmp_path)
    types = [n.op_type for n in proto.graph.node]  # im2col chains recognised, the rest pruned
    assert types.count("Conv") == 2 and types.count("MaxPool") == 2 and "Slice" not in types


def test_strided_conv_and_average_pool(tmp_path):
    dj.manual_seed(3)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, stride=2, padding=1), nn.AvgPool2d(2, padding=1))
    proto = _check_batches(model, dj.randn(2, 2, 7, 7), tmp_path)
    assert {"Conv", "AveragePool"} <= {n.op_type for n in proto.graph.node}


def test_jitted_model_exports_like_the_model():
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    assert model.training
    proto = dj.onnx.export(dj.jit(model), dj.ones(2, 3))  # eval mode: no dropout op
    assert [i.name for i in proto.graph.initializer] == ["0.weight", "0.bias", "2.weight",
                                                         "2.bias"]
    assert model.training


def test_batchnorm_and_dropout_in_eval_mode(tmp_path):
    dj.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.Dropout(0.5), nn.Flatten(), nn.Linear(4 * 5 * 5, 3),
                          nn.BatchNorm1d(3))
    for _ in range(3):  # running statistics away from their initial values
        model(dj.randn(6, 2, 5, 5))
    assert model.training
    dj.onnx.export(model, dj.randn(2, 2, 5, 5))
    assert model.training  # restored after the export traced in eval mode
    _check_batches(model, dj.randn(2, 2, 5, 5), tmp_path)


def test_cond_exports_as_if(tmp_path):
    w = dj.randn(6, 6)

    def f(x):
        return dj.cond(x.sum() > 0, lambda: dj.tanh(x @ w), lambda: x * 2.0 - 1.0)

    proto = _check_batches(f, dj.randn(3, 6), tmp_path)
    assert "If" in [n.op_type for n in proto.graph.node]
    for sign in (1.0, -1.0):  # both branches
        x = np.abs(np.random.default_rng(1).standard_normal((4, 6))).astype(np.float32) * sign
        (got,) = dj.onnx.run_onnxruntime(proto, {"x": x})
        np.testing.assert_allclose(got, f(dj.tensor(x)).numpy(), rtol=1e-5, atol=1e-5)


def test_while_loop_rnn_exports_as_loop(tmp_path):
    dj.manual_seed(2)
    cell_in, cell_h = nn.Linear(4, 6), nn.Linear(6, 6, bias=False)

    def rnn(xs):  # xs: (time, batch, features)
        h0 = cell_in(xs[0]) * 0.0

        def body(t, h):
            return t + 1, dj.tanh(cell_in(xs[t]) + cell_h(h))

        return dj.while_loop(lambda t, h: t < xs.shape[0], body, (dj.tensor(0), h0))[1]

    proto = _check_batches(rnn, dj.randn(5, 2, 4), tmp_path, batch_axis=1)
    assert "Loop" in [n.op_type for n in proto.graph.node]


def test_export_graph_of_a_hand_built_graph(tmp_path):
    with dj.Graph() as g:
        x = dj.placeholder((None, 3), name="x")
        w = dj.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        y = dj.relu(x @ w - 4.0)
        z = dj.log_softmax(y, dim=1).sum(dim=1)
    proto = dj.onnx.export_graph(g, [y, z], tmp_path / "g.onnx", output_names=["y", "z"])
    assert [i.name for i in proto.graph.initializer][0] == "w"
    feed = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    got = dj.onnx.run_onnxruntime(proto, {"x": feed})
    want = dj.Session(g).run([y, z], {x: feed})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_indexing_reductions_and_casts(tmp_path):
    table = dj.randn(10, 4)

    def f(x, idx):
        rows = table[idx]  # a gather
        picked = x[:, 1:3, None][..., 0] * x[1:2].mean() + rows.sum()
        counts = (x > 0).sum(dim=1, keepdim=True)
        return dj.concat([picked, counts.float(), x.amax(dim=1, keepdim=True),
                          dj.argmax(x, dim=1, keepdim=True).float()], dim=1)

    x, idx = dj.randn(4, 5), dj.tensor([1, 3, 3])
    proto = dj.onnx.export(f, (x, idx), dynamic_axes={"x": [0]})
    for n in (4, 6):
        xv = np.random.default_rng(n).standard_normal((n, 5)).astype(np.float32)
        (got,) = dj.onnx.run_onnxruntime(proto, {"x": xv, "idx": idx.numpy()})
        np.testing.assert_allclose(got, f(dj.tensor(xv), idx).numpy(), rtol=1e-5, atol=1e-5)


def test_an_op_without_export_names_the_op_and_the_line(tmp_path):
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5))

    def train_mode(x):
        return dj.nn.functional.dropout(model(x), 0.5, training=True)

    line = train_mode.__code__.co_firstlineno + 1
    with pytest.raises(OnnxExportError) as info:
        dj.onnx.export(train_mode, dj.ones(2, 3))
    message = str(info.value)
    assert "'dropout_mask'" in message and "eval mode" in message
    assert f"built at test_onnx_export.py:{line}" in message
    with pytest.raises(OnnxExportError, match="'getitem'.*leading dims"):
        dj.onnx.export(lambda x: x[:, x[0] > 0], dj.ones(2, 3))


def test_opset_checks(tmp_path):
    model = nn.Linear(2, 2)
    for bad in (7, 99, "17"):
        with pytest.raises(OnnxExportError, match="opset"):
            dj.onnx.export(model, dj.ones(1, 2), opset=bad)
    with pytest.raises(OnnxExportError, match="dynamic_axes names \\['input'\\]"):
        dj.onnx.export(model, dj.ones(1, 2), dynamic_axes={"input": [0]})  # it is called x
    for opset in (13, 18):  # Reduce* axes moved from attribute to input at 18
        proto = dj.onnx.export(lambda x: x.amax(dim=1) + x.sum(), dj.ones(2, 3), opset=opset)
        assert proto.opset_import[0].version == opset
        (got,) = dj.onnx.run_onnxruntime(proto, {"x": np.ones((2, 3), np.float32)})
        np.testing.assert_allclose(got, [7.0, 7.0])


def test_check_with_onnxruntime_returns_the_largest_difference():
    model = _digits().build("mlp", seed=0)
    diff = dj.onnx.check_with_onnxruntime(model, dj.randn(8, 64))
    assert 0.0 <= diff < 1e-5


def test_sum_to_like_decides_its_axes_at_run_time_for_unknown_dims():
    from dongjing.ops.broadcast import sum_to_like

    with dj.Graph() as g:
        grad = dj.placeholder((None, 3, 4), name="grad")
        like = dj.placeholder((3, None), name="like")
        y = sum_to_like(grad, like)
    proto = dj.onnx.export_graph(g, y)
    for like_shape in ((3, 1), (3, 4)):
        feed = {"grad": np.random.default_rng(8).random((2, 3, 4), dtype=np.float32),
                "like": np.zeros(like_shape, np.float32)}
        (got,) = dj.onnx.run_onnxruntime(proto, feed)
        want = dj.Session(g).run(y, {grad: feed["grad"], like: feed["like"]})
        assert got.shape == want.shape == like_shape
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_without_the_onnx_package_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)  # `import onnx` now fails
    with pytest.raises(OnnxExportError, match="pip install"):
        dj.onnx.export(nn.Linear(2, 2), dj.ones(1, 2))
    with pytest.raises(dj.onnx.OnnxImportError, match="pip install"):
        dj.onnx.load("model.onnx")


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers(tmp_path, kind):
    dj.manual_seed(6)

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(nn, kind)(4, 5, num_layers=2, bidirectional=True)
            self.head = nn.Linear(10, 3)

        def forward(self, x):  # x: (time, batch, features)
            return self.head(self.rnn(x)[0])

    model = Tagger()
    _check_batches(model, dj.randn(6, 2, 4), tmp_path, batch_axis=1)
