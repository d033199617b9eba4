"""Reading an ONNX model for import without trusting it: truncated or corrupted bytes, tensors
whose dims disagree with their data, and "external data" (weights kept in files beside the
model), which is read only from the folder of a model given by path (or from a folder named
explicitly), never through `..`, an absolute path or a symlink leading out of that folder."""

from __future__ import annotations

import os
import re
import stat

import numpy as np

from .errors import OnnxImportError, require_onnx

MAX_TENSOR_BYTES = 2 ** 62  # dims whose product says more than this describe no array


def read_model(model, external_data_dir=None):
    """(ModelProto, folder its external data may be read from or None) of a path, bytes or a
    ModelProto. External data is never loaded here: `tensor_array` reads it, checked."""
    onnx = require_onnx(OnnxImportError)
    from google.protobuf.message import DecodeError  # protobuf: installed with onnx

    folder = None if external_data_dir is None else os.fspath(external_data_dir)
    if isinstance(model, onnx.ModelProto):
        return model, folder
    if isinstance(model, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_from_string(bytes(model)), folder
        except (DecodeError, ValueError) as exc:
            raise OnnxImportError(f"the ONNX bytes do not parse as a model (truncated or "
                                  f"corrupted?): {exc}") from None
    if not isinstance(model, (str, os.PathLike)):
        raise OnnxImportError(f"an ONNX model is a path, bytes or a ModelProto, got "
                              f"{type(model).__name__}")
    path = os.fspath(model)
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise OnnxImportError(f"{path} is not a regular file")
    try:
        proto = onnx.load(path, load_external_data=False)
    except (DecodeError, ValueError) as exc:
        raise OnnxImportError(f"{path} does not parse as an ONNX model (truncated or "
                              f"corrupted?): {exc}") from None
    return proto, folder if folder is not None else os.path.dirname(os.path.abspath(path))


def _element_dtype(tensor, what: str) -> np.dtype:
    helper = require_onnx(OnnxImportError).helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type))
    except (KeyError, TypeError, ValueError):
        raise OnnxImportError(f"{what} {tensor.name!r} has an unknown element type "
                              f"{tensor.data_type}") from None


# typed fields holding one entry per element of a plain numeric type
_ONE_PER_ELEMENT = {"float_data", "int32_data", "int64_data", "double_data", "uint64_data"}


def _check_size(tensor, dtype: np.dtype, what: str) -> int:
    """The element count the dims declare, checked against the data the tensor holds."""
    helper = require_onnx(OnnxImportError).helper

    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        raise OnnxImportError(f"{what} {tensor.name!r} has negative dims {dims}")
    count = 1
    for d in dims:
        count *= d
    if count * dtype.itemsize > MAX_TENSOR_BYTES:
        raise OnnxImportError(f"{what} {tensor.name!r} declares dims {dims}, too large for "
                              "any array")
    if tensor.data_location == tensor.EXTERNAL:
        return count
    if tensor.HasField("raw_data"):
        held, want = len(tensor.raw_data), count * dtype.itemsize
        if dtype.kind in "biufc" and dtype.itemsize and held != want:
            raise OnnxImportError(f"{what} {tensor.name!r}: dims {dims} ({dtype}) need {want} "
                                  f"bytes of data, but it holds {held}")
        return count
    field = helper.tensor_dtype_to_field(tensor.data_type)
    if (dtype.kind in "biuf" and field in _ONE_PER_ELEMENT  # not packed or complex types
            and len(getattr(tensor, field)) != count):
        raise OnnxImportError(f"{what} {tensor.name!r}: dims {dims} need {count} values, but "
                              f"it holds {len(getattr(tensor, field))}")
    return count


def _contained(folder: str, location: str, name: str) -> str:
    """The real path of `location` inside `folder`, refused if it could lead elsewhere."""
    parts = re.split(r"[\\/]", location)
    if not location or os.path.isabs(location) or re.match(r"^[A-Za-z]:", location) \
            or ".." in parts or "\0" in location:
        raise OnnxImportError(f"initializer {name!r}: external data location {location!r} "
                              "must be a plain relative path inside the model's folder")
    base = os.path.realpath(folder)
    real = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([base, real]) != base:
        raise OnnxImportError(f"initializer {name!r}: external data {location!r} leads out of "
                              f"the model's folder {folder} (a symlink?)")
    return real


def _external_bytes(tensor, folder: str | None, want: int, what: str) -> bytes:
    name = tensor.name
    info = {entry.key: entry.value for entry in tensor.external_data}
    if folder is None:
        raise OnnxImportError(
            f"{what} {name!r} keeps its data in an external file ({info.get('location')!r}), "
            "but the model was given as bytes or a ModelProto: give the model's path, or "
            "external_data_dir= naming the folder that holds its data")
    path = _contained(folder, info.get("location", ""), name)
    try:
        offset = int(info.get("offset", 0))
        length = int(info.get("length", want))
    except ValueError:
        raise OnnxImportError(f"{what} {name!r}: external data offset/length are not "
                              "integers") from None
    if length != want or offset < 0:
        raise OnnxImportError(f"{what} {name!r}: external data of {length} bytes at offset "
                              f"{offset}, but its dims need {want} bytes")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise OnnxImportError(f"{what} {name!r}: cannot open its external data: {exc}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OnnxImportError(f"{what} {name!r}: external data {path} is not a regular file")
        end = offset + length
        if end > st.st_size:
            raise OnnxImportError(f"{what} {name!r}: external data bytes {offset}..{end} lie "
                                  f"beyond the end of {path} ({st.st_size} bytes)")
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:
        raise OnnxImportError(f"{what} {name!r}: {path} changed while it was read")
    return data


def tensor_array(tensor, folder: str | None, what: str = "initializer") -> np.ndarray:
    """The NumPy value of a TensorProto, after checking its dims against its data; external
    data only from `folder` (see the module docstring)."""
    numpy_helper = require_onnx(OnnxImportError).numpy_helper

    dtype = _element_dtype(tensor, what)
    count = _check_size(tensor, dtype, what)
    if tensor.data_location == tensor.EXTERNAL:
        inline = type(tensor)()
        inline.CopyFrom(tensor)
        del inline.external_data[:]
        inline.data_location = tensor.DEFAULT
        inline.raw_data = _external_bytes(tensor, folder, count * dtype.itemsize, what)
        tensor = inline
    try:
        return numpy_helper.to_array(tensor).copy()
    except (ValueError, TypeError) as exc:
        raise OnnxImportError(f"{what} {tensor.name!r} cannot be read: {exc}") from None
