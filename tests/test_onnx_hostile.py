"""Hostile ONNX models: a tiny model asking for a huge constant, external data that would be
read from the working directory or outside the model's folder, tensors whose dims disagree
with their data, truncated bytes, malformed graphs; and a valid Loop whose body has its own
initializer (compared with onnxruntime)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dongjing as dj
from dongjing.onnx import OnnxImportError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape=None, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def _ort(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _constant_of_shape_model(n: int, value=1.5):
    shape = helper.make_node("Constant", [], ["s"],
                             value=numpy_helper.from_array(np.array([n, n], np.int64)))
    fill = helper.make_node("ConstantOfShape", ["s"], ["y"],
                            value=numpy_helper.from_array(np.array([value], np.float32)))
    add = helper.make_node("Add", ["x", "y"], ["z"])
    return _model([shape, fill, add], [_vi("x", [1])], [_vi("z")])


_PEAK_SCRIPT = textwrap.dedent("""
    import resource, sys
    import dongjing as dj
    import onnx.reference  # imported by the first fold: not part of what is measured
    blob = open(sys.argv[1], "rb").read()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    graph = dj.onnx.load(blob)
    dj.Session(graph, optimize=2)
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
""")


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KB (Linux)")
def test_a_tiny_model_asking_for_a_huge_constant_imports_in_bounded_memory(tmp_path):
    model = _constant_of_shape_model(100_000)  # 40 GB of float32 if computed at import
    path = tmp_path / "big.onnx"
    path.write_bytes(model.SerializeToString())
    assert path.stat().st_size < 300
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) < 32 << 20


@pytest.mark.parametrize("level", [0, 2])
def test_constants_past_the_fold_budget_are_computed_at_run_time(monkeypatch, level):
    from dongjing.onnx import fold_budget

    monkeypatch.setattr(fold_budget, "FOLD_BUDGET", 64)  # 16 float32s: the 6x6 case is "big"
    model = _constant_of_shape_model(6)
    graph = dj.onnx.load(model)
    assert graph.outputs["z"]._node is not None
    x = np.array([2.0], np.float32)
    got = dj.Session(graph, optimize=level).run(graph.outputs["z"], {graph.inputs["x"]: x})
    np.testing.assert_array_equal(got, _ort(model, {"x": x})[0])
    eager = dj.onnx.to_module(model)(dj.tensor(x))
    np.testing.assert_array_equal(eager.numpy(), _ort(model, {"x": x})[0])


def test_expand_of_a_constant_past_the_budget_is_left_to_run_time(monkeypatch):
    from dongjing.onnx import fold_budget

    monkeypatch.setattr(fold_budget, "FOLD_BUDGET", 64)
    one = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "one")
    shape = numpy_helper.from_array(np.array([7, 2], np.int64), "shape")
    nodes = [helper.make_node("Expand", ["one", "shape"], ["e"]),
             helper.make_node("Mul", ["x", "e"], ["z"])]
    model = _model(nodes, [_vi("x", [1])], [_vi("z")], [one, shape])
    graph = dj.onnx.load(model)
    x = np.array([3.0], np.float32)
    got = dj.Session(graph).run(graph.outputs["z"], {graph.inputs["x"]: x})
    np.testing.assert_array_equal(got, _ort(model, {"x": x})[0])


def test_negative_or_absurd_constant_of_shape_dims_are_refused():
    with pytest.raises(OnnxImportError, match="negative dim"):
        dj.onnx.load(_constant_of_shape_model(-3))
    with pytest.raises(OnnxImportError, match="too large"):
        dj.onnx.load(_constant_of_shape_model(2 ** 40))


def _external_model(location: str, data_len: int = 12):
    weight = TensorProto(name="w", data_type=F, dims=[3])
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(data_len))):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    return _model([helper.make_node("Add", ["x", "w"], ["z"])], [_vi("x", [3])], [_vi("z")],
                  [weight])


def _run_module(module):
    return module(dj.tensor(np.zeros(3, np.float32))).numpy()


def test_bytes_or_a_modelproto_never_read_external_data_from_the_working_dir(tmp_path,
                                                                           monkeypatch):
    weights = np.array([1.0, 2.0, 3.0], np.float32)
    (tmp_path / "w.bin").write_bytes(weights.tobytes())
    monkeypatch.chdir(tmp_path)
    model = _external_model("w.bin")
    for given in (model, model.SerializeToString()):
        with pytest.raises(OnnxImportError, match="external_data_dir"):
            dj.onnx.to_module(given)
    module = dj.onnx.to_module(model, external_data_dir=tmp_path)
    np.testing.assert_array_equal(_run_module(module), weights)


def test_external_data_is_read_beside_a_model_given_by_path(tmp_path):
    weights = np.array([4.0, 5.0, 6.0], np.float32)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "w.bin").write_bytes(weights.tobytes())
    path = tmp_path / "m" / "model.onnx"
    path.write_bytes(_external_model("w.bin").SerializeToString())
    np.testing.assert_array_equal(_run_module(dj.onnx.to_module(path)), weights)
    graph = dj.onnx.load(str(path))
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(
        dj.Session(graph).run(graph.outputs["z"], {graph.inputs["x"]: x}), weights + 1)


@pytest.mark.parametrize("location", ["../secret.bin", "sub/../../secret.bin", "/etc/passwd",
                                      "link.bin", ""])
def test_external_data_cannot_leave_the_model_folder(tmp_path, location):
    (tmp_path / "secret.bin").write_bytes(b"\0" * 12)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "sub").mkdir()
    os.symlink(tmp_path / "secret.bin", folder / "link.bin")
    path = folder / "model.onnx"
    path.write_bytes(_external_model(location).SerializeToString())
    with pytest.raises(OnnxImportError, match="model's folder"):
        dj.onnx.to_module(path)


def test_external_data_whose_length_disagrees_with_the_dims(tmp_path):
    (tmp_path / "w.bin").write_bytes(b"\0" * 8)
    path = tmp_path / "model.onnx"
    path.write_bytes(_external_model("w.bin", data_len=8).SerializeToString())
    with pytest.raises(OnnxImportError, match="need 12 bytes"):
        dj.onnx.to_module(path)
    path.write_bytes(_external_model("w.bin").SerializeToString())
    with pytest.raises(OnnxImportError, match="beyond the end"):
        dj.onnx.to_module(path)


def test_initializers_whose_dims_disagree_with_their_data():
    raw = TensorProto(name="w", data_type=F, dims=[2, 3], raw_data=b"\0" * 8)
    typed = TensorProto(name="v", data_type=F, dims=[4], float_data=[1.0, 2.0])
    huge = TensorProto(name="u", data_type=F, dims=[2 ** 40, 2 ** 40], raw_data=b"")
    for bad, message in ((raw, "need 24 bytes"), (typed, "need 4 values"),
                         (huge, "too large")):
        model = _model([helper.make_node("Add", ["x", bad.name], ["z"])], [_vi("x")],
                       [_vi("z")], [bad])
        with pytest.raises(OnnxImportError, match=f"{bad.name!r}.*{message}"):
            dj.onnx.to_module(model)


def test_truncated_or_garbage_bytes_are_an_import_error():
    blob = _constant_of_shape_model(2).SerializeToString()
    with pytest.raises(OnnxImportError, match="truncated or corrupted"):
        dj.onnx.load(blob[: len(blob) // 2])
    with pytest.raises(OnnxImportError, match="path, bytes or a ModelProto"):
        dj.onnx.load(12)


def test_an_undefined_input_names_the_node_and_tensor():
    model = _model([helper.make_node("Relu", ["nowhere"], ["z"], name="r")], [_vi("x", [2])],
                   [_vi("z")])
    with pytest.raises(OnnxImportError, match="Relu node 'r' reads 'nowhere'"):
        dj.onnx.load(model)
    model = _model([helper.make_node("Relu", ["x"], ["z"])], [_vi("x", [2])], [_vi("missing")])
    with pytest.raises(OnnxImportError, match="missing"):
        dj.onnx.load(model)


def test_nodes_out_of_order_run_sorted_as_onnxruntime_runs_them():
    nodes = [helper.make_node("Mul", ["b", "a"], ["z"], name="last"),
             helper.make_node("Neg", ["a"], ["b"], name="middle"),
             helper.make_node("Relu", ["x"], ["a"], name="first")]
    model = _model(nodes, [_vi("x", [3])], [_vi("z")])
    x = np.array([-1.0, 2.0, 3.0], np.float32)
    graph = dj.onnx.load(model)
    got = dj.Session(graph).run(graph.outputs["z"], {graph.inputs["x"]: x})
    np.testing.assert_array_equal(got, _ort(model, {"x": x})[0])


def test_a_cycle_or_a_tensor_produced_twice_is_refused():
    nodes = [helper.make_node("Relu", ["a"], ["b"], name="n1"),
             helper.make_node("Add", ["x", "b"], ["a"], name="n2")]
    model = _model(nodes, [_vi("x", [2])], [_vi("b")])
    with pytest.raises(OnnxImportError, match="cycle.*'n1'.*'n2'"):
        dj.onnx.load(model)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail):
        _ort(model, {"x": np.zeros(2, np.float32)})
    twice = [helper.make_node("Relu", ["x"], ["a"], name="one"),
             helper.make_node("Neg", ["x"], ["a"], name="two")]
    with pytest.raises(OnnxImportError, match="produced twice"):
        dj.onnx.load(_model(twice, [_vi("x", [2])], [_vi("a")]))


def test_a_loop_whose_body_has_its_own_initializer_matches_onnxruntime():
    step = numpy_helper.from_array(np.array([0.5, 2.0], np.float32), "step")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["acc_in", "step"], ["scaled"]),
         helper.make_node("Add", ["scaled", "x"], ["acc_out"])],
        "body",
        [_vi("i", [], TensorProto.INT64), _vi("cond_in", [], TensorProto.BOOL), _vi("acc_in")],
        [_vi("cond_out", [], TensorProto.BOOL), _vi("acc_out")],
        initializer=[step])
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    cond = numpy_helper.from_array(np.array(True), "cond")
    loop = helper.make_node("Loop", ["trips", "cond", "x"], ["z"], body=body)
    model = _model([loop], [_vi("x", [2])], [_vi("z")], [trips, cond])
    x = np.array([1.0, -1.0], np.float32)
    want = _ort(model, {"x": x})[0]
    np.testing.assert_allclose(dj.onnx.to_module(model)(dj.tensor(x)).numpy(), want)
    graph = dj.onnx.load(model)
    for level in (0, 2):
        got = dj.Session(graph, optimize=level).run(graph.outputs["z"], {graph.inputs["x"]: x})
        np.testing.assert_allclose(got, want)
