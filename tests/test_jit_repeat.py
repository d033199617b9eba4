"""The repeat-call path of a jitted module (the last trace runs again when the training flags
and the arguments' shapes and dtypes are those of the last call): it never runs a trace made for
other flags, shapes, dtypes or `.grad` states."""

from __future__ import annotations

import numpy as np

import dongjing as dj
import dongjing.nn as nn


def _model():
    dj.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))


def test_repeat_calls_follow_flags_shapes_and_dtypes():
    model = _model()
    run = dj.jit(model)
    x = dj.tensor(np.ones((3, 4), np.float32))
    run(x)
    assert run._repeat is not None and run._repeat[1] is run._last_trace
    run(x)
    assert len(run.compile_times) == 1
    model[2].training = False  # a submodule's flag, set directly
    with dj.no_grad():
        got = run(x).numpy()
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-6)
    assert len(run.compile_times) == 2
    model.train()
    a, b = run(x).numpy(), run(x).numpy()
    assert not np.array_equal(a, b)  # dropout again, fresh masks each call
    assert len(run.compile_times) == 2  # the training trace, found in the cache
    y = run(dj.tensor(np.ones((5, 4), np.float32)))
    assert y.shape == (5, 2) and len(run.compile_times) == 3
    z = run(dj.tensor(np.ones((5, 4), np.float64)))
    assert z.dtype == dj.float64 and len(run.compile_times) == 4
    run.clear_cache()
    assert run._repeat is None


def test_repeat_call_respects_grad_guards_and_gradients():
    model = _model().eval()
    run = dj.jit(model)
    x = dj.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), requires_grad=True)
    for _ in range(3):
        for p in model.parameters():
            p.grad = None
        x.grad = None
        run(x).sum().backward()
    want = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
    for p in model.parameters():
        p.grad = None
    x.grad = None
    model(x).sum().backward()
    got = [p.grad.numpy() for p in model.parameters()] + [x.grad.numpy()]
    for a, b in zip(want, got):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    # a tensor that requires grad and one that does not share the key: both work
    out = run(dj.tensor(np.ones((3, 4), np.float32)))
    assert out.grad_fn is not None  # the parameters still require grad
    with dj.no_grad():
        assert run(x).grad_fn is None
