"""`dj.fft`: the real-valued part (frequencies and shifts) against NumPy and PyTorch; the
complex transforms say that dongjing has no complex dtype."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj


@pytest.mark.parametrize("n, d", [(1, 1.0), (4, 0.5), (7, 2.0)])
def test_frequencies_match_numpy(n, d):
    np.testing.assert_allclose(dj.fft.fftfreq(n, d).numpy(), np.fft.fftfreq(n, d), rtol=1e-6)
    np.testing.assert_allclose(dj.fft.rfftfreq(n, d).numpy(), np.fft.rfftfreq(n, d), rtol=1e-6)
    assert dj.fft.fftfreq(n, dtype=dj.float64).dtype == dj.float64


def test_shifts_match_numpy_and_differentiate():
    x = np.arange(15.0).reshape(3, 5)
    np.testing.assert_array_equal(dj.fft.fftshift(dj.tensor(x)).numpy(), np.fft.fftshift(x))
    np.testing.assert_array_equal(dj.fft.ifftshift(dj.tensor(x), dim=1).numpy(),
                                  np.fft.ifftshift(x, axes=1))
    t = dj.tensor(x, requires_grad=True)
    (dj.fft.fftshift(t) * dj.tensor(np.fft.fftshift(x))).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), x)


def test_shifts_match_pytorch():
    torch = pytest.importorskip("torch")
    x = np.arange(24.0).reshape(2, 3, 4)
    for dim in (None, 0, (1, 2)):
        np.testing.assert_array_equal(dj.fft.fftshift(dj.tensor(x), dim).numpy(),
                                      torch.fft.fftshift(torch.tensor(x), dim).numpy())
    np.testing.assert_allclose(dj.fft.fftfreq(6, 0.1).numpy(), torch.fft.fftfreq(6, 0.1).numpy())


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "fft2", "fftn"])
def test_complex_transforms_say_why_they_are_missing(name):
    with pytest.raises(NotImplementedError, match="no complex dtype"):
        getattr(dj.fft, name)(dj.ones(4))
