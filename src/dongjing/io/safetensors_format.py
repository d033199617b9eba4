"""The safetensors file layout, read and written with NumPy only: an 8-byte little-endian header
length, a JSON header (dtype, shape, byte range of each tensor; string metadata), then the raw
little-endian bytes. Reading parses JSON and reads each tensor's bytes from the open file; it
never executes anything, and every field is validated before use (the header's length against a
budget, every shape and byte range against the file's length), so nothing is allocated or read
that the file does not hold."""

from __future__ import annotations

import json

import numpy as np

from ..dtypes import bfloat16
from ..errors import CheckpointError

_CODES = {code: np.dtype(text) for code, text in {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
    "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}.items()}
if bfloat16 is not None:  # safetensors' BF16 (ml_dtypes' dtype is little-endian in memory)
    _CODES["BF16"] = bfloat16
_NAMES = {v: k for k, v in _CODES.items()}
# dtypes the safetensors format defines that dongjing has no tensor dtype for (8-bit floats,
# complex, bfloat16 without ml_dtypes): named as such, never called corruption
_FORMAT_CODES = {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64", "I4", "U4",
                 "BF16"}
_MAX_NDIM = 64
MAX_HEADER = 100_000_000  # bytes of JSON header a file may declare (safetensors' own bound)
_MAX_ARRAY_BYTES = 2 ** 62  # a shape's nonzero dims times the itemsize: NumPy's own bound


def encode_data(tensors: dict[str, np.ndarray]) -> tuple[dict, list]:
    """The header entries and the data buffers of `tensors`, in file order (sorted names)."""
    entries, buffers, offset = {}, [], 0
    for name in sorted(tensors):
        array = tensors[name]
        code = _NAMES.get(array.dtype.newbyteorder("=") if array.dtype.byteorder == ">"
                          else array.dtype)
        if code is None:
            raise TypeError(f"dj.save: tensor {name!r} has dtype {array.dtype}, which the "
                            "checkpoint format cannot store")
        data = np.ascontiguousarray(array, dtype=_CODES[code]).tobytes()
        entries[name] = {"dtype": code, "shape": list(array.shape),
                         "data_offsets": [offset, offset + len(data)]}
        buffers.append(data)
        offset += len(data)
    return entries, buffers


def encode_header(entries: dict, metadata: dict[str, str]) -> bytes:
    """The length prefix and the JSON header, padded so the data starts 8-byte aligned."""
    text = json.dumps({"__metadata__": metadata, **entries}, separators=(",", ":"))
    text = text.encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def canonical_entries(entries: dict) -> bytes:
    """The tensor entries as canonical JSON bytes, so a checksum can cover the header."""
    return json.dumps(entries, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _entry(name: str, entry, data_len: int, where: str) -> tuple[np.dtype, tuple, int, int]:
    """(dtype, shape, start, stop) of one header entry, validated against the data length."""
    bad = f"{where}: corrupted checkpoint header: tensor {name!r}"
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise CheckpointError(f"{bad} needs exactly dtype, shape and data_offsets")
    code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if isinstance(code, str) and code in _FORMAT_CODES and code not in _CODES:
        hint = " (pip install ml_dtypes)" if code == "BF16" else ""
        raise CheckpointError(
            f"{where}: tensor {name!r} is stored as {code}, a safetensors dtype dongjing cannot "
            f"hold{hint}; it reads {', '.join(sorted(_CODES))}")
    if not isinstance(code, str) or code not in _CODES:
        raise CheckpointError(f"{bad} has an unknown dtype {code!r}")
    if (not isinstance(shape, list) or len(shape) > _MAX_NDIM
            or not all(_is_int(d) and d >= 0 for d in shape)):
        raise CheckpointError(f"{bad} has an invalid shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_int, offsets))):
        raise CheckpointError(f"{bad} has invalid data_offsets {offsets!r}")
    dtype, (start, stop) = _CODES[code], offsets
    count, nonzero = 1, 1
    for d in shape:  # Python ints: a huge declared shape cannot overflow, only mismatch
        count *= d
        nonzero *= max(d, 1)
    if not 0 <= start <= stop <= data_len or stop - start != dtype.itemsize * count:
        raise CheckpointError(f"{where}: tensor {name!r} of shape {shape} ({code}) does not fit "
                              f"the file's data (bytes {start}..{stop} of {data_len}; truncated?)")
    if nonzero * dtype.itemsize > _MAX_ARRAY_BYTES:  # NumPy cannot hold such a shape, even empty
        raise CheckpointError(f"{bad} declares a shape {shape} too large for any array")
    return dtype, tuple(shape), start, stop


class Layout:
    """A validated header: `metadata`, the raw `entries` (for the checksum), and `tensors`,
    name -> (dtype, shape, start, stop) in file order; the data section is the file's bytes
    from `data_start` on, `data_len` long."""

    def __init__(self, metadata: dict, entries: dict, tensors: dict, data_start: int,
                 data_len: int):
        self.metadata, self.entries, self.tensors = metadata, entries, tensors
        self.data_start, self.data_len = data_start, data_len


def _read_exactly(f, count: int, where: str) -> bytes:
    blob = f.read(count)
    if len(blob) != count:  # the file shrank while it was read
        raise CheckpointError(f"{where}: the file changed while it was read (truncated?)")
    return blob


def read_layout(f, file_size: int, where: str) -> Layout:
    """The validated header of the open file `f` (of `file_size` bytes); nothing of the data
    section is read. CheckpointError for anything malformed, before any large allocation."""
    if file_size < 8:
        raise CheckpointError(f"{where}: not a checkpoint (only {file_size} bytes; truncated?)")
    size = int.from_bytes(_read_exactly(f, 8, where), "little")
    if size > file_size - 8:
        raise CheckpointError(f"{where}: truncated or not a checkpoint (header of {size} bytes "
                              f"in a file of {file_size})")
    if size > MAX_HEADER:
        raise CheckpointError(f"{where}: header of {size} bytes is larger than the "
                              f"{MAX_HEADER}-byte limit (corrupted or not a checkpoint)")
    try:
        header = json.loads(_read_exactly(f, size, where).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"{where}: corrupted checkpoint header ({exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: corrupted checkpoint header (not a JSON object)")
    data_len = file_size - 8 - size
    metadata = header.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise CheckpointError(f"{where}: corrupted checkpoint header (__metadata__ must map "
                              "strings to strings)")
    tensors = {name: _entry(name, entry, data_len, where) for name, entry in header.items()}
    spans = sorted((start, stop, name) for name, (_, _, start, stop) in tensors.items())
    end = 0
    for start, stop, name in spans:
        if start < end:
            raise CheckpointError(f"{where}: tensor {name!r} (bytes {start}..{stop}) overlaps "
                                  "another tensor's bytes (corrupted checkpoint header)")
        end = stop
    if end != data_len:
        raise CheckpointError(f"{where}: {data_len - end} bytes after the last tensor "
                              "(corrupted or not a checkpoint)")
    return Layout(metadata, header, tensors, 8 + size, data_len)


def stream_data(f, layout: Layout, where: str, chunk: int = 1 << 20):
    """The data section of `f` in chunks of at most `chunk` bytes (for a checksum that never
    holds the whole section in memory)."""
    f.seek(layout.data_start)
    left = layout.data_len
    while left:
        piece = f.read(min(chunk, left))
        if not piece:
            raise CheckpointError(f"{where}: the file changed while it was read (truncated?)")
        left -= len(piece)
        yield piece


def map_tensors(path: str, layout: Layout, where: str) -> dict[str, np.ndarray]:
    """Each tensor of `layout` as a copy-on-write memory map of the file at `path`: nothing is
    read until used, and writing to a tensor never changes the file (PyTorch's `mmap=True`)."""
    out = {}
    for name, (dtype, shape, start, stop) in layout.tensors.items():
        if stop == start:  # an empty tensor: nothing to map
            out[name] = np.empty(shape, dtype if dtype.isnative else dtype.newbyteorder("="))
            continue
        array = np.memmap(path, dtype=dtype, mode="c", offset=layout.data_start + start,
                          shape=shape)
        if dtype == np.bool_ and array.view(np.uint8).max() > 1:
            raise CheckpointError(f"{where}: tensor {name!r} holds bytes that are not booleans")
        # a plain ndarray over the map (it keeps the map open): tensors hold exact ndarrays
        out[name] = (array.view(np.ndarray) if dtype.isnative
                     else np.asarray(array).astype(dtype.newbyteorder("=")))
    return out


def read_tensors(f, layout: Layout, where: str) -> dict[str, np.ndarray]:
    """Each tensor of `layout`, read from `f` into its own native-endian array."""
    out = {}
    for name, (dtype, shape, start, stop) in layout.tensors.items():
        raw = np.empty(stop - start, np.uint8)
        f.seek(layout.data_start + start)
        if f.readinto(raw) != raw.size:
            raise CheckpointError(f"{where}: the file changed while it was read (truncated?)")
        if dtype == np.bool_ and raw.size and raw.max() > 1:
            raise CheckpointError(f"{where}: tensor {name!r} holds bytes that are not booleans")
        array = raw.view(dtype).reshape(shape)
        out[name] = array if dtype.isnative else array.astype(dtype.newbyteorder("="))
    return out
