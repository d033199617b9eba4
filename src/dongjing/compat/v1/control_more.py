"""TF1's higher-order and effect functions: map_fn, scan, foldl, foldr, case, tf.device,
tf.Print / tf.print."""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager

import numpy as np

from ... import ops as _ops
from ...core.placement_scope import on_rank
from ...core.registry import Spec, define, register
from ...dispatch import apply
from ...errors import GraphError, ShapeError
from ...graph.builder import constant
from ...tensor import Tensor
from .control import cond
from .graphs import building, tf_function
from .math_ops import _t
from .session import Operation
from .unsupported import not_provided


def _flat(value):
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat(v)]
    return [value]


def _pack(structure, flat):
    items = iter(flat)

    def build(s):
        if isinstance(s, (list, tuple)):
            return type(s)(build(x) for x in s)
        return next(items)

    return build(structure)


def _steps(what: str, elems) -> int:
    firsts = [_t(e) for e in _flat(elems)]
    sizes = {e.shape[0] if e.ndim else None for e in firsts}
    if len(sizes) != 1 or None in sizes:
        raise ShapeError(f"{what}: every element tensor needs the same leading dim, known when "
                         f"the graph is built; got shapes {[e.shape for e in firsts]}")
    return sizes.pop()


def _slices(elems, i: int):
    return _pack(elems, [_t(e)[i] for e in _flat(elems)])


def _stack_results(results):
    structure = results[0]
    columns = zip(*[_flat(r) for r in results])
    return _pack(structure, [_ops.stack([_t(c) for c in col], 0) for col in columns])


@tf_function
def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None):
    """[fn(elems[i]) for each i], stacked (elems may be a nested tuple of tensors)."""
    n = _steps("tf.map_fn", elems)
    if n == 0:
        raise ShapeError("tf.map_fn: elems have no rows")
    return _stack_results([fn(_slices(elems, i)) for i in range(n)])


@tf_function
def scan(fn, elems, initializer=None, parallel_iterations=None, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """Every accumulated value of acc = fn(acc, elems[i]), stacked (acc starts at
    `initializer`, else at elems[0])."""
    n = _steps("tf.scan", elems)
    order = list(range(n))[::-1] if reverse else list(range(n))
    results = []
    if initializer is None:
        acc = _slices(elems, order[0])
        results.append(acc)
        order = order[1:]
    else:
        acc = initializer
    for i in order:
        acc = fn(acc, _slices(elems, i))
        results.append(acc)
    if reverse:
        results = results[::-1]
    return _stack_results(results)


def _fold(what, fn, elems, initializer, reverse):
    n = _steps(what, elems)
    order = list(range(n))[::-1] if reverse else list(range(n))
    if initializer is None:
        acc, order = _slices(elems, order[0]), order[1:]
    else:
        acc = initializer
    for i in order:
        acc = fn(acc, _slices(elems, i))
    return acc


@tf_function
def foldl(fn, elems, initializer=None, parallel_iterations=None, back_prop=True,
          swap_memory=False, name=None):
    """fn(...fn(fn(initializer, elems[0]), elems[1])..., elems[n-1])."""
    return _fold("tf.foldl", fn, elems, initializer, False)


@tf_function
def foldr(fn, elems, initializer=None, parallel_iterations=None, back_prop=True,
          swap_memory=False, name=None):
    """foldl from the last element to the first."""
    return _fold("tf.foldr", fn, elems, initializer, True)


@tf_function
def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The fn of the first true predicate (all checked in order), else `default()`; as nested
    tf.cond, so only the chosen branch runs. exclusive=True also checks that at most one
    predicate holds, when the graph runs."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else \
        list(pred_fn_pairs)
    if not pairs:
        raise GraphError("tf.case needs at least one (predicate, fn) pair")
    if default is None:
        pairs, default = pairs[:-1], pairs[-1][1]  # TF: the last fn is the default
    result = default
    for pred, fn in reversed(pairs):
        result = (lambda p, f, rest: lambda: cond(p, f, rest, strict=strict))(pred, fn, result)
    out = result()
    if exclusive and len(pairs) > 1:
        count = _ops.sum(_ops.cast(_ops.stack([_t(p) for p, _ in pairs], 0), np.int32))
        out = _checked(out, count)
    return out


def _check_forward(xp, x, count):
    if int(count) > 1:
        raise GraphError(f"tf.case(exclusive=True): {int(count)} predicates are true")
    return x


def _check_infer(x: Spec, count: Spec):
    return x.shape, x.dtype


def _check_vjp(g, inputs, out, needs, attrs):
    return (g if needs[0] else None, None)


_exclusive = define("tf_case_exclusive", forward=_check_forward, infer=_check_infer,
                      vjp=_check_vjp, onnx_reason="a run-time check of compat.v1's tf.case",
                      doc="x, after checking that at most one of tf.case's predicates holds.")


def _checked(out, count):
    if isinstance(out, (list, tuple)):
        return type(out)(_checked(o, count) for o in out)
    return apply(_exclusive, out, count)


_DEVICE = re.compile(r"^(/job:\w+)?(/replica:\d+)?(/task:\d+)?(/(device:)?(cpu|gpu|CPU|GPU)"
                     r"(:(\d+|\*))?)?$")


@contextmanager
def device(device_name_or_function):
    """Accepts TF's placement names ('/cpu:0', '/device:GPU:0', '/job:worker/task:1'). A task
    places the ops built inside on that MPI rank (task N is rank N, whatever the job; see
    docs/distributed.md); a device alone leaves them where dongjing places them (with their
    inputs; see docs/backends.md)."""
    if callable(device_name_or_function):
        not_provided("tf.device with a device function")
    name = device_name_or_function or ""
    match = _DEVICE.match(str(name))
    if not match:
        raise GraphError(f"tf.device: {name!r} is not a TensorFlow device name (e.g. '/cpu:0', "
                         "'/device:GPU:0')")
    task = match.group(3)
    with on_rank(None if task is None else int(task.split(":")[1])):
        yield


def _format(value, summarize) -> str:
    value = np.asarray(value)
    if value.ndim == 0:
        return str(value.item())
    return np.array2string(value, threshold=summarize or 3)


def _print_forward(x, *data, message, summarize, stream, template=None, end="\n"):
    if template is None:  # tf.Print: the message, then each data tensor
        text = message + " ".join(_format(d, summarize) for d in data)
    else:  # tf.print: words and tensors (by position in data) in the order given
        text = message.join(item if isinstance(item, str) else _format(data[item], summarize)
                            for item in template)
    print(text, end=end, file=sys.stderr if stream == "stderr" else sys.stdout)
    return x


def _print_infer(x: Spec, *data: Spec, message, summarize, stream, template=None,
                 end="\n"):
    return x.shape, x.dtype


def _print_vjp(g, inputs, out, needs, attrs):
    return (g if needs[0] else None,) + (None,) * (len(inputs) - 1)


_print = register("tf_print", forward=_print_forward, infer=_print_infer, vjp=_print_vjp,
                  random=True,  # as a random draw: never folded or merged with another
                  onnx_reason="printing (compat.v1's tf.Print) has no ONNX form",
                  doc="x, printing `message` and the data tensors when it runs.")


@tf_function
def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """input_, printing `message` and the `data` tensors (to stderr) each time it runs."""
    if first_n is not None:
        not_provided("tf.Print(first_n=...)")
    return apply(_print, _t(input_), *[_t(d) for d in data], message=message or "",
                 summarize=summarize, stream="stderr")


def print_(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):
    """An op printing `inputs` (tensors and Python values, in order, joined by `sep`) when it
    runs (tf.print; to stderr unless output_stream is sys.stdout or "stdout")."""
    stream = "stdout" if output_stream in (sys.stdout, "stdout") else "stderr"
    tensors = [v for v in inputs if isinstance(v, Tensor)]
    template, k = [], 0
    for v in inputs:
        if isinstance(v, Tensor):
            template.append(k)
            k += 1
        else:
            template.append(str(v))
    with building((tensors,)):
        anchor = tensors[0] if tensors else constant(np.zeros((), np.float32))
        return Operation(apply(_print, anchor, *tensors, message=sep, summarize=summarize,
                               stream=stream, template=tuple(template), end=end), name)


print_.__name__ = print_.__qualname__ = "print"
