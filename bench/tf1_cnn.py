"""The TF1 CNN tutorial's training step (aymericdamien's convolutional_network_raw.py: two 5x5
SAME convolutions with max pooling, a 1024-unit layer, dropout, Adam) timed in dongjing's
`compat.v1` at optimize=0 and 2 and, where a Python with TensorFlow is given, in TensorFlow's own
`tf.compat.v1` graph mode on the same machine. Measured, not asserted.

    python -m bench.tf1_cnn                              # dongjing only
    python -m bench.tf1_cnn --tf-python /path/to/tf-venv/bin/python

TensorFlow is never a dependency: it runs in its own interpreter (a separate venv), which
imports this file with `--library tensorflow` and prints its median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BATCH, STEPS, REPEATS = 128, 10, 5


def build_and_time(library: str, optimize: int | None, threads: int) -> dict:
    """Build the tutorial's graph in `library` ("dongjing" or "tensorflow"), run its
    initializer, then time `REPEATS` blocks of `STEPS` training steps on one fixed batch."""
    import numpy as np

    if library == "tensorflow":
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
        config = tf.ConfigProto(intra_op_parallelism_threads=threads,
                                inter_op_parallelism_threads=1)
    else:
        import dongjing.compat.v1 as tf

        tf.set_session_optimize(optimize)
        config = None
    tf.set_random_seed(0)
    x_in = tf.placeholder(tf.float32, [None, 784])
    y_in = tf.placeholder(tf.float32, [None, 10])
    keep_prob = tf.placeholder(tf.float32)

    def conv(x, w, b):
        x = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
        return tf.nn.relu(tf.nn.bias_add(x, b))

    def pool(x):
        return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")

    w = {"wc1": tf.Variable(tf.random_normal([5, 5, 1, 32])),
         "wc2": tf.Variable(tf.random_normal([5, 5, 32, 64])),
         "wd1": tf.Variable(tf.random_normal([7 * 7 * 64, 1024])),
         "out": tf.Variable(tf.random_normal([1024, 10]))}
    b = {k: tf.Variable(tf.random_normal([n])) for k, n in
         (("bc1", 32), ("bc2", 64), ("bd1", 1024), ("out", 10))}
    x = tf.reshape(x_in, shape=[-1, 28, 28, 1])
    x = pool(conv(pool(conv(x, w["wc1"], b["bc1"])), w["wc2"], b["bc2"]))
    x = tf.reshape(x, [-1, 7 * 7 * 64])
    x = tf.nn.dropout(tf.nn.relu(tf.matmul(x, w["wd1"]) + b["bd1"]), keep_prob)
    logits = tf.matmul(x, w["out"]) + b["out"]
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=y_in))
    train = tf.train.AdamOptimizer(learning_rate=0.001).minimize(loss)

    rng = np.random.default_rng(0)
    feed = {x_in: rng.random((BATCH, 784), dtype=np.float32),
            y_in: np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)], keep_prob: 0.75}
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        started = time.perf_counter()
        sess.run(train, feed_dict=feed)
        first = time.perf_counter() - started
        times = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            for _ in range(STEPS):
                sess.run(train, feed_dict=feed)
            times.append((time.perf_counter() - started) / STEPS)
    return {"median_ms": 1e3 * statistics.median(times), "min_ms": 1e3 * min(times),
            "max_ms": 1e3 * max(times), "first_call_s": first}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", help="a Python whose environment has TensorFlow")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--library", choices=("dongjing", "tensorflow"), help=argparse.SUPPRESS)
    parser.add_argument("--optimize", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.library:  # one measurement in this process, printed as JSON
        print(json.dumps(build_and_time(args.library, args.optimize, args.threads)))
        return
    env = {**os.environ, **{v: str(args.threads) for v in (
        "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    root = Path(__file__).resolve().parent.parent
    rows = [("dongjing compat.v1, optimize=0", sys.executable, ["--library", "dongjing",
                                                               "--optimize", "0"]),
            ("dongjing compat.v1, optimize=2", sys.executable, ["--library", "dongjing",
                                                               "--optimize", "2"])]
    if args.tf_python:
        rows.append(("TensorFlow tf.compat.v1 (graph mode)", args.tf_python,
                     ["--library", "tensorflow"]))
    print(f"TF1 CNN tutorial step, batch {BATCH}, {args.threads} threads; ms per step "
          f"(median of {REPEATS} x {STEPS} steps, min-max), first step")
    for label, python, extra in rows:
        cmd = [python, str(Path(__file__).resolve()), "--threads", str(args.threads), *extra]
        # src on the path for dongjing; nothing of this checkout shadows TensorFlow
        run_env = dict(env, PYTHONPATH=str(root / "src"))
        done = subprocess.run(cmd, capture_output=True, text=True, env=run_env, cwd=root)
        if done.returncode != 0:
            print(f"| {label} | failed: {done.stderr.strip().splitlines()[-1:]} |")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"| {label} | {r['median_ms']:.1f} ({r['min_ms']:.1f}-{r['max_ms']:.1f}) | "
              f"{r['first_call_s']:.2f} s |")


if __name__ == "__main__":
    main()
