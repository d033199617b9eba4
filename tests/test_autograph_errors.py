"""The limits of dj.jit's source conversion: each gives a dj.GraphError naming the variable or
construct and the user's original file:line; tracebacks point at the user's lines."""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
import pytest

import dongjing as dj

LINES = Path(__file__).read_text().splitlines()


def _at(marker: str) -> str:
    """`test_autograph_errors.py:N` of the line carrying `# <marker>`."""
    (n,) = [i + 1 for i, line in enumerate(LINES) if line.rstrip().endswith(f"# {marker}")]
    return f"{Path(__file__).name}:{n}"


X = dj.tensor(np.array([1.0, -2.0, 0.5], np.float32))


def one_branch(x):
    if x.sum() > 0:  # one-branch
        y = x * 2
    return y + 1


def shape_change(x):
    while x.sum() < 100:  # shape-change
        x = dj.cat([x, x])
    return x


def dtype_change(x):
    count = dj.tensor(np.int64(0))
    while x.sum() < 10:  # dtype-change
        x = x + 1
        count = count + 0.5
    return count


def generator(x):
    for i in range(3):
        yield x * i  # yield-line


def uses_generator(x):
    return sum(generator(x))


def try_around(x):
    try:
        if x.sum() > 0:  # try-if
            x = x * 2
    except ValueError:
        pass
    return x


def with_around(x):
    with dj.no_grad():
        while x.sum() < 10:  # with-while
            x = x + 1
    return x


def two_structures(x):
    if x.sum() > 0:
        return x
    return x, x  # two-structures


def python_structures_are_fine(x, flag):
    if flag:
        return x
    return x, x


@pytest.mark.parametrize("fn,marker,words", [
    (one_branch, "one-branch", ["variable 'y'", "only in the true branch"]),
    (shape_change, "shape-change", ["variable 'x'", "shape (3,)", "(6,)"]),
    (dtype_change, "dtype-change", ["variable 'count'", "int64"]),
    (uses_generator, "yield-line", ["generator", "yield"]),
    (try_around, "try-if", ["`if`", "try at"]),
    (with_around, "with-while", ["`while`", "with at"]),
    (two_structures, "two-structures", ["returns different structures", "a tuple of 2"]),
])
def test_each_limit_names_the_construct_and_the_original_line(fn, marker, words):
    with pytest.raises(dj.GraphError) as info:
        dj.jit(fn)(X)
    message = str(info.value)
    assert _at(marker) in message, message
    for word in words:
        assert word in message, message


def test_python_conditions_may_return_different_structures():
    assert isinstance(dj.jit(python_structures_are_fine)(X, True), dj.Tensor)
    assert len(dj.jit(python_structures_are_fine)(X, False)) == 2


def mismatched(x):
    if x.sum() > 0:
        x = x @ dj.ones(4, 4)  # bad-matmul
    return x


def test_tracebacks_point_at_the_users_lines():
    with pytest.raises(dj.ShapeError) as info:
        dj.jit(mismatched)(X)
    frames = traceback.extract_tb(info.value.__traceback__)
    file, line = _at("bad-matmul").split(":")
    mine = [f for f in frames if f.filename == __file__ and f.lineno == int(line)]
    assert mine and "x @ dj.ones(4, 4)" in mine[0].line


def test_undefined_value_is_not_returned_silently():
    def f(x):
        for _ in range(0):
            z = x
        return z  # never-bound

    with pytest.raises(dj.GraphError, match="'z'"):
        dj.jit(f)(X)
