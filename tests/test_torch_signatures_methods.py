"""PyTorch's parameters (issue 33) for the `*_copy` functions (their views' parameters;
`narrow_copy` with `out=`), `searchsorted(out=)`, and the Tensor methods `as_strided`
(`storage_offset=None`), `true_divide`/`true_divide_` (`value`, no rounding mode) and
`hsplit`/`vsplit`/`dsplit`; without PyTorch and against it."""

import inspect

import numpy as np
import pytest

import dongjing as dj

RNG = np.random.default_rng(3303)
X = RNG.standard_normal((4, 6))
C = RNG.standard_normal((2, 4, 6))


# --- without PyTorch ----------------------------------------------------------------------------
def test_copy_functions_show_their_views_parameters():
    expected = {"diagonal_copy": ["input", "offset", "dim1", "dim2"],
                "select_copy": ["input", "dim", "index"],
                "transpose_copy": ["input", "dim0", "dim1"],
                "unsqueeze_copy": ["input", "dim"],
                "unbind_copy": ["input", "dim"],
                "narrow_copy": ["input", "dim", "start", "length", "out"]}
    for name, params in expected.items():
        assert list(inspect.signature(getattr(dj, name)).parameters) == params, name
    x = dj.tensor(X)
    got = dj.diagonal_copy(input=x, offset=1, dim1=0, dim2=1)
    np.testing.assert_array_equal(got.numpy(), np.diagonal(X, 1))
    out = dj.empty(2, 6, dtype=dj.float64)
    assert dj.narrow_copy(x, 0, 1, 2, out=out) is out
    np.testing.assert_array_equal(out.numpy(), X[1:3])
    np.testing.assert_array_equal(dj.narrow_copy(input=x, dim=1, start=2, length=3).numpy(),
                                  X[:, 2:5])


def test_searchsorted_writes_into_out():
    seq = dj.tensor([-1.0, 0.0, 0.5, 2.0])
    out = dj.empty(4, 6, dtype=dj.int64)
    assert dj.searchsorted(seq, dj.tensor(X), right=True, out=out) is out
    np.testing.assert_array_equal(out.numpy(), np.searchsorted(seq.numpy(), X, side="right"))


def test_methods_take_pytorchs_names_and_defaults():
    x = dj.tensor(X)
    assert list(inspect.signature(dj.Tensor.true_divide).parameters) == ["self", "value"]
    np.testing.assert_allclose(x.true_divide(value=2.0).numpy(), X / 2)
    np.testing.assert_allclose(x.true_divide(other=x + 10).numpy(), X / (X + 10))
    with pytest.raises(TypeError, match="rounding_mode"):
        x.true_divide(2.0, rounding_mode="floor")
    y = x.clone()
    assert y.true_divide_(value=4.0) is y
    np.testing.assert_allclose(y.numpy(), X / 4)
    np.testing.assert_array_equal(x.as_strided((2, 3), (6, 1), None).numpy(), X[:2, :3])
    np.testing.assert_array_equal(x.as_strided((2, 3), (6, 1), 1).numpy(), X[:2, 1:4])
    c = dj.tensor(C)
    for name, axis in (("hsplit", 1), ("vsplit", 0), ("dsplit", 2)):
        parts = getattr(c, name)(split_size_or_sections=2)
        for got, want in zip(parts, np.split(C, 2, axis)):
            np.testing.assert_array_equal(got.numpy(), want)
        parts = getattr(c, name)(indices_or_sections=[1])  # the function's name still works
        np.testing.assert_array_equal(parts[1].numpy(), np.split(C, [1], axis)[1])


# --- against PyTorch ----------------------------------------------------------------------------
def test_the_calls_give_what_pytorch_gives():
    torch = pytest.importorskip("torch")
    x, tx = dj.tensor(X), torch.from_numpy(X)
    pairs = [
        (dj.diagonal_copy(input=x, offset=-1), torch.diagonal_copy(input=tx, offset=-1)),
        (dj.select_copy(x, 1, 2), torch.select_copy(tx, 1, 2)),
        (dj.transpose_copy(x, 0, 1), torch.transpose_copy(tx, 0, 1)),
        (dj.unsqueeze_copy(x, 1), torch.unsqueeze_copy(tx, 1)),
        (dj.narrow_copy(input=x, dim=1, start=1, length=4),
         torch.narrow_copy(input=tx, dim=1, start=1, length=4)),
        (x.true_divide(3.0), tx.true_divide(3.0)),
        (x.as_strided((3, 2), (2, 1), None), tx.as_strided((3, 2), (2, 1), None)),
        (dj.searchsorted(dj.tensor([0.0, 1.0]), x, side="right"),
         torch.searchsorted(torch.tensor([0.0, 1.0], dtype=torch.float64), tx, side="right")),
    ]
    for ours, theirs in pairs:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())
    out, tout = dj.empty(4, 2, dtype=dj.float64), torch.empty(4, 2, dtype=torch.float64)
    dj.narrow_copy(x, 1, 3, 2, out=out)
    torch.narrow_copy(tx, 1, 3, 2, out=tout)
    np.testing.assert_array_equal(out.numpy(), tout.numpy())
    c, tc = dj.tensor(C), torch.from_numpy(C)
    for name in ("hsplit", "vsplit", "dsplit"):
        for ours, theirs in zip(getattr(c, name)(2), getattr(tc, name)(2)):
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
