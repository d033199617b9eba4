"""`kl_divergence(p, q)`: KL(p || q) in closed form for the pairs registered with
`register_kl` (PyTorch's registry pattern)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from .. import linalg, ops
from .multivariate import Independent, MultivariateNormal, _diagonal
from .univariate import Bernoulli, Categorical, Normal, Uniform, _softplus

if TYPE_CHECKING:
    from ..tensor import Tensor
    from .distribution import Distribution

_KL: dict = {}
_F = TypeVar("_F", bound=Callable[..., object])


def register_kl(type_p: type, type_q: type) -> Callable[[_F], _F]:
    """Decorator: register `fn(p, q)` as KL(p || q) for the two distribution types."""
    def record(fn: _F) -> _F:
        _KL[(type_p, type_q)] = fn
        return fn

    return record


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), batched like the distributions."""
    for (tp, tq), fn in _KL.items():
        if isinstance(p, tp) and isinstance(q, tq):
            return fn(p, q)
    raise NotImplementedError(f"kl_divergence: no closed form registered for "
                              f"{type(p).__name__} and {type(q).__name__}")


@register_kl(Normal, Normal)
def _normal_normal(p, q):
    ratio = (p.scale / q.scale) ** 2
    return 0.5 * (ratio + ((p.loc - q.loc) / q.scale) ** 2 - 1 - ops.log(ratio))


@register_kl(Uniform, Uniform)
def _uniform_uniform(p, q):
    inside = ops.logical_and(ops.le(q.low, p.low), ops.ge(q.high, p.high))
    value = ops.log((q.high - q.low) / (p.high - p.low))
    return ops.where(inside, value, ops.full_like(value, math.inf))


@register_kl(Bernoulli, Bernoulli)
def _bernoulli_bernoulli(p, q):
    t1 = p.probs * (_softplus(ops.neg(q.logits)) - _softplus(ops.neg(p.logits)))
    t2 = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    return ops.sum(ops.where(ops.eq(p.probs, 0.0), ops.zeros_like(t), t), -1)


@register_kl(MultivariateNormal, MultivariateNormal)
def _mvn_mvn(p, q):
    k = p.event_shape[0]
    # tr(Sq^-1 Sp) + (mq - mp)^T Sq^-1 (mq - mp) - k + log det Sq - log det Sp, halved
    m = linalg.solve(q.scale_tril, p.scale_tril)
    trace = ops.sum(m * m, (-2, -1))
    diff = linalg.solve(q.scale_tril, q.loc - p.loc)
    maha = ops.sum(diff * diff, -1)
    log_det = ops.sum(ops.log(_diagonal(q.scale_tril)), -1) - ops.sum(
        ops.log(_diagonal(p.scale_tril)), -1)
    return 0.5 * (trace + maha - k) + log_det


@register_kl(Independent, Independent)
def _independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independent distributions must reinterpret "
                                  "the same number of dims")
    return p._summed(kl_divergence(p.base_dist, q.base_dist))
