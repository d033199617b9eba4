"""Converting a user function: parse its source, lower and convert every function in it, compile
the result at the original file and line numbers, and bind it to the original closure cells."""

from __future__ import annotations

import ast
import contextlib
import inspect
import linecache
import os
import sysconfig
import textwrap
import types
import weakref

from ...graph import builder
from ...nn.module import Module
from . import runtime
from .control import AG, ControlFlow
from .lower import lower_loops, lower_returns
from .scope import declared_outer, first_yield, has_nested_return
from .values import ConversionError

_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> converted
_sources: dict = {}  # code object -> converted source text
_recorders: list = []  # lists collecting the sources converted while a dj.jit traces
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SYSTEM = tuple(os.path.abspath(p) for p in {
    sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})


class _NoJitYet:
    pass


jit_function_type: type = _NoJitYet  # dj.jit's JitFunction, set by runtime/jit.py (built on this)


def is_user_function(fn) -> bool:
    """A Python function whose source we can read, outside dongjing and installed packages."""
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        return False
    filename = fn.__code__.co_filename
    if filename.startswith("<") and filename not in linecache.cache:
        return False
    path = os.path.abspath(filename)
    return not (path.startswith(_PACKAGE) or path.startswith(_SYSTEM))


def _parse(fn) -> tuple[ast.Module, str]:
    lines, start = inspect.getsourcelines(fn)
    source = "".join(lines)
    if source[:1].isspace():  # a method: keep its columns, one wrapper line above
        tree = ast.parse("if True:\n" + source)
        ast.increment_lineno(tree, start - 2)
        tree.body = tree.body[0].body
    else:
        tree = ast.parse(textwrap.dedent(source))
        ast.increment_lineno(tree, start - 1)
    return tree, source


def _convert_def(node, filename: str, method: bool = False) -> None:
    """Lower and convert one function definition in place."""
    bad = first_yield(node)
    if bad is not None:
        raise ConversionError(f"dj.jit cannot convert the generator {node.name}() ({filename}:"
                         f"{bad.lineno}: yield); call it outside the jitted function, or use "
                         "dj.jit(fn, convert=False)")
    if has_nested_return(node):
        lower_returns(node)
    lower_loops(node)
    params = node.args.posonlyargs + node.args.args
    self_name = params[0].arg if method and params else None
    converter = ControlFlow(filename, declared_outer(node), self_name)
    node.body = [s for stmt in node.body for s in _as_list(converter.visit(stmt))]


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


def convert_code(fn) -> tuple[types.CodeType, str]:
    """The converted code object of `fn` (cached per code object) and its source text."""
    key = fn.__code__
    if key in _sources:
        return _sources[key]
    tree, _ = _parse(fn)
    fn_node = tree.body[0]
    if not isinstance(fn_node, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
            fn_node.name != fn.__name__:
        raise ConversionError(f"cannot find the definition of {fn.__name__}() in its source")
    fn_node.decorator_list = []
    filename = os.path.basename(fn.__code__.co_filename)
    method = "__class__" in fn.__code__.co_freevars  # it calls super()
    for node in [n for n in ast.walk(fn_node) if isinstance(n, ast.FunctionDef)]:
        _convert_def(node, filename, method and node is fn_node)
    freevars = list(fn.__code__.co_freevars)
    factory = ast.FunctionDef(
        name="_dj_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(v) for v in freevars + [AG]],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[fn_node, ast.Return(ast.Name(fn.__name__, ast.Load()))], decorator_list=[],
        returns=None, type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, fn.__code__.co_filename, "exec")
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts
                 if isinstance(c, types.CodeType) and c.co_name == fn.__name__)
    result = (inner, ast.unparse(fn_node))
    _sources[key] = result
    return result


def convert(fn):
    """`fn` converted (cached); the original when its source cannot be read."""
    done = _cache.get(fn)
    if done is not None:
        return done
    try:
        code, source = convert_code(fn)
    except (OSError, TypeError, SyntaxError, StopIteration):
        _cache[fn] = fn
        return fn
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[AG] = types.CellType(runtime)
    closure = tuple(cells[name] for name in code.co_freevars)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__wrapped__ = fn
    new.__dj_converted__ = source
    _cache[fn] = new
    _record(fn, source)
    return new


def _record_into(sources: list, fn) -> None:
    done = _cache.get(fn)
    if done is not None and done is not fn:
        sources.append((fn, done.__dj_converted__))


def _record(fn, source: str) -> None:
    for sources in _recorders:
        if all(s[0] is not fn for s in sources):
            sources.append((fn, source))


@contextlib.contextmanager
def recording(sources: list):
    """Collect (function, converted source) of every function converted or called converted."""
    _recorders.append(sources)
    try:
        yield
    finally:
        _recorders.remove(sources)


def converted_callable(fn):
    """What converted code calls for `fn`: its converted version where it is user code."""
    if isinstance(fn, types.FunctionType):
        target = convert(fn) if is_user_function(fn) else fn
        if target is not fn:
            _record(fn, target.__dj_converted__)
        return target
    if isinstance(fn, types.MethodType):
        inner = fn.__func__
        if isinstance(inner, jit_function_type):
            inner = inner.fn
        conv = converted_callable(inner)
        return fn if conv is inner and inner is fn.__func__ else types.MethodType(conv, fn.__self__)
    if isinstance(fn, jit_function_type):
        return converted_callable(fn.module if fn.module is not None else fn.fn)
    if isinstance(fn, Module) and type(fn).__call__ is Module.__call__:
        forward = getattr(type(fn).forward, "__func__", type(fn).forward)
        if not is_user_function(forward):
            return fn
        conv = converted_callable(forward)
        return types.MethodType(_module_call(conv), fn)
    return fn


def _module_call(forward):
    def __call__(self, *args, **kwargs):
        if builder.state.graph is not None:
            self._name_for_graphs()
        return forward(self, *args, **kwargs)

    return __call__


def entry(target, module=None):
    """The function dj.jit traces for `target` (a function, or a module's `__call__`), and the
    list that collects the converted sources while it runs."""
    sources: list = []
    conv = converted_callable(module if module is not None else target)
    original = target.__func__ if isinstance(target, types.MethodType) else target
    if module is not None:
        original = getattr(type(module).forward, "__func__", type(module).forward)
    if getattr(conv, "__func__", conv) is not original:
        _record_into(sources, original)

    def run(*args, **kwargs):
        with recording(sources):
            return conv(*args, **kwargs)

    if module is not None:  # keeps dj.jit's placeholder names (taken from forward)
        run = types.MethodType(_named_call(run), module)
    else:
        run.__wrapped__ = target
        run.__name__ = getattr(target, "__name__", "fn")
    return run, sources


def _named_call(run):
    def __call__(self, *args, **kwargs):
        return run(*args, **kwargs)

    return __call__


runtime.converted_callable = converted_callable  # converted code's `ag.call` runs through it
