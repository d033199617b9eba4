"""The fuzzer's PyTorch side: a program's source run with `dj`, `F` and `ops` bound to PyTorch
equivalents (values and gradients), and a NaN-aware comparison whose float32 tolerance scales
with how much the computation cancels (PyTorch's float32 result against its float64 one)."""

from __future__ import annotations

import numpy as np

try:
    import torch
    import torch.nn.functional as torch_F
except ImportError:  # the comparison is skipped where torch is missing (CI's fresh venv)
    torch = None


class Unsupported(Exception):
    """The program uses something without a PyTorch counterpart here; not compared."""


def available() -> bool:
    return torch is not None


def _reduce_all(fn, x, dim, keepdim):
    """`fn` over `dim` (None: every dim, keeping them as size 1 when `keepdim`). The full
    reduction is PyTorch's own (`fn(x)`), not one over a flattened copy: its gradient rules
    differ (prod of a 0-d input passes the gradient on; of a 1-element dim, divides)."""
    if dim is not None:
        return fn(x, dim, keepdim=keepdim)
    out = fn(x)
    return out.reshape((1,) * x.ndim) if keepdim else out


class _TorchOps:
    """`dj.ops` / `ops`: the op-table helpers the generators call."""

    def cast(self, x, dtype):
        if not dtype.is_floating_point and dtype != torch.bool and x.is_floating_point() \
                and not bool(torch.isfinite(x).all()):
            raise Unsupported("a non-finite float cast to an integer is undefined")
        return x.to(dtype)

    def clone(self, x):
        return x.clone()

    def reshape_like(self, a, b):
        return a.reshape(b.shape)

    def broadcast_to_like(self, a, b):
        return torch.broadcast_to(a, b.shape)

    def one_hot(self, idx, n):
        return torch_F.one_hot(idx, n).to(torch.float32)  # dongjing's one_hot is float32

    def erf(self, x):
        return torch.erf(x)

    def __getattr__(self, name):  # fold2d, unfold2d, elementwise.* (internal gradient ops)
        raise Unsupported(f"ops.{name}")


class TorchDJ:
    """`dj` in a fuzz program, as PyTorch calls."""

    def __init__(self):
        self.ops = _TorchOps()
        self.float32, self.float64, self.int64 = torch.float32, torch.float64, torch.int64
        self.bool = torch.bool

    def __getattr__(self, name):
        if name in _SAME_OVERRIDES:  # tests replace a function to see the comparison fail
            return _SAME_OVERRIDES[name]
        if name in _BINARY:
            return _with_scalars(getattr(torch, name))
        if name in _SAME:
            return getattr(torch, name)
        raise Unsupported(f"dj.{name}")

    @staticmethod
    def tensor(value, dtype=None):
        return torch.tensor(value, dtype=dtype)

    @staticmethod
    def neg(x):
        return -x

    @staticmethod
    def sign(x):
        return torch.sign(x)

    @staticmethod
    def sum(x, dim=None, keepdim=False):
        return _reduce_all(torch.sum, x, dim, keepdim)

    @staticmethod
    def prod(x, dim=None, keepdim=False):
        return _reduce_all(torch.prod, x, dim, keepdim)

    @staticmethod
    def amax(x, dim=None, keepdim=False):
        return torch.amax(x, () if dim is None else dim, keepdim=keepdim)

    @staticmethod
    def amin(x, dim=None, keepdim=False):
        return torch.amin(x, () if dim is None else dim, keepdim=keepdim)

    @staticmethod
    def mean(x, dim=None):
        return torch.mean(x) if dim is None else torch.mean(x, dim)

    @staticmethod
    def all(x, dim=None):
        return torch.all(x) if dim is None else torch.all(x, dim)

    @staticmethod
    def any(x, dim=None):
        return torch.any(x) if dim is None else torch.any(x, dim)

    @staticmethod
    def argmax(x, dim):
        return torch.argmax(x, dim)

    @staticmethod
    def argmin(x, dim):
        return torch.argmin(x, dim)

    @staticmethod
    def norm(x):
        return torch.linalg.vector_norm(x)

    @staticmethod
    def argsort(x, dim=-1, descending=False):
        return torch.argsort(x, dim=dim, descending=descending, stable=True)

    @staticmethod
    def expand(x, shape):
        return x.expand(tuple(shape))

    @staticmethod
    def flip(x, dim):
        return torch.flip(x, (dim,))

    @staticmethod
    def squeeze(x, dim=None):
        return torch.squeeze(x) if dim is None else torch.squeeze(x, dim)

    @staticmethod
    def clip(x, lo, hi):
        return torch.clamp(x, lo, hi)

    @staticmethod
    def full_like(x, value):
        return torch.full_like(x, value)

    @staticmethod
    def stop_gradient(x):
        return x.detach()

    @staticmethod
    def cond(pred, true_fn, false_fn):
        return true_fn() if bool(pred) else false_fn()

    @staticmethod
    def while_loop(cond, body, loop_vars, maximum_iterations=None):
        count = 0
        while bool(cond(*loop_vars)) and (maximum_iterations is None
                                          or count < maximum_iterations):
            loop_vars = tuple(body(*loop_vars))
            count += 1
        return loop_vars


_SAME_OVERRIDES: dict = {}
_BINARY = {"maximum", "minimum", "hypot", "logaddexp", "fmod", "remainder", "floor_divide", "pow",
           "add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge"}


def _with_scalars(fn):
    """`fn(a, b)` where dongjing takes a Python number for either operand (a tensor of the
    other's dtype), as some PyTorch functions do not."""
    def call(a, b):
        if not isinstance(a, torch.Tensor):
            a = torch.tensor(a, dtype=b.dtype)
        elif not isinstance(b, torch.Tensor):
            b = torch.tensor(b, dtype=a.dtype)
        return fn(a, b)
    return call


_SAME = {  # dj.NAME is torch.NAME with the same arguments
    "floor", "ceil", "round", "trunc", "isnan", "isinf", "isfinite", "floor_divide",
    "remainder", "cumsum", "cumprod", "topk", "roll", "tril", "triu", "abs", "exp", "log",
    "sqrt", "tanh", "sigmoid", "relu", "add", "sub", "mul", "div", "maximum", "minimum", "pow",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "where",
    "log_softmax", "softmax", "logsumexp", "matmul", "reshape", "permute", "unsqueeze", "cat",
    "stack", "fmod", "hypot", "logaddexp", "transpose",
}


class _TorchF:
    """`F` in a fuzz program."""

    conv2d = staticmethod(lambda *a, **k: torch_F.conv2d(*a, **k))
    max_pool2d = staticmethod(lambda *a, **k: torch_F.max_pool2d(*a, **k))

    def __getattr__(self, name):
        raise Unsupported(f"F.{name}")


def namespace() -> dict:
    """The globals a program's source runs with on the PyTorch side."""
    return {"dj": TorchDJ(), "F": _TorchF(), "ops": _TorchOps(), "np": np}


def run(program, arrays: list, float_idx: list, dtype=None) -> list:
    """The outputs, then one gradient per float input (None when unconnected), as NumPy arrays,
    computed by PyTorch (float inputs as `dtype` when given); Unsupported when PyTorch has no
    counterpart for a call or refuses the program."""
    fn = program.function(namespace())
    tensors = []
    for i, a in enumerate(arrays):
        t = torch.from_numpy(np.array(a, copy=True))
        if dtype is not None and t.is_floating_point():
            t = t.to(dtype)
        tensors.append(t.requires_grad_(True) if i in float_idx else t)
    try:
        with np.errstate(all="ignore"):
            outs = fn(*tensors)
            loss = None
            for k, out in enumerate(outs):
                if out.is_floating_point():
                    term = torch.sum(out) * float(k + 1)
                    loss = term if loss is None else loss + term
            grads = [None] * len(float_idx)
            if loss is not None and loss.requires_grad:
                grads = list(torch.autograd.grad(loss, [tensors[i] for i in float_idx],
                                                 allow_unused=True))
    except Unsupported:
        raise
    except Exception as exc:  # noqa: BLE001 - PyTorch refuses: nothing to compare with
        raise Unsupported(f"PyTorch raised {type(exc).__name__}: {str(exc)[:120]}") from exc
    return [_numpy(o) for o in outs] + [None if g is None else _numpy(g) for g in grads]


def _numpy(t):
    return t.detach().cpu().resolve_conj().numpy().copy()


def compare(ref: list, low: list, high: list | None, what: str) -> str | None:
    """None when dongjing's `ref` matches PyTorch's `low` (same dtypes): shapes and dtypes
    equal, NaN where NaN, infinities equal by sign, finite values within a tolerance: a few
    ulps of the result's largest magnitude plus 8x PyTorch's own rounding error (|low - high|,
    `high` the same program with every float input in float64), which grows where long sums
    and products cancel."""
    for k, (r, t) in enumerate(zip(ref, low)):
        if r is None or t is None:
            other = t if r is None else r
            if other is not None and np.any(np.asarray(other)):
                return f"{what}: result {k} is None on the {'dongjing' if r is None else 'torch'}" \
                       f" side only (the other has {np.asarray(other).ravel()[:4]})"
            continue
        if r.shape != t.shape or r.dtype != t.dtype:
            return f"{what}: result {k} is {r.dtype}{list(r.shape)}, PyTorch gives " \
                   f"{t.dtype}{list(t.shape)}"
        if r.dtype.kind != "f":
            if not np.array_equal(r, t):
                return f"{what}: result {k} differs: {r.ravel()[:6]} vs PyTorch {t.ravel()[:6]}"
            continue
        problem = _float_problem(r, t, None if high is None else high[k])
        if problem:
            return f"{what}: result {k} {problem}"
    return None


def _float_problem(r, t, h) -> str | None:
    nan_r, nan_t = np.isnan(r), np.isnan(t)
    if not np.array_equal(nan_r, nan_t):
        bad = nan_r != nan_t
        return f"has NaN at other places: {r[bad][:4]} vs PyTorch {t[bad][:4]}"
    inf_r, inf_t = np.isinf(r), np.isinf(t)
    if not np.array_equal(inf_r, inf_t) or not np.array_equal(r[inf_r], t[inf_t]):
        bad = (inf_r != inf_t) | (inf_r & (r != t))
        return f"has infinities at other places: {r[bad][:4]} vs PyTorch {t[bad][:4]}"
    finite = np.isfinite(t)
    if not finite.any():
        return None
    eps = float(np.finfo(r.dtype).eps)
    rtol = 64 * eps if r.dtype == np.float32 else 1e5 * eps  # float64: other summation orders
    scale = float(np.abs(t[finite]).max())
    tol = np.full(r.shape, rtol * max(scale, 1.0))
    if h is not None:  # float64 results too: PyTorch rounds some float32 operands first
        h = np.asarray(h, np.float64)
        own = np.abs(t.astype(np.float64) - h)
        own = np.where(np.isfinite(own), own, np.inf)  # float64 differs in kind (overflow)
        tol = tol + 8 * own
        if r.dtype == np.float64 and bool((own[finite] > 0).any()):
            # a float64 result computed from float32 values (a float32 input promoted on the
            # way): |low - high| samples PyTorch's float32 rounding, which may cancel by chance
            # where dongjing's (NumPy's float32 pow or exp, an ulp apart) does not; allow a few
            # float32 ulps of the result's magnitude
            tol = tol + 4 * float(np.finfo(np.float32).eps) * max(scale, 1.0)
    with np.errstate(invalid="ignore"):  # inf - inf where both are infinite: not compared
        diff = np.abs(r.astype(np.float64) - t.astype(np.float64))
    bad = finite & ~(diff <= tol)
    if bad.any():
        return (f"differs from PyTorch at {int(bad.sum())} of {r.size} places: got "
                f"{r[bad][:4]}, PyTorch {t[bad][:4]} (tolerance {tol[bad][:2]})")
    return None
