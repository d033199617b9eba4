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
from dongjing.core.registry import Kind, Spec, define
from dongjing.errors import DongjingError
from dongjing.graph import builder


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


# --- the plain-mode flag (eager_modes) and the engine's shared-gradient rule ----------------
def test_plain_mode_flag_follows_graphs_profiler_and_anomaly():
    from dongjing.core.eager_modes import plain

    assert plain.on
    with dj.Graph().as_default():
        assert not plain.on
        assert dj.placeholder(dj.float32, [2]).grad_fn is None  # ops there build nodes
    assert plain.on
    with dj.autograd.detect_anomaly():
        assert not plain.on
        x = dj.tensor([0.0], requires_grad=True)
        with pytest.raises(DongjingError), np.errstate(divide="ignore"):
            dj.log(x * 0.0)  # -inf: anomaly mode still checks every op
    assert plain.on
    with dj.profiler.profile() as prof:
        assert not plain.on
        dj.tensor([1.0, 2.0]) * dj.tensor([3.0, 4.0])
    assert plain.on
    assert any("mul" in str(e) for e in prof.events())


def test_parameters_take_the_binary_fast_path_and_record():
    w = dj.nn.Parameter(dj.tensor(np.ones((2, 2), np.float32)))
    x = dj.tensor(np.ones((3, 2), np.float32))
    y = x @ w + w.sum()
    assert y.grad_fn is not None and type(y) is dj.Tensor
    y.sum().backward()
    # x's column sums (3) plus one per entry of y (6)
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 2), 3.0 + 6.0))


def test_a_gradient_sent_along_two_edges_is_not_shared_by_two_leaves():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    y = dj.tensor([3.0, 4.0], requires_grad=True)
    g = dj.tensor([1.0, 1.0])
    (x + y).backward(g)  # add's rule sends one object to both leaves: each keeps a copy
    assert x.grad is not y.grad and x.grad is not g
    x.grad.add_(10.0)
    g.add_(5.0)
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0])


def test_a_passed_through_sum_is_not_added_into_twice():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    z = (h + h) + (h + h)  # sums built in the engine, then sent on by add along two edges
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 8.0])


def test_unknown_rank_values_fail_over_to_the_graph_error():
    from dongjing.compat import v1 as tf

    x = tf.placeholder("float")
    with pytest.raises(dj.GraphError, match="unknown rank"):
        dj.sum(x)
    with pytest.raises(dj.GraphError, match="unknown rank"):
        dj.exp(x) * x


def test_jit_training_flags_follow_every_change_of_the_module_tree():
    import dongjing.nn as nn
    from dongjing.runtime.signature import _walk_flags, training_flags

    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.Linear(2, 2))
    changes = [
        lambda: model.eval(),
        lambda: model.train(),
        lambda: setattr(model[1], "training", False),
        lambda: model.add_module("extra", nn.ReLU()),
        lambda: setattr(model.extra, "training", False),
        lambda: setattr(model, "extra", nn.Tanh()),
        lambda: delattr(model, "extra"),
        lambda: model[0].register_module("inner", nn.Dropout(0.1)),
        lambda: setattr(model[0], "inner", nn.Parameter(dj.zeros(1))),
    ]
    assert training_flags(model) == _walk_flags(model)
    for change in changes:
        before = training_flags(model)
        change()
        assert training_flags(model) == _walk_flags(model)
        assert training_flags(model) is training_flags(model)  # cached until the next change
        assert training_flags(model) != before  # each change above changes the flags
