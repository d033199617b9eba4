"""The side-effect log of dj.jit: what a traced function does only at trace time is listed with
its line (print, Python random, a global list append, a closure number read, ...); strict=True
raises on each; a pure function's log is empty."""

from __future__ import annotations

import random

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
from dongjing.errors import DongjingError, SideEffectError

LOG: list = []
SCALE = 3.0


def _line(fn, text: str) -> str:
    """file:line of the line of `fn`'s source containing `text`."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    n = next(i for i, line in enumerate(lines) if text in line)
    return f"test_jit_side_effects.py:{first + n}"


def _printing(x):
    print("traced once")
    return x * 2.0


def _rolling(x):
    return x * random.random()


def _appending(x):
    LOG.append("called")
    return x + 1.0


def _closure():
    k = 2.5

    def scaled(x):
        return x * k

    return scaled


def _global_number(x):
    return x * SCALE


def _numpy_random(x):
    return x + float(np.random.rand())


class _Holder:
    count = 0


HOLDER = _Holder()
COUNTS = {"calls": 0}


def _attribute_write(x):
    HOLDER.count += 1
    return x * 2.0


def _item_write(x):
    COUNTS["calls"] += 1
    return x * 2.0


def _escape(w):
    def f(x):
        return x * w.item()

    return f


CASES = [
    (_printing, "print", "print("),
    (_rolling, "random", "random.random()"),
    (_appending, "mutation", "LOG.append"),
    (_closure(), "closure read", "x * k"),
    (_global_number, "global read", "x * SCALE"),
    (_numpy_random, "random", "np.random.rand()"),
    (_attribute_write, "mutation", "HOLDER.count += 1"),
    (_item_write, "mutation", 'COUNTS["calls"] += 1'),
]


@pytest.mark.parametrize("fn,kind,text", CASES, ids=[c[1] + "-" + c[0].__name__ for c in CASES])
def test_each_side_effect_is_listed_with_its_line(fn, kind, text, capsys):
    f = dj.jit(fn)
    f(dj.ones(3))
    f(dj.ones(3))  # cached: runs compiled, the effect does not repeat and the log stays
    entries = [e for e in f.side_effects if e.kind == kind]
    assert entries, f.side_effects
    assert entries[0].where == _line(fn, text)
    assert text.split("(")[0] in entries[0].text
    assert kind in str(entries[0])


@pytest.mark.parametrize("fn,kind,text", CASES, ids=[c[1] + "-" + c[0].__name__ for c in CASES])
def test_strict_raises_on_each(fn, kind, text, capsys):
    with pytest.raises(SideEffectError, match=_line(fn, text)):
        dj.jit(fn, strict=True)(dj.ones(3))
    assert issubclass(SideEffectError, DongjingError)


def test_value_escape_of_a_captured_tensor():
    w = dj.tensor(2.0)
    f = dj.jit(_escape(w))
    f(dj.ones(2))
    assert any(e.kind == "value escape" and "w.item()" in e.text for e in f.side_effects)


def test_a_closure_tensor_read_as_a_constant():
    table = dj.tensor([1.0, 2.0])
    weight = dj.nn.Parameter(dj.ones(2))

    def f(x):
        return x * table + x * weight

    jf = dj.jit(f)
    jf(dj.ones(2))
    reads = [e for e in jf.side_effects if e.kind == "closure read"]
    assert len(reads) == 1 and "table (tensor (2,)) becomes a constant" in reads[0].text


def test_pure_functions_and_modules_log_nothing():
    def pure(x, y):
        h = [x, y]
        h.append(dj.tanh(x) * y)
        return dj.stack(h).sum(dim=0)

    f = dj.jit(pure, strict=True)
    f(dj.ones(3), dj.ones(3))
    assert f.side_effects == []
    model = dj.jit(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.1)), strict=True)
    model(dj.ones(2, 3))
    assert model.side_effects == []
