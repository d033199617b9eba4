"""Anomaly mode (issue 19 item 9): the first op whose forward or backward output holds NaN or
inf raises AnomalyError naming the op, input shapes/ranges and the user's line."""

import numpy as np
import pytest

import dongjing as dj


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(marker))


@pytest.fixture(autouse=True)
def _quiet_numpy():
    with np.errstate(all="ignore"):
        yield
    assert not dj.is_anomaly_enabled()


def test_forward_nan_names_op_shapes_ranges_and_line():
    x = dj.tensor([1.0, -1.0, 4.0])
    with dj.autograd.detect_anomaly():
        y = x * 2.0
        with pytest.raises(dj.AnomalyError) as info:
            dj.sqrt(y)  # makes a NaN
    message = str(info.value)
    assert "sqrt" in message and "NaN" in message
    assert "(3,) float32 in [-2, 8]" in message
    assert f"{__file__}:{_line_of('# makes a NaN')}" in message


def test_backward_inf_names_the_forward_line():
    x = dj.tensor([1.0, 0.0, 4.0], requires_grad=True)
    with dj.autograd.detect_anomaly():
        y = dj.sqrt(x)  # forward of the bad gradient
        with pytest.raises(dj.AnomalyError) as info:
            y.sum().backward()
    message = str(info.value)
    assert "SqrtBackward0" in message and "inf" in message
    assert f"{__file__}:{_line_of('# forward of the bad gradient')}" in message


def test_off_by_default_and_set_detect_anomaly():
    x = dj.tensor([0.0])
    assert not dj.is_anomaly_enabled()
    assert np.isinf(dj.log(x).numpy()).all()  # no error when off
    dj.set_detect_anomaly(True)
    try:
        assert dj.autograd.is_anomaly_enabled()
        with pytest.raises(dj.AnomalyError, match="log"):
            dj.log(x)
    finally:
        dj.autograd.set_detect_anomaly(False)


def test_decorator_and_finite_values_pass():
    @dj.autograd.detect_anomaly()
    def step(w):
        loss = (dj.tanh(w) * w).sum()
        loss.backward()
        return loss

    w = dj.tensor([0.5, -1.0], requires_grad=True)
    assert np.isfinite(step(w).item())
    assert w.grad is not None


def _nan_graph():
    with dj.Graph() as g:
        x = dj.placeholder((3,), dj.float32, name="x")
        h = x * 2.0
        y = dj.log(h)  # graph line
        out = y.sum()
    return g, x, out


@pytest.mark.parametrize("level", [0, 2])
def test_session_check_numerics_names_the_node_and_line(level):
    g, x, out = _nan_graph()
    sess = dj.Session(g, optimize=level, check_numerics=True)
    assert sess.run(out, {x: np.ones(3, np.float32)}) == pytest.approx(3 * np.log(2.0))
    with pytest.raises(dj.AnomalyError) as info:
        sess.run(out, {x: np.array([1.0, 0.0, 2.0], np.float32)})
    message = str(info.value)
    assert "'log'" in message and "inf" in message
    assert f"test_anomaly.py:{_line_of('# graph line')}" in message
    plain = dj.Session(g, optimize=level)
    assert np.isinf(plain.run(out, {x: np.array([1.0, 0.0, 2.0], np.float32)}))


def test_session_check_numerics_catches_gradients():
    with dj.Graph() as g:
        x = dj.placeholder((2,), dj.float32, name="x")
        y = dj.sqrt(x).sum()
        (gx,) = dj.gradients(y, [x])
    sess = dj.Session(g, check_numerics=True)
    with pytest.raises(dj.AnomalyError, match="inf"):
        sess.run(gx, {x: np.array([0.0, 1.0], np.float32)})


def test_jit_check_numerics_and_anomaly_mode():
    def f(a):
        return dj.log(a * 1.0).sum()

    bad = dj.tensor([1.0, 0.0])
    checked = dj.jit(f, check_numerics=True)
    assert checked(dj.tensor([1.0, 1.0])).item() == 0.0
    with pytest.raises(dj.AnomalyError, match="log"):
        checked(bad)
    plain = dj.jit(f)
    assert np.isinf(plain(bad).item())
    with dj.autograd.detect_anomaly():
        with pytest.raises(dj.AnomalyError, match="log"):
            plain(bad)
