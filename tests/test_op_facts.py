"""Facts stated on an op's record, read by generic code that names no op: in-place Tensor
methods (from ``methods=``), ONNX import (the inverse of a 1:1 ``onnx=`` export), algebraic
simplification (``identity``, ``absorbing``, ``commutative``) and fused-kernel formulations
(``kernel=``). A user-declared op gets each with no other edit."""

from __future__ import annotations

import numpy as np
import pytest
from op_cases import CASES

import dongjing as dj
from dongjing.compiler.codegen import kernel_source
from dongjing.compiler.passes import fuse_elementwise as fusion
from dongjing.core import infer
from dongjing.errors import DTypeError
from dongjing.ops import OPS, Cost, Kernel, Kind, define
from dongjing.ops.bindings import binary, float_unary
from dongjing.tensor import Tensor


@pytest.fixture
def declare():
    """`define` for the test; the ops and their Tensor methods are removed afterwards."""
    made = []

    def make(name, **facts):
        op = define(name, **facts)
        made.append(op)
        return op

    yield make
    for op in made:
        OPS.pop(op.name, None)
        for method in op.methods:
            if method in vars(Tensor):
                delattr(Tensor, method)


def _int_infer(a, b):
    shape, dtype = infer.elementwise("bitand")(a, b)
    if dtype.kind not in "iub":
        raise DTypeError(f"bitand: expects integer or bool tensors, got {dtype}")
    return shape, dtype


def _bitand(declare):
    return declare("bitand", ufunc="bitwise_and", infer=_int_infer, kind=Kind.ELEMENTWISE,
                   cost=Cost.CHEAP, identity=-1, absorbing=0, commutative=True,
                   onnx="BitwiseAnd", binding=binary, methods=("bitand", "bitand_"),
                   doc="a & b, bit by bit.")


# --- in-place methods ---------------------------------------------------------------------
def test_declared_inplace_methods_exist_for_the_table():
    for op in OPS.values():
        for name in op.methods:
            if op.binding is not None:
                assert callable(getattr(Tensor, name)), (op.name, name)


def test_user_op_gets_its_inplace_method(declare):
    _bitand(declare)
    x = dj.tensor([6, 5, 12])
    view = x[1:]
    version = x._version[0]
    assert view.bitand_(dj.tensor([3, 4])) is view  # a view writes into its base
    np.testing.assert_array_equal(x.numpy(), [6, 1, 4])
    assert x._version[0] > version
    np.testing.assert_array_equal(x.bitand(3).numpy(), [2, 1, 0])
    with pytest.raises(DTypeError, match="bitand"):
        dj.tensor([1.0]).bitand_(dj.tensor([1.0]))


def test_generated_inplace_keeps_autograd_rules():
    leaf = dj.tensor([0.5, -1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.tanh_()
    with pytest.raises(RuntimeError, match="leaf"):
        leaf *= 2.0
    y = leaf * 1.0
    y.tanh_()
    y.mul_(3.0)
    y.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 3.0 * (1 - np.tanh([0.5, -1.0]) ** 2))
    with dj.no_grad():  # the direct path: the record's ufunc writes into the tensor
        before = leaf._version[0]
        leaf.mul_(2.0)
        assert leaf._version[0] == before + 1
    np.testing.assert_allclose(leaf.detach().numpy(), [1.0, -2.0])


# --- ONNX import ----------------------------------------------------------------------------
def _plain_export(op):
    from dongjing.onnx.import_table import _plain_type

    return _plain_type(op.onnx)


def _round_trip_cases():
    for name, cases in sorted(CASES.items()):
        if name in OPS and _plain_export(OPS[name]) is not None:
            yield pytest.param(name, cases[0], id=name)


@pytest.mark.parametrize("name,case", list(_round_trip_cases()))
def test_plain_exports_import_back(name, case):
    pytest.importorskip("onnx")
    arrays = [np.asarray(a) for a in case.inputs]
    arrays = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays]
    tensors = [dj.tensor(a) for a in arrays]
    want = case.fn(*tensors)
    names = ", ".join(f"a{i}" for i in range(len(tensors)))
    fn = eval(f"lambda {names}: fn({names})", {"fn": case.fn})  # noqa: S307 - fixed text
    proto = dj.onnx.export(fn, tuple(tensors))
    assert _plain_export(OPS[name]) in {n.op_type for n in proto.graph.node}
    got = dj.onnx.to_module(proto)(*tensors)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def _one_node_model(op_type, n_inputs, elem, opset=18, **attrs):
    from onnx import helper

    node = helper.make_node(op_type, [f"x{i}" for i in range(n_inputs)], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(f"x{i}", elem, [3]) for i in range(n_inputs)],
        [helper.make_tensor_value_info("y", elem, [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_a_derived_import_refuses_attributes_it_would_ignore():
    onnx = pytest.importorskip("onnx")
    from dongjing.onnx.errors import OnnxImportError

    model = _one_node_model("IsInf", 1, onnx.TensorProto.FLOAT, detect_negative=0)
    with pytest.raises(OnnxImportError, match="detect_negative"):
        dj.onnx.to_module(model)(dj.tensor([1.0, -np.inf, np.inf], dtype=dj.float32))
    legacy = _one_node_model("Mul", 2, onnx.TensorProto.FLOAT, opset=6, broadcast=1)
    out = dj.onnx.to_module(legacy)(dj.tensor([1.0, 2.0, 3.0]), dj.tensor([2.0, 2.0, 2.0]))
    np.testing.assert_allclose(out.numpy(), [2.0, 4.0, 6.0])


def test_user_op_imports_from_its_export(declare):
    onnx = pytest.importorskip("onnx")
    from dongjing.onnx.importer import check_supported

    model = _one_node_model("BitwiseAnd", 2, onnx.TensorProto.INT64)
    with pytest.raises(dj.onnx.OnnxImportError, match="BitwiseAnd"):
        check_supported(model)
    bitand = _bitand(declare).binding
    a, b = dj.tensor([6, 5, 12]), dj.tensor([3, 4, 10])
    np.testing.assert_array_equal(dj.onnx.to_module(model)(a, b).numpy(), [2, 4, 8])
    exported = dj.onnx.export(lambda u, v: bitand(u, v), (a, b), opset=18)
    assert [n.op_type for n in exported.graph.node][0] == "BitwiseAnd"


# --- algebraic simplification ---------------------------------------------------------------
def _changes(fn, dtype, value):
    with dj.Graph() as g:
        x = dj.placeholder(dtype, shape=(3,), name="x")
        y = fn(x)
    with dj.Session(g, optimize=1) as sess:
        got = sess.run(y, {x: value})
        changes = [c for s in sess.stats(y) if s["pass"] == "simplify_algebra"
                   for c in s["changes"]]
    return got, changes


def test_user_op_is_simplified_by_its_algebraic_facts(declare):
    bitand = _bitand(declare).binding
    value = np.array([6, -5, 2 ** 62 + 1])
    got, changes = _changes(lambda x: bitand(-1, x) + 1, dj.int64, value)
    np.testing.assert_array_equal(got, value + 1)
    assert any("bitand(-1, x) -> x" in c for c in changes), changes
    got, changes = _changes(lambda x: bitand(x, 0) + 1, dj.int64, value)
    np.testing.assert_array_equal(got, [1, 1, 1])
    assert any("bitand(x, 0) -> 0 (integers)" in c for c in changes), changes


def test_float_identity_keeps_the_sign_of_zero():
    value = np.array([-0.0, np.nan, 1.5])
    got, changes = _changes(lambda x: (x + 0.0) * 1.0, dj.float64, value)
    assert np.signbit(got[0]) == np.signbit(-0.0 + 0.0)  # x + 0.0 is kept: it makes -0.0 +0.0
    assert any("mul(x, 1) -> x" in c for c in changes) and not any("add" in c for c in changes)
    got, changes = _changes(lambda x: x * 0.0, dj.float64, value)
    assert np.isnan(got[1]) and changes == []  # no absorbing element for floats: NaN * 0


# --- fused-kernel formulations ---------------------------------------------------------------
def test_user_op_kernel_formulation_is_used(compiler_options, declare, monkeypatch):
    compiler_options(kernel_formulas="always")  # not this machine's measurement
    op = declare("exp2_", ufunc="exp2", infer=infer.floating("exp2_"), kind=Kind.ELEMENTWISE,
                 cost=Cost.TRANSCENDENTAL, binding=float_unary,
                 kernel=Kernel(dtypes=("float64",), lines=("t{j} = 2.0 ** {x}",)))
    with dj.Graph():
        node64 = op.binding(dj.placeholder(dj.float64, shape=(8,), name="a")).node
        node32 = op.binding(dj.placeholder(dj.float32, shape=(8,), name="b")).node
    assert fusion.fusible(node64, 1) and not fusion.fusible(node32, 1)
    body = fusion.FusedBody(((op, (("in", 0),)),), (0,), 8)
    source, names = kernel_source("k", body, ["array"])
    assert "t0 = 2.0 ** a0" in source and "_u_exp2" not in source
