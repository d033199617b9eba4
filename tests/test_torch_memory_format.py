"""PyTorch's `memory_format=` and `layout=` arguments (issue 33): the dtype conversions,
`clone`, `contiguous`, `is_contiguous`, `cpu`, `to`, the `*_like` factories and
`fft.fftfreq` take them under PyTorch's names and defaults; row-major formats are honoured,
channels-last and non-strided layouts refused with an ArgumentError, never ignored."""

import inspect
import pickle

import numpy as np
import pytest

import dongjing as dj
from dongjing.errors import ArgumentError, ShapeError

X = np.arange(24.0).reshape(2, 3, 4)
CONVERSIONS = ["float", "double", "half", "long", "int", "short", "byte", "bool"]


# --- without PyTorch ----------------------------------------------------------------------------
def test_the_names_are_dongjing_objects_that_pickle_as_themselves():
    for name in ("preserve_format", "contiguous_format", "channels_last", "channels_last_3d",
                 "strided"):
        obj = getattr(dj, name)
        assert repr(obj) == f"dongjing.{name}"
        assert pickle.loads(pickle.dumps(obj)) is obj
    assert isinstance(dj.channels_last, dj.memory_format) and isinstance(dj.strided, dj.layout)


@pytest.mark.parametrize("name", CONVERSIONS)
def test_conversions_take_memory_format_positionally_and_by_keyword(name):
    view = dj.tensor(X).permute(2, 0, 1)
    assert not view.is_contiguous()
    method = getattr(view, name)
    assert inspect.signature(method).parameters["memory_format"].default is dj.preserve_format
    expected = getattr(dj.tensor(X), name)().permute(2, 0, 1).numpy()
    for got in (method(), method(dj.preserve_format),
                method(memory_format=dj.contiguous_format)):
        np.testing.assert_array_equal(got.numpy(), expected)
    converted = method(memory_format=dj.contiguous_format)
    if name == "double":  # nothing to convert: the tensor itself, as PyTorch returns it
        assert converted is view
    else:
        assert converted.is_contiguous()
    with pytest.raises(ArgumentError, match="channels_last"):
        method(memory_format=dj.channels_last)


def test_clone_contiguous_cpu_and_to_honour_the_row_major_formats():
    x = dj.tensor(X, requires_grad=True)
    view = x.transpose(0, 2)
    for t in (view.contiguous(), view.contiguous(dj.contiguous_format),
              view.to(dj.float32, memory_format=dj.contiguous_format),
              dj.clone(view, memory_format=dj.contiguous_format),
              view.clone(dj.preserve_format)):
        assert t.is_contiguous()
        np.testing.assert_allclose(t.detach().numpy(), X.transpose(2, 1, 0))
    view.contiguous().sum().backward()  # the copy stays on the tape
    np.testing.assert_array_equal(x.grad.numpy(), np.ones_like(X))
    plain = dj.tensor(X)
    assert plain.contiguous() is plain
    assert view.cpu(memory_format=dj.contiguous_format) is view  # nothing to move: as PyTorch
    for call in (lambda: plain.clone(memory_format=dj.channels_last),
                 lambda: dj.clone(plain, memory_format=dj.channels_last_3d),
                 lambda: plain.contiguous(memory_format=dj.channels_last),
                 lambda: plain.to(memory_format=dj.channels_last),
                 lambda: plain.cpu(memory_format="channels_last")):
        with pytest.raises(ArgumentError, match="memory_format"):
            call()


def test_is_contiguous_answers_for_each_format_from_the_strides():
    nchw = dj.tensor(np.zeros((2, 3, 4, 5)))
    nhwc_view = dj.tensor(np.zeros((2, 4, 5, 3))).permute(0, 3, 1, 2)  # (N, C, H, W) channels-last
    assert nchw.is_contiguous() and not nchw.is_contiguous(dj.channels_last)
    assert nhwc_view.is_contiguous(memory_format=dj.channels_last)
    assert not nhwc_view.is_contiguous()
    ndhwc = dj.tensor(np.zeros((1, 2, 3, 4, 5))).permute(0, 4, 1, 2, 3)
    assert ndhwc.is_contiguous(dj.channels_last_3d) and not ndhwc.is_contiguous(dj.channels_last)
    assert not dj.tensor(X).is_contiguous(dj.channels_last)  # 3-d: never channels-last
    assert dj.tensor(np.zeros((2, 1, 1, 1))).is_contiguous(dj.channels_last)  # size-1 dims


@pytest.mark.parametrize("factory", ["zeros_like", "ones_like", "empty_like"])
def test_like_factories_take_layout_and_memory_format(factory):
    fn = getattr(dj, factory)
    params = list(inspect.signature(fn).parameters)
    assert params == ["input", "dtype", "layout", "device", "requires_grad", "memory_format"]
    x = dj.tensor(X).transpose(0, 1)
    got = fn(x, dtype=dj.float32, layout=dj.strided, device="cpu", requires_grad=True,
             memory_format=dj.contiguous_format)
    assert got.shape == (3, 2, 4) and got.dtype == dj.float32 and got.requires_grad
    assert got.is_contiguous()
    with pytest.raises(ArgumentError, match="layout"):
        fn(x, layout="sparse_coo")
    with pytest.raises(ArgumentError, match="channels_last"):
        fn(dj.zeros(1, 2, 3, 4), memory_format=dj.channels_last)


def test_full_like_takes_pytorch_keywords_and_requires_grad():
    x = dj.tensor(X)
    got = dj.full_like(x, 2.5, dtype=dj.float32, layout=dj.strided, device="cpu",
                       requires_grad=True, memory_format=dj.preserve_format)
    assert got.requires_grad and got.dtype == dj.float32
    np.testing.assert_array_equal(got.detach().numpy(), np.full(X.shape, 2.5, np.float32))
    with pytest.raises(ArgumentError, match="layout"):
        dj.full_like(x, 1.0, layout="sparse_csr")


def test_fftfreq_writes_into_out_and_checks_it():
    out = dj.empty(5)
    assert dj.fft.fftfreq(5, 0.5, out=out, layout=dj.strided) is out
    np.testing.assert_allclose(out.numpy(), np.fft.fftfreq(5, 0.5), rtol=1e-6)
    out = dj.empty(3)
    dj.fft.rfftfreq(4, out=out)
    np.testing.assert_allclose(out.numpy(), np.fft.rfftfreq(4), rtol=1e-6)
    with pytest.raises(ShapeError):
        dj.fft.rfftfreq(4, out=dj.empty(4))
    with pytest.raises(ArgumentError, match="layout"):
        dj.fft.fftfreq(4, layout="sparse_coo")


# --- against PyTorch ----------------------------------------------------------------------------
def test_memory_format_answers_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    cases = [((2, 3, 4, 5), (0, 1, 2, 3)), ((2, 4, 5, 3), (0, 3, 1, 2)), ((2, 1, 1, 1), None),
             ((1, 2, 3, 4, 5), (0, 4, 1, 2, 3)), ((3, 4), (1, 0)), ((2, 3, 4, 5), (0, 2, 1, 3))]
    for shape, perm in cases:
        data = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        ours, theirs = dj.tensor(data), torch.from_numpy(data)
        if perm is not None:
            ours, theirs = ours.permute(*perm), theirs.permute(*perm)
        for name in ("contiguous_format", "channels_last", "channels_last_3d"):
            assert ours.is_contiguous(memory_format=getattr(dj, name)) == \
                theirs.is_contiguous(memory_format=getattr(torch, name)), (shape, perm, name)
        for name in CONVERSIONS:
            a = getattr(ours, name)(memory_format=dj.contiguous_format)
            b = getattr(theirs, name)(memory_format=torch.contiguous_format)
            assert a.is_contiguous() == b.is_contiguous(), (shape, perm, name)
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_like_factories_and_fftfreq_agree_with_pytorch():
    torch = pytest.importorskip("torch")
    x = np.arange(6.0).reshape(2, 3)
    for name in ("zeros_like", "ones_like", "empty_like"):
        a = getattr(dj, name)(dj.tensor(x), dtype=dj.float32, layout=dj.strided,
                              requires_grad=True, memory_format=dj.preserve_format)
        b = getattr(torch, name)(torch.from_numpy(x), dtype=torch.float32, layout=torch.strided,
                                 requires_grad=True, memory_format=torch.preserve_format)
        assert a.shape == tuple(b.shape) and a.requires_grad == b.requires_grad
        if name != "empty_like":
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    a = dj.full_like(dj.tensor(x), 7, dtype=dj.int64, layout=dj.strided, requires_grad=False)
    b = torch.full_like(torch.from_numpy(x), 7, dtype=torch.int64, layout=torch.strided)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    for fn in ("fftfreq", "rfftfreq"):
        ours, theirs = dj.empty(6 if fn == "fftfreq" else 4), torch.empty(6 if fn == "fftfreq"
                                                                         else 4)
        getattr(dj.fft, fn)(6, 0.25, out=ours)
        getattr(torch.fft, fn)(6, 0.25, out=theirs)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
