"""Two-line autograd errors (issue 19 item 10): where a tensor was saved and where it was
changed; the line of the backward that freed the graph; a hook returning a wrong shape."""

import pytest

import dongjing as dj


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(marker))


def test_inplace_error_names_saving_op_and_line_and_modifying_op_and_line():
    a = dj.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2.0
    c = b * b  # saved here
    b.mul_(3.0)  # modified here
    with pytest.raises(dj.AutogradError) as info:
        c.sum().backward()
    message = str(info.value)
    assert "modified by an inplace operation" in message
    assert f"saved by mul at {__file__}:{_line_of('# saved here')}" in message
    assert f"modified by mul_ at {__file__}:{_line_of('# modified here')}" in message
    assert isinstance(info.value, RuntimeError)


def test_inplace_error_under_no_grad_write_and_setitem():
    a = dj.tensor([1.0, 2.0], requires_grad=True)
    b = a + 1.0
    c = dj.exp(b)  # exp saves its input
    with dj.no_grad():
        b[0] = 5.0  # item written
    with pytest.raises(dj.AutogradError) as info:
        c.sum().backward()
    # x[key] = v with a basic key is a copy_ into the view x[key], as in PyTorch
    assert f"modified by copy_ at {__file__}:{_line_of('# item written')}" in str(
        info.value)


def test_inplace_error_when_modification_site_unknown():
    w = dj.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    w._version[0] += 1  # as an optimizer step does
    with pytest.raises(dj.AutogradError, match="no line was recorded"):
        loss.backward()


def test_second_backward_names_the_first_backward_line():
    a = dj.tensor([1.0, 2.0], requires_grad=True)
    loss = (a * a).sum()
    loss.backward()  # first backward
    with pytest.raises(dj.AutogradError, match="second time") as info:
        loss.backward()
    assert f"{__file__}:{_line_of('# first backward')}" in str(info.value)


def test_hook_returning_wrong_shape_names_the_hook():
    def bad_hook(grad):
        return grad.sum()

    a = dj.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3.0
    b.register_hook(bad_hook)
    with pytest.raises(dj.AutogradError, match="bad_hook") as info:
        b.sum().backward()
    assert "shape (2,)" in str(info.value)


def test_leaf_hook_returning_wrong_shape_names_the_hook():
    a = dj.tensor([1.0, 2.0], requires_grad=True)
    a.register_hook(lambda g: dj.ones(3))
    with pytest.raises(dj.AutogradError, match="lambda"):
        (a * 2.0).sum().backward()


def test_hook_returning_right_shape_still_replaces():
    a = dj.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3.0
    b.register_hook(lambda g: g * 2.0)
    b.sum().backward()
    assert a.grad.tolist() == [6.0, 6.0]
