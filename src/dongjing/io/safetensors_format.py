"""The safetensors file layout, read and written with NumPy only: an 8-byte little-endian header
length, a JSON header (dtype, shape, byte range of each tensor; string metadata), then the raw
little-endian bytes. Reading parses JSON and copies bytes; it never executes anything, and every
field is validated before use (sizes against the file's length, so nothing huge is allocated)."""

from __future__ import annotations

import json

import numpy as np

from ..errors import CheckpointError

_CODES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
          "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?"}
_NAMES = {np.dtype(v): k for k, v in _CODES.items()}
_MAX_NDIM = 64


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
    if not isinstance(code, str) or code not in _CODES:
        raise CheckpointError(f"{bad} has an unknown dtype {code!r}")
    if (not isinstance(shape, list) or len(shape) > _MAX_NDIM
            or not all(_is_int(d) and d >= 0 for d in shape)):
        raise CheckpointError(f"{bad} has an invalid shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_int, offsets))):
        raise CheckpointError(f"{bad} has invalid data_offsets {offsets!r}")
    dtype, (start, stop) = np.dtype(_CODES[code]), offsets
    count = 1
    for d in shape:  # Python ints: a huge declared shape cannot overflow, only mismatch
        count *= d
    if not 0 <= start <= stop <= data_len or stop - start != dtype.itemsize * count:
        raise CheckpointError(f"{where}: tensor {name!r} does not fit the file's data "
                              f"(bytes {start}..{stop} of {data_len}; truncated?)")
    return dtype, tuple(shape), start, stop


def decode(blob: bytes, where: str) -> tuple[dict[str, np.ndarray], dict[str, str], bytes, dict]:
    """(tensors, metadata, data section, raw entries) of a whole file's bytes;
    CheckpointError if anything in it is malformed."""
    if len(blob) < 8:
        raise CheckpointError(f"{where}: not a checkpoint (only {len(blob)} bytes; truncated?)")
    size = int.from_bytes(blob[:8], "little")
    if size > len(blob) - 8:
        raise CheckpointError(f"{where}: truncated or not a checkpoint (header of {size} bytes "
                              f"in a file of {len(blob)})")
    try:
        header = json.loads(blob[8:8 + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"{where}: corrupted checkpoint header ({exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{where}: corrupted checkpoint header (not a JSON object)")
    data = blob[8 + size:]
    metadata = header.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise CheckpointError(f"{where}: corrupted checkpoint header (__metadata__ must map "
                              "strings to strings)")
    tensors, end = {}, 0
    for name, entry in header.items():
        dtype, shape, start, stop = _entry(name, entry, len(data), where)
        raw = np.frombuffer(data, np.uint8, count=stop - start, offset=start)
        if dtype == np.bool_ and raw.size and raw.max() > 1:
            raise CheckpointError(f"{where}: tensor {name!r} holds bytes that are not booleans")
        tensors[name] = raw.view(dtype).reshape(shape).astype(dtype.newbyteorder("="))
        end = max(end, stop)
    if end != len(data):
        raise CheckpointError(f"{where}: {len(data) - end} bytes after the last tensor "
                              "(corrupted or not a checkpoint)")
    return tensors, metadata, data, header
