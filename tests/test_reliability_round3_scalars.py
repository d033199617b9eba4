"""Issue 30, defect 1: every array a tensor or a gradient holds is an ndarray (0-d included) on
every path, short ones too. Random scalar programs (0-d float64 values reused along several
paths, so gradients are summed) run through eager backward, `dj.grad` and `create_graph`, with
the short paths on and off; the tape, every gradient buffer (seen by hooks) and every result are
checked to be arrays, and the two modes agree bit for bit."""

import contextlib

import numpy as np
import pytest

import dongjing as dj
from dongjing.autograd.function import AccumulateGrad
from dongjing.core import eager_modes

_NDARRAY = np.ndarray


def _issue_repro():
    x = dj.tensor(np.array(1.5), requires_grad=True)
    v1 = x + 0.0
    v2 = v1 / x
    v3 = x / 1.0

    def w(c):
        return dj.tensor(c, dtype=dj.float64)

    loss = (v1 * w(0.3)).sum() + (v2 * w(0.2)).sum() + (v3 * w(0.5)).sum()
    return x, loss


def test_issue_repro_backward_of_0d_float64_runs_and_is_right():
    x, loss = _issue_repro()
    loss.backward()
    assert type(x.grad._data) is _NDARRAY and x.grad.shape == ()
    # d/dx [0.3 (x + 0) + 0.2 (x + 0) / x + 0.5 x / 1] = 0.3 + 0 + 0.5
    assert x.grad.item() == pytest.approx(0.8, abs=1e-12)


def test_two_0d_gradients_summed_in_place_stay_arrays():
    x = dj.tensor(np.array(2.0), requires_grad=True)
    y = x * 3.0
    # y reaches the loss along three paths: the second sum is added into the first in place
    loss = y.sum() + (y * 2.0).sum() + (y * 4.0).sum()
    loss.backward()
    assert type(x.grad._data) is _NDARRAY and x.grad.item() == 21.0


def test_a_custom_function_returning_a_numpy_scalar_gradient():
    class Twice(dj.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return np.float64(2.0) * g.item()  # a NumPy scalar, not an array

    x = dj.tensor(np.array(1.0), requires_grad=True)
    (Twice.apply(x) + x).sum().backward()
    assert type(x.grad._data) is _NDARRAY and x.grad.item() == 3.0


# --- random scalar programs ------------------------------------------------------------------
_UNARY = [
    lambda a: a + 0.0,
    lambda a: a / 1.0,
    lambda a: -a,
    lambda a: a.tanh(),
    lambda a: dj.exp(a * 0.1),
    lambda a: a.sum(),
    lambda a: a.mean(),
    lambda a: a * a,
    lambda a: a.pow(2),
    lambda a: dj.sigmoid(a),
    lambda a: a.reshape(()),
]
_BINARY = [
    lambda a, b: a + b,
    lambda a, b: a - b,
    lambda a, b: a * b,
    lambda a, b: a / (b * b + 1.0),
    lambda a, b: dj.maximum(a, b),
    lambda a, b: a * dj.tensor(0.25, dtype=dj.float64),
]


def _program(seed: int):
    """A function of two 0-d inputs: a few ops, each reading earlier values at random (so most
    values feed several later ones), summed into one weighted loss."""
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(int(rng.integers(4, 9))):
        if rng.random() < 0.5:
            steps.append(("u", int(rng.integers(len(_UNARY))), int(rng.integers(1 << 30))))
        else:
            steps.append(("b", int(rng.integers(len(_BINARY))), int(rng.integers(1 << 30)),
                          int(rng.integers(1 << 30))))
    weights = [float(w) for w in rng.uniform(0.1, 1.0, len(steps) + 2)]

    def run(x, z, hook=None):
        values = [x, z]
        for step in steps:
            if step[0] == "u":
                out = _UNARY[step[1]](values[step[2] % len(values)])
            else:
                out = _BINARY[step[1]](values[step[2] % len(values)],
                                       values[step[3] % len(values)])
            if hook is not None and out.requires_grad:
                out.register_hook(hook)
            values.append(out)
        terms = [(v * dj.tensor(w, dtype=dj.float64)).sum() for v, w in zip(values, weights)]
        loss = terms[0]
        for t in terms[1:]:
            loss = loss + t
        return loss

    return run


def _tape_arrays(root) -> list:
    """Every array the tape below `root` holds: saved inputs and saved outputs."""
    seen, stack, arrays = set(), [root.grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or isinstance(node, AccumulateGrad):
            continue
        seen.add(id(node))
        arrays += [t._data for t in getattr(node, "inputs", ()) if t is not None]
        out = getattr(node, "out_data", None)
        if out is not None and not isinstance(out, dict):
            arrays.append(out)
        stack += [fn for fn, _ in node.next_functions]
    return arrays


@contextlib.contextmanager
def _general_path():
    """Every eager short path off: dispatch and the engine take their general code."""
    eager_modes.note("reliability test: general path", True)
    try:
        yield
    finally:
        eager_modes.note("reliability test: general path", False)


def _inputs(kind: str):
    raw = {"array": (np.array(1.25), np.array(-0.5)),
           "numpy scalar": (np.float64(1.25), np.float64(-0.5))}[kind]
    return [dj.tensor(v, requires_grad=True) for v in raw]


def _run_all(program, kind: str) -> dict:
    results = {}
    seen_grads = []

    # eager backward, with a hook on every intermediate seeing each summed gradient buffer
    x, z = _inputs(kind)
    loss = program(x, z, hook=lambda g: seen_grads.append(type(g._data)))
    assert type(loss._data) is _NDARRAY
    assert all(type(a) is _NDARRAY for a in _tape_arrays(loss))
    loss.backward()
    assert all(t is _NDARRAY for t in seen_grads), seen_grads
    results["backward"] = [t.grad._data if t.grad is not None else None for t in (x, z)]
    for g in results["backward"]:
        assert g is None or type(g) is _NDARRAY

    # the same without hooks (hooks change which buffers are shared)
    x, z = _inputs(kind)
    program(x, z).backward()
    results["backward, no hooks"] = [t.grad._data if t.grad is not None else None
                                     for t in (x, z)]

    # dj.grad
    x, z = _inputs(kind)
    grads = dj.grad(program(x, z), [x, z], allow_unused=True)
    results["dj.grad"] = [g._data if g is not None else None for g in grads]

    # create_graph: first gradients on the tape, then their own backward
    x, z = _inputs(kind)
    first = dj.grad(program(x, z), [x, z], create_graph=True, allow_unused=True)
    total = None
    for g in first:
        if g is not None:
            assert type(g._data) is _NDARRAY
            if g.requires_grad:
                assert all(type(a) is _NDARRAY for a in _tape_arrays(g))
                total = g.sum() if total is None else total + g.sum()
    results["create_graph"] = [g._data if g is not None else None for g in first]
    if total is not None:
        total.backward()
        results["second order"] = [t.grad._data if t.grad is not None else None
                                   for t in (x, z)]
    for name, values in results.items():
        for v in values:
            assert v is None or type(v) is _NDARRAY, (name, type(v))
    return results


@pytest.mark.parametrize("kind", ["array", "numpy scalar"])
@pytest.mark.parametrize("seed", range(40))
def test_random_scalar_programs_hold_arrays_and_agree_with_the_general_path(seed, kind):
    program = _program(seed)
    fast = _run_all(program, kind)
    with _general_path():
        general = _run_all(program, kind)
    assert fast.keys() == general.keys()
    for name in fast:
        for a, b in zip(fast[name], general[name]):
            assert (a is None) == (b is None), name
            if a is not None:  # the short paths compute the same calls: bit for bit
                np.testing.assert_array_equal(a, b, err_msg=name)
    for a, b in zip(fast["backward"], fast["dj.grad"]):
        if a is not None and b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(0, 40, 4))
def test_random_scalar_programs_match_finite_differences(seed):
    program = _program(seed)
    x, z = _inputs("array")
    program(x, z).backward()
    eps = 1e-6
    for k, t in enumerate((x, z)):
        def at(delta, k=k):
            values = [np.array(1.25), np.array(-0.5)]
            values[k] = values[k] + delta
            return program(*[dj.tensor(v) for v in values]).item()

        numeric = (at(eps) - at(-eps)) / (2 * eps)
        got = 0.0 if t.grad is None else t.grad.item()
        assert got == pytest.approx(numeric, rel=1e-5, abs=1e-6)
