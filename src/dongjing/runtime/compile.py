"""`dj.compile` (PyTorch's `torch.compile`) mapped onto `dj.jit`: the function or module is
traced into a static graph, optimized and compiled, and re-traced per input signature.
PyTorch's arguments are accepted: `fullgraph=True` becomes `strict=True` (a trace-time side
effect is an error, as a graph break is in PyTorch); `backend="eager"` and `disable=True`
return the function itself; `mode`, `dynamic` and `options` are checked and otherwise have no
effect (dongjing has one compiler, and a new shape retraces)."""

from __future__ import annotations

from collections.abc import Callable

from .jit import jit

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")


def compile(model: Callable | None = None, *, fullgraph: bool = False,
            dynamic: bool | None = None, backend: str | Callable = "inductor",
            mode: str | None = None, options: dict | None = None, disable: bool = False):
    """Compile `model` (a function or an nn.Module) with `dj.jit`; without `model`, a
    decorator."""
    if mode not in _MODES:
        raise ValueError(f"dj.compile: mode must be one of {_MODES[1:]}, got {mode!r}")
    if mode is not None and options is not None:
        raise RuntimeError("dj.compile: give either mode or options, not both (as PyTorch)")
    if not callable(backend) and backend not in _BACKENDS:
        raise ValueError(f"dj.compile: unknown backend {backend!r}; accepted: {_BACKENDS}")
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if disable or backend == "eager":
        return model
    return jit(model, strict=bool(fullgraph))
