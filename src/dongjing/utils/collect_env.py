"""`python -m dongjing`: the version, backends, optional packages and machine, in one report
to paste into a bug report (as `python -m torch.utils.collect_env` gives for PyTorch)."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

import numpy

from .. import __version__
from ..backends.cupy import unavailable_reason
from ..devices import cuda

# the optional packages dongjing uses, and what each one brings
OPTIONAL = {
    "numba": "compiled fused kernels (compiler)",
    "safetensors": "the io extra (checkpoints in the safetensors format)",
    "onnx": "ONNX export and import",
    "onnxruntime": "checking exported models",
    "mpi4py": "dongjing.distributed",
    "mpich": "mpiexec",
    "cupy-cuda12x": "device='cuda'",
    "graphviz": "graph pictures",
    "matplotlib": "plots in examples",
    "tqdm": "progress bars",
    "scikit-learn": "bundled datasets",
    "threadpoolctl": "BLAS thread control",
    "tensorboard": "tf.summary event files",
    "torch": "comparisons in tests and bench",
}


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _blas() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (install threadpoolctl to see it)"
    infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not infos:
        return "none found"
    return "; ".join(f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} "
                     f"threads, {i.get('architecture', '?')})" for i in infos)


def _cuda() -> str:
    if cuda.is_available():
        return f"available ({cuda.device_count()} device(s))"

    return f"not available ({unavailable_reason()})"


def report() -> str:
    """The environment report as text."""
    lines = [
        f"dongjing:      {__version__} ({os.path.dirname(os.path.dirname(__file__))})",
        f"Python:        {sys.version.split()[0]} ({platform.python_implementation()})",
        f"NumPy:         {numpy.__version__}",
        f"BLAS:          {_blas()}",
        f"CUDA:          {_cuda()}",
        f"OS:            {platform.platform()}",
        f"machine:       {platform.machine()}, {os.cpu_count()} CPUs",
        "optional packages:",
    ]
    for name, purpose in OPTIONAL.items():
        version = _version(name)
        lines.append(f"  {name:<14} {version or 'not installed':<14} {purpose}")
    variables = [v for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                             "OPENBLAS_THREAD_TIMEOUT", "OPENBLAS_CORETYPE")
                 if v in os.environ]
    lines.append("environment:   " + (", ".join(f"{v}={os.environ[v]}" for v in variables)
                                      or "no thread variables set"))
    return "\n".join(lines)


def main() -> None:
    print(report())
