"""What the numbers were measured on: CPU, Python, NumPy and its BLAS, threads, libraries."""

from __future__ import annotations

import os
import platform
import sys
from typing import Any

from bench.threads import THREAD_VARS, TUNED_VARS, UNSET_VARS


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_info() -> list[dict[str, Any]]:
    """The BLAS libraries NumPy loaded, via threadpoolctl when installed."""
    import numpy  # noqa: F401 - loads the BLAS first

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return [{"note": "threadpoolctl not installed"}]
    keys = ("internal_api", "version", "architecture", "num_threads", "threading_layer")
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    mine = [i for i in blas if "numpy" in str(i.get("filepath", ""))] or blas
    return [{k: info.get(k) for k in keys} for info in mine]


def library_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in ("numpy", "dongjing", "torch", "jax"):
        try:
            module = __import__(name)
            versions[name] = str(getattr(module, "__version__", "unknown"))
        except Exception:
            versions[name] = None
    return versions


def load_average() -> float | None:
    """The 1-minute load average (other processes competing for the cores), if known."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def rss_mb() -> float:
    """This process's resident memory in MiB (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


def describe() -> dict[str, Any]:
    """A JSON-ready description of this process's machine and environment."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "load_average": load_average(),
        "env": {k: os.environ.get(k) for k in THREAD_VARS + UNSET_VARS + tuple(TUNED_VARS)},
        "blas": blas_info(),
        "versions": library_versions(),
    }
