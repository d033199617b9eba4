"""The pass that turns an unrolled recurrence's per-step GEMMs into one: compiled values and
gradients equal the uncompiled ones, and it applies only to complete, known groups."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler import build_program
from dongjing.compiler.passes.batch_time_matmuls import MIN_TERMS

RNG = np.random.default_rng(0)


def _rnn(steps, batch=3, n_in=4, hidden=6, used=None, x_shape=None):
    """The W5 recurrence over `used` steps (default all) of x (steps, batch, n_in)."""
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder(x_shape or (steps, batch, n_in), dj.float32, name="x")
        w = dj.Variable(RNG.standard_normal((n_in, hidden)).astype(np.float32), name="w")
        u = dj.Variable(RNG.standard_normal((hidden, hidden)).astype(np.float32) * 0.3,
                        name="u")
        b = dj.Variable(RNG.standard_normal(hidden).astype(np.float32), name="b")
        h = dj.zeros((batch, hidden))
        for t in used if used is not None else range(steps):
            h = dj.tanh(x[t] @ w + h @ u + b)
        loss = dj.sum(h)
        grads = dj.gradients(loss, [w, u, b])
    return g, x, [loss, *grads]


def _compare(g, x, fetches, xv):
    nodes = [f.node for f in fetches]
    fast = build_program(g, nodes, [x.node], 2)
    plain = build_program(g, nodes, [x.node], 0)
    for a, b in zip(fast([xv]), plain([xv])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    return [s["changes"] for s in fast.stats if s["pass"] == "batch_time_matmuls"], fast


@pytest.mark.parametrize("steps", [2, 5, 17])
def test_the_steps_products_and_the_gradient_sums_become_one_gemm_each(steps):
    g, x, fetches = _rnn(steps)
    xv = RNG.standard_normal((steps, 3, 4)).astype(np.float32)
    changes, fast = _compare(g, x, fetches, xv)
    expected = [f"{steps} products %x[t] @ %w -> one (%steps_matmul)",
                f"%b added once to the {steps} products"]
    if steps >= MIN_TERMS:  # shorter sums stay as they are
        w_sum, u_sum, b_sum = (f.node.name for f in fetches[1:])
        expected += [f"%{w_sum}: a sum of {steps} products %x[t].T @ G_t -> one",
                     f"%{u_sum}: a sum of {steps} products A_k.T @ G_k -> one",
                     f"%{b_sum}: a sum of {steps} column sums -> one"]
    assert changes == [expected]
    matmuls = [n for n in fast.graph.nodes if n.op.name == "matmul"]
    # the x[t] @ w GEMMs become one; the recurrence h @ u and its gradient g @ u.T stay per
    # step; the weight gradients are one GEMM each (or one per step for a short sum)
    gradient_gemms = 2 if steps >= MIN_TERMS else 2 * steps
    assert len(matmuls) == 1 + steps + (steps - 1) + gradient_gemms


@pytest.mark.parametrize("used, rewrites", [([0, 1, 2], 0), ([1, 2, 3, 0], 5),
                                            ([0, 2, 2, 1, 3], 4)],
                         ids=["a step missing", "steps out of order", "a step twice"])
def test_only_groups_covering_every_step_once_are_rewritten(used, rewrites):
    # a step missing: no forward group, and sums of 3 terms are too short to rewrite; a step
    # used twice: its two forward products are one node after common-subexpression
    # elimination (the forward group is complete, but that product has two readers, so the
    # bias stays per step), and its gradient's five terms are summed as general products
    # rather than over the steps of x
    g, x, fetches = _rnn(4, used=used)
    xv = RNG.standard_normal((4, 3, 4)).astype(np.float32)
    changes, _ = _compare(g, x, fetches, xv)
    assert len([c for step in changes for c in step]) == rewrites


def test_an_unknown_batch_dim_is_left_alone():
    g, x, fetches = _rnn(3, x_shape=(3, None, 4))
    nodes = [f.node for f in fetches]
    program = build_program(g, nodes, [x.node], 2)
    assert all(not s["changes"] for s in program.stats if s["pass"] == "batch_time_matmuls")
    xv = RNG.standard_normal((3, 3, 4)).astype(np.float32)
    for a, b in zip(program([xv]), build_program(g, nodes, [x.node], 0)([xv])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_fetched_term_keeps_its_sum_as_it_is():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((5, 2, 4), dj.float32, name="x")
        gs = [dj.placeholder((2, 3), dj.float32, name=f"g{t}") for t in range(5)]
        parts = [dj.transpose(x[t], 0, 1) @ gs[t] for t in range(5)]
        total = parts[0] + parts[1] + parts[2] + parts[3] + parts[4]
    feeds = [x.node] + [p.node for p in gs]
    values = [RNG.standard_normal((5, 2, 4)).astype(np.float32)] + [
        RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(5)]
    for fetches, rewritten in (([total], True), ([total, parts[3]], False)):
        nodes = [f.node for f in fetches]
        fast = build_program(g, nodes, feeds, 2)
        changes = [c for s in fast.stats if s["pass"] == "batch_time_matmuls"
                   for c in s["changes"]]
        assert bool(changes) is rewritten
        for a, b in zip(fast(values), build_program(g, nodes, feeds, 0)(values)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_a_jitted_training_step_over_an_unrolled_rnn_matches_eager():
    import dongjing.nn as nn

    w0 = RNG.standard_normal((4, 6)).astype(np.float32)
    u0 = RNG.standard_normal((6, 6)).astype(np.float32) * 0.3

    class Rnn(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(dj.tensor(w0.copy()))
            self.u = nn.Parameter(dj.tensor(u0.copy()))

        def forward(self, x):
            h = dj.zeros((x.shape[1], 6))
            for t in range(x.shape[0]):
                h = dj.tanh(x[t] @ self.w + h @ self.u)
            return dj.sum(h)

    xv = dj.tensor(RNG.standard_normal((6, 3, 4)).astype(np.float32))
    losses = []
    for jitted in (False, True):
        model = Rnn()
        opt = dj.optim.SGD(model.parameters(), lr=0.01)

        def step(x, model=model, opt=opt):
            opt.zero_grad()
            loss = model(x)
            loss.backward()
            opt.step()
            return loss

        run = dj.jit(step) if jitted else step
        losses.append([float(run(xv)) for _ in range(5)])
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)


def test_a_bias_every_step_adds_is_added_once_and_a_per_step_bias_is_not():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((4, 3, 2), dj.float32, name="x")
        w = dj.Variable(RNG.standard_normal((2, 5)).astype(np.float32), name="w")
        b = dj.Variable(RNG.standard_normal(5).astype(np.float32), name="b")
        c = [dj.constant(RNG.standard_normal(5).astype(np.float32)) for _ in range(4)]
        h_shared, h_own = dj.zeros((3, 5)), dj.zeros((3, 5))
        for t in range(4):
            h_shared = dj.tanh(x[t] @ w + h_shared + b)
            h_own = dj.tanh(x[t] @ w + h_own + c[t])
        shared_grads = dj.gradients(dj.sum(h_shared), [w, b])
        own_grads = dj.gradients(dj.sum(h_own), [w])
    xv = RNG.standard_normal((4, 3, 2)).astype(np.float32)
    for fetches, folded in (([dj.sum(h_shared), *shared_grads], True),
                            ([dj.sum(h_own), *own_grads], False)):
        changes, _ = _compare(g, x, fetches, xv)
        assert any("added once" in c for step in changes for c in step) is folded


def test_a_sum_of_plain_products_becomes_one_gemm_with_equal_values():
    g = dj.Graph()
    with g.as_default():
        a = [dj.placeholder((3, 2 + k), dj.float32, name=f"a{k}") for k in range(4)]
        w = [dj.Variable(RNG.standard_normal((2 + k, 5)).astype(np.float32)) for k in range(4)]
        total = a[0] @ w[0] + a[1] @ w[1] + a[2] @ w[2] + a[3] @ w[3]
    values = [RNG.standard_normal((3, 2 + k)).astype(np.float32) for k in range(4)]
    feeds = [p.node for p in a]
    fast = build_program(g, [total.node], feeds, 2)
    changes = [c for s in fast.stats if s["pass"] == "batch_time_matmuls" for c in s["changes"]]
    assert changes == [f"%{total.node.name}: a sum of 4 products A_k.T @ G_k -> one"]
    assert [n.op.name for n in fast.graph.nodes].count("matmul") == 1
    np.testing.assert_allclose(fast(values)[0], build_program(g, [total.node], feeds, 0)(values)[0],
                               rtol=1e-5, atol=1e-5)
