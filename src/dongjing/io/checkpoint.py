"""`dj.save` / `dj.load`: state dicts (nested dicts, lists, tensors, numbers) in the safetensors
format, with the nesting as JSON metadata and a SHA-256 of the data; saved atomically."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

import numpy as np

from ..errors import CheckpointError
from ..tensor import Tensor
from . import safetensors_format as fmt

FORMAT = "dongjing-checkpoint-1"


def _flatten(obj, path: str, tensors: dict):
    """A JSON-able description of `obj`; its arrays go into `tensors` under dotted names."""
    def store(array: np.ndarray) -> str:
        name, n = path or "value", 1
        while name in tensors:
            name, n = f"{path}#{n}", n + 1
        tensors[name] = array
        return name

    if isinstance(obj, Tensor):
        return {"$tensor": store(np.asarray(obj.numpy()))}
    if isinstance(obj, np.ndarray):
        return {"$array": store(obj)}
    if isinstance(obj, np.generic):
        return {"$scalar": store(np.asarray(obj))}
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise TypeError(f"dj.save: dict key {key!r} at {path or 'top level'} is not a "
                                "string or a number")
            child = f"{path}.{key}" if path else str(key)
            items.append([key, _flatten(value, child, tensors)])
        return {"$dict": items}
    if isinstance(obj, (list, tuple)):
        kind = "$list" if isinstance(obj, list) else "$tuple"
        return {kind: [_flatten(v, f"{path}.{i}" if path else str(i), tensors)
                       for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"dj.save: cannot store a {type(obj).__name__} (at {path or 'top level'}); "
                    "checkpoints hold dicts, lists, tuples, tensors, arrays, numbers and strings")


def _unflatten(desc, tensors: dict, where: str):
    if isinstance(desc, dict):
        if len(desc) != 1:
            raise CheckpointError(f"{where}: corrupted structure metadata")
        (kind, body), = desc.items()
        if kind in ("$tensor", "$array", "$scalar"):
            if body not in tensors:
                raise CheckpointError(f"{where}: the structure names a missing tensor {body!r}")
            array = tensors[body]
            if kind == "$tensor":
                return Tensor._make(array)
            return array if kind == "$array" else array[()]
        if kind == "$dict":
            return {key: _unflatten(value, tensors, where) for key, value in body}
        if kind in ("$list", "$tuple"):
            items = [_unflatten(v, tensors, where) for v in body]
            return items if kind == "$list" else tuple(items)
        raise CheckpointError(f"{where}: unknown entry {kind!r} in the structure metadata")
    return desc


def _digest(buffers) -> str:
    h = hashlib.sha256()
    for b in buffers:
        h.update(b)
    return h.hexdigest()


def save(obj: object, path: str | os.PathLike) -> None:
    """Write `obj` (a state dict, an optimizer state dict, or any nesting of dicts, lists,
    tensors and numbers) to `path`, atomically: a temporary file renamed over `path`, so a
    failure never leaves a half-written checkpoint in place of the previous one."""
    path = os.fspath(path)
    tensors: dict = {}
    structure = _flatten(obj, "", tensors)
    entries, buffers = fmt.encode_data(tensors)
    metadata = {"format": FORMAT, "structure": json.dumps(structure),
                "sha256": _digest(buffers)}
    header = fmt.encode_header(entries, metadata)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(header)
            for b in buffers:
                f.write(b)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load(path: str | os.PathLike) -> object:
    """Read a checkpoint written by `dj.save` (tensors come back as dj.Tensors). A plain
    safetensors file loads as a dict of tensors. Never executes code from the file; a truncated
    or corrupted file raises CheckpointError."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        blob = f.read()
    tensors, metadata, data = fmt.decode(blob, path)
    if metadata.get("format") != FORMAT:
        return {name: Tensor._make(array) for name, array in sorted(tensors.items())}
    if _digest([data]) != metadata.get("sha256"):
        raise CheckpointError(f"{path}: checksum mismatch: the tensor data is corrupted")
    try:
        structure = json.loads(metadata["structure"])
    except (KeyError, json.JSONDecodeError):
        raise CheckpointError(f"{path}: corrupted structure metadata") from None
    return _unflatten(structure, tensors, path)
