import numpy as np

import dongjing as dj


def test_seed003_leaf_and_grads():
    w = dj.tensor([1.0], requires_grad=True)
    x = dj.tensor([2.0], requires_grad=True)
    a = dj.add(w, x)
    b = dj.add(w, 1)
    y = dj.mul(a, b)
    y.backward()
    assert w.grad.item() == 5.0
    assert x.grad.item() == 2.0
    assert [t.is_leaf for t in (w, x, a, b, y)] == [True, True, False, False, False]
    assert type(y.grad_fn).__name__ == "MulBackward0"
    np.testing.assert_allclose(y.numpy(), [6.0])
