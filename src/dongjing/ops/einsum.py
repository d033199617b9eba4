"""`einsum`: one primitive for any explicit subscript equation; each operand's gradient is
itself an einsum of the output gradient with the other operands (so it differentiates again).

Not supported (refused with a clear error): '...' broadcasting and a letter repeated within
one operand (a diagonal).
"""

from __future__ import annotations

from .. import dtypes
from ..core.registry import Spec, binds, define
from ..dispatch import apply
from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from . import onnx_rules
from .convert import as_tensor
from .shape import expand, unsqueeze


def parse(equation: str, n: int) -> tuple[tuple, str]:
    """(input subscripts, output subscripts) of `equation`, with the implicit output filled in."""
    eq = equation.replace(" ", "")
    if "." in eq:
        raise ShapeError(f"einsum: '...' is not supported (in {equation!r})")
    lhs, arrow, out = eq.partition("->")
    ins = tuple(lhs.split(","))
    if len(ins) != n:
        raise ShapeError(f"einsum: {equation!r} names {len(ins)} operands, got {n}")
    letters = "".join(ins)
    if not all(c.isalpha() for c in letters + out):
        raise ShapeError(f"einsum: subscripts must be letters, got {equation!r}")
    for sub in ins:
        if len(set(sub)) != len(sub):
            raise ShapeError(f"einsum: a letter repeated within one operand ({sub!r}) is not "
                             "supported")
    if not arrow:
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    elif len(set(out)) != len(out) or set(out) - set(letters):
        raise ShapeError(f"einsum: bad output subscripts {out!r} in {equation!r}")
    return ins, out


def _infer(*specs: Spec, ins, out):
    sizes: dict = {}
    for sub, spec in zip(ins, specs):
        if len(sub) != len(spec.shape):
            raise ShapeError(f"einsum: subscripts {sub!r} for an operand of {len(spec.shape)} "
                             f"dims")
        for c, d in zip(sub, spec.shape):
            known = sizes.get(c)
            if d is not None and known is not None and d != known:
                raise ShapeError(f"einsum: letter {c!r} is {known} in one operand and {d} in "
                                 "another")
            if known is None:
                sizes[c] = d
    dtype = specs[0].dtype
    for s in specs[1:]:
        dtype = dtypes.promote(dtype, s.dtype)
    return tuple(sizes[c] for c in out), dtype


def _forward(xp, *arrays, ins, out):
    dtype = arrays[0].dtype
    for a in arrays[1:]:
        dtype = xp.promote_types(dtype, a.dtype)
    return xp.einsum(",".join(ins) + "->" + out, *arrays, optimize=len(arrays) > 2,
                     dtype=dtype)


def _vjp(g, inputs, out, needs, attrs):
    ins, sub_out = attrs["ins"], attrs["out"]
    grads = []
    for i, (x, need) in enumerate(zip(inputs, needs)):
        if not need:
            grads.append(None)
            continue
        others = [j for j in range(len(inputs)) if j != i]
        have = set(sub_out).union(*(ins[j] for j in others))
        target = "".join(c for c in ins[i] if c in have)  # letters only x had are summed: 1s
        grad = apply(_einsum, g, *(inputs[j] for j in others),
                     ins=(sub_out,) + tuple(ins[j] for j in others), out=target)
        if target != ins[i]:
            for axis, c in enumerate(ins[i]):
                if c not in have:
                    grad = unsqueeze(grad, axis)
            grad = expand(grad, tuple(x.shape))
        grads.append(grad)
    return tuple(grads)


_einsum = define("einsum", forward=_forward, infer=_infer, vjp=_vjp, onnx=onnx_rules.einsum,
                 public="einsum", grad_name="EinsumBackward0")


@binds(_einsum)
def einsum(*args) -> Tensor:
    """Einstein summation, e.g. ``einsum("bij,bjk->bik", a, b)`` (operands may also be passed
    as one list), as PyTorch's ``einsum(equation, *operands)``."""
    if not args or not isinstance(args[0], str):
        raise ArgumentError("einsum(): the first argument must be the equation (a str)")
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    tensors = [as_tensor(t) for t in operands]
    ins, out = parse(equation, len(tensors))
    _infer(*(Spec(tuple(t.shape), t.dtype) for t in tensors), ins=ins, out=out)
    return apply(_einsum, *tensors, ins=ins, out=out)
