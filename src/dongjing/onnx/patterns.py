"""Export-time recognitions: op chains that ONNX has one op for. dongjing's convolution and
pooling are im2col (`unfold2d`) plus a product or a reduction; exported as such they are
correct but slow and unfamiliar to other tools, so the chain's last node emits `Conv`,
`MaxPool` or `AveragePool` instead, and the chain's now unused nodes are pruned."""

from __future__ import annotations

import math

import numpy as np

from .errors import require_onnx


def _op(node, name: str) -> bool:
    return node is not None and node.op.name == name


def _window_attrs(unfold) -> dict:
    (kh, kw), stride, (ph, pw) = (unfold.attrs[k] for k in ("kernel", "stride", "padding"))
    return {"kernel_shape": [kh, kw], "strides": list(stride), "pads": [ph, pw, ph, pw]}


def _conv(e, node):
    """reshape(matmul(reshape(W), reshape(unfold2d(x))), (-1, O, OH, OW)) -> Conv(x, W)."""
    product = node.inputs[0]
    if not _op(product, "matmul"):
        return None
    flat_w, cols = product.inputs
    if not (_op(flat_w, "reshape") and _op(cols, "reshape") and _op(cols.inputs[0], "unfold2d")):
        return None
    unfold, weight = cols.inputs[0], flat_w.inputs[0]
    n, c, kh, kw, oh, ow = unfold.shape
    if unfold.attrs["pad_value"] != 0.0 or len(weight.shape) != 4:
        return None
    o = weight.shape[0]
    if (tuple(weight.shape) != (o, c, kh, kw) or flat_w.attrs["shape"] != (o, c * kh * kw)
            or cols.attrs["shape"] != (-1, c * kh * kw, oh * ow)
            or node.attrs["shape"] != (-1, o, oh, ow)
            or len({unfold.inputs[0].dtype, weight.dtype, node.dtype}) != 1):
        return None
    return e.node("Conv", [e.values[unfold.inputs[0]], e.values[weight]], **_window_attrs(unfold))


def _max_pool(e, node):
    """amax(unfold2d(x, pad_value=-inf), dim=(2, 3)) -> MaxPool(x)."""
    unfold = node.inputs[0]
    if not (_op(unfold, "unfold2d") and node.attrs.get("dim") == (2, 3)
            and not node.attrs.get("keepdim") and unfold.attrs["pad_value"] == -math.inf):
        return None
    return e.node("MaxPool", [e.values[unfold.inputs[0]]], **_window_attrs(unfold))


def _first_max_pool(e, node):
    """sum(where(eq(arange(k), argmax(W, 2)), W, 0), dim=2) with W = the flattened windows of
    unfold2d(x, pad_value=-inf): the first largest value of each window -> MaxPool(x)."""
    picked = node.inputs[0]
    if not (_op(picked, "where") and node.attrs.get("dim") == (2,)
            and not node.attrs.get("keepdim")):
        return None
    test, windows, zeros = picked.inputs
    if not (_op(windows, "reshape") and _op(windows.inputs[0], "unfold2d") and _op(test, "eq")
            and _op(zeros, "fill_like") and zeros.attrs["value"] == 0
            and zeros.inputs[0] is windows):
        return None
    unfold = windows.inputs[0]
    n, c, kh, kw, oh, ow = unfold.shape
    position, first = test.inputs
    if not (_op(first, "argmax") and first.inputs[0] is windows and first.attrs["dim"] == 2
            and _op(position, "constant")
            and np.array_equal(position.attrs["value"].reshape(-1), np.arange(kh * kw))
            and windows.attrs["shape"][2:] == (kh * kw, oh, ow)
            and unfold.attrs["pad_value"] == -math.inf):
        return None
    return e.node("MaxPool", [e.values[unfold.inputs[0]]], **_window_attrs(unfold))


def _average_pool(e, node):
    """sum(unfold2d(x), dim=(2, 3)) / count(the same, dim=(2, 3)) -> AveragePool(x), the zero
    padding counted (as dongjing's avg_pool2d does)."""
    total, count = node.inputs
    if not (_op(total, "sum") and _op(count, "count")):
        return None
    unfold = total.inputs[0]
    if not (_op(unfold, "unfold2d") and count.inputs[0] is unfold
            and total.attrs.get("dim") == (2, 3) == count.attrs.get("dim")
            and not total.attrs.get("keepdim") and unfold.attrs["pad_value"] == 0.0
            and unfold.dtype == node.dtype):
        return None
    return e.node("AveragePool", [e.values[unfold.inputs[0]]], count_include_pad=1,
                  **_window_attrs(unfold))


PATTERNS = {"reshape": _conv, "amax": _max_pool, "sum": _first_max_pool, "div": _average_pool}


def recognize(e, node):
    """The ONNX name of `node`'s value if a recognised chain ends at it, else None."""
    pattern = PATTERNS.get(node.op.name)
    return None if pattern is None else pattern(e, node)


def prune(nodes: list, outputs: list) -> list:
    """`nodes` without those whose results nothing uses (values read inside an If / Loop body
    count as used)."""
    helper = require_onnx().helper

    needed = set(outputs)
    kept = []
    for proto in reversed(nodes):
        if not any(out in needed for out in proto.output):
            continue
        kept.append(proto)
        needed.update(proto.input)
        for attr in proto.attribute:
            if attr.type == attr.GRAPH:
                needed.update(_names_read(helper.get_attribute_value(attr)))
    return kept[::-1]


def _names_read(graph) -> set:
    helper = require_onnx().helper

    names = set()
    for proto in graph.node:
        names.update(proto.input)
        for attr in proto.attribute:
            if attr.type == attr.GRAPH:
                names.update(_names_read(helper.get_attribute_value(attr)))
    return names
