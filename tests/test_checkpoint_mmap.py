"""dj.load(mmap=True) maps the file (copy-on-write), and a safetensors dtype dongjing cannot
hold is named, not called corruption."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import ArgumentError, CheckpointError


def _state():
    rng = np.random.default_rng(0)
    return {"w": dj.tensor(rng.standard_normal((3, 4)).astype(np.float32)),
            "nested": {"mask": dj.tensor([True, False, True]), "empty": dj.zeros(0, 2)},
            "step": 7}


def test_a_mapped_checkpoint_equals_a_read_one(tmp_path):
    path = tmp_path / "state.ckpt"
    dj.save(_state(), path)
    mapped, read = dj.load(path, mmap=True), dj.load(path)
    assert mapped["step"] == read["step"] == 7
    for get in (lambda s: s["w"], lambda s: s["nested"]["mask"], lambda s: s["nested"]["empty"]):
        a, b = get(mapped), get(read)
        assert type(a._data) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not mapped["w"]._data.flags.owndata  # a view of the map, not a copy


def test_writing_a_mapped_tensor_leaves_the_file_alone(tmp_path):
    path = tmp_path / "state.ckpt"
    dj.save(_state(), path)
    before = path.read_bytes()
    mapped = dj.load(path, mmap=True)
    mapped["w"].add_(1.0)
    (mapped["w"] * 2).sum()
    assert path.read_bytes() == before
    np.testing.assert_array_equal(dj.load(path)["w"].numpy(), _state()["w"].numpy())


def test_a_plain_safetensors_file_maps_too(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    arrays = {"a": np.arange(6, dtype=np.float64).reshape(2, 3), "b": np.ones(4, np.int32)}
    st.save_file(arrays, str(tmp_path / "plain.safetensors"))
    loaded = dj.load(tmp_path / "plain.safetensors", mmap=True)
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name].numpy(), array)


def test_a_tampered_checkpoint_is_refused_when_mapped(tmp_path):
    path = tmp_path / "state.ckpt"
    dj.save(_state(), path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum"):
        dj.load(path, mmap=True)


def test_mmap_needs_a_path_on_the_cpu(tmp_path):
    path = tmp_path / "state.ckpt"
    dj.save(_state(), path)
    with open(path, "rb") as f, pytest.raises(ArgumentError, match="file path"):
        dj.load(f, mmap=True)
    with pytest.raises(ArgumentError, match="cuda"):
        dj.load(path, map_location="cuda", mmap=True)


def _one_tensor_file(path, code: str) -> None:
    header = json.dumps({"x": {"dtype": code, "shape": [2], "data_offsets": [0, 2]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0\0")


@pytest.mark.parametrize("code", ["F8_E4M3", "F8_E5M2", "C64"])
def test_a_dtype_dongjing_cannot_hold_is_named(tmp_path, code):
    path = tmp_path / "x.safetensors"
    _one_tensor_file(path, code)
    with pytest.raises(CheckpointError, match=f"stored as {code}, a safetensors dtype") as info:
        dj.load(path)
    assert "corrupt" not in str(info.value)


def test_an_unknown_dtype_code_is_still_corruption(tmp_path):
    path = tmp_path / "x.safetensors"
    _one_tensor_file(path, "Q7")
    with pytest.raises(CheckpointError, match="unknown dtype 'Q7'"):
        dj.load(path)
