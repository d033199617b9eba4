"""dj.set_default_device / get_default_device (PyTorch's names): factories without `device=`
create on the default device; None or "cpu" resets it; a device without a backend is refused."""

from __future__ import annotations

import pytest
from fake_cuda import CArray, fake_cuda

import dongjing as dj
from dongjing.errors import DeviceError


@pytest.fixture(autouse=True)
def _reset():
    yield
    dj.set_default_device(None)


def test_cpu_is_the_default_and_can_be_set_explicitly():
    assert dj.get_default_device() == dj.device("cpu")
    dj.set_default_device("cpu")
    assert dj.zeros(2).device == dj.device("cpu")
    assert dj.get_default_device() == dj.device("cpu")


def test_factories_follow_the_default_device():
    with fake_cuda():
        dj.set_default_device("cuda")
        assert dj.get_default_device() == dj.device("cuda")
        x = dj.randn(3)
        assert isinstance(x._data, CArray) and x.device.type == "cuda"
        assert isinstance(dj.zeros(2)._data, CArray)
        assert dj.ones(2, device="cpu").device == dj.device("cpu")  # an explicit device wins
        dj.set_default_device(None)
        assert dj.zeros(2).device == dj.device("cpu")


def test_a_device_without_a_backend_or_a_bad_argument_is_refused():
    with pytest.raises(DeviceError, match="cuda"):
        dj.set_default_device("cuda")
    with pytest.raises(TypeError, match="set_default_device: device must be"):
        dj.set_default_device(3.5)
    assert dj.get_default_device() == dj.device("cpu")
