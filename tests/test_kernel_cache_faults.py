"""A damaged or unwritable kernel cache never ends or breaks a run: a truncated native library
(which would end the process with SIGBUS if loaded) is never loaded unverified but rebuilt; a
truncated kernel module or numba index/data file is a cache miss (compiled again, one warning);
a cache that cannot be written (not a folder, a full disk) means compiling in memory."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dongjing as dj
from dongjing.cpu_kernels import kernels, native

pytestmark = pytest.mark.skipif(not kernels.available(), reason="numba is not installed")
needs_cc = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("cc") is None,
                              reason="native kernel libraries need Linux and a C compiler")

SOURCE = """def _kernel_faults(n, in0, in1, out0):
    for i in range(n):
        out0[i] = in0[i] * in1 + in0[i]
"""
PARAMS = (("array", "float32"), ("scalar", "float32"), ("out", "float32"))
EXPECTED = (np.arange(5, dtype=np.float32) * 3).tolist()


def _fresh(monkeypatch) -> None:
    """Forget the in-process caches, as a new process would."""
    monkeypatch.setattr(kernels, "_cache", {})
    monkeypatch.setattr(native, "_broken", [])
    for name in [m for m in sys.modules if m.startswith(("dongjing_kernel_", "dongjing_native_"))]:
        monkeypatch.delitem(sys.modules, name)


def _compute(params=PARAMS) -> tuple[object, list]:
    kernel = kernels.compile_kernel(SOURCE, "_kernel_faults", {}, params)
    x = np.arange(5, dtype=np.float32)
    out = np.empty_like(x)
    kernel(5, x, np.float32(2), out)
    return kernel, out.tolist()


def _files(folder: Path, pattern: str) -> list[Path]:
    return sorted((folder / "kernels").rglob(pattern))


_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    from dongjing.cpu_kernels import kernels
    source, params = sys.argv[1], eval(sys.argv[2])
    k = kernels.compile_kernel(source, "_kernel_faults", {}, params)
    x = np.arange(5, dtype=np.float32)
    out = np.empty_like(x)
    k(5, x, np.float32(2), out)
    print(type(k).__name__, out.tolist())
""")


def _child(folder: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, DONGJING_CACHE_DIR=str(folder),
               PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", _CHILD, SOURCE, repr(PARAMS)], env=env,
                          capture_output=True, text=True, timeout=300)


@needs_cc
def test_a_truncated_native_library_is_rebuilt_not_loaded(tmp_path):
    first = _child(tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[0] == "NativeKernel"
    (library,) = _files(tmp_path, "n_*.so")
    os.truncate(library, 4096)  # loading this would end the process with SIGBUS
    second = _child(tmp_path)
    assert second.returncode == 0, f"child ended with {second.returncode}: {second.stderr}"
    assert second.stdout.strip() == f"NativeKernel {EXPECTED}"
    assert "does not match its recorded size and checksum" in second.stderr
    assert native.verified(str(library))  # rebuilt, with its manifest


def _damage(path: Path, data: bytes) -> None:
    """Give `path` new contents as a new file: this process has the library mapped, and
    changing the mapped file in place would end it with SIGBUS (as it would any process using
    the library; dongjing itself only ever replaces files)."""
    fresh = path.with_name("damaged.tmp-file")
    fresh.write_bytes(data)
    os.replace(fresh, path)


@needs_cc
@pytest.mark.parametrize("damage", ["truncate", "flip", "no manifest", "bad manifest", "fifo"])
def test_a_library_failing_verification_is_never_loaded(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    _fresh(monkeypatch)
    kernel, out = _compute()
    assert isinstance(kernel, kernels.NativeKernel) and out == EXPECTED
    (library,) = _files(tmp_path, "n_*.so")
    manifest = Path(native.manifest_path(str(library)))
    assert native.verified(str(library))
    data = library.read_bytes()
    if damage == "truncate":
        _damage(library, data[: len(data) // 2])
    elif damage == "flip":
        _damage(library, data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    elif damage == "no manifest":
        manifest.unlink()
    elif damage == "bad manifest":
        manifest.write_text("12 " + "0" * 64 + "\n")
    else:
        library.unlink()
        os.mkfifo(library)  # would block a reader that opened it plainly
    assert not native.verified(str(library))
    _fresh(monkeypatch)
    key = library.stem[2:]
    with pytest.warns(RuntimeWarning, match="kernel cache entry"):
        assert native.load(str(library), key) is None
    assert f"dongjing_native_{key}" not in sys.modules
    with pytest.warns(RuntimeWarning, match="kernel cache entry"):
        kernel, out = _compute()  # rebuilt
    assert out == EXPECTED and native.verified(str(library))


def test_a_damaged_kernel_module_is_written_again(tmp_path, monkeypatch):
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    _fresh(monkeypatch)
    assert _compute(params=None)[1] == EXPECTED
    (module,) = _files(tmp_path, "k_*.py")
    text = module.read_text()
    module.write_text(text[: len(text) // 2])  # a SyntaxError if imported
    _fresh(monkeypatch)
    with pytest.warns(RuntimeWarning, match="is damaged"):
        assert _compute(params=None)[1] == EXPECTED
    assert module.read_text() == text


@pytest.mark.parametrize("suffix", ["nbi", "nbc"])
def test_a_truncated_numba_index_or_data_file_is_a_miss(tmp_path, monkeypatch, suffix):
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    _fresh(monkeypatch)
    assert _compute(params=None)[1] == EXPECTED
    (damaged,) = _files(tmp_path, f"*.{suffix}")
    os.truncate(damaged, 10)  # numba's unpickling would raise
    _fresh(monkeypatch)
    with pytest.warns(RuntimeWarning, match="does not load"):
        kernel, out = _compute(params=None)
    assert out == EXPECTED and not kernel.stats.cache_hits
    _fresh(monkeypatch)  # the entry was rewritten: the next process hits it
    kernel, out = _compute(params=None)
    assert out == EXPECTED and kernel.stats.cache_hits


@pytest.mark.parametrize("params", [None, PARAMS])
def test_a_cache_dir_that_cannot_be_created_compiles_in_memory(tmp_path, monkeypatch, params):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(blocker / "cache"))
    _fresh(monkeypatch)
    assert _compute(params)[1] == EXPECTED


def _full_disk(monkeypatch, folder: Path) -> None:
    """Every rename into `folder` fails as on a full disk (dongjing's and numba's writes all
    end with one)."""
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if str(folder) in os.fspath(dst):
            raise OSError(errno.ENOSPC, "No space left on device", os.fspath(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


@pytest.mark.filterwarnings("ignore:dongjing:RuntimeWarning")
def test_a_full_disk_runs_uncached_at_o2(compiler_options, tmp_path, monkeypatch):

    compiler_options(fusion_min_size=1)
    monkeypatch.setenv("DONGJING_CACHE_DIR", str(tmp_path))
    _fresh(monkeypatch)
    _full_disk(monkeypatch, tmp_path)
    with dj.Graph() as g:
        x = dj.placeholder((3, 5), name="x")
        y = dj.tanh(x * 2.0 + 1.0) * x - dj.exp(-x)
    feed = {x: np.linspace(-2, 2, 15, dtype=np.float32).reshape(3, 5)}
    got = dj.Session(g, optimize=2).run(y, feed)
    np.testing.assert_allclose(got, dj.Session(g, optimize=0).run(y, feed), rtol=1e-6)
    assert not list(tmp_path.rglob("*.tmp*"))  # failed writes leave no temporaries
    assert not _files(tmp_path, "n_*.so") and not _files(tmp_path, "k_*.py")
