"""The margin, ranking and likelihood losses added for PyTorch coverage: values and gradients
against PyTorch (table-driven, every reduction), and torch-free checks."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import compare, ints, pos, r

import dongjing as dj
import dongjing.nn as nn
import dongjing.nn.functional as F
from dongjing.errors import ShapeError

# the deprecations PyTorch (and dongjing, as PyTorch) warn of for the legacy forms compared
pytestmark = [pytest.mark.filterwarnings(
                  "ignore:size_average and reduce args will be deprecated:UserWarning"),
              pytest.mark.filterwarnings("ignore:`NLLLoss2d` has been deprecated:FutureWarning")]

SIGNS = np.where(r(4, 5, seed=3) > 0, 1.0, -1.0)
SIGN_ROWS = np.where(r(6, seed=4) > 0, 1.0, -1.0)
LABELS = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 0, 0], [0, 1, 2, 3]])
# (name, positional arrays, keyword arguments)
FUNCTIONS = [
    ("hinge_embedding_loss", (r(4, 5), SIGNS), {}),
    ("hinge_embedding_loss", (r(4, 5), SIGNS), dict(margin=0.5)),
    ("margin_ranking_loss", (r(6), r(6, seed=1), SIGN_ROWS), dict(margin=0.3)),
    ("soft_margin_loss", (r(4, 5), SIGNS), {}),
    ("multilabel_soft_margin_loss", (r(4, 5), (SIGNS > 0).astype(float)), {}),
    ("multilabel_soft_margin_loss", (r(4, 5), (SIGNS > 0).astype(float), pos(5)), {}),
    ("multi_margin_loss", (r(6, 4), ints(6, high=4)), {}),
    ("multi_margin_loss", (r(6, 4), ints(6, high=4)), dict(p=2, margin=0.7)),
    ("multi_margin_loss", (r(6, 4), ints(6, high=4), ), dict(weight=None)),
    ("multi_margin_loss", (r(4), np.array(2)), {}),
    ("multilabel_margin_loss", (r(4, 4), LABELS), {}),
    ("multilabel_margin_loss", (r(4), LABELS[1]), {}),
    ("poisson_nll_loss", (r(4, 5), pos(4, 5) * 2), {}),
    ("poisson_nll_loss", (pos(4, 5), pos(4, 5, seed=2) * 2), dict(log_input=False, full=True)),
    ("gaussian_nll_loss", (r(4, 5), r(4, 5, seed=1), pos(4, 5)), {}),
    ("gaussian_nll_loss", (r(4, 5), r(4, 5, seed=1), pos(4, 1)), dict(full=True)),
    ("gaussian_nll_loss", (r(4, 5), r(4, 5, seed=1), pos(4) * 0.1), dict(eps=0.1)),
    ("triplet_margin_loss", (r(5, 3), r(5, 3, seed=1), r(5, 3, seed=2)), {}),
    ("triplet_margin_loss", (r(5, 3), r(5, 3, seed=1), r(5, 3, seed=2)),
     dict(p=1, swap=True, margin=2.0)),
    ("triplet_margin_with_distance_loss", (r(5, 3), r(5, 3, seed=1), r(5, 3, seed=2)),
     dict(swap=True)),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,arrays,kwargs", FUNCTIONS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FUNCTIONS)])
def test_losses_equal_pytorch(name, arrays, kwargs, reduction):
    torch = pytest.importorskip("torch")
    compare(lambda *a: getattr(F, name)(*a, reduction=reduction, **kwargs),
            lambda *a: getattr(torch.nn.functional, name)(*a, reduction=reduction, **kwargs),
            arrays, wrt=_WRT.get(name))


_WRT = {"soft_margin_loss": (0,), "multilabel_soft_margin_loss": (0,)}


def test_weighted_multi_margin_and_legacy_reduction_equal_pytorch():
    torch = pytest.importorskip("torch")
    w = pos(4)
    compare(lambda x, y: F.multi_margin_loss(x, y, weight=dj.tensor(w)),
            lambda x, y: torch.nn.functional.multi_margin_loss(x, y, weight=torch.tensor(w)),
            (r(6, 4), ints(6, high=4)))
    compare(lambda x, y: F.soft_margin_loss(x, y, size_average=False),
            lambda x, y: torch.nn.functional.soft_margin_loss(x, y, size_average=False),
            (r(4, 5), SIGNS), wrt=(0,))


MODULES = [
    ("HingeEmbeddingLoss", dict(margin=0.5), (r(4, 5), SIGNS)),
    ("MarginRankingLoss", dict(margin=0.2, reduction="sum"), (r(6), r(6, seed=1), SIGN_ROWS)),
    ("SoftMarginLoss", {}, (r(4, 5), SIGNS)),
    ("MultiLabelMarginLoss", {}, (r(4, 4), LABELS)),
    ("MultiLabelSoftMarginLoss", dict(reduce=False), (r(4, 5), (SIGNS > 0).astype(float))),
    ("MultiMarginLoss", dict(p=2), (r(6, 4), ints(6, high=4))),
    ("PoissonNLLLoss", dict(full=True), (r(4, 5), pos(4, 5) * 2)),
    ("GaussianNLLLoss", dict(full=True), (r(4, 5), r(4, 5, seed=1), pos(4, 5))),
    ("TripletMarginLoss", dict(swap=True), (r(5, 3), r(5, 3, seed=1), r(5, 3, seed=2))),
    ("TripletMarginWithDistanceLoss", dict(margin=0.5),
     (r(5, 3), r(5, 3, seed=1), r(5, 3, seed=2))),
    ("NLLLoss2d", {}, (r(2, 3, 2, 2), ints(2, 2, 2))),
]


@pytest.mark.parametrize("name,kwargs,arrays", MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules_equal_pytorch(name, kwargs, arrays):
    torch = pytest.importorskip("torch")
    compare(getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs), arrays,
            wrt=(0,) if name.startswith(("Soft", "MultiLabelSoft")) else None)


def test_hinge_and_margin_by_hand():
    x = dj.tensor([0.3, 2.0, -0.5])
    y = dj.tensor([1.0, -1.0, -1.0])
    np.testing.assert_allclose(F.hinge_embedding_loss(x, y, reduction="none").numpy(),
                               [0.3, 0.0, 1.5])
    out = F.multi_margin_loss(dj.tensor([[0.1, 0.2, 0.4, 0.8]]), dj.tensor([3]))
    np.testing.assert_allclose(out.item(), (0.3 + 0.4 + 0.6) / 4, rtol=1e-6)
    out = F.multilabel_margin_loss(dj.tensor([[0.1, 0.2, 0.4, 0.8]]),
                                   dj.tensor([[3, 0, -1, 1]]))
    np.testing.assert_allclose(out.item(), 0.85, rtol=1e-6)  # PyTorch's documented example


def test_bad_inputs_raise_named_errors():
    with pytest.raises(ShapeError, match="soft_margin_loss"):
        F.soft_margin_loss(dj.zeros(3), dj.zeros(4))
    with pytest.raises(ShapeError, match="gaussian_nll_loss"):
        F.gaussian_nll_loss(dj.zeros(3, 4), dj.zeros(3, 4), dj.ones(2))
    with pytest.raises(dj.DTypeError, match="multi_margin_loss"):
        F.multi_margin_loss(dj.zeros(3, 4), dj.zeros(3))
    with pytest.raises(ValueError, match="margin"):
        nn.TripletMarginLoss(margin=0.0)


def test_losses_in_a_static_graph_equal_eager():
    x, s = r(4, 5).astype(np.float32), SIGNS.astype(np.float32)
    for fn in (F.soft_margin_loss, F.hinge_embedding_loss,
               lambda a, b: F.multilabel_soft_margin_loss(a, (b > 0).float())):
        eager = fn(dj.tensor(x), dj.tensor(s)).item()
        with dj.Graph() as g:
            a, b = dj.placeholder((None, 5)), dj.placeholder((None, 5))
            out = fn(a, b)
        np.testing.assert_allclose(dj.Session(g, optimize=2).run(out, {a: x, b: s}), eager,
                                   rtol=1e-6)
