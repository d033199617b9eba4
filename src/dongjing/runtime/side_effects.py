"""The side-effect log of a dj.jit trace: what the traced function did that runs only once, at
trace time (prints, logging, Python/NumPy random numbers, clocks, reads of Python numbers /
lists / dicts from globals or closures, mutation of outside objects, value escapes such as
`.item()`), each with the user's file:line.

Recorded with CPython's own hooks while the function traces: `sys.setprofile` sees every call
(C functions included); `sys.settrace` sees each executed line of user code, whose global /
closure loads and stores were read off its code object with `dis`. Nothing runs after tracing.
"""

from __future__ import annotations

import dis
import linecache
import os
import random
import sys
import sysconfig
import time
import types
from dataclasses import dataclass

from ..backends import is_array, random_types
from ..dtypes import is_scalar_number
from ..graph.variable import Variable
from ..tensor import Tensor

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = tuple({os.path.abspath(p) for key in ("stdlib", "platstdlib", "purelib",
                                                         "platlib")
                       if (p := sysconfig.get_paths().get(key))})
_TENSOR_FILE = os.path.join(_PACKAGE_DIR, "tensor", "__init__.py")
_ESCAPES = {"item", "tolist", "numpy", "__float__", "__int__", "__bool__", "__index__",
            "__array__", "__complex__"}
_MUTATORS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
             "popitem", "add", "discard", "sort", "reverse", "__setitem__", "__delitem__"}
_VALUES = (int, float, complex, list, dict, set)  # and arrays and numbers of any backend
_RANDOM_FILE = os.path.abspath(random.__file__)
_DEREF = ("LOAD_DEREF", "LOAD_CLASSDEREF")


@dataclass(frozen=True)
class SideEffect:
    """One thing the traced function did at trace time only: `kind` (e.g. "print", "random",
    "global read"), `where` (file:line in the user's code) and `text` (what happened)."""

    kind: str
    where: str
    text: str

    def __str__(self) -> str:
        return f"{self.kind} at {self.where}: {self.text}"


def is_user_file(filename: str) -> bool:
    """Code of the user (not dongjing, the standard library or installed packages)."""
    if filename.startswith("<"):
        return not filename.startswith(("<frozen", "<dongjing"))
    path = os.path.abspath(filename)
    return not path.startswith(_PACKAGE_DIR) and not path.startswith(_LIBRARY_DIRS)


def _where(code, lineno) -> str:
    return f"{os.path.basename(code.co_filename)}:{lineno}"


_CONVERSION_RUNTIME = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograph",
                                   "runtime.py")


def _through_conversion(frame):
    """The frame that asked: converted code calls functions through the autograph runtime."""
    while frame is not None and frame.f_code.co_filename == _CONVERSION_RUNTIME:
        frame = frame.f_back
    return frame


def _user_frame(frame):
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


class SideEffectRecorder:
    """Context manager: while one trace runs, a profile function watches calls (C functions
    included) and a trace function watches the lines of user code; collects `SideEffect`s in
    `.log` (each kind, place and text once)."""

    def __init__(self):
        self.log: list[SideEffect] = []
        self._seen: set = set()
        self._plans: dict = {}  # code object -> {line: [candidate, ...]}
        self._random = _RandomKinds()

    def __enter__(self) -> SideEffectRecorder:
        self._previous = sys.getprofile(), sys.gettrace()
        sys.setprofile(self._profile)
        sys.settrace(self._trace_call)
        return self

    def __exit__(self, *exc) -> bool:
        sys.setprofile(self._previous[0])
        sys.settrace(self._previous[1])
        return False

    # --- recording ------------------------------------------------------------------------
    def _add(self, kind: str, where: str, text: str) -> None:
        key = (kind, where, text)
        if key not in self._seen:
            self._seen.add(key)
            self.log.append(SideEffect(kind, where, text))

    def _at_frame(self, kind: str, frame, detail: str) -> None:
        frame = _user_frame(frame)
        if frame is None:
            return
        code, line = frame.f_code, frame.f_lineno
        self._add(kind, _where(code, line), _text(code, line, detail))

    # --- calls (sys.setprofile) -------------------------------------------------------------
    def _profile(self, frame, event, arg):
        try:
            if event == "c_call":
                self._c_call(frame, arg)
            elif event == "call":
                self._call(frame)
        except Exception:  # never let the log break the user's trace
            pass

    def _call(self, frame) -> None:
        code = frame.f_code
        caller = _through_conversion(frame.f_back)
        if caller is None or not is_user_file(caller.f_code.co_filename):
            return
        if code.co_filename == _TENSOR_FILE and code.co_name in _ESCAPES:
            self._at_frame("value escape", caller, f"Tensor.{code.co_name}()")
        elif os.path.abspath(code.co_filename) == _RANDOM_FILE:
            self._at_frame("random", caller, f"random.{code.co_name}()")
        elif f"{os.sep}logging{os.sep}" in code.co_filename:
            self._at_frame("logging", caller, f"logging {code.co_name}()")

    def _c_call(self, frame, fn) -> None:
        frame = _through_conversion(frame)
        if frame is None:
            return
        name = getattr(fn, "__name__", "")
        owner = getattr(fn, "__self__", None)
        if self._random.is_random(fn) or isinstance(owner, self._random.owners):
            self._at_frame("random", frame, f"{name}()")
            return
        if not is_user_file(frame.f_code.co_filename):
            return
        if fn is print:
            self._at_frame("print", frame, "print()")
        elif _is_clock(fn):
            self._at_frame("time", frame, f"time.{name}()")
        elif name in _MUTATORS and isinstance(owner, (list, dict, set)) and \
                not _is_local(frame, owner):
            self._at_frame("mutation", frame, f"{type(owner).__name__}.{name}()")

    # --- lines of user code (sys.settrace) ---------------------------------------------------
    def _trace_call(self, frame, event, arg):
        code = frame.f_code
        if event != "call" or not is_user_file(code.co_filename):
            return None
        plan = self._plans.get(code)
        if plan is None:
            plan = self._plans[code] = _line_plan(code)
        return self._trace_line if plan else None

    def _trace_line(self, frame, event, arg):
        if event == "line":
            try:
                for candidate in self._plans[frame.f_code].get(frame.f_lineno, ()):
                    self._check(frame, candidate)
            except Exception:
                pass
        return self._trace_line

    def _check(self, frame, candidate) -> None:
        kind, load, attrs = candidate
        code, line = frame.f_code, frame.f_lineno
        if kind == "store":
            self._add("mutation" if load != "STORE_GLOBAL" else "global write",
                      _where(code, line), _text(code, line, attrs))
            return
        value = _loaded(frame, load)
        if value is _MISSING:
            return
        is_random = self._random.is_random
        if not attrs:
            if _is_value(value):
                scope = "global read" if load.opname == "LOAD_GLOBAL" else "closure read"
                self._add(scope, _where(code, line),
                          f"{load.argval} ({type(value).__name__}) = {_short(value)} in "
                          f"`{_text(code, line, load.argval)}`")
            elif _constant_tensor(value):
                scope = "global read" if load.opname == "LOAD_GLOBAL" else "closure read"
                self._add(scope, _where(code, line),
                          f"{load.argval} (tensor {tuple(value.shape)}) becomes a constant of "
                          f"the trace in `{_text(code, line, load.argval)}`")
            elif is_random(value) or _is_clock(value):
                self._add("random" if is_random(value) else "time", _where(code, line),
                          _text(code, line, load.argval))
            return
        for name in attrs:  # follow modules and generators only: no user code runs
            if not isinstance(value, (types.ModuleType, *self._random.owners)):
                return
            value = getattr(value, name, _MISSING)
        if is_random(value) or _is_clock(value):
            self._add("random" if is_random(value) else "time", _where(code, line),
                      _text(code, line, ".".join(attrs)))


def _line_plan(code) -> dict:
    """{line: [(kind, load instruction or store opname, attribute names)]}: the global and
    closure loads (with the attributes read off them) and the stores to outside objects."""
    plan: dict = {}
    args = _argument_names(code)
    free = set(code.co_freevars)
    ins = list(dis.get_instructions(code))
    line = code.co_firstlineno
    for i, x in enumerate(ins):
        line = getattr(getattr(x, "positions", None), "lineno", None) or line
        if x.opname == "LOAD_GLOBAL" or (x.opname in _DEREF and x.argval in free):
            attrs = []
            for y in ins[i + 1:]:
                if y.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
                    break
                attrs.append(y.argval)
            plan.setdefault(line, []).append(("load", x, tuple(attrs)))
        elif x.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            plan.setdefault(line, []).insert(0, ("store", x.opname, x.argval))
        elif x.opname in ("STORE_ATTR", "STORE_SUBSCR", "DELETE_SUBSCR") and i >= 1:
            target = _store_target(ins, i)
            if target is not None and _outside(target, args, free):
                plan.setdefault(line, []).insert(0, ("store", x.opname, x.argval))
    return plan


def _store_target(ins: list, i: int):
    """The instruction loading the object that `ins[i]` (an attribute or item store) changes:
    `obj.a = v` / `obj[k] = v` (the load just before, or before the key), or the augmented
    `obj.a += v` / `obj[k] += v` (the load before the COPY that duplicated it); else None."""
    store = ins[i]
    if ins[i - 1].opname != "SWAP":
        if store.opname == "STORE_ATTR":
            return ins[i - 1]
        return ins[i - 2] if i >= 2 and ins[i - 1].opname.startswith("LOAD_") else None
    for j in range(i - 1, 1, -1):
        if store.opname == "STORE_ATTR" and ins[j].opname == "LOAD_ATTR" and \
                ins[j].argval == store.argval and ins[j - 1].opname == "COPY":
            return ins[j - 2]
        if store.opname != "STORE_ATTR" and ins[j].opname == "BINARY_SUBSCR" and \
                ins[j - 1].opname == ins[j - 2].opname == "COPY" and j >= 4:
            return ins[j - 4]
    return None


def _loaded(frame, load):
    if load.opname == "LOAD_GLOBAL":
        return frame.f_globals.get(load.argval, _MISSING)
    return frame.f_locals.get(load.argval, _MISSING)


class _RandomKinds:
    """What counts as a random number source: Python's `random` and the random generators
    and `random` modules of every array backend's library (NumPy's, CuPy's)."""

    def __init__(self):
        library = random_types()
        self.owners = (random.Random, *library)
        self.modules = tuple({t.__module__.partition(".")[0] + ".random" for t in library})

    def is_random(self, fn) -> bool:
        """Whether `fn` draws random numbers."""
        module = getattr(fn, "__module__", None) or ""
        owner = getattr(fn, "__self__", None)
        return callable(fn) and (module == "random" or module.startswith(self.modules) or
                                 isinstance(owner, self.owners))


def _is_value(value) -> bool:
    """A Python number or container, or an array or number of any backend: its value is
    copied into the trace."""
    return isinstance(value, _VALUES) or is_array(value) or is_scalar_number(value)


def _constant_tensor(value) -> bool:
    """An eager tensor the trace copies in as a constant (not a Variable, Parameter or leaf
    requiring grad, which are read by reference each call)."""
    return (isinstance(value, Tensor) and value._node is None and not isinstance(value, Variable)
            and not (value.requires_grad and value.grad_fn is None))


def _is_clock(fn) -> bool:
    return callable(fn) and (getattr(fn, "__module__", None) == "time" or
                             getattr(fn, "__self__", None) is time)


_MISSING = object()


def _global(frame, name):
    if name in frame.f_globals:
        return frame.f_globals[name]
    return _MISSING  # builtins are functions and types: not values the trace bakes in


def _argument_names(code) -> set:
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    return set(code.co_varnames[:n])


def _outside(load, args: set, free: set) -> bool:
    """Whether the object an instruction loads lives outside the frame."""
    if load.opname == "LOAD_GLOBAL":
        return True
    if load.opname in ("LOAD_DEREF", "LOAD_CLASSDEREF"):
        return load.argval in free
    return load.opname == "LOAD_FAST" and load.argval in args


def _is_local(frame, obj) -> bool:
    code = frame.f_code
    locals_ = frame.f_locals
    own = set(code.co_varnames) - _argument_names(code) | set(code.co_cellvars)
    return any(locals_.get(n) is obj for n in own)


def _text(code, line, detail) -> str:
    return linecache.getline(code.co_filename, line).strip() or str(detail)


def _short(value) -> str:
    text = f"array{tuple(value.shape)}" if is_array(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
