"""Static facts about statements that the source conversion needs: which names a block assigns,
and whether it contains `return` / `break` / `continue` / `yield`."""

from __future__ import annotations

import ast

HELPER_PREFIX = "_dj_fn_"  # the functions the conversion defines; never loop or branch state
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(nodes):
    """Every node under `nodes`, not entering nested functions, classes or comprehensions (a
    nested def's own name is still seen)."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def assigned_names(stmts) -> list[str]:
    """Names bound by `stmts` in the enclosing function's scope, in first-seen order."""
    names: list[str] = []

    def add(name: str) -> None:
        if name not in names and not name.startswith(HELPER_PREFIX):
            names.append(name)

    for node in _walk_scope(stmts):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                if name in names:
                    names.remove(name)
    return names


def declared_outer(fn_node) -> set[str]:
    """Names a function declares `global` or `nonlocal` (never passed as branch state)."""
    out: set[str] = set()
    for node in _walk_scope(fn_node.body):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out.update(node.names)
    return out


def contains(stmts, kinds, loops: bool = True) -> bool:
    """Whether `stmts` contain a node of `kinds` (looking into nested loops only if `loops`)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, _SCOPES):
            continue
        if not loops and isinstance(node, (ast.While, ast.For, ast.AsyncFor)):
            stack.extend(node.orelse)
            if isinstance(node, ast.For):
                stack.append(node.iter)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def first_yield(fn_node):
    """The first `yield` / `yield from` of the function itself, or None."""
    for node in _walk_scope(fn_node.body):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return node
    return None


def has_nested_return(fn_node) -> bool:
    """Whether a `return` sits inside a compound statement (not just at the top level)."""
    for stmt in fn_node.body:
        if not isinstance(stmt, ast.Return) and contains([stmt], ast.Return):
            return True
    return False


def locate(node: ast.AST, like: ast.AST) -> ast.AST:
    """Give every node under `node` without a position the position of `like`."""
    for child in ast.walk(node):
        if "lineno" in child._attributes and getattr(child, "lineno", None) is None:
            child.lineno = like.lineno
            child.col_offset = like.col_offset
            child.end_lineno = getattr(like, "end_lineno", like.lineno)
            child.end_col_offset = getattr(like, "end_col_offset", like.col_offset)
    return node
