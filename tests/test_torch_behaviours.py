"""The PyTorch behaviours that forced edits in published programs (issue 33): each checked
against values worked out here, and against PyTorch itself when it is installed."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

import dongjing as dj
import dongjing.distributed as dist
from dongjing.autograd.views import InplaceError
from dongjing.distributed import DistributedError
from dongjing.errors import ArgumentError, CheckpointError, GraphError


def _torch():
    return pytest.importorskip("torch")


# --- in-place activations ---------------------------------------------------------------------
INPLACE = {
    "relu": (lambda F, x: F.relu(x, inplace=True), lambda a: np.maximum(a, 0),
             lambda a: (a > 0) * 1.0),
    "leaky_relu": (lambda F, x: F.leaky_relu(x, 0.1, inplace=True),
                   lambda a: np.where(a > 0, a, 0.1 * a), lambda a: np.where(a > 0, 1.0, 0.1)),
    "elu": (lambda F, x: F.elu(x, 1.0, inplace=True),
            lambda a: np.where(a > 0, a, np.expm1(a)), lambda a: np.where(a > 0, 1.0, np.exp(a))),
    "silu": (lambda F, x: F.silu(x, inplace=True), lambda a: a / (1 + np.exp(-a)),
             lambda a: (1 + np.exp(-a) + a * np.exp(-a)) / (1 + np.exp(-a)) ** 2),
}
A = np.array([-1.5, -0.3, 0.4, 2.0])


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_activation_overwrites_input_and_differentiates(name):
    run, value, slope = INPLACE[name]
    x = dj.tensor(A, requires_grad=True)
    h = x * 2.0
    out = run(dj.nn.functional, h)
    assert out is h  # the input itself, now holding the result
    np.testing.assert_allclose(h.numpy(), value(2 * A), rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * slope(2 * A), rtol=1e-10)


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_activation_matches_pytorch(name):
    torch = _torch()
    run = INPLACE[name][0]
    x, tx = dj.tensor(A, requires_grad=True), torch.tensor(A, requires_grad=True)
    out, tout = run(dj.nn.functional, x * 3.0), run(torch.nn.functional, tx * 3.0)
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_inplace_modules_and_their_refusals():
    net = dj.nn.Sequential(dj.nn.Linear(3, 4), dj.nn.ReLU(inplace=True), dj.nn.Linear(4, 1))
    assert "ReLU(inplace=True)" in repr(net)
    x = dj.tensor(np.ones((2, 3), np.float32))
    net(x).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    leaf = dj.tensor(A, requires_grad=True)
    with pytest.raises(InplaceError, match="relu_"):
        dj.nn.functional.relu(leaf, inplace=True)
    plain = dj.tensor(A)  # no gradient: overwritten as it is
    dj.nn.ReLU(inplace=True)(plain)
    np.testing.assert_array_equal(plain.numpy(), np.maximum(A, 0))


def test_inplace_dropout_keeps_or_scales_each_element():
    x = dj.tensor(np.ones(1000))
    out = dj.nn.Dropout(0.25, inplace=True)(x)
    assert out is x
    assert set(np.unique(x.numpy())) <= {0.0, 1 / 0.75}
    assert 150 < (x.numpy() == 0).sum() < 350


def test_inplace_relu_in_a_static_graph():
    g = dj.Graph()
    with g.as_default():
        p = dj.placeholder([4], dj.float64)
        y = dj.nn.functional.relu(p * 1.0, inplace=True)
    np.testing.assert_array_equal(dj.Session(g).run(y, {p: A}), np.maximum(A, 0))


# --- Tensor.__format__ ------------------------------------------------------------------------
def test_format_spec_on_a_zero_dim_tensor():
    assert f"{dj.tensor(1.23456):.3f}" == "1.235"
    assert f"{dj.tensor(7):>4d}" == "   7"
    assert f"{dj.tensor([1.0, 2.0])}" == str(dj.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        f"{dj.tensor([1.0, 2.0]):.2f}"


def test_a_python_float_with_a_float64_dtype_keeps_its_digits():
    assert dj.tensor(0.1234567, dtype=dj.float64).item() == 0.1234567
    assert dj.tensor([0.1, 1 / 3], dtype=dj.float64).numpy().tolist() == [0.1, 1 / 3]


def test_format_matches_pytorch():
    torch = _torch()
    for spec in (".4f", "e", "8.2f", ""):
        assert format(dj.tensor(0.1234567, dtype=dj.float64), spec) == \
            format(torch.tensor(0.1234567, dtype=torch.float64), spec)


# --- randint forms ----------------------------------------------------------------------------
@pytest.mark.parametrize("call, low, high, shape", [
    (lambda: dj.randint(10, (3, 2)), 0, 10, (3, 2)),
    (lambda: dj.randint(5, 9, (40,)), 5, 9, (40,)),
    (lambda: dj.randint(high=4, size=(7,)), 0, 4, (7,)),
    (lambda: dj.randint(low=-3, high=0, size=(5,), dtype=dj.int32), -3, 0, (5,)),
])
def test_randint_forms(call, low, high, shape):
    t = call()
    assert t.shape == shape and t.dtype.kind == "i"
    assert (t.numpy() >= low).all() and (t.numpy() < high).all()


def test_randint_refuses_gradients():
    with pytest.raises(ArgumentError, match="floating"):
        dj.randint(3, (2,), requires_grad=True)


# --- assignment and indexing ------------------------------------------------------------------
def test_assigning_a_leading_one_value_into_a_row():
    x = dj.zeros(3, 4)
    x[1] = dj.ones(1, 4)
    x[2] = [[5.0, 6.0, 7.0, 8.0]]
    np.testing.assert_array_equal(x.numpy()[1:], [[1] * 4, [5, 6, 7, 8]])
    with pytest.raises(dj.ShapeError):
        x[0] = dj.ones(2, 4)


def test_assigning_a_leading_one_value_records_its_gradient():
    v = dj.tensor(np.arange(4.0)[None], requires_grad=True)
    x = dj.zeros(3, 4, dtype=dj.float64) * 1.0
    x[1] = v * 2.0
    (x * x).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), 8 * np.arange(4.0)[None])


def test_indexing_with_a_range():
    x = dj.arange(10.0)
    np.testing.assert_array_equal(x[range(2, 8, 2)].numpy(), [2, 4, 6])
    assert x[range(0)].shape == (0,)
    m = dj.tensor(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(m[range(1, 3), 0].numpy(), [4, 8])


def test_range_and_row_assignment_match_pytorch():
    torch = _torch()
    a = np.arange(12.0).reshape(3, 4)
    t, d = torch.tensor(a), dj.tensor(a)
    np.testing.assert_array_equal(d[range(2, 0, -1)].numpy(), t[range(2, 0, -1)].numpy())
    t[0], d[0] = torch.ones(1, 4), dj.ones(1, 4)
    np.testing.assert_array_equal(d.numpy(), t.numpy())


# --- factory keywords -------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda **kw: dj.nn.Linear(3, 2, **kw),
    lambda **kw: dj.nn.Conv2d(1, 2, 3, **kw),
    lambda **kw: dj.nn.Embedding(5, 3, **kw),
    lambda **kw: dj.nn.LayerNorm(4, **kw),
    lambda **kw: dj.nn.BatchNorm1d(4, **kw),
])
def test_layers_take_device_and_dtype(make):
    m = make(device="cpu", dtype=dj.float64)
    assert all(p.dtype == dj.float64 for p in m.parameters())
    assert make(device=dj.device("cpu")).weight.dtype == dj.float32


def test_layer_norm_without_bias():
    ln = dj.nn.LayerNorm(4, bias=False)
    assert ln.bias is None and [n for n, _ in ln.named_parameters()] == ["weight"]


# --- checkpoints through file objects, PyTorch files named ----------------------------------
def test_save_and_load_through_a_file_object(tmp_path):
    buffer = io.BytesIO()
    dj.save({"w": dj.ones(2, 3), "step": 4}, buffer)
    buffer.seek(0)
    back = dj.load(buffer, weights_only=True)
    assert back["step"] == 4 and back["w"].shape == (2, 3)
    path = tmp_path / "c.dj"
    with open(path, "wb") as f:
        dj.save([dj.arange(3)], f)
    with open(path, "rb") as f:
        np.testing.assert_array_equal(dj.load(f)[0].numpy(), [0, 1, 2])
    with open(path, encoding="latin-1") as f, pytest.raises(TypeError, match="'rb'"):
        dj.load(f)


def test_loading_a_pytorch_zip_checkpoint_names_the_format(tmp_path):
    path = tmp_path / "model.pth"
    with zipfile.ZipFile(path, "w") as z:  # torch.save's layout: archive/data.pkl and friends
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    with pytest.raises(CheckpointError, match="PyTorch checkpoint.*zip"):
        dj.load(path)


def test_loading_real_pytorch_files_names_the_format(tmp_path):
    torch = _torch()
    torch.save({"w": torch.ones(2)}, tmp_path / "new.pth")
    torch.save({"w": torch.ones(2)}, tmp_path / "old.pth", _use_new_zipfile_serialization=False)
    with pytest.raises(CheckpointError, match="zip archive"):
        dj.load(tmp_path / "new.pth")
    with pytest.raises(CheckpointError, match="legacy pickle"):
        dj.load(tmp_path / "old.pth")


# --- sampling and selection -------------------------------------------------------------------
def test_multinomial_with_and_without_replacement():
    dj.manual_seed(0)
    draws = dj.multinomial(dj.tensor([0.0, 1.0, 3.0]), 4000, replacement=True).numpy()
    assert draws.dtype == np.int64 and set(np.unique(draws)) == {1, 2}
    assert abs((draws == 2).mean() - 0.75) < 0.03
    rows = dj.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 5.0, 1.0]]).multinomial(2)
    assert rows.shape == (2, 2)
    for row in rows.numpy():
        assert len(set(row)) == 2
    assert set(rows.numpy()[1]) == {2, 3}
    with pytest.raises(ArgumentError, match="without replacement"):
        dj.multinomial(dj.tensor([0.0, 1.0]), 2)
    with pytest.raises(ArgumentError, match="non-negative"):
        dj.multinomial(dj.tensor([-1.0, 1.0]), 1)


def test_one_argument_where_and_nonzero():
    x = dj.tensor([[0, 1, 2], [3, 0, 0]])
    rows, cols = dj.where(x > 0)
    np.testing.assert_array_equal(rows.numpy(), [0, 0, 1])
    np.testing.assert_array_equal(cols.numpy(), [1, 2, 0])
    np.testing.assert_array_equal(dj.nonzero(x).numpy(), [[0, 1], [0, 2], [1, 0]])
    np.testing.assert_array_equal(x.argwhere().numpy(), dj.nonzero(x).numpy())
    assert dj.nonzero(dj.tensor(3.0)).shape == (1, 0)
    assert dj.nonzero(dj.tensor(0.0)).shape == (0, 0)


def test_nonzero_in_a_graph_has_an_unknown_length():
    g = dj.Graph()
    with g.as_default():
        p = dj.placeholder([None, 3], dj.int64)
        rows = dj.nonzero(p)
    assert rows.shape == (None, 2)
    got = dj.Session(g).run(rows, {p: np.array([[0, 1, 2], [3, 0, 0]])})
    np.testing.assert_array_equal(got, [[0, 1], [0, 2], [1, 0]])


def test_nonzero_matches_pytorch():
    torch = _torch()
    a = np.random.default_rng(1).integers(0, 2, (3, 4, 2))
    np.testing.assert_array_equal(dj.nonzero(dj.tensor(a)).numpy(),
                                  torch.nonzero(torch.tensor(a)).numpy())
    for d, t in zip(dj.where(dj.tensor(a) > 0), torch.where(torch.tensor(a) > 0)):
        np.testing.assert_array_equal(d.numpy(), t.numpy())


def test_multinomial_refuses_symbolic_weights():
    with dj.Graph().as_default():
        p = dj.placeholder([3])
        with pytest.raises(GraphError, match="multinomial"):
            dj.multinomial(p, 1)


# --- accelerator and backend flags ------------------------------------------------------------
def test_accelerator_and_backend_flags_answer_truthfully():
    gpu = dj.cuda.is_available()
    assert dj.accelerator.is_available() is gpu
    assert (dj.accelerator.current_accelerator() is None) is not gpu
    assert dj.accelerator.device_count() == dj.cuda.device_count()
    assert dj.backends.mps.is_available() is False and dj.backends.mps.is_built() is False
    assert dj.backends.cudnn.is_available() is False and dj.backends.cudnn.version() is None
    dj.backends.cudnn.benchmark = True  # a flag programs set; dongjing keeps it
    assert dj.backends.cudnn.benchmark is True
    dj.backends.cudnn.benchmark = False
    assert dj.backends.cuda.matmul.allow_tf32 is False
    assert isinstance(dj.backends.cuda.is_built(), bool)


# --- torch.distributed's names ----------------------------------------------------------------
def test_process_group_names_with_one_process():
    dist.init_process_group("gloo", world_size=1, rank=0)
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    t = dj.tensor([1.0, 2.0])
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    assert work.wait() and work.is_completed()
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    gathered = [dj.zeros(2)]
    dist.all_gather(gathered, t)
    np.testing.assert_array_equal(gathered[0].numpy(), [1.0, 2.0])
    assert dist.all_gather(t).shape == (1, 2)
    dist.broadcast(t, src=0)
    dist.barrier()
    with pytest.raises(DistributedError, match="one process group"):
        dist.barrier(group=object())
    dist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(DistributedError, match="world_size=2"):
        dist.init_process_group("nccl", world_size=2)
    with pytest.raises(DistributedError, match="unknown backend"):
        dist.init_process_group("tcp")
    dist.init_process_group()


# --- GradScaler -----------------------------------------------------------------------------
def _model_and_optimizer():
    lin = dj.nn.Linear(2, 1, dtype=dj.float64)
    with dj.no_grad():
        lin.weight.copy_(dj.tensor([[0.5, -1.0]], dtype=dj.float64))
        lin.bias.zero_()
    return lin, dj.optim.SGD(lin.parameters(), lr=0.1)


def test_grad_scaler_scales_unscales_skips_and_adapts():
    lin, opt = _model_and_optimizer()
    scaler = dj.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    x = dj.tensor([[1.0, 2.0]], dtype=dj.float64)
    for _ in range(2):
        opt.zero_grad()
        loss = lin(x).sum()
        scaled = scaler.scale(loss)
        assert scaled.item() == pytest.approx(8.0 * loss.item())
        scaled.backward()
        scaler.step(opt)
        scaler.update()
    np.testing.assert_allclose(lin.weight.numpy(), [[0.5 - 0.2, -1.0 - 0.4]])
    assert scaler.get_scale() == 16.0  # grown after two clean steps
    opt.zero_grad()
    scaler.scale(lin(x).sum() * float("inf")).backward()
    before = lin.weight.numpy().copy()
    assert scaler.step(opt) is None  # skipped: the gradients are not finite
    scaler.update()
    np.testing.assert_array_equal(lin.weight.numpy(), before)
    assert scaler.get_scale() == 8.0
    assert scaler.state_dict()["scale"] == 8.0


def test_cuda_grad_scaler_without_a_gpu_disables_itself_as_pytorch_does():
    if dj.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = dj.cuda.amp.GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0
    t = dj.tensor(2.0)
    assert scaler.scale(t) is t


def test_grad_scaler_matches_pytorch():
    torch = _torch()
    lin, opt = _model_and_optimizer()
    tlin = torch.nn.Linear(2, 1, dtype=torch.float64)
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor([[0.5, -1.0]]))
        tlin.bias.zero_()
    topt = torch.optim.SGD(tlin.parameters(), lr=0.1)
    ours = dj.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)
    theirs = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)
    for factor in (1.0, float("inf"), 2.0):
        opt.zero_grad()
        topt.zero_grad()
        ours.scale(lin(dj.tensor([[1.0, 2.0]], dtype=dj.float64)).sum() * factor).backward()
        theirs.scale(tlin(torch.tensor([[1.0, 2.0]], dtype=torch.float64)).sum()
                     * factor).backward()
        ours.step(opt)
        theirs.step(topt)
        ours.update()
        theirs.update()
        assert ours.get_scale() == theirs.get_scale()
        np.testing.assert_allclose(lin.weight.numpy(), tlin.weight.detach().numpy())
