"""`dj.linalg` (PyTorch's `torch.linalg`): norms, inverses, solvers and decompositions, each
with gradients, over the last two dims with any batch dims."""

from ..ops.linalg_decompositions import (
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    qr,
    slogdet,
    svd,
    svdvals,
)
from .norms import matrix_norm, norm, vector_norm
from .solvers import LstsqResult, lstsq, pinv, solve

__all__ = ["cholesky", "det", "eigh", "eigvalsh", "inv", "qr", "slogdet", "svd", "svdvals",
           "matrix_norm", "norm", "vector_norm", "LstsqResult", "lstsq", "pinv", "solve"]
