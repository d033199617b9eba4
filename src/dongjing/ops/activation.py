"""Softmax family, composed of primitives (their gradients come from the primitives' rules)."""

from __future__ import annotations

from . import infer as inf
from .convert import as_tensor
from .elementwise import exp, log, stop_gradient, sub
from .reduce import amax, sum
from .shape import squeeze


def logsumexp(x, dim, keepdim: bool = False):
    """log(sum(exp(x), dim)), stable: the max is subtracted first (and added back)."""
    x = as_tensor(x)
    dim = inf.normalize_dims("logsumexp", dim, x.ndim)
    shift = stop_gradient(amax(x, dim, keepdim=True))
    out = log(sum(exp(sub(x, shift)), dim, keepdim=True)) + shift
    return out if keepdim else squeeze(out, dim)


def log_softmax(x, dim: int = -1):
    """x - logsumexp(x) along `dim`."""
    x = as_tensor(x)
    return sub(x, logsumexp(x, dim, keepdim=True))


def softmax(x, dim: int = -1):
    """exp(x) / sum(exp(x)) along `dim`, stable."""
    return exp(log_softmax(x, dim))
