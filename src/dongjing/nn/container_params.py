"""`ParameterList` and `ParameterDict` (parameters held by position or name, registered with
the module so `parameters()`, `state_dict()` and optimizers see them) and `Container`,
PyTorch's deprecated module holder."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeAlias, TypeVar, overload

import numpy as np

from ..tensor import Tensor
from .module import Module
from .parameter import Parameter

_D = TypeVar("_D")
_Named: TypeAlias = Mapping[str, Tensor | np.ndarray] | Iterable[tuple[str, Tensor | np.ndarray]]
"""Parameters by name: a mapping, or (name, value) pairs."""


def _as_parameter(value: Tensor | np.ndarray) -> Parameter:
    """A Parameter as PyTorch stores it: plain tensors and arrays are wrapped."""
    if isinstance(value, Parameter) or value is None:
        return value
    if isinstance(value, Tensor):
        return Parameter(value._value("ParameterList"))
    if isinstance(value, np.ndarray):
        return Parameter(value)
    raise TypeError(f"expected a Parameter or tensor, got {type(value).__name__}")


class ParameterList(Module):
    """A list of parameters, registered under the names "0", "1", ..."""

    def __init__(self, values: Iterable[Tensor | np.ndarray] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def append(self, value: Tensor | np.ndarray) -> ParameterList:
        setattr(self, str(self._size), _as_parameter(value))
        self._size += 1
        return self

    def extend(self, values: Iterable[Tensor | np.ndarray]) -> ParameterList:
        for value in values:
            self.append(value)
        return self

    def _index(self, index: int) -> int:
        if not -self._size <= index < self._size:
            raise IndexError(f"ParameterList index {index} out of range ({self._size} items)")
        return index % self._size

    @overload
    def __getitem__(self, index: int) -> Parameter: ...
    @overload
    def __getitem__(self, index: slice) -> ParameterList: ...

    def __getitem__(self, index: int | slice) -> Parameter | ParameterList:
        if isinstance(index, slice):
            return ParameterList([self[i] for i in range(self._size)[index]])
        return getattr(self, str(self._index(index)))

    def __setitem__(self, index: int, value: Tensor | np.ndarray) -> None:
        setattr(self, str(self._index(index)), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Parameter]:
        return (self[i] for i in range(self._size))

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): Parameter containing: shape {tuple(p.shape)}"
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """A dict of parameters by name, kept in insertion order."""

    def __init__(self, parameters: _Named | None = None) -> None:
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Tensor | np.ndarray) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def keys(self) -> list[str]:
        return list(self._keys)

    def values(self) -> list[Parameter]:
        return [self[k] for k in self._keys]

    def items(self) -> list[tuple[str, Parameter]]:
        return [(k, self[k]) for k in self._keys]

    def get(self, key: str, default: _D = None) -> Parameter | _D:
        return self[key] if key in self._keys else default

    def pop(self, key: str) -> Parameter:
        value = self[key]
        del self[key]
        return value

    def update(self, parameters: _Named) -> None:
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in pairs:
            self[key] = value


class Container(Module):
    """PyTorch's deprecated holder of named modules (use Sequential or ModuleDict)."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("nn.Container is deprecated; use nn.Sequential or nn.ModuleDict",
                      DeprecationWarning, stacklevel=2)
        for name, module in kwargs.items():
            self.add_module(name, module)
