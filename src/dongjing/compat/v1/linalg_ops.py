"""tf.matrix_determinant and tf.matrix_inverse (also tf.linalg.det / inv) over the last two
dims, as ops of the op table whose gradients are written with ops (so they differentiate again):
d det(A) = det(A) inv(A)^T, d inv(A) = -inv(A)^T g inv(A)^T."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import ops as _ops
from ...core.registry import Spec, define
from ...dispatch import apply1
from ...errors import DTypeError, ShapeError
from .graphs import tf_function
from .math_ops import _t

if TYPE_CHECKING:
    from ...tensor import Tensor
    from ...types import TensorLike


def _square_infer(name: str, keep: bool):
    def infer(a: Spec):
        if len(a.shape) < 2 or (None not in a.shape[-2:] and a.shape[-1] != a.shape[-2]):
            raise ShapeError(f"{name}: needs (..., n, n) square matrices, got shape {a.shape}")
        if a.dtype.kind != "f":
            raise DTypeError(f"{name}: needs floating point matrices, got {a.dtype}")
        return (a.shape if keep else a.shape[:-2]), a.dtype

    return infer


def _swap(x):
    return _ops.transpose(x, -1, -2)


def _inverse_vjp(g, inputs, out, needs, attrs):
    t = _swap(out)
    return (-_ops.matmul(_ops.matmul(t, g), t),) if needs[0] else (None,)


def _det_vjp(g, inputs, out, needs, attrs):
    if not needs[0]:
        return (None,)
    scale = _ops.unsqueeze(_ops.unsqueeze(g * out, -1), -1)
    return (scale * _swap(inverse(inputs[0])),)


_inverse = define("tf_matrix_inverse", forward=lambda xp, a: xp.linalg.inv(a),
                  infer=_square_infer("tf.matrix_inverse", True), vjp=_inverse_vjp,
                  saves_output=True, onnx_reason="compat.v1's matrix inverse: no ONNX operator",
                  doc="The inverse of each (n, n) matrix of the last two dims.")
_det = define("tf_matrix_determinant", forward=lambda xp, a: xp.linalg.det(a),
              infer=_square_infer("tf.matrix_determinant", False), vjp=_det_vjp,
              saves_output=True, onnx_reason="compat.v1's determinant: no ONNX operator",
              doc="The determinant of each (n, n) matrix of the last two dims.")


def inverse(a):
    """inv(a) over the last two dims (an op)."""
    return apply1(_inverse, a)


@tf_function
def matrix_inverse(input: TensorLike, adjoint: bool = False, name: str | None = None  # noqa: A002
                   ) -> Tensor:
    """The inverse of each square matrix of the last two dims (adjoint: of its transpose)."""
    a = _t(input)
    return inverse(_swap(a) if adjoint else a)


@tf_function
def matrix_determinant(input: TensorLike, name: str | None = None) -> Tensor:  # noqa: A002
    """The determinant of each square matrix of the last two dims."""
    return apply1(_det, _t(input))
