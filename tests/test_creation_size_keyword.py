"""The factories take their shape as PyTorch does: ints, one tuple, or `size=` (d2l's LeNet
chapter calls `torch.rand(size=(1, 1, 28, 28), dtype=torch.float32)`)."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj

FACTORIES = ("zeros", "ones", "empty", "rand", "randn")


@pytest.mark.parametrize("name", FACTORIES)
@pytest.mark.parametrize("size", [(2, 3), [4], 5, ()])
def test_size_keyword_gives_the_shape(name, size):
    t = getattr(dj, name)(size=size, dtype=dj.float64, requires_grad=True)
    shape = (size,) if isinstance(size, int) else tuple(size)
    assert t.shape == shape and t.dtype == dj.float64 and t.requires_grad
    t.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.ones(shape))


@pytest.mark.parametrize("name", FACTORIES)
def test_size_keyword_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(dj, name)(size=(3, 2)), getattr(torch, name)(size=(3, 2))
    assert tuple(ours.shape) == tuple(theirs.shape) and str(theirs.dtype) == f"torch.{ours.dtype}"
    if name in ("zeros", "ones"):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("name", FACTORIES)
def test_size_given_twice_is_refused_naming_the_function(name):
    with pytest.raises(dj.errors.ArgumentError, match=f"dj.{name}: the size is given twice"):
        getattr(dj, name)(2, size=(2,))


def test_positional_sizes_still_work():
    assert dj.zeros(2, 3).shape == (2, 3) and dj.rand((4, 1)).shape == (4, 1)
    dj.manual_seed(3)
    a = dj.randn(size=(2, 2))
    dj.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), dj.randn(2, 2).numpy())
