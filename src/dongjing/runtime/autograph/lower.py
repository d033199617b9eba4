"""First conversion step: `return` inside branches and loops, `break` and `continue` become flag
variables, and the statements after them are guarded by `if not flag:`. What is left is plain
structured `if` / `while` / `for` that the next step (`control.py`) turns into runtime calls.

A loop whose body may set a flag gets the flag in `loop.dj_stop` (a list of names): the loop
continues only while all of them are false.
"""

from __future__ import annotations

import ast
import itertools

from .scope import contains, locate

RETURN_FLAG = "_dj_do_return"
RETVAL = "_dj_retval"
_LOOPS = (ast.While, ast.For)


def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _assign(name: str, value: ast.expr, like: ast.AST) -> ast.Assign:
    node = ast.Assign(targets=[_name(name, True)], value=value)
    return locate(node, like)


def _guard(flags: list[str], body: list, like: ast.AST) -> ast.If:
    """`if not (f1 or f2): body`."""
    test = _name(flags[0]) if len(flags) == 1 else ast.BoolOp(ast.Or(), [_name(f) for f in flags])
    node = ast.If(test=ast.UnaryOp(ast.Not(), test), body=body, orelse=[])
    return locate(node, like)


def _sets(stmt, flag_kinds: dict) -> list[str]:
    """The flags `stmt` may set (`flag_kinds`: flag name -> the node kinds that set it)."""
    return [flag for flag, (kinds, loops) in flag_kinds.items()
            if contains([stmt], kinds, loops=loops)]


def _lower_block(stmts: list, replace, flag_kinds: dict) -> list:
    """Rewrite a statement list: `replace(stmt)` gives the statements a flag-setting statement
    becomes (or None to recurse into it); after a statement that may set a flag the rest of
    the block runs only while the flags are unset."""
    out: list = []
    for i, stmt in enumerate(stmts):
        new = replace(stmt)
        if new is not None:
            out.extend(new)
            return out  # the rest of the block is unreachable
        flags = _sets(stmt, flag_kinds)
        if flags:
            _recurse(stmt, replace, flag_kinds)
        out.append(stmt)
        if flags:
            rest = _lower_block(stmts[i + 1:], replace, flag_kinds)
            if rest:
                out.append(_guard(flags, rest, stmts[i + 1]))
            return out
    return out


def _recurse(stmt, replace, flag_kinds: dict) -> None:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if block:
            setattr(stmt, field, _lower_block(block, replace, flag_kinds) or [ast.Pass()])
    for handler in getattr(stmt, "handlers", ()):
        handler.body = _lower_block(handler.body, replace, flag_kinds) or [ast.Pass()]


def lower_returns(fn: ast.FunctionDef) -> None:
    """Single-exit form: `return x` sets `_dj_retval` and `_dj_do_return`; loops holding a
    return stop when the flag is set; the function ends with `return _dj_retval`."""

    def replace(stmt):
        if not isinstance(stmt, ast.Return):
            return None
        value = stmt.value if stmt.value is not None else ast.Constant(None)
        return [_assign(RETURN_FLAG, ast.Constant(True), stmt), _assign(RETVAL, value, stmt)]

    for node in ast.walk(fn):
        if isinstance(node, _LOOPS) and contains(node.body, ast.Return):
            node.dj_stop = getattr(node, "dj_stop", []) + [RETURN_FLAG]
    first = fn.body[0]
    body = _lower_block(fn.body, replace, {RETURN_FLAG: (ast.Return, True)})
    undefined = ast.Attribute(_name("_dj_ag"), "UNDEFINED_RETURN", ast.Load())
    final = ast.Return(_name(RETVAL))
    fn.body = ([_assign(RETURN_FLAG, ast.Constant(False), first),
                _assign(RETVAL, undefined, first)] + body
               + [locate(final, fn.body[-1])])


class _Loops(ast.NodeVisitor):
    """Lowers `break` / `continue` of every loop (innermost first)."""

    def __init__(self):
        self.counter = itertools.count(1)

    def visit_FunctionDef(self, node):  # a nested function is lowered on its own
        return

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def generic_visit(self, node):
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                setattr(node, field, self._block(value) if value and isinstance(
                    value[0], ast.stmt) else value)
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)

    def _block(self, stmts: list) -> list:
        out = []
        for stmt in stmts:
            if isinstance(stmt, _LOOPS):
                out.extend(self._lower_loop(stmt))
            else:
                out.append(stmt)
        return out

    def _lower_loop(self, loop) -> list:
        has_break = contains(loop.body, ast.Break, loops=False)
        has_continue = contains(loop.body, ast.Continue, loops=False)
        if not (has_break or has_continue):
            return [loop]
        n = next(self.counter)
        brk, cont = f"_dj_break_{n}", f"_dj_continue_{n}"
        before = []
        kinds = {}
        if has_break:
            kinds[brk] = (ast.Break, False)
            loop.dj_stop = getattr(loop, "dj_stop", []) + [brk]
            before.append(_assign(brk, ast.Constant(False), loop))
            if loop.orelse:  # `else` runs only when the loop was not broken
                loop.orelse = [_guard([brk], loop.orelse, loop.orelse[0])]
        if has_continue:
            kinds[cont] = (ast.Continue, False)

        def replace(stmt):
            if isinstance(stmt, ast.Break):
                return [_assign(brk, ast.Constant(True), stmt)]
            if isinstance(stmt, ast.Continue):
                return [_assign(cont, ast.Constant(True), stmt)]
            return None

        body = _lower_block(loop.body, replace, kinds)
        if has_continue:
            body.insert(0, _assign(cont, ast.Constant(False), loop.body[0]))
        loop.body = body or [ast.Pass()]
        return before + [loop]


def lower_loops(fn: ast.FunctionDef) -> None:
    """Replace `break` / `continue` by flags in every loop of `fn` (not of nested functions)."""
    visitor = _Loops()
    fn.body = visitor._block(fn.body)
    for stmt in fn.body:
        visitor.visit(stmt)
