"""Fused elementwise groups as CUDA kernels: the same `FusedBody` the CPU path hands to numba,
written as CUDA C for CuPy's `ElementwiseKernel` (one kernel source per group).

Each step is the op's ufunc written as a C expression with NumPy's semantics where C differs:
`maximum`/`minimum` propagate NaN and return the second operand on ties (as NumPy does),
`sign` keeps NaN, `true_divide` computes in the result's float type. Arithmetic runs in the
step's result type (operands cast to it), as NumPy's loops do. CuPy compiles each source once
per device and keeps the binary on disk (``~/.cupy/kernel_cache``), so a second process loads it.
"""

from __future__ import annotations

import hashlib
import threading

C_TYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long",
           "bool": "bool"}
FLOATS = {"float32", "float64"}

# ufunc name -> C expression over the operands {0}, {1} (already variables) in result type {T}
_ARITHMETIC = {
    "add": "(({T}){0} + ({T}){1})",
    "subtract": "(({T}){0} - ({T}){1})",
    "multiply": "(({T}){0} * ({T}){1})",
    "true_divide": "(({T}){0} / ({T}){1})",
    "negative": "(-({T}){0})",
    "maximum": "((({T}){0} != ({T}){0} || ({T}){0} > ({T}){1}) ? ({T}){0} : ({T}){1})",
    "minimum": "((({T}){0} != ({T}){0} || ({T}){0} < ({T}){1}) ? ({T}){0} : ({T}){1})",
}
_COMPARE = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
            "greater_equal": ">="}
_LOGIC = {"logical_and": "((bool){0} && (bool){1})", "logical_or": "((bool){0} || (bool){1})",
          "logical_not": "(!(bool){0})"}
# float-only functions: CUDA's math library overloads each for float and double
_FUNCTIONS = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "sin": "sin",
              "cos": "cos", "tan": "tan", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
              "sinh": "sinh", "cosh": "cosh", "log1p": "log1p", "expm1": "expm1",
              "log2": "log2", "log10": "log10"}
_BINARY_FUNCTIONS = {"arctan2": "atan2", "hypot": "hypot", "power": "pow"}
_LN2 = "0.6931471805599453"


def expression(ufunc_name: str, operands: list[str], out_dtype: str) -> str | None:
    """C source computing one step, or None when this step has no CUDA form here."""
    t = C_TYPES.get(out_dtype)
    if t is None:
        return None
    a = operands[0]
    b = operands[1] if len(operands) > 1 else None
    if ufunc_name in _ARITHMETIC:
        if ufunc_name == "true_divide" and out_dtype not in FLOATS:
            return None
        return _ARITHMETIC[ufunc_name].format(a, b, T=t)
    if ufunc_name in _COMPARE:
        return f"({a} {_COMPARE[ufunc_name]} {b})"
    if ufunc_name in _LOGIC:
        return _LOGIC[ufunc_name].format(a, b)
    if ufunc_name == "absolute":
        if out_dtype in FLOATS:
            return f"fabs(({t}){a})"
        return f"(({a} < 0) ? ({t})(-{a}) : ({t}){a})" if out_dtype != "bool" else a
    if ufunc_name == "sign":
        if out_dtype == "bool":
            return None
        return f"(({t}){a} != ({t}){a} ? ({t}){a} : ({t})((({t}){a} > 0) - (({t}){a} < 0)))"
    if out_dtype not in FLOATS:
        return None
    if ufunc_name in _FUNCTIONS:
        return f"{_FUNCTIONS[ufunc_name]}(({t}){a})"
    if ufunc_name in _BINARY_FUNCTIONS:
        return f"{_BINARY_FUNCTIONS[ufunc_name]}(({t}){a}, ({t}){b})"
    if ufunc_name == "logaddexp":  # log(e^a + e^b) without overflow; equal infinities kept
        x, y = f"(({t}){a})", f"(({t}){b})"
        return (f"({x} == {y} ? {x} + ({t}){_LN2} : ({x} > {y} ? {x} + log1p(exp({y} - {x}))"
                f" : {y} + log1p(exp({x} - {y}))))")
    return None


def fusible(op, dtype, input_dtypes) -> bool:
    """Whether one node (an elementwise ufunc op of `dtype`) can be a step of a CUDA kernel."""
    if op.ufunc is None or op.ufunc.nout != 1:
        return False
    if getattr(dtype, "name", None) not in C_TYPES:
        return False
    if any(getattr(d, "name", None) not in C_TYPES for d in input_dtypes):
        return False
    operands = [f"a{k}" for k in range(op.ufunc.nin)]
    return expression(op.ufunc.__name__, operands, dtype.name) is not None


def kernel_parts(body, in_dtypes: list[str], out_dtypes: list[str]) -> tuple[str, str, str]:
    """(in_params, out_params, operation) of the `ElementwiseKernel` computing `body`.

    `in_dtypes` / `out_dtypes` are the dtype names of the kernel's inputs and outputs; the
    steps' own dtypes are `body.dtypes`.
    """
    in_params = ", ".join(f"{d} in{k}" for k, d in enumerate(in_dtypes))
    out_params = ", ".join(f"{d} out{k}" for k, d in enumerate(out_dtypes))
    lines = []
    for j, (op, args) in enumerate(body.steps):
        refs = [f"in{a[1]}" if a[0] == "in" else f"t{a[1]}" for a in args]
        dtype = body.dtypes[j]
        text = expression(op.ufunc.__name__, refs, dtype)
        if text is None:
            raise ValueError(f"internal: {op.name} on {dtype} has no CUDA form")
        lines.append(f"{C_TYPES[dtype]} t{j} = {text};")
    for k, j in enumerate(body.outputs):
        lines.append(f"out{k} = t{j};")
    return in_params, out_params, "\n".join(lines)


_cache: dict = {}
_lock = threading.Lock()


def build(xp, body, in_dtypes: list[str], out_dtypes: list[str]):
    """The CuPy `ElementwiseKernel` for `body` (one object per distinct source, per process);
    `xp` is the CuPy module. Returns (kernel, its CUDA source for display)."""
    in_params, out_params, operation = kernel_parts(body, in_dtypes, out_dtypes)
    key = (in_params, out_params, operation)
    with _lock:
        found = _cache.get(key)
        if found is None:
            digest = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
            name = f"dj_fused_{digest}"
            kernel = xp.ElementwiseKernel(in_params, out_params, operation, name)
            lines = [f"{name}: ElementwiseKernel({in_params!r}, {out_params!r})",
                     *operation.splitlines()]
            shown = "".join(f"# {line}\n" for line in lines)  # shown in Python source
            found = _cache[key] = (kernel, shown)
    return found
