"""Regenerate the TensorFlow reference numbers of the TF1 programs and probes
(tests/programs/fixtures/tf1_*.json) with TensorFlow's own tf.compat.v1.

Run it in a separate environment that has TensorFlow (never a dongjing dependency):

    python3 -m venv /work/tfvenv
    /work/tfvenv/bin/pip install tensorflow matplotlib scikit-learn
    PYTHONPATH=src /work/tfvenv/bin/python tools/tf1_reference.py

The programs run through tests/programs/tf1_harness.py (same initial values and data as the
tests give dongjing); the probes are tests/programs/tf1_probes.py. Each fixture records the
TensorFlow version that made it.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs"
FIXTURES = PROGRAMS / "fixtures"


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import tensorflow as tensorflow
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()  # TF 1.x semantics: reference variables, v1 shapes
    sys.path.insert(0, str(PROGRAMS))
    import tf1_harness
    import tf1_probes

    made_by = {"tensorflow": tensorflow.__version__, "python": platform.python_version(),
               "tool": "tools/tf1_reference.py"}
    FIXTURES.mkdir(parents=True, exist_ok=True)
    programs = {}
    for name in tf1_harness.CASES:
        result = tf1_harness.run_program(name, tf, tf1_harness.TF_IMPORT)
        result["numbers"] = tf1_harness.numbers(result["stdout"])
        programs[name] = result
        print(name, "error:" if result["error"] else "ok", result["error"] or "")
    _write("tf1_programs.json", {"made_by": made_by, "programs": programs})

    probes = {}
    for name, probe in tf1_probes.PROBES.items():
        tf.reset_default_graph()
        probes[name] = probe(tf)
        print(name, probes[name] if name not in ("initializers", "decays") else "...")
    for name in tf1_probes.OPTIMIZERS:
        tf.reset_default_graph()
        probes[f"optimizer_{name}"] = tf1_probes.optimizer_trajectory(tf, name)
        print(name, probes[f"optimizer_{name}"][-2])
    tf.reset_default_graph()
    _write("tf1_probes.json", {"made_by": made_by, "probes": probes})


def _write(name: str, data: dict) -> None:
    path = FIXTURES / name
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print("wrote", path.relative_to(ROOT))


if __name__ == "__main__":
    main()
