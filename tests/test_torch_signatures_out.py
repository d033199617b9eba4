"""PyTorch's signatures (issue 33): the `torch.*` and `torch.special` functions whose only
difference from PyTorch's parameters was `out=` take it, write their result into that tensor,
and are called by PyTorch's keyword names and positionally in PyTorch's order. Torch-free
tests compare `out=` with the returned value; the others compare with PyTorch."""

import inspect

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import ArgumentError, AutogradError, ShapeError

# PyTorch's own deprecation warnings for the legacy names compared here
pytestmark = [pytest.mark.filterwarnings("ignore:torch.ger is deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:torch.qr is deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:at..frobenius_norm is deprecated:UserWarning")]

RNG = np.random.default_rng(3301)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
P = RNG.uniform(0.1, 0.9, (3, 4))
SQ = RNG.standard_normal((3, 3)) + 3.0 * np.eye(3)
SPD = SQ @ SQ.T
V3, V4 = RNG.standard_normal(3), RNG.standard_normal(4)
B1, B2 = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 4, 5))
SORTED = np.array([-1.0, 0.0, 0.5, 2.0])

# (namespace, name, PyTorch's keyword arguments); arrays become tensors of either library
CASES = [
    ("", "addbmm", dict(input=RNG.standard_normal((3, 5)), batch1=B1, batch2=B2, beta=0.5,
                        alpha=2.0)),
    ("", "addcdiv", dict(input=A, tensor1=B, tensor2=P, value=0.5)),
    ("", "addcmul", dict(input=A, tensor1=B, tensor2=P, value=2.0)),
    ("", "addmv", dict(input=V3, mat=A, vec=V4, beta=2.0, alpha=0.5)),
    ("", "addr", dict(input=A, vec1=V3, vec2=V4, beta=0.5, alpha=3.0)),
    ("", "aminmax", dict(input=A, dim=1, keepdim=True)),
    ("", "angle", dict(input=A)),
    ("", "baddbmm", dict(input=RNG.standard_normal((2, 3, 5)), batch1=B1, batch2=B2, beta=0.5,
                         alpha=2.0)),
    ("", "bucketize", dict(input=A, boundaries=SORTED, right=True)),
    ("", "cholesky", dict(input=SPD, upper=True)),
    ("", "column_stack", dict(tensors=(V3, A))),
    ("", "conj_physical", dict(input=A)),
    ("", "copysign", dict(input=A, other=B)),
    ("", "cummax", dict(input=A, dim=1)),
    ("", "cummin", dict(input=A, dim=0)),
    ("", "deg2rad", dict(input=A)),
    ("", "dstack", dict(tensors=(A, B))),
    ("", "exp2", dict(input=A)),
    ("", "fix", dict(input=A * 3)),
    ("", "float_power", dict(input=P, exponent=B)),
    ("", "fmax", dict(input=A, other=B)),
    ("", "fmin", dict(input=A, other=B)),
    ("", "frobenius_norm", dict(input=A, dim=(0, 1), keepdim=False)),
    ("", "ger", dict(input=V3, vec2=V4)),
    ("", "heaviside", dict(input=np.array([-1.0, 0.0, 2.0]), values=np.array([0.5]))),
    ("", "histc", dict(input=A, bins=5, min=-2, max=2)),
    ("", "index_copy", dict(input=A, dim=1, index=np.array([3, 0]), source=B[:, :2])),
    ("", "inner", dict(input=A, other=B)),
    ("", "inverse", dict(input=SQ)),
    ("", "isneginf", dict(input=np.array([-np.inf, 0.0, np.inf]))),
    ("", "isposinf", dict(input=np.array([-np.inf, 0.0, np.inf]))),
    ("", "kron", dict(input=V3, other=A)),
    ("", "kthvalue", dict(input=A, k=2, dim=0, keepdim=True)),
    ("", "ldexp", dict(input=A, other=B)),
    ("", "logaddexp2", dict(input=A, other=B)),
    ("", "logcumsumexp", dict(input=A, dim=1)),
    ("", "logical_xor", dict(input=A > 0, other=B > 0)),
    ("", "logit", dict(input=P, eps=0.2)),
    ("", "matrix_power", dict(input=SQ, n=3)),
    ("", "median", dict(input=A, dim=1, keepdim=False)),
    ("", "mode", dict(input=np.array([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]]), dim=1)),
    ("", "msort", dict(input=A)),
    ("", "mv", dict(input=A, vec=V4)),
    ("", "nanmean", dict(input=np.where(A > 1, np.nan, A), dim=1, keepdim=True)),
    ("", "nanmedian", dict(input=np.where(A > 1, np.nan, A), dim=0)),
    ("", "nanquantile", dict(input=np.where(A > 1, np.nan, A), q=0.3, dim=1)),
    ("", "qr", dict(input=A.T, some=True)),
    ("", "svd", dict(input=A, some=True)),
    ("", "quantile", dict(input=A, q=0.75, dim=0, keepdim=True, interpolation="midpoint")),
    ("", "rad2deg", dict(input=A)),
    ("", "renorm", dict(input=A, p=2, dim=0, maxnorm=1.0)),
    ("", "row_stack", dict(tensors=(A, B))),
    ("", "sgn", dict(input=A)),
    ("", "sinc", dict(input=A)),
    ("", "vdot", dict(input=V3, other=V3 * 2)),
    ("", "xlogy", dict(input=A, other=P)),
    ("special", "entr", dict(input=P)),
    ("special", "erf", dict(input=A)),
    ("special", "exp2", dict(input=A)),
    ("special", "expit", dict(input=A)),
    ("special", "expm1", dict(input=A)),
    ("special", "log1p", dict(input=P)),
    ("special", "logit", dict(input=P, eps=0.1)),
    ("special", "logsumexp", dict(input=A, dim=1, keepdim=True)),
    ("special", "ndtr", dict(input=A)),
    ("special", "round", dict(input=A * 10)),
    ("special", "sinc", dict(input=A)),
    ("special", "xlog1py", dict(input=A, other=P)),
    ("special", "xlogy", dict(input=A, other=P)),
]
IDS = [f"{ns or 'torch'}.{name}" for ns, name, _ in CASES]


def _convert(value, tensor):
    if isinstance(value, np.ndarray):
        return tensor(value)
    if isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
        return tuple(tensor(v) for v in value)
    return value


def _function(module, ns, name):
    return getattr(getattr(module, ns) if ns else module, name)


def _arrays(result):
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _arrays(r)]
    return [np.asarray(result.detach().numpy() if hasattr(result, "detach") else result)]


def _empty_like(result, zeros):
    if isinstance(result, tuple):
        return tuple(_empty_like(r, zeros) for r in result)
    return zeros(result)


def _positional(fn, kwargs):
    """The keyword arguments as positions, in the order of `fn`'s parameters."""
    args, rest = [], dict(kwargs)
    for p in inspect.signature(fn).parameters.values():
        if p.kind is not p.POSITIONAL_OR_KEYWORD or p.name not in rest:
            break
        args.append(rest.pop(p.name))
    return args, rest


# --- without PyTorch ----------------------------------------------------------------------------
@pytest.mark.parametrize("ns,name,kwargs", CASES, ids=IDS)
def test_out_receives_the_result_and_positions_follow_pytorch(ns, name, kwargs):
    fn = _function(dj, ns, name)
    assert "out" in inspect.signature(fn).parameters
    kw = {k: _convert(v, dj.tensor) for k, v in kwargs.items()}
    expected = fn(**kw)
    args, rest = _positional(fn, kw)
    for a, b in zip(_arrays(fn(*args, **rest)), _arrays(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    out = _empty_like(expected, lambda r: dj.zeros(*r.shape, dtype=r.dtype))
    returned = fn(**kw, out=out)
    if isinstance(out, tuple):
        assert all(r is o for r, o in zip(returned, out))
    else:
        assert returned is out
    for a, b in zip(_arrays(out), _arrays(expected)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_out_refuses_a_wrong_shape_a_wrong_kind_and_autograd():
    x = dj.tensor(A)
    with pytest.raises(ShapeError):
        dj.exp2(x, out=dj.zeros(4, 3, dtype=dj.float64))
    with pytest.raises(ArgumentError, match="out= must be a tuple of 2"):
        dj.cummax(x, 1, out=dj.zeros(3, 4, dtype=dj.float64))
    with pytest.raises(AutogradError):
        dj.special.expit(dj.tensor(A, requires_grad=True), out=dj.zeros(3, 4, dtype=dj.float64))


def test_reductions_take_numpy_aliases_and_special_round_keeps_decimals():
    x = dj.tensor(A)
    np.testing.assert_allclose(dj.nanmean(x, axis=1, keepdims=True).numpy(),
                               A.mean(1, keepdims=True))
    np.testing.assert_allclose(dj.median(x, axis=0).values.numpy(),
                               np.sort(A, 0)[1])
    np.testing.assert_allclose(dj.kthvalue(x, 1).values.numpy(), A.min(1))  # dim=None: last
    np.testing.assert_allclose(dj.special.round(x, decimals=1).numpy(), np.round(A, 1))


def test_baddbmm_out_dtype_computes_in_that_dtype():
    args = [dj.tensor(np.float32(a)) for a in (RNG.standard_normal((2, 3, 5)), B1, B2)]
    got = dj.baddbmm(*args, dj.float64, beta=0.5)
    assert got.dtype == dj.float64
    expected = 0.5 * args[0].numpy().astype(np.float64) + B1.astype(np.float32) @ \
        B2.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


# --- against PyTorch ----------------------------------------------------------------------------
@pytest.mark.parametrize("ns,name,kwargs", CASES, ids=IDS)
def test_pytorch_keywords_and_out_give_what_pytorch_gives(ns, name, kwargs):
    torch = pytest.importorskip("torch")

    def as_torch(a):
        t = torch.from_numpy(np.ascontiguousarray(a))
        return t.long() if a.dtype.kind == "i" else t

    theirs_fn = _function(torch, ns, name)
    ours = _function(dj, ns, name)(**{k: _convert(v, dj.tensor) for k, v in kwargs.items()})
    theirs = theirs_fn(**{k: _convert(v, as_torch) for k, v in kwargs.items()})
    out = _empty_like(theirs, torch.empty_like)
    theirs_fn(**{k: _convert(v, as_torch) for k, v in kwargs.items()}, out=out)
    for a, b, c in zip(_arrays(ours), _arrays(theirs), _arrays(out)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(c, b, rtol=1e-6, atol=1e-6)
