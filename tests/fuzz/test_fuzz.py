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
    # what fuzz_known.py lists (documented limits and deliberate differences, each narrow) is
    # allowed: the slice fails on new failures only


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


def _program(lines, outputs, *arrays):
    import numpy as np
    from fuzz_program import Input, Program

    return Program([Input(np.asarray(a)) for a in arrays], lines, outputs)


def test_short_paths_mode_compares_bits_with_the_general_path(monkeypatch):
    # runs everywhere (no torch needed): a short path that is off by one ulp is caught
    import numpy as np

    from dongjing.autograd import engine

    program = _program(["v0 = x0 * x0 + x0", "v1 = dj.sum(v0)"], ["v1"],
                       np.array([1.5, -0.0, np.nan], np.float32), np.float64(2.0))
    assert check_program(program, ["short_paths"]) == []
    real = engine._sum_of

    def off_by_an_ulp(a, b):
        total = real(a, b)
        if engine._plain.on:  # only while short paths are on
            total._data = np.nextafter(total._data, np.inf)
        return total

    monkeypatch.setattr(engine, "_sum_of", off_by_an_ulp)
    found = check_program(program, ["short_paths"])
    assert found and "differs in its bits" in found[0].message


def test_zero_d_inputs_run_as_numpy_scalars_too():
    import numpy as np

    program = _program(["v0 = x0 * 2.0 + x1", "v1 = dj.exp(v0)"], ["v0", "v1"],
                       np.array(0.5, np.float32), np.array([1.0, np.inf], np.float32))
    assert check_program(program, ["short_paths", "O0"]) == []


def test_the_comparison_with_pytorch(monkeypatch):
    pytest.importorskip("torch")
    import fuzz_torch
    import numpy as np

    nan_inf = np.array([[np.nan, np.inf, -np.inf, 2.0], [-0.0, 0.5, -3.0, 1e30]], np.float32)
    program = _program(["v0 = dj.exp(x0)", "v1 = dj.sum(dj.tanh(v0) * x0, dim=1)",
                        "v2 = dj.matmul(x0, dj.transpose(x0, -2, -1))"], ["v0", "v1", "v2"],
                       nan_inf)
    assert check_program(program, ["torch"]) == []
    monkeypatch.setitem(fuzz_torch._SAME_OVERRIDES, "exp",
                        lambda x: fuzz_torch.torch.exp(x) * 1.001)
    found = check_program(program, ["torch"])
    assert found and "differs from PyTorch" in found[0].message


def test_pytorch_finds_what_dongjing_refuses():
    pytest.importorskip("torch")
    import numpy as np

    program = _program(["v0 = dj.exp(x0)"], ["v0"], np.zeros((2, 3), np.float32))
    program.refused.append((["v0 = dj.exp(x0)"], "dj.reshape(v0, (3, 2))", "ShapeError: a test"))
    found = check_program(program, ["torch"])
    assert found and "dongjing refuses `dj.reshape(v0, (3, 2))`" in found[0].message


def test_float32_tolerance_follows_cancellation():
    import fuzz_torch
    import numpy as np

    # a sum whose terms cancel: PyTorch's own float32 error is large, so a dongjing float32
    # answer as far from PyTorch's is accepted; the same distance without cancellation is not
    low, high = np.array([1e-3], np.float32), np.array([1.25e-3])
    assert fuzz_torch.compare([np.array([1.4e-3], np.float32)], [low], [high], "x") is None
    assert fuzz_torch.compare([np.array([1.4e-3], np.float32)], [low], [low.astype(float)],
                              "x") is not None
    nan = np.array([np.nan, np.inf, 1.0], np.float32)
    assert fuzz_torch.compare([nan], [nan.copy()], None, "x") is None
    assert "infinities" in fuzz_torch.compare([nan], [np.array([np.nan, -np.inf, 1.0],
                                                                np.float32)], None, "x")


def test_bit_for_bit_counts_every_nan_as_one():
    # seed 101, program 792: fmod of NaNs gave NaN with its sign bit set with short paths on and
    # clear with them off; a NaN's sign and payload are unspecified, zeros' signs are not
    import numpy as np
    from fuzz_check import same_bits

    nan, minus_nan = np.array([np.nan], np.float32), -np.array([np.nan], np.float32)
    assert minus_nan.tobytes() != nan.tobytes()
    assert same_bits([nan], [minus_nan], "x") is None
    assert "differs in its bits" in same_bits([np.array([0.0])], [np.array([-0.0])], "x")
    assert "differs in its bits" in same_bits([np.array([np.inf])], [np.array([np.nan])], "x")


def test_float64_results_of_float32_values_allow_float32_rounding():
    # seed 101, program 198: a float64 gradient summed from terms of a float32 pow, NumPy's an
    # ulp from PyTorch's; PyTorch's own float32 error (|low - high|) cancelled by chance
    import fuzz_torch
    import numpy as np

    low, high = np.array([1.8225164471]), np.array([1.8225164492])
    assert fuzz_torch.compare([np.array([1.8225164689])], [low], [high], "x") is None
    assert fuzz_torch.compare([np.array([1.82252])], [low], [high], "x") is not None
    exact = np.array([1.8225164471])  # no float32 value on the way: float64's own tolerance
    assert fuzz_torch.compare([np.array([1.8225164689])], [exact], [exact], "x") is not None


def test_jobs_split_the_programs_without_changing_them(monkeypatch):
    # each program has its own seed: worker j of J runs programs j, j + J, ... exactly as one
    # worker would, so what a run finds does not depend on --jobs
    seen: dict = {}
    worker = ["one"]
    monkeypatch.setattr(fuzz_main, "check_program", lambda program, modes: seen.setdefault(
        worker[0], []).append(program.source()) or [])
    fuzz_main.run(6, SEED, None, max_lines=3, quiet=True, start=2)
    for job in range(2):
        worker[0] = job
        fuzz_main.run(6, SEED, None, max_lines=3, quiet=True, start=2, jobs=2, job=job)
    assert seen["one"][0::2] == seen[0] and seen["one"][1::2] == seen[1]
    assert seen["one"][3] == fuzz_main._program_at(SEED, 5, 3).source()


def test_pytorch_side_reduces_over_all_dims_as_pytorch_does():
    # seed 101, program 530: the PyTorch side flattened a 0-d -inf to (1,) before prod, so its
    # gradient divided (-inf / -inf = NaN); PyTorch's own prod of a 0-d tensor passes g on (1)
    pytest.importorskip("torch")
    import numpy as np

    program = _program(["v0 = dj.prod(x0, dim=None, keepdim=False)",
                        "v1 = dj.sum(x1, dim=None, keepdim=True)"], ["v0", "v1"],
                       np.array(-np.inf, np.float32), np.ones((2, 3)))
    assert check_program(program, ["torch"]) == []


def test_cat_with_a_legacy_empty_tensor_is_a_known_difference():
    # seed 101, program 1710: dongjing refuses cat of (1, 1) and (0,); PyTorch's legacy rule
    # skips the 1-d empty tensor. Known (fuzz_known.py), and only for cat
    pytest.importorskip("torch")
    import numpy as np
    from fuzz_known import known_reason

    program = _program(["v0 = dj.exp(x0)"], ["v0"], np.ones((1, 1), np.float32),
                       np.zeros((0,), np.float32))
    program.refused.append((["v0 = dj.exp(x0)"], "dj.cat([v0, x1], 1)", "ShapeError: concat: "
                            "all tensors need 2 dims; got shapes (1, 1), (0,)"))
    found = check_program(program, ["torch"])
    assert found and known_reason(found[0], program) is not None
    program.refused[0] = (["v0 = dj.exp(x0)"], "dj.reshape(v0, (1,))", "ShapeError: concat: "
                          "all tensors need")
    found = check_program(program, ["torch"])
    assert found and known_reason(found[0], program) is None


def test_float64_results_of_float32_inputs_get_float32_tolerance_between_modes():
    # seed 2026, program 2526: a float32 norm of a Fortran-ordered feed sums in another order
    # (an ulp apart), and tanh_backward promoted it into a float64 result
    import numpy as np
    from fuzz_check import compare

    ref, got = [np.array([5.69148151])], [np.array([5.69148197])]
    assert compare(ref, got, "x") is not None
    assert compare(ref, got, "x", float32=True) is None
    assert compare(ref, [np.array([5.70])], "x", float32=True) is not None


def test_cumprod_and_topk_known_entries_look_at_computed_values():
    # seed 2026, program 3240 (cumprod over a NaN that remainder by 0 made) and seed 2027,
    # program 1849 (topk of two NaNs that log made): known only where the computed argument
    # holds them
    import numpy as np
    from fuzz_known import known_reason

    x = np.array([[0.5, 1.5, 2.5]], np.float32)
    nan = Failure("torch", "against PyTorch: result 2 has NaN at other places: [1.] vs [nan]")
    made = _program(["v0 = dj.remainder(x0, dj.floor(x0))", "v1 = dj.cumprod(v0, dim=1)"],
                    ["v1"], x)
    finite = _program(["v0 = dj.exp(x0)", "v1 = dj.cumprod(v0, dim=1)"], ["v1"], x)
    assert known_reason(nan, made) is not None and known_reason(nan, finite) is None
    ties = _program(["v0 = dj.log(x0 - 2.0)", "v1 = dj.topk(v0, 1, dim=-1).values"], ["v1"], x)
    single = _program(["v0 = dj.log(x0)", "v1 = dj.topk(v0, 1, dim=-1).values"], ["v1"], x)
    assert known_reason(nan, ties) is not None and known_reason(nan, single) is None
