"""Eager autograd semantics: PyTorch's rules for leaves, accumulation, hooks, in-place, modes."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj


@pytest.mark.parametrize("x0", [-1.5, 0.3, 2.0])
def test_double_backward_of_cube(x0):
    x = dj.tensor(x0, dtype=dj.float64, requires_grad=True)
    (g,) = dj.grad(x**3, x, create_graph=True)
    (gg,) = dj.grad(g, x)
    assert g.item() == pytest.approx(3 * x0**2)
    assert gg.item() == pytest.approx(6 * x0)


@pytest.mark.parametrize("x0", [-1.0, 0.0, 0.7])
def test_double_backward_of_tanh(x0):
    x = dj.tensor(x0, dtype=dj.float64, requires_grad=True)
    (g,) = dj.grad(dj.tanh(x), x, create_graph=True)
    (gg,) = dj.grad(g, x)
    t = np.tanh(x0)
    assert g.item() == pytest.approx(1 - t**2)
    assert gg.item() == pytest.approx(-2 * t * (1 - t**2))


def test_backward_with_create_graph_gives_differentiable_grad():
    x = dj.tensor([1.0, 2.0], dtype=dj.float64, requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    (gg,) = dj.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])


def test_gradients_accumulate_until_cleared():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]
    x.grad.zero_()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    x.grad = None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_grads_of_two_leaves_are_not_aliased():
    x = dj.tensor([1.0], requires_grad=True)
    y = dj.tensor([2.0], requires_grad=True)
    (x + y).sum().backward()
    x.grad.zero_()
    assert y.grad.tolist() == [1.0]


def test_user_gradient_is_not_aliased_by_grad():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    seed = dj.tensor([1.0, 1.0])
    (x + 0.0).backward(seed)
    x.grad.mul_(5)
    assert seed.tolist() == [1.0, 1.0]


def test_node_reached_twice_is_visited_once():
    x = dj.tensor(3.0, requires_grad=True)
    h = x * 2
    y = h * h + h  # h reached along two paths
    y.backward()
    assert x.grad.item() == pytest.approx(2 * (2 * 6.0 + 1))


def test_backward_through_100000_op_chain_is_iterative():
    x = dj.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_non_scalar_backward_without_gradient_raises():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="scalar outputs"):
        (x * 2).backward()


def test_requires_grad_on_integer_tensor_raises():
    with pytest.raises(dj.DTypeError, match="floating point"):
        dj.tensor([1, 2], requires_grad=True)


def test_add_shape_mismatch_names_op_and_shapes():
    a, b = dj.ones(2, 3), dj.ones(4)
    with pytest.raises(dj.ShapeError, match=r"add: shapes \(2, 3\) and \(4,\)"):
        a + b


def test_matmul_shape_mismatch_names_op_and_shapes():
    with pytest.raises(dj.ShapeError, match=r"matmul: shapes \(2, 3\) and \(4, 5\)"):
        dj.ones(2, 3) @ dj.ones(4, 5)


def test_inplace_on_leaf_requiring_grad_raises_outside_no_grad():
    w = dj.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        w -= 1.0
    with dj.no_grad():
        w -= 1.0
    assert w.tolist() == [0.0]
    assert w.is_leaf and w.requires_grad


def test_backward_after_modifying_saved_tensor_raises():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    y = h * h  # saves h
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*MulBackward0"):
        y.sum().backward()


def test_saved_output_modified_in_place_raises():
    x = dj.tensor([0.5], requires_grad=True)
    y = dj.exp(x)
    with dj.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="ExpBackward0"):
        y.backward()


def test_inplace_on_non_leaf_is_recorded():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1.0
    y += x  # y = 2x
    y.mul_(3.0)  # y = 6x
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_no_grad_and_enable_grad_as_context_and_decorator():
    x = dj.tensor([1.0], requires_grad=True)
    with dj.no_grad():
        assert not (x * 2).requires_grad
        with dj.enable_grad():
            assert (x * 2).requires_grad

    @dj.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    assert (x * 2).requires_grad


def test_hooks_see_and_replace_gradients():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    h = x * 3
    h.register_hook(lambda g: g * 10)
    h.sum().backward()
    assert seen == [[30.0, 30.0]]
    assert x.grad.tolist() == [30.0, 30.0]


def test_detach_cuts_the_tape():
    x = dj.tensor([1.0], requires_grad=True)
    y = (x * 2).detach()
    assert not y.requires_grad and y.grad_fn is None
    z = x * y
    z.backward()
    assert x.grad.tolist() == [2.0]


def test_grad_with_allow_unused():
    x = dj.tensor(1.0, requires_grad=True)
    y = dj.tensor(2.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused"):
        dj.grad(x * 2, [x, y])
    gx, gy = dj.grad(x * 2, [x, y], allow_unused=True)
    assert gx.item() == 2.0 and gy is None
    assert x.grad is None  # dj.grad does not accumulate


def test_numpy_works_on_tensor_requiring_grad():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(x * 2), [2.0, 4.0])


def test_repr():
    assert repr(dj.tensor([1.0, 2.0], requires_grad=True)) == (
        "tensor([1., 2.], requires_grad=True)")
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(dj.tensor([1, 2])) == "tensor([1, 2])"


def test_construction_dtypes_and_scalars():
    assert dj.tensor([1.0, 2.0]).dtype == dj.float32
    assert dj.tensor([1, 2]).dtype == dj.int64
    assert dj.tensor([True]).dtype == dj.bool
    assert dj.tensor(np.zeros(2)).dtype == dj.float64
    assert dj.tensor([1, 2], dtype=dj.float64).dtype == dj.float64
    x = dj.tensor([1.0, 2.0])
    assert (2 * x).dtype == dj.float32 and (x / 2).tolist() == [0.5, 1.0]
    assert (1 - x).tolist() == [0.0, -1.0]
    assert (dj.tensor([1, 2]) * 1.5).dtype == dj.float32
    assert (dj.tensor([1, 2]) + dj.tensor([0.5])).dtype == dj.float32
    assert dj.tensor([[1.0, 2.0]]).T.shape == (2, 1)
    assert dj.tensor(3.0).item() == 3.0


def test_max_with_dim_returns_values_and_indices():
    x = dj.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    values, indices = x.max(dim=1)
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    assert dj.max(x).item() == 7.0
    assert x.sum(dim=1, keepdim=True).shape == (2, 1)


def test_linear_weight_gradient_has_the_weights_layout():
    """x @ w.T (every Linear) gives w a C-order gradient, equal to the plain product's: a
    transposed gradient of a C-order weight would make the optimizer step a strided pass."""
    rng = np.random.default_rng(0)
    x = dj.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    w = dj.tensor(rng.standard_normal((4, 3)).astype(np.float32), requires_grad=True)
    (x @ w.T).sum().backward()
    assert w.grad.numpy().flags.c_contiguous
    np.testing.assert_allclose(w.grad.numpy(), np.ones((4, 5), np.float32) @ x.numpy(),
                               rtol=1e-6)
    v = dj.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
    (x @ v).sum().backward()  # a plain operand keeps the usual rule
    assert v.grad.numpy().flags.c_contiguous
    with dj.Graph() as g:  # the same rule in graphs: the same values
        xs = dj.placeholder((5, 3))
        (gw,) = dj.grad((xs @ w.T).sum(), [w])
    np.testing.assert_allclose(dj.Session(g).run(gw, {xs: x.numpy()}), w.grad.numpy(),
                               rtol=1e-6)


def test_size_one_output_seeds_ones_of_its_shape():
    x = dj.tensor([[2.0]], requires_grad=True)
    y = x * 3
    y.backward()
    assert x.grad.shape == (1, 1) and x.grad.tolist() == [[3.0]]
    z = dj.tensor(2.0, dtype=dj.float64, requires_grad=True)
    (z * z).backward()
    assert z.grad.dtype == dj.float64 and z.grad.item() == 4.0


def test_leaf_reached_along_two_paths_gets_one_unaliased_sum():
    x = dj.tensor([1.0, 2.0], requires_grad=True)
    y = dj.tensor([3.0, 4.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    (x * y + x).sum().backward()
    assert seen == [[4.0, 5.0]]  # the hook sees the total, once
    assert x.grad.tolist() == [4.0, 5.0] and y.grad.tolist() == [1.0, 2.0]
    x.grad.zero_()
    assert y.grad.tolist() == [1.0, 2.0]


def test_gradients_of_two_dtypes_meeting_at_a_node_are_summed():
    x = dj.tensor([1.0, 2.0], dtype=dj.float32, requires_grad=True)
    h = x * 1.0
    (h.sum() + (h.to(dj.float64) * 2).sum()).backward()
    assert x.grad.dtype == dj.float32 and x.grad.tolist() == [3.0, 3.0]


def _rnn_like_grads(create_graph: bool):
    rng = np.random.default_rng(7)
    x = dj.tensor(rng.standard_normal((8, 5)).astype(np.float32))
    w = dj.tensor(rng.standard_normal((6, 5)).astype(np.float32), requires_grad=True)
    u = dj.tensor(rng.standard_normal((6, 6)).astype(np.float32), requires_grad=True)
    b = dj.tensor(rng.standard_normal(6).astype(np.float32), requires_grad=True)
    h = dj.tanh(x @ w.T + b)  # a transposed weight, a broadcast bias
    loss = (dj.tanh(h @ u + b) * h).sum()
    return [g.numpy().copy() for g in dj.grad(loss, [w, u, b], create_graph=create_graph)]


def test_off_tape_gradient_products_equal_the_recorded_ones_bit_for_bit():
    # without create_graph the engine's matmul and broadcast-sum gradients skip dispatch;
    # with it they are ops on the tape: the same NumPy calls, the same bits
    for fast, taped in zip(_rnn_like_grads(False), _rnn_like_grads(True)):
        np.testing.assert_array_equal(fast, taped)


def test_the_profiler_still_sees_every_gradient_op():
    with dj.profiler.profile() as prof:
        _rnn_like_grads(False)
    names = [e.name for e in prof.events()]
    assert names.count("matmul") == 2 + 3  # two forward products, three gradient products
    assert "sum" in names  # the bias's broadcast gradient, summed by the op
    assert names.count("add") == 2 + 2  # two forward adds; h's and b's two gradients summed
