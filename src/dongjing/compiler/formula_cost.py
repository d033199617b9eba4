"""Whether an op's in-kernel formulation (its record's `Kernel`) pays on this machine.

A formulation lets a fused kernel compute, say, float32 tanh in-line, where otherwise a NumPy
ufunc pass sits between two kernels. Which is faster depends on the machine: NumPy's own SIMD
loop for float32 tanh is about 4x faster than the formulation where NumPy dispatches AVX-512
(measured: 176 against 764 µs per million elements, one thread), while where NumPy's loop is
narrower the formulation wins. So it is measured, once per machine, op and dtype, and the
answer kept on disk beside the kernels (``formulas.json`` in `kernels.cache_dir()`).

The model: fusing saves the ufunc's own pass and the memory traffic around it (its input
written out by one kernel and its output read back by the next, about two copy passes), and
costs the formulation inside the kernel. So a formulation is used when one kernel computing it
over a block takes less than the ufunc on the same block plus two copies of it.

The `kernel_formulas` setting (`dj.compiler.set_options`) chooses: "always" uses formulations,
"never" does not, "auto" (the default) measures. ``DONGJING_KERNEL_FORMULAS=1``/``0`` sets the
starting value.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import threading
import time

import numpy as np

try:  # NumPy's runtime CPU dispatch (a private module: absent, the key is less specific)
    from numpy._core._multiarray_umath import __cpu_features__ as _CPU_FEATURES
except ImportError:
    _CPU_FEATURES = {}

from ..cpu_kernels import kernels
from ..cpu_kernels.options import get_options

BLOCK = 1 << 18  # elements measured: 1 MiB of float32, the size fused groups start at
_REPEATS = 5
_decided: dict = {}  # (op name, dtype name) -> bool, for this process
_lock = threading.Lock()


def pays(op, dtype) -> bool:
    """True when fused kernels should compute `op` on `dtype` through its formulation."""
    policy = get_options().kernel_formulas
    if policy == "never":
        return False
    if policy == "always":
        return True
    key = (op.name, dtype.name)
    found = _decided.get(key)
    if found is None:
        with _lock:
            found = _decided.get(key)
            if found is None:
                found = _decided[key] = _remembered_or_measured(op, dtype)
    return found


def _machine_key(op, dtype) -> str:
    """What the answer depends on: the op's formulation, the dtype, NumPy, numba and the CPU."""
    features = sorted(k for k, on in _CPU_FEATURES.items() if on)
    try:
        numba_version = importlib.metadata.version("numba")
    except Exception:  # noqa: BLE001 - any failure only means a less specific key
        numba_version = "?"
    text = "|".join([op.name, dtype.name, *op.kernel.lines, np.__version__, numba_version,
                     platform.machine(), *features])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _remembered_or_measured(op, dtype) -> bool:
    folder = kernels.cache_dir()
    path = None if folder is None else folder / "formulas.json"
    key = _machine_key(op, dtype)
    known = _read(path)
    if key in known:
        return bool(known[key])
    try:
        answer = measure(op, dtype)["fuse"]
    except Exception:  # noqa: BLE001 - a kernel that cannot be built: the ufunc path always works
        return False
    if path is not None:
        known = _read(path)  # another process may have written meanwhile
        known[key] = answer
        part = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            part.write_text(json.dumps(known, indent=1, sort_keys=True))
            os.replace(part, path)
        except OSError:  # a read-only or full cache: measured again by the next process
            try:
                part.unlink()
            except OSError:
                pass
    return answer


def _read(path) -> dict:
    if path is None:
        return {}
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def measure(op, dtype, block: int = BLOCK) -> dict:
    """Best-of-5 seconds for `block` elements on one thread: the formulation in a kernel
    (``formula``), the op's ufunc (``ufunc``), a kernel copying the block (``copy``), and the
    decision (``fuse``)."""
    (source, name), (copy_source, copy_name) = _kernel_sources(op)
    namespace = dict(kernels.FORMULA_NAMES)
    formula = kernels.compile_kernel(source, name, namespace)
    copy = kernels.compile_kernel(copy_source, copy_name, namespace)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(block) * 3).astype(dtype)
    out = np.empty_like(x)
    times = {
        "formula": _best(lambda: formula(block, x, out)),
        "ufunc": _best(lambda: op.ufunc(x, out=out)),
        "copy": _best(lambda: copy(block, x, out)),
    }
    times["fuse"] = times["formula"] < times["ufunc"] + 2 * times["copy"]
    return times


def _kernel_sources(op) -> tuple[tuple[str, str], tuple[str, str]]:
    """(source, name) of a kernel computing `op` through its formulation, and of one copying.
    (Two sources: the kernel cache is keyed by source text.)"""
    name = f"_formula_{op.name}"
    lines = [f"def {name}(n, in0, out0):", "    for i in range(n):", "        a0 = in0[i]"]
    lines += ["        " + line for line in kernels.formula_lines(op, 0, "a0")]
    lines += ["        out0[i] = t0", ""]
    copy = "\n".join(["def _copy(n, in0, out0):", "    for i in range(n):",
                      "        out0[i] = in0[i]", ""])
    return ("\n".join(lines), name), (copy, "_copy")


def _best(run) -> float:
    run()  # compiles on first call, and warms the caches
    best = float("inf")
    for _ in range(_REPEATS):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best
