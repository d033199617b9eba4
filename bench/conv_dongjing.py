"""F.conv2d forward + backward in dongjing with the conv2d op (short paths on: blocked im2col)
and with the general path (short paths off: unfold2d + matmul over the whole batch), beside
torch's conv2d, interleaved: W7's two layers, W7's step (no update), the TF1 CNN's two layers.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python -m bench.conv_dongjing
"""

import gc
import os
import time

import numpy as np
import torch

import dongjing as dj
import dongjing.nn.functional as F
from bench.systems.dj_common import convnet_forward
from bench.workloads import make_w7
from dongjing import short_paths

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", 2)))
W7 = make_w7()
RNG = np.random.default_rng(0)
TF1 = {"TF1 conv1": ((128, 1, 28, 28), (32, 1, 5, 5)),
       "TF1 conv2": ((128, 32, 14, 14), (64, 32, 5, 5))}


def _layer_case(name):
    """(dongjing step, torch step) for one convolution of W7 or the TF1 CNN (SAME padding)."""
    if name == "W7 conv1":
        x, w, pad = W7.x, W7.params[0], 0
    elif name == "W7 conv2":
        x = np.maximum(F.conv2d(dj.tensor(W7.x), dj.tensor(W7.params[0])).numpy(), 0)
        w, pad = W7.params[2], 0
    else:
        xs, ws = TF1[name]
        x, w = (RNG.standard_normal(s).astype(np.float32) for s in (xs, ws))
        pad = ws[2] // 2

    def ours():
        xt, wt = dj.tensor(x, requires_grad=True), dj.tensor(w, requires_grad=True)
        F.conv2d(xt, wt, None, 1, pad).sum().backward()

    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)

    def theirs():
        xt.grad = wt.grad = None
        torch.nn.functional.conv2d(xt, wt, None, 1, pad).sum().backward()

    return ours, theirs


def _w7_step():
    def ours():
        ps = [dj.tensor(p, requires_grad=True) for p in W7.params]
        F.cross_entropy(convnet_forward(dj, dj.tensor(W7.x), ps), dj.tensor(W7.y)).backward()

    tp = [torch.tensor(p, requires_grad=True) for p in W7.params]
    tf = torch.nn.functional

    def theirs():
        for p in tp:
            p.grad = None
        h = torch.relu(tf.conv2d(torch.tensor(W7.x), tp[0], tp[1]))
        h = torch.flatten(tf.max_pool2d(torch.relu(tf.conv2d(h, tp[2], tp[3])), 2), 1)
        logits = torch.relu(h @ tp[4] + tp[5]) @ tp[6] + tp[7]
        tf.cross_entropy(logits, torch.tensor(W7.y)).backward()

    return ours, theirs


def main() -> None:
    reps = int(os.environ.get("REPS", 5))
    for name in ["W7 conv1", "W7 conv2", "W7 step", *TF1]:
        ours, theirs = _w7_step() if name == "W7 step" else _layer_case(name)

        def general(ours=ours):
            with short_paths.disabled():
                ours()

        systems = {"im2col (before)": general, "blocked (after)": ours, "torch": theirs}
        times = {k: [] for k in systems}
        for f in systems.values():
            f()
        for _ in range(reps):
            for k, f in systems.items():
                gc.collect()
                t = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t)
        row = " | ".join(f"{k} {1e3 * np.median(v):.1f} ({1e3 * min(v):.1f}-{1e3 * max(v):.1f})"
                         for k, v in times.items())
        print(f"{name}: {row} ms, load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
