"""More PyTorch names (ops/torch_compat_*.py, tensor/torch_methods.py,
tensor/inplace_methods.py, tensor/torch_functions.py, autograd/inference.py): values against
NumPy (and PyTorch when installed), float64 gradients, the in-place rules, and the errors."""

import numpy as np
import pytest

import dongjing as dj
from dongjing.autograd import gradcheck
from dongjing.autograd.views import InplaceError
from dongjing.errors import DongjingError, DTypeError, GraphError, ShapeError

RNG = np.random.default_rng(0)
A = RNG.uniform(-2, 2, (3, 4))
B = RNG.uniform(0.5, 2, (4,))
V = RNG.uniform(-1, 1, (3,))


def t64(a, grad=True):
    return dj.tensor(np.asarray(a, np.float64), requires_grad=grad)


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    return x.numpy() if isinstance(x, dj.Tensor) else np.asarray(x)


# --- values against NumPy ---------------------------------------------------------------------
VALUE_CASES = {
    "square": (lambda m: m.square(m.tensor(A)), lambda: A * A),
    "rsqrt": (lambda m: m.rsqrt(m.tensor(np.abs(A) + 0.1)), lambda: 1 / np.sqrt(np.abs(A) + 0.1)),
    "reciprocal": (lambda m: m.reciprocal(m.tensor(A)), lambda: 1 / A),
    "clamp_min": (lambda m: m.clamp_min(m.tensor(A), 0.3), lambda: np.maximum(A, 0.3)),
    "clamp_max_tensor": (lambda m: m.clamp_max(m.tensor(A), m.tensor(B)), lambda: np.minimum(A, B)),
    "lerp": (lambda m: m.lerp(m.tensor(A), m.tensor(B), 0.7), lambda: A + 0.7 * (B - A)),
    "lerp_tensor_weight": (lambda m: m.lerp(m.tensor(A), m.tensor(B), m.tensor(A / 4)),
                           lambda: A + A / 4 * (B - A)),
    "hypot": (lambda m: m.hypot(m.tensor(A), m.tensor(B)), lambda: np.hypot(A, B)),
    "logaddexp": (lambda m: m.logaddexp(m.tensor(A), m.tensor(B)), lambda: np.logaddexp(A, B)),
    "fmod": (lambda m: m.fmod(m.tensor(A * 3), 1.3), lambda: np.fmod(A * 3, 1.3)),
    "frac": (lambda m: m.frac(m.tensor(A * 3)), lambda: A * 3 - np.trunc(A * 3)),
    "addmm": (lambda m: m.addmm(m.tensor(V), m.tensor(A), m.tensor(A.T), beta=0.5, alpha=2),
              lambda: 0.5 * V + 2 * A @ A.T),
    "diag_vec": (lambda m: m.diag(m.tensor(V), 1), lambda: np.diag(V, 1)),
    "diag_mat": (lambda m: m.diag(m.tensor(A), -1), lambda: np.diag(A, -1)),
    "trace": (lambda m: m.trace(m.tensor(A)), lambda: np.trace(A)),
    "hstack": (lambda m: m.hstack([m.tensor(A), m.tensor(A)]), lambda: np.hstack([A, A])),
    "vstack": (lambda m: m.vstack([m.tensor(B), m.tensor(A)]), lambda: np.vstack([B, A])),
    "movedim": (lambda m: m.movedim(m.tensor(A[None]), 0, 2),
                lambda: np.moveaxis(A[None], 0, 2)),
    "movedim_seq": (lambda m: m.movedim(m.tensor(A[None]), (0, 1), (2, 0)),
                    lambda: np.moveaxis(A[None], (0, 1), (2, 0))),
    "swapaxes": (lambda m: m.swapaxes(m.tensor(A), 0, 1), lambda: A.T),
    "t": (lambda m: m.t(m.tensor(A)), lambda: A.T),
    "cross": (lambda m: m.cross(m.tensor(A[:, :3]), m.tensor(B[None, :3]), dim=1),
              lambda: np.cross(A[:, :3], B[:3])),
    "diff": (lambda m: m.diff(m.tensor(A), n=2, dim=1), lambda: np.diff(A, n=2, axis=1)),
    "diff_prepend": (lambda m: m.diff(m.tensor(A), dim=0, prepend=m.tensor(B[None])),
                     lambda: np.diff(A, axis=0, prepend=B[None])),
    "repeat_interleave": (lambda m: m.repeat_interleave(m.tensor(A), m.tensor([1, 0, 2]), dim=0),
                          lambda: np.repeat(A, [1, 0, 2], axis=0)),
    "repeat_interleave_flat": (lambda m: m.repeat_interleave(m.tensor(V), 2),
                               lambda: np.repeat(V, 2)),
    "masked_select": (lambda m: m.masked_select(m.tensor(A), m.tensor(B > 1)),
                      lambda: np.broadcast_to(A, (3, 4))[np.broadcast_to(B > 1, (3, 4))]),
    "nan_to_num": (lambda m: m.nan_to_num(m.tensor([np.nan, np.inf, -np.inf, 1.5]), 9.0,
                                          posinf=2.0),
                   lambda: np.array([9.0, 2.0, np.finfo(np.float32).min, 1.5])),
    "var_mean": (lambda m: m.var_mean(m.tensor(A), 1), lambda: (A.var(1, ddof=1), A.mean(1))),
    "std_mean": (lambda m: m.std_mean(m.tensor(A), dim=0, correction=0, keepdim=True),
                 lambda: (A.std(0, keepdims=True), A.mean(0, keepdims=True))),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_numpy(name):
    fn, expected = VALUE_CASES[name]
    got, want = _np(fn(dj)), expected()
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_and_dtypes_match_torch(name):
    torch = pytest.importorskip("torch")
    fn = VALUE_CASES[name][0]
    got, want = fn(dj), fn(torch)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        assert str(g.dtype) == str(w.dtype).replace("torch.", "")
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)


def test_integer_and_bool_dtypes_follow_pytorch():
    assert dj.square(dj.tensor([True, False])).dtype == dj.int64
    assert dj.square(dj.tensor([2], dtype=dj.int32)).dtype == dj.int32
    assert dj.reciprocal(dj.tensor([2])).dtype == dj.float32
    assert dj.rsqrt(dj.tensor([4])).tolist() == [0.5]
    assert dj.clamp_min(dj.tensor([0, 2]), 0.5).tolist() == [0.5, 2.0]
    assert dj.fmod(dj.tensor([-3, 3]), 2).tolist() == [-1, 1]
    assert dj.nan_to_num(dj.tensor([1, 2])).dtype == dj.int64
    assert dj.trace(dj.tensor([[1, 2], [3, 4]], dtype=dj.int32)).dtype == dj.int64
    assert dj.diff(dj.tensor([True, False, False])).tolist() == [True, False]
    assert dj.hypot(dj.tensor([3.0]), dj.tensor([4.0], dtype=dj.float64)).dtype == dj.float64


def test_cross_without_dim_takes_the_first_dim_of_size_3():
    got = dj.cross(dj.eye(3), dj.ones(3, 3))  # torch.cross's rule (linalg.cross: the last)
    assert got.tolist() == [[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]]


def test_hypot_and_logaddexp_do_not_overflow():
    big = dj.tensor([3e30, -1e4])
    np.testing.assert_allclose(dj.hypot(big, big).numpy(), np.hypot([3e30, -1e4], [3e30, -1e4]),
                               rtol=1e-6)
    assert dj.logaddexp(dj.tensor([1000.0]), dj.tensor([1000.0])).item() == pytest.approx(
        1000.0 + np.log(2))


def test_lerp_is_exact_at_the_ends_and_close_to_pytorch():
    a, b = RNG.standard_normal(50).astype(np.float32), RNG.standard_normal(50).astype(np.float32)
    w = RNG.uniform(-1, 2, 50).astype(np.float32)
    assert dj.equal(dj.lerp(dj.tensor(a), dj.tensor(b), 1.0), dj.tensor(b))
    assert dj.equal(dj.lerp(dj.tensor(a), dj.tensor(b), dj.ones(50)), dj.tensor(b))
    torch = pytest.importorskip("torch")
    for weight in (0.3, 0.9, w):
        dw = dj.tensor(weight) if isinstance(weight, np.ndarray) else weight
        tw = torch.tensor(weight) if isinstance(weight, np.ndarray) else weight
        np.testing.assert_allclose(dj.lerp(dj.tensor(a), dj.tensor(b), dw).numpy(),
                                   torch.lerp(torch.tensor(a), torch.tensor(b), tw).numpy(),
                                   rtol=1e-6, atol=2e-7)


def test_bool_results():
    x = dj.tensor([1.0, 2.0])
    assert dj.allclose(x, x + 1e-9) is True
    assert x.allclose(dj.tensor([1.0, 2.1])) is False
    assert dj.allclose(dj.tensor([np.nan]), dj.tensor([np.nan]), equal_nan=True)
    assert dj.equal(dj.tensor([1, 2]), dj.tensor([1.0, 2.0])) is True
    assert x.equal(dj.tensor([1.0])) is False
    assert dj.equal(dj.tensor([np.nan]), dj.tensor([np.nan])) is False


def test_grids_broadcast_and_unflatten():
    x, y = dj.tensor([1, 2, 3]), dj.tensor([4, 5])
    gx, gy = dj.meshgrid(x, y, indexing="ij")
    nx, ny = np.meshgrid([1, 2, 3], [4, 5], indexing="ij")
    assert gx.tolist() == nx.tolist() and gy.tolist() == ny.tolist()
    gx, gy = dj.meshgrid([x, y], indexing="xy")
    nx, ny = np.meshgrid([1, 2, 3], [4, 5])
    assert gx.tolist() == nx.tolist() and gy.tolist() == ny.tolist()
    a, b = dj.broadcast_tensors(dj.zeros(3, 1), dj.ones(4))
    assert a.shape == b.shape == (3, 4)
    assert dj.unflatten(dj.zeros(2, 12), 1, (3, -1)).shape == (2, 3, 4)
    assert dj.zeros(6).unflatten(0, [2, 3]).shape == (2, 3)


def test_repeat_interleave_of_counts_and_output_size():
    assert dj.repeat_interleave(dj.tensor([1, 2])).tolist() == [0, 1, 1]
    x = dj.tensor([[1, 2], [3, 4]])
    assert x.repeat_interleave(2, dim=1, output_size=4).tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]
    with pytest.raises(ShapeError, match="output_size"):
        x.repeat_interleave(2, dim=1, output_size=3)


def test_unique_forward_only():
    x = dj.tensor([3.0, 1.0, 3.0, 2.0], requires_grad=True)
    values, inverse, counts = dj.unique(x, return_inverse=True, return_counts=True)
    assert values.tolist() == [1.0, 2.0, 3.0] and not values.requires_grad
    assert inverse.tolist() == [2, 0, 2, 1] and inverse.dtype == dj.int64
    assert counts.tolist() == [1, 1, 2]
    rows = dj.tensor([[1, 2], [0, 1], [1, 2]]).unique(dim=0)
    assert rows.tolist() == [[0, 1], [1, 2]]
    with dj.Graph():
        with pytest.raises(GraphError, match="unique"):
            dj.unique(dj.placeholder((3,)))


def test_index_add_out_of_place():
    x = dj.zeros(3, 2)
    out = x.index_add(0, dj.tensor([0, 2, 0]), dj.ones(3, 2), alpha=2)
    assert out.tolist() == [[4.0, 4.0], [0.0, 0.0], [2.0, 2.0]] and x.sum().item() == 0


# --- gradients (float64) ----------------------------------------------------------------------
GRAD_CASES = {
    "square": (lambda x: dj.square(x), (A,)),
    "rsqrt": (lambda x: x.rsqrt(), (np.abs(A) + 0.5,)),
    "reciprocal": (lambda x: dj.reciprocal(x), (np.abs(A) + 0.5,)),
    "clamp_min": (lambda x: dj.clamp_min(x, 0.3), (A,)),
    "clamp_max_tensor": (lambda x, b: dj.clamp_max(x, b), (A, B + 0.013)),
    "lerp": (lambda a, b: dj.lerp(a, b, 0.8), (A, B)),
    "lerp_tensor_weight": (lambda a, b, w: a.lerp(b, w), (A, B, A / 3)),
    "frac": (lambda x: dj.frac(x), (A * 3 + 0.013,)),
    "addmm": (lambda i, a, b: dj.addmm(i, a, b, beta=0.5, alpha=-2), (V, A, A.T)),
    "nan_to_num": (lambda x: dj.nan_to_num(x, nan=1.0), (A,)),
    "var_mean": (lambda x: dj.var_mean(x, 0), (A,)),
    "std_mean": (lambda x: dj.std_mean(x, 1, keepdim=True), (A,)),
    "diag_vec": (lambda v: dj.diag(v, -1), (V,)),
    "diag_mat": (lambda x: x.diag(1), (A,)),
    "trace": (lambda x: dj.trace(x), (A,)),
    "broadcast_tensors": (lambda a, b: dj.broadcast_tensors(a, b), (A, B)),
    "hstack_vstack": (lambda a, b: dj.hstack([a, a]) + dj.vstack([b, b, b]).repeat(1, 2),
                      (A, B)),
    "movedim": (lambda x: dj.movedim(x.reshape(3, 2, 2), (0, 2), (1, 0)), (A,)),
    "swapaxes": (lambda x: x.swapaxes(0, 1), (A,)),
    "cross": (lambda a, b: dj.cross(a, b, dim=1), (A[:, :3], B[None, :3])),
    "diff": (lambda x, p: dj.diff(x, n=2, dim=0, prepend=p), (A, B[None])),
    "meshgrid": (lambda a, b: dj.meshgrid(a, b, indexing="xy"), (V, B)),
    "repeat_interleave": (lambda x: x.repeat_interleave(dj.tensor([2, 0, 1]), dim=0), (A,)),
    "masked_select": (lambda x: x.masked_select(dj.tensor(A > 0)), (A,)),
    "unflatten": (lambda x: x.unflatten(1, (2, 2)), (A,)),
    "index_add": (lambda x, s: dj.index_add(x, 1, dj.tensor([3, 0, 3]), s, alpha=1.5),
                  (A, A[:, :3])),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients(name):
    fn, inputs = GRAD_CASES[name]
    assert gradcheck(fn, [t64(a) for a in inputs])


def test_clamp_min_tie_gradient_goes_to_input_as_pytorch():
    x = t64([1.0, 2.0])
    b = t64([1.0, 3.0])
    dj.clamp_min(x, b).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0] and b.grad.tolist() == [0.0, 1.0]


def test_composites_build_static_graphs():
    with dj.Graph() as g:
        x = dj.placeholder((3, 4), dtype=dj.float64, name="x")
        y = dj.lerp(x, dj.square(x), 0.25) + dj.hypot(x, x) + dj.trace(x[:, :3])
        z = dj.cross(x[:, :3], x[:, 1:], dim=1).sum() + dj.diff(x).sum()
        grad = dj.gradients(y.sum() + z, [x])[0]
    out, gval = dj.Session(g).run([y, grad], {x: A})
    ref = A + 0.25 * (A * A - A) + np.hypot(A, A) + np.trace(A[:, :3])
    np.testing.assert_allclose(out, ref)
    assert gval.shape == (3, 4)


# --- in-place ---------------------------------------------------------------------------------
INPLACE = {
    "square_": (lambda t: t.square_(), lambda a: a * a),
    "reciprocal_": (lambda t: t.reciprocal_(), lambda a: 1 / a),
    "clamp_min_": (lambda t: t.clamp_min_(0.0), lambda a: np.maximum(a, 0)),
    "clamp_max_": (lambda t: t.clamp_max_(0.0), lambda a: np.minimum(a, 0)),
    "lerp_": (lambda t: t.lerp_(dj.ones(4), 0.25), lambda a: a + 0.25 * (1 - a)),
    "masked_fill_": (lambda t: t.masked_fill_(dj.tensor([True, False, True, False]), 7.0),
                     lambda a: np.where([True, False, True, False], 7.0, a)),
    "index_add_": (lambda t: t.index_add_(0, dj.tensor([1, 1]), dj.ones(2), alpha=3),
                   lambda a: a + np.array([0, 6.0, 0, 0])),
    "scatter_": (lambda t: t.scatter_(0, dj.tensor([3, 0]), 5.0),
                 lambda a: np.where([True, False, False, True], 5.0, a)),
    "scatter_add_": (lambda t: t.scatter_add_(0, dj.tensor([2]), dj.ones(1)),
                     lambda a: a + np.array([0, 0, 1.0, 0])),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_writes_through_views_and_bumps_the_version(name):
    fn, expected = INPLACE[name]
    values = np.array([[0.5, -1.5, 2.0, -0.25], [1.0, 2.0, 3.0, 4.0]], np.float32)
    base = dj.tensor(values)
    row = base[0]
    before = base._version[0]
    assert fn(row) is row
    assert base._version[0] > before
    np.testing.assert_allclose(base.numpy()[0], expected(values[0]), rtol=1e-6)
    np.testing.assert_array_equal(base.numpy()[1], values[1])


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_on_a_leaf_that_requires_grad_raises(name):
    leaf = dj.tensor([0.5, -1.5, 2.0, -0.25], requires_grad=True)
    with pytest.raises(InplaceError):
        INPLACE[name][0](leaf)
    with dj.no_grad():
        INPLACE[name][0](leaf)  # allowed off the tape, as PyTorch


def test_inplace_is_recorded_for_backward_on_a_non_leaf():
    a = t64([0.5, -1.5, 2.0])
    b = a * 1.0
    b.square_()
    b.lerp_(dj.tensor([1.0, 1.0, 1.0], dtype=dj.float64), 0.5)
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 0.5 * 2 * np.array([0.5, -1.5, 2.0]))


def test_inplace_on_saved_tensor_is_caught():
    a = t64([1.0, 2.0])
    b = a * 1.0
    c = b.exp()
    c.square_()  # exp saved its output, which changed
    with pytest.raises(RuntimeError):
        c.sum().backward()


def test_random_fills():
    dj.manual_seed(0)
    t = dj.empty(2000)
    version = t._version[0]
    t.bernoulli_(0.25)
    assert set(np.unique(t.numpy())) <= {0.0, 1.0} and abs(t.mean().item() - 0.25) < 0.05
    assert t._version[0] == version + 1
    t.bernoulli_(dj.zeros(2000))
    assert t.sum().item() == 0
    t.exponential_(4.0)
    assert (t.numpy() > 0).all() and abs(t.mean().item() - 0.25) < 0.05
    base = dj.zeros(2, 3)
    base[1].exponential_()
    assert (base.numpy()[0] == 0).all() and (base.numpy()[1] > 0).all()
    with pytest.raises(ShapeError, match="bernoulli_"):
        t.bernoulli_(1.5)
    with pytest.raises(ShapeError, match="exponential_"):
        t.exponential_(0.0)
    with pytest.raises(DTypeError, match="exponential_"):
        dj.zeros(3, dtype=dj.int64).exponential_()
    with pytest.raises(NotImplementedError, match="generator"):
        t.bernoulli_(0.5, generator=object())


# --- creation, queries, inference_mode ----------------------------------------------------------
def test_creation_functions():
    a = np.arange(3.0)
    shared = dj.as_tensor(a)
    a[0] = 9.0
    assert shared.tolist() == [9.0, 1.0, 2.0] and shared.dtype == dj.float64
    assert dj.as_tensor(a, dtype=dj.float32).dtype == dj.float32
    t = dj.tensor([1.0])
    assert dj.as_tensor(t) is t and dj.as_tensor([1, 2]).dtype == dj.int64
    assert dj.is_tensor(t) and not dj.is_tensor(a)
    assert dj.numel(dj.zeros(2, 3)) == 6
    e = dj.empty_like(dj.zeros(2, 3, dtype=dj.int64))
    assert e.shape == (2, 3) and e.dtype == dj.int64
    assert dj.empty_like(t, dtype=dj.float64, requires_grad=True).requires_grad
    assert dj.is_floating_point(t) and not dj.is_floating_point(dj.tensor([1]))


def test_normal_and_bernoulli():
    dj.manual_seed(0)
    s = dj.normal(2.0, 0.5, size=(4000,))
    assert s.dtype == dj.float32 and abs(s.mean().item() - 2.0) < 0.05
    m = dj.tensor([0.0, 100.0], dtype=dj.float64, requires_grad=True)
    x = dj.normal(m, dj.tensor([1e-3, 1e-3], dtype=dj.float64))
    assert x.dtype == dj.float64 and abs(x[1].item() - 100.0) < 0.1
    (x * 3).sum().backward()
    assert m.grad.tolist() == [0.0, 0.0]  # PyTorch: zero gradient, not none
    assert dj.normal(dj.zeros(3, 1), 1.0).shape == (3, 1)
    b = dj.bernoulli(dj.tensor([0.0, 1.0, 0.0, 1.0]))
    assert b.tolist() == [0.0, 1.0, 0.0, 1.0]
    assert dj.bernoulli(dj.zeros(5, dtype=dj.float64), 1.0).tolist() == [1.0] * 5
    with pytest.raises(ShapeError):
        dj.normal(0.0, -1.0, size=(2,))
    with pytest.raises(DongjingError, match="size"):
        dj.normal(0.0, 1.0)
    with pytest.raises(DongjingError, match="dtype="):
        dj.normal(dj.zeros(2), 1.0, dtype=dj.float64)
    with pytest.raises(ShapeError, match="bernoulli"):
        dj.bernoulli(dj.tensor([1.5]))


def test_tensor_queries():
    x = dj.zeros(2, 3)
    assert x.type_as(dj.tensor([1])).dtype == dj.int64
    assert x.half().dtype == dj.float16 and x.element_size() == 4
    assert x.nelement() == 6 and x.ndimension() == 2 and x.is_floating_point()
    assert x.is_contiguous() and not x[:, ::2].is_contiguous()
    assert x.stride() == (3, 1) and x.stride(-2) == 3 and x.t().stride() == (1, 3)
    with pytest.raises(DongjingError, match="memory_format"):
        x.is_contiguous(memory_format="channels_last")


def test_inference_mode_is_no_grad():
    x = dj.tensor([1.0], requires_grad=True)
    with dj.inference_mode():
        assert not (x * 2).requires_grad
    with dj.inference_mode(False):
        assert (x * 2).requires_grad

    @dj.inference_mode
    def bare(v):
        return v * 2

    @dj.inference_mode()
    def called(v):
        return v * 2

    assert not bare(x).requires_grad and not called(x).requires_grad
    assert dj.is_grad_enabled()


# --- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, text", [
    (lambda: dj.lerp(dj.ones(2), dj.ones(2, dtype=dj.float64), 0.5), DTypeError, "lerp"),
    (lambda: dj.lerp(dj.tensor([1]), dj.tensor([2]), 0.5), DTypeError, "lerp"),
    (lambda: dj.lerp(dj.ones(2), dj.ones(2), dj.ones(3)), ShapeError, "lerp"),
    (lambda: dj.lerp(dj.ones(2), dj.ones(2), "a"), DTypeError, "weight"),
    (lambda: dj.movedim(dj.ones(2, 3), 2, 0), ShapeError, "movedim"),
    (lambda: dj.movedim(dj.ones(2, 3), (0, 1), (0,)), ShapeError, "movedim"),
    (lambda: dj.movedim(dj.ones(2, 3), (0, 0), (0, 1)), ShapeError, "repeated"),
    (lambda: dj.frac(dj.tensor([1])), DTypeError, "frac"),
    (lambda: dj.fmod(dj.tensor([1]), 0), DongjingError, "fmod: integer division by zero"),
    (lambda: dj.addmm(dj.ones(3), dj.ones(3), dj.ones(3, 2)), ShapeError, "addmm"),
    (lambda: dj.addmm(dj.ones(4), dj.ones(3, 2), dj.ones(2, 2)), ShapeError, "addmm"),
    (lambda: dj.addmm(dj.ones(2), dj.ones(2, 2), dj.ones(2, 2, dtype=dj.float64)), DTypeError,
     "addmm"),
    (lambda: dj.allclose(dj.ones(2), dj.ones(2, dtype=dj.float64)), DTypeError, "allclose"),
    (lambda: dj.diag(dj.ones(2, 2, 2)), ShapeError, "diag"),
    (lambda: dj.trace(dj.ones(3)), ShapeError, "trace"),
    (lambda: dj.cross(dj.ones(2, 2), dj.ones(2, 2)), ShapeError, "cross"),
    (lambda: dj.cross(dj.ones(3, 2), dj.ones(3, 2), dim=1), ShapeError, "cross"),
    (lambda: dj.diff(dj.ones(3), n=-1), ShapeError, "diff"),
    (lambda: dj.meshgrid(dj.ones(2, 2)), ShapeError, "meshgrid"),
    (lambda: dj.meshgrid(dj.ones(2), dj.ones(2), indexing="ab"), ShapeError, "meshgrid"),
    (lambda: dj.repeat_interleave(dj.ones(3), dj.tensor([1, 2])), ShapeError,
     "repeat_interleave"),
    (lambda: dj.repeat_interleave(dj.ones(3), -1), ShapeError, "repeat_interleave"),
    (lambda: dj.masked_select(dj.ones(3), dj.ones(3)), DTypeError, "masked_select"),
    (lambda: dj.unflatten(dj.ones(6), 0, (4, -1)), ShapeError, "unflatten"),
    (lambda: dj.unflatten(dj.ones(6), 0, (2, 2)), ShapeError, "unflatten"),
    (lambda: dj.index_add(dj.ones(3), 0, dj.tensor([5]), dj.ones(1)), ShapeError, "index_add"),
    (lambda: dj.index_add(dj.ones(3, 2), 0, dj.tensor([0]), dj.ones(1, 3)), ShapeError,
     "index_add"),
    (lambda: dj.ones(2).masked_fill_(dj.ones(2, 2) > 0, 1.0), ShapeError, "masked_fill_"),
    (lambda: dj.tensor([1, 2]).reciprocal_(), DTypeError, "reciprocal_"),
    (lambda: dj.numel([1, 2]), DongjingError, "numel"),
])
def test_errors_name_the_function(call, error, text):
    with pytest.raises(error, match=text):
        call()


def test_clamp_with_a_float_bound_promotes_an_integer_tensor():
    # PyTorch: torch.clamp(torch.tensor([0, 3]), 0.5) -> tensor([0.5, 3.0]) (float32)
    out = dj.clamp(dj.tensor([0, 3]), 0.5)
    assert out.dtype == dj.float32 and out.tolist() == [0.5, 3.0]
    assert dj.tensor([0, 3]).clamp(max=2.5).tolist() == [0.0, 2.5]
    ints = dj.clamp(dj.tensor([0, 3]), 1, 2)  # int bounds keep the integer dtype
    assert ints.dtype == dj.int64 and ints.tolist() == [1, 2]
