"""What a jitted function's forward program keeps for its compiled backward: only the values the
backward program still reads after the compiler's passes (each kept value costs a copy)."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
from dongjing import short_paths


@pytest.mark.parametrize("blocked_conv", [True, False], ids=["conv2d-op", "im2col"])
def test_forward_returns_only_what_the_backward_reads(blocked_conv):
    with contextlib.nullcontext() if blocked_conv else short_paths.disabled():
        _forward_returns_only_what_the_backward_reads(blocked_conv)


def _forward_returns_only_what_the_backward_reads(blocked_conv):
    dj.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16, 3))
    run = dj.jit(model)
    x = dj.tensor(np.random.default_rng(0).standard_normal((5, 2, 4, 4)).astype(np.float32))
    run(x).sum().backward()
    (plan,) = run._last_trace.grad_plans.values()
    saved = [i for kind, i in plan.bwd_sources if kind == "saved"]
    assert sorted(saved) == list(range(len(plan.forward.fetch_nodes) - plan.n_forward))
    if blocked_conv:  # the conv2d op's weight gradient reads the fed input, no im2col is kept
        assert ("fed", 0) in plan.bwd_sources
    else:
        assert ("none", 0) in plan.bwd_sources  # max-pool's mask: simplified away
    read = [kept is not None for kept in plan.backward.feed_nodes]
    for (kind, _), used in zip(plan.bwd_sources, read):
        assert used == (kind != "none")
    _assert_grads_equal_eager(model, x)


def test_views_are_saved_as_the_values_they_view():
    """A reshaped im2col matrix is kept as the unfold2d output (new storage of the run, returned
    as it is) and reshaped again by the backward, not copied by the forward (F.conv2d's general
    path: with short paths on it is the conv2d op, which keeps no im2col)."""
    with short_paths.disabled():
        _views_are_saved_as_the_values_they_view()


def _views_are_saved_as_the_values_they_view():
    dj.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.Flatten(), nn.Linear(48, 2))
    run = dj.jit(model)
    x = dj.tensor(np.random.default_rng(1).standard_normal((4, 2, 4, 4)).astype(np.float32))
    run(x).sum().backward()
    (plan,) = run._last_trace.grad_plans.values()
    saved = plan.forward.fetch_nodes[plan.n_forward:]
    assert saved and not any(n.op.name in ("reshape", "permute", "expand", "unsqueeze",
                                           "squeeze") for n in saved)
    assert "unfold2d" in [n.op.name for n in saved]
    _assert_grads_equal_eager(model, x)


def _assert_grads_equal_eager(model, x) -> None:
    """The .grad the jitted run left on `model` equals a pure eager backward's."""
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    model(x).sum().backward()
    for got, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(got, p.grad.numpy(), rtol=1e-5, atol=1e-6)
