"""float16 and bfloat16 compute as PyTorch's CPU kernels do: in float32, rounded once to the
result's dtype. NumPy sums bfloat16 in bfloat16 (4096 ones add up to 256) and has no BLAS for
either, so every executor (eager dispatch, the interpreter, generated code, constant folding)
runs an op with 16-bit floating inputs through `widened`.
"""

from __future__ import annotations

from ..dtypes import LOW_PRECISION, float32

_NOT_COMPUTING = ("source", "effect", "control", "fused", "shape")


def computes(op) -> bool:
    """Whether `op` computes values from its inputs (movement ops, such as reshape or
    indexing, and sources, effects and control ops only move or route them)."""
    return not op.keeps_dtype and op.kind not in _NOT_COMPUTING


def needs_widening(op, input_dtypes) -> bool:
    """Whether `op` on inputs of `input_dtypes` must compute in float32."""
    return computes(op) and any(d in LOW_PRECISION for d in input_dtypes)


def widen(arrays) -> list:
    """`arrays` with each float16/bfloat16 one as float32."""
    return [a.astype(float32) if getattr(a, "dtype", None) in LOW_PRECISION else a
            for a in arrays]


def widened(forward, out_dtype):
    """`forward` computing on float32 copies of its 16-bit inputs, its result cast to
    `out_dtype` (a graph node's dtype)."""

    def run(*arrays, **attrs):
        out = forward(*widen(arrays), **attrs)
        if out_dtype is not None and getattr(out, "dtype", out_dtype) != out_dtype:
            out = out.astype(out_dtype)
        return out

    run.__name__ = getattr(forward, "__name__", "forward") + "_widened"
    return run
