"""Module: the base of every layer; registers parameters, buffers and submodules by attribute."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

from ..devices.device import device as _device
from ..dtypes import is_floating
from ..errors import StateDictError
from ..graph import builder as _builder
from ..graph.variable import Variable
from ..tensor import Tensor
from ..tensor.transfer import copy_into, move_in_place, parse_target, zeros_like_array
from .parameter import Parameter


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict(strict=False)` could not match."""

    missing_keys: list
    unexpected_keys: list


_epochs = itertools.count(1)
_tree_epoch = [0]  # a fresh number after every change of a module's children or training flag


def _changed() -> None:
    """Called after a module tree changed (`next` on a count is atomic: two threads never get
    one number)."""
    _tree_epoch[0] = next(_epochs)


def tree_epoch() -> int:
    """A number that changes whenever any module gains, loses or swaps a child, or has its
    `training` flag set (`dj.jit` caches a module tree's training flags against it)."""
    return _tree_epoch[0]


class Module:
    """Base class of layers and models. Assign Parameters, buffers (non-trainable Variables via
    `register_buffer`) and Modules as attributes; define `forward`; call the module.

    >>> class Net(dj.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = dj.nn.Linear(4, 2)
    ...     def forward(self, x):
    ...         return self.fc(x)
    """

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:  # PyTorch's signature, and its refusal of anything passed
            unexpected = f"keyword argument {next(iter(kwargs))!r}" if kwargs else \
                f"positional argument {args[0]!r}"
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected {unexpected}")
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # --- registration -------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() runs: call super().__init__() "
                "first"
            )
        if isinstance(value, Parameter):
            self._forget(name, keep="_parameters")
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._forget(name, keep="_modules")
            self._modules[name] = value
            _changed()
        elif name in self._parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign {type(value).__name__} as parameter {name!r} "
                    "(dj.nn.Parameter or None expected)"
                )
            self._parameters[name] = None
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r}")
            if value is not None and not isinstance(value, Variable):
                value = Variable(value._data, trainable=False)
            self._buffers[name] = value
        else:
            tree_changes = name in self._modules or name == "training"
            if name in self._modules:
                del self._modules[name]
            object.__setattr__(self, name, value)
            if tree_changes:
                _changed()

    def _forget(self, name: str, keep: str = "") -> None:
        """Drop `name` from every table but `keep` (whose entry a new value then replaces in
        place, so a reassigned submodule or parameter keeps its position, as in PyTorch)."""
        if keep != "_parameters":
            self._parameters.pop(name, None)
        if keep != "_buffers":
            self._buffers.pop(name, None)
        if name in self._modules and keep != "_modules":
            del self._modules[name]
            _changed()
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            if table in d and name in d[table]:
                return d[table][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                if table is self._modules:
                    _changed()
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a declared but absent one such as `bias=False`)."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter({name!r}): expected a Parameter or None")
        self._forget(name, keep="_parameters")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | np.ndarray | None,
                        persistent: bool = True) -> None:
        """Add saved, untrained state (running statistics...), kept as a non-trainable Variable."""
        self._forget(name, keep="_buffers")
        if tensor is not None and not isinstance(tensor, Variable):
            data = tensor._data if isinstance(tensor, Tensor) else np.asarray(tensor)
            tensor = Variable(data, trainable=False)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        self._forget(name, keep="_modules")
        self._modules[name] = module
        _changed()

    register_module = add_module

    # --- calling ------------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _builder.state.graph is not None:
            self._name_for_graphs()
        return self.forward(*args, **kwargs)

    def _name_for_graphs(self) -> None:
        """Give unnamed parameters and buffers their qualified names (`0.weight`), so the graph
        text reads `%0.weight = variable()`. The outermost module called names them first."""
        for table in (self.named_parameters(), self.named_buffers()):
            for name, value in table:
                if value.var_name is None:
                    value.var_name = name

    # --- walking ------------------------------------------------------------------------------
    def named_modules(self, prefix: str = "", memo: set[Module] | None = None
                      ) -> Iterator[tuple[str, Module]]:
        """(qualified name, module) for this module and every submodule, each once."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(f"{prefix}.{name}" if prefix else name, memo)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def _named(self, table: str, prefix: str, recurse: bool) -> Iterator[tuple[str, Any]]:
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, value in getattr(mod, table).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True
                         ) -> Iterator[tuple[str, Parameter]]:
        """(qualified name such as `0.weight`, Parameter), each parameter once."""
        return self._named("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True
                      ) -> Iterator[tuple[str, Variable]]:
        return self._named("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Variable]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call `fn(module)` on every submodule, then on this one."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """`to(dtype)`, `to(device)`, `to(device, dtype)`: move the parameters and buffers (and
        their gradients) to `device` and cast the floating-point ones to `dtype`, keeping the
        objects, as PyTorch does."""
        dev, dtype = parse_target("Module.to", args, kwargs)
        if dtype is not None and not is_floating(dtype):
            raise TypeError(f"Module.to only accepts floating point dtypes, got {dtype}")
        if dev is not None:
            for value in list(self.parameters()) + list(self.buffers()):
                move_in_place(value, dev)
        if dtype is None:
            return self
        for value in list(self.parameters()) + list(self.buffers()):
            if is_floating(value.dtype) and value.dtype != dtype:
                value._data = value._data.astype(dtype)
                value.grad = None
                value._version[0] += 1
        return self

    def cpu(self) -> Module:
        """Move the parameters and buffers to the CPU (`to("cpu")`)."""
        return self.to("cpu")

    def cuda(self, device: int | str | _device | None = None) -> Module:
        """Move the parameters and buffers to a CUDA device (`device`: an index or "cuda:i";
        the current one when None). DeviceError when dongjing has no CUDA backend here."""
        if device is None or isinstance(device, int):
            device = _device("cuda", device)
        return self.to(device)

    def double(self) -> Module:
        return self.to(np.float64)

    def float(self) -> Module:
        return self.to(np.float32)

    # --- modes and gradients ------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout active, batch norm uses and updates batch statistics)."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        _changed()
        return self

    def eval(self) -> Module:
        """Evaluation mode: `train(False)`."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the `.grad` of every parameter (to None, or zeros)."""
        for p in self.parameters():
            if set_to_none:  # no read first: a dj.jit trace would record it as an input
                p.grad = None
            elif p.grad is not None:
                p.grad = Tensor._make(zeros_like_array(p._data))

    # --- state dicts --------------------------------------------------------------------------
    def state_dict(self, prefix: str = "") -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers by qualified name (tensors sharing the storage)."""
        out = OrderedDict()
        for mod_prefix, mod in self.named_modules(prefix.rstrip(".")):
            head = f"{mod_prefix}." if mod_prefix else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    out[head + name] = p.detach()
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent:
                    out[head + name] = b.detach()
        return out

    def _state_targets(self) -> dict[str, Any]:
        targets = {}
        for mod_prefix, mod in self.named_modules():
            head = f"{mod_prefix}." if mod_prefix else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    targets[head + name] = p
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent:
                    targets[head + name] = b
        return targets

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True
                        ) -> IncompatibleKeys:
        """Copy values (Tensors or arrays) into the parameters and buffers, in place.

        Shapes must match; with `strict`, the keys must match exactly. Nothing is copied when
        any check fails.
        """
        targets = self._state_targets()
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict if k not in targets]
        problems = []
        if strict and missing:
            problems.append("missing key(s): " + ", ".join(repr(k) for k in missing))
        if strict and unexpected:
            problems.append("unexpected key(s): " + ", ".join(repr(k) for k in unexpected))
        values = {}
        for key, target in targets.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            array = value._value("load_state_dict") if isinstance(value, Tensor) else (
                np.asarray(value))
            if array.shape != target._data.shape:
                problems.append(
                    f"size mismatch for {key!r}: the checkpoint has shape {array.shape}, the "
                    f"module has shape {tuple(target._data.shape)}"
                )
            values[key] = array
        if problems:
            raise StateDictError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n  "
                + "\n  ".join(problems)
            )

        for key, array in values.items():  # onto each target's device, as in PyTorch
            copy_into(targets[key], array)
        return IncompatibleKeys(missing, unexpected)

    # --- printing -----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The part inside the parentheses of this module's repr line."""
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, child in self._modules.items():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not lines:
            return head + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"
