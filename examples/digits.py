"""Train on scikit-learn's 8x8 digits with dongjing, both ways: eagerly (define-by-run) and as a
static graph (placeholders + optimizer.minimize + Session), from the same seed.

    python examples/digits.py            # MLP and CNN, both modes; writes examples/out/
    python examples/digits.py --epochs 5 --models mlp
"""

from __future__ import annotations

import argparse
import os
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
    losses: list = field(default_factory=list)
    train_seconds: float = 0.0
    steps: int = 0
    test_accuracy: float = 0.0
    model: nn.Module | None = None
    optimizer: dj.optim.Optimizer | None = None

    @property
    def ms_per_step(self) -> float:
        return 1000.0 * self.train_seconds / max(self.steps, 1)


def _batches(train, epochs: int, seed: int, batch_size: int):
    """The same shuffled batches for every mode: a loader with its own seeded generator."""
    loader = dj.data.DataLoader(train, batch_size=batch_size, shuffle=True,
                                generator=np.random.default_rng(seed))
    for epoch in range(epochs):
        yield epoch, len(loader), loader


def _progress(loader, total, desc):
    if tqdm is None:
        return loader
    return tqdm(loader, total=total, desc=desc, leave=False, unit="step", dynamic_ncols=True)


def _show(bar, loss_sum, correct, seen):
    if tqdm is not None:
        bar.set_postfix(loss=f"{loss_sum / max(seen, 1):.4f}", acc=f"{correct / max(seen, 1):.3f}")


def train_eager(model_name, train, test, epochs, seed=0, batch_size=64, lr=0.05) -> Run:
    """Define-by-run: every step computes now and records the tape; backward(); step()."""
    run = Run(model_name, "eager")
    model = run.model = build(model_name, seed)
    opt = run.optimizer = dj.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for epoch, total, loader in _batches(train, epochs, seed, batch_size):
        bar = _progress(loader, total, f"{model_name} eager  epoch {epoch + 1}/{epochs}")
        loss_sum = correct = seen = 0
        start = time.perf_counter()
        for x, y in bar:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            run.losses.append(loss.item())
            n = len(y)
            loss_sum, seen = loss_sum + run.losses[-1] * n, seen + n
            correct += int((logits.numpy().argmax(1) == y.numpy()).sum())
            _show(bar, loss_sum, correct, seen)
        run.train_seconds += time.perf_counter() - start
        run.steps += total
    x_test, y_test = test.tensors
    with dj.no_grad():
        model.eval()
        run.test_accuracy = float((model(x_test).numpy().argmax(1) == y_test.numpy()).mean())
        model.train()
    return run


def train_static(model_name, train, test, epochs, seed=0, batch_size=64, lr=0.05) -> Run:
    """Define-and-run: build the graph once (placeholders with a None batch dim, minimize),
    then feed batches to Session.run. The model's Parameters are the graph's Variables."""
    run = Run(model_name, "static")
    model = run.model = build(model_name, seed)
    opt = run.optimizer = dj.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    with dj.Graph() as g:
        x = dj.placeholder((None, 64), name="x")
        y = dj.placeholder((None,), dj.int64, name="y")
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        correct_op = dj.sum(dj.eq(dj.argmax(logits, dim=1), y))
        train_op = opt.minimize(loss)
    sess = dj.Session(g)
    for epoch, total, loader in _batches(train, epochs, seed, batch_size):
        bar = _progress(loader, total, f"{model_name} static epoch {epoch + 1}/{epochs}")
        loss_sum = correct = seen = 0
        start = time.perf_counter()
        for xb, yb in bar:
            loss_value, hits, _ = sess.run([loss, correct_op, train_op],
                                           {x: xb.numpy(), y: yb.numpy()})
            run.losses.append(float(loss_value))
            n = len(yb)
            loss_sum, seen, correct = loss_sum + run.losses[-1] * n, seen + n, correct + int(hits)
            _show(bar, loss_sum, correct, seen)
        run.train_seconds += time.perf_counter() - start
        run.steps += total
    x_test, y_test = test.tensors
    predictions = sess.run(logits, {x: x_test.numpy()}).argmax(1)
    run.test_accuracy = float((predictions == y_test.numpy()).mean())
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
    fig, ax = plt.subplots(figsize=(7, 4))
    for r in runs:
        style = "-" if r.mode == "eager" else "--"
        ax.plot(r.losses, style, linewidth=1, label=f"{r.model_name} {r.mode}")
    ax.set(xlabel="step", ylabel="training loss (cross-entropy)", yscale="log",
           title="dongjing on digits: eager and static, same seed")
    ax.legend()
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


def main(argv=None) -> list[Run]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args(argv)
    train, test = dj.data.datasets.digits()
    print(f"digits: {len(train)} training and {len(test)} test examples; "
          f"{args.epochs} epochs, batch 64, SGD lr 0.05 momentum 0.9, seed {args.seed}")
    runs = []
    for name in args.models.split(","):
        for trainer in (train_eager, train_static):
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
    return runs


if __name__ == "__main__":
    main()
