"""The fast slice of the differential fuzzer (fixed seed, 240 programs, each run eagerly and in
two other modes in turn), the op-table coverage of its generators, and its reproducer files.
`make fuzz N=10000` runs the full version (every mode for every program)."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import fuzz_main
import pytest
from fuzz_check import Failure, check_program
from fuzz_ops import EXEMPT, GENERATORS
from fuzz_program import generate

from dongjing.ops.registry import OPS

SEED, CHUNK, CHUNKS = 19, 60, 4


def test_every_op_of_the_table_has_a_generator_or_a_reason():
    ours = {name for name, op in OPS.items()  # not the ops other tests register
            if getattr(op.forward, "__module__", "").startswith("dongjing.")}
    missing = sorted(ours - set(GENERATORS) - set(EXEMPT) - {"fused_elementwise"})
    assert not missing, f"ops the fuzzer never generates: {missing}"


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_fast_slice(chunk):
    found = fuzz_main.run(CHUNK, SEED, None, max_lines=6, rotate=True, quiet=True,
                          start=chunk * CHUNK)
    new = [f"program {i}: {f.mode}: {f.message}\n{p.source()}" for i, f, p in found["new"]]
    assert not new, "\n\n".join(new)
    if found["known"]:
        reasons = sorted({reason for *_, reason in found["known"]})
        pytest.xfail("known failures owned elsewhere: " + "; ".join(reasons))


def test_programs_are_reproducible_and_reproducers_run(tmp_path):
    first, _ = generate(random.Random(3), 6)
    again, _ = generate(random.Random(3), 6)
    assert first.source() == again.source()
    for a, b in zip(first.inputs, again.inputs):
        assert a.array.tobytes() == b.array.tobytes() and a.layout == b.layout
    assert check_program(first, ["O0"]) == []
    name = tmp_path / "repro.py"
    example = Failure("O0", "an example failure: the reproducer re-runs the failing modes")
    name.write_text(fuzz_main.reproducer(first, [example], SEED, 0, str(name)))
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.path.abspath(src), *sys.path])}
    result = subprocess.run([sys.executable, str(name)], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_threads_mode_keeps_a_data_dependent_program_valid():
    # negated inputs would leave x0[x0 > 0] empty and the logical_and invalid (seed 0, program
    # 586 of the first fuzzer): the threads then run doubled inputs, which keep every sign
    import numpy as np
    from fuzz_program import Input, Program

    program = Program([Input(np.array([1.0, 2.0, 3.0]))],
                      ["v0 = x0[x0 > 0]", "v1 = dj.logical_and((x0 > 0), (v0 > 0))"], ["v1"])
    assert check_program(program, ["threads"]) == []
