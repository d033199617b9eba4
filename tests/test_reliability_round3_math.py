"""Issue 30, defects 2-4: the softmax family with infinities and NaN, zero-gradient ops that keep
requires_grad, and reductions of empty tensors, in every mode (eager, Session at O0/1/2, jit).
Expected values are written from the math; a second set of tests compares with PyTorch where it
is installed."""

import warnings

import numpy as np
import pytest
from reliability_modes import MODES, grads_in, run_in

import dongjing as dj
from dongjing.errors import ShapeError

INF, NAN = np.inf, np.nan
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf, log(0) by design

# rows: each case is one row of a (6, 2) input, reduced over dim 1
ROWS = np.array([[INF, 1.0], [-INF, -INF], [INF, -INF], [-INF, 1.0], [NAN, 1.0], [1.0, 2.0]])
_LSE_12 = 2.0 + np.log1p(np.exp(-1.0))
# logsumexp: +inf when any entry is +inf; -inf when every entry is -inf (the sum of exps is 0)
LOGSUMEXP = np.array([INF, -INF, INF, 1.0, NAN, _LSE_12])
# its gradient softmax(x) = exp(x - logsumexp): inf - inf and -inf - -inf are NaN (as PyTorch)
_P = np.exp(np.array([1.0, 2.0]) - _LSE_12)
LOGSUMEXP_GRAD = np.array([[NAN, 0.0], [NAN, NAN], [NAN, 0.0], [0.0, 1.0], [NAN, NAN], _P])
# log_softmax: a row with +inf or NaN is NaN throughout, as is an all -inf row; one finite
# entry among -infs takes all the mass
LOG_SOFTMAX = np.array([[NAN, NAN], [NAN, NAN], [NAN, NAN], [-INF, 0.0], [NAN, NAN],
                        np.log(_P)])
SOFTMAX = np.exp(LOG_SOFTMAX)


def _same(got, want):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_logsumexp_of_infinite_rows_is_pytorchs(mode):
    _same(run_in(mode, lambda x: dj.logsumexp(x, 1), ROWS), LOGSUMEXP)
    _same(run_in(mode, lambda x: dj.logsumexp(x, 1, keepdim=True), ROWS), LOGSUMEXP[:, None])
    _same(run_in(mode, lambda x: x.logsumexp(dim=1), ROWS.astype(np.float32)), LOGSUMEXP)


@pytest.mark.parametrize("mode", MODES)
def test_logsumexp_gradient_of_infinite_rows(mode):
    (g,) = grads_in(mode, lambda x: dj.logsumexp(x, 1), ROWS)
    _same(g, LOGSUMEXP_GRAD)


@pytest.mark.parametrize("mode", MODES)
def test_softmax_and_log_softmax_of_infinite_rows(mode):
    _same(run_in(mode, lambda x: dj.nn.functional.log_softmax(x, 1), ROWS), LOG_SOFTMAX)
    _same(run_in(mode, lambda x: dj.softmax(x, 1), ROWS), SOFTMAX)
    # the gradient of sum(log_softmax) is 1 - n * softmax: [1, -1] for a row [-inf, 1]
    (g,) = grads_in(mode, lambda x: dj.nn.functional.log_softmax(x, 1), ROWS[3:4])
    _same(g, np.array([[1.0, -1.0]]))


def test_logsumexp_of_one_infinite_value_and_of_scalars():
    assert dj.logsumexp(dj.tensor([INF, 1.0]), 0).item() == INF
    assert dj.logsumexp(dj.tensor([-INF, -INF]), 0).item() == -INF
    assert dj.logsumexp(dj.tensor(-INF), 0).item() == -INF  # a 0-d input
    assert dj.logsumexp(dj.tensor([[INF, -INF]]), (0, 1)).item() == INF


# --- zero-gradient ops keep requires_grad -----------------------------------------------------
ZERO_GRAD = {"sign": dj.sign, "round": dj.round, "floor": dj.floor, "ceil": dj.ceil,
             "trunc": dj.trunc}


@pytest.mark.parametrize("name", sorted(ZERO_GRAD))
def test_piecewise_constant_ops_keep_requires_grad_with_zero_gradient(name):
    x = dj.tensor([0.3, -1.7, 2.5], dtype=dj.float64, requires_grad=True)
    y = ZERO_GRAD[name](x)
    assert y.requires_grad and y.grad_fn is not None
    dj.sigmoid(y).sum().backward()  # issue 30: sign raised "does not require grad"
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


def test_frac_gradient_is_one():
    x = dj.tensor([0.3, -1.7, 2.5], dtype=dj.float64, requires_grad=True)
    dj.frac(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


@pytest.mark.parametrize("mode", MODES)
def test_sign_gradient_is_zero_in_every_mode(mode):
    (g,) = grads_in(mode, lambda x: dj.sign(x) * x, np.array([0.5, -2.0, 3.0]))
    np.testing.assert_array_equal(g, np.array([1.0, -1.0, 1.0]))  # d(sign(x) x) = sign(x)


def test_sign_in_place_and_method_keep_the_tape():
    x = dj.tensor([0.5, -2.0], requires_grad=True)
    y = x * 1.0
    y.sign_()
    (y * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.array([1.0, -1.0], np.float32))
    assert x.sign().requires_grad


# --- reductions of empty tensors ---------------------------------------------------------------
EMPTY = np.zeros((2, 0), np.float32)


@pytest.mark.parametrize("mode", MODES)
def test_reducing_a_non_empty_dim_of_an_empty_tensor_gives_an_empty_result(mode):
    assert run_in(mode, lambda x: dj.amax(x, dim=0, keepdim=True), EMPTY).shape == (1, 0)
    assert run_in(mode, lambda x: dj.amin(x, dim=0), EMPTY).shape == (0,)
    assert run_in(mode, lambda x: dj.logsumexp(x, dim=0), EMPTY).shape == (0,)
    assert run_in(mode, lambda x: dj.argmax(x, dim=0), EMPTY).shape == (0,)
    values, indices = run_in(mode, lambda x: tuple(dj.max(x, dim=0)), EMPTY)
    assert values.shape == (0,) and indices.shape == (0,) and indices.dtype == np.int64


@pytest.mark.parametrize("mode", MODES)
def test_reducing_an_empty_dim_gives_pytorchs_identity(mode):
    _same(run_in(mode, lambda x: dj.sum(x, 1), EMPTY), np.zeros(2))
    _same(run_in(mode, lambda x: dj.prod(x, 1), EMPTY), np.ones(2))
    _same(run_in(mode, lambda x: dj.logsumexp(x, 1), EMPTY), np.full(2, -INF))
    _same(run_in(mode, lambda x: dj.mean(x, 1), EMPTY), np.full(2, NAN))
    _same(run_in(mode, lambda x: dj.std(x, 1), EMPTY), np.full(2, NAN))  # 0 / max(0 - 1, 0)


@pytest.mark.parametrize("call", [lambda x: dj.amax(x, 1), lambda x: dj.amin(x),
                                  lambda x: dj.argmax(x, 1), lambda x: dj.argmin(x),
                                  lambda x: dj.max(x, 1)])
def test_max_family_over_an_empty_dim_raises_eagerly_and_when_building(call):
    with pytest.raises(ShapeError, match="size 0"):
        call(dj.tensor(EMPTY))
    with dj.Graph().as_default():
        with pytest.raises(ShapeError, match="size 0"):
            call(dj.placeholder([2, 0]))


def test_max_over_an_empty_dim_fed_at_run_time_raises():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder([2, None])
        y = dj.amax(x, 1)
    with pytest.raises(ShapeError, match="amax"):
        dj.Session(g).run(y, {x: EMPTY})


def test_variance_of_one_element_is_nan_as_in_pytorch():
    assert np.isnan(dj.var(dj.tensor([3.0])).item())
    assert np.isnan(dj.std(dj.tensor([3.0]), 0).item())
    assert dj.var(dj.tensor([1.0, 2.0, 4.0], dtype=dj.float64)).item() == pytest.approx(7 / 3)


# --- against PyTorch ----------------------------------------------------------------------------
def _torch_case(torch, name, x):
    fns = {
        "logsumexp": lambda t: torch.logsumexp(t, 1),
        "log_softmax": lambda t: torch.log_softmax(t, 1),
        "softmax": lambda t: torch.softmax(t, 1),
    }
    t = torch.tensor(x, requires_grad=True)
    out = fns[name](t)
    weights = torch.tensor(np.linspace(0.3, 0.9, out.numel()).reshape(out.shape))
    (out * weights).sum().backward()
    return out.detach().numpy(), t.grad.numpy(), weights.numpy()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["logsumexp", "log_softmax", "softmax"])
def test_softmax_family_matches_pytorch_with_inf_and_nan(name, mode):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = np.concatenate([ROWS, rng.choice([INF, -INF, NAN, 0.5, -2.0], (12, 2))])
    want, want_grad, weights = _torch_case(torch, name, x)
    fns = {"logsumexp": lambda t: dj.logsumexp(t, 1),
           "log_softmax": lambda t: dj.nn.functional.log_softmax(t, 1),
           "softmax": lambda t: dj.softmax(t, 1)}
    _same(run_in(mode, fns[name], x), want)
    (got_grad,) = grads_in(mode, lambda t: fns[name](t) * dj.tensor(weights), x)
    _same(got_grad, want_grad)


@pytest.mark.parametrize("name", ["sign", "round", "floor", "ceil", "trunc", "frac"])
def test_zero_gradient_ops_match_pytorch(name):
    torch = pytest.importorskip("torch")
    x = np.array([0.3, -1.7, 2.5, 0.0])
    t = torch.tensor(x, requires_grad=True)
    torch.sigmoid(getattr(torch, name)(t)).sum().backward()
    d = dj.tensor(x, requires_grad=True)
    y = getattr(dj, name)(d)
    assert y.requires_grad == getattr(torch, name)(t).requires_grad
    dj.sigmoid(y).sum().backward()
    np.testing.assert_allclose(d.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("case", ["amax0", "amin0k", "lse0", "lse1", "sum1", "prod1", "mean1",
                                  "argmax0", "std1"])
def test_empty_reductions_match_pytorch(case):
    torch = pytest.importorskip("torch")
    calls = {"amax0": lambda m, x: m.amax(x, dim=0), "amin0k": lambda m, x: m.amin(x, 0, True),
             "lse0": lambda m, x: m.logsumexp(x, 0), "lse1": lambda m, x: m.logsumexp(x, 1),
             "sum1": lambda m, x: m.sum(x, 1), "prod1": lambda m, x: m.prod(x, 1),
             "mean1": lambda m, x: m.mean(x, 1), "argmax0": lambda m, x: m.argmax(x, 0),
             "std1": lambda m, x: m.std(x, 1)}
    with warnings.catch_warnings():  # PyTorch warns that std of no element has no dof
        warnings.simplefilter("ignore", UserWarning)
        want = calls[case](torch, torch.zeros(2, 0)).numpy()
    got = calls[case](dj, dj.zeros(2, 0)).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


# --- 0-d tensors reduced or scanned over dim 0 / -1 (as PyTorch: the value itself) -------------
ZERO_D = {
    "sum": lambda m, x, d: m.sum(x, d), "amax": lambda m, x, d: m.amax(x, d),
    "mean": lambda m, x, d: m.mean(x, d), "logsumexp": lambda m, x, d: m.logsumexp(x, d),
    "softmax": lambda m, x, d: m.softmax(x, d), "log_softmax": lambda m, x, d: m.log_softmax(x, d),
    "cumsum": lambda m, x, d: m.cumsum(x, d), "cumprod": lambda m, x, d: m.cumprod(x, d),
    "argmax": lambda m, x, d: m.argmax(x, d),
}
ZERO_D_WANT = {"sum": 1.5, "amax": 1.5, "mean": 1.5, "logsumexp": 1.5, "softmax": 1.0,
               "log_softmax": 0.0, "cumsum": 1.5, "cumprod": 1.5, "argmax": 0}


@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("name", sorted(ZERO_D))
def test_a_0d_tensor_reduced_over_dim_0_or_minus_1(name, dim):
    out = ZERO_D[name](dj, dj.tensor(1.5, dtype=dj.float64), dim)
    assert out.shape == () and out.item() == ZERO_D_WANT[name]
    torch = pytest.importorskip("torch")
    want = ZERO_D[name](torch, torch.tensor(1.5, dtype=torch.float64), dim)
    assert tuple(want.shape) == () and want.item() == out.item()


def test_a_0d_tensor_refuses_dim_1():
    with pytest.raises(ShapeError, match="out of range"):
        dj.sum(dj.tensor(1.0), 1)
