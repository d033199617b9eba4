"""Loops generated into compiled code (compiler/loops.py): values and gradients equal the
interpreter's for nested, bounded, empty and aliasing loops; loop-invariant work runs once on
entry, but never work that depends on the loop or draws random numbers; generated loops run
from several threads; basic `getitem` keys are written out as subscripts."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import dongjing as dj

X0 = np.array([[0.3, -0.7, 0.5], [0.1, 0.2, -0.4], [0.6, -0.1, 0.05], [-0.3, 0.4, 0.2]])
W0 = np.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [-0.1, 0.2, 0.7]])


def _loop_source(sess, fetches) -> tuple[str, str]:
    """The generated loop function's statements before and inside its `while True:`."""
    source = sess.source(fetches)
    start = source.index("def _loop_while")
    end = source.find("\n\n", start)
    text = source[start:] if end < 0 else source[start:end]
    before, _, inside = text.partition("while True:")
    return before, inside


def _rnn(limit=None, nested=False, branch=False, view=False, rows=4):
    """Steps over the rows of x: h = tanh(h @ (w * 2) + x[i]); optionally a nested loop, a
    cond in the body, or a body output that is a view of an intermediate."""
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((rows, 3), dj.float64, name="x")
        n = dj.placeholder((), dj.int64, name="n")
        w = dj.Variable(W0.copy(), name="w")

        def body(i, h):
            h = dj.tanh(h @ (w * 2.0) + x[i])
            if nested:
                _, h = dj.while_loop(lambda j, v: j < 2, lambda j, v: (j + 1, v * 0.9 + 0.01),
                                     [dj.constant(np.int64(0)), h])
            if branch:
                h = dj.cond(dj.sum(h) > 0, lambda: h * 0.5, lambda: h * h)
            if view:
                h = (h @ w + 1.0).T
            return i + 1, h

        h0 = dj.constant(np.zeros((3, 3)) + 0.1)
        _, h = dj.while_loop(lambda i, h: i < n, body, [dj.constant(np.int64(0)), h0],
                             maximum_iterations=limit)
        loss = dj.sum(h * h)
        grads = dj.gradients(loss, [x, w])
    return g, x, n, w, [loss, *grads]


CASES = {"plain": {}, "nested": {"nested": True}, "branch": {"branch": True},
         "view": {"view": True}, "bounded": {"limit": 2}, "bound_zero": {"limit": 0}}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("steps", [0, 1, 4])
def test_generated_loops_equal_the_interpreter(case, steps):
    g, x, n, w, fetches = _rnn(**CASES[case])
    fetches = [f for f in fetches if f is not None]  # a loop that never runs: no gradient
    feed = {x: X0, n: steps}
    want = dj.Session(g, optimize=0).run(fetches, feed)
    sess = dj.Session(g, optimize=2)
    assert "def _loop_while" in sess.source(fetches)  # bounded: a while_loop in a cond chain
    for _ in range(2):  # a second run reuses the loop's buffers
        got = sess.run(fetches, feed)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_loop_invariant_work_runs_once_on_entry():
    g, x, n, w, fetches = _rnn()
    before, inside = _loop_source(dj.Session(g, optimize=2), fetches)
    hoisted = [line for line in before.splitlines() if "_np.multiply(" in line]
    assert len(hoisted) == 1 and "  # %mul_0  " in hoisted[0]  # w * 2.0: captured values only
    assert "_np.multiply(" not in inside
    assert "_np.matmul(" in inside and "_np.matmul(" not in before  # h @ ...: the loop's


def test_work_that_depends_on_the_loop_is_not_hoisted():
    g = dj.Graph()
    with g.as_default():
        n = dj.placeholder((), dj.int64, name="n")
        w = dj.Variable(np.array([1.0, 2.0]), name="w")
        # w * i and w * 3 + i read the counter; only w * 3 is invariant
        _, s = dj.while_loop(lambda i, s: i < n,
                             lambda i, s: (i + 1, s + w * dj.cast(i, dj.float64)
                                           + (w * 3.0 + dj.cast(i, dj.float64))),
                             [dj.constant(np.int64(0)), dj.constant(np.zeros(2))])
    sess = dj.Session(g, optimize=2)
    before, inside = _loop_source(sess, s)
    assert before.count("_np.multiply(") == 1 and inside.count("_np.multiply(") == 1
    i = np.arange(5.0)
    want = (np.array([1.0, 2.0])[:, None] * i + np.array([3.0, 6.0])[:, None] + i).sum(1)
    np.testing.assert_allclose(sess.run(s, {n: 5}), want, rtol=1e-12)


def test_random_draws_stay_in_the_loop():
    g = dj.Graph()
    with g.as_default():
        n = dj.placeholder((), dj.int64, name="n")
        ones = dj.constant(np.ones(64))  # an invariant input, but each draw must be fresh
        _, s = dj.while_loop(lambda i, s: i < n,
                             lambda i, s: (i + 1, s + dj.dropout_mask(ones, 0.5)),
                             [dj.constant(np.int64(0)), dj.constant(np.zeros(64))])
    sess = dj.Session(g, optimize=2)
    before, inside = _loop_source(sess, s)
    assert "dropout_mask" in inside and "dropout_mask" not in before
    total = sess.run(s, {n: 50})
    assert len(np.unique(total)) > 2  # hoisted, every element would be 0 or 100


def test_generated_loops_run_from_several_threads():
    g, x, n, w, fetches = _rnn()
    sess = dj.Session(g, optimize=2)
    want = dj.Session(g, optimize=0).run(fetches, {x: X0, n: 4})
    errors: list = []

    def work(k):
        try:
            for _ in range(20):
                got = sess.run(fetches, {x: X0, n: 4})
                for a, b in zip(got, want):
                    np.testing.assert_allclose(a, b, rtol=1e-12)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_basic_getitem_keys_are_subscripts():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((4, 5, 6), dj.float64, name="x")
        i = dj.placeholder((), dj.int64, name="i")
        picks = [x[1], x[-1, 2:4], x[:, None, ::2], x[..., 3], x[i], x[i, 1:3], x[1, 2, 3],
                 x[1:, i]]
    xv = np.arange(120.0).reshape(4, 5, 6)
    want = [xv[1], xv[-1, 2:4], xv[:, None, ::2], xv[..., 3], xv[2], xv[2, 1:3], xv[1, 2, 3],
            xv[1:, 2]]
    sess = dj.Session(g, optimize=2)
    assert "_getitem(" not in sess.source(picks)
    for got, expected in zip(sess.run(picks, {x: xv, i: 2}), want):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(IndexError):
        sess.run(x[i], {x: xv, i: 9})
    with pytest.raises(IndexError):
        dj.Session(g, optimize=0).run(x[i], {x: xv, i: 9})


def test_recorded_stacks_follow_the_iterations_of_each_run():
    g, x, n, w, fetches = _rnn(rows=40)
    sess, reference = dj.Session(g, optimize=2), dj.Session(g, optimize=0)
    xv = np.sin(np.arange(120.0)).reshape(40, 3)
    for steps in (4, 1, 0, 37, 3, 40):  # the stacks start at the last run's size and grow
        feed = {x: xv, n: steps}
        for a, b in zip(sess.run(fetches, feed), reference.run(fetches, feed)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_carried_value_passed_on_to_another_loop_value_is_not_overwritten():
    # b takes a's previous value and is read after a's new value is computed: a's new value
    # must not be written over storage b still holds
    g = dj.Graph()
    with g.as_default():
        n = dj.placeholder((), dj.int64, name="n")
        a0 = dj.placeholder((3, 4), dj.float64, name="a0")

        def body(i, a, b, s):
            new_a = dj.tanh(a * 1.3 + 0.2)
            new_s = s + b * b
            return i + 1, new_a, a, new_s

        zeros = dj.constant(np.zeros((3, 4)))
        _, a, b, s = dj.while_loop(lambda i, a, b, s: i < n, body,
                                   [dj.constant(np.int64(0)), a0, zeros, zeros])
        total = dj.sum(s) + dj.sum(a * b)
        (grad,) = dj.gradients(total, [a0])
    av = np.linspace(-1, 1, 12).reshape(3, 4)
    for fetches in ([a, b, s], [total, grad]):
        want = dj.Session(g, optimize=0).run(fetches, {n: 6, a0: av})
        got = dj.Session(g, optimize=2).run(fetches, {n: 6, a0: av})
        for x, y in zip(got, want):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)
