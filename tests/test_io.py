"""dj.save / dj.load: bit-identical round trips, clear errors for damaged or mismatched files,
atomic saves, interoperability with the safetensors format."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.errors import CheckpointError, StateDictError


def _model():
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


def _trained(steps=3):
    model = _model()
    opt = dj.optim.Adam(model.parameters(), lr=0.01)
    x, y = dj.randn(6, 4), dj.tensor([0, 1, 2, 0, 1, 2])
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, opt


def test_state_dict_round_trip_is_bit_identical(tmp_path):
    model, _ = _trained()
    path = tmp_path / "model.safetensors"
    dj.save(model.state_dict(), path)
    loaded = dj.load(path)
    assert list(loaded) == list(model.state_dict())
    fresh = _model()
    fresh.load_state_dict(loaded)
    for (k, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items()):
        assert a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes(), k


def test_optimizer_state_round_trips(tmp_path):
    model, opt = _trained()
    dj.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, tmp_path / "c")
    ckpt = dj.load(tmp_path / "c")
    assert ckpt["epoch"] == 3
    saved = ckpt["optim"]
    assert saved["param_groups"][0]["betas"] == (0.9, 0.999)
    assert set(saved["state"]) == {0, 1, 2, 3, 4, 5}  # integer keys come back as integers
    np.testing.assert_array_equal(saved["state"][0]["exp_avg"].numpy(),
                                  opt.state_dict()["state"][0]["exp_avg"].numpy())
    model2 = _model()
    opt2 = dj.optim.Adam(model2.parameters(), lr=0.5)
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == 0.01
    assert opt2.state_dict()["state"][0]["step"].item() == 3


def test_nested_values_and_plain_types(tmp_path):
    obj = {"a": [np.arange(3), (1.5, None, "s")], "b": {"c": np.float64(2.0), 7: True}}
    dj.save(obj, tmp_path / "x")
    back = dj.load(tmp_path / "x")
    np.testing.assert_array_equal(back["a"][0], np.arange(3))
    assert back["a"][1] == (1.5, None, "s") and back["b"][7] is True and back["b"]["c"] == 2.0
    with pytest.raises(TypeError, match="cannot store a function"):
        dj.save({"f": lambda: 0}, tmp_path / "y")


def test_truncated_and_corrupted_files_raise_clear_errors(tmp_path):
    model, _ = _trained(1)
    path = tmp_path / "m"
    dj.save(model.state_dict(), path)
    blob = path.read_bytes()
    for cut in (4, 40, len(blob) - 3):
        (tmp_path / "cut").write_bytes(blob[:cut])
        with pytest.raises(CheckpointError, match="truncated|corrupted"):
            dj.load(tmp_path / "cut")
    flipped = bytearray(blob)
    flipped[-5] ^= 0xFF
    (tmp_path / "flip").write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="checksum"):
        dj.load(tmp_path / "flip")
    (tmp_path / "junk").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(CheckpointError, match="corrupted checkpoint header"):
        dj.load(tmp_path / "junk")


def test_missing_key_and_wrong_shape_files(tmp_path):
    model = _model()
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    del state["3.bias"]
    dj.save(state, tmp_path / "missing")
    with pytest.raises(StateDictError, match="missing key.*'3.bias'"):
        _model().load_state_dict(dj.load(tmp_path / "missing"))
    wrong = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 5))
    dj.save(wrong.state_dict(), tmp_path / "wrong")
    with pytest.raises(StateDictError, match="size mismatch for '3.weight'"):
        _model().load_state_dict(dj.load(tmp_path / "wrong"))


def test_previous_checkpoint_survives_a_failed_save(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    dj.save({"w": np.ones(3)}, path)
    before = path.read_bytes()

    def disk_full(fd):
        raise OSError("No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        dj.save({"w": np.zeros(1000)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt"]  # no temporary file left behind
    np.testing.assert_array_equal(dj.load(path)["w"], np.ones(3))


def test_files_are_safetensors(tmp_path):
    safetensors = pytest.importorskip("safetensors.numpy")
    model = _model()
    dj.save(model.state_dict(), tmp_path / "m.safetensors")
    arrays = safetensors.load_file(str(tmp_path / "m.safetensors"))
    assert sorted(arrays) == sorted(model.state_dict())
    np.testing.assert_array_equal(arrays["0.weight"], model[0].weight.numpy())
    safetensors.save_file({"x": np.arange(4, dtype=np.float32)}, str(tmp_path / "plain"))
    np.testing.assert_array_equal(dj.load(tmp_path / "plain")["x"].numpy(), np.arange(4))
