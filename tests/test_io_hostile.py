"""Hostile inputs to dj.load / dj.save that once cost unbounded memory or time, or raised raw
Python errors: non-regular files (a FIFO, /dev/zero, a directory), huge sparse files, headers
whose sizes or offsets lie, and objects that contain themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import ArgumentError, CheckpointError
from dongjing.io import checkpoint
from dongjing.io import safetensors_format as fmt

posix_only = pytest.mark.skipif(os.name != "posix", reason="needs POSIX files")


def _write(path, entries: dict, metadata: dict, data: bytes = b"") -> None:
    path.write_bytes(fmt.encode_header(entries, metadata) + data)


@posix_only
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(CheckpointError, match="FIFO"):  # would block forever if opened
        dj.load(fifo)


@posix_only
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_symlink_to_dev_zero_is_refused(tmp_path):
    link = tmp_path / "zeros.ckpt"
    os.symlink("/dev/zero", link)
    with pytest.raises(CheckpointError, match="device"):
        dj.load(link)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="directory"):
        dj.load(tmp_path)


def test_a_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        dj.load(tmp_path / "absent")


_PEAK_SCRIPT = textwrap.dedent("""
    import resource, sys
    import dongjing as dj
    from dongjing.errors import CheckpointError
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        dj.load(sys.argv[1])
        outcome = "loaded"
    except CheckpointError as exc:
        outcome = str(exc)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((after - before) * 1024)
    print(outcome)
""")


def _peak_growth(path) -> tuple[int, str]:
    """(peak RSS growth in bytes, outcome) of dj.load(path) in a fresh process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    growth, outcome = done.stdout.split("\n", 1)
    return int(growth), outcome.strip()


@posix_only
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KB (Linux)")
def test_a_huge_sparse_checkpoint_fails_in_bounded_memory(tmp_path):
    # a dongjing header declaring a 256 MB tensor, the file extended sparsely to fit: a few KB
    # on disk. The checksum is checked in chunks before anything is allocated.
    size = 256 << 20
    entries = {"w": {"dtype": "F32", "shape": [size // 4], "data_offsets": [0, size]}}
    meta = {"format": checkpoint.FORMAT, "structure": json.dumps({"$tensor": "w"}),
            "sha256": "0" * 64}
    path = tmp_path / "sparse.ckpt"
    _write(path, entries, meta)
    os.truncate(path, path.stat().st_size + size)
    growth, outcome = _peak_growth(path)
    assert "checksum mismatch" in outcome
    assert growth < 32 << 20, f"peak RSS grew by {growth >> 20} MB"


@posix_only
@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KB (Linux)")
def test_a_sparse_file_whose_header_does_not_cover_it_fails_before_reading(tmp_path):
    entries = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    path = tmp_path / "sparse.safetensors"
    _write(path, entries, {}, b"\0" * 8)
    os.truncate(path, 1 << 30)
    growth, outcome = _peak_growth(path)
    assert "bytes after the last tensor" in outcome
    assert growth < 32 << 20, f"peak RSS grew by {growth >> 20} MB"


def test_a_plain_safetensors_file_reads_each_tensor(tmp_path):
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([True, False])
    entries = {"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
               "b": {"dtype": "BOOL", "shape": [2], "data_offsets": [24, 26]}}
    _write(tmp_path / "p", entries, {}, a.tobytes() + b.tobytes())
    back = dj.load(tmp_path / "p")
    np.testing.assert_array_equal(back["a"].numpy(), a)
    np.testing.assert_array_equal(back["b"].numpy(), b)
    back["a"].numpy()[0, 0] = 7.0  # writable, owned arrays (not views of a shared buffer)


def test_a_header_longer_than_the_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "h"
    path.write_bytes((fmt.MAX_HEADER + 8).to_bytes(8, "little") + b"{")
    os.truncate(path, fmt.MAX_HEADER + 64)
    with pytest.raises(CheckpointError, match="limit"):
        dj.load(path)


def test_a_zero_sized_tensor_of_huge_declared_shape(tmp_path):
    entries = {"w": {"dtype": "F64", "shape": [0, 2 ** 62, 2 ** 62], "data_offsets": [0, 0]}}
    _write(tmp_path / "z", entries, {})
    with pytest.raises(CheckpointError, match="too large for any array"):
        dj.load(tmp_path / "z")
    fine = {"w": {"dtype": "F64", "shape": [0, 2 ** 20], "data_offsets": [0, 0]}}
    _write(tmp_path / "ok", fine, {})
    assert dj.load(tmp_path / "ok")["w"].shape == (0, 2 ** 20)


@pytest.mark.parametrize("entries, message", [
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, "does not fit"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "v": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, "overlaps"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, "does not fit"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}, "does not fit"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [2 ** 70, 2 ** 70 + 8]}},
     "does not fit"),
])
def test_offsets_that_disagree_with_shapes_or_the_file(tmp_path, entries, message):
    _write(tmp_path / "f", entries, {}, b"\0" * 12)
    with pytest.raises(CheckpointError, match=message):
        dj.load(tmp_path / "f")


def test_saving_a_dict_that_contains_itself(tmp_path):
    state: dict = {"w": np.ones(2)}
    state["me"] = state
    with pytest.raises(ArgumentError, match="contains itself"):
        dj.save(state, tmp_path / "c")
    loop: list = [1]
    loop.append({"inner": loop})
    with pytest.raises(ArgumentError, match=r"list at top level contains itself"):
        dj.save(loop, tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_shared_but_acyclic_containers_still_save(tmp_path):
    shared = [np.arange(2.0)]
    dj.save({"a": shared, "b": shared}, tmp_path / "s")
    back = dj.load(tmp_path / "s")
    assert back["a"][0].tolist() == back["b"][0].tolist() == [0.0, 1.0]


def test_saving_a_too_deeply_nested_object(tmp_path):
    deep: list = []
    for _ in range(sys.getrecursionlimit() * 2):
        deep = [deep]
    with pytest.raises(ArgumentError, match="nested too deeply"):
        dj.save(deep, tmp_path / "d")
