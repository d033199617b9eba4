"""The `torch.*` functions added for PyTorch coverage (issue 33): values and gradients against
PyTorch, table-driven (one row per call), and torch-free checks of their behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import compare, ints, pos, r

import dongjing as dj
from dongjing.errors import ShapeError

# the deprecations PyTorch (and dongjing, as PyTorch) warn of for the legacy forms compared
pytestmark = [pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:torch.cholesky is deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:torch.qr is deprecated:UserWarning")]

A = r(3, 4)
B = r(3, 4, seed=1)
V = r(4, seed=2)
M = r(3, 3, seed=3)
SPD = M @ M.T + 3 * np.eye(3)
ALL = lambda name, *arrays, **kw: (name, arrays, kw)  # noqa: E731

# (name, inputs, keyword arguments): dj.<name> and torch.<name> called alike
CALLS = [
    # elementwise
    ALL("acosh", pos(3, 4) + 1.0), ALL("asinh", A), ALL("atanh", A * 0.4),
    ALL("arccos", A * 0.4), ALL("arcsin", A * 0.4), ALL("arctan", A), ALL("arccosh", pos(4) + 1),
    ALL("arcsinh", A), ALL("arctanh", A * 0.4), ALL("arctan2", A, B), ALL("exp2", A),
    ALL("deg2rad", A), ALL("rad2deg", A), ALL("sinc", np.array([0.0, 0.3, -1.2, 2.5])),
    ALL("xlogy", np.array([0.0, 1.5, -2.0, 0.0]), pos(4)), ALL("logit", pos(4) * 0.4),
    ALL("logit", pos(4) * 0.45, eps=0.2), ALL("copysign", A, B), ALL("float_power", pos(3, 4), B),
    ALL("fmax", np.array([1.0, np.nan, 3.0, np.nan]), np.array([2.0, 1.0, np.nan, np.nan])),
    ALL("fmin", np.array([1.0, np.nan, 3.0, np.nan]), np.array([2.0, 1.0, np.nan, np.nan])),
    ALL("heaviside", np.array([-1.0, 0.0, 2.0]), np.array([0.5, 0.7, 0.1])),
    ALL("ldexp", A, ints(3, 4, high=4)), ALL("logaddexp2", A, B), ALL("sgn", A),
    ALL("signbit", np.array([-1.0, -0.0, 0.0, 3.0])), ALL("nextafter", A, B),
    ALL("gcd", ints(5, high=30), ints(5, high=12, seed=1)),
    ALL("lcm", ints(5, high=9) + 1, ints(5, high=7, seed=1)),
    ALL("bitwise_and", ints(5, high=16), ints(5, high=16, seed=1)),
    ALL("bitwise_or", ints(5, high=16), ints(5, high=16, seed=1)),
    ALL("bitwise_xor", ints(5, high=16), ints(5, high=16, seed=1)),
    ALL("bitwise_not", ints(5, high=16) - 8),
    ALL("bitwise_left_shift", ints(5, high=16), ints(5, high=3, seed=1)),
    ALL("bitwise_right_shift", ints(5, high=64) - 32, ints(5, high=3, seed=1)),
    ALL("logical_xor", A > 0, B > 0), ALL("isclose", A, A + 1e-9),
    ALL("isclose", np.array([1.0, np.nan, np.inf, 2.0]), np.array([1.1, np.nan, np.inf, 2.0]),
        rtol=0.2, equal_nan=True),
    ALL("isposinf", np.array([np.inf, -np.inf, 1.0])),
    ALL("isneginf", np.array([np.inf, -np.inf, 1.0])), ALL("isreal", A), ALL("positive", A),
    ALL("angle", np.array([-1.0, 0.0, 2.0])), ALL("real", A), ALL("conj", A),
    ALL("conj_physical", A), ALL("resolve_conj", A), ALL("resolve_neg", A), ALL("fix", A * 3),
    ALL("greater", A, B), ALL("greater_equal", A, B), ALL("less", A, B),
    ALL("less_equal", A, B), ALL("not_equal", A, B),
    # shape and indexing
    ALL("atleast_1d", np.array(2.0)), ALL("atleast_2d", V), ALL("atleast_3d", A),
    ALL("column_stack", (V, V * 2)), ALL("dstack", (A, B)), ALL("row_stack", (V, V)),
    ALL("tensor_split", r(7, 2), 3), ALL("tensor_split", r(7, 2), [1, 5]),
    ALL("tensor_split", A, 3, dim=1), ALL("hsplit", A, 2), ALL("vsplit", r(4, 3), [1, 3]),
    ALL("dsplit", r(2, 2, 6), 3), ALL("split_with_sizes", r(6, 2), [1, 2, 3]),
    ALL("diagonal", r(3, 4, 5), offset=1, dim1=0, dim2=2), ALL("diagonal", A, offset=-1),
    ALL("diag_embed", A, offset=1), ALL("diag_embed", V, dim1=0, dim2=1), ALL("diagflat", A),
    ALL("select", A, 1, 2), ALL("select_scatter", A, r(3, seed=5), 1, 2),
    ALL("slice_scatter", r(6, 3), r(2, 3, seed=5), 0, 1, 5, 2),
    ALL("diagonal_scatter", A, r(3, seed=6), 1),
    ALL("index_fill", A, 1, np.array([0, 2]), -1.5),
    ALL("index_copy", A, 1, np.array([3, 0]), r(3, 2, seed=7)),
    ALL("index_put", A, (np.array([0, 2]), np.array([1, 3])), r(2, seed=8)),
    ALL("index_put", A, (np.array([0, 0]), np.array([1, 1])), r(2, seed=8), accumulate=True),
    ALL("masked_scatter", A, A > 0.5, r(12, seed=9)),
    ALL("put", A, np.array([0, 5, -1]), r(3, seed=10)),
    ALL("put", A, np.array([1, 1, 2]), r(3, seed=10), accumulate=True),
    ALL("take", A, np.array([[0, 5], [-1, 3]])), ALL("rot90", A), ALL("rot90", A, 3, [1, 0]),
    ALL("rot90", r(2, 3, 4), 2, [1, 2]), ALL("fliplr", A), ALL("flipud", A),
    ALL("kron", r(2, 3), r(2, 2, seed=4)), ALL("tensordot", r(2, 3, 4), r(3, 4, 2, seed=1)),
    ALL("tensordot", r(2, 3, 4), r(4, 3, seed=1), dims=([1, 2], [1, 0])),
    ALL("inner", A, r(5, 4, seed=1)), ALL("vdot", V, V * 0.5 + 1), ALL("mv", A, V),
    ALL("addmv", r(3), A, V, beta=0.5, alpha=2.0), ALL("addr", A, r(3), V, alpha=0.3),
    ALL("addbmm", A, r(2, 3, 5), r(2, 5, 4, seed=1)),
    ALL("baddbmm", r(2, 3, 4), r(2, 3, 5), r(2, 5, 4, seed=1), beta=0.2),
    ALL("addcmul", A, B, A * 2, value=0.5), ALL("addcdiv", A, B, pos(3, 4), value=-2.0),
    ALL("chain_matmul", M, A, r(4, 2)), ALL("ger", V, r(3)), ALL("rsub", A, B, alpha=2),
    ALL("block_diag", r(2, 2), V, np.array(3.0)), ALL("cartesian_prod", V[:2], r(3)),
    ALL("combinations", V), ALL("combinations", V[:3], 2, True),
    ALL("constant_pad_nd", A, [1, 2, 0, 1], 0.5), ALL("constant_pad_nd", A, [-1, 1]),
    ALL("ravel", A), ALL("msort", A), ALL("unsafe_chunk", A, 2, 1), ALL("unsafe_split", A, 2),
    ALL("unsafe_split_with_sizes", A, [1, 3], 1),
    # copies of views
    ALL("alias_copy", A), ALL("detach_copy", A), ALL("expand_copy", V, (3, 4)),
    ALL("permute_copy", r(2, 3, 4), (2, 0, 1)), ALL("view_copy", A, (4, 3)),
    ALL("slice_copy", A, 1, 1, 4, 2), ALL("unfold_copy", A, 1, 2, 1),
    ALL("diagonal_copy", A, 1), ALL("select_copy", A, 0, 1), ALL("split_copy", A, 2),
    ALL("split_with_sizes_copy", A, [1, 3], 1), ALL("squeeze_copy", r(3, 1, 4), 1),
    ALL("t_copy", A), ALL("transpose_copy", r(2, 3, 4), 0, 2), ALL("unbind_copy", A, 1),
    ALL("unsqueeze_copy", A, 1), ALL("narrow_copy", A, 1, 1, 2),
    # reductions and scans
    ALL("nansum", np.array([[1.0, np.nan], [2.0, 3.0]]), 1),
    ALL("nanmean", np.array([[1.0, np.nan], [2.0, 3.0]]), 1), ALL("count_nonzero", A > 0, 1),
    ALL("aminmax", A, dim=1), ALL("kthvalue", A, 2, 1), ALL("kthvalue", A, 3, 0, True),
    ALL("median", A), ALL("median", A, 1), ALL("median", r(5, 3), 0, True),
    ALL("nanmedian", np.array([[1.0, np.nan, 3.0, 0.5], [2.0, 5.0, 4.0, np.nan]]), 1),
    ALL("nanmedian", np.array([1.0, np.nan, 3.0, 0.5])),
    ALL("mode", np.array([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 1.0, 1.0]]), 1),
    ALL("quantile", A, 0.3, 1), ALL("quantile", A, np.array([0.1, 0.5, 0.9]), 1, True),
    ALL("quantile", A, np.array([0.25, 0.75])), ALL("quantile", A, 0.4, 0, interpolation="lower"),
    ALL("quantile", A, 0.4, 1, interpolation="higher"),
    ALL("quantile", A, 0.4, 1, interpolation="midpoint"),
    ALL("quantile", A, 0.4, 1, interpolation="nearest"),
    ALL("nanquantile", np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 4.0]]), 0.5, 1),
    ALL("logcumsumexp", A * 5, 1), ALL("cummax", A, 1), ALL("cummin", A, 0),
    ALL("trapezoid", A), ALL("trapezoid", A, V, dim=1), ALL("trapz", A, dim=0),
    ALL("cumulative_trapezoid", A, dx=0.5), ALL("dist", A, B), ALL("dist", A, B, 1.5),
    ALL("dist", A, B, float("inf")), ALL("renorm", A, 2, 0, 1.0), ALL("cov", A),
    ALL("cov", A, correction=0), ALL("cov", V),
    ALL("corrcoef", A), ALL("bincount", np.array([0, 2, 2, 5])),
    ALL("bincount", np.array([0, 2, 2, 5]), pos(4), minlength=8),
    ALL("histc", A, 5, -1.0, 1.0), ALL("histc", A, 4),
    ALL("searchsorted", np.array([1.0, 2.0, 3.0, 5.0]), np.array([[2.0, 0.0], [6.0, 3.0]])),
    ALL("searchsorted", np.sort(A, 1), r(3, 2, seed=4), right=True),
    ALL("bucketize", A, np.array([-0.5, 0.0, 0.5])),
    ALL("unique_consecutive", np.array([1, 1, 2, 2, 3, 1, 1])),
    ALL("unique_consecutive", np.array([[1, 1], [1, 1], [2, 3]]), True, True, 0),
    # torch.* forms of layer and matrix functions
    ALL("adaptive_avg_pool1d", r(2, 3, 8), 3), ALL("adaptive_max_pool1d", r(2, 3, 8), 3),
    ALL("avg_pool1d", r(2, 3, 8), 3, 2), ALL("max_pool1d", r(2, 3, 8), 2),
    ALL("max_pool1d_with_indices", r(2, 3, 8), 2), ALL("max_pool3d", r(1, 1, 4, 4, 4), 2),
    ALL("conv1d", r(2, 3, 8), r(4, 3, 3, seed=1), r(4, seed=2), 2, 1),
    ALL("conv_transpose1d", r(2, 3, 5), r(3, 2, 3, seed=1)),
    ALL("conv_transpose2d", r(2, 3, 4, 4), r(3, 2, 3, 3, seed=1), None, 2),
    ALL("layer_norm", A, [4], pos(4), V), ALL("group_norm", r(2, 4, 3), 2, pos(4), r(4)),
    ALL("embedding", r(5, 3), ints(2, 3, high=5)),
    ALL("dropout", A, 0.3, False), ALL("alpha_dropout", A, 0.3, False),
    ALL("feature_dropout", A, 0.3, False), ALL("feature_alpha_dropout", A, 0.3, False),
    ALL("bilinear", r(5, 3), r(5, 2, seed=1), r(4, 3, 2, seed=2)),
    ALL("celu", A, 0.7), ALL("selu", A), ALL("rrelu", A), ALL("prelu", A, np.array([0.2])),
    ALL("hardshrink", A, 0.3), ALL("threshold", A, 0.1, -2.0),
    ALL("pixel_shuffle", r(1, 8, 2, 3), 2), ALL("pixel_unshuffle", r(1, 2, 4, 6), 2),
    ALL("channel_shuffle", r(1, 6, 2, 2), 3), ALL("native_channel_shuffle", r(1, 6, 2, 2), 2),
    ALL("cosine_similarity", A, B), ALL("pairwise_distance", A, B), ALL("pdist", r(5, 3)),
    ALL("pdist", r(4, 3), 1.5),
    ALL("cosine_embedding_loss", A, B, np.array([1, -1, 1])),
    ALL("hinge_embedding_loss", A, np.sign(B)),
    ALL("kl_div", np.log(pos(3, 4)), pos(3, 4, seed=1)),
    ALL("margin_ranking_loss", V, V[::-1].copy(), np.array([1.0, -1.0, 1.0, -1.0])),
    ALL("poisson_nll_loss", A, pos(3, 4), True, False, 1e-8, 1),
    ALL("hinge_embedding_loss", A, np.sign(B), 0.5, 2), ALL("kl_div", A, pos(3, 4), 1),
    ALL("triplet_margin_loss", A, B, A * 0.5),
    ALL("binary_cross_entropy_with_logits", A, (B > 0).astype(float)),
    ALL("rms_norm", A, [4], pos(4)),
    ALL("rnn_tanh_cell", r(2, 3), r(2, 4, seed=1), r(4, 3, seed=2), r(4, 4, seed=3), r(4),
        r(4, seed=4)),
    ALL("rnn_relu_cell", r(2, 3), r(2, 4, seed=1), r(4, 3, seed=2), r(4, 4, seed=3)),
    ALL("gru_cell", r(2, 3), r(2, 4, seed=1), r(12, 3, seed=2), r(12, 4, seed=3), r(12),
        r(12, seed=4)),
    ALL("inverse", SPD), ALL("det", M), ALL("logdet", SPD), ALL("slogdet", M),
    ALL("cholesky", SPD), ALL("qr", r(4, 3)), ALL("pinverse", r(4, 3)),
]
# no gradient to compare: PyTorch implements none (heaviside, detach_copy, the counts), or
# picks another element among ties (mode), or differentiates what has none here (nextafter)
NO_GRAD = {"mode", "bincount", "histc", "heaviside", "detach_copy", "nextafter",
           "native_channel_shuffle"}


def _ids():
    seen: dict = {}
    for name, _, _ in CALLS:
        seen[name] = seen.get(name, -1) + 1
        yield f"{name}-{seen[name]}"


@pytest.mark.parametrize("name,arrays,kwargs", CALLS, ids=list(_ids()))
def test_functions_equal_pytorch(name, arrays, kwargs):
    torch = pytest.importorskip("torch")
    tensors = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]
    tuples = [i for i, a in enumerate(arrays) if isinstance(a, tuple)]

    def call(lib, tensor):
        def fn(*given):
            args = list(arrays)
            for i, t in zip(tensors, given):
                args[i] = t
            for i in tuples:
                args[i] = tuple(tensor(a) if isinstance(a, np.ndarray) else a
                                for a in arrays[i])
            return getattr(lib, name)(*args, **kwargs)
        return fn

    compare(call(dj, dj.tensor), call(torch, torch.tensor), [arrays[i] for i in tensors],
            grad=name not in NO_GRAD,
            rtol=1e-6, atol=1e-9)


def test_svd_returns_v_as_pytorch_does():
    torch = pytest.importorskip("torch")
    x = r(4, 3)
    u, s, v = dj.svd(dj.tensor(x))
    tu, ts, tv = torch.svd(torch.tensor(x))
    np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-10)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(tv.numpy()), rtol=1e-8)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, x, atol=1e-10)


def test_lstm_cell_and_batch_norm_equal_pytorch():
    torch = pytest.importorskip("torch")
    x, h, c = r(2, 3), r(2, 4, seed=1), r(2, 4, seed=2)
    w_ih, w_hh, b = r(16, 3, seed=3), r(16, 4, seed=4), r(16, seed=5)
    ours = dj.lstm_cell(dj.tensor(x), (dj.tensor(h), dj.tensor(c)), dj.tensor(w_ih),
                        dj.tensor(w_hh), dj.tensor(b))
    theirs = torch.lstm_cell(torch.tensor(x), (torch.tensor(h), torch.tensor(c)),
                             torch.tensor(w_ih), torch.tensor(w_hh), torch.tensor(b))
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-10)
    xs = r(5, 3)
    rm, rv = dj.zeros(3), dj.ones(3)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    out = dj.batch_norm(dj.tensor(xs), pos(3), V[:3], rm, rv, True, 0.2, 1e-5, False)
    ref = torch.batch_norm(torch.tensor(xs), torch.tensor(pos(3)), torch.tensor(V[:3]), trm,
                           trv, True, 0.2, 1e-5, False)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-6)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-6)


# --- torch-free ------------------------------------------------------------------------------
def test_by_hand_values():
    np.testing.assert_array_equal(dj.gcd(dj.tensor([12, 18]), dj.tensor([8, 27])).numpy(),
                                  [4, 9])
    np.testing.assert_allclose(dj.sinc(dj.tensor([0.0, 0.5])).numpy(), [1.0, 2 / np.pi])
    np.testing.assert_allclose(dj.xlogy(dj.tensor([0.0, 2.0]), dj.tensor([0.0, np.e])).numpy(),
                               [0.0, 2.0])
    np.testing.assert_array_equal(dj.kron(dj.eye(2), dj.ones(1, 2)).numpy(),
                                  [[1, 1, 0, 0], [0, 0, 1, 1]])
    np.testing.assert_array_equal(dj.median(dj.tensor([3.0, 1.0, 4.0, 2.0])).numpy(), 2.0)
    np.testing.assert_array_equal(dj.bincount(dj.tensor([1, 1, 3])).numpy(), [0, 2, 0, 1])
    np.testing.assert_array_equal(dj.searchsorted(dj.tensor([1.0, 3.0]),
                                                  dj.tensor([0.0, 1.0, 2.0, 4.0])).numpy(),
                                  [0, 0, 1, 2])
    np.testing.assert_allclose(dj.trapezoid(dj.tensor([0.0, 1.0, 2.0])).numpy(), 2.0)


def test_errors_name_the_function():
    with pytest.raises(dj.DTypeError, match="gcd"):
        dj.gcd(dj.tensor([1.0]), dj.tensor([2.0]))
    with pytest.raises(ShapeError, match="vsplit"):
        dj.vsplit(dj.zeros(4), 2)
    with pytest.raises(ShapeError, match="select_scatter"):
        dj.select_scatter(dj.zeros(3, 4), dj.zeros(2), 1, 0)
    with pytest.raises(ShapeError, match="mv"):
        dj.mv(dj.zeros(3, 4), dj.zeros(3))
    with pytest.raises(ShapeError, match="bincount"):
        dj.bincount(dj.tensor([-1, 2]))


def test_compositions_in_a_static_graph_equal_eager():
    a, b = A.astype(np.float32), B.astype(np.float32)
    fns = [lambda x, y: dj.logaddexp2(x, y), lambda x, y: dj.kron(x, y),
           lambda x, y: dj.tensordot(x, y, ([1], [1])), lambda x, y: dj.diagonal(x + y),
           lambda x, y: dj.cummax(x, 1).values, lambda x, y: dj.quantile(x, 0.3, 1),
           lambda x, y: dj.logcumsumexp(y, 1), lambda x, y: dj.index_fill(x, 1, dj.tensor([1]),
                                                                          0.0),
           lambda x, y: dj.slice_scatter(x, y[:, :2], 1, 0, 2), lambda x, y: dj.fmax(x, y),
           lambda x, y: dj.searchsorted(dj.tensor([-0.5, 0.5]), x)]
    for fn in fns:
        eager = fn(dj.tensor(a), dj.tensor(b)).numpy()
        with dj.Graph() as g:
            x, y = dj.placeholder((3, 4)), dj.placeholder((3, 4))
            out = fn(x, y)
        for level in (0, 2):
            got = dj.Session(g, optimize=level).run(out, {x: a, y: b})
            np.testing.assert_allclose(got, eager, rtol=1e-6)
        np.testing.assert_allclose(dj.jit(fn)(dj.tensor(a), dj.tensor(b)).numpy(), eager,
                                   rtol=1e-6)
