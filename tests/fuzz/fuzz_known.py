"""What the differential fuzzer already knows: documented limits and deliberate differences
(each narrow), so that a run reports only new failures."""

from __future__ import annotations

# (text in the message, text in the program or "" or a test of the Program, why[, the only
# mode it applies to]):
# documented limits (a clear error naming the op, or float32 rounding, never a wrong answer),
# each narrow; no mode is ever marked known as a whole
KNOWN_BUGS = [
    ("differs at", "dj.tanh(", "float32 tanh inside a compiled kernel is within 1 ulp of NumPy's "
     "(docs/performance.md); its gradient 1 - y*y cancels near |x| > 4 and magnifies that ulp "
     "(a float32 rounding difference, not a wrong formula)", "O2_fused"),
    ("has zeros of the wrong sign", "dj.am", "min/max of +0.0 and -0.0: IEEE 754 allows either, "
     "and NumPy's answer depends on the order it visits the elements, which differs between "
     "the strided eager input and a graph's fed copy (PyTorch does not specify it either)"),
    ("has unknown dims; name the dims to squeeze", "dj.squeeze(", "squeeze without dims of a "
     "tensor with unknown dims (a documented limit: the result's rank would be unknown)"),
    ("squeeze: dim", "dj.squeeze(", "squeeze of a dim unknown at build time that is not 1 when "
     "the graph runs (a documented limit: eager leaves such a dim, as PyTorch does; a graph's "
     "rank is fixed)"),
    ("must be known except dim 0", "F.conv2d(", "conv2d of a weight whose channels and kernel "
     "size are unknown when the graph is built (a documented limit: they fix the im2col "
     "layout; the error says so)", "unknown_all"),
    ("dj.cond: output", "dj.cond", "dj.cond refuses branches of different float dtypes in a graph "
     "(a documented limit: a graph value has one dtype; eager returns the taken branch's)"),
]


def _has_ties(program) -> bool:
    import numpy as np

    return any(inp.array.size != np.unique(inp.array).size for inp in program.inputs)


def _has_nan(program) -> bool:
    import numpy as np

    return any(inp.array.dtype.kind == "f" and bool(np.isnan(inp.array).any())
               for inp in program.inputs)


def _arguments(program, fn: str) -> list:
    """The values (eager) that each `fn(v, ...)` call of `program` is given as its first
    argument `v` (a value name), computed by running the program's lines."""
    import re

    import numpy as np
    from fuzz_program import NAMESPACE

    import dongjing as dj

    names = re.findall(re.escape(fn) + r"\((\w+)[,)]", program.source())
    if not names:
        return []
    scope = dict(NAMESPACE, **{f"x{i}": dj.tensor(inp.array)
                               for i, inp in enumerate(program.inputs)})
    with np.errstate(all="ignore"):
        for line in program.lines:
            exec(line, scope)  # noqa: S102 - the fuzzer's own generated line
    return [v.numpy() for v in (scope.get(n) for n in names) if isinstance(v, dj.Tensor)]


def _cumprod_of_nonfinite(program) -> bool:
    """Whether some `dj.cumprod(v, ...)` of `program` runs over a `v` holding inf or NaN."""
    import numpy as np

    return any(v.dtype.kind == "f" and not bool(np.isfinite(v).all())
               for v in _arguments(program, "dj.cumprod"))


def _topk_of_ties(program) -> bool:
    """Whether some `dj.topk(v, ...)` of `program` runs over a `v` with tied values (NaNs
    among them: PyTorch ranks NaN above every number, so two NaNs tie)."""
    import numpy as np

    return _has_ties(program) or any(
        v.size != np.unique(v).size or int(np.isnan(v).sum()) > 1
        for v in _arguments(program, "dj.topk") if v.dtype.kind == "f")


def _sign_of_nan(program) -> bool:
    """Whether some `dj.sign(v)` of `program` runs over a `v` holding NaN."""
    import numpy as np

    return any(v.dtype.kind == "f" and bool(np.isnan(v).any())
               for v in _arguments(program, "dj.sign"))


def _extremum_of_signed_zeros(program) -> bool:
    """Whether some `dj.amax(v, ...)` or `dj.amin(v, ...)` runs over both +0.0 and -0.0."""
    import numpy as np

    return any(v.dtype.kind == "f" and bool(((v == 0) & np.signbit(v)).any())
               and bool(((v == 0) & ~np.signbit(v)).any())
               for fn in ("dj.amax", "dj.amin") for v in _arguments(program, fn))


_SIGN_OF_NAN = ("sign(NaN): PyTorch's CPU kernel gives 0, NumPy and dongjing NaN (and what is "
                "computed from it: isnan, comparisons; seed 0, programs 5024 and 16207)")
KNOWN_BUGS += [  # against PyTorch: where dongjing differs on purpose or documents a limit
    ("has NaN at other places", "dj.sign(", _SIGN_OF_NAN, "torch"),
    ("differs: [", _sign_of_nan, _SIGN_OF_NAN, "torch"),
    ("has infinities at other places", _extremum_of_signed_zeros, "amax/amin of +0.0 and -0.0 "
     "(IEEE 754 allows either; see above), and a gradient through 1/x of it (seed 0, program "
     "13058)", "torch"),
    ("has infinities at other places", _topk_of_ties, "topk of tied values (+0 and -0, seed 0, "
     "program 3624): which one takes the gradient is unspecified in PyTorch", "torch"),
    ("has infinities at other places", lambda p: "F.max_pool2d(" in p.source() and _has_ties(p),
     "max pooling of a window with tied maxima (+0 and -0, seed 0, program 9077): which one "
     "takes the gradient is unspecified in PyTorch", "torch"),
    ("differs from PyTorch", _topk_of_ties, "topk of tied values: which tied element (and "
     "so which gradient position) is unspecified in PyTorch", "torch"),
    ("has NaN at other places", _topk_of_ties, "topk of tied values (two NaNs, or +0 and -0, "
     "seed 2027, programs 1203 and 1849): which one (and so which gradient position) is "
     "unspecified in PyTorch", "torch"),
    (", PyTorch gives float32[0", "F.conv2d(", "conv2d of an empty batch, float32 input and "
     "float64 weight: PyTorch returns float32 without its dtype check (it refuses the same "
     "with a non-empty batch), dongjing promotes as for any batch (seed 2027, program 16)",
     "torch"),
    ("differs from PyTorch", lambda p: "F.max_pool2d(" in p.source() and _has_ties(p),
     "max pooling of a window with tied maxima: which one takes the gradient is unspecified in "
     "PyTorch (dongjing: the first in row-major order)", "torch"),
    ("differ outside dim", "dj.cat(", "cat with a 1-d empty tensor (0,) beside tensors of "
     "another rank: PyTorch's legacy rule skips it, dongjing checks every shape", "torch"),
    ("(0,)", lambda p: any(
        expr.startswith("dj.cat(") for _, expr, _ in p.refused), "cat refused for tensors of "
     "different ranks where PyTorch computes it: only its legacy rule for a 1-d empty tensor "
     "(0,) allows that (seed 101, program 1710; seed 0, program 2144; dongjing checks every "
     "shape)", "torch"),
    ("has NaN at other places", lambda p: _cumprod_of_nonfinite(p), "cumprod's gradient "
     "where its input holds inf or NaN (a program input or one computed, e.g. remainder by 0: "
     "seed 2026, program 3240): PyTorch divides (inf / inf, NaN / NaN = NaN), dongjing's rule "
     "is exact where no product is 0, inf or NaN and takes the exact path otherwise", "torch"),
]


def known_reason(failure, program) -> str | None:
    """Why a failure is known and owned elsewhere, or None when it is a real new failure."""
    for text, code, reason, *mode in KNOWN_BUGS:
        if mode and failure.mode != mode[0]:
            continue
        if text in failure.message and (code(program) if callable(code)
                                        else code in program.source()):
            return reason
    return None
