"""Random programs for the differential fuzzer: inputs (shapes with 0- and 1-sized dims,
broadcasting, C/F-order, transposed and strided layouts, NaN/inf values) and lines of dongjing
calls, each line checked eagerly as it is generated; printable as a standalone reproducer."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np
from fuzz_ops import GENERATORS

import dongjing as dj
import dongjing.nn.functional as F
from dongjing import ops
from dongjing.errors import DongjingError

LAYOUTS = ("C", "F", "T", "S")  # contiguous, Fortran order, a transposed view, a strided view
SPECIAL = (np.nan, np.inf, -np.inf, -0.0, 0.0)
NAMESPACE = {"dj": dj, "np": np, "F": F, "ops": ops}


@dataclass
class Input:
    """A program input: its values and the memory layout it is fed with."""

    array: np.ndarray
    layout: str = "C"

    def fresh(self, layout: str | None = None) -> np.ndarray:
        """A new array with these values, laid out as `layout` (default: the input's own)."""
        a, layout = self.array, layout or self.layout
        if layout == "F":
            return np.array(a, order="F", copy=True)
        if layout == "T" and a.ndim >= 2:
            return np.swapaxes(a, -1, -2).copy().swapaxes(-1, -2)
        if layout == "S" and a.ndim >= 1:
            wide = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), a.dtype)
            wide[..., ::2] = a
            return wide[..., ::2]
        return a.copy()


@dataclass
class Program:
    """Inputs x0.., lines `vK = expr` and the fetched names; `source()` is a Python function."""

    inputs: list
    lines: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    refused: list = field(default_factory=list)  # (lines before, expr, dongjing's error)

    def source(self) -> str:
        args = ", ".join(f"x{i}" for i in range(len(self.inputs)))
        body = "".join(f"    {line}\n" for line in self.lines)
        return f"def program({args}):\n{body}    return [{', '.join(self.outputs)}]\n"

    def function(self, namespace: dict | None = None):
        """The program as a Python function, its names (`dj`, `F`, `ops`, `np`) from
        `namespace` (default: dongjing's)."""
        scope = dict(NAMESPACE if namespace is None else namespace)
        exec(compile(self.source(), "<fuzz-program>", "exec"), scope)
        return scope["program"]


class _Skip(Exception):
    """This template does not apply to the values there are."""


class Picker:
    """Chooses the arguments of a template among the values computed so far."""

    def __init__(self, rng: random.Random, values: dict, program: Program):
        self.rng, self.values, self.program = rng, values, program

    def _choose(self, ok) -> str:
        names = [n for n, t in self.values.items() if ok(t)]
        if not names:
            raise _Skip
        return self.rng.choice(names)

    def float(self, min_ndim: int = 0) -> str:
        return self._choose(lambda t: t.dtype.kind == "f" and t.ndim >= min_ndim)

    def any(self, min_ndim: int = 0) -> str:
        return self._choose(lambda t: t.ndim >= min_ndim)

    def bool(self) -> str:
        try:
            return self._choose(lambda t: t.dtype.kind == "b")
        except _Skip:
            return f"({self.float()} > 0)"

    def float_like(self, name: str) -> str:
        shape = self.values[name].shape
        return self._choose(lambda t: t.dtype.kind == "f" and _broadcastable(t.shape, shape))

    def shape(self, name: str) -> tuple:
        return tuple(self.values[name].shape)

    def ndim(self, name: str) -> int:
        return self.values[name].ndim

    def const(self) -> str:
        return self.rng.choice(["2.0", "0.5", "-1.5", "0.0", "-0.0", "3", "1.0"])

    def new_input(self, shape: tuple) -> str:
        dtype = self.rng.choice([np.float32, np.float64])
        array = np.random.default_rng(self.rng.randrange(1 << 30)).standard_normal(shape)
        self.program.inputs.append(Input(array.astype(dtype)))
        name = f"x{len(self.program.inputs) - 1}"
        self.values[name] = dj.tensor(self.program.inputs[-1].array)
        return name


def _broadcastable(a, b) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(reversed(a), reversed(b)))


def _random_shape(rng: random.Random) -> tuple:
    ndim = rng.choice([0, 1, 1, 2, 2, 2, 3, 3])
    sizes = [0] + [1] * 3 + [2, 3, 3, 4, 5, 6]
    return tuple(rng.choice(sizes) for _ in range(ndim))


def _related_shape(rng: random.Random, shape: tuple) -> tuple:
    """A shape that broadcasts with `shape`: some dims 1, maybe fewer leading dims."""
    out = [1 if rng.random() < 0.3 else d for d in shape]
    if out and rng.random() < 0.3:
        out = out[rng.randint(1, len(out)):]
    return tuple(out)


def _values(rng: random.Random, shape: tuple, dtype, special: bool) -> np.ndarray:
    gen = np.random.default_rng(rng.randrange(1 << 30))
    array = np.array(gen.standard_normal(shape) * rng.choice([0.5, 1.0, 3.0]))
    if rng.random() < 0.2:  # ties, for max/min/abs kinks and sorting-like ops
        array = np.array(np.round(array))
    if special and array.size:
        mask = gen.random(shape) < 0.15
        array[mask] = gen.choice(SPECIAL, size=int(mask.sum()))
    return np.asarray(array, dtype=dtype)


def generate(rng: random.Random, max_lines: int = 8, mode: str = "default"
             ) -> tuple[Program, list]:
    """A random program and the eager values of its lines (dropped lines never appear); in the
    "nan" mode every input holds NaN, infinities and signed zeros among its values."""
    dtype = rng.choice([np.float32, np.float64])
    special = rng.random() < 0.3 or mode == "nan"
    first = _random_shape(rng)
    shapes = [first] + [_related_shape(rng, first) if rng.random() < 0.7 else _random_shape(rng)
                        for _ in range(rng.randint(0, 2))]
    program = Program([Input(_values(rng, s, rng.choice([dtype, dtype, np.float32, np.float64]),
                                     special), rng.choice(LAYOUTS)) for s in shapes])
    values = {f"x{i}": dj.tensor(inp.array) for i, inp in enumerate(program.inputs)}
    picker = Picker(rng, values, program)
    raw_errors: list = []
    names = sorted(GENERATORS)
    target = rng.randint(1, max_lines)
    for _ in range(target * 4):
        if len(program.lines) >= target:
            break
        template = rng.choice(GENERATORS[rng.choice(names)])
        try:
            expr = template(picker)
        except _Skip:
            continue
        name = f"v{len(program.lines)}"
        scope = dict(NAMESPACE, **values)
        try:
            with np.errstate(all="ignore"):
                value = eval(compile(expr, "<fuzz-line>", "eval"), scope)
        except DongjingError as exc:  # kept: does PyTorch compute it? (fuzz_check, torch)
            if len(program.refused) < 2:
                program.refused.append((list(program.lines), expr, f"{type(exc).__name__}: "
                                                                   f"{str(exc)[:150]}"))
            continue
        except Exception as exc:  # a raw Python error from dongjing: a validation gap
            raw_errors.append(f"{expr}  ->  {type(exc).__name__}: {exc}")
            continue
        if not isinstance(value, dj.Tensor):
            continue
        values[name] = value
        program.lines.append(f"{name} = {expr}")
    computed = [f"v{i}" for i in range(len(program.lines))]
    if not computed:
        computed = ["x0"]
    program.outputs = sorted(set(computed[-2:] + rng.sample(computed, min(len(computed), 2))),
                             key=lambda n: (n[0], int(n[1:])))
    return program, raw_errors
