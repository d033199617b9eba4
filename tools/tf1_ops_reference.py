"""Regenerate TensorFlow's numbers for the vendored CNN, RNN, autoencoder and GAN programs
(tests/programs/fixtures/tf1_ops_programs.json) with TensorFlow's own tf.compat.v1.

Run it in a separate environment that has TensorFlow (never a dongjing dependency):

    python3 -m venv /work/tfvenv
    /work/tfvenv/bin/pip install tensorflow tf_keras matplotlib scikit-learn scipy
    PYTHONPATH=src /work/tfvenv/bin/python tools/tf1_ops_reference.py [program ...]

The programs run through tests/programs/tf1_ops_harness.py (the same initial values and data
as the tests give dongjing). The fixture records the TensorFlow version that made it.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # TF 1.x's RNN cells need tf_keras (Keras 2)

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs"
FIXTURE = PROGRAMS / "fixtures" / "tf1_ops_programs.json"


def main(names: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import tensorflow as tensorflow
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    sys.path.insert(0, str(PROGRAMS))
    import tf1_ops_harness as harness

    old = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {"programs": {}}
    programs = old["programs"]
    for name in names or list(harness.CASES):
        result = harness.run_program(name, tf, harness.TF_IMPORTS)
        result["numbers"] = harness.numbers(result["stdout"])
        programs[name] = result
        print(name, "error:" if result["error"] else "ok", result["error"] or "")
    made_by = {"tensorflow": tensorflow.__version__, "python": platform.python_version(),
               "tool": "tools/tf1_ops_reference.py"}
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps({"made_by": made_by, "programs": programs}, indent=1,
                                  sort_keys=True) + "\n")
    print("wrote", FIXTURE.relative_to(ROOT))


if __name__ == "__main__":
    main(sys.argv[1:])
