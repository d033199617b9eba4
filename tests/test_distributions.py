"""`dj.distributions`: log densities, entropies and KL divergences against closed forms
computed here (and against `torch.distributions` when installed), gradients through
log_prob and rsample, and the samplers' statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dongjing as dj
from dongjing.autograd import gradcheck

D = dj.distributions
RNG = np.random.default_rng(2)


def _t(a, grad=False):
    return dj.tensor(np.asarray(a, np.float64), requires_grad=grad)


LOC, SCALE = RNG.normal(size=3), RNG.uniform(0.5, 2, 3)
COV = (lambda m: m @ m.T + np.eye(3))(RNG.normal(size=(3, 3)))


def test_normal_and_uniform_closed_forms():
    x = RNG.normal(size=3)
    n = D.Normal(_t(LOC), _t(SCALE))
    want = -((x - LOC) ** 2) / (2 * SCALE ** 2) - np.log(SCALE) - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(n.log_prob(_t(x)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(n.entropy().numpy(),
                               0.5 * np.log(2 * math.pi * math.e * SCALE ** 2), rtol=1e-12)
    u = D.Uniform(_t([0.0, -1.0]), _t([2.0, 3.0]))
    np.testing.assert_allclose(u.log_prob(_t([1.0, 5.0])).numpy(), [-math.log(2), -math.inf])
    np.testing.assert_allclose(u.entropy().numpy(), np.log([2.0, 4.0]))


def test_bernoulli_and_categorical_closed_forms():
    p = np.array([0.2, 0.7])
    b = D.Bernoulli(probs=_t(p))
    np.testing.assert_allclose(b.log_prob(_t([1.0, 0.0])).numpy(), np.log([0.2, 0.3]),
                               rtol=1e-12)
    np.testing.assert_allclose(b.entropy().numpy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)),
                               rtol=1e-12)
    np.testing.assert_allclose(D.Bernoulli(logits=_t([0.0])).probs.numpy(), [0.5])
    w = np.array([[1.0, 2.0, 5.0], [3.0, 3.0, 2.0]])
    c = D.Categorical(probs=_t(w))
    q = w / w.sum(1, keepdims=True)
    np.testing.assert_allclose(c.log_prob(dj.tensor([2, 0])).numpy(), np.log([q[0, 2], q[1, 0]]),
                               rtol=1e-12)
    np.testing.assert_allclose(c.entropy().numpy(), -(q * np.log(q)).sum(1), rtol=1e-12)
    assert c.batch_shape == (2,) and c.sample((5,)).shape == (5, 2)


def test_multivariate_normal_and_independent():
    x = RNG.normal(size=(4, 3))
    mvn = D.MultivariateNormal(_t(LOC), covariance_matrix=_t(COV))
    inv = np.linalg.inv(COV)
    d = x - LOC
    want = -0.5 * (3 * math.log(2 * math.pi) + np.einsum("bi,ij,bj->b", d, inv, d)
                   + np.linalg.slogdet(COV)[1])
    np.testing.assert_allclose(mvn.log_prob(_t(x)).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(mvn.entropy().item(),
                               0.5 * (3 * (1 + math.log(2 * math.pi)) + np.linalg.slogdet(COV)[1]),
                               rtol=1e-12)
    via_precision = D.MultivariateNormal(_t(LOC), precision_matrix=_t(inv))
    np.testing.assert_allclose(via_precision.log_prob(_t(x)).numpy(), want, rtol=1e-9)
    diag = D.Independent(D.Normal(_t(LOC), _t(SCALE)), 1)
    assert diag.batch_shape == () and diag.event_shape == (3,)
    same = D.MultivariateNormal(_t(LOC), scale_tril=_t(np.diag(SCALE)))
    np.testing.assert_allclose(diag.log_prob(_t(x)).numpy(), same.log_prob(_t(x)).numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(diag.entropy().item(), same.entropy().item(), rtol=1e-12)


def test_kl_divergences_against_closed_forms():
    p, q = D.Normal(_t(0.3), _t(1.5)), D.Normal(_t(-0.2), _t(0.7))
    want = math.log(0.7 / 1.5) + (1.5 ** 2 + 0.5 ** 2) / (2 * 0.7 ** 2) - 0.5
    assert D.kl_divergence(p, q).item() == pytest.approx(want, rel=1e-12)
    cp, cq = D.Categorical(probs=_t([0.2, 0.8, 0.0])), D.Categorical(probs=_t([0.5, 0.25, 0.25]))
    assert D.kl_divergence(cp, cq).item() == pytest.approx(
        0.2 * math.log(0.4) + 0.8 * math.log(3.2), rel=1e-10)
    # KL between Independent Normals equals the MVN KL with diagonal covariances
    s2 = RNG.uniform(0.5, 2, 3)
    ind = D.kl_divergence(D.Independent(D.Normal(_t(LOC), _t(SCALE)), 1),
                          D.Independent(D.Normal(_t(LOC * 0), _t(s2)), 1)).item()
    full = D.kl_divergence(D.MultivariateNormal(_t(LOC), scale_tril=_t(np.diag(SCALE))),
                           D.MultivariateNormal(_t(LOC * 0), scale_tril=_t(np.diag(s2)))).item()
    assert ind == pytest.approx(full, rel=1e-12)
    assert D.kl_divergence(D.Uniform(_t(0.0), _t(1.0)), D.Uniform(_t(-1.0), _t(2.0))).item() \
        == pytest.approx(math.log(3))
    with pytest.raises(NotImplementedError, match="Normal and Bernoulli"):
        D.kl_divergence(p, D.Bernoulli(probs=_t(0.5)))


def test_samplers_have_the_right_moments():
    dj.manual_seed(0)
    n = D.Normal(_t([1.0, -2.0]), _t([0.5, 2.0])).sample((20000,)).numpy()
    np.testing.assert_allclose(n.mean(0), [1.0, -2.0], atol=0.05)
    np.testing.assert_allclose(n.std(0), [0.5, 2.0], rtol=0.03)
    mvn = D.MultivariateNormal(_t(LOC), covariance_matrix=_t(COV)).sample((20000,)).numpy()
    np.testing.assert_allclose(np.cov(mvn.T), COV, atol=0.15 * np.abs(COV).max())
    b = D.Bernoulli(probs=_t([0.3])).sample((10000,)).numpy()
    assert abs(b.mean() - 0.3) < 0.02 and set(np.unique(b)) == {0.0, 1.0}
    c = D.Categorical(probs=_t([0.1, 0.6, 0.3])).sample((10000,)).numpy()
    np.testing.assert_allclose(np.bincount(c, minlength=3) / 10000, [0.1, 0.6, 0.3], atol=0.02)
    u = D.Uniform(_t(2.0), _t(5.0)).sample((1000,)).numpy()
    assert u.min() >= 2.0 and u.max() < 5.0
    with pytest.raises(NotImplementedError, match="rsample"):
        D.Bernoulli(probs=_t(0.5)).rsample()


def test_gradients_through_log_prob_and_rsample():
    x = RNG.normal(size=3)
    assert gradcheck(lambda m, s: D.Normal(m, s).log_prob(_t(x)), [_t(LOC, True),
                                                                    _t(SCALE, True)])
    assert gradcheck(lambda m, c: D.MultivariateNormal(
        m, covariance_matrix=(c + dj.transpose(c, 0, 1)) * 0.5).log_prob(_t(x)),
        [_t(LOC, True), _t(COV, True)])
    assert gradcheck(lambda lg: D.Categorical(logits=lg).entropy(), [_t(RNG.normal(size=(2, 4)),
                                                                        True)])
    loc, scale = _t(LOC, True), _t(SCALE, True)
    dj.manual_seed(3)
    draw = D.Normal(loc, scale).rsample()
    draw.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), 1.0)
    np.testing.assert_allclose(scale.grad.numpy(), (draw.detach().numpy() - LOC) / SCALE)


TORCH = {
    "normal": (lambda D, t: D.Normal(t[0], t[1]), [LOC, SCALE], RNG.normal(size=3)),
    "uniform": (lambda D, t: D.Uniform(t[0] - 3, t[0] + t[1] + 3), [LOC, SCALE],
                np.array([0.1, -0.5, 0.9])),
    "bernoulli": (lambda D, t: D.Bernoulli(logits=t[0]), [LOC], np.array([1.0, 0.0, 1.0])),
    "categorical": (lambda D, t: D.Categorical(logits=t[0]), [RNG.normal(size=(2, 4))],
                    np.array([3, 1])),
    "mvn": (lambda D, t: D.MultivariateNormal(t[0], t[1] @ t[1].mT + t[2]
                                              if hasattr(t[1], "mT") else None),
            [LOC, RNG.normal(size=(3, 3)), np.eye(3)], RNG.normal(size=3)),
    "independent": (lambda D, t: D.Independent(D.Normal(t[0], t[1]), 1), [LOC, SCALE],
                    RNG.normal(size=3)),
}


@pytest.mark.parametrize("name", sorted(TORCH))
def test_against_torch_distributions(name):
    torch = pytest.importorskip("torch")
    make, params, value = TORCH[name]
    ours = [_t(p, True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    if name == "mvn":  # dongjing tensors have no .mT: build the covariance per framework
        mine = D.MultivariateNormal(ours[0], ours[1] @ dj.transpose(ours[1], 0, 1) + ours[2])
        ref = torch.distributions.MultivariateNormal(theirs[0], theirs[1] @ theirs[1].mT
                                                     + theirs[2])
    else:
        mine, ref = make(D, ours), make(torch.distributions, theirs)
    v = value if value.dtype.kind == "f" else value
    lp = mine.log_prob(dj.tensor(v) if v.dtype.kind != "f" else _t(v))
    tlp = ref.log_prob(torch.tensor(v))
    np.testing.assert_allclose(lp.detach().numpy(), tlp.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(mine.entropy().detach().numpy(), ref.entropy().detach().numpy(),
                               rtol=1e-10)
    (lp.sum() + mine.entropy().sum()).backward()
    (tlp.sum() + ref.entropy().sum()).backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-12)
    q = make(D, [_t(p + 0.1) for p in params]) if name != "mvn" else D.MultivariateNormal(
        _t(LOC + 0.1), _t(COV))
    tq = make(torch.distributions, [torch.tensor(p + 0.1) for p in params]) if name != "mvn" \
        else torch.distributions.MultivariateNormal(torch.tensor(LOC + 0.1), torch.tensor(COV))
    np.testing.assert_allclose(D.kl_divergence(mine, q).detach().numpy(),
                               torch.distributions.kl_divergence(ref, tq).detach().numpy(),
                               rtol=1e-9)
