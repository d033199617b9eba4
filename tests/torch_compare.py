"""Run one function in dongjing and in PyTorch on the same float64 inputs and compare the values
and the gradients of a random weighting of the outputs (the helper of the coverage tests)."""

from __future__ import annotations

import numpy as np

import dongjing as dj


def r(*shape, seed=0, low=-2.0, high=2.0):
    """float64 values in [low, high), away from 0 by at least 0.05 (kinks of shrink/relu)."""
    v = np.random.default_rng(seed + 7 * len(shape)).uniform(low, high, shape)
    return np.where(np.abs(v) < 0.05, v + 0.1, v)


def pos(*shape, seed=0):
    return r(*shape, seed=seed, low=0.2, high=2.0)


def ints(*shape, high=3, seed=0):
    return np.random.default_rng(seed).integers(0, high, shape).astype(np.int64)


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def compare(ours, theirs, arrays, grad=True, rtol=1e-7, atol=1e-9, wrt=None):
    """`ours(*dj tensors)` equals `theirs(*torch tensors)`; with `grad`, so do the gradients
    of sum(w * out) for fixed random weights w, with respect to every float input (or the
    inputs at the positions `wrt`)."""
    import torch

    arrays = [np.asarray(a) for a in arrays]
    wants = [grad and a.dtype.kind == "f" and (wrt is None or i in wrt)
             for i, a in enumerate(arrays)]
    mine = [dj.tensor(a, requires_grad=w) for a, w in zip(arrays, wants)]
    yours = [torch.tensor(a, requires_grad=w) for a, w in zip(arrays, wants)]
    out_a, out_b = _flat(ours(*mine)), _flat(theirs(*yours))
    assert len(out_a) == len(out_b)
    for a, b in zip(out_a, out_b):
        b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
        np.testing.assert_allclose(np.asarray(a.numpy() if hasattr(a, "numpy") else a), b,
                                   rtol=rtol, atol=atol)
    if not any(wants):
        return
    rng = np.random.default_rng(1)
    loss_a = loss_b = 0
    for a, b in zip(out_a, out_b):
        if getattr(b, "requires_grad", False):  # PyTorch differentiates this output
            w = rng.standard_normal(tuple(b.shape))
            loss_a = loss_a + (a * dj.tensor(w)).sum()
            loss_b = loss_b + (b * torch.tensor(w)).sum()
    if isinstance(loss_b, int):  # no differentiable output
        return
    loss_a.backward()
    loss_b.backward()
    for m, y in zip(mine, yours):
        if y.requires_grad:
            expected = np.zeros(y.shape) if y.grad is None or y.grad._is_zerotensor() \
                else y.grad.numpy()
            got = np.zeros(y.shape) if m.grad is None else m.grad.numpy()
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
