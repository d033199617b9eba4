"""PyTorch's matrix-product and fused multiply-add functions under their PyTorch names
(`kron`, `tensordot`, `inner`, `vdot`, `mv`, `addmv`, `addr`, `addbmm`, `baddbmm`, `addcmul`,
`addcdiv`, `chain_matmul`, `ger`, `rsub`): compositions of matmul, einsum and elementwise ops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ShapeError
from ..tensor.out_argument import accepts_out
from .convert import as_tensor
from .einsum import einsum
from .elementwise import add, div, mul, sub, zeros_like
from .layout import bmm, outer
from .linalg import cast_to, mm
from .reduce import sum as _sum
from .shape import reshape

if TYPE_CHECKING:
    from ..tensor import Tensor
    from ..types import DTypeLike, Number, TensorLike

__all__ = ["kron", "tensordot", "inner", "vdot", "mv", "addmv", "addr", "addbmm", "baddbmm",
           "addcmul", "addcdiv", "chain_matmul", "ger", "rsub"]


@accepts_out
def kron(input: TensorLike, other: TensorLike) -> Tensor:
    """The Kronecker product."""
    a, b = as_tensor(input), as_tensor(other)
    n = max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (n - a.ndim) + tuple(a.shape))
    b = reshape(b, (1,) * (n - b.ndim) + tuple(b.shape))
    inter_a = sum(([s, 1] for s in a.shape), [])
    inter_b = sum(([1, s] for s in b.shape), [])
    prod = mul(reshape(a, tuple(inter_a)), reshape(b, tuple(inter_b)))
    return reshape(prod, tuple(p * q for p, q in zip(a.shape, b.shape)))


def tensordot(a, b, dims=2, out=None):
    """Sum of products over the last `dims` dims of `a` and the first of `b` (or the dim lists
    `dims = ([...], [...])`)."""
    a, b = as_tensor(a), as_tensor(b)
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da, db = [d % a.ndim for d in da], [d % b.ndim for d in db]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(da, db):
        sb[j] = sa[i]
    out_letters = [c for i, c in enumerate(sa) if i not in da] + \
        [c for j, c in enumerate(sb) if j not in db]
    return einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out_letters)}", a, b)


@accepts_out
def inner(input: TensorLike, other: TensorLike) -> Tensor:
    """Sum of products over the last dims (a scalar input multiplies)."""
    a, b = as_tensor(input), as_tensor(other)
    if a.ndim == 0 or b.ndim == 0:
        return mul(a, b)
    return tensordot(a, b, ([-1], [-1]))


@accepts_out
def vdot(input: TensorLike, other: TensorLike) -> Tensor:
    """The dot product of two 1-d tensors (conjugating the first: a no-op for reals)."""
    a, b = as_tensor(input), as_tensor(other)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ShapeError(f"vdot: expects two 1-d tensors of one size, got {a.shape} and "
                         f"{b.shape}")
    return _sum(mul(a, b))


@accepts_out
def mv(input: TensorLike, vec: TensorLike) -> Tensor:
    """Matrix times vector."""
    a, v = as_tensor(input), as_tensor(vec)
    if a.ndim != 2 or v.ndim != 1 or None not in (a.shape[1], v.shape[0]) and \
            a.shape[1] != v.shape[0]:
        raise ShapeError(f"mv: expects an (n, m) matrix and an (m,) vector, got {a.shape} and "
                         f"{v.shape}")
    return reshape(mm(a, reshape(v, (-1, 1))), (a.shape[0],))


@accepts_out
def addmv(input: TensorLike, mat: TensorLike, vec: TensorLike, beta: Number = 1,
          alpha: Number = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec)."""
    return add(mul(as_tensor(input), beta), mul(mv(mat, vec), alpha))


@accepts_out
def addr(input: TensorLike, vec1: TensorLike, vec2: TensorLike, beta: Number = 1,
         alpha: Number = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2)."""
    return add(mul(as_tensor(input), beta), mul(outer(vec1, vec2), alpha))


@accepts_out
def addbmm(input: TensorLike, batch1: TensorLike, batch2: TensorLike, beta: Number = 1,
           alpha: Number = 1
           ) -> Tensor:
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i]."""
    return add(mul(as_tensor(input), beta), mul(_sum(bmm(batch1, batch2), 0), alpha))


@accepts_out
def baddbmm(input: TensorLike, batch1: TensorLike, batch2: TensorLike,
            out_dtype: DTypeLike | None = None, *, beta: Number = 1,
            alpha: Number = 1) -> Tensor:
    """beta * input + alpha * (batch1 @ batch2), batch by batch (`out_dtype`: the operands cast
    to it first, computed and returned in that dtype)."""
    x, b1, b2 = (cast_to(as_tensor(t), out_dtype) for t in (input, batch1, batch2))
    return add(mul(x, beta), mul(bmm(b1, b2), alpha))


@accepts_out
def addcmul(input: TensorLike, tensor1: TensorLike, tensor2: TensorLike,
            value: Number = 1) -> Tensor:
    """input + value * tensor1 * tensor2."""
    return add(as_tensor(input), mul(mul(as_tensor(tensor1), tensor2), value))


@accepts_out
def addcdiv(input: TensorLike, tensor1: TensorLike, tensor2: TensorLike,
            value: Number = 1) -> Tensor:
    """input + value * tensor1 / tensor2."""
    return add(as_tensor(input), mul(div(as_tensor(tensor1), tensor2), value))


@accepts_out
def chain_matmul(*matrices: TensorLike) -> Tensor:
    """The product of the matrices, left to right."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    out = as_tensor(matrices[0])
    for m in matrices[1:]:
        out = mm(out, m)
    return out


@accepts_out
def ger(input: TensorLike, vec2: TensorLike) -> Tensor:
    """The outer product (PyTorch's old name of `outer`)."""
    return outer(input, vec2)


def rsub(input: TensorLike, other: TensorLike, alpha: Number = 1) -> Tensor:
    """other - alpha * input."""
    return sub(as_tensor(other) + zeros_like(as_tensor(input)), mul(as_tensor(input), alpha))
