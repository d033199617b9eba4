"""Every declared short path (`dongjing.short_paths.REGISTRY`) against the general path, bit for
bit: each case runs once as it is and once inside `short_paths.disabled()`. A short path declared
without a case here, or marked in the source (`# short path: NAME`) without a declaration,
fails the suite."""

from __future__ import annotations

import importlib
import pathlib
import re

import numpy as np
import pytest

import dongjing as dj
from dongjing import dispatch, short_paths
from dongjing.cpu_kernels import kernels, parallel

SRC = pathlib.Path(dj.__file__).parent
MARKER = re.compile(r"#\s*short path: ([a-z_]+\.[a-z_0-9.]+)")
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0, 3e38])


def _marked() -> dict:
    """{name: module} of every `# short path: NAME` comment under src/dongjing (imported)."""
    found = {}
    for path in SRC.rglob("*.py"):
        names = MARKER.findall(path.read_text())
        if names:
            module = ".".join(("dongjing",) + path.relative_to(SRC).with_suffix("").parts)
            importlib.import_module(module)  # its declarations run
            for name in names:
                found[name] = module
    return found


def _bits(value):
    """What must agree bit for bit: for a Tensor its array's type, dtype, shape and bytes, and
    whether it requires grad; for an array the same; None stays None."""
    if value is None:
        return None
    if isinstance(value, dj.Tensor):
        return ("tensor", value.requires_grad) + _bits(value._data)
    array = value
    assert type(array) is np.ndarray, f"a {type(array).__name__}, not an ndarray"
    return (array.dtype.str, array.shape, array.tobytes())


def _both(case):
    """`case()` (a list of Tensors/arrays/None) with short paths on, then off; asserts that every
    result agrees bit for bit and gives the results."""
    fast = [_bits(v) for v in case()]
    with short_paths.disabled():
        assert not short_paths.enabled()
        general = [_bits(v) for v in case()]
    assert short_paths.enabled()
    for k, (f, g) in enumerate(zip(fast, general)):
        assert f == g, f"result {k}: short path {f!r:.200} vs general {g!r:.200}"
    assert len(fast) == len(general)
    return fast


def _leaf(values, dtype=np.float32):
    return dj.tensor(np.array(values, dtype=dtype), requires_grad=True)


def _grads(loss, leaves):
    loss.backward()
    return [loss] + [t.grad for t in leaves]


# --- the cases, one or more per declared short path ----------------------------------------
def _apply1():
    out = []
    for dtype in (np.float32, np.float64):
        x = _leaf(SPECIAL.reshape(2, 4), dtype)
        s = dj.sum(x)  # a full reduction: NumPy's scalar becomes a 0-d array
        out += [dj.exp(x), dj.sum(x, dim=1), s, dj.amax(x), dj.neg(x), dj.reshape(x, (4, 2))]
        out += _grads(dj.sum(dj.tanh(x * 0.0)), [x])
        out += [dj.sum(dj.tensor(np.float32(2.5))), dj.abs(dj.tensor(-0.0))]  # 0-d inputs
    return out


def _apply2():
    a, b = _leaf([[1.0, np.nan], [np.inf, -0.0]], np.float64), _leaf([[2.0, 3.0]], np.float32)
    return [dj.maximum(a, b), dj.matmul(a, dj.transpose(a, -2, -1)), dj.pow(dj.abs(a) + 0.5, b),
            dj.hypot(a, b)] + _grads(dj.sum(dj.maximum(a, b) * b), [a, b])


def _apply_binary():
    a, b = _leaf([1.0, -0.0, np.nan, np.inf]), _leaf([3.0, 0.0, 1.0, -np.inf])
    return [a + b, a - b, a * b, a / b, a == b, a < b, a + 1, 2.0 * b,
            dj.tensor(np.array(2.0)) / dj.tensor(np.array(0.0))] + _grads(
        dj.sum(a * b + a / b), [a, b])


def _matmul_grads():
    rng = np.random.default_rng(0)
    x = dj.tensor(rng.standard_normal((5, 3)).astype(np.float32), requires_grad=True)
    w = dj.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    v = dj.tensor(rng.standard_normal((3, 2)).astype(np.float32), requires_grad=True)
    loss = dj.sum(dj.matmul(x, w.T)) + dj.sum(dj.matmul(x, v) * 2.0)  # x @ w.T and x @ v
    return _grads(loss, [x, w, v])


def _sum_to_shape():
    a = _leaf(np.arange(3.0).reshape(3, 1), np.float64)
    b = _leaf(np.arange(8.0).reshape(2, 1, 4) - 3.5, np.float64)
    c = _leaf(np.float64(-1.0), np.float64)  # 0-d: a full reduction of the gradient
    return _grads(dj.sum((a + b) * c), [a, b, c])


def _engine_sums():
    # one leaf reached along three paths: the sums and the in-place third add
    x = _leaf([1.5, -0.0, 2.0], np.float64)
    loss = dj.sum(x * 0.3) + dj.sum((x + 0.0) / x * 0.2) + dj.sum(x / 1.0 * 0.5)
    return _grads(loss, [x])


def _engine_sums_0d():
    # issue 30's crash: 0-d float64 gradients summed by NumPy give a NumPy scalar
    x = dj.tensor(np.array(1.5), requires_grad=True)
    v1 = x + 0.0
    v2 = v1 / x
    v3 = x / 1.0

    def w(c):
        return dj.tensor(c, dtype=dj.float64)

    loss = (v1 * w(0.3)).sum() + (v2 * w(0.2)).sum() + (v3 * w(0.5)).sum()
    y = dj.tensor(np.array(0.5), requires_grad=True)
    return _grads(loss, [x]) + _grads(y * y, [y])  # y*y: mul's two gradients, summed


def _one_root_and_seed():
    x = _leaf([[2.0, -3.0]])
    y = _leaf(np.float64(0.5), np.float64)
    out = _grads(dj.sum(x * x, dim=1, keepdim=True), [x])  # a (1, 1) seed
    out += _grads(dj.exp(y), [y])  # a 0-d seed
    z = _leaf([1.0, 2.0])
    (dj.sum(z) * 2.0).backward(retain_graph=True)
    out.append(z.grad.clone())
    loss = dj.sum(z * z)
    loss.backward(dj.tensor(np.float32(3.0)))  # an explicit seed
    out.append(z.grad)
    return out


def _leaf_at_once():
    x = _leaf([1.0, 2.0, 3.0])
    h = x * 2.0
    h.retain_grad()
    hooked = _leaf([4.0])
    hooked.register_hook(lambda g: g * 10.0)
    loss = dj.sum(h * h) + dj.sum(hooked * x)
    out = _grads(loss, [x, hooked])
    return out + [h.grad]


def _inplace_direct():
    t = dj.tensor(np.array([1.0, -0.0, np.nan, 4.0], np.float32))
    t += dj.tensor(np.array([1.0, 2.0, 3.0, np.inf], np.float32))
    t.mul_(2.5)
    t.sub_(1, alpha=3)
    t.div_(dj.tensor(np.array([2.0, 0.0, 1.0, -1.0], np.float32)))
    return [t, dj.tensor(np.zeros((2, 2))).add_(dj.tensor(np.ones(2)))]


def _halves_eager(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setattr(parallel, "NUMPY_MIN_SIZE", 8)
    if parallel.threads() < 2:
        pytest.skip("one CPU: no second thread to split onto")
    rng = np.random.default_rng(1)

    def case():
        data = rng.standard_normal((4, 2, 5, 5))
        data[0, 0, 0, :2] = [np.nan, -np.inf]
        x = dj.tensor(data, requires_grad=True)
        pooled = dj.nn.functional.max_pool2d(x, 2, padding=1)
        cols = dj.ops.unfold2d(x, (2, 2), (1, 1), (1, 1))
        relu = dj.relu(x)
        loss = dj.sum(pooled) + dj.sum(cols * 0.5) + dj.sum(relu * relu)
        return [pooled, cols, relu] + _grads(loss, [x])

    state = rng.bit_generator.state
    return case, state, rng


def _halves_compiled(compiler_options, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    compiler_options(parallel_min_size=4)
    compiler_options(fusion_min_size=1)
    if parallel.threads() < 2:
        pytest.skip("one CPU: no second thread to split onto")
    data = np.random.default_rng(2).standard_normal((6, 5))

    def case():
        with dj.Graph() as g:
            x = dj.placeholder((6, 5), dj.float64)
            y = dj.tanh(x) * 3.0 + dj.exp(x)
            z = dj.maximum(y, x)
            (gx,) = dj.gradients(dj.sum(z * y), [x])
        sess = dj.Session(g, optimize=2)  # compiled here: the split is decided now
        return list(sess.run([y, z, gx], {x: data}))

    return case


def _index_in_range():
    w = _leaf(np.arange(6.0).reshape(3, 2))
    out = [dj.index_select(w, 0, dj.tensor([2, 0, 2])),
           dj.nn.functional.embedding(dj.tensor([[1, 2]]), w)]
    for bad in (-1, 3):  # the same error either way
        try:
            dj.index_select(w, 0, dj.tensor([bad]))
        except IndexError as exc:
            out.append(dj.tensor(np.array([len(str(exc))])))
    return out + _grads(dj.sum(dj.nn.functional.embedding(dj.tensor([0, 0, 2]), w)), [w])


def _blocked_conv():
    """F.conv2d as the conv2d op (several blocks of images) vs unfold2d + matmul: outputs and
    gradients, float32 and float64, strides and padding, odd sizes (second-order gradients
    agree to rounding only: tests/test_conv_blocked.py)."""
    from dongjing.ops import conv

    rng = np.random.default_rng(3)
    out, block = [], conv.BLOCK_BYTES
    conv.BLOCK_BYTES = 700  # a few images per block, so that blocks meet
    try:
        for dtype, stride, padding in ((np.float32, 1, 0), (np.float64, (2, 1), (1, 2))):
            x = _leaf(rng.standard_normal((5, 3, 7, 6)), dtype)
            w = _leaf(rng.standard_normal((4, 3, 3, 2)), dtype)
            b = _leaf(rng.standard_normal(4), dtype)
            y = dj.nn.functional.conv2d(x, w, b, stride, padding)
            out += [y] + _grads(dj.sum(y * y), [x, w, b])
    finally:
        conv.BLOCK_BYTES = block
    return out


def _relu_bitmask():
    """relu's gradient as g's bits AND a mask vs the masked copy: NaN and infinite values in
    both g and x, signed zeros, subnormals; the op eagerly, its out= form, and in place."""
    from dongjing.ops import relu_grad

    out = []
    for dtype in (np.float32, np.float64):
        values = np.concatenate([SPECIAL, [-np.nan, 1e-45, -1e-45]]).astype(dtype)
        x, g = np.repeat(values, values.size), np.tile(values, values.size)
        out.append(dj.ops.relu_backward(dj.tensor(g), dj.tensor(x)))
        out.append(relu_grad.relu_backward_out(np, g, x, np.empty_like(g)))
        same = g.copy()
        out.append(relu_grad.relu_backward_out(np, same, x, same))  # out is g
        leaf = _leaf(x.reshape(-1, values.size), dtype)
        out += _grads(dj.sum(dj.relu(leaf) * dj.tensor(g.reshape(leaf.shape))), [leaf])
    return out


def _pool_backward():
    """max_pool2d's gradient as one compiled pass per plane vs NumPy's per-offset compares:
    ties, NaN (one or two in a window) and -inf maxima, infinite gradients, windows with a gap
    between them and positions in no window, float32 and float64."""
    from dongjing.ops import pooling

    rng = np.random.default_rng(4)
    out = []
    for dtype in (np.float32, np.float64):
        for kernel, stride in (((2, 2), (2, 2)), ((3, 2), (3, 3)), ((2, 2), (3, 2))):
            x = np.round(rng.standard_normal((3, 2, 9, 10)), 1).astype(dtype)
            x[0, 0, :2, :2] = 1.0
            x[1, 1, 0, 0], x[1, 0, 0, 0] = np.nan, -np.inf
            x[2, 1, 0, 0] = x[2, 1, 1, 0] = np.nan  # two NaNs in a window: the last takes g
            pooled = pooling._max_pool_forward(np, x, kernel, stride, (0, 0))
            for g in (rng.standard_normal(pooled.shape).astype(dtype),
                      np.where(rng.random(pooled.shape) < 0.3, np.inf, -1.0).astype(dtype)):
                out.append(dj.max_pool2d_backward(dj.tensor(g), dj.tensor(x),
                                                  dj.tensor(pooled), kernel, stride, 0))
        leaf = _leaf(rng.standard_normal((2, 3, 6, 6)), dtype)
        out += _grads(dj.sum(dj.nn.functional.max_pool2d(leaf, 2) ** 2), [leaf])
    return out


def _unfold_planes():
    """unfold2d as one compiled pass per plane vs NumPy's strided copies of the padded input:
    strides, padding (zero and -inf), windows skipping rows and columns, NaN and infinities."""
    rng = np.random.default_rng(5)
    out = []
    for dtype in (np.float32, np.float64):
        data = rng.standard_normal((2, 3, 7, 9)).astype(dtype)
        data[0, 0, 0, :3] = [np.nan, np.inf, -0.0]
        for kernel, stride, padding, fill in (((3, 3), (1, 1), (0, 0), 0.0),
                                              ((3, 2), (2, 1), (1, 2), 0.0),
                                              ((2, 4), (3, 3), (2, 1), -np.inf)):
            x = _leaf(data, dtype)
            cols = dj.ops.unfold2d(x, kernel, stride, padding, pad_value=fill)
            out += [cols] + _grads(dj.sum(dj.ops.unfold2d(x, kernel, stride, padding) ** 2),
                                   [x])
    return out


# name -> a case (a function giving the results to compare), or a fixture-taking factory
CASES = {
    "dispatch.apply1": [_apply1],
    "dispatch.apply2": [_apply2],
    "dispatch.apply_binary": [_apply_binary],
    "dispatch.off_tape": [_matmul_grads, _sum_to_shape],
    "linalg.matmul_grad": [_matmul_grads],
    "broadcast.sum_to_shape": [_sum_to_shape],
    "engine.one_root": [_one_root_and_seed, _engine_sums],
    "engine.sum_of": [_engine_sums, _engine_sums_0d],
    "engine.add_into": [_engine_sums, _engine_sums_0d],
    "engine.leaf_at_once": [_leaf_at_once],
    "api.one_root_backward": [_one_root_and_seed],
    "api.size_one_seed": [_one_root_and_seed],
    "tensor_inplace.direct": [_inplace_direct],
    "scatter.index_in_range": [_index_in_range],
    "parallel.halves": ["halves"],  # test_two_halves_equal_one_call below
    "fold_kernel.fold_planes": ["fold"],
    "conv.blocked": [_blocked_conv],
    "relu.bitmask": [_relu_bitmask],
    "unfold_kernel.unfold_planes": [_unfold_planes, _blocked_conv],
    "pool_kernel.max_pool_backward": [_pool_backward],  # test_compiled_fold_equals_numpy below
}


def test_every_declared_short_path_has_a_differential_case():
    marked = _marked()
    declared = dict(short_paths.REGISTRY)
    assert set(marked) <= set(declared), \
        f"marked in the source but never declared: {sorted(set(marked) - set(declared))}"
    unmarked = {n for n, p in declared.items() if marked.get(n) != p.module}
    assert not unmarked, f"declared without a `# short path: NAME` comment in their module: " \
                         f"{sorted(unmarked)}"
    missing = sorted(set(declared) - set(CASES))
    assert not missing, f"short paths without a differential case in {__file__}: {missing}"
    assert not set(CASES) - set(declared), "cases for short paths nobody declares"


@pytest.mark.parametrize("name,case", [
    pytest.param(n, c, id=f"{n}-{c.__name__}",
                 marks=[])
    for n, cs in CASES.items() for c in cs if callable(c)])
def test_short_path_equals_general_path(name, case):
    _both(case)


def test_the_switch_reroutes_dispatch_and_backward(monkeypatch):
    calls = []
    for name in ("_apply1_full", "_apply2_full"):
        real = getattr(dispatch, name)
        monkeypatch.setattr(dispatch, name,
                            lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    dj.exp(x)
    dj.maximum(x, x)
    assert calls == []
    with short_paths.disabled():
        with short_paths.disabled():  # nested blocks: off until the outer one ends
            pass
        assert not short_paths.enabled() and not dispatch._plain.on
        dj.exp(x)
        dj.maximum(x, x)
        assert parallel.threads() == 1
        assert not dispatch.off_tape(x)
    assert calls == ["_apply1_full", "_apply2_full"]
    assert short_paths.enabled() and dispatch._plain.on


def test_two_halves_equal_one_call(compiler_options, monkeypatch):
    case, state, rng = _halves_eager(monkeypatch)
    calls = []
    real = parallel.split_leading
    monkeypatch.setattr(parallel, "split_leading",
                        lambda *a: calls.append(a[0].__name__) or real(*a))
    fast = [_bits(v) for v in case()]
    assert calls, "the eager halves were not taken"
    calls.clear()
    rng.bit_generator.state = state
    with short_paths.disabled():
        general = [_bits(v) for v in case()]
    assert not calls, "the halves were taken with short paths off"
    assert fast == general
    compiled = _halves_compiled(compiler_options, monkeypatch)
    fast = compiled()
    with short_paths.disabled():
        general = compiled()
    for f, g in zip(fast, general):
        assert f.dtype == g.dtype and f.tobytes() == g.tobytes()


@pytest.mark.skipif(not kernels.available(), reason="needs numba")
def test_compiled_fold_equals_numpy():
    rng = np.random.default_rng(3)

    def case():
        cols = rng.standard_normal((2, 3, 2, 2, 4, 4)).astype(np.float32)
        cols[0, 0, 0, 0, 0, 0] = np.nan
        x = dj.tensor(cols, requires_grad=True)
        folded = dj.ops.fold2d(x, (5, 5), (2, 2), (1, 1), (0, 0))
        return [folded] + _grads(dj.sum(folded * folded), [x])

    state = rng.bit_generator.state
    from dongjing.ops import fold_kernel

    assert fold_kernel.fold_planes(np, np.ones((1, 1, 2, 2, 4, 4), np.float32), (5, 5), (2, 2),
                                   (1, 1), (0, 0)) is not None
    fast = [_bits(v) for v in case()]
    rng.bit_generator.state = state
    with short_paths.disabled():
        assert fold_kernel.fold_planes(np, np.ones((1, 1, 2, 2, 4, 4), np.float32), (5, 5),
                                       (2, 2), (1, 1), (0, 0)) is None
        general = [_bits(v) for v in case()]
    assert fast == general


def test_a_short_path_raises_the_general_paths_error():
    # the short paths run the forward before the dtype rule's checks (once the rule's verdict
    # is cached): the error must still be the rule's, without NumPy's chained beneath it
    def errors():
        found = []
        for dtype in (np.float32, np.float32):  # the second call takes the short path
            for fn in (lambda a, b: a @ b, dj.matmul, lambda a, b: a + b, dj.maximum):
                try:
                    fn(dj.ones(2, 3, dtype=dtype), dj.ones(4, 5, dtype=dtype))
                except dj.ShapeError as exc:
                    shown = exc.__cause__ or (None if exc.__suppress_context__
                                              else exc.__context__)
                    found.append((type(exc), str(exc), shown))  # shown: chained in a report
        return found

    fast = errors()
    with short_paths.disabled():
        general = errors()
    assert fast == general and len(fast) == 8
    assert all(shown is None for *_, shown in fast)
