"""PyTorch's autocast op lists, per device type, in dongjing's names: a name is an op record's
(matched in dispatch, so it holds eagerly and while building graphs) or a public function's
(decorated with `autocasting.autocast_policy`, so the whole function runs in one precision).

Policies, as PyTorch's: LOWER casts floating inputs (float64 excepted) to the region's dtype;
FLOAT32 casts them to float32; PROMOTE casts them all to the widest of them. Ops not listed run
in whatever dtypes their inputs have.
"""

from __future__ import annotations

LOWER, FLOAT32, PROMOTE = "lower", "float32", "promote"

# products: matrix multiplies and convolutions (both devices)
_PRODUCTS = (
    "matmul", "einsum", "mm", "bmm", "addmm", "addbmm", "baddbmm", "linear", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
    "scaled_dot_product_attention",
)

_LOSSES = (
    "mse_loss", "nll_loss", "cross_entropy", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "margin_ranking_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "hinge_embedding_loss", "cosine_embedding_loss", "poisson_nll_loss", "ctc_loss",
)

# torch/csrc/autocast_mode.cpp, CPU: the float32 list is mostly losses and linear algebra
_CPU_FLOAT32 = _LOSSES + (
    "prod", "cdist", "trace", "quantile", "nanquantile", "stft", "polar", "grid_sample",
    "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "linalg_cholesky", "linalg_det",
    "linalg_det_sign", "linalg_eigh_vectors", "linalg_eigvalsh", "linalg_inv",
    "linalg_logabsdet", "linalg_qr_q", "linalg_qr_r", "linalg_solve", "linalg_svd_u",
    "linalg_svd_vh", "linalg_svdvals",
)

# CUDA: also pointwise transcendentals, reductions, softmax and norms
_CUDA_FLOAT32 = _LOSSES + (
    "pow", "pow_scalar", "acos", "asin", "cosh", "sinh", "tan", "exp", "expm1", "log", "log10",
    "log1p", "log2", "erfinv", "reciprocal", "rsqrt", "cumsum", "cumprod", "prod", "sum",
    "norm", "norm2", "dist", "cdist", "pdist", "renorm", "softmax", "softmin", "log_softmax",
    "softplus", "layer_norm", "group_norm", "normalize", "cosine_similarity",
)

_CPU_PROMOTE = ("stack", "cat", "concat", "index_copy")
_CUDA_PROMOTE = _CPU_PROMOTE + ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot",
                                "grid_sample", "index_put", "scatter_add", "tensordot")


def _table(lower, float32, promote) -> dict[str, str]:
    table = dict.fromkeys(promote, PROMOTE)
    table.update(dict.fromkeys(float32, FLOAT32))
    table.update(dict.fromkeys(lower, LOWER))
    return table


POLICIES: dict[str, dict[str, str]] = {
    "cpu": _table(_PRODUCTS, _CPU_FLOAT32, _CPU_PROMOTE),
    "cuda": _table(_PRODUCTS, _CUDA_FLOAT32, _CUDA_PROMOTE),
}
POLICIES["mps"] = POLICIES["cuda"]


def policy(device_type: str, name: str) -> str | None:
    """The policy autocast applies to op or function `name` on `device_type` (None: none)."""
    table = POLICIES.get(device_type)
    return None if table is None else table.get(name)
