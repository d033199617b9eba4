"""`dj.optim.LBFGS`: converges on a quadratic and on Rosenbrock's function, with and without
the strong-Wolfe line search, and follows PyTorch's iterates when PyTorch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj

A = np.array([[3.0, 0.5], [0.5, 1.0]])
B = np.array([1.0, -2.0])


def _rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _run(lib, make_param, loss_fn, steps, **options):
    x = make_param()
    opt = lib.optim.LBFGS([x], **options)
    losses = []

    def closure():
        opt.zero_grad()
        loss = loss_fn(x)
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
    return x.detach().numpy().copy(), losses


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_minimizes_a_quadratic_to_its_solution(line_search):
    def quadratic(x):
        return 0.5 * (x * (dj.tensor(A) @ x)).sum() - (dj.tensor(B) * x).sum()

    x, losses = _run(dj, lambda: dj.zeros(2, dtype=dj.float64, requires_grad=True), quadratic,
                     3, line_search_fn=line_search)
    np.testing.assert_allclose(x, np.linalg.solve(A, B), rtol=1e-4)
    assert losses[0] == 0.0 and losses[-1] < losses[0]


def test_rosenbrock_with_strong_wolfe():
    x, _ = _run(dj, lambda: dj.tensor([-1.5, 2.0], dtype=dj.float64, requires_grad=True),
                _rosenbrock, 10, line_search_fn="strong_wolfe", max_iter=50)
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-5)


def test_options_are_checked():
    p = dj.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="line_search_fn"):
        dj.optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(RuntimeError, match="closure"):
        dj.optim.LBFGS([p]).step(None)


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_iterates_match_pytorch(line_search):
    torch = pytest.importorskip("torch")
    start = [-1.2, 1.0]
    ours = _run(dj, lambda: dj.tensor(start, dtype=dj.float64, requires_grad=True),
                _rosenbrock, 4, line_search_fn=line_search, max_iter=5, history_size=3, lr=0.5)
    theirs = _run(torch, lambda: torch.tensor(start, dtype=torch.float64, requires_grad=True),
                  _rosenbrock, 4, line_search_fn=line_search, max_iter=5, history_size=3, lr=0.5)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-9)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9)
