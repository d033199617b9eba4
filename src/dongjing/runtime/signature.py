"""Call signatures for dj.jit: what of the arguments a trace depends on (tensor shapes and dtypes,
Python values, module training flags, optimizer hyperparameters), and why two of them differ."""

from __future__ import annotations

from ..backends import is_array
from ..dtypes import as_dtype
from ..graph.variable import Variable
from ..nn.module import Module, tree_epoch
from ..optim.optimizer import Optimizer
from ..tensor import Tensor
from . import placement


def signature(args: tuple, kwargs: dict, watched: tuple = (), arrays: list | None = None
              ) -> tuple:
    """A hashable summary of a call: one `(path, kind, detail)` entry per leaf of the arguments,
    then one per watched object (modules, optimizers). The arrays of tensor leaves are appended
    to `arrays` in the order `map_tensors` visits them."""
    entries: list = []
    arrays = [] if arrays is None else arrays
    for i, value in enumerate(args):
        _leaf(f"arg {i}", value, entries, arrays)
    for key in sorted(kwargs):
        _leaf(f"kwarg {key!r}", kwargs[key], entries, arrays)
    labels: dict = {}
    for obj in watched:
        label = f"{'module' if _is_module(obj) else 'optimizer'} {type(obj).__name__}"
        labels[label] = labels.get(label, -1) + 1
        _leaf(label + (f" #{labels[label]}" if labels[label] else ""), obj, entries, arrays)
    return tuple(entries)


def map_tensors(args: tuple, kwargs: dict, fn) -> tuple[tuple, dict]:
    """`args`, `kwargs` with each tensor or array leaf `x` at `path` replaced by `fn(path, x)`
    (in the order `signature` collects their arrays)."""
    new_args = tuple(_map(f"arg {i}", v, fn) for i, v in enumerate(args))
    new_kwargs = {key: _map(f"kwarg {key!r}", kwargs[key], fn) for key in sorted(kwargs)}
    return new_args, new_kwargs


def _map(path: str, value, fn):
    if (isinstance(value, Tensor) or is_array(value)) and not _is_variable(value):
        return fn(path, value)
    if isinstance(value, (tuple, list)):
        items = [_map(f"{path}[{i}]", v, fn) for i, v in enumerate(value)]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {k: _map(f"{path}[{k!r}]", v, fn) for k, v in value.items()}
    return value


def _array_detail(array) -> tuple:
    """Shape and dtype of an argument array, and its device when it is not the CPU (a trace
    runs on one device)."""
    where = placement.of_array(array)
    if where is None:
        return array.shape, array.dtype.str
    return array.shape, array.dtype.str, str(where)


def _leaf(path: str, value, entries: list, arrays: list) -> None:
    if _is_variable(value):  # state: passed through, captured by reference
        entries.append((path, "variable", (id(value), value._data.shape, value._data.dtype.str)))
    elif isinstance(value, Tensor):
        if value._node is not None:
            raise TypeError(f"{path}: a symbolic tensor cannot be passed to a jitted function")
        entries.append((path, "tensor", _array_detail(value._data)))
        arrays.append(value._data)
    elif is_array(value):
        entries.append((path, "tensor", _array_detail(value)))
        arrays.append(value)
    elif isinstance(value, (tuple, list)):
        entries.append((path, "sequence", (type(value), len(value))))
        for i, item in enumerate(value):
            _leaf(f"{path}[{i}]", item, entries, arrays)
    elif isinstance(value, dict):
        entries.append((path, "dict", tuple(value)))
        for key, item in value.items():
            _leaf(f"{path}[{key!r}]", item, entries, arrays)
    elif _is_module(value):
        entries.append((path, "module", (id(value), training_flags(value))))
    elif _is_optimizer(value):
        entries.append((path, "optimizer", (id(value), _hyperparameters(value))))
    else:
        try:
            hash(value)
        except TypeError:
            raise TypeError(f"{path}: a jitted function's arguments must be tensors, arrays, "
                            f"hashable Python values or tuples/lists/dicts of them; got an "
                            f"unhashable {type(value).__name__}") from None
        entries.append((path, "value", (type(value), value)))


def training_flags(module) -> tuple:
    """`tuple(m.training for m in module.modules())`, without the generators' per-module
    qualified names (read on every call of a jitted module); kept on the module until any
    module tree changes (`nn.module.tree_epoch`)."""
    epoch = tree_epoch()
    cached = module.__dict__.get("_training_flags")
    if cached is not None and cached[0] == epoch:
        return cached[1]
    flags = _walk_flags(module)
    object.__setattr__(module, "_training_flags", (epoch, flags))
    return flags


def _walk_flags(module) -> tuple:
    flags = []
    seen = set()
    stack = [module]
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        flags.append(m.training)
        children = [c for c in m._modules.values() if c is not None]
        children.reverse()
        stack += children
    return tuple(flags)


def _is_variable(value) -> bool:
    return isinstance(value, Variable)


def _hyperparameters(opt) -> tuple:
    """Each group's hashable settings, but not an `lr` that graphs read from a Variable
    (`ParamGroup.lr_variable`): a schedule changing it needs no retrace."""
    groups = []
    for g in opt.param_groups:
        # values a graph reads from Variables (ParamGroup.runtime_keys) need no retrace
        read_at_run = g.runtime_keys() if hasattr(g, "runtime_keys") else ()
        groups.append(tuple((k, v) for k, v in sorted(g.items())
                            if k != "params" and k not in read_at_run and _hashable(v)))
    return tuple(groups)


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _is_module(value) -> bool:
    return isinstance(value, Module)


def _is_optimizer(value) -> bool:
    return isinstance(value, Optimizer)


def watched_objects(fn) -> tuple:
    """The modules and optimizers `fn` reads through its closure, its globals or `self`: their
    training flags and hyperparameters are part of the signature (the trace bakes them in)."""
    found: list = []
    candidates = [getattr(fn, "__self__", None)]
    code = getattr(fn, "__code__", None)
    if code is not None:
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                candidates.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        scope = getattr(fn, "__globals__", {})
        candidates += [scope.get(name) for name in code.co_names]
    for obj in candidates:
        if isinstance(obj, (Module, Optimizer)) and not any(obj is f for f in found):
            found.append(obj)
    return tuple(found)


def describe_changes(old: tuple, new: tuple) -> list[str]:
    """Human-readable differences between two signatures, e.g. "arg 0: shape (64, 64) ->
    (29, 64)"."""
    before = {path: (kind, detail) for path, kind, detail in old}
    after = {path: (kind, detail) for path, kind, detail in new}
    reasons = []
    for path, (kind, detail) in after.items():
        if path not in before:
            reasons.append(f"{path}: new ({_show(kind, detail)})")
            continue
        old_kind, old_detail = before[path]
        if (old_kind, old_detail) == (kind, detail):
            continue
        if old_kind != kind:
            reasons.append(f"{path}: {_show(old_kind, old_detail)} -> {_show(kind, detail)}")
        elif kind == "tensor":
            (s0, d0, *w0), (s1, d1, *w1) = old_detail, detail
            if s0 != s1:
                reasons.append(f"{path}: shape {s0} -> {s1}")
            if d0 != d1:
                reasons.append(f"{path}: dtype {as_dtype(d0)} -> {as_dtype(d1)}")
            if w0 != w1:
                reasons.append(f"{path}: device {(w0 or ['cpu'])[0]} -> {(w1 or ['cpu'])[0]}")
        elif old_detail[0] != detail[0] and kind in ("module", "optimizer", "variable"):
            reasons.append(f"{path}: another {kind} object")
        elif kind == "module":
            reasons.append(f"{path}: training flags {old_detail[1]} -> {detail[1]}")
        elif kind == "optimizer":
            reasons.append(f"{path}: hyperparameters {_diff_groups(old_detail[1], detail[1])}")
        elif kind == "sequence" and old_detail[0] != detail[0]:
            reasons.append(f"{path}: {old_detail[0].__name__} -> {detail[0].__name__}")
        elif kind != "sequence":  # a length change shows as new/removed items
            reasons.append(f"{path}: {_show(old_kind, old_detail)} -> {_show(kind, detail)}")
    reasons += [f"{path}: removed" for path in before if path not in after]
    return reasons


def _show(kind: str, detail) -> str:
    if kind == "tensor":
        return f"tensor {detail[0]} {as_dtype(detail[1])}"
    if kind == "value":
        return repr(detail[1])
    if kind == "variable":
        return f"Variable {detail[1]} {as_dtype(detail[2])}"
    if kind == "sequence":
        return f"{detail[0].__name__} of {detail[1]}"
    return kind


def _diff_groups(old: tuple, new: tuple) -> str:
    parts = []
    for i, (g0, g1) in enumerate(zip(old, new)):
        d0, d1 = dict(g0), dict(g1)
        for key in d1:
            if d0.get(key) != d1[key]:
                parts.append(f"group {i} {key} {d0.get(key)!r} -> {d1[key]!r}")
    return ", ".join(parts) or f"{len(old)} -> {len(new)} groups"
