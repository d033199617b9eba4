"""Train on scikit-learn's 8x8 digits with dongjing, both ways: eagerly (define-by-run) and as a
static graph (placeholders + optimizer.minimize + Session), from the same seed; and the same
eager loop with the model compiled by dj.jit (`model = dj.jit(model)`).

    python examples/digits.py            # MLP and CNN, both modes; writes examples/out/
    python examples/digits.py --epochs 5 --models mlp
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F

try:
    from tqdm import tqdm
except ImportError:  # progress bars are optional
    tqdm = None

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


class CNN(nn.Module):
    """Two 3x3 convolutions with max pooling, then a linear classifier (8x8 -> 4x4 -> 2x2)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 2 * 2, 10))

    def forward(self, x):
        return self.classifier(self.features(x.reshape(-1, 1, 8, 8)))


def build(model_name: str, seed: int) -> nn.Module:
    """The model, initialized from `seed` (so both modes start from the same weights)."""
    dj.manual_seed(seed)
    if model_name == "mlp":  # W1: 64-256-256-10
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.Linear(256, 10))
    return CNN()


@dataclass
class Run:
    model_name: str
    mode: str
    epochs: int = 0
    losses: list = field(default_factory=list)
    train_seconds: float = 0.0
    steps: int = 0
    test_accuracy: float = 0.0
    model: nn.Module | None = None
    optimizer: dj.optim.Optimizer | None = None

    @property
    def ms_per_step(self) -> float:
        return 1000.0 * self.train_seconds / max(self.steps, 1)


# progress bars: None = only when stderr is a terminal (captured output stays free of redraws)
SHOW_PROGRESS: bool | None = None


def _show_progress() -> bool:
    if tqdm is None:
        return False
    return sys.stderr.isatty() if SHOW_PROGRESS is None else SHOW_PROGRESS


def _train(run: Run, train, epochs: int, seed: int, batch_size: int, step) -> None:
    """The loop all modes share: the same shuffled batches (a loader with its own seeded
    generator), `step(x, y) -> (loss, correct)`, one tqdm bar per run with the epoch, loss and
    accuracy when `_show_progress()`."""
    loader = dj.data.DataLoader(train, batch_size=batch_size, shuffle=True,
                                generator=np.random.default_rng(seed))
    bar = None
    if _show_progress():
        bar = tqdm(total=epochs * len(loader), leave=False, unit="step",
                   desc=f"{run.model_name} {run.mode:<6}")
    for epoch in range(epochs):
        loss_sum = correct = seen = 0
        start = time.perf_counter()
        for x, y in loader:
            loss, hits = step(x, y)
            run.losses.append(float(loss))
            n = len(y)
            loss_sum, correct, seen = loss_sum + run.losses[-1] * n, correct + int(hits), seen + n
            if bar is not None:  # the postfix waits for the bar's own refresh (its count too)
                bar.set_postfix(epoch=f"{epoch + 1}/{epochs}", loss=f"{loss_sum / seen:.4f}",
                                acc=f"{correct / seen:.3f}", refresh=False)
                bar.update(1)
        run.train_seconds += time.perf_counter() - start
        run.steps += len(loader)
        run.epochs += 1
    if bar is not None:
        bar.close()


def _accuracy(logits: np.ndarray, y) -> float:
    return float((logits.argmax(1) == np.asarray(y)).mean())


def _start(model_name: str, mode: str, seed: int, lr: float) -> Run:
    run = Run(model_name, mode, model=build(model_name, seed))
    run.optimizer = dj.optim.SGD(run.model.parameters(), lr=lr, momentum=0.9)
    return run


def _eager_step(model, opt):
    def step(x, y):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss, dj.sum(dj.eq(dj.argmax(logits, dim=1), y))

    return step


def train_eager(model_name, train, test, epochs, seed=0, batch_size=64, lr=0.05,
                jit=False) -> Run:
    """Define-by-run: every step computes now, records the tape, backward(), step().
    With `jit=True` the same loop runs `dj.jit(model)`: the forward compiled once per batch
    shape, `loss.backward()` through its compiled gradient program."""
    run = _start(model_name, "jit" if jit else "eager", seed, lr)
    step = _eager_step(dj.jit(run.model) if jit else run.model, run.optimizer)
    _train(run, train, epochs, seed, batch_size, step)
    x_test, y_test = test.tensors
    with dj.no_grad():
        run.test_accuracy = _accuracy(run.model.eval()(x_test).numpy(), y_test)
    run.model.train()
    return run


def train_static(model_name, train, test, epochs, seed=0, batch_size=64, lr=0.05) -> Run:
    """Define-and-run: build the graph once (placeholders with a None batch dim, minimize),
    then feed batches to Session.run. The model's Parameters are the graph's Variables."""
    run = _start(model_name, "static", seed, lr)
    with dj.Graph() as g:
        x = dj.placeholder((None, 64), name="x")
        y = dj.placeholder((None,), dj.int64, name="y")
        logits = run.model(x)
        loss = F.cross_entropy(logits, y)
        correct = dj.sum(dj.eq(dj.argmax(logits, dim=1), y))
        train_op = run.optimizer.minimize(loss)
    sess = dj.Session(g)

    def step(xb, yb):
        return sess.run([loss, correct, train_op], {x: xb.numpy(), y: yb.numpy()})[:2]

    _train(run, train, epochs, seed, batch_size, step)
    x_test, y_test = test.tensors
    run.test_accuracy = _accuracy(sess.run(logits, {x: x_test.numpy()}), y_test)
    return run


def save_outputs(runs: list[Run], out_dir: str) -> tuple[str, str | None]:
    """A checkpoint of every trained model (and its optimizer) and the loss-curve PNG."""
    os.makedirs(out_dir, exist_ok=True)
    ckpt = os.path.join(out_dir, "digits.safetensors")
    dj.save({f"{r.model_name}_{r.mode}": {"model": r.model.state_dict(),
                                          "optimizer": r.optimizer.state_dict()} for r in runs},
            ckpt)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ckpt, None
    names = list(dict.fromkeys(r.model_name for r in runs))
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.8), squeeze=False)
    styles = {"eager": dict(linestyle="-", linewidth=3, alpha=0.5),
              "static": dict(linestyle="--", marker="o", markersize=3),
              "jit": dict(linestyle=":", marker="x", markersize=4)}
    for ax, name in zip(axes[0], names):
        for r in (r for r in runs if r.model_name == name):
            steps_per_epoch = len(r.losses) // max(r.epochs, 1)
            per_epoch = np.asarray(r.losses[:steps_per_epoch * r.epochs]).reshape(r.epochs, -1)
            ax.plot(np.arange(1, r.epochs + 1), per_epoch.mean(1), label=r.mode,
                    **styles.get(r.mode, {}))
        ax.set(xlabel="epoch", ylabel="mean training loss", yscale="log", title=name)
        ax.legend()
    fig.suptitle("dongjing on digits: the same seed eagerly, as a static graph, and by dj.jit")
    png = os.path.join(out_dir, "loss_curve.png")
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return ckpt, png


def check_checkpoint(path: str, run: Run, test) -> float:
    """Reload `run`'s model from the checkpoint into a fresh model; its test accuracy."""
    model = build(run.model_name, seed=123)
    model.load_state_dict(dj.load(path)[f"{run.model_name}_{run.mode}"]["model"])
    x_test, y_test = test.tensors
    with dj.no_grad():
        return float((model.eval()(x_test).numpy().argmax(1) == y_test.numpy()).mean())


def blas_threads(n: int):
    """Limit BLAS to `n` threads when threadpoolctl is installed: these matrices are tiny, and
    on a small or busy machine BLAS threads cost far more than they save (10x here)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(n, user_api="blas")


def main(argv=None) -> list[Run]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bars (default: only when stderr is a terminal)")
    args = parser.parse_args(argv)
    global SHOW_PROGRESS
    SHOW_PROGRESS = args.progress
    with blas_threads(args.blas_threads):
        return _main(args)


def _main(args) -> list[Run]:
    train, test = dj.data.datasets.digits()
    print(f"digits: {len(train)} training and {len(test)} test examples; "
          f"{args.epochs} epochs, batch 64, SGD lr 0.05 momentum 0.9, seed {args.seed}")
    trainers = [train_eager, train_static]
    if hasattr(dj, "jit"):
        trainers.append(lambda *a: train_eager(*a, jit=True))
    runs = []
    for name in args.models.split(","):
        for trainer in trainers:
            runs.append(trainer(name, train, test, args.epochs, args.seed))
            r = runs[-1]
            print(f"  {name:<4} {r.mode:<7} test accuracy {r.test_accuracy:.4f}, final loss "
                  f"{r.losses[-1]:.4f}")
    print()
    print(f"{'model':<6}{'mode':<8}{'test acc':>10}{'ms/step':>10}{'max |loss diff|':>18}")
    eager = {r.model_name: r for r in runs if r.mode == "eager"}
    for r in runs:
        diff = np.max(np.abs(np.subtract(r.losses, eager[r.model_name].losses)))
        print(f"{r.model_name:<6}{r.mode:<8}{r.test_accuracy:>10.4f}{r.ms_per_step:>10.2f}"
              f"{diff:>18.2e}")
    ckpt, png = save_outputs(runs, args.out)
    reloaded = check_checkpoint(ckpt, runs[0], test)
    print(f"\ncheckpoint: {ckpt} (reloaded {runs[0].model_name} {runs[0].mode}: test accuracy "
          f"{reloaded:.4f})")
    print(f"loss curve: {png or '(matplotlib not installed)'}")
    print(onnx_line(runs[0], test, args.out))
    return runs


def onnx_line(run: Run, test, out_dir: str) -> str:
    """Export the first trained model to ONNX and check it in onnxruntime (one line)."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "onnx: skipped (pip install 'dongjing[onnx]' for onnx and onnxruntime)"
    x = dj.tensor(np.stack([test[i][0].numpy() for i in range(32)]))
    path = os.path.join(out_dir, f"digits_{run.model_name}.onnx")
    dj.onnx.export(run.model, (x,), path, dynamic_axes={"x": [0]})
    diff = dj.onnx.check_with_onnxruntime(run.model, (x,))
    return f"onnx: {path} (onnxruntime agrees with dongjing to {diff:.1e} on 32 test images)"


if __name__ == "__main__":
    main()
