"""Issue 30's "silently wrong" and "raw errors" families (the eager and op side): indices out of
range, ints that do not fit their dtype, flatten's dims, concat's promotion in graphs, type
strings, sizes no array can have, window arguments of convolution and pooling, and the slots of
symbolic tensors."""

import numpy as np
import pytest
from reliability_modes import MODES, run_in

import dongjing as dj
from dongjing.errors import (
    ArgumentError,
    DongjingError,
    DTypeError,
    IndexOutOfRangeError,
    OutOfMemoryError,
    ShapeError,
)

F = dj.nn.functional
WEIGHT = np.arange(6, dtype=np.float32).reshape(3, 2)


# --- embedding / index_select refuse indices outside [0, n) ------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", [-1, 3])
def test_embedding_refuses_an_index_out_of_range_in_every_mode(mode, bad):
    with pytest.raises(IndexOutOfRangeError, match=f"embedding: index {bad} is out of range"):
        run_in(mode, lambda i, w: F.embedding(i, w), np.array([0, bad]), WEIGHT)
    assert issubclass(IndexOutOfRangeError, IndexError)  # PyTorch raises IndexError


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("bad", [-1, 2])
def test_index_select_refuses_an_index_out_of_range_in_every_mode(mode, bad):
    with pytest.raises(IndexOutOfRangeError, match=f"index_select: index {bad}"):
        run_in(mode, lambda w, i: dj.index_select(w, 1, i), WEIGHT, np.array([bad]))


@pytest.mark.parametrize("mode", MODES)
def test_embedding_and_index_select_of_valid_indices(mode):
    got = run_in(mode, lambda i, w: F.embedding(i, w), np.array([[2, 0], [1, 1]]), WEIGHT)
    np.testing.assert_array_equal(got, WEIGHT[[[2, 0], [1, 1]]])
    got = run_in(mode, lambda w, i: dj.index_select(w, 0, i), WEIGHT, np.array([2, 2, 0]))
    np.testing.assert_array_equal(got, WEIGHT[[2, 2, 0]])
    empty = run_in(mode, lambda w, i: dj.index_select(w, 0, i), WEIGHT, np.zeros(0, np.int64))
    assert empty.shape == (0, 2)


def test_embedding_module_and_gradient_with_checked_indices():
    emb = dj.nn.Embedding(3, 2)
    with pytest.raises(IndexOutOfRangeError, match="embedding"):
        emb(dj.tensor([-1]))
    emb(dj.tensor([0, 2, 2])).sum().backward()
    np.testing.assert_array_equal(emb.weight.grad.numpy(), [[1, 1], [0, 0], [2, 2]])


def test_embedding_refuses_a_weight_that_is_not_2d():
    with pytest.raises(ShapeError, match="2-d"):
        F.embedding(dj.tensor([0]), dj.ones(3))


# --- Python numbers to a requested dtype --------------------------------------------------------
@pytest.mark.parametrize("data, dtype", [([2**31], dj.int32), ([300], "uint8"), ([-1], "uint8"),
                                         (2**31, dj.int32), ([[1], [2**63 - 1 + 1]], dj.int64)])
def test_an_int_that_does_not_fit_the_dtype_raises(data, dtype):
    with pytest.raises(ArgumentError, match="does not fit"):
        dj.tensor(data, dtype=dtype)


@pytest.mark.parametrize("data, dtype", [([1e20], dj.int64), ([2147483647.5], dj.int32),
                                         ([-1.5], "uint8"), ([float("nan")], dj.int32),
                                         ([float("inf")], dj.int64)])
def test_a_float_that_does_not_fit_an_int_dtype_raises(data, dtype):
    with pytest.raises(ArgumentError, match="fit|NaN"):
        dj.tensor(data, dtype=dtype)


def test_ints_that_fit_and_floats_to_an_int_dtype():
    assert dj.tensor([2**31 - 1, -(2**31)], dtype=dj.int32).tolist() == [2**31 - 1, -(2**31)]
    assert dj.tensor([1.7, -2.5], dtype=dj.int64).tolist() == [1, -2]  # truncated, as PyTorch
    assert dj.tensor([], dtype=dj.int32).shape == (0,)


def test_python_floats_go_straight_to_float64():
    # not through float32 first: 0.1 stays float64's 0.1
    assert dj.tensor([0.1, 0.3], dtype=dj.float64).tolist() == [0.1, 0.3]
    assert dj.tensor(0.1, dtype=dj.float64).item() == 0.1
    assert dj.tensor([0.1]).dtype == dj.float32  # the default is unchanged


# --- flatten ----------------------------------------------------------------------------------
def test_flatten_refuses_start_dim_after_end_dim():
    x = dj.ones(2, 3, 4)
    with pytest.raises(ArgumentError, match="start_dim"):
        dj.flatten(x, 2, 1)
    with pytest.raises(ArgumentError, match="start_dim"):
        x.flatten(-1, 0)
    with pytest.raises(ShapeError, match="out of range"):
        dj.flatten(x, 5)


def test_flatten_of_valid_dims():
    x = dj.ones(2, 3, 4)
    assert dj.flatten(x).shape == (24,) and dj.flatten(x, 1).shape == (2, 12)
    assert dj.flatten(x, 0, 1).shape == (6, 4) and dj.flatten(x, -1, -1).shape == (2, 3, 4)
    assert dj.flatten(dj.tensor(2.0)).shape == (1,) and dj.flatten(dj.tensor(2.0), -1).shape == (1,)


# --- concat promotes as eagerly in graphs and under jit ------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_cat_of_int64_and_float32_is_float32_in_every_mode(mode):
    a, b = np.array([1, 2], np.int64), np.array([0.5], np.float32)
    got = run_in(mode, lambda x, y: dj.cat([x, y]), a, b)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1.0, 2.0, 0.5])
    got = run_in(mode, lambda x, y: dj.stack([x, y]), a[:1], b)
    assert got.dtype == np.float32
    got = run_in(mode, lambda x, y: dj.cat([x, y]), np.array([True]), np.array([3], np.int32))
    assert got.dtype == np.int32


# --- Tensor.type ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, dtype", [("torch.FloatTensor", dj.float32),
                                         ("torch.DoubleTensor", dj.float64),
                                         ("torch.LongTensor", dj.int64),
                                         ("torch.IntTensor", dj.int32),
                                         ("torch.BoolTensor", dj.bool),
                                         ("torch.HalfTensor", dj.float16),
                                         ("torch.float64", dj.float64), ("float64", dj.float64)])
def test_tensor_type_takes_pytorchs_type_strings(text, dtype):
    assert dj.ones(2).type(text).dtype == dtype


@pytest.mark.parametrize("text", ["str", "object", "U", "torch.FooTensor",
                                  "torch.cuda.FloatTensor"])
def test_tensor_type_refuses_other_strings(text):
    with pytest.raises(DTypeError):
        dj.ones(2).type(text)


def test_tensor_type_without_argument_and_dtypes_of_strings():
    assert dj.ones(2).type() == "torch.FloatTensor"
    assert dj.tensor([1]).type() == "torch.LongTensor"
    with pytest.raises(DTypeError, match="not a dtype of tensors"):
        dj.zeros(2, dtype="str")
    with pytest.raises(DTypeError):
        dj.ones(2).to("object")


# --- sizes ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: dj.zeros(2**62), lambda: dj.ones(2**40, 2**40), lambda: dj.full((2**62,), 1.0),
    lambda: dj.empty(2**62), lambda: dj.rand(2**62), lambda: dj.randn(2**62),
    lambda: dj.randint(0, 5, (2**62,)), lambda: dj.arange(0, 2**62), lambda: dj.eye(2**40),
    lambda: dj.linspace(0, 1, 2**62), lambda: dj.Tensor(2**62),
    lambda: dj.ones(1).new_zeros(2**62), lambda: dj.ones(1).new_full((2**62,), 2.0),
], ids=["zeros", "ones", "full", "empty", "rand", "randn", "randint", "arange", "eye",
        "linspace", "Tensor", "new_zeros", "new_full"])
def test_a_size_no_array_can_have_raises_out_of_memory(make):
    with pytest.raises(OutOfMemoryError, match="cannot allocate"):
        make()
    assert issubclass(OutOfMemoryError, MemoryError)


@pytest.mark.parametrize("make", [
    lambda: dj.ones(float("nan")), lambda: dj.zeros(-1), lambda: dj.randn(-2),
    lambda: dj.zeros(2.5), lambda: dj.arange(float("nan")), lambda: dj.arange(0, float("inf")),
    lambda: dj.arange(0, 1, float("nan")), lambda: dj.linspace(0, float("inf"), 3),
    lambda: dj.eye(-1), lambda: dj.ones(1).new_ones(-1), lambda: dj.ones(1).new_empty(float("nan")),
])
def test_non_finite_or_negative_sizes_raise_argument_errors(make):
    with pytest.raises(ArgumentError):
        make()


# --- window arguments of convolution and pooling ----------------------------------------------
X = dj.ones(1, 1, 4, 4)


@pytest.mark.parametrize("make, name", [
    (lambda: dj.nn.MaxPool2d(0), "kernel_size"), (lambda: dj.nn.MaxPool2d(2, stride=0), "stride"),
    (lambda: dj.nn.MaxPool2d(2, padding=-1), "padding"), (lambda: dj.nn.MaxPool2d(-2), "kernel"),
    (lambda: dj.nn.AvgPool2d(0), "kernel_size"), (lambda: dj.nn.AvgPool2d((2, 0)), "kernel"),
    (lambda: dj.nn.Conv2d(1, 1, 0), "kernel_size"), (lambda: dj.nn.Conv1d(1, 1, 0), "kernel"),
    (lambda: dj.nn.Conv1d(1, 1, 2, stride=0), "stride"),
    (lambda: F.max_pool2d(X, 0), "kernel_size"), (lambda: F.max_pool2d(X, 2, stride=0), "stride"),
    (lambda: F.max_pool2d(X, 2.5), "kernel_size"), (lambda: F.avg_pool2d(X, 0), "kernel_size"),
    (lambda: F.avg_pool2d(X, 2, padding=-1), "padding"),
    (lambda: F.conv2d(X, dj.ones(1, 1, 3, 3), stride=0), "stride"),
    (lambda: F.conv2d(X, dj.ones(1, 1, 3, 3), padding=-1), "padding"),
    (lambda: F.conv1d(dj.ones(1, 1, 4), dj.ones(1, 1, 2), stride=0), "stride"),
    (lambda: dj.unfold2d(X, 0), "kernel_size"),
])
def test_zero_or_negative_window_arguments_raise_argument_errors(make, name):
    with pytest.raises(ArgumentError, match=name):
        make()


def test_valid_window_arguments_still_work():
    assert dj.nn.MaxPool2d(2)(X).shape == (1, 1, 2, 2)
    assert dj.nn.AvgPool2d((2, 1), padding=(1, 0))(X).shape == (1, 1, 3, 4)
    assert F.max_pool2d(X, 3, stride=1, padding=1).shape == (1, 1, 4, 4)
    assert dj.nn.Conv1d(1, 2, 2)(dj.ones(1, 1, 4)).shape == (1, 2, 3)
    assert F.conv2d(X, dj.ones(1, 1, 3, 3), stride=(1, 2), padding=1).shape == (1, 1, 4, 2)


# --- symbolic tensors have every slot ---------------------------------------------------------
def test_symbolic_tensors_have_the_view_slot():
    with dj.Graph().as_default():
        x = dj.placeholder([2])
        assert x._view_of is None and (x * 2.0)._view_of is None
        y = x * 1.0
        y.add_(1.0)  # in-place on a symbolic tensor reads the slot
    assert isinstance(y, dj.Tensor)


def test_every_error_above_is_a_dongjing_error():
    for cls in (ArgumentError, DTypeError, IndexOutOfRangeError, OutOfMemoryError, ShapeError):
        assert issubclass(cls, DongjingError)


# --- in-place writes through views agree in graphs and under jit ---------------------------------
def _writes_through_views(x):
    y = x * 1.0
    y.add_(1.0)
    first = y[0:1]
    first.mul_(3.0)  # reaches y, and through y every other view of it
    last = y[1]
    copy = y * 1.0  # taken before the next write: unaffected by it
    last.sub_(10.0)
    return y, first, last, copy


@pytest.mark.parametrize("mode", MODES)
def test_in_place_writes_through_views_in_every_mode(mode):
    y, first, last, copy = run_in(mode, _writes_through_views, np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(y, [6.0, -7.0])
    np.testing.assert_array_equal(first, [6.0])
    np.testing.assert_array_equal(last, -7.0)
    np.testing.assert_array_equal(copy, [6.0, 3.0])


def test_gradient_through_view_writes_under_jit_equals_eager():
    eager = dj.tensor([1.0, 2.0], requires_grad=True)
    (_writes_through_views(eager)[0] * dj.tensor([1.0, 2.0])).sum().backward()
    traced = dj.tensor([1.0, 2.0], requires_grad=True)
    f = dj.jit(lambda x: (_writes_through_views(x)[0] * dj.tensor([1.0, 2.0])).sum())
    f(traced).backward()
    np.testing.assert_array_equal(traced.grad.numpy(), eager.grad.numpy())
    np.testing.assert_array_equal(eager.grad.numpy(), [3.0, 2.0])
