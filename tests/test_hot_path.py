"""The eager per-op shortcuts keep the semantics of the general path: the process-wide counts
that spare thread-local reads, the one-call binary dispatch, keeps_dtype, and the list of weak
references that holds a base's views."""

import contextlib
import gc
import threading

import numpy as np
import pytest

import dongjing as dj
from dongjing.autograd import grad_mode
from dongjing.errors import DongjingError
from dongjing.graph import builder
from dongjing.registry import Kind, Spec, define


def test_set_grad_enabled_as_a_statement_takes_effect_at_once():
    x = dj.ones(2, requires_grad=True)
    try:
        dj.set_grad_enabled(False)  # PyTorch: a plain call switches the mode until changed
        assert not dj.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        dj.set_grad_enabled(True)
    assert (x * 2).requires_grad
    assert grad_mode.disabled_threads == 0


def test_set_grad_enabled_as_context_and_decorator_restores_the_mode():
    with dj.set_grad_enabled(False):
        assert not dj.is_grad_enabled()
    assert dj.is_grad_enabled()

    @dj.set_grad_enabled(False)
    def f(x):
        return x * 2

    assert dj.is_grad_enabled()  # decorating is not a statement
    assert not f(dj.ones(2, requires_grad=True)).requires_grad
    assert dj.is_grad_enabled()
    stored = dj.no_grad()  # no_grad acts only when entered, as PyTorch's
    assert dj.is_grad_enabled()
    with stored:
        assert not dj.is_grad_enabled()
    assert grad_mode.disabled_threads == 0


@contextlib.contextmanager
def _held_in_another_thread(context):
    """Run the block while another thread sits inside `context()`."""
    inside, release = threading.Event(), threading.Event()

    def other():
        with context():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    inside.wait(10)
    try:
        yield
    finally:
        release.set()
        t.join()


def test_another_threads_no_grad_does_not_stop_recording_here():
    with _held_in_another_thread(dj.no_grad):
        assert grad_mode.disabled_threads == 1
        x = dj.ones(2, requires_grad=True)
        assert (x + x).requires_grad and (x * x).grad_fn is not None
        with dj.no_grad():  # while the count is not 0, this thread's own mode decides
            assert not (x + x).requires_grad
    assert grad_mode.disabled_threads == 0


def test_another_threads_default_graph_does_not_make_ops_here_symbolic():
    with _held_in_another_thread(lambda: dj.Graph().as_default()):
        assert builder.graphs_open == 1
        a = dj.ones(2)
        assert (a + a)._node is None and dj.tanh(a)._node is None
        with dj.Graph().as_default():
            assert (a + a)._node is not None
    assert builder.graphs_open == 0


def test_binary_fast_path_agrees_with_the_general_path():
    a = dj.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    b = dj.tensor(np.ones(3, np.float32))
    for _ in range(2):  # the second call takes the learned dtype verdict
        out = a * b + a
        assert out.dtype == dj.float32 and out.grad_fn is not None
    ints = dj.tensor([1, 2, 3])
    assert (ints + ints).dtype == dj.int64
    assert (ints / ints).dtype == dj.float32  # a verdict for one dtype pair is not reused
    assert (ints == ints).dtype == dj.bool
    out.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 3), 2.0))


def test_keeps_dtype_holds_infer_to_the_input_dtype():
    bad = define("bad_view", forward=lambda xp, x, n: x.astype(xp.float64),
                 infer=lambda x, n: (x.shape, np.dtype("float64")), kind=Kind.OPAQUE,
                 keeps_dtype=True, table=False)
    with pytest.raises(DongjingError, match="keeps_dtype"):
        bad.infer(Spec((2,), np.dtype("float32")), n=1)


def test_views_are_refreshed_after_many_dead_views():
    base = dj.zeros(4, 3)
    for i in range(100):  # dead views accumulate and are pruned
        base[i % 4]
    gc.collect()
    assert len(base._views) < 100
    w = dj.ones(3, requires_grad=True)
    view = base[1]
    with dj.no_grad():
        base.add_(1.0)
    assert view.numpy().tolist() == [1.0, 1.0, 1.0]
    y = base * 1
    v2 = y[2]
    y.add_(w)  # an in-place write through the base gives its live views the new history
    v2.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1.0, 1.0, 1.0])
