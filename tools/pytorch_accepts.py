"""What PyTorch accepts, checked by calling it: where PyTorch's override record
(`torch.overrides.get_testing_overrides()`, or a `(*args, **kwargs)` wrapper) names other
parameters than PyTorch's own binding takes, `pytorch_accepts_table.ACCEPTS` states the
signature PyTorch accepts, and `verify` proves it on small sample inputs, offline and
deterministically:

- every call listed succeeds, and every parameter of the stated signature is passed by keyword
  in at least one of them;
- every required parameter is accepted by position, in the stated place, with the same result
  as by keyword;
- every default that is not None is PyTorch's: some call gives the same result with the
  parameter left out as with it passed at that default (a None default means "may be left
  out": an overload without it, as in PyTorch's documented signatures);
- every refused call (the record's names, a value the record's default implies) raises
  TypeError.

A stated signature that PyTorch no longer accepts stops the coverage tool with the reason.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Call = tuple[tuple, dict]


def call(*args: Any, **kwargs: Any) -> Call:
    """One call's arguments (for the tensor namespace, the first is the tensor itself)."""
    return args, kwargs


@dataclass(frozen=True)
class Accepts:
    """The signature PyTorch accepts (`"(input, dim=None)"`), the calls that show it (each a
    function of `Samples`), and calls it refuses."""
    signature: str
    calls: tuple[Callable[[Any], Call], ...]
    refused: tuple[Callable[[Any], Call], ...] = field(default=())


class Samples:
    """Fresh small inputs at each access, the same numbers every run (in-place methods never see
    an earlier call's result)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    @property
    def x(self) -> Any:  # float, both signs, 3x4
        return self.torch.linspace(-1.5, 1.25, 12).reshape(3, 4)

    @property
    def p(self) -> Any:  # in (0, 1), 3x4
        return self.torch.linspace(0.05, 0.95, 12).reshape(3, 4)

    @property
    def row(self) -> Any:  # three floats
        return self.torch.tensor([0.5, -1.0, 2.0])

    @property
    def sign(self) -> Any:  # three of +-1
        return self.torch.tensor([1.0, -1.0, 1.0])

    @property
    def ints(self) -> Any:  # three int64
        return self.torch.tensor([5, 3, 6])

    @property
    def ints2(self) -> Any:
        return self.torch.tensor([3, 1, 0])

    @property
    def big(self) -> Any:  # above 1, 3x4
        return self.p + 1.5

    @property
    def column(self) -> Any:  # 3x1x4: a dimension of size 1
        return self.x.reshape(3, 1, 4)

    @property
    def index(self) -> Any:  # 1x4 int64, rows of x
        return self.torch.tensor([[0, 1, 2, 0]])

    @property
    def sorted(self) -> Any:  # ascending floats
        return self.torch.tensor([-1.0, 0.0, 1.0, 2.0])

    def image(self, dims: int) -> Any:  # 1x2x(6 per spatial dimension)
        return self.torch.linspace(-2.0, 2.0, 2 * 6 ** dims).reshape((1, 2) + (6,) * dims)

    def long(self, *values: Any) -> Any:
        return self.torch.tensor(values, dtype=self.torch.int64)

    def empty(self, *shape: int, dtype: Any = None) -> Any:
        return self.torch.empty(shape, dtype=dtype)


def target(torch: Any, namespace: str, name: str) -> Callable[..., Any]:
    """The PyTorch callable a call goes to; for Tensor methods, a function of the tensor first."""
    if namespace == "tensor":
        return lambda self, *args, **kwargs: getattr(self, name)(*args, **kwargs)
    owner = {"torch": torch, "functional": torch.nn.functional, "nn": torch.nn,
             "optim": torch.optim, "linalg": torch.linalg, "fft": torch.fft,
             "special": torch.special}[namespace]
    return getattr(owner, name)


def same_result(torch: Any, a: Any, b: Any) -> bool:
    """Equal to the bit (NaN equal to NaN): tensors, modules (their text and parameters'
    shapes), and tuples, lists and named tuples of them."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and bool(
            torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                  and torch.equal(a.nan_to_num(), b.nan_to_num())))
    if isinstance(a, torch.nn.Module):
        shapes = [{k: v.shape for k, v in m.state_dict().items()} for m in (a, b)]
        return repr(a) == repr(b) and shapes[0] == shapes[1]
    if isinstance(a, (tuple, list)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same_result(torch, u, v) for u, v in zip(a, b)))
    return bool(a == b)


class NotAccepted(Exception):
    """A stated signature that PyTorch does not accept as stated."""


def verify(torch: Any, namespace: str, name: str, accepts: Accepts, params: list) -> None:
    """Raise NotAccepted unless PyTorch takes `params` (the parsed `accepts.signature`) as the
    module docstring says."""
    fn = target(torch, namespace, name)
    samples = Samples(torch)
    where = f"{namespace}.{name}{accepts.signature}"

    def run(args: tuple, kwargs: dict) -> Any:
        torch.manual_seed(0)
        return fn(*args, **kwargs)

    results = []
    for make in accepts.calls:
        args, kwargs = make(samples)
        try:
            results.append(run(args, kwargs))
        except Exception as e:  # noqa: BLE001 - any refusal disproves the statement
            raise NotAccepted(f"{where}: {_text(args, kwargs)} raised {e!r}") from e
    names = [n for n, _ in params if not n.startswith("*")]
    passed = {k for make in accepts.calls for k in make(samples)[1]}
    if missing := [n for n in names if n not in passed]:
        raise NotAccepted(f"{where}: no call passes {missing} by keyword")
    first = 1 if namespace == "tensor" else 0
    for place, (pname, default) in enumerate(params):
        if pname.startswith("*"):
            continue
        if default is inspect.Parameter.empty and not _by_position(
                accepts, samples, run, results, [n for n, _ in params], place, first, torch):
            raise NotAccepted(f"{where}: {pname} is not taken at position {place}")
        if default is not inspect.Parameter.empty and default is not None and not _default(
                accepts, samples, run, results, pname, _value(torch, default), torch):
            raise NotAccepted(f"{where}: no call shows {pname}={default!r} is the default")
    for make in accepts.refused:
        args, kwargs = make(samples)
        try:
            run(args, kwargs)
        except TypeError:
            continue
        raise NotAccepted(f"{where}: {_text(args, kwargs)} was accepted, stated as refused")


def _by_position(accepts, samples, run, results, names, place, first, torch) -> bool:
    """Some call gives the same result with the stated parameters up to `place` passed by
    position, in the stated order, as by keyword."""
    for make, result in zip(accepts.calls, results):
        args, kwargs = make(samples)
        leading = names[:place + 1]
        if len(args) != first or not all(n in kwargs for n in leading):
            continue
        try:
            again = run(args + tuple(kwargs.pop(n) for n in leading), kwargs)
        except TypeError:
            continue
        if same_result(torch, result, again):
            return True
    return False


def _default(accepts, samples, run, results, pname, value, torch) -> bool:
    for make, result in zip(accepts.calls, results):
        args, kwargs = make(samples)
        if pname in kwargs:
            continue
        try:
            again = run(args, {**kwargs, pname: value})
        except TypeError:
            continue
        if same_result(torch, result, again):
            return True
    return False


def _value(torch: Any, default: Any) -> Any:
    """A stated default as a value: `torch.strided` (a name in the text) is looked up."""
    text = str(default)
    if type(default).__name__ == "_Source" and text.startswith("torch."):
        return getattr(torch, text.split(".", 1)[1])
    return default


def _text(args: tuple, kwargs: dict) -> str:
    shown = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}"
                                                 for k, v in kwargs.items()]
    return "(" + ", ".join(shown) + ")"
