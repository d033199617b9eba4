"""`dj.linalg` (PyTorch's `torch.linalg`): norms, inverses, solvers and decompositions, each
with gradients, over the last two dims with any batch dims. Each takes PyTorch's `out=`."""

from ..ops import linalg_decompositions as _decompositions
from ..tensor import Tensor
from ..tensor.out_argument import accepts_out
from .norms import matrix_norm, norm, vector_norm
from .solvers import LstsqResult, lstsq, pinv, solve


def _check_driver(name: str, driver: str | None) -> None:
    if driver is not None:  # PyTorch's CPU rule: drivers are cuSOLVER's
        raise ValueError(f"linalg.{name}: keyword argument `driver=` is only supported on CUDA "
                         "inputs with cuSOLVER backend (dongjing has no cuSOLVER drivers)")


@accepts_out
def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None
        ) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, Vh) with A = U diag(S) Vh (only the thin form, ``full_matrices=False``)."""
    _check_driver("svd", driver)
    return _decompositions.svd(A, full_matrices)


@accepts_out
def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:
    """The singular values of each matrix, in decreasing order."""
    _check_driver("svdvals", driver)
    return _decompositions.svdvals(A)


cholesky = accepts_out(_decompositions.cholesky)
det = accepts_out(_decompositions.det)
eigh = accepts_out(_decompositions.eigh)
eigvalsh = accepts_out(_decompositions.eigvalsh)
inv = accepts_out(_decompositions.inv)
qr = accepts_out(_decompositions.qr)
slogdet = accepts_out(_decompositions.slogdet)

__all__ = ["cholesky", "det", "eigh", "eigvalsh", "inv", "qr", "slogdet", "svd", "svdvals",
           "matrix_norm", "norm", "vector_norm", "LstsqResult", "lstsq", "pinv", "solve"]
