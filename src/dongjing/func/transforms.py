"""grad, grad_and_value, vjp, jacrev/jacfwd, hessian and a looping vmap."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad
from ..errors import ShapeError
from ..ops.convert import as_tensor
from ..tensor import Tensor


def _tracked(x) -> Tensor:
    """An input that gradients can be taken with respect to, still connected to `x` when `x`
    itself is being differentiated (an outer transform)."""
    x = as_tensor(x)
    if x.requires_grad:
        return x * 1.0
    return x.detach().requires_grad_(True)


def _nested(args, nums) -> bool:
    """Whether an argument is itself being differentiated (an outer transform or the user's
    own tape): then the results stay connected to it."""
    return any(isinstance(args[a], Tensor) and args[a].requires_grad for a in nums)


def _argnums(argnums, n: int) -> tuple:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not -n <= a < n:
            raise ValueError(f"argnums {argnums} is out of range for {n} arguments")
    return tuple(a % n for a in nums)


def _split_aux(out, has_aux: bool, name: str):
    if not has_aux:
        return out, None
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{name}: with has_aux=True the function must return (output, aux)")
    return out


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning (gradient of `func`'s scalar output with respect to the
    argument(s) `argnums`, the output) (and aux with `has_aux`)."""
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        args = list(args)
        nested = _nested(args, nums)
        for a in nums:
            args[a] = _tracked(args[a])
        with enable_grad():
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "grad")
            out = as_tensor(out)
            if out.numel() != 1:
                raise ShapeError(f"grad: the function must return a one-element tensor, got "
                                 f"shape {out.shape}")
            grads = _autograd_grad(out, [args[a] for a in nums], create_graph=True,
                                   allow_unused=True)
        grads = tuple(ops.zeros_like(args[a]) if g is None else g for a, g in zip(nums, grads))
        if not nested:
            grads, out = tuple(g.detach() for g in grads), out.detach()
        g = grads[0] if isinstance(argnums, int) else grads
        return (g, (out, aux)) if has_aux else (g, out)

    return wrapper


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
         ) -> Callable[..., Any]:
    """A function returning the gradient of `func` (a scalar function) with respect to its
    argument(s) `argnums` (and aux with `has_aux`)."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = both(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """(func(*primals), vjp_fn): vjp_fn(cotangent) gives the vector-Jacobian product for each
    primal (and aux third with `has_aux`)."""
    inputs = [_tracked(p) for p in primals]
    with enable_grad():
        out, aux = _split_aux(func(*inputs), has_aux, "vjp")
    outs = out if isinstance(out, (tuple, list)) else (out,)

    def vjp_fn(*cotangents):
        cot = cotangents if isinstance(out, (tuple, list)) else cotangents[:1]
        with enable_grad():
            grads = _autograd_grad(list(outs), inputs, grad_outputs=[as_tensor(c) for c in cot],
                                   retain_graph=True, create_graph=True, allow_unused=True)
        return tuple(ops.zeros_like(i) if g is None else g for i, g in zip(inputs, grads))

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jacrev(func, argnums=0, has_aux: bool = False):
    """A function returning the Jacobian of `func` with respect to argument(s) `argnums`:
    shape output.shape + input.shape, one reverse pass per output element."""
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args))
        args = list(args)
        nested = _nested(args, nums)
        for a in nums:
            args[a] = _tracked(args[a])
        with enable_grad():
            out, aux = _split_aux(func(*args, **kwargs), has_aux, "jacrev")
            out = as_tensor(out)
            flat = ops.reshape(out, (-1,))
            rows = [[] for _ in nums]
            for i in range(flat.shape[0]):
                grads = _autograd_grad(flat[i], [args[a] for a in nums], retain_graph=True,
                                       create_graph=True, allow_unused=True)
                for k, (a, g) in enumerate(zip(nums, grads)):
                    rows[k].append(ops.zeros_like(args[a]) if g is None else g)
        jacobians = tuple(
            ops.reshape(ops.stack(r, 0), tuple(out.shape) + tuple(args[a].shape)) if r else
            ops.reshape(ops.zeros_like(args[a]), tuple(out.shape) + tuple(args[a].shape))
            for r, a in zip(rows, nums))
        if not nested:
            jacobians = tuple(j.detach() for j in jacobians)
        j = jacobians[0] if isinstance(argnums, int) else jacobians
        return (j, aux) if has_aux else j

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, randomness: str = "error"):
    """The Jacobian, as `jacrev` computes it (dongjing has no forward mode; the values are
    the same)."""
    return jacrev(func, argnums, has_aux)


def hessian(func, argnums=0):
    """The Hessian of a scalar function: the Jacobian of its gradient."""
    return jacfwd(jacrev(func, argnums), argnums)


def vmap(func: Callable[..., Any], in_dims: int | None | Sequence[int | None] = 0,
         out_dims: int | Sequence[int] = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """`func` mapped over dim `in_dims` of its arguments (None: not mapped; a tuple: one per
    argument), the results stacked along `out_dims`. A loop over the examples, so `func` sees
    one example at a time, as in PyTorch."""
    def wrapper(*args):
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap: in_dims {in_dims} does not match {len(args)} arguments")
        sizes = {as_tensor(a).shape[d] for a, d in zip(args, dims) if d is not None}
        if len(sizes) != 1:
            raise ShapeError(f"vmap: the mapped dims must have one size, got {sorted(sizes)}")
        (n,) = sizes
        results = []
        for i in range(n):
            picked = [a if d is None else as_tensor(a)[(slice(None),) * d + (i,)]
                      for a, d in zip(args, dims)]
            results.append(func(*picked))
        first = results[0]
        if isinstance(first, (tuple, list)):
            outs = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first)
            return type(first)(ops.stack([r[k] for r in results], outs[k])
                               for k in range(len(first)))
        return ops.stack(results, out_dims)

    return wrapper
