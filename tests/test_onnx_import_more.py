"""ONNX import of the op types beyond the op table's 1:1 inverses (import_nn, import_math,
import_resize): each small one-node model built with onnx.helper gives onnxruntime's outputs
eagerly and as a dj.Session at optimize=2, float inputs differentiate, and bad attributes are
refused with OnnxImportError."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.onnx import OnnxImportError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

_F = TensorProto.FLOAT
_I = TensorProto.INT64
_B = TensorProto.BOOL


def _model(op_type: str, inputs: list, n_out: int = 1, opset: int = 21, inits=(), **attrs):
    """A one-node model: `inputs` are (name, elem_type, shape) graph inputs; `inits` are
    (name, array) initializers fed to the node after the inputs."""
    names = [name for name, _, _ in inputs] + [name for name, _ in inits]
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(n_out)], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_empty_tensor_value_info(f"y{i}")
         for i in range(n_out)],
        [onnx.numpy_helper.from_array(np.asarray(a), n) for n, a in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model, feeds: list, rtol=1e-5, atol=1e-6, grad=True):
    """onnxruntime == dongjing eager == dj.Session(optimize=2); the float inputs' gradients of
    sum(y0 * y0) are finite and shaped like them (their values are checked elsewhere)."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in model.graph.input]
    want = sess.run(None, dict(zip(names, feeds)))
    module = dj.onnx.to_module(model)
    xs = [dj.tensor(f, requires_grad=grad and f.dtype.kind == "f") for f in feeds]
    got = module(*xs)
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g.numpy(), w, rtol=rtol, atol=atol)
    if grad and any(x.requires_grad for x in xs) and got[0].dtype.kind == "f":
        (got[0] * got[0]).sum().backward()
        for x in xs:
            if x.requires_grad:
                assert x.grad is not None and np.isfinite(x.grad.numpy()).all()
    graph = dj.onnx.load(model)
    outs = [graph.outputs[o.name] for o in model.graph.output]
    static = dj.Session(graph, optimize=2).run(outs, dict(zip(graph.inputs.values(), feeds)))
    for g, w in zip(static, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return want


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _x(shape):
    return ("x", _F, list(shape))


# --- activations and elementwise -------------------------------------------------------------
@pytest.mark.parametrize("op_type, attrs", [
    ("Gelu", {}), ("Gelu", {"approximate": "tanh"}), ("Softplus", {}), ("Softsign", {}),
    ("Elu", {"alpha": 0.7}), ("Selu", {}), ("Celu", {"alpha": 1.5}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("HardSwish", {}), ("Mish", {}),
    ("ThresholdedRelu", {"alpha": 0.2}), ("Reciprocal", {}), ("Floor", {}), ("Ceil", {}),
    ("Round", {}), ("Asinh", {}), ("Atanh", {}),
])
def test_unary_matches_onnxruntime(op_type, attrs):
    x = _rand(3, 4)
    if op_type == "Atanh":
        x = np.tanh(x)
    if op_type == "Round":
        x = np.array([[0.5, 1.5, 2.5, -0.5], [-1.5, 0.49, 3.2, -2.7]], np.float32)
    _check(_model(op_type, [_x(x.shape)], **attrs), [x], grad=op_type not in
           ("Floor", "Ceil", "Round"))


def test_acosh_and_prelu_and_mean_and_xor():
    x = np.abs(_rand(3, 4)) + 1.1
    _check(_model("Acosh", [_x(x.shape)]), [x])
    _check(_model("PRelu", [_x((2, 3, 4)), ("s", _F, [3, 1])]),
           [_rand(2, 3, 4), _rand(3, 1, seed=1)])
    _check(_model("Mean", [_x((3,)), ("b", _F, [2, 3]), ("c", _F, [3])]),
           [_rand(3), _rand(2, 3, seed=1), _rand(3, seed=2)])
    a, b = _rand(5) > 0, _rand(5, seed=1) > 0
    _check(_model("Xor", [("a", _B, [5]), ("b", _B, [5])]), [a, b])


def test_mod_integer_and_fmod():
    a = np.array([5, -5, 7, -7], np.int64)
    b = np.array([3, 3, -2, -2], np.int64)
    _check(_model("Mod", [("a", _I, [4]), ("b", _I, [4])]), [a, b])
    _check(_model("Mod", [("a", _I, [4]), ("b", _I, [4])], fmod=1), [a, b])
    x, y = _rand(6) * 4, np.abs(_rand(6, seed=1)) + 0.5
    _check(_model("Mod", [("a", _F, [6]), ("b", _F, [6])], fmod=1), [x, y])
    with pytest.raises(OnnxImportError, match="fmod=0 on floats"):
        dj.onnx.to_module(_model("Mod", [("a", _F, [6]), ("b", _F, [6])]))(x, y)


def test_pow_constant_exponent_is_pow_scalar_and_general_pow_agrees():
    x = _rand(5)
    for exponent in (2.0, 3.0, 1.5, -1.0):
        want = _check(_model("Pow", [_x((5,))], inits=[("e", np.array(exponent, np.float32))]),
                      [np.abs(x) + 0.1])[0]
        general = _check(_model("Pow", [_x((5,)), ("e", _F, [])]),
                         [np.abs(x) + 0.1, np.array(exponent, np.float32)])[0]
        np.testing.assert_allclose(want, general, rtol=1e-6)
    constant = helper.make_node("Constant", [], ["e"], value=onnx.numpy_helper.from_array(
        np.array(3.0, np.float32)))
    model = _model("Pow", [_x((5,))], inits=[("e", np.array(3.0, np.float32))])
    del model.graph.initializer[:]
    model.graph.node.insert(0, constant)  # a constant exponent: x**3 as dongjing computes it
    _check(model, [x])
    got = dj.onnx.to_module(model)(x).numpy()
    np.testing.assert_array_equal(got, (dj.tensor(x) ** 3).numpy())
    _check(_model("Pow", [("a", _I, [3]), ("e", _I, [])]), [np.array([1, 2, 3]),
                                                             np.array(2)])


def test_gather_nd():
    x = _rand(3, 4, 2)
    idx = np.array([[0, 1], [2, -1], [1, 3]], np.int64)
    _check(_model("GatherND", [_x(x.shape), ("i", _I, [3, 2])]), [x, idx])
    _check(_model("GatherND", [_x(x.shape), ("i", _I, [2, 1])]), [x, idx[:2, :1]])


def test_cast_like_and_size():
    _check(_model("CastLike", [_x((2, 3)), ("t", _I, [1])]),
           [_rand(2, 3) * 3, np.zeros(1, np.int64)], grad=False)
    _check(_model("Size", [_x((2, 3))]), [_rand(2, 3)], grad=False)


# --- reductions ------------------------------------------------------------------------------
@pytest.mark.parametrize("op_type", ["ReduceProd", "ReduceSumSquare", "ReduceL1", "ReduceL2",
                                     "ReduceLogSumExp", "ReduceLogSum"])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reductions(op_type, keepdims):
    x = _rand(2, 3, 4) + (3.0 if op_type == "ReduceLogSum" else 0.0)
    model = _model(op_type, [_x(x.shape)], inits=[("axes", np.array([0, -1], np.int64))],
                   keepdims=keepdims)
    _check(model, [x])
    _check(_model(op_type, [_x(x.shape)], opset=17, keepdims=keepdims), [x])


# --- indexing and sequences ------------------------------------------------------------------
def test_cumsum_modes():
    x = _rand(3, 4)
    for exclusive in (0, 1):
        for reverse in (0, 1):
            _check(_model("CumSum", [_x(x.shape)], inits=[("axis", np.array(1, np.int64))],
                          exclusive=exclusive, reverse=reverse), [x])


def test_range_tile_split_topk():
    _check(_model("Range", [], inits=[("s", np.array(1.0, np.float32)),
                                      ("l", np.array(4.0, np.float32)),
                                      ("d", np.array(0.5, np.float32))]), [])
    x = _rand(2, 6)
    _check(_model("Tile", [_x(x.shape)], inits=[("r", np.array([2, 1], np.int64))]), [x])
    _check(_model("Split", [_x(x.shape)], n_out=2, inits=[("s", np.array([2, 4], np.int64))],
                  axis=1), [x])
    _check(_model("Split", [_x(x.shape)], n_out=3, axis=1, num_outputs=3), [x])
    _check(_model("Split", [_x(x.shape)], n_out=2, opset=17, axis=1), [x])
    _check(_model("TopK", [_x(x.shape)], n_out=2, inits=[("k", np.array([3], np.int64))]), [x])
    _check(_model("TopK", [_x(x.shape)], n_out=2, inits=[("k", np.array([2], np.int64))],
                  largest=0, axis=0), [x])


def test_einsum_onehot_gather_scatter_trilu_nonzero():
    a, b = _rand(2, 3), _rand(3, 4, seed=1)
    _check(_model("Einsum", [("a", _F, [2, 3]), ("b", _F, [3, 4])], equation="ij,jk->ik"),
           [a, b])
    idx = np.array([[0, 2], [-1, 1]], np.int64)
    for axis in (-1, 1, 0):
        _check(_model("OneHot", [("i", _I, [2, 2])],
                      inits=[("d", np.array(3, np.int64)),
                             ("v", np.array([0.5, 2.0], np.float32))], axis=axis), [idx])
    x = _rand(3, 4)
    gidx = np.array([[0, 1, 2, -1], [2, 0, 1, 0]], np.int64)
    _check(_model("GatherElements", [_x(x.shape), ("i", _I, [2, 4])]), [x, gidx])
    sidx = np.array([[0, 1, 2, 0]], np.int64)
    upd = _rand(1, 4, seed=2)
    for reduction in ("none", "add"):
        _check(_model("ScatterElements", [_x(x.shape), ("i", _I, [1, 4]), ("u", _F, [1, 4])],
                      reduction=reduction), [x, sidx, upd])
    for upper in (0, 1):
        _check(_model("Trilu", [_x(x.shape)], inits=[("k", np.array(1, np.int64))],
                      upper=upper), [x])
    mask = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]], np.float32)
    _check(_model("NonZero", [_x(mask.shape)]), [mask], grad=False)


# --- layers ----------------------------------------------------------------------------------
def test_layer_instance_group_normalization():
    x = _rand(2, 4, 3, 3)
    _check(_model("LayerNormalization", [_x(x.shape), ("s", _F, [3, 3]), ("b", _F, [3, 3])],
                  n_out=3, axis=-2, epsilon=1e-3),
           [x, _rand(3, 3, seed=1), _rand(3, 3, seed=2)], rtol=1e-4, atol=1e-5)
    _check(_model("LayerNormalization", [_x(x.shape), ("s", _F, [3])]),
           [x, _rand(3, seed=1)], rtol=1e-4, atol=1e-5)
    _check(_model("InstanceNormalization", [_x(x.shape), ("s", _F, [4]), ("b", _F, [4])]),
           [x, _rand(4, seed=1), _rand(4, seed=2)], rtol=1e-4, atol=1e-5)
    _check(_model("GroupNormalization", [_x(x.shape), ("s", _F, [4]), ("b", _F, [4])],
                  num_groups=2), [x, _rand(4, seed=1), _rand(4, seed=2)], rtol=1e-4, atol=1e-5)


def test_group_normalization_opset18_per_group_scale():
    x = _rand(2, 4, 3)
    s, b = _rand(2, seed=1), _rand(2, seed=2)
    model = _model("GroupNormalization", [_x(x.shape), ("s", _F, [2]), ("b", _F, [2])],
                   opset=18, num_groups=2)
    got = dj.onnx.to_module(model)(x, s, b).numpy()
    grouped = x.reshape(2, 2, -1)
    norm = (grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True)
                                                                 + 1e-5)
    want = norm.reshape(x.shape) * np.repeat(s, 2)[:, None] + np.repeat(b, 2)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", [
    {}, {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
    {"strides": [2, 1], "pads": [0, 1, 1, 0]}, {"group": 2},
    {"strides": [2, 2], "output_shape": [6, 7]},
    {"strides": [2, 2], "output_shape": [6, 7], "auto_pad": "SAME_UPPER"},
])
def test_conv_transpose(attrs):
    x, w, b = _rand(2, 4, 3, 4), _rand(4, 3 if "group" not in attrs else 1, 3, 2, seed=1), \
        _rand(3 if "group" not in attrs else 2, seed=2)
    _check(_model("ConvTranspose", [_x(x.shape), ("w", _F, list(w.shape)),
                                    ("b", _F, list(b.shape))], **attrs), [x, w, b],
           rtol=1e-4, atol=1e-5)


def test_conv_transpose_1d_and_conv_1d_grouped():
    x, w = _rand(2, 4, 5), _rand(4, 3, 3, seed=1)
    _check(_model("ConvTranspose", [_x(x.shape), ("w", _F, list(w.shape))], strides=[2]),
           [x, w], rtol=1e-4, atol=1e-5)
    w2 = _rand(6, 2, 3, seed=3)
    _check(_model("Conv", [_x(x.shape), ("w", _F, list(w2.shape))], group=2, pads=[1, 1]),
           [x, w2], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back(mode):
    x = _rand(1, 8, 2, 3)
    _check(_model("DepthToSpace", [_x(x.shape)], blocksize=2, mode=mode), [x])
    y = _rand(1, 2, 4, 6)
    _check(_model("SpaceToDepth", [_x(y.shape)], blocksize=2), [y])


@pytest.mark.parametrize("attrs", [
    {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
    {"mode": "nearest"},
    {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
     "nearest_mode": "round_prefer_ceil"},
    {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
    {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
    {"mode": "linear"},
])
def test_resize_scales_and_sizes(attrs):
    x = _rand(1, 2, 3, 4)
    _check(_model("Resize", [_x(x.shape)], inits=[
        ("roi", np.zeros(0, np.float32)), ("scales", np.array([1, 1, 2, 1.5], np.float32))],
        **attrs), [x])
    _check(_model("Resize", [_x(x.shape)], inits=[
        ("roi", np.zeros(0, np.float32)), ("scales", np.zeros(0, np.float32)),
        ("sizes", np.array([1, 2, 5, 3], np.int64))], **attrs), [x])


def test_losses():
    scores, labels = _rand(4, 3), np.array([0, 2, 1, 2], np.int64)
    weight = np.abs(_rand(3, seed=1)) + 0.1
    for reduction in ("mean", "sum", "none"):
        _check(_model("SoftmaxCrossEntropyLoss", [_x((4, 3)), ("t", _I, [4])], n_out=2,
                      reduction=reduction), [scores, labels], rtol=1e-4, atol=1e-6)
        _check(_model("NegativeLogLikelihoodLoss", [_x((4, 3)), ("t", _I, [4]),
                                                    ("w", _F, [3])],
                      reduction=reduction, ignore_index=2), [scores, labels, weight],
               rtol=1e-4, atol=1e-6)
    _check(_model("SoftmaxCrossEntropyLoss", [_x((4, 3)), ("t", _I, [4]), ("w", _F, [3])],
                  ignore_index=0), [scores, labels, weight], rtol=1e-4, atol=1e-6)


def test_refusals_name_the_attribute():
    x = _rand(1, 2, 3, 4)
    with pytest.raises(OnnxImportError, match="cubic"):
        dj.onnx.to_module(_model("Resize", [_x(x.shape)], inits=[
            ("roi", np.zeros(0, np.float32)), ("scales", np.array([1, 1, 2, 2], np.float32))],
            mode="cubic"))(x)
    with pytest.raises(OnnxImportError, match="reduction='mul'"):
        dj.onnx.to_module(_model("ScatterElements", [_x((3,)), ("i", _I, [1]),
                                                     ("u", _F, [1])], reduction="mul"))(
            _rand(3), np.zeros(1, np.int64), _rand(1))
    with pytest.raises(OnnxImportError, match="num_groups=3"):
        dj.onnx.to_module(_model("GroupNormalization", [_x((1, 4, 2)), ("s", _F, [4]),
                                                        ("b", _F, [4])], num_groups=3))(
            _rand(1, 4, 2), _rand(4), _rand(4))


# --- gradients -------------------------------------------------------------------------------
_D = TensorProto.DOUBLE


def _xd(shape, name="x"):
    return (name, _D, list(shape))


def _fd_check(model, feeds: list, wrt: int = 0):
    """The imported model's gradient of sum(y0 * r) for input `wrt` (float64) equals central
    finite differences."""
    module = dj.onnx.to_module(model)
    xs = [dj.tensor(f, requires_grad=(i == wrt)) for i, f in enumerate(feeds)]
    y = module(*xs)
    y = y[0] if isinstance(y, tuple) else y
    probe = np.random.default_rng(7).standard_normal(y.shape)
    (y * dj.tensor(probe)).sum().backward()
    got = xs[wrt].grad.numpy()

    def f(value):
        args = list(feeds)
        args[wrt] = value
        out = module(*args)
        out = out[0] if isinstance(out, tuple) else out
        return float((out.numpy() * probe).sum())

    want = np.zeros_like(feeds[wrt])
    eps = 1e-6
    for i in np.ndindex(want.shape):
        up, down = feeds[wrt].copy(), feeds[wrt].copy()
        up[i] += eps
        down[i] -= eps
        want[i] = (f(up) - f(down)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def _r64(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("op_type, attrs", [
    ("Softplus", {}), ("Softsign", {}), ("Selu", {}), ("Celu", {"alpha": 1.5}),
    ("HardSwish", {}), ("Mish", {}), ("Elu", {}), ("Gelu", {}), ("Asinh", {}), ("Atanh", {}),
])
def test_unary_gradients_match_finite_differences(op_type, attrs):
    x = _r64(2, 3)
    x = np.tanh(x) * 0.9 if op_type == "Atanh" else x + 0.05  # away from kinks at 0
    _fd_check(_model(op_type, [_xd(x.shape)], **attrs), [x])


@pytest.mark.parametrize("op_type", ["ReduceProd", "ReduceL2", "ReduceLogSumExp",
                                     "ReduceSumSquare"])
def test_reduction_gradients_match_finite_differences(op_type):
    x = _r64(2, 3, 2) + 0.1
    _fd_check(_model(op_type, [_xd(x.shape)], inits=[("axes", np.array([0, 2], np.int64))],
                     keepdims=0), [x])


def test_layer_gradients_match_finite_differences():
    x = _r64(2, 4, 3, 3)
    _fd_check(_model("LayerNormalization", [_xd(x.shape), _xd((3, 3), "s"), _xd((3, 3), "b")],
                     axis=-2), [x, _r64(3, 3, seed=1), _r64(3, 3, seed=2)])
    _fd_check(_model("GroupNormalization", [_xd(x.shape), _xd((4,), "s"), _xd((4,), "b")],
                     num_groups=2), [x, _r64(4, seed=1), _r64(4, seed=2)])
    _fd_check(_model("InstanceNormalization", [_xd(x.shape), _xd((4,), "s"), _xd((4,), "b")]),
              [x, _r64(4, seed=1), _r64(4, seed=2)], wrt=1)
    w = _r64(4, 2, 3, 2, seed=3)
    model = _model("ConvTranspose", [_xd(x.shape), _xd(w.shape, "w")], strides=[2, 1],
                   pads=[1, 0, 0, 1])
    _fd_check(model, [x, w])
    _fd_check(model, [x, w], wrt=1)
    _fd_check(_model("DepthToSpace", [_xd(x.shape)], blocksize=2), [x])
    _fd_check(_model("Resize", [_xd(x.shape)], inits=[
        ("roi", np.zeros(0)), ("scales", np.array([1, 1, 2, 1.5]))], mode="linear"), [x])
    _fd_check(_model("PRelu", [_xd((2, 3)), _xd((3,), "s")]), [_r64(2, 3), _r64(3, seed=4)],
              wrt=1)


def test_indexing_and_loss_gradients_match_finite_differences():
    x = _r64(3, 4)
    _fd_check(_model("GatherElements", [_xd(x.shape), ("i", _I, [2, 4])], axis=0),
              [x, np.array([[0, 1, 2, -1], [2, 0, 1, 0]], np.int64)])
    _fd_check(_model("ScatterElements", [_xd(x.shape), ("i", _I, [1, 4]), _xd((1, 4), "u")],
                     reduction="add"), [x, np.array([[0, 1, 2, 0]], np.int64), _r64(1, 4)],
              wrt=2)
    _fd_check(_model("CumSum", [_xd(x.shape)], inits=[("a", np.array(1, np.int64))],
                     exclusive=1, reverse=1), [x])
    _fd_check(_model("Einsum", [_xd((3, 4), "a"), _xd((4, 2), "b")], equation="ij,jk->ik"),
              [x, _r64(4, 2, seed=1)], wrt=1)
    labels = np.array([0, 2, 1], np.int64)
    _fd_check(_model("SoftmaxCrossEntropyLoss", [_xd((3, 4)), ("t", _I, [3]), _xd((4,), "w")],
                     n_out=2, ignore_index=1), [x, labels, np.abs(_r64(4, seed=2)) + 0.1])
