"""Graph placement checks that hold at any world size: `tests/test_distributed_placement.py` runs
them in one process (the graph runs whole) and under `mpiexec -n 2` and `-n 4` (each rank runs
its partition). Each compares with the same model built as an unplaced graph in this process."""

from __future__ import annotations

import sys

import numpy as np

import dongjing as dj
import dongjing.compat.v1 as tf
import dongjing.distributed as dist
import dongjing.nn as nn
import dongjing.nn.functional as F

STEPS = 3


def _layers(n: int):
    dj.manual_seed(4)
    return [nn.Linear(5, 6) if i == 0 else nn.Linear(6, 6 if i < n - 1 else 3) for i in range(n)]


def _data():
    rng = np.random.default_rng(1)
    return rng.standard_normal((7, 5)).astype(np.float32), rng.integers(0, 3, 7)


def _train(stages: int, placed: bool, optimize: int):
    """STEPS SGD-with-momentum steps of a `stages`-layer MLP, layer i on rank i % world when
    `placed`: the losses, the fetched gradients and output, the layers' final parameters."""
    layers = _layers(stages)
    params = [p for layer in layers for p in layer.parameters()]
    opt = dj.optim.SGD(params, lr=0.1, momentum=0.9)
    world = dist.get_world_size()
    with dj.Graph() as g:
        x = dj.placeholder((None, 5))
        y = dj.placeholder((None,), dj.int64)
        h = x
        for i, layer in enumerate(layers):
            if placed:
                with dj.device(f"rank:{i % world}"):
                    h = layer(h).tanh() if i < stages - 1 else layer(h)
            else:
                h = layer(h).tanh() if i < stages - 1 else layer(h)
        loss = F.cross_entropy(h, y)
        grads = dj.gradients(loss, [layers[0].weight, layers[-1].bias])
        train = opt.minimize(loss)
    sess = dj.Session(g, optimize=optimize)
    xv, yv = _data()
    losses, fetched = [], None
    for _ in range(STEPS):
        out = sess.run({"loss": loss, "grads": grads, "train": train}, {x: xv, y: yv})
        assert out["train"] is None
        losses.append(out["loss"])
        fetched = fetched or out["grads"]
    logits = sess.run(h, {x: xv})
    return losses, fetched, logits, [p.numpy().copy() for p in params], layers


def check_placed_training_equals_one_graph():
    """Forward values, their gradients across the cuts and the training updates: every rank
    gets every fetch, equal to the unplaced graph; the layers this rank holds are updated."""
    world = dist.get_world_size()
    stages = max(2, world)
    for optimize in (0, 2):
        want = _train(stages, placed=False, optimize=optimize)
        got = _train(stages, placed=True, optimize=optimize)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, err_msg="losses")
        for a, b in zip(got[1], want[1]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7, err_msg="gradients")
        np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6, err_msg="output")
        layers = got[4]
        mine = [p for i, layer in enumerate(layers) if i % world == dist.get_rank()
                for p in layer.parameters()]
        ids = {id(p) for p in mine}
        params = [p for layer in layers for p in layer.parameters()]
        for p, w in zip(params, want[3]):
            if id(p) in ids:  # a Variable's value lives on the rank it is placed on
                np.testing.assert_allclose(p.numpy(), w, rtol=1e-5, atol=1e-6)


def check_partition_has_sends_and_recvs_at_the_cut():
    world = dist.get_world_size()
    with dj.Graph() as g:
        x = dj.placeholder((2, 3))
        with dj.device("rank:0"):
            a = (x * 2.0).exp()
        with dj.device(f"rank:{world - 1}"):
            b = a.sum()
        c = b + 1.0  # unplaced: with its input, on the last rank
    sess = dj.Session(g)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) / 10
    got = sess.run([a, c], {x: xv})
    np.testing.assert_allclose(got[0], np.exp(2 * xv), rtol=1e-6)
    np.testing.assert_allclose(got[1], np.exp(2 * xv).sum() + 1, rtol=1e-6)
    if world > 1:
        text = "\n".join(str(r.session.optimized_graph(r.targets)) for r in sess._runs.values())
        # rank 0 sends `a` (to the last rank, and as a fetch to all); the others receive
        op = "send(" if dist.get_rank() == 0 else "recv("
        assert op in text, text


def check_compat_v1_task_placement():
    world = dist.get_world_size()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, (None, 2))
        with tf.device("/job:worker/task:0"):
            w = tf.Variable(np.array([[1.0], [2.0]], np.float32))
            h = tf.matmul(x, w)
        with tf.device(f"/job:worker/task:{world - 1}"):
            loss = tf.reduce_sum(tf.square(h))
        step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        xv = np.array([[1.0, 1.0], [0.5, -1.0]], np.float32)
        first, _ = sess.run([loss, step], {x: xv})
        second = sess.run(loss, {x: xv})
    assert abs(first - 11.25) < 1e-4, first  # (3)^2 + (-1.5)^2
    # w -= 0.01 * 2 x^T (x w): [[1], [2]] - 0.01 * 2 * [[2.25], [4.5]]
    h2 = xv @ np.array([[0.955], [1.91]], np.float32)
    np.testing.assert_allclose(second, (h2 ** 2).sum(), rtol=1e-5)


def check_a_rank_outside_the_world_is_named():
    if dist.get_world_size() == 1:
        return  # one process runs the whole graph, placed or not
    with dj.Graph() as g:
        with dj.device(f"rank:{dist.get_world_size()}"):
            z = dj.constant(1.0) * 2.0
    try:
        dj.Session(g).run(z)
    except dist.DistributedError as exc:
        assert "placed on rank" in str(exc) and "mpiexec" in str(exc), exc
    else:
        raise AssertionError("a node on a rank outside the world ran")


CHECKS = [check_placed_training_equals_one_graph, check_partition_has_sends_and_recvs_at_the_cut,
          check_compat_v1_task_placement, check_a_rank_outside_the_world_is_named]

if __name__ == "__main__":
    dist.init(timeout=120)
    for check in CHECKS:
        check()
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {check.__name__} ok", flush=True)
    sys.exit(0)
