"""Hostile checkpoints: every tampered, malformed or truncated file raises CheckpointError (never
a raw Python error, a silent wrong load or a huge allocation); saves are atomic, sweep the
temporaries of crashed saves and keep the file's permissions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import CheckpointError
from dongjing.io import checkpoint
from dongjing.io import safetensors_format as fmt


def _blob(entries: dict, metadata, data: bytes) -> bytes:
    return fmt.encode_header(entries, metadata) + data


def _signed(entries: dict, structure, data: bytes) -> bytes:
    """A file with a *valid* checksum, so the loader's own validation is what is tested."""
    text = structure if isinstance(structure, str) else json.dumps(structure)
    digest = checkpoint._digest(entries, text, [data])
    return _blob(entries, {"format": checkpoint.FORMAT, "structure": text, "sha256": digest}, data)


def _load_bytes(tmp_path, blob: bytes, name="f"):
    """dj.load of `blob`; the error message without the path (which holds the test's name)."""
    path = tmp_path / name
    path.write_bytes(blob)
    try:
        return dj.load(path)
    except CheckpointError as exc:
        raise CheckpointError(str(exc).replace(str(path), "<file>")) from None


def _parts(obj):
    tensors: dict = {}
    structure = checkpoint._flatten(obj, "", tensors)
    entries, buffers = fmt.encode_data(tensors)
    return entries, structure, b"".join(buffers)


def test_header_edits_are_caught_by_the_checksum(tmp_path):
    path = tmp_path / "c"
    dj.save({"w": np.arange(6, dtype=np.float32).reshape(2, 3), "epoch": 3}, path)
    blob = path.read_bytes()
    for old, new in ((b"[2,3]", b"[3,2]"), (b'"F32"', b'"I32"'), (b"3]]", b"4]]")):
        assert old in blob, old
        with pytest.raises(CheckpointError, match="checksum"):
            _load_bytes(tmp_path, blob.replace(old, new, 1), "edited")


def test_every_single_byte_flip_is_detected(tmp_path):
    path = tmp_path / "c"
    obj = {"w": np.arange(3, dtype=np.float32), "n": 2}
    dj.save(obj, path)
    blob = path.read_bytes()
    for i in range(len(blob)):
        flipped = bytearray(blob)
        flipped[i] ^= 0x5A
        try:
            back = _load_bytes(tmp_path, bytes(flipped), "flip")
        except CheckpointError:
            continue
        # only JSON whitespace may change without meaning
        assert back["n"] == 2 and back["w"].tolist() == [0, 1, 2], i


def test_every_truncation_is_detected(tmp_path):
    path = tmp_path / "c"
    dj.save({"w": np.arange(3.0)}, path)
    blob = path.read_bytes()
    for cut in range(len(blob)):
        with pytest.raises(CheckpointError):
            _load_bytes(tmp_path, blob[:cut], "cut")


_ENTRY_EDITS = [
    {"shape": [-1, -3]}, {"shape": [3.0]}, {"shape": [True, 3]}, {"shape": "3"}, {"shape": None},
    {"shape": [2 ** 40, 2 ** 40]}, {"shape": [0] * 100}, {"dtype": "F128"}, {"dtype": 5},
    {"data_offsets": [8, 0]}, {"data_offsets": [-8, 0]}, {"data_offsets": [0, 2 ** 62]},
    {"data_offsets": [0]}, {"data_offsets": "0,24"}, {"data_offsets": [0.0, 24.0]},
    {"extra": 1},
]


@pytest.mark.parametrize("edit", _ENTRY_EDITS, ids=str)
def test_malformed_tensor_entries_raise_checkpoint_error(tmp_path, edit):
    entries, structure, data = _parts({"w": np.arange(3.0)})
    entries["w"].update(edit)
    with pytest.raises(CheckpointError, match="w"):
        _load_bytes(tmp_path, _signed(entries, structure, data))
    with pytest.raises(CheckpointError):  # a plain safetensors file is validated the same way
        _load_bytes(tmp_path, _blob(entries, {}, data))


@pytest.mark.parametrize("entry", [5, "x", [1, 2], None, {}], ids=repr)
def test_non_object_entries_raise(tmp_path, entry):
    with pytest.raises(CheckpointError):
        _load_bytes(tmp_path, _blob({"w": entry}, {}, b""))


@pytest.mark.parametrize("metadata", ["text", 5, [1], {"format": 2}, {"a": None}], ids=repr)
def test_malformed_metadata_raises(tmp_path, metadata):
    with pytest.raises(CheckpointError, match="__metadata__"):
        _load_bytes(tmp_path, _blob({}, metadata, b""))


_STRUCTURES = [
    {"$dict": 5}, {"$dict": [[1]]}, {"$dict": [5]}, {"$dict": [[[1], 2]]}, {"$dict": None},
    {"$list": 5}, {"$tuple": "ab"}, {"$tensor": 5}, {"$tensor": ["w"]}, {"$array": "nope"},
    {"$scalar": "w"}, {"$what": 1}, {"a": 1, "b": 2}, [1, 2], "[[[[" * 30000,
    "[" * 100000 + "]" * 100000, "not json",
]


@pytest.mark.parametrize("structure", _STRUCTURES, ids=lambda s: repr(s)[:40])
def test_malformed_structures_raise_checkpoint_error(tmp_path, structure):
    entries, _, data = _parts({"w": np.arange(3.0)})
    with pytest.raises(CheckpointError, match="structure"):
        _load_bytes(tmp_path, _signed(entries, structure, data))


@pytest.mark.parametrize("metadata", [{"format": "dongjing-checkpoint-9"},
                                      {"formax": "dongjing-checkpoint-2", "structure": "1"},
                                      {"sha256": "00"}], ids=str)
def test_damaged_format_tags_do_not_load_as_plain_files(tmp_path, metadata):
    entries, _, data = _parts({"w": np.arange(3.0)})
    with pytest.raises(CheckpointError, match="format"):
        _load_bytes(tmp_path, _blob(entries, metadata, data))


def test_huge_declared_sizes_never_allocate(tmp_path):
    too_long = (2 ** 63).to_bytes(8, "little") + b"{}"
    with pytest.raises(CheckpointError, match="truncated"):
        _load_bytes(tmp_path, too_long)
    with pytest.raises(CheckpointError, match="truncated"):
        _load_bytes(tmp_path, (2 ** 64 - 1).to_bytes(8, "little"))
    entries = {"w": {"dtype": "F64", "shape": [2 ** 31, 2 ** 31], "data_offsets": [0, 2 ** 65]}}
    with pytest.raises(CheckpointError, match="does not fit"):
        _load_bytes(tmp_path, _blob(entries, {}, b"\0" * 8))


def test_invalid_bool_bytes_and_bad_utf8(tmp_path):
    entries = {"b": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}
    with pytest.raises(CheckpointError, match="booleans"):
        _load_bytes(tmp_path, _blob(entries, {}, b"\x01\x07"))
    header = b'{"\xff":1}'
    with pytest.raises(CheckpointError, match="header"):
        _load_bytes(tmp_path, len(header).to_bytes(8, "little") + header)


def test_version_1_checkpoints_still_load(tmp_path):
    entries, structure, data = _parts({"w": np.arange(3.0), "k": [1, "a"]})
    text = json.dumps(structure)
    meta = {"format": "dongjing-checkpoint-1", "structure": text,
            "sha256": checkpoint._digest(None, None, [data])}
    back = _load_bytes(tmp_path, _blob(entries, meta, data))
    assert back["k"] == [1, "a"] and back["w"].tolist() == [0.0, 1.0, 2.0]


def test_empty_and_zero_sized_tensors_round_trip(tmp_path):
    obj = {"e": np.zeros((0, 3), np.float32), "s": np.float32(2.5), "t": dj.zeros(2, 0)}
    dj.save(obj, tmp_path / "z")
    back = dj.load(tmp_path / "z")
    assert back["e"].shape == (0, 3) and back["s"] == 2.5 and back["t"].shape == (2, 0)


def test_save_keeps_the_existing_file_mode(tmp_path):
    path = tmp_path / "m"
    for mode in (0o644, 0o600, 0o640):
        path.write_bytes(b"old")
        os.chmod(path, mode)
        dj.save({"w": np.ones(2)}, path)
        assert os.stat(path).st_mode & 0o777 == mode
    new = tmp_path / "new"
    mask = os.umask(0o022)
    try:
        dj.save({"w": np.ones(2)}, new)
    finally:
        os.umask(mask)
    assert os.stat(new).st_mode & 0o777 == 0o644


def test_stale_temporaries_of_dead_processes_are_swept(tmp_path):
    path = tmp_path / "ckpt"
    dead = tmp_path / f".ckpt.{2 ** 30 + 7}.abc123.tmp"  # no such pid (above pid_max)
    live = tmp_path / f".ckpt.{os.getppid()}.def456.tmp"  # a running process may be saving
    other = tmp_path / f".other.{2 ** 30 + 7}.abc.tmp"
    for f in (dead, live, other):
        f.write_bytes(b"x" * 100)
    dj.save({"w": np.ones(2)}, path)
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt", live.name, other.name])


def test_a_process_killed_mid_save_leaves_the_old_file_and_its_temporary_is_swept(tmp_path):
    path = tmp_path / "ckpt"
    dj.save({"w": np.ones(3)}, path)
    before = path.read_bytes()
    code = ("import os, numpy as np, dongjing as dj\n"
            "os.fsync = lambda fd: os._exit(9)\n"
            f"dj.save({{'w': np.zeros(100000)}}, {str(path)!r})\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 9
    assert path.read_bytes() == before and len(os.listdir(tmp_path)) == 2  # an orphan is left
    dj.save({"w": np.full(3, 2.0)}, path)
    assert os.listdir(tmp_path) == ["ckpt"]
    np.testing.assert_array_equal(dj.load(path)["w"], np.full(3, 2.0))
