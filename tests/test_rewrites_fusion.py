"""Elementwise fusion never forms a cycle between kernels: the probe's O2 crash
(`cat([a ** 3, a]) / a[0]`, gradient) and a randomized family of graphs where kernels read each
other's values through non-fusible ops (concat, slices, reductions, transcendental ufuncs)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import dongjing as dj
from dongjing.compiler.passes import fuse_elementwise as fusion
from dongjing.cpu_kernels import kernels

needs_kernels = pytest.mark.skipif(not kernels.available(), reason="numba is not installed")


@needs_kernels
def test_the_probe_program_compiles_at_o2_and_matches_o0():
    n = 131072
    with dj.Graph() as g:
        a = dj.placeholder((n,), dj.float32, name="a")
        d = dj.cat([a ** 3, a], 0) / a[0]
        (ga,) = dj.gradients(d.sum(), [a])
    value = np.random.default_rng(0).random(n, dtype=np.float32) + 0.5
    ref = dj.Session(g, optimize=0).run([d, ga], {a: value})
    got = dj.Session(g, optimize=2).run([d, ga], {a: value})
    for r, o in zip(ref, got):
        np.testing.assert_allclose(o, r, rtol=1e-5)


_BINARY = (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - y, dj.maximum)


def _random_graph(rng: random.Random, n: int = 8):
    """A random DAG over (n,) float32 values mixing fusible and non-fusible ops."""
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((n,), dj.float32, name="x")
        values = [x]
        for _ in range(rng.randint(4, 16)):
            a, b = rng.choice(values), rng.choice(values)
            kind = rng.random()
            if kind < 0.55:
                v = rng.choice(_BINARY)(a, b)
            elif kind < 0.65:
                v = -a
            elif kind < 0.75:
                v = dj.exp(a * 0.01)
            elif kind < 0.85:  # through a concat and a slice, like the probe
                v = dj.cat([a, b], 0)[rng.randint(0, n):][:n] if rng.random() < 0.5 else \
                    dj.cat([a, b], 0)[n:]
                v = v if v.shape == (n,) else a
            elif kind < 0.95:
                v = a / (b[rng.randrange(n)] + 2.0)
            else:
                v = a * a.sum()
            values.append(v)
        loss = sum(v.sum() for v in values[-3:])
        (gx,) = dj.gradients(loss, [x])
    return g, x, [loss, gx] + values[-3:]


def _assert_acyclic_groups(graph):
    groups = fusion._form_groups(graph, 1)
    deps: dict = {}

    def unit(node):
        return ("g", groups[node]) if node in groups else node

    def ancestors(node, seen):  # the units `node` reads, looking through its own group
        for i in node.inputs:
            if unit(i) != unit(node) and unit(i) not in seen:
                seen.add(unit(i))
        return seen

    for node in graph.nodes:
        deps.setdefault(unit(node), set())
        ancestors(node, deps[unit(node)])
    state: dict = {}

    def visit(u):
        state[u] = 1
        for d in deps.get(u, ()):
            assert state.get(d) != 1, "fusion groups form a cycle"
            if d not in state:
                visit(d)
        state[u] = 2

    for u in list(deps):
        if u not in state:
            visit(u)


def test_random_graphs_never_form_fusion_cycles():
    from dongjing.compiler.pipeline import optimize

    rng = random.Random(19)
    for _ in range(100):
        g, x, fetches = _random_graph(rng)
        opt, out, _ = optimize(g, [f.node for f in fetches], [x.node], level=1)
        _assert_acyclic_groups(opt)
        fusion.fuse_elementwise(opt, out, size_min=1)  # its own schedule check must pass


@pytest.fixture
def small_fusion():
    with dj.compiler.options(fusion_min_size=1):
        yield


@needs_kernels
def test_random_graphs_fused_match_the_interpreter(small_fusion):
    rng = random.Random(5)
    value = np.linspace(-2, 2, 8, dtype=np.float32)
    for _ in range(2):
        g, x, fetches = _random_graph(rng)
        with np.errstate(all="ignore"):
            ref = dj.Session(g, optimize=0).run(fetches, {x: value})
            got = dj.Session(g, optimize=2).run(fetches, {x: value})
        for r, o in zip(ref, got):
            np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)
