"""tf.py_func (also tf.numpy_function): a Python function of NumPy arrays as a graph op, called
each time a run needs its results; like TF's, it has no gradient."""

from __future__ import annotations

import numpy as np

from ...core.registry import Spec, register
from ...dispatch import apply
from ...errors import DTypeError, GraphError
from ...graph.builder import constant
from .dtypes import as_dtype
from .graphs import tf_function
from .math_ops import _t


class _Call:
    """The Python function and the results of its latest call (read by the other outputs)."""

    def __init__(self, func, touts):
        self.func, self.touts, self.results = func, touts, None

    def __call__(self, arrays):
        out = self.func(*arrays)
        values = list(out) if isinstance(out, (list, tuple)) else [out]
        if len(values) != len(self.touts):
            raise GraphError(f"tf.py_func: {getattr(self.func, '__name__', 'the function')} "
                             f"returned {len(values)} values, Tout lists {len(self.touts)}")
        results = []
        for i, (value, dtype) in enumerate(zip(values, self.touts)):
            array = np.asarray(value)
            if array.dtype != dtype and not (array.dtype.kind == dtype.kind == "f"
                                             and np.can_cast(array.dtype, dtype, "same_kind")):
                raise DTypeError(f"tf.py_func: result {i} has dtype {array.dtype}, Tout says "
                                 f"{dtype}")
            results.append(array.astype(dtype, copy=False))
        self.results = results
        return results


def _first_forward(*arrays, call, index, spec):
    return call(arrays)[0]


def _spec_infer(*specs, call, index, spec):
    return spec.shape, spec.dtype


def _other_forward(first, call, index, spec):
    return call.results[index]


# both read Python state that changes from call to call: declared random, so the compiler
# never folds them or merges two calls into one
_call_op = register("tf_py_func", forward=_first_forward, infer=_spec_infer, random=True,
                    onnx_reason="runs a Python function (compat.v1's tf.py_func)",
                    doc="tf.py_func: calls a Python function of the inputs' arrays (its first "
                        "result).")
_result_op = register("tf_py_func_result", forward=_other_forward, infer=_spec_infer,
                      random=True, onnx_reason="a result of compat.v1's tf.py_func",
                      doc="Another result of the tf_py_func call it takes as input.")


def _probe_ranks(func, inputs, count: int) -> list[int]:
    """The ranks of `func`'s results, from one call on zeros shaped like the inputs (graph
    values need a rank when built; TF leaves them unknown)."""
    try:
        out = func(*[np.zeros([d if d is not None else 1 for d in t.shape], t.dtype)
                     for t in inputs])
    except Exception as exc:
        raise GraphError(f"tf.py_func: calling {getattr(func, '__name__', 'the function')} once "
                         f"on zeros shaped like its inputs (to learn the rank of its results, "
                         f"which dongjing's graphs need) failed: {exc}") from exc
    values = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(values) != count:
        raise GraphError(f"tf.py_func: the function returned {len(values)} values, Tout lists "
                         f"{count}")
    return [np.ndim(v) for v in values]


@tf_function
def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803
    """The results of `func(*arrays)` on the values of `inp` when the graph runs: a tensor,
    or a list when Tout is a list. The results' shapes are unknown when building (their rank is
    learnt by calling `func` once on zeros)."""
    inputs = [_t(t) for t in inp]
    single = not isinstance(Tout, (list, tuple))
    touts = [as_dtype(t) for t in ([Tout] if single else Tout)]
    ranks = _probe_ranks(func, inputs, len(touts))
    call = _Call(func, touts)
    specs = [Spec((None,) * r, d) for r, d in zip(ranks, touts)]
    if not inputs:
        inputs = [constant(np.zeros((), np.float32))]
        call.func = (lambda f: lambda *_: f())(func)
    first = apply(_call_op, *inputs, call=call, index=0, spec=specs[0])
    outs = [first] + [apply(_result_op, first, call=call, index=k, spec=specs[k])
                      for k in range(1, len(specs))]
    return outs[0] if single else outs


numpy_function = py_func
