"""`dj.save` / `dj.load`: state dicts (nested dicts, lists, tensors, numbers) in the safetensors
format, with the nesting as JSON metadata and a SHA-256 over the header and the data; saved
atomically, keeping the replaced file's permissions."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import zipfile
from typing import Any, BinaryIO

import numpy as np

from ..backends import backend_of
from ..devices.device import device, placement
from ..errors import ArgumentError, CheckpointError
from ..tensor import Tensor
from . import safetensors_format as fmt
from .atomic import write_atomically

FORMAT = "dongjing-checkpoint-2"
_OLD_FORMAT = "dongjing-checkpoint-1"  # checksum of the data only; still read
_KEY_TYPES = (str, int, float, bool)


def _flatten(obj, path: str, tensors: dict, active: dict | None = None):
    """A JSON-able description of `obj`; its arrays go into `tensors` under dotted names.
    `active`: id -> path of the containers being described (one inside itself is refused)."""
    def store(array: np.ndarray) -> str:
        name, n = path or "value", 1
        while name in tensors:
            name, n = f"{path}#{n}", n + 1
        tensors[name] = array
        return name

    if isinstance(obj, Tensor):
        return {"$tensor": store(_host(obj))}
    if isinstance(obj, np.ndarray):
        return {"$array": store(obj)}
    if isinstance(obj, np.generic):
        return {"$scalar": store(np.asarray(obj))}
    if isinstance(obj, (dict, list, tuple)):
        active = {} if active is None else active
        if id(obj) in active:
            raise ArgumentError(f"dj.save: the {type(obj).__name__} at "
                                f"{active[id(obj)] or 'top level'} contains itself (again at "
                                f"{path}); checkpoints hold trees, not cycles")
        active[id(obj)] = path
        try:
            return _flatten_container(obj, path, tensors, active)
        finally:
            del active[id(obj)]
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"dj.save: cannot store a {type(obj).__name__} (at {path or 'top level'}); "
                    "checkpoints hold dicts, lists, tuples, tensors, arrays, numbers and strings")


def _flatten_container(obj, path: str, tensors: dict, active: dict):
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if not isinstance(key, _KEY_TYPES) and key is not None:
                raise TypeError(f"dj.save: dict key {key!r} at {path or 'top level'} is not a "
                                "string or a number")
            child = f"{path}.{key}" if path else str(key)
            items.append([key, _flatten(value, child, tensors, active)])
        return {"$dict": items}
    kind = "$list" if isinstance(obj, list) else "$tuple"
    return {kind: [_flatten(v, f"{path}.{i}" if path else str(i), tensors, active)
                   for i, v in enumerate(obj)]}


def _host(t: Tensor) -> np.ndarray:
    """The value of `t` in host memory (a copy for a tensor on a device)."""
    data = t._value("dj.save")
    if type(data) is np.ndarray:
        return data
    return np.asarray(backend_of(data).to_numpy(data))


def _unflatten(desc, tensors: dict, where: str):
    """The object `desc` describes; CheckpointError for anything `_flatten` never writes."""
    if isinstance(desc, list):
        raise CheckpointError(f"{where}: corrupted structure metadata (a bare list)")
    if not isinstance(desc, dict):
        return desc
    if len(desc) != 1:
        raise CheckpointError(f"{where}: corrupted structure metadata")
    (kind, body), = desc.items()
    if kind in ("$tensor", "$array", "$scalar"):
        if not isinstance(body, str) or body not in tensors:
            raise CheckpointError(f"{where}: corrupted structure metadata (names a missing "
                                  f"tensor {body!r})")
        array = tensors[body]
        if kind == "$tensor":
            return Tensor._make(array)
        if kind == "$scalar":
            if array.ndim:
                raise CheckpointError(f"{where}: corrupted structure metadata (scalar {body!r} "
                                      f"has shape {array.shape})")
            return array[()]
        return array
    if kind == "$dict":
        if not isinstance(body, list) or not all(
                isinstance(p, list) and len(p) == 2
                and (p[0] is None or isinstance(p[0], _KEY_TYPES)) for p in body):
            raise CheckpointError(f"{where}: corrupted structure metadata ($dict entries must be "
                                  "[key, value] pairs)")
        return {key: _unflatten(value, tensors, where) for key, value in body}
    if kind in ("$list", "$tuple"):
        if not isinstance(body, list):
            raise CheckpointError(f"{where}: corrupted structure metadata ({kind} of a "
                                  f"{type(body).__name__})")
        items = [_unflatten(v, tensors, where) for v in body]
        return items if kind == "$list" else tuple(items)
    raise CheckpointError(f"{where}: unknown entry {kind!r} in the structure metadata")


def _digest(entries: dict | None, structure: str | None, buffers) -> str:
    """SHA-256 of the tensor entries, the structure text and the data (v1: the data only)."""
    h = hashlib.sha256()
    if entries is not None:
        h.update(fmt.canonical_entries(entries))
        h.update(b"\0" + structure.encode("utf-8") + b"\0")
    for b in buffers:
        h.update(b)
    return h.hexdigest()


def save(obj: object, path: str | os.PathLike[str] | BinaryIO) -> None:
    """Write `obj` (a state dict, an optimizer state dict, or any nesting of dicts, lists,
    tensors and numbers) to `path`, atomically: a temporary file renamed over `path`, so a
    failure never leaves a half-written checkpoint in place of the previous one (nor a
    temporary file). An existing file's permissions are kept. `path` may also be a binary file
    object (`io.BytesIO`, an open file), written at its position."""
    tensors: dict = {}
    try:
        structure = json.dumps(_flatten(obj, "", tensors))
    except RecursionError:
        raise ArgumentError("dj.save: the object is nested too deeply to store (thousands of "
                            "levels of dicts, lists or tuples)") from None
    entries, buffers = fmt.encode_data(tensors)
    metadata = {"format": FORMAT, "structure": structure,
                "sha256": _digest(entries, structure, buffers)}
    parts = [fmt.encode_header(entries, metadata), *buffers]
    if hasattr(path, "write"):
        for part in parts:
            path.write(part)
        return
    write_atomically(os.fspath(path), parts)


def load(path: str | os.PathLike[str] | BinaryIO, map_location: str | device | None = None, *,
         weights_only: bool | None = None, mmap: bool | None = None) -> Any:
    """Read a checkpoint written by `dj.save` (tensors come back as dj.Tensors). A plain
    safetensors file loads as a dict of tensors. Never executes code from the file; a truncated,
    corrupted or tampered file (header or data) raises CheckpointError.

    Checkpoints hold host data: tensors load on the CPU, or on `map_location` ("cpu", "cuda",
    "cuda:1", a dj.device) when given. `mmap=True` maps the file instead of reading it (CPU
    tensors only; a path, not a file object): tensor data is read as it is used, and writing to
    a loaded tensor never changes the file. A dongjing checkpoint's checksum is still verified
    first, which reads the file once without keeping it in memory.
    """
    if mmap:
        if hasattr(path, "read"):
            raise ArgumentError("dj.load: mmap=True needs a file path, not a file object")
        if map_location not in (None, "cpu") and not (
                isinstance(map_location, device) and map_location.type == "cpu"):
            raise ArgumentError(f"dj.load: mmap=True maps the file into host memory; it cannot "
                                f"place tensors on {map_location!r} (load, then .to(device))")
        f, size = _open_regular(os.fspath(path))
        with f:
            return _load_open(f, size, os.fspath(path), mapped=True)
    where = _where(map_location)
    if hasattr(path, "read"):  # a file object: read from its position
        data = path.read()
        name = getattr(path, "name", None)
        name = name if isinstance(name, str) else "<file object>"
        if isinstance(data, str):
            raise TypeError(f"dj.load: {name} was opened in text mode; open it with 'rb'")
        result = _load_open(io.BytesIO(data), len(data), name)
    else:
        result = _load(os.fspath(path))
    return result if where is None else _placed(result, where)


def _where(map_location):
    if map_location is None:
        return None
    if not isinstance(map_location, (str, device)):
        raise TypeError(f"dj.load: map_location must be a device ('cpu', 'cuda', 'cuda:1' or a "
                        f"dj.device), got {type(map_location).__name__}")
    where = placement(map_location, "dj.load")
    return None if where.index is None and where.backend.device_type == "cpu" else where


def _placed(obj, where):
    """`obj` with every tensor moved to `where` (a Placement)."""
    if isinstance(obj, Tensor):
        return Tensor._make(where.put(obj._data))
    if isinstance(obj, dict):
        return {k: _placed(v, where) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_placed(v, where) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_placed(v, where) for v in obj)
    return obj


def _open_regular(path: str):
    """`path` opened for reading, only if it is a regular file: a FIFO would block forever, a
    device such as /dev/zero never ends, a directory is no checkpoint. The type is checked
    before opening (opening some devices acts on them) and again on the open file (it may have
    been swapped meanwhile)."""
    def refuse(mode: int):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise CheckpointError(f"dj.load: {path} is {kind}; checkpoints are regular files")

    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        refuse(mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            refuse(st.st_mode)
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def _available_memory() -> int | None:
    """Bytes of memory (and swap) free for new allocations, or None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        return sum(int(info[k].split()[0]) * 1024 for k in ("MemAvailable", "SwapFree"))
    except (OSError, KeyError, ValueError):
        return None


def _check_budget(layout: fmt.Layout, path: str) -> None:
    """Refuse, before allocating, tensors that together cannot fit in memory."""
    free = _available_memory()
    if free is not None and layout.data_len > free:
        raise CheckpointError(f"{path}: the checkpoint's tensors need {layout.data_len} bytes "
                              f"but only {free} bytes of memory are available")


# torch.save's legacy format opens with a pickled magic number (0x1950a86a20f9469cfc6c)
_LEGACY_TORCH = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"


def _refuse_pytorch(f, path: str) -> None:
    """A PyTorch file (torch.save's zip archive or legacy pickle) named as such, instead of
    a baffling "truncated" or "corrupted header"."""
    head = f.read(len(_LEGACY_TORCH))
    what = None
    if head.startswith(b"PK\x03\x04"):
        f.seek(0)
        if zipfile.is_zipfile(f):
            what = "a zip archive of pickled objects"
    elif head.startswith(_LEGACY_TORCH):
        what = "the legacy pickle format"
    f.seek(0)
    if what is not None:
        raise CheckpointError(
            f"{path}: this is a PyTorch checkpoint ({what}, torch.save's format), not a "
            "dongjing one; dongjing never unpickles files. In PyTorch, save the tensors with "
            "safetensors (safetensors.torch.save_file(model.state_dict(), 'w.st')) and dj.load "
            "that file")


def _load(path: str) -> object:
    f, size = _open_regular(path)
    with f:
        return _load_open(f, size, path)


def _tensors(f, layout: fmt.Layout, path: str, mapped: bool) -> dict[str, np.ndarray]:
    """The checkpoint's arrays: memory-mapped from `path`, or read (within the memory budget)."""
    if mapped:
        return fmt.map_tensors(path, layout, path)
    _check_budget(layout, path)
    return fmt.read_tensors(f, layout, path)


def _load_open(f, size: int, path: str, mapped: bool = False) -> object:
    _refuse_pytorch(f, path)
    layout = fmt.read_layout(f, size, path)
    metadata = layout.metadata
    version = metadata.get("format")
    if version not in (FORMAT, _OLD_FORMAT):
        if ("structure" in metadata or "sha256" in metadata
                or str(version).startswith("dongj")):
            raise CheckpointError(f"{path}: corrupted header or unknown checkpoint format "
                                  f"{version!r}")
        tensors = _tensors(f, layout, path, mapped)
        return {name: Tensor._make(array) for name, array in sorted(tensors.items())}
    text = metadata.get("structure")
    if not isinstance(text, str):
        raise CheckpointError(f"{path}: corrupted structure metadata")
    covered = (layout.entries, text) if version == FORMAT else (None, None)
    # verified in chunks before any tensor is allocated: a damaged file costs no memory
    if _digest(*covered, fmt.stream_data(f, layout, path)) != metadata.get("sha256"):
        raise CheckpointError(f"{path}: checksum mismatch: the header or the tensor data "
                              "is corrupted")
    tensors = _tensors(f, layout, path, mapped)
    try:
        return _unflatten(json.loads(text), tensors, path)
    except (ValueError, RecursionError):
        raise CheckpointError(f"{path}: corrupted structure metadata") from None
