"""`dj.utils.checkpoint` (PyTorch's `torch.utils.checkpoint`): run a piece of a model without
keeping its intermediate results, and run it again during backward to get its gradients,
trading compute for memory. The random state is replayed, so dropout draws the same masks.

Eagerly the piece is one tape node (a `dj.autograd.Function`) whose backward recomputes the
piece with gradients on and backpropagates through it, reaching the parameters it reads as
well as its inputs (PyTorch's "reentrant" variant, without its need for an input that
requires grad). In a static graph or under `dj.jit` it is the piece itself: there the compiler
plans the memory."""

from __future__ import annotations

import numpy as np

from ..autograd import backward as _backward
from ..autograd.custom_function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.grad_mode import state as grad_state
from ..devices.random import generator
from ..dtypes import is_floating
from ..tensor import Tensor


class _Recompute(Function):
    """One output of a checkpointed piece; its backward reruns the piece."""

    @staticmethod
    def forward(ctx, piece, _anchor, *inputs):
        ctx.piece = piece
        ctx.save_for_backward(*inputs)
        return piece.first  # computed once, without gradients, by `checkpoint`

    @staticmethod
    def backward(ctx, grad):
        inputs = [t.detach().requires_grad_(t.requires_grad) if is_floating(t.dtype)
                  else t.detach() for t in ctx.saved_tensors]
        with enable_grad(), _ReplayedRandomness(ctx.piece.rng_state):
            out = ctx.piece.rerun(inputs)
        if out.requires_grad:
            _backward([out], [grad])
        return (None, None) + tuple(t.grad if t.requires_grad else None for t in inputs)


class _Piece:
    """The checkpointed function with its non-tensor arguments, the random state it began
    with, one of its first outputs (`index` picks it when it returns several)."""

    def __init__(self, function, args, kwargs, index, rng_state, first):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.index, self.rng_state, self.first = index, rng_state, first

    def rerun(self, tensors) -> Tensor:
        it = iter(tensors)
        args = [next(it) if isinstance(a, Tensor) else a for a in self.args]
        out = self.function(*args, **self.kwargs)
        return out if self.index is None else out[self.index]


class _ReplayedRandomness:
    """Run with the random state of the first run, then put the current state back."""

    def __init__(self, state):
        self.state, self.saved = state, None

    def __enter__(self):
        if self.state is not None:
            self.saved = generator().bit_generator.state
            generator().bit_generator.state = self.state

    def __exit__(self, *exc):
        if self.saved is not None:
            generator().bit_generator.state = self.saved


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=None,
               determinism_check: str = "default", debug: bool = False,
               preserve_rng_state: bool = True, **kwargs):
    """`function(*args, **kwargs)`, keeping none of its intermediate results for backward:
    they are recomputed when the gradient is needed. Returns what the function returns (a
    Tensor or a tuple of Tensors)."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if any(t._node is not None for t in tensors) or not grad_state.grad_enabled:
        return function(*args, **kwargs)  # a graph (the compiler plans memory), or no grads
    state = generator().bit_generator.state if preserve_rng_state else None
    with no_grad():
        first = function(*args, **kwargs)
    anchor = Tensor._make(np.zeros((), np.float32), True)
    if isinstance(first, Tensor):
        return _Recompute.apply(_Piece(function, args, kwargs, None, state, first), anchor,
                                *tensors)
    if isinstance(first, (tuple, list)) and all(isinstance(o, Tensor) for o in first):
        return type(first)(
            _Recompute.apply(_Piece(function, args, kwargs, i, state, o), anchor, *tensors)
            for i, o in enumerate(first))
    raise TypeError(f"checkpoint: the function must return a Tensor or a tuple of Tensors, "
                    f"got {type(first).__name__}")


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None,
                          **kwargs):
    """Run `functions` (a Sequential or a list of modules) in order, checkpointing them in
    `segments` groups (the last group runs normally, as PyTorch does)."""
    functions = list(functions.children()) if hasattr(functions, "children") else \
        list(functions)
    size = max(len(functions) // segments, 1)
    x = input
    end = 0
    for start in range(0, len(functions) - size, size):
        end = start + size
        group = functions[start:end]

        def run(t, group=group):
            for f in group:
                t = f(t)
            return t

        x = checkpoint(run, x, **kwargs)
    for f in functions[end:]:
        x = f(x)
    return x
