"""Zero-copy exchange: dj.from_dlpack / Tensor.__dlpack__ with NumPy and PyTorch, np.asarray
and dj.from_numpy sharing memory (checked by writing through the other library)."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.tensor.dlpack import InteropError


def test_from_numpy_and_asarray_share_memory():
    a = np.arange(4, dtype=np.float32)
    t = dj.from_numpy(a)
    a[1] = 10.0  # numpy writes, dongjing sees
    assert t.numpy()[1] == 10.0
    t.add_(1.0)  # dongjing writes in place, numpy sees
    np.testing.assert_array_equal(a, [1.0, 11.0, 3.0, 4.0])
    view = np.asarray(t)
    view[0] = -1.0
    assert t[0].item() == -1.0 and np.shares_memory(view, a)


def test_from_dlpack_of_a_numpy_array_shares_memory():
    a = np.zeros((2, 3), np.int64)
    t = dj.from_dlpack(a)
    a[1, 2] = 7
    assert t.numpy()[1, 2] == 7 and t.dtype == dj.int64


def test_numpy_reads_a_tensor_through_dlpack():
    t = dj.tensor([1.0, 2.0, 3.0])
    assert t.__dlpack_device__() == (1, 0)  # CPU
    a = np.from_dlpack(t)
    t.mul_(2.0)
    np.testing.assert_array_equal(a, [2.0, 4.0, 6.0])


def test_torch_round_trip_without_copies():
    torch = pytest.importorskip("torch")
    source = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = dj.from_dlpack(source)
    source[0, 0] = 100.0  # torch writes, dongjing sees
    assert t.numpy()[0, 0] == 100.0 and t.shape == (2, 3)
    back = torch.from_dlpack(t)
    t.add_(1.0)  # dongjing writes, torch sees (both of its views)
    assert back[0, 0].item() == 101.0 and source[1, 2].item() == 6.0
    back[1, 1] = -5.0
    assert t.numpy()[1, 1] == -5.0
    assert dj.from_dlpack(torch.tensor([True, False])).dtype == dj.bool


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(TypeError, match="__dlpack__"):
        dj.from_dlpack([1, 2, 3])
    with pytest.raises(dj.DTypeError):
        dj.from_dlpack(np.array([1 + 2j]))

    class OtherDevice:
        def __dlpack__(self, **kwargs):
            raise BufferError("data is on a GPU")

        def __dlpack_device__(self):
            return (2, 0)

    with pytest.raises(InteropError, match="CPU"):
        dj.from_dlpack(OtherDevice())
    with dj.Graph():
        x = dj.placeholder((2,))
        with pytest.raises(dj.GraphError):
            x.__dlpack__()


class _Refusing:
    """An exporter on the CPU that refuses, as PyTorch does for the cases below."""

    def __init__(self, requires_grad=False, dtype="torch.float32"):
        self.requires_grad, self.dtype = requires_grad, dtype

    def __dlpack__(self, **kwargs):
        raise BufferError("refused")

    def __dlpack_device__(self):
        return (1, 0)


def test_refusals_on_the_cpu_say_what_is_wrong_not_move_to_the_cpu():
    with pytest.raises(InteropError, match=r"requires grad.*x\.detach\(\)") as info:
        dj.from_dlpack(_Refusing(requires_grad=True))
    assert "move it to the CPU" not in str(info.value)
    with pytest.raises(InteropError, match="bfloat16 has no NumPy equivalent") as info:
        dj.from_dlpack(_Refusing(dtype="torch.bfloat16"))
    assert "move it to the CPU" not in str(info.value)
    with pytest.raises(InteropError, match="refused"):
        dj.from_dlpack(_Refusing())


def test_torch_tensors_that_cannot_be_shared_are_named_by_their_reason():
    torch = pytest.importorskip("torch")
    with pytest.raises(InteropError, match="detach"):
        dj.from_dlpack(torch.ones(2, requires_grad=True))
    with pytest.raises(InteropError, match="bfloat16"):
        dj.from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    assert dj.from_dlpack(torch.ones(2, requires_grad=True).detach()).tolist() == [1.0, 1.0]
