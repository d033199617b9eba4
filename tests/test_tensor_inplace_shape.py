"""In-place shape methods (unsqueeze_, squeeze_, transpose_, t_): same values and shape as the
out-of-place ones, the same memory, a version bump; refused where history would break."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.autograd.views import InplaceError


@pytest.mark.parametrize("name, args, shape", [
    ("unsqueeze_", (-1,), (2, 3, 1)), ("unsqueeze_", (0,), (1, 2, 3)),
    ("transpose_", (0, 1), (3, 2)), ("t_", (), (3, 2)),
])
def test_matches_the_out_of_place_method(name, args, shape):
    values = np.arange(6.0).reshape(2, 3)
    x = dj.tensor(values)
    memory, version = x._data, x._version[0]
    assert getattr(x, name)(*args) is x
    expected = getattr(dj.tensor(values), name[:-1])(*args)
    assert x.shape == shape and np.array_equal(x.numpy(), expected.numpy())
    assert np.shares_memory(x._data, memory) and x._version[0] == version + 1


def test_squeeze_in_place_drops_size_one_dims():
    x = dj.zeros(1, 3, 1)
    x.squeeze_(0)
    assert x.shape == (3, 1)
    x.squeeze_()
    assert x.shape == (3,)


def test_target_tensor_gains_a_dim_as_in_the_char_rnn_tutorial():
    target = dj.LongTensor([4, 2, 0])
    target.unsqueeze_(-1)
    assert target.shape == (3, 1) and target[1].tolist() == [2]


def test_refused_where_gradients_or_views_are_involved():
    leaf = dj.ones(2, requires_grad=True)
    with pytest.raises(InplaceError, match="leaf tensor that requires grad .*unsqueeze_"):
        leaf.unsqueeze_(0)
    with pytest.raises(InplaceError, match="gradient is recorded .*x = x.unsqueeze"):
        (leaf * 2).unsqueeze_(0)
    base = dj.zeros(2, 3)
    view = base[0]
    with pytest.raises(InplaceError, match="view or has views"):
        view.unsqueeze_(0)
    with pytest.raises(InplaceError, match="view or has views"):
        base.t_()
    with dj.no_grad():
        leaf.unsqueeze_(0)
    assert leaf.shape == (1, 2)
