"""Containers: Sequential (children named 0, 1, ...), ModuleList and ModuleDict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator

from ..tensor import Tensor
from .module import Module


class Sequential(Module):
    """Calls its children in order; state-dict keys are `0.weight`, `1.bias`, ...

    >>> model = dj.nn.Sequential(dj.nn.Linear(64, 10), dj.nn.ReLU())
    """

    def __init__(self, *args: Module):
        super().__init__()
        modules = args
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x: Tensor) -> Tensor:
        for m in self._modules.values():
            x = m(x)
        return x

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index):
        mods = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(mods[index]))
        return mods[index][1]

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules, registered so their parameters are found (keys `0.weight`, ...)."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, index):
        mods = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(mods[index])
        return mods[index]


class ModuleDict(Module):
    """Modules by name, registered so their parameters are found (keys `name.weight`, ...)."""

    def __init__(self, modules: dict | None = None):
        super().__init__()
        for name, m in (modules or {}).items():
            self.add_module(name, m)

    def __getitem__(self, name: str) -> Module:
        return self._modules[name]

    def __setitem__(self, name: str, module: Module) -> None:
        self.add_module(name, module)

    def __contains__(self, name: str) -> bool:
        return name in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()
