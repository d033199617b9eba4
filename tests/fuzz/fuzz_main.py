"""`make fuzz N=10000`: run N random programs through every mode, print a summary and write
each failing program as a standalone reproducer (a Python file runnable with dongjing on
PYTHONPATH) under `fuzz-failures/`. Programs run in worker processes, so a program that kills
its process (a segmentation fault) is recorded with the mode that crashed, and the run goes on.

    python tests/fuzz/fuzz_main.py --n 2000 --seed 1 --out fuzz-failures [--mode nan] [--jobs 2]

Program i of a seed is generated from (seed, i) alone, so `--start` skips to it at no cost and
`--jobs J` (program i to worker i mod J) finds what one worker finds.

--mode default: every way of running (graphs, jit, threads, short paths off, PyTorch);
nan: every input holds NaN, infinities and signed zeros; unknown: graphs whose placeholders
have unknown dims (the leading one, then all); all: the three in turn.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import random
import resource
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fuzz_check  # noqa: E402
from fuzz_check import MODES, Failure, check_program  # noqa: E402
from fuzz_known import KNOWN_BUGS, known_reason  # noqa: E402, F401
from fuzz_program import generate  # noqa: E402

_TEMPLATE = '''"""dongjing fuzzer reproducer (seed {seed}, program {index}).

{failures}

Run: PYTHONPATH=src python {filename}
"""

import sys

import numpy as np

import dongjing as dj
import dongjing.nn.functional as F
from dongjing import ops

sys.path.insert(0, {fuzz_dir!r})  # tests/fuzz, for the checker

INPUTS = [
{inputs}]

{source}

if __name__ == "__main__":
    from fuzz_check import check_program
    from fuzz_program import Input, Program

    program = Program([Input(np.frombuffer(bytes.fromhex(h), dtype).reshape(shape).copy(), lay)
                       for h, dtype, shape, lay in INPUTS], {lines!r}, {outputs!r})
    failures = check_program(program, {modes!r})
    for f in failures:
        print(f.mode, "->", f.message)
    sys.exit(1 if failures else 0)
'''


FUZZ_MODES = ("default", "nan", "unknown")


def modes_for(index: int, rotate: bool, mode: str = "default") -> list:
    """All modes but the all-unknown graph (O2 with fusion forced, which compiles kernels, on
    every tenth program), or (`rotate`, for a quick slice) O1 or O2 plus one other mode in turn,
    then the short paths off and PyTorch; for the "unknown" fuzz mode the graphs with unknown
    dims and O2."""
    if mode == "unknown":
        return ["unknown_dims", "unknown_all", "O2"]
    if not rotate:
        return [m for m in MODES if m != "unknown_all" and (m != "O2_fused" or index % 10 == 0)]
    others = ["O0", "jit", "threads", "unknown_dims"]
    return ["O2" if index % 2 == 0 else "O1", others[index % len(others)], "short_paths",
            "torch"]


def reproducer(program, failures, seed: int, index: int, filename: str) -> str:
    """The text of a standalone file that re-runs `program` in the modes that failed."""
    inputs = "".join(f"    ({inp.array.tobytes().hex()!r}, {inp.array.dtype.str!r}, "
                     f"{inp.array.shape!r}, {inp.layout!r}),\n" for inp in program.inputs)
    text = "\n".join(f"{f.mode}: {f.message}" for f in failures)
    return _TEMPLATE.format(seed=seed, index=index, failures=text, filename=filename,
                            fuzz_dir=os.path.dirname(os.path.abspath(__file__)), inputs=inputs,
                            source=program.source(), lines=program.lines,
                            outputs=program.outputs,
                            modes=sorted({f.mode for f in failures if f.mode != "eager"}) or
                            list(MODES))


def _write(out: str, program, failures, seed: int, index: int, mode: str = "default") -> None:
    os.makedirs(out, exist_ok=True)
    prefix = "" if mode == "default" else f"{mode}_"
    name = os.path.join(out, f"fuzz_{prefix}{seed}_{index}.py")
    with open(name, "w") as fh:
        fh.write(reproducer(program, failures, seed, index, name))


def program_rng(seed: int, index: int) -> random.Random:
    """The generator of program `index` of `seed`'s sequence: each program has its own, so a
    program does not depend on the ones before it (nor on how the run is split into jobs)."""
    return random.Random(f"dongjing fuzz {seed} {index}")


def run(n: int, seed: int, out: str | None, max_lines: int = 8, rotate: bool = False,
        quiet: bool = False, start: int = 0, progress: str | None = None,
        mode: str = "default", jobs: int = 1, job: int = 0) -> dict:
    """Fuzz programs `start`..`start + n - 1` of `seed`'s sequence (those whose index is `job`
    modulo `jobs`); returns {"new": [(index, Failure, Program)], "known": [(index, Failure,
    Program, reason)], "raw": [text], "seconds": s}."""
    began = time.perf_counter()
    found: dict = {"new": [], "known": [], "raw": []}
    for index in range(start, start + n):
        if index % jobs != job:
            continue
        program, raw = generate(program_rng(seed, index), max_lines, mode)
        found["raw"] += raw
        if progress:  # the program about to run, should it kill the process
            with open(progress, "w") as fh:
                fh.write(str(index))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            failures = check_program(program, modes_for(index, rotate, mode))
        if not failures:
            continue
        new = [f for f in failures if known_reason(f, program) is None]
        for f in failures:
            if f in new:
                found["new"].append((index, f, program))
            else:
                found["known"].append((index, f, program, known_reason(f, program)))
        if out:
            _write(out, program, failures, seed, index, mode)
        if not quiet:
            for f in failures:
                tag = "NEW" if f in new else "KNOWN: " + known_reason(f, program)
                print(f"program {index}: {f.mode}: {f.message[:200]}  [{tag}]", flush=True)
    found["seconds"] = time.perf_counter() - began
    found["torch_skipped"] = dict(fuzz_check.TORCH_SKIPPED)
    return found


def _program_at(seed: int, index: int, max_lines: int, mode: str = "default"):
    return generate(program_rng(seed, index), max_lines, mode)[0]


# the workers' kernels: numba's, compiled in memory (each program's fused kernels are new, so a
# disk cache only grows, and building each as a native library too doubles the compile time;
# the native wrapper and the disk cache have their own tests: test_native_kernels.py,
# test_compiler_kernel_cache.py, test_kernel_cache_faults.py)
WORKER_ENV = {"DONGJING_NATIVE_KERNELS": "0", "DONGJING_CACHE_DIR": ""}


def _worker_env() -> dict:
    return {**os.environ, **WORKER_ENV}


def _crashing_mode(seed: int, index: int, max_lines: int, mode: str = "default") -> Failure:
    """The mode of program `index` that kills a fresh process running its modes in order (the
    crash may need the earlier modes' state: a read past an array faults only if unmapped)."""
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
            f"import warnings; warnings.simplefilter('ignore')\nimport fuzz_main\n"
            f"from fuzz_check import check_program\n"
            f"p = fuzz_main._program_at({seed}, {index}, {max_lines}, {mode!r})\n"
            f"for mode in fuzz_main.modes_for({index}, False, {mode!r}):\n"
            f"    print(mode, flush=True)\n    check_program(p, [mode])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_worker_env())
    if done.returncode < 0 and done.stdout.split():
        return Failure(done.stdout.split()[-1], f"the process died (signal {-done.returncode})")
    return Failure("unknown", "the process died, but not when the program ran again alone")


def _supervise_job(n: int, seed: int, out: str, max_lines: int, start: int, mode: str,
                   jobs: int, job: int) -> dict:
    """`run` of the programs `start`..`n - 1` whose index is `job` modulo `jobs`, in a worker
    process; a program that kills its worker is recorded (with the modes that crash) and
    skipped, and a new worker goes on after it."""
    tag = f"{mode}.{job}"
    progress = os.path.join(out, f".progress.{tag}")
    results = os.path.join(out, f".results.{tag}.json")
    found: dict = {"new": [], "known": [], "raw": [], "torch_skipped": collections.Counter()}
    while start < n:
        code = (f"import sys, json; sys.path.insert(0, "
                f"{os.path.dirname(os.path.abspath(__file__))!r})\nimport fuzz_main\n"
                f"f = fuzz_main.run({n - start}, {seed}, {out!r}, {max_lines}, start={start}, "
                f"progress={progress!r}, mode={mode!r}, jobs={jobs}, job={job})\n"
                f"json.dump(fuzz_main.summary(f), open({results!r}, 'w'))")
        rc = subprocess.run([sys.executable, "-W", "ignore", "-c", code],
                            env=_worker_env()).returncode
        if rc >= 0:
            with open(results) as fh:
                part = json.load(fh)
            for key in found:
                found[key] += part[key]
            break
        with open(progress) as fh:
            index = int(fh.read())
        program = _program_at(seed, index, max_lines, mode)
        failures = [_crashing_mode(seed, index, max_lines, mode)]
        _write(out, program, failures, seed, index, mode)
        for f in failures:
            reason = known_reason(f, program)
            label = "KNOWN: " + reason if reason else "NEW"
            print(f"program {index}: {f.mode}: {f.message}  [{label}]", flush=True)
            found["known" if reason else "new"].append([index, f.mode, f.message, reason])
        start = index + 1
    return found


def supervise(n: int, seed: int, out: str, max_lines: int = 8, start: int = 0,
              mode: str = "default", jobs: int = 1) -> dict:
    """Programs `start`..`n - 1` split over `jobs` worker processes (program i to worker
    i mod jobs; each program has its own seed, so what a run finds does not depend on
    `jobs`), each supervised by `_supervise_job`; their findings merged, by program."""
    os.makedirs(out, exist_ok=True)
    began, cpu = time.perf_counter(), _children_cpu()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        parts = list(pool.map(lambda job: _supervise_job(n, seed, out, max_lines, start, mode,
                                                         jobs, job), range(jobs)))
    found: dict = {"new": [], "known": [], "raw": [], "torch_skipped": collections.Counter()}
    for part in parts:
        for key in found:
            found[key] += part[key]
    found["new"].sort(key=lambda row: row[0])
    found["known"].sort(key=lambda row: row[0])
    found["seconds"] = time.perf_counter() - began
    found["cpu_seconds"] = _children_cpu() - cpu
    return found


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's finished children: the workers' cost,
    which unlike the wall time does not grow with the machine's other load."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summary(found: dict) -> dict:
    """`run`'s findings as JSON-ready lists: [index, mode, message, reason or None]."""
    return {"new": [[i, f.mode, f.message, None] for i, f, _ in found["new"]],
            "known": [[i, f.mode, f.message, r] for i, f, _, r in found["known"]],
            "raw": found["raw"], "torch_skipped": found.get("torch_skipped", {})}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="fuzz-failures")
    parser.add_argument("--max-lines", type=int, default=8)
    parser.add_argument("--start", type=int, default=0, help="skip the first programs")
    parser.add_argument("--mode", choices=FUZZ_MODES + ("all",), default="default",
                        help="default, nan (NaN/inf in every input), unknown (unknown dims), "
                             "or all three in turn")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes (the programs and findings do not depend on it)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    new = False
    for mode in FUZZ_MODES if args.mode == "all" else (args.mode,):
        found = supervise(args.n, args.seed, args.out, args.max_lines, args.start, mode,
                          args.jobs)
        by_mode = collections.Counter(m for _, m, _, _ in found["new"])
        known = collections.Counter(reason for *_, reason in found["known"])
        print(f"\n[{mode}] {args.n - args.start} programs in {found['seconds']:.1f} s "
              f"({args.jobs} jobs; {found['cpu_seconds']:.1f} CPU s, "
              f"{found['cpu_seconds'] / max(args.n - args.start, 1):.3f} per program); new "
              f"failures: {dict(by_mode)}; known: {dict(known)}; raw Python errors while "
              f"generating: {len(found['raw'])}; not compared with PyTorch: "
              f"{dict(found['torch_skipped'].most_common(8))}")
        for line in sorted(set(found["raw"]))[:20]:
            print("  raw:", line[:200])
        if found["new"] or found["known"]:
            print(f"reproducers written to {args.out}/")
        new = new or bool(found["new"])
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
