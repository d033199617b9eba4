"""Model code shared by dongjing's eager and static systems (the same code runs in both)."""

from __future__ import annotations

from typing import Any

from bench.systems.base import Unavailable
from bench.workloads import GELU_C, GELU_K


def import_dj() -> Any:
    """Import dongjing, or skip the system."""
    try:
        import dongjing as dj
    except ImportError as e:
        raise Unavailable(f"dongjing not importable ({e})") from e
    return dj


def functional_ce(dj: Any) -> Any:
    """``dj.nn.functional.cross_entropy`` when it exists, else None."""
    F = getattr(getattr(dj, "nn", None), "functional", None)
    return getattr(F, "cross_entropy", None)


def cross_entropy(dj: Any, logits: Any, y: Any, onehot: Any) -> Any:
    """Mean softmax cross-entropy: F.cross_entropy(logits, y) if there, else composed
    (stable logsumexp minus the target logit picked by a one-hot mask)."""
    ce = functional_ce(dj)
    if ce is not None:
        return ce(logits, y)
    m = logits.max(dim=1, keepdim=True)
    if isinstance(m, tuple):  # a (values, indices) pair, PyTorch style
        m = m[0]
    lse = dj.log(dj.exp(logits - m).sum(dim=1, keepdim=True)) + m
    picked = (logits * onehot).sum(dim=1, keepdim=True)
    return (lse - picked).mean()


def ce_note(dj: Any) -> str:
    return "F.cross_entropy" if functional_ce(dj) is not None else "composed cross-entropy"


def mlp_forward(dj: Any, x: Any, params: list[Any]) -> Any:
    """Linear layers with ReLU between them; returns the logits."""
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i + 2 < len(params):
            h = dj.relu(h)
    return h


def chain(dj: Any, x: Any) -> Any:
    """W3's loss from primitive ops (no built-in gelu)."""
    y = 0.5 * x * (1 + dj.tanh(GELU_K * (x + GELU_C * x**3)))
    return y.sum()


def rnn(dj: Any, x: Any, h: Any, w_xh: Any, w_hh: Any, b: Any, steps: int) -> Any:
    """W5's loss: the tanh recurrence over ``steps`` in a Python loop, then the sum."""
    for t in range(steps):
        h = dj.tanh(x[t] @ w_xh + h @ w_hh + b)
    return h.sum()


def convnet_forward(dj: Any, x: Any, params: list[Any]) -> Any:
    """W7's logits: conv-ReLU-conv-ReLU-maxpool(2)-flatten-linear-ReLU-linear (dropout off)."""
    F = dj.nn.functional
    h = dj.relu(F.conv2d(x, params[0], params[1]))
    h = dj.relu(F.conv2d(h, params[2], params[3]))
    h = dj.flatten(F.max_pool2d(h, 2), 1)
    h = dj.relu(h @ params[4] + params[5])
    return h @ params[6] + params[7]
