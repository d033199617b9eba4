"""Second conversion step: `if` / `while` / `for`, `and` / `or` / `not`, conditional
expressions, calls and returns become calls into the runtime (`_dj_ag`, see runtime.py).

A statement `if t: A else: B` assigning `x, y` becomes

    def _dj_fn_if_true_1(x, y):
        A
        return (x, y)
    def _dj_fn_if_false_1(x, y):
        B
        return (x, y)
    (x, y) = _dj_ag.if_stmt(t, _dj_fn_if_true_1, _dj_fn_if_false_1,
                            (_dj_ag.ld(lambda: x), _dj_ag.ld(lambda: y)), ('x', 'y'), 'f.py:3')

and loops likewise (a test function, a body function and the state they carry). Every new node
gets the line of the statement it replaces, so tracebacks and errors name the user's line.
"""

from __future__ import annotations

import ast
import itertools

from .scope import HELPER_PREFIX, assigned_names, locate

AG = "_dj_ag"
_NO_CONVERT = {"super", "locals", "globals", "vars", "eval", "exec", "ld"}


def _load(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _ag(attr: str) -> ast.Attribute:
    return ast.Attribute(_load(AG), attr, ast.Load())


def _call(attr: str, *args) -> ast.Call:
    return ast.Call(_ag(attr), list(args), [])


def _thunk(expr: ast.expr) -> ast.Lambda:
    return ast.Lambda(_arguments([]), expr)


def _arguments(params: list[str]) -> ast.arguments:
    return ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], vararg=None,
                         kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def _tuple(names: list[str], store: bool = False) -> ast.Tuple:
    ctx = ast.Store() if store else ast.Load()
    return ast.Tuple([ast.Name(id=n, ctx=ctx) for n in names], ctx)


def _def(name: str, params: list[str], body: list, returns: list[str] | None) -> ast.FunctionDef:
    body = list(body) or [ast.Pass()]
    if returns is not None:
        body.append(ast.Return(_tuple(returns)))
    return ast.FunctionDef(name=name, args=_arguments(params), body=body, decorator_list=[],
                           returns=None, type_comment=None)


class ControlFlow(ast.NodeTransformer):
    """Converts one function body (nested user functions are converted by the caller)."""

    def __init__(self, filename: str, skip: set[str], self_name: str | None = None):
        self.filename = filename
        self.self_name = self_name  # a method's first parameter: `super()` names it
        self.skip = skip  # global / nonlocal names: never passed as state
        self.counter = itertools.count(1)
        self.context: list[str] = []  # enclosing `try` / `with` statements

    def _where(self, node) -> ast.Constant:
        return ast.Constant(f"{self.filename}:{node.lineno}")

    def _ctx(self) -> ast.Constant:
        return ast.Constant(self.context[-1] if self.context else None)

    def _state(self, names: list[str]) -> ast.Tuple:
        return ast.Tuple([_call("ld", _thunk(_load(n))) for n in names], ast.Load())

    def _names(self, stmts) -> list[str]:
        return [n for n in assigned_names(stmts) if n not in self.skip and n != AG]

    def _result(self, names: list[str], call: ast.Call, like) -> ast.stmt:
        if names:
            return locate(ast.Assign(targets=[_tuple(names, store=True)], value=call), like)
        return locate(ast.Expr(call), like)

    # --- statements ----------------------------------------------------------------------------
    def visit_Try(self, node):
        self.context.append(f"try at {self.filename}:{node.lineno}")
        self.generic_visit(node)
        self.context.pop()
        return node

    def visit_With(self, node):
        self.context.append(f"with at {self.filename}:{node.lineno}")
        self.generic_visit(node)
        self.context.pop()
        return node

    def visit_FunctionDef(self, node):
        return node  # user functions nested here are converted on their own (convert.py)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_If(self, node):
        self.generic_visit(node)
        n = next(self.counter)
        names = self._names(node.body + node.orelse)
        true_fn, false_fn = f"{HELPER_PREFIX}if_true_{n}", f"{HELPER_PREFIX}if_false_{n}"
        defs = [_def(true_fn, names, node.body, names),
                _def(false_fn, names, node.orelse, names)]
        call = _call("if_stmt", node.test, _load(true_fn), _load(false_fn), self._state(names),
                     ast.Constant(tuple(names)), self._where(node), self._ctx())
        return [locate(d, node) for d in defs] + [self._result(names, call, node)]

    def _stop_test(self, loop) -> ast.expr | None:
        flags = getattr(loop, "dj_stop", [])
        if not flags:
            return None
        tests = [_call("not_", _load(f)) for f in flags]
        if len(tests) == 1:
            return tests[0]
        return _call("and_", *[_thunk(t) for t in tests])

    def visit_While(self, node):
        self.generic_visit(node)
        n = next(self.counter)
        names = self._names(node.body)
        test_fn, body_fn = f"{HELPER_PREFIX}while_test_{n}", f"{HELPER_PREFIX}while_body_{n}"
        stop = self._stop_test(node)
        test = node.test if stop is None else _call("and_", _thunk(stop), _thunk(node.test))
        defs = [_def(test_fn, names, [ast.Return(test)], None),
                _def(body_fn, names, node.body, names)]
        call = _call("while_stmt", _load(test_fn), _load(body_fn), self._state(names),
                     ast.Constant(tuple(names)), self._where(node), self._ctx())
        return [locate(d, node) for d in defs] + [self._result(names, call, node)] + node.orelse

    def visit_For(self, node):
        self.generic_visit(node)
        n = next(self.counter)
        bind = locate(ast.Assign(targets=[node.target], value=_load("_dj_item")), node)
        names = self._names([bind] + node.body)
        body_fn = f"{HELPER_PREFIX}for_body_{n}"
        defs = [_def(body_fn, ["_dj_item"] + names, [bind] + node.body, names)]
        stop = self._stop_test(node)
        test: ast.expr = ast.Constant(None)
        if stop is not None:
            test_fn = f"{HELPER_PREFIX}for_test_{n}"
            defs.append(_def(test_fn, names, [ast.Return(stop)], None))
            test = _load(test_fn)
        call = _call("for_stmt", node.iter, test, _load(body_fn), self._state(names),
                     ast.Constant(tuple(names)), self._where(node), self._ctx())
        return [locate(d, node) for d in defs] + [self._result(names, call, node)] + node.orelse

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is not None:
            node.value = locate(_call("ret", node.value, self._where(node)), node)
        return node

    # --- expressions ---------------------------------------------------------------------------
    def visit_BoolOp(self, node):
        self.generic_visit(node)
        name = "and_" if isinstance(node.op, ast.And) else "or_"
        return locate(_call(name, *[_thunk(v) for v in node.values]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return locate(_call("not_", node.operand), node)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        call = _call("if_exp", node.test, _thunk(node.body), _thunk(node.orelse),
                     self._where(node))
        return locate(call, node)

    def visit_Lambda(self, node):
        return node  # left as written (its source cannot be recovered on its own)

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name):
            if func.id == "range":
                node.func = locate(_ag("range_"), func)
                return node
            if func.id == "super" and not node.args and self.self_name:
                # zero-argument super() reads the enclosing function's first argument, which
                # inside a generated branch or loop function would be the wrong one
                node.args = [_load("__class__"), _load(self.self_name)]
                return node
            if func.id in _NO_CONVERT or func.id.startswith(HELPER_PREFIX):
                return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == AG:
            return node
        node.args = [func] + node.args
        node.func = locate(_ag("call"), func)
        return node
