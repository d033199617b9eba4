"""The safetensors file layout, read and written with NumPy only: an 8-byte little-endian header
length, a JSON header (dtype, shape, byte range of each tensor; string metadata), then the raw
little-endian bytes. Reading parses JSON and copies bytes; it never executes anything."""

from __future__ import annotations

import json

import numpy as np

from ..errors import CheckpointError

_CODES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
          "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}
_NAMES = {np.dtype(v): k for k, v in _CODES.items()}


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


def decode(blob: bytes, where: str) -> tuple[dict[str, np.ndarray], dict[str, str], bytes]:
    """(tensors, metadata, data section) of a whole file's bytes; CheckpointError if malformed."""
    if len(blob) < 8:
        raise CheckpointError(f"{where}: not a checkpoint (only {len(blob)} bytes; truncated?)")
    size = int.from_bytes(blob[:8], "little")
    if size > len(blob) - 8:
        raise CheckpointError(f"{where}: truncated or not a checkpoint (header of {size} bytes "
                              f"in a file of {len(blob)})")
    try:
        header = json.loads(blob[8:8 + size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{where}: corrupted checkpoint header ({exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: corrupted checkpoint header (not a JSON object)")
    data = blob[8 + size:]
    metadata = header.pop("__metadata__", None) or {}
    tensors, end = {}, 0
    for name, entry in header.items():
        try:
            dtype = np.dtype(_CODES[entry["dtype"]])
            shape = tuple(int(d) for d in entry["shape"])
            start, stop = (int(v) for v in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{where}: corrupted entry for tensor {name!r}") from None
        if start < 0 or stop > len(data) or stop - start != dtype.itemsize * int(np.prod(shape)):
            raise CheckpointError(f"{where}: tensor {name!r} does not fit the file's data "
                                  f"(bytes {start}..{stop} of {len(data)}; truncated?)")
        tensors[name] = np.frombuffer(data, dtype, count=int(np.prod(shape)),
                                      offset=start).reshape(shape).astype(dtype.newbyteorder("="))
        end = max(end, stop)
    if end != len(data):
        raise CheckpointError(f"{where}: {len(data) - end} bytes after the last tensor "
                              "(corrupted or not a checkpoint)")
    return tensors, metadata, data
