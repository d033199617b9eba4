"""dj.jit's source conversion: Python control flow on tensors, jitted unchanged, gives the eager
values and gradients (tensor and Python conditions, nested two deep, break / continue / early
return), plus the seeds' examples, a greedy decoder, a tensor-length RNN and Collatz loops."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.nn import Parameter

RNG = np.random.default_rng(11)
W0 = RNG.uniform(-1, 1, 3).astype(np.float32)


def _both(fn, *args, w0=W0):
    """(value, w.grad) of `loss = fn(*args, w); loss.backward()` eagerly and jitted."""
    results = []
    for jit in (False, True):
        w = Parameter(dj.tensor(w0.copy()))

        def step(*a):
            loss = fn(*a, w)  # noqa: B023  (called within this iteration)
            loss.backward()
            return loss

        runner = dj.jit(step) if jit else step
        values, grads = [], []
        for _ in range(2):  # the second jitted call runs the cached graph
            w.grad = None
            values.append(runner(*args).numpy())
            grads.append(None if w.grad is None else w.grad.numpy())
        results.append((values, grads))
    (ev, eg), (jv, jg) = results
    for e, j in zip(ev + eg, jv + jg):
        np.testing.assert_allclose(j, e, rtol=2e-5, atol=1e-6)
    return ev[0], eg[0]


def nested_if(x, k, w):
    y = x * w
    if y.sum() > 0:
        if k > 1:
            y = y * 2
        else:
            y = dj.tanh(y)
    else:
        if y.max() > -0.2:
            y = y - 1
        else:
            y = y * y
    return (y * w).sum()


def while_break_continue(x, k, w):
    i = 0
    acc = x * 0
    while acc.sum() < 4:
        i = i + 1
        if i > 20:
            break
        if (x * i).sum() < 0:
            acc = acc + w * w + 0.05
            continue
        for j in range(k):
            if j == 2:
                break
            acc = acc + dj.tanh(x * w) + 0.1
    return acc.sum()


def early_return(x, k, w):
    h = x * w
    for _ in range(k):
        h = dj.tanh(h + w)
        if h.sum() > 1.5:
            return (h * 3).sum()
    while h.sum() < 2:
        h = h + 0.5 * w * w + 0.1
        if h.max() > 2.5:
            return h.sum() * 2
    return h.sum()


def for_over_tensor(x, k, w):
    total = w * 0
    for row in x:
        if row.sum() > 0 and k > 0:
            total = total + row * w
        elif not (row.max() > 1.0 or row.min() < -1.5):
            total = total - w * row.sum()
    scale = 2.0 if k > 1 else 0.5
    y = total * scale if total.sum() > 0 else total - w
    return y.sum()


VECTORS = [np.array([0.5, 1.0, -0.3], np.float32), np.array([-0.9, -0.2, 0.1], np.float32),
           np.array([-2.0, -1.0, -1.5], np.float32)]


@pytest.mark.parametrize("fn", [nested_if, while_break_continue, early_return])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("xi", range(len(VECTORS)))
def test_constructs_match_eager(fn, k, xi):
    _both(fn, dj.tensor(VECTORS[xi]), k)


def first_negative_row(x, k, w):
    found = w * 0
    for row in x:
        if row.sum() < 0:
            found = row * w
            break
        if k > 1:
            continue
        found = found + w
    return found.sum()


@pytest.mark.parametrize("fn", [for_over_tensor, first_negative_row])
@pytest.mark.parametrize("k", [0, 2])
def test_for_over_a_tensor_matches_eager(fn, k):
    x = RNG.uniform(-2, 2, (5, 3)).astype(np.float32)
    _both(fn, dj.tensor(x), k)
    _both(fn, dj.tensor(np.abs(x)), k)  # no row is negative: the loop runs to its end


def _ops(graph) -> list:
    """Op names of a graph and of every sub-graph of its control-flow nodes."""
    names = []
    for node in graph.nodes:
        names.append(node.op.name)
        for value in node.attrs.values():
            if isinstance(value, dj.Graph):
                names += _ops(value)
    return names


def test_tensor_conditions_become_graph_ops():
    traced = dj.jit(early_return).graph(dj.tensor(VECTORS[0]), 2, Parameter(dj.tensor(W0)))
    assert {"cond", "while_loop"} <= set(_ops(traced))


def test_python_conditions_stay_python():
    traced = dj.jit(nested_if).graph(dj.tensor(VECTORS[0]), 3, dj.tensor(W0))
    assert _ops(traced).count("cond") == 2  # the two tensor `if`s; `k > 1` stays Python


def test_seed_002_counter_loop_jitted_unchanged():
    def counters(first_counter, second_counter):
        while (first_counter < second_counter)[0]:
            first_counter += 2
            second_counter += 1
        return first_counter, second_counter

    eager = counters(dj.tensor([0.0]), dj.tensor([10.0]))
    jitted = dj.jit(counters)(dj.tensor([0.0]), dj.tensor([10.0]))
    assert [t.numpy().tolist() for t in jitted] == [t.numpy().tolist() for t in eager]
    assert jitted[0].numpy().tolist() == [20.0]
    again = dj.jit(counters)(dj.tensor([5.0]), dj.tensor([6.0]))  # the loop runs in the graph
    assert [t.numpy().tolist() for t in again] == [[7.0], [7.0]]


def test_seed_004_chainer_example_jitted_unchanged():
    results = []
    for jit in (False, True):
        x = dj.tensor(np.array([5], dtype=np.float32), requires_grad=True)  # the seed's Variable

        def script():
            y = x ** 2 + x  # noqa: B023
            y.backward()
            return y

        y = (dj.jit(script) if jit else script)()
        results.append((y.numpy().tolist(), x.grad.numpy().tolist()))
    assert results[0] == results[1] == ([30.0], [11.0])


def greedy_decode(h, emb, w_out, end):
    """Feed back the argmax token until every sequence has emitted `end`; count the steps."""
    done = h.sum(1) != h.sum(1)  # all False
    steps = 0
    while not _all(done):
        token = (h @ w_out).argmax(1)
        done = done | (token == end)
        h = dj.tanh(h + emb[token])
        steps = steps + 1
        if steps >= 50:
            break
    return h, steps


def _all(done):
    return done.sum() == done.shape[0]


def test_greedy_decoding_stops_when_every_sequence_ended():
    rng = np.random.default_rng(10)
    h = dj.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    emb = dj.tensor(rng.standard_normal((5, 6)).astype(np.float32))
    w_out = dj.tensor(rng.standard_normal((6, 5)).astype(np.float32))
    end = dj.tensor(np.int64(3))
    eh, es = greedy_decode(h, emb, w_out, end)
    jh, js = dj.jit(greedy_decode)(h, emb, w_out, end)
    np.testing.assert_allclose(jh.numpy(), eh.numpy(), rtol=1e-5)
    assert int(js.numpy()) == es and 1 < es < 50


def rnn(x, n, w_xh, w_hh, b):
    h = x[0] @ w_xh * 0
    for t in range(n):
        h = dj.tanh(x[t] @ w_xh + h @ w_hh + b)
    return h.sum()


@pytest.mark.parametrize("steps", [0, 1, 7])
def test_rnn_over_a_tensor_number_of_steps(steps):
    rng = np.random.default_rng(5)
    x = dj.tensor(rng.standard_normal((8, 4, 3)).astype(np.float32))
    params = [rng.uniform(-0.5, 0.5, s).astype(np.float32) for s in ((3, 5), (5, 5), (5,))]
    results = []
    for jit in (False, True):
        ps = [Parameter(dj.tensor(p)) for p in params]

        def step(x, n):
            loss = rnn(x, n, *ps)  # noqa: B023
            loss.backward()
            return loss

        runner = dj.jit(step) if jit else step
        loss = runner(x, dj.tensor(np.int64(steps)))
        results.append([loss.numpy()] + [p.grad.numpy() if p.grad is not None else
                                         np.zeros_like(p.numpy()) for p in ps])
    for e, j in zip(*results):
        np.testing.assert_allclose(j, e, rtol=1e-5, atol=1e-6)

    def forward(x, n):
        return rnn(x, n, *[dj.tensor(p) for p in params])

    graph = dj.jit(forward).graph(x, dj.tensor(np.int64(steps)))
    assert "while_loop" in _ops(graph)


def collatz_steps(n):
    steps = n * 0
    while n != 1:
        half = (n.float() * 0.5).long()
        if n - 2 * half == 0:
            n = half
        else:
            n = 3 * n + 1
        steps = steps + 1
    return steps


@pytest.mark.parametrize("start", [1, 6, 27])
def test_collatz_integer_loop(start):
    expected = {1: 0, 6: 8, 27: 111}[start]
    n = dj.tensor(np.int64(start))
    assert int(collatz_steps(n).numpy()) == expected
    assert int(dj.jit(collatz_steps)(n).numpy()) == expected


def test_convert_false_traces_as_written():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    assert dj.jit(f)(dj.tensor([-1.0])).numpy().tolist() == [1.0]
    with pytest.raises(dj.GraphError, match="dj.cond"):
        dj.jit(f, convert=False)(dj.tensor([-1.0]))


def test_converted_source_shows_the_runtime_calls_and_callees():
    def helper(v):
        return v * 2 if v.sum() > 0 else v

    def f(x):
        while x.sum() < 10:
            x = helper(x) + 1
        return x

    jitted = dj.jit(f)
    source = jitted.converted_source(dj.tensor([1.0]))
    assert "_dj_ag.while_stmt(" in source and "def f(x):" in source
    assert "def helper(v):" in source and "_dj_ag.if_exp(" in source
    assert jitted(dj.tensor([1.0])).numpy().tolist() == [15.0]


class Gate(dj.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = dj.nn.Linear(3, 3)

    def forward(self, x):
        for _ in range(3):
            if x.sum() > 0:
                x = self.lin(x)
            else:
                x = x + 1
        return x


def test_module_forward_is_converted():
    model = Gate()
    x = dj.tensor(np.array([[-0.5, 0.2, -0.1]], np.float32))
    np.testing.assert_allclose(dj.jit(model)(x).numpy(), model(x).numpy(), rtol=1e-6)


class Residual(Gate):
    """super() inside a converted loop; a nested function with a `return` inside a loop."""

    def forward(self, x, *, reps=2):
        def grow(v):
            while v.sum() < 5:
                v = v + 1
                if v.max() > 3:
                    return v * 10
            return v

        for _ in range(reps):
            x = super().forward(x) * 0.5
        if x.sum() > 100:
            x = x * 0
        elif x.sum() > 0:
            x = x + 1
        else:
            x = grow(x)
        return x


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_subclass_forward_with_super_and_nested_function(sign):
    model = Residual()
    with dj.no_grad():
        model.lin.weight.copy_(np.eye(3, dtype=np.float32))
        model.lin.bias.zero_()
    x = dj.tensor(np.array([[1.0, 0.5, 0.2]], np.float32) * sign)
    np.testing.assert_allclose(dj.jit(model)(x).numpy(), model(x).numpy(), rtol=1e-6)
