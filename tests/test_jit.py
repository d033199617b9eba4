"""dj.jit on pure functions and modules: traced results equal eager ones; the signature cache
(hits, retraces with reasons); inspection (graph, source, compile times); clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn

RNG = np.random.default_rng(0)


def _x(*shape):
    return dj.tensor(RNG.standard_normal(shape).astype(np.float32))


def _fn(x, w, scale):
    h = dj.tanh(x @ w) * scale
    return h.sum(dim=1), {"max": h.max(), "mean": dj.mean(h)}


def test_pure_function_equals_eager():
    x, w = _x(6, 4), _x(4, 3)
    jitted = dj.jit(_fn)
    got, eager = jitted(x, w, 2.0), _fn(x, w, 2.0)
    np.testing.assert_allclose(got[0].numpy(), eager[0].numpy(), rtol=1e-6)
    for key in ("max", "mean"):
        np.testing.assert_allclose(got[1][key].numpy(), eager[1][key].numpy(), rtol=1e-6)
    assert isinstance(got, tuple) and isinstance(got[1], dict)
    assert not got[0].requires_grad and not got[0].is_symbolic


def test_numpy_arguments_and_none_output():
    @dj.jit
    def f(x, flag=None):
        return (dj.relu(dj.tensor(1.0) * x), None, flag)

    out = f(np.array([-1.0, 2.0]), flag="on")
    assert out[0].dtype == np.float64 and out[0].tolist() == [0.0, 2.0]
    assert out[1] is None and out[2] == "on"


def test_same_signature_hits_the_cache():
    jitted = dj.jit(_fn)
    w = _x(64, 3)
    for _ in range(3):
        jitted(_x(64, 64), w, 1.0)
    assert jitted.cache_size == 1 and jitted.retrace_reasons == []
    assert len(jitted.compile_times) == 1 and jitted.compile_times[0] > 0


def test_new_signature_retraces_with_a_reason():
    jitted = dj.jit(_fn)
    w = _x(64, 3)
    jitted(_x(64, 64), w, 1.0)
    jitted(_x(29, 64), w, 1.0)
    assert jitted.retrace_reasons == ["arg 0: shape (64, 64) -> (29, 64)"]
    jitted(_x(64, 64), w, 1.0)  # back to the first signature: a hit
    assert jitted.cache_size == 2
    jitted(_x(64, 64), w, 0.5)
    jitted(_x(64, 64).double(), w, 0.5)
    assert jitted.retrace_reasons[1:] == ["arg 2: 1.0 -> 0.5", "arg 0: dtype float32 -> float64"]
    assert jitted.cache_size == 4 and len(jitted.compile_times) == 4


def test_retraced_results_are_right_for_each_shape():
    jitted = dj.jit(_fn)
    w = _x(5, 2)
    for n in (3, 8, 3, 1):
        x = _x(n, 5)
        np.testing.assert_allclose(jitted(x, w, 1.5)[0].numpy(), _fn(x, w, 1.5)[0].numpy(),
                                   rtol=1e-6)
    assert jitted.cache_size == 3


def test_graph_and_source_for_a_signature():
    jitted = dj.jit(_fn)
    x, w = _x(2, 4), _x(4, 3)
    graph = jitted.graph(x, w, 1.0)
    assert isinstance(graph, dj.Graph)
    assert [n.name for n in graph.placeholders()] == ["x", "w"]
    assert [n.shape for n in graph.placeholders()] == [(2, 4), (4, 3)]
    optimized = jitted.optimized_graph(x, w, 1.0)
    assert len(optimized.nodes) <= len(graph.nodes)
    source = jitted.source(x, w, 1.0)
    assert isinstance(source, str) and "def " in source and "tanh" in source
    assert jitted.cache_size == 1


def test_jit_module_calls_forward_and_tracks_training_flag():
    dj.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    twin = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
    twin.load_state_dict(model.state_dict())
    jitted = dj.jit(model)
    x = _x(5, 4)
    for _ in range(2):  # training mode: batch statistics, running stats updated by the graph
        np.testing.assert_allclose(jitted(x).numpy(), twin(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model[1].running_mean.numpy(), twin[1].running_mean.numpy(),
                               rtol=1e-6)
    assert model[1].num_batches_tracked.item() == 2
    model.eval()
    twin.eval()
    np.testing.assert_allclose(jitted(x).numpy(), twin(x).numpy(), rtol=1e-5, atol=1e-6)
    assert jitted.cache_size == 2
    assert "training flags" in jitted.retrace_reasons[0]
    assert len(list(jitted.parameters())) == 6  # attributes of the module pass through


def test_python_if_on_a_traced_value_names_the_line():
    @dj.jit(convert=False)  # converted, the `if` becomes a dj.cond (tests/test_autograph.py)
    def f(x):
        if x.sum() > 0:  # the line the error names
            return x
        return -x

    with pytest.raises(dj.GraphError) as info:
        f(dj.ones(3))
    message = str(info.value)
    assert "test_jit.py:" in message and "dj.cond" in message and "dj.while_loop" in message
    assert "dj.jit traced f()" in message
    assert dj.get_default_graph() is None and f.cache_size == 0


def test_item_while_tracing_says_what_to_do():
    @dj.jit
    def f(x):
        return x.sum().item()

    with pytest.raises(dj.GraphError, match="return a tensor"):
        f(dj.ones(3))


def test_nested_jit_is_inlined():
    inner = dj.jit(lambda x: x * 2.0)

    @dj.jit
    def outer(x):
        return inner(x) + 1.0

    assert outer(dj.ones(2)).tolist() == [3.0, 3.0]
    assert inner.cache_size == 0 and outer.cache_size == 1


def test_unhashable_argument_is_a_clear_error():
    jitted = dj.jit(lambda x, opts: x)
    with pytest.raises(TypeError, match="arg 1.*unhashable set"):
        jitted(dj.ones(2), {1, 2})


def test_nested_and_keyword_tensor_arguments_are_fed():
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    jitted = dj.jit(lambda pair, scale=None: pair.a * pair.b + scale["c"])
    for k in (1.0, 2.0):
        out = jitted(Pair(dj.ones(2), dj.full((2,), k)), scale={"c": dj.full((2,), 3 * k)})
        assert out.tolist() == [4 * k, 4 * k]
    assert jitted.cache_size == 1
    assert [n.name for n in jitted.graph(Pair(dj.ones(2), dj.ones(2)), scale={"c": dj.ones(2)})
            .placeholders()] == ["pair_0", "pair_1", "scale_c"]


def test_jit_on_a_method_binds_self():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)
            self.drop = nn.Dropout(0.5)

        @dj.jit
        def forward(self, x):
            return self.drop(self.fc(x))

    dj.manual_seed(0)
    net = Net()
    x = dj.ones(200, 3)
    first, second = net(x).numpy(), net(x).numpy()
    assert (first == 0).any() and not np.array_equal(first == 0, second == 0)  # fresh masks
    net.eval()
    np.testing.assert_allclose(net(x).numpy(), net.fc(x).numpy(), rtol=1e-6)
    assert Net.forward.cache_size == 2
    assert Net.forward.retrace_reasons == ["arg 0: training flags (True, True, True) -> "
                                           "(False, False, False)"]


def test_variables_are_captured_by_reference():
    w = dj.Variable(np.ones(3, np.float32))
    jitted = dj.jit(lambda x, v: x * v)
    assert jitted(dj.ones(3), w).tolist() == [1.0, 1.0, 1.0]
    dj.assign(w, [2.0, 2.0, 2.0])
    assert jitted(dj.ones(3), w).tolist() == [2.0, 2.0, 2.0]
    assert jitted.cache_size == 1


def test_many_retraces_warn_once():
    jitted = dj.jit(lambda x, k: x * k)
    with pytest.warns(UserWarning, match="traced 8 times.*arg 1: 6 -> 7"):
        for k in range(8):
            jitted(dj.ones(2), k)
    assert jitted(dj.ones(2), 8).tolist() == [8.0, 8.0] and jitted.cache_size == 9
