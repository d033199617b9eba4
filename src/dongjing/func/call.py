"""`functional_call`: a module's forward run with parameters and buffers given by name."""

from __future__ import annotations

from ..nn.module import Module
from ..ops.convert import as_tensor


def _owner(module: Module, name: str):
    *path, leaf = name.split(".")
    for part in path:
        module = module._modules[part]
    return module, leaf


def functional_call(module: Module, parameter_and_buffer_dicts, args=(), kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """`module(*args, **kwargs)` with the named parameters and buffers replaced by the given
    tensors for this call only (gradients flow to the given tensors). With `strict`, every
    parameter and buffer must be given."""
    dicts = parameter_and_buffer_dicts
    values = {}
    for d in dicts if isinstance(dicts, (tuple, list)) else (dicts,):
        for k, v in d.items():
            if k in values:
                raise ValueError(f"functional_call: {k!r} is given twice")
            values[k] = v
    known = dict(module.named_parameters())
    known.update(dict(module.named_buffers()))
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise KeyError(f"functional_call: the module has no parameters or buffers {unknown}")
    if strict and set(known) - set(values):
        raise KeyError(f"functional_call: missing {sorted(set(known) - set(values))} "
                       "(strict=True)")
    saved = []
    try:
        for name, value in values.items():
            owner, leaf = _owner(module, name)
            table = owner._parameters if leaf in owner._parameters else owner._buffers
            saved.append((table, leaf, table[leaf]))
            table[leaf] = as_tensor(value)
        args = args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, leaf, old in reversed(saved):
            table[leaf] = old
