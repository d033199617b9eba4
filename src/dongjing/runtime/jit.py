"""`dj.jit`: trace a function (or a module's forward) into a static graph on first call, compile
it, and cache the result per call signature; a new signature retraces and says why."""

from __future__ import annotations

import functools
import threading
import types
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, overload

from ..autograd.anomaly import state as anomaly_state
from ..autograd.grad_mode import state as grad_state
from ..core import autocast_state
from ..core.validation import check_choice
from ..errors import DongjingError, IndexOutOfRangeError, JitError
from ..graph import builder
from ..nn.module import Module
from ..tensor import Tensor, grad_scope
from .autograph import convert as _autograph_convert
from .autograph import entry
from .check_numerics import checked_program
from .interpreter import needed_nodes
from .jit_distribute import DistributedJitFunction
from .placement import _HOST
from .signature import (
    describe_changes,
    map_tensors,
    signature,
    training_flags,
    watched_objects,
)
from .trace_grads import describe_guard_change
from .tracing import Trace

if TYPE_CHECKING:
    from ..distributed.cost_model import CostModel

RETRACE_WARNING = 8  # traces of one function before dj.jit warns (once)
HISTORY = 1000  # the latest retrace reasons and compile times kept (a long run's memory is bounded)
DEFAULT_CACHE_SIZE = 256  # traces kept per jitted function (as Session keeps 256 programs)


# dj.check's comparison of a call run eagerly and compiled, set by runtime/check_mode.py (built on
# this module) when it loads
_check_mode = types.SimpleNamespace(check_call=None)


class JitFunction:
    """A function compiled by tracing; call it like the original (see `dj.jit`).

    Inspect with `.retrace_reasons`, `.cache_size`, `.compile_times`, `.graph(*args)`,
    `.optimized_graph(*args)` and `.source(*args)`. The two lists keep the latest `HISTORY`
    (1000) entries.
    """

    check_numerics = False  # set by dj.jit(..., check_numerics=True)

    def __init__(self, fn, optimize: int = 2, module=None,
                 cache_size: int = DEFAULT_CACHE_SIZE, strict: bool = False, check=False,
                 convert: bool = True):
        self.fn = fn
        self.check_mode, self.checks_left = _check_setting(check)
        self.convert = bool(convert)
        self._entry = None  # (converted function, converted sources) when convert is on
        self.optimize = check_choice("dj.jit", "optimize", optimize, (0, 1, 2))
        self.strict = bool(strict)
        self._last_trace = None
        self.module = module
        self.cache_limit = _cache_limit(cache_size)
        self.name = getattr(fn, "__name__", None) or type(fn).__name__
        if module is not None:
            self.name = type(module).__name__
        # signature -> [Trace, ...] (differing in .grad guards), least recently used first
        self._cache: OrderedDict = OrderedDict()
        self._cache_lock = threading.Lock()  # threads share the cache; tracing runs unlocked
        self._last_signature: tuple | None = None
        self._repeat: tuple | None = None  # (_repeat_key, trace) of the last module call
        self.retrace_reasons: list[str] = []
        self.compile_times: list[float] = []
        functools.update_wrapper(self, fn, updated=())

    @property
    def cache_size(self) -> int:
        """How many traced graphs are cached."""
        return sum(len(traces) for traces in self._cache.values())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if builder.state.graph is not None or grad_scope.current is not None:
            return self.fn(*args, **kwargs)  # inside a graph or another trace: inline
        if self.checks_left:
            self.checks_left -= 1
            return self.checked_call(args, kwargs, self.check_mode)
        key = self._repeat_key(args) if self.module is not None and not kwargs else None
        if key is not None and not (self.check_numerics or anomaly_state.on):
            last = self._repeat  # (key, trace) of the last call: read once (other threads)
            if last is not None and last[0] == key and last[1].matches():
                return self._run(last[1], [a._data for a in args], args)
        arrays: list = []
        trace = self._trace_for(args, kwargs, arrays)
        if self.check_numerics or anomaly_state.on:
            try:
                _check_numerics(trace, arrays)
            except IndexError as exc:
                raise _index_error(exc, trace, self.name) from None
        elif key is not None:
            self._repeat = (key, trace)
        return self._run(trace, arrays, args, kwargs)

    def _run(self, trace: Trace, arrays: list, args: tuple, kwargs: dict | None = None):
        try:
            tensors = None
            if grad_state.grad_enabled:
                tensors = list(args) if kwargs is None else _tensor_args(args, kwargs)
            return trace.run(arrays, tensors)
        except IndexError as exc:  # an index argument valid when traced, out of range now
            raise _index_error(exc, trace, self.name) from None
        except (TypeError, ValueError, AttributeError):  # parameters moved to a GPU since?
            trace.check_placement(arrays, f"dj.jit({self.name})")
            raise

    def _repeat_key(self, args: tuple) -> list | None:
        """For a jitted module called on eager NumPy tensors only: its training flags and the
        arguments' shapes and dtypes, which fix the full `signature` of such a call (so a call
        with the key of the last one may run the last trace). None for other calls."""
        key = [training_flags(self.module), autocast_state.key()]
        for a in args:
            if type(a) is not Tensor or a._node is not None or type(a._data) is not _HOST:
                return None
            key.append(a._data.shape)
            key.append(a._data.dtype)
        return key

    def checked_call(self, args: tuple, kwargs: dict, mode=True):
        """One call run eagerly and compiled, compared (check mode; see `dj.check`)."""
        arrays: list = []
        trace = self._trace_for(args, kwargs, arrays)
        return _check_mode.check_call(self, trace, args, kwargs, arrays,
                                      _tensor_args(args, kwargs), mode)

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
        with self._cache_lock:
            self._cache.clear()
        self._last_signature = None
        self._repeat = None

    def _trace_for(self, args: tuple, kwargs: dict, arrays: list) -> Trace:
        watched = (self.module,) if self.module is not None else watched_objects(self.fn)
        sig = signature(args, kwargs, watched, arrays)
        casting = autocast_state.key()
        if casting:  # a trace made in an autocast region holds its casts
            sig = (*sig, ("autocast", "value", ("autocast", casting)))
        with self._cache_lock:
            traces = self._cache.get(sig)
            if traces:
                for trace in traces:
                    if trace.matches():
                        self._last_signature = sig
                        self._cache.move_to_end(sig)
                        return trace
            traces = list(traces or ())
        self._note_retrace(sig, traces)
        trace = self._new_trace(args, kwargs)
        with self._cache_lock:
            kept = self._cache.setdefault(sig, [])
            twin = next((t for t in kept if t.matches()), None)
            if twin is not None:  # another thread traced this signature meanwhile: use its
                return twin
            kept.append(trace)
            self._cache.move_to_end(sig)
            self._evict()
        _append_bounded(self.compile_times, trace.compile_time)
        self._last_signature = sig
        if len(self.compile_times) == RETRACE_WARNING:
            reason = self.retrace_reasons[-1] if self.retrace_reasons else "new signature"
            warnings.warn(
                f"dj.jit({self.name}) has traced {RETRACE_WARNING} times (last reason: "
                f"{reason}); every new shape or Python value traces and "
                "compiles again: pass changing numbers as tensors, keep batch shapes fixed",
                UserWarning,
                stacklevel=3,
            )
        return trace

    def _new_trace(self, args: tuple, kwargs: dict) -> Trace:
        """Trace and compile the function for this call (the one entry to tracing)."""
        trace = Trace(self._traced_fn(), args, kwargs, self.name, self.optimize,
                      strict=self.strict)
        self._last_trace = trace
        return trace

    @property
    def side_effects(self) -> list:
        """What the last trace did that runs only at trace time (`SideEffect`s: kind, where,
        text); empty for a pure function or before the first call."""
        return list(self._last_trace.side_effects) if self._last_trace is not None else []

    def _evict(self) -> None:
        """Drop the least recently used traces beyond `cache_limit`."""
        excess = self.cache_size - self.cache_limit
        while excess > 0 and self._cache:
            sig, traces = next(iter(self._cache.items()))
            if excess >= len(traces):
                del self._cache[sig]
                excess -= len(traces)
            else:
                del traces[:excess]
                excess = 0

    def _traced_fn(self):
        """What is traced: `fn` with its Python control flow converted (autograph), unless
        `convert=False`."""
        if not self.convert:
            return self.fn
        if self._entry is None:
            self._entry = entry(self.fn, self.module)
        return self._entry[0]

    def converted_source(self, *args, **kwargs) -> str:
        """The converted Python source of the function and of each user function it called
        converted while tracing for these arguments (tracing if new)."""
        self._trace_for(args, kwargs, [])
        if not self.convert:
            return "# dj.jit(..., convert=False): the function is traced as written"
        return "\n\n".join(source for _, source in self._entry[1])

    def _note_retrace(self, sig: tuple, traces: list | None) -> None:
        if traces:
            _append_bounded(self.retrace_reasons,
                            "; ".join(describe_guard_change(traces[-1].guards)))
        elif self._last_signature is not None:
            reasons = describe_changes(self._last_signature, sig)
            _append_bounded(self.retrace_reasons, "; ".join(reasons) or "new signature")

    def __getattr__(self, name: str):
        module = self.__dict__.get("module")
        if module is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(module, name)  # dj.jit(model).parameters(), .eval(), ...

    def __repr__(self) -> str:
        return f"<dj.jit {self.name} ({self.cache_size} traced)>"


def _index_error(exc: IndexError, trace: Trace, name: str) -> IndexError:
    """The error for an index that was valid when the function was traced but not in this
    call (as Session.run says it); a dongjing error is kept as it is."""
    if isinstance(exc, DongjingError):
        return exc
    fed = [n.name for n in trace.placeholders if n.dtype.kind in "iu"]
    hint = f" (integer arguments: {', '.join(map(repr, fed))})" if fed else ""
    error = IndexOutOfRangeError(f"dj.jit({name}): an index is out of range at run time{hint}: "
                                 f"{exc}")
    return error.with_traceback(exc.__traceback__)


def _append_bounded(history: list, item) -> None:
    """Append `item`, dropping the oldest entries beyond `HISTORY` (a tenth at a time)."""
    history.append(item)
    if len(history) > HISTORY + HISTORY // 10:
        del history[:-HISTORY]


def _check_setting(check) -> tuple:
    """(mode, number of calls to check) from `check=`: True / N / "warn" / False."""
    if check is False or check is None or check == 0:
        return True, 0
    if check is True:
        return True, 1
    if check == "warn":
        return "warn", 1
    if isinstance(check, int) and check > 0:
        return True, check
    raise JitError(f"dj.jit: check must be True, False, a number of calls or 'warn'; "
                   f"got {check!r}")


def _cache_limit(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise JitError(f"dj.jit: cache_size must be a positive int, got {value!r}")
    return value


def _tensor_args(args: tuple, kwargs: dict) -> list:
    """The call's tensor leaves in the order `signature` collects their arrays (None for
    NumPy arrays, which never require grad)."""
    found: list = []

    def collect(path, value):
        found.append(value if isinstance(value, Tensor) else None)
        return value

    map_tensors(args, kwargs, collect)
    return found


def _check_numerics(trace: Trace, arrays: list) -> None:
    """Run the traced graph node by node first, raising AnomalyError at the first NaN/inf
    (nothing is committed; the compiled program then runs as usual)."""
    checked = trace.__dict__.get("_numerics")
    if checked is None:
        feeds = [n for n in needed_nodes(trace.fetches, set()) if n.op.name == "placeholder"]
        checked = trace._numerics = checked_program(trace.graph, trace.fetches, feeds,
                                                    commit=False)
    checked(trace.feed_arrays(arrays))

_autograph_convert.jit_function_type = JitFunction  # converted code unwraps jitted calls


@overload
def jit(fn: Callable[..., Any], *, optimize: int = 2, cache_size: int = DEFAULT_CACHE_SIZE,
        strict: bool = False, check: bool | int | str = False, convert: bool = True,
        check_numerics: bool = False, distribute: None = None, max_memory: None = None,
        cost_model: None = None) -> JitFunction: ...


@overload
def jit(fn: Callable[..., Any], *, optimize: int = 2, cache_size: int = DEFAULT_CACHE_SIZE,
        strict: bool = False, check: bool | int | str = False, convert: bool = True,
        check_numerics: bool = False, distribute: Literal["auto"],
        max_memory: float | str | None = None,
        cost_model: CostModel | None = None) -> DistributedJitFunction: ...


@overload
def jit(fn: None = None, *, optimize: int = 2, cache_size: int = DEFAULT_CACHE_SIZE,
        strict: bool = False, check: bool | int | str = False, convert: bool = True,
        check_numerics: bool = False, distribute: str | None = None,
        max_memory: float | str | None = None, cost_model: CostModel | None = None,
        ) -> Callable[[Callable[..., Any]], JitFunction | DistributedJitFunction]: ...


def jit(fn: Callable[..., Any] | None = None, *, optimize: int = 2,
        cache_size: int = DEFAULT_CACHE_SIZE, strict: bool = False,
        check: bool | int | str = False, convert: bool = True,
        check_numerics: bool = False, distribute: str | None = None,
        max_memory: float | str | None = None, cost_model: CostModel | None = None,
        ) -> (JitFunction | DistributedJitFunction
              | Callable[[Callable[..., Any]], JitFunction | DistributedJitFunction]):
    """Compile `fn` (a function, or an nn.Module: its forward) by tracing it into a static graph.

    On each call the arguments' signature (tensor shapes and dtypes; Python values; module
    training flags and optimizer hyperparameters the function reads) selects a cached graph, or
    traces a new one: tensor arguments become placeholders, Parameters/Variables are captured
    by reference, `loss.backward()` / `opt.step()` / `opt.zero_grad()` become graph nodes and
    assignments. Results come back as eager tensors; parameters' `.grad` is set as eagerly.
    Python `if` / `while` / `for` on tensors become graph control flow (`convert=False`: traced
    as written; see docs/control-flow.md and `.converted_source(*args)`).

    A jitted function is a differentiable op: when a tensor argument or a captured Parameter
    requires grad, its results carry a `JitBackward0` node and `loss.backward()` runs a compiled
    gradient program (docs/jit.md). `cache_size` (default 256) bounds the traces kept; the
    least recently used is dropped first. `fn.side_effects` lists what the last trace did that
    runs only at trace time (prints, Python random numbers, reads of global numbers, ...);
    `strict=True` raises a `SideEffectError` on the first instead. `check=True` (or N, or
    "warn") runs the first call (N calls) eagerly too and raises `dj.CheckError` naming the
    first diverging node when eager and compiled results or gradients differ.
    `check_numerics=True` (and anomaly mode, `dj.autograd.detect_anomaly()`) first runs each
    call's graph node by node and raises `dj.AnomalyError` at the first NaN or inf, naming the
    node and the line that built it. One jitted function may be called from many threads.

    `distribute="auto"` plans each traced signature over the MPI world at its first call (data
    parallel, a pipeline, a tensor split or replicated, as `dj.Session(g, distribute="auto")`
    chooses; `max_memory=` and `cost_model=` as there) and runs this rank's part on every call;
    `fn.plan` is the latest call's plan, and every rank's eager model stays current
    (docs/distributed.md). With one process the plan is "single" and it runs as without.

    >>> @dj.jit
    ... def f(x):
    ...     return dj.tanh(x) * 2
    >>> f(dj.ones(3))
    tensor([1.5231884, 1.5231884, 1.5231884])
    """
    if fn is None:
        return lambda f: jit(f, optimize=optimize, cache_size=cache_size, strict=strict,
                             check=check, convert=convert, check_numerics=check_numerics,
                             distribute=distribute, max_memory=max_memory,
                             cost_model=cost_model)
    check_choice("dj.jit", "distribute", distribute, (None, "auto"))
    if distribute is None and (max_memory is not None or cost_model is not None):
        raise JitError("dj.jit: max_memory= and cost_model= plan a distributed run; pass "
                       "distribute='auto' with them")
    if distribute is not None:
        if check or check_numerics:
            raise JitError("dj.jit: check= and check_numerics= compare or inspect one process's "
                           "run; they cannot be combined with distribute='auto'")
        if isinstance(fn, DistributedJitFunction):
            fn = fn.inner
        inner = _jit(fn, optimize, cache_size, strict, check, convert)
        return DistributedJitFunction(inner, max_memory, cost_model)
    result = _jit(fn, optimize, cache_size, strict, check, convert)
    if check_numerics:
        if result is fn:
            result = JitFunction(fn.fn, optimize, module=fn.module, cache_size=cache_size,
                                 strict=strict, check=check, convert=convert)
        result.check_numerics = True
    return result


def _jit(fn, optimize, cache_size, strict, check, convert):
    """`jit` without check_numerics: reuse `fn` if it is a JitFunction with these options."""
    if isinstance(fn, JitFunction):
        same = (optimize, cache_size, strict, check, convert) == (
            fn.optimize, fn.cache_limit, fn.strict, False, fn.convert)
        if same:
            return fn
        # other options: a new cache over the same function (or module)
        return JitFunction(fn.fn, optimize, module=fn.module, cache_size=cache_size,
                           strict=strict, check=check, convert=convert)
    if isinstance(fn, Module):
        return JitFunction(fn.__call__, optimize, module=fn, cache_size=cache_size,
                           strict=strict, check=check, convert=convert)
    if not callable(fn):
        raise TypeError(f"dj.jit needs a function or an nn.Module, got {type(fn).__name__}")
    return JitFunction(fn, optimize, cache_size=cache_size, strict=strict, check=check,
                       convert=convert)
