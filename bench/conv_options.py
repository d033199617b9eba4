"""Options for conv2d's forward + backward measured on NumPy arrays (W7's and the TF1 CNN's
layer shapes, stride 1, no padding): whole-batch im2col (F.conv2d's general path), one GEMM
per kernel offset over NHWC rows (no im2col at all), im2col per block of images into one
reused buffer (what dongjing.ops.conv does), and torch's conv2d where installed. Each option is
checked against the first before timing; the options run interleaved.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m bench.conv_options [W7conv2 ...]
"""

import gc
import os
import sys
import time

import numpy as np

from dongjing.ops.nn import fold_strided, unfold_strided


def im2col_fb(x, w, g):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    cols = np.empty((n, c, kh, kw, oh, ow), x.dtype)
    unfold_strided(np, x, cols, (kh, kw), (1, 1), (0, 0))
    cols = cols.reshape(n, c * kh * kw, oh * ow)
    w2 = w.reshape(o, -1)
    out = np.matmul(w2, cols).reshape(n, o, oh, ow)
    g2 = g.reshape(n, o, oh * ow)
    gw = np.matmul(g2, cols.transpose(0, 2, 1)).sum(0).reshape(w.shape)
    gcols = np.matmul(w2.T, g2).reshape(n, c, kh, kw, oh, ow)
    gx = fold_strided(np, gcols, (h, wd), (kh, kw), (1, 1), (0, 0))
    return out, gx, gw


def rows_fb(x, w, g):
    """NHWC rows: one GEMM per kernel offset over the whole batch (stride 1, no padding)."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    r = n * h * wd
    extra = (kh - 1) * wd + kw - 1
    xr = np.zeros((r + extra, c), x.dtype)
    xr[:r].reshape(n, h, wd, c)[...] = x.transpose(0, 2, 3, 1)
    wt = w.transpose(2, 3, 1, 0).copy()  # kh, kw, C, O
    acc = np.empty((r, o), x.dtype)
    tmp = np.empty((r, o), x.dtype)
    for i in range(kh):
        for j in range(kw):
            off = i * wd + j
            if i == 0 and j == 0:
                np.matmul(xr[off : off + r], wt[i, j], out=acc)
            else:
                np.matmul(xr[off : off + r], wt[i, j], out=tmp)
                acc += tmp
    out = acc.reshape(n, h, wd, o)[:, :oh, :ow].transpose(0, 3, 1, 2).copy()
    gr = np.zeros((n, h, wd, o), x.dtype)
    gr[:, :oh, :ow] = g.transpose(0, 2, 3, 1)
    gr = gr.reshape(r, o)
    gw = np.empty((kh, kw, c, o), x.dtype)
    gxr = np.zeros((r + extra, c), x.dtype)
    tmpc = np.empty((r, c), x.dtype)
    for i in range(kh):
        for j in range(kw):
            off = i * wd + j
            np.matmul(xr[off : off + r].T, gr, out=gw[i, j])
            np.matmul(gr, wt[i, j].T, out=tmpc)
            gxr[off : off + r] += tmpc
    gx = gxr[:r].reshape(n, h, wd, c).transpose(0, 3, 1, 2).copy()
    return out, gx, gw.transpose(3, 2, 0, 1).copy()


def blocked_fb(x, w, g, chunk=8):
    """im2col per chunk of images into one reused buffer."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    w2 = w.reshape(o, -1)
    buf = np.empty((chunk, c, kh, kw, oh, ow), x.dtype)
    out = np.empty((n, o, oh * ow), x.dtype)
    gw = np.zeros((o, c * kh * kw), x.dtype)
    gx = np.empty_like(x)
    g2 = g.reshape(n, o, oh * ow)
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        b = buf[: e - s]
        unfold_strided(np, x[s:e], b, (kh, kw), (1, 1), (0, 0))
        cols = b.reshape(e - s, -1, oh * ow)
        np.matmul(w2, cols, out=out[s:e])
        gs = g2[s:e]
        for k in range(e - s):
            gw += gs[k] @ cols[k].T
        gcols = np.matmul(w2.T, gs).reshape(e - s, c, kh, kw, oh, ow)
        gx[s:e] = fold_strided(np, gcols, (h, wd), (kh, kw), (1, 1), (0, 0))
    return out.reshape(n, o, oh, ow), gx, gw.reshape(w.shape)


def make_torch(x, w, g):
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", 2)))
    xt = torch.from_numpy(x).requires_grad_()
    wt = torch.from_numpy(w).requires_grad_()
    gt = torch.from_numpy(g)

    def f(x_, w_, g_):
        xt.grad = wt.grad = None
        out = torch.nn.functional.conv2d(xt, wt)
        out.backward(gt)
        return out.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()

    return f


SHAPES = {
    "W7conv1": ((64, 1, 28, 28), (32, 1, 3, 3)),
    "W7conv2": ((64, 32, 26, 26), (64, 32, 3, 3)),
    "TF1conv1": ((128, 1, 32, 32), (32, 1, 5, 5)),
    "TF1conv2": ((128, 32, 18, 18), (64, 32, 5, 5)),
}
if __name__ == "__main__":
    rng = np.random.default_rng(0)
    reps = int(os.environ.get("REPS", 5))
    for name, (xs, ws) in SHAPES.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        oh, ow = xs[2] - ws[2] + 1, xs[3] - ws[3] + 1
        g = rng.standard_normal((xs[0], ws[0], oh, ow)).astype(np.float32)
        fns = {"im2col": im2col_fb, "rows": rows_fb, "blocked8": blocked_fb}
        try:
            fns["torch"] = make_torch(x, w, g)
        except ImportError:
            pass
        ref = im2col_fb(x, w, g)
        for k, f in fns.items():
            got = f(x, w, g)
            for a, b in zip(ref, got):
                assert np.allclose(a, b, rtol=1e-3, atol=1e-2 * np.abs(a).max()), (
                    k,
                    np.abs(a - b).max(),
                )
        times = {k: [] for k in fns}
        for _ in range(reps):
            for k, f in fns.items():
                gc.collect()
                t = time.perf_counter()
                f(x, w, g)
                times[k].append(time.perf_counter() - t)
        print(
            name,
            " ".join(
                f"{k}={1e3 * np.median(v):.1f}ms(min {1e3 * min(v):.1f})" for k, v in times.items()
            ),
            "load",
            os.getloadavg()[0],
            flush=True,
        )
