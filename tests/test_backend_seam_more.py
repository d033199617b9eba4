"""The backend seam beyond the op table: the gradient of an unbounded `while_loop` (its stacks
and accumulators), the eager-only forms of the torch-compat functions whose index math runs on
the input's backend, ONNX constants made from arrays of any backend, the dtype helpers, and the
side-effect log's view of arrays and random generators of every backend."""

from __future__ import annotations

import numpy as np
import pytest
from wrapped_backend import WArray, unwrap, wrapped_backend, wrapped_xp

import dongjing as dj
from dongjing import dtypes
from dongjing.backends import Backend, random_types, register, unregister
from dongjing.runtime.interpreter import needed_nodes


def _wrapped(array) -> dj.Tensor:
    return dj.Tensor._make(WArray(np.asarray(array)), False)


def _same(got, want):
    assert type(got) is WArray, f"a {type(got).__name__} left the test backend"
    got = unwrap(got)
    assert got.dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# --- while_loop without a bound: its gradient's stacks and sums on the loop values' backend ---
def _run_on(xp, graph, fetches: list, feeds: dict) -> list:
    """A minimal executor: the nodes `fetches` need, each op's forward bound to `xp` (constants
    and Variables converted to the test backend first)."""
    values = dict(feeds)
    for node in needed_nodes(fetches, set(feeds)):
        if node in values:
            continue
        if node.op.name == "constant":
            values[node] = wrapped_backend.asarray(node.attrs["value"])
        elif node.op.name == "variable":
            values[node] = wrapped_backend.asarray(node.attrs["ref"]._data)
        else:
            forward = node.op.forward_for(xp)
            values[node] = forward(*[values[i] for i in node.inputs], **node.attrs)
    return [values[n] for n in fetches]


def _subgraphs_on_the_test_backend(monkeypatch):
    """Control-flow sub-graphs run by `_run_on` on the test backend (dongjing's own programs
    run on the default backend, where Session feeds are converted to)."""
    from dongjing.ops import control, while_grad

    def program(sub, arrays=()):
        return lambda arrays: _run_on(wrapped_xp, sub, list(sub.outputs),
                                      dict(zip(sub.args, arrays)))

    monkeypatch.setattr(control, "_program", program)
    monkeypatch.setattr(while_grad, "_program", program)


@pytest.mark.parametrize("runs", [0, 3])
def test_unbounded_while_loop_gradient_on_the_test_backend(runs, monkeypatch):
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((3,), dj.float64, name="x")
        n = dj.placeholder((), dj.int64, name="n")
        w = dj.Variable(np.array([0.2, -0.1, 0.4]), name="w")
        _, v = dj.while_loop(lambda i, v: i < n,
                             lambda i, v: (i + 1, dj.tanh(v * 1.5 + w) * x),
                             [dj.constant(0), x])  # no maximum_iterations: stacks
        out = dj.sum(v * v)
        gx, gw = dj.gradients(out, [x, w])
    assert {"while_record", "while_grad"} <= {node.op.name for node in g.nodes}
    x0 = np.array([0.5, -1.0, 2.0])
    want = dj.Session(g, optimize=0).run([out, gx, gw], {x: x0, n: np.array(runs)})
    _subgraphs_on_the_test_backend(monkeypatch)
    got = _run_on(wrapped_xp, g, [out._node, gx._node, gw._node],
                  {x._node: WArray(x0), n._node: WArray(np.array(runs))})
    for a, b in zip(got, want):
        _same(a, b)


# --- torch-compat functions: eager-only forms -----------------------------------------------
@pytest.mark.parametrize("make", [
    lambda t: dj.repeat_interleave(t(np.array([[1.0, 2.0], [3.0, 4.0]])), t(np.array([2, 0])),
                                   dim=0),
    lambda t: dj.repeat_interleave(t(np.array([1.0, 2.0, 3.0])), t(np.array([3])), dim=0),
    lambda t: dj.repeat_interleave(t(np.array([2, 0, 1]))),
    lambda t: dj.repeat_interleave(t(np.array([[1.0], [2.0]])), 2, dim=0, output_size=4),
    lambda t: dj.diag(t(np.array([1.0, 2.0])), -2),
    lambda t: dj.diag(t(np.arange(12.0).reshape(3, 4)), 2),
    lambda t: dj.nan_to_num(t(np.array([np.nan, np.inf, -np.inf, 1.0], np.float32))),
    lambda t: dj.index_add(t(np.zeros((3, 2))), 0, t(np.array([2, 2])), t(np.ones((2, 2))),
                           alpha=np.float64(2.0)),
], ids=["counts per row", "one count", "counts only", "int repeats", "diag vector",
        "diag matrix", "nan_to_num float32", "index_add numpy alpha"])
def test_torch_compat_forms_stay_on_the_test_backend(make):
    want = make(lambda a: dj.Tensor._make(a, False))
    got = make(_wrapped)
    _same(got._data, want._data)


def test_repeat_interleave_checks_counts_on_any_backend():
    x = _wrapped(np.array([1.0, 2.0]))
    with pytest.raises(dj.errors.ShapeError, match="non-negative"):
        dj.repeat_interleave(x, _wrapped(np.array([1, -1])))
    with pytest.raises(dj.errors.ShapeError, match="one count or 2 counts"):
        dj.repeat_interleave(x, _wrapped(np.array([1, 1, 1])))
    with pytest.raises(dj.errors.DTypeError, match="must be integers"):
        dj.repeat_interleave(x, _wrapped(np.array([1.0, 1.0])))


# --- ONNX constants: host arrays, made in the exporter from any backend's data --------------
def test_onnx_constants_come_from_any_backend():
    pytest.importorskip("onnx")
    from onnx import numpy_helper

    from dongjing.onnx.emitter import Emitter

    e = Emitter(17)
    e.const(WArray(np.arange(3.0)), name="w", initializer=True)
    e.int64(4, "k")
    e.const([0, 1], np.float32, name="off_on")
    (w,) = e.initializers
    np.testing.assert_array_equal(numpy_helper.to_array(w), np.arange(3.0))
    k, off_on = (numpy_helper.to_array(node.attribute[0].t) for node in e.nodes)
    assert k.dtype == np.int64 and k.shape == () and int(k) == 4
    assert off_on.dtype == np.float32 and off_on.tolist() == [0.0, 1.0]
    fill = numpy_helper.to_array(e.tensor([2.5], np.float16))
    assert fill.dtype == np.float16 and fill.tolist() == [2.5]


def test_export_of_parameters_on_another_backend():
    pytest.importorskip("onnx")
    from onnx import numpy_helper

    layer = dj.nn.Linear(2, 3)
    want = dj.onnx.export(layer, dj.ones(1, 2))
    for p in layer.parameters():
        p._data = WArray(p._data)
    got = dj.onnx.export(layer, dj.ones(1, 2))
    assert [i.name for i in got.graph.initializer] == [i.name for i in want.graph.initializer]
    for a, b in zip(got.graph.initializer, want.graph.initializer):
        np.testing.assert_array_equal(numpy_helper.to_array(a), numpy_helper.to_array(b))


# --- dtype helpers --------------------------------------------------------------------------
def test_dtype_helpers():
    assert dtypes.can_cast(dtypes.float32, dtypes.float64)
    assert not dtypes.can_cast(dtypes.float64, dtypes.int64, "same_kind")
    assert dtypes.can_cast("float64", "float32", "same_kind")
    assert dtypes.finfo(dtypes.float32).max == np.float32(3.4028235e38)
    assert dtypes.is_dtype(dtypes.int64) and not dtypes.is_dtype("int64")
    assert dtypes.is_scalar_type(np.float32) and not dtypes.is_scalar_type(float)
    numbers = [1, 2.5, np.float32(1), np.int8(3), np.complex64(1j)]
    assert all(dtypes.is_scalar_number(v) for v in numbers)
    assert not any(dtypes.is_scalar_number(v) for v in [True, np.bool_(True), "1", None,
                                                        np.ones(1)])
    assert dtypes.is_integer_scalar(np.int32(2)) and not dtypes.is_integer_scalar(2.0)


# --- the side-effect log sees every backend's arrays and random generators ------------------
WRAPPED_TABLE = WArray(np.array([1.0, 2.0, 3.0]))


class _Dice:
    """A random generator of an array library the test registers."""

    def roll(self) -> float:
        return 4.0


DICE = _Dice()


def _reads_a_wrapped_global(x):
    return x * float(WRAPPED_TABLE[2])


def _rolls_dice(x):
    return x * DICE.roll()


def test_a_global_array_of_another_backend_is_logged():
    f = dj.jit(_reads_a_wrapped_global)
    f(dj.ones(2))
    assert any(e.kind == "global read" and "array(3,)" in e.text for e in f.side_effects), \
        f.side_effects


def test_draws_on_a_backends_random_generator_are_logged():
    dice = register(Backend(name="dice", xp=np, array_types=(type("DiceArray", (), {}),),
                            random_types=(_Dice,)))
    try:
        assert _Dice in random_types()
        f = dj.jit(_rolls_dice)
        f(dj.ones(2))
        assert any(e.kind == "random" and "DICE.roll" in e.text for e in f.side_effects), \
            f.side_effects
    finally:
        unregister(dice)
    assert _Dice not in random_types()


def test_the_wrapped_arrays_in_place_operators_write_in_place():
    # as CuPy's: `buf -= x` changes buf (a jitted program's `out=` buffers rely on it; without
    # __isub__ Python made a new array and the buffer kept its old values)
    buf = WArray(np.arange(4.0))
    same = buf
    buf -= WArray(np.ones(4))
    buf *= 2.0
    assert buf is same
    np.testing.assert_array_equal(unwrap(same), [-2.0, 0.0, 2.0, 4.0])


def test_a_jitted_step_with_a_side_effect_computes_on_the_device_as_eagerly():
    from fake_cuda import fake_cuda, host

    with fake_cuda():
        lin = dj.nn.Linear(4, 3).to("cuda")
        x = dj.tensor(np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32),
                      device="cuda")

        def step(x):
            lin.weight.grad = None  # a side effect: the program writes into its buffers
            return dj.nn.functional.log_softmax(lin(x), -1).sum()

        np.testing.assert_array_equal(host(dj.jit(step)(x)), host(step(x)))
