"""`python -m dongjing` reports the version, NumPy, BLAS, CUDA and optional packages."""

import subprocess
import sys

import numpy as np

import dongjing as dj


def test_python_m_dongjing_prints_the_environment():
    out = subprocess.run([sys.executable, "-m", "dongjing"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    first = out.splitlines()[0]
    assert first.startswith("dongjing:") and dj.__version__ in first
    assert f"NumPy:         {np.__version__}" in out
    for heading in ("Python:", "BLAS:", "CUDA:", "machine:", "optional packages:"):
        assert heading in out
    assert "mpi4py" in out and "onnx" in out
