"""`dj.jit`: trace a function (or a module's forward) into a static graph on first call, compile
it, and cache the result per call signature; a new signature retraces and says why."""

from __future__ import annotations

import functools
import types
import warnings

from ..graph import builder
from ..tensor import grad_scope
from ..validation import check_choice
from .signature import describe_changes, signature, watched_objects
from .trace_grads import describe_guard_change
from .tracing import Trace

RETRACE_WARNING = 8  # traces of one function before dj.jit warns (once)


class JitFunction:
    """A function compiled by tracing; call it like the original (see `dj.jit`).

    Inspect with `.retrace_reasons`, `.cache_size`, `.compile_times`, `.graph(*args)`,
    `.optimized_graph(*args)` and `.source(*args)`.
    """

    def __init__(self, fn, optimize: int = 2, module=None):
        self.fn = fn
        self.optimize = check_choice("dj.jit", "optimize", optimize, (0, 1, 2))
        self.module = module
        self.name = getattr(fn, "__name__", None) or type(fn).__name__
        if module is not None:
            self.name = type(module).__name__
        self._cache: dict = {}  # signature -> [Trace, ...] (differing in .grad guards)
        self._last_signature: tuple | None = None
        self.retrace_reasons: list[str] = []
        self.compile_times: list[float] = []
        functools.update_wrapper(self, fn, updated=())

    @property
    def cache_size(self) -> int:
        """How many traced graphs are cached."""
        return sum(len(traces) for traces in self._cache.values())

    def __call__(self, *args, **kwargs):
        if builder.state.graph is not None or grad_scope.current is not None:
            return self.fn(*args, **kwargs)  # inside a graph or another trace: inline
        arrays: list = []
        trace = self._trace_for(args, kwargs, arrays)
        return trace.run(arrays)

    def __get__(self, obj, objtype=None):
        """As a method: `self` is the first argument (a module: its training flags count)."""
        return self if obj is None else types.MethodType(self, obj)

    def graph(self, *args, **kwargs):
        """The traced graph (before optimization) for these arguments (tracing if new)."""
        return self._trace_for(args, kwargs, []).graph

    def optimized_graph(self, *args, **kwargs):
        """The graph that runs for these arguments, after the compiler's passes."""
        return self._trace_for(args, kwargs, []).program.graph

    def source(self, *args, **kwargs) -> str | None:
        """The generated Python source for these arguments (tracing if new)."""
        return self._trace_for(args, kwargs, []).source()

    def clear_cache(self) -> None:
        """Forget every traced graph (the next call traces again)."""
        self._cache.clear()
        self._last_signature = None

    def _trace_for(self, args: tuple, kwargs: dict, arrays: list) -> Trace:
        watched = (self.module,) if self.module is not None else watched_objects(self.fn)
        sig = signature(args, kwargs, watched, arrays)
        traces = self._cache.get(sig)
        if traces:
            for trace in traces:
                if trace.matches():
                    self._last_signature = sig
                    return trace
        self._note_retrace(sig, traces)
        trace = Trace(self.fn, args, kwargs, self.name, self.optimize)
        self._cache.setdefault(sig, []).append(trace)
        self.compile_times.append(trace.compile_time)
        self._last_signature = sig
        if len(self.compile_times) == RETRACE_WARNING:
            warnings.warn(
                f"dj.jit({self.name}) has traced {RETRACE_WARNING} times (last reason: "
                f"{self.retrace_reasons[-1]}); every new shape or Python value traces and "
                "compiles again: pass changing numbers as tensors, keep batch shapes fixed",
                UserWarning,
                stacklevel=3,
            )
        return trace

    def _note_retrace(self, sig: tuple, traces: list | None) -> None:
        if traces:
            self.retrace_reasons.append("; ".join(describe_guard_change(traces[-1].guards)))
        elif self._last_signature is not None:
            reasons = describe_changes(self._last_signature, sig)
            self.retrace_reasons.append("; ".join(reasons) or "new signature")

    def __getattr__(self, name: str):
        module = self.__dict__.get("module")
        if module is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(module, name)  # dj.jit(model).parameters(), .eval(), ...

    def __repr__(self) -> str:
        return f"<dj.jit {self.name} ({self.cache_size} traced)>"


def jit(fn=None, *, optimize: int = 2):
    """Compile `fn` (a function, or an nn.Module: its forward) by tracing it into a static graph.

    On each call the arguments' signature (tensor shapes and dtypes; Python values; module
    training flags and optimizer hyperparameters the function reads) selects a cached graph, or
    traces a new one: tensor arguments become placeholders, Parameters/Variables are captured
    by reference, `loss.backward()` / `opt.step()` / `opt.zero_grad()` become graph nodes and
    assignments. Results come back as eager tensors; parameters' `.grad` is set as eagerly.

    >>> @dj.jit
    ... def f(x):
    ...     return dj.tanh(x) * 2
    >>> f(dj.ones(3))
    tensor([1.5231884, 1.5231884, 1.5231884])
    """
    if fn is None:
        return lambda f: jit(f, optimize=optimize)
    from ..nn.module import Module

    if isinstance(fn, JitFunction):
        return fn
    if isinstance(fn, Module):
        return JitFunction(fn.__call__, optimize, module=fn)
    if not callable(fn):
        raise TypeError(f"dj.jit needs a function or an nn.Module, got {type(fn).__name__}")
    return JitFunction(fn, optimize)
