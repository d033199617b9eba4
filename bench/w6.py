"""W6 against W5, interleaved in one process (fairer than separate blocks on a loaded machine):
compiled W5 (unrolled), compiled W6 (a dj.while_loop), W6 through dj.jit's conversion of a
plain `for t in range(steps)` with a tensor `steps`, and eager W5.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \\
        python -m bench.w6 [--repeats 15]
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np


def _runners() -> dict:
    import dongjing as dj
    from bench.systems import dj_eager, dj_static
    from bench.workloads import WORKLOADS

    d = WORKLOADS["W5"].data()
    params = [dj.nn.Parameter(dj.tensor(p.copy())) for p in d.params]

    def step(x, steps):
        w_xh, w_hh, b = params
        for p in params:
            p.grad = None
        h = dj.zeros(x.shape[1], w_hh.shape[0])
        for t in range(steps):  # a tensor `steps`: converted into one while_loop
            h = dj.tanh(x[t] @ w_xh + h @ w_hh + b)
        loss = h.sum()
        loss.backward()
        return loss

    x, steps, converted = dj.tensor(d.x), dj.tensor(np.int64(d.x.shape[0])), dj.jit(step)
    return {
        "compiled W5 (dj-static-O2, unrolled)": dj_static.build("rnn", d, 2).step,
        "compiled W6 (dj-static-O2, while_loop)": dj_static.build("rnn_while", d, 2).step,
        "W6 via dj.jit conversion": lambda: converted(x, steps),
        "eager W5 (dj-eager)": dj_eager.build("rnn", d).step,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--inner", type=int, default=5)
    args = parser.parse_args(argv)
    runners = _runners()
    for run in runners.values():
        for _ in range(args.inner):
            run()
    times: dict = {name: [] for name in runners}
    for _ in range(args.repeats):
        for name, run in runners.items():
            gc.collect()
            start = time.perf_counter()
            for _ in range(args.inner):
                run()
            times[name].append((time.perf_counter() - start) / args.inner * 1e6)
    base = np.median(times["compiled W5 (dj-static-O2, unrolled)"])
    print("| system | median µs/step | min µs | ÷ compiled W5 |\n|---|---:|---:|---:|")
    for name, t in times.items():
        print(f"| {name} | {np.median(t):,.0f} | {min(t):,.0f} | {np.median(t) / base:.2f} |")


if __name__ == "__main__":
    main()
