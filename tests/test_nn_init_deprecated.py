"""nn.init's old names without the underscore (xavier_uniform, ...) still initialize in place
and warn, as PyTorch's do."""

from __future__ import annotations

import numpy as np
import pytest

import dongjing as dj
from dongjing.nn import init


@pytest.mark.parametrize("old, args", [
    ("uniform", (-0.1, 0.1)), ("normal", (0.0, 0.02)), ("constant", (0.3,)),
    ("xavier_uniform", ()), ("xavier_normal", ()), ("kaiming_uniform", ()),
    ("kaiming_normal", ()), ("orthogonal", ()),
])
def test_old_name_warns_and_matches_the_new_one(old, args):
    a, b = dj.zeros(4, 3), dj.zeros(4, 3)
    dj.manual_seed(5)
    with pytest.warns(FutureWarning, match=f"nn.init.{old}` is now deprecated in favor of "
                                          f"`nn.init.{old}_`"):
        out = getattr(init, old)(a, *args)
    dj.manual_seed(5)
    getattr(init, old + "_")(b, *args)
    assert out is a and np.array_equal(a.numpy(), b.numpy())
