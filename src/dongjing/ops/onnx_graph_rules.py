"""ONNX export rules of the control-flow, indexing and window ops, declared on their records
(``define(..., onnx=rule)``); the rule contract is in `dongjing.ops.onnx_rules`, the source ops'
rules (placeholder, arg, constant, variable) in `dongjing.graph.onnx_rules`.

Nothing here imports the onnx package or `dongjing.onnx`: sub-graph export (If / Loop bodies)
is reached through the `Emitter` passed in (``e.cond`` / ``e.loop``).
"""

from __future__ import annotations

from .. import dtypes
from .key_slot import Slot
from .onnx_rules import in_dtype, scalar


# --- control flow ------------------------------------------------------------------------
def cond(e, node, ins):
    """`dj.cond` as an ONNX If."""
    return e.cond(node, ins)


def while_loop(e, node, ins):
    """`dj.while_loop` as an ONNX Loop."""
    return e.loop(node, ins)


def tuple_get(e, node, ins):
    """One result of a control-flow op: the name its export already made."""
    values = e.values[node.inputs[0]]
    return values[node.attrs["index"]]


# --- indexing ----------------------------------------------------------------------------
_BIG = 2**63 - 1  # the largest int64: "to the end" of a Slice


def _slice_bounds(start, stop, step):
    step = 1 if step is None else step
    if step > 0:
        return (0 if start is None else start), (_BIG if stop is None else stop), step
    return (-1 if start is None else start), (-_BIG if stop is None else stop), step


def _is_full(item) -> bool:
    return item is Ellipsis or item in (("slice", None, None, None), ("slice", None, None, 1))


def _leading_advanced(e, node, ins):
    """`x[i, j, ...]`: integer tensors (and ints) indexing the leading dims together, the rest
    whole, as GatherND on the indices broadcast and stacked; a leading bool mask as NonZero."""
    key, specs = node.attrs["key"], node.inputs[1:]
    lead = 0
    while lead < len(key) and (type(key[lead]) in (int, Slot)):
        lead += 1
    if lead == 0 or not all(_is_full(k) for k in key[lead:]):
        raise e.error("getitem: index tensors export when they (with any ints) index "
                      "the leading dims together, the other dims taken whole")
    masks = [k for k in key[:lead] if type(k) is Slot and specs[k.i].dtype.kind == "b"]
    if masks:
        if lead != 1:
            raise e.error("getitem: a bool mask exports only as the sole leading index")
        where = e.node("NonZero", [ins[1]], name=node.name + "_nonzero")  # (k, n)
        index = e.node("Transpose", [where], perm=[1, 0], name=node.name + "_where")
        return e.node("GatherND", [ins[0], index])
    parts = []
    for k in key[:lead]:
        if type(k) is int:
            parts.append(e.int64(k, "index"))
        else:
            parts.append(e.cast(ins[1 + k.i], specs[k.i].dtype, dtypes.int64))
    zero = None  # broadcast every index to the common shape by adding zeros shaped like each
    for part in parts:
        scaled = e.node("Mul", [part, e.int64(0, "zero")],
                        name=node.name + "_zero")
        zero = scaled if zero is None else e.node("Add", [zero, scaled], name=node.name + "_z")
    stacked = [e.node("Unsqueeze", [e.node("Add", [p, zero], name=node.name + "_b"),
                                    e.ints([-1], "axes")], name=node.name + "_u") for p in parts]
    index = stacked[0] if len(stacked) == 1 else e.node("Concat", stacked, axis=-1,
                                                        name=node.name + "_index")
    return e.node("GatherND", [ins[0], index])


def getitem(e, node, ins):
    """Basic indexing as Unsqueeze / Gather / Slice per key item; index tensors as GatherND."""
    key, x = node.attrs["key"], ins[0]
    index_specs = node.inputs[1:]
    if index_specs and (len(index_specs) > 1 or any(type(k) is int for k in key)
                        or index_specs[0].dtype.kind == "b"):
        return _leading_advanced(e, node, ins)
    ndim = len(node.inputs[0].shape)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    items = []
    for k in key:
        if k is Ellipsis:
            items.extend([("slice", None, None, None)] * (ndim - used))
        else:
            items.append(k)
    axis, step_no = 0, 0
    for k in items:
        step_no += 1
        e_name = f"{node.name}_{step_no}"
        if k is None:
            x = e.node("Unsqueeze", [x, e.ints([axis], "axes")], name=e_name)
            axis += 1
        elif type(k) is int:
            x = e.node("Gather", [x, e.int64(k, "index")],
                       axis=axis, name=e_name)
        elif type(k) is Slot:
            x = e.node("Gather", [x, ins[1 + k.i]], axis=axis, name=e_name)
            axis += len(index_specs[k.i].shape)
        else:
            _, start, stop, step = k
            if (start, stop, step) not in ((None, None, None), (None, None, 1)):
                s, t, p = _slice_bounds(start, stop, step)
                x = e.node("Slice", [x, e.ints([s], "starts"), e.ints([t], "ends"),
                                     e.ints([axis], "axes"), e.ints([p], "steps")], name=e_name)
            axis += 1
    return e.node("Identity", [x])


# --- windows, one-hot --------------------------------------------------------------------
def unfold2d(e, node, ins):
    """im2col as Pad + one strided Slice per kernel offset, stacked to (N, C, kh, kw, OH, OW)."""
    (kh, kw), (sh, sw), (ph, pw) = (node.attrs[k] for k in ("kernel", "stride", "padding"))
    x, dtype = ins[0], in_dtype(node, 0)
    oh, ow = node.shape[4], node.shape[5]
    if ph or pw:
        pads = e.ints([0, 0, ph, pw, 0, 0, ph, pw], "pads")
        x = e.node("Pad", [x, pads, scalar(e, node.attrs["pad_value"], dtype, "pad_value")],
                   mode="constant", name=node.name + "_padded")
    rows = []
    for i in range(kh):
        cols = []
        for j in range(kw):
            window = e.node("Slice", [x, e.ints([i, j], "starts"),
                                      e.ints([i + sh * oh, j + sw * ow], "ends"),
                                      e.ints([2, 3], "axes"), e.ints([sh, sw], "steps")],
                            name=f"{node.name}_{i}_{j}")
            cols.append(e.node("Unsqueeze", [window, e.ints([2, 3], "axes")],
                               name=f"{node.name}_{i}_{j}_u"))
        rows.append(cols[0] if kw == 1 else e.node("Concat", cols, axis=3,
                                                     name=f"{node.name}_row{i}"))
    return rows[0] if kh == 1 else e.node("Concat", rows, axis=2)


def max_pool2d(e, node, ins):
    """MaxPool with the node's kernel, strides and (symmetric) pads."""
    (kh, kw), (sh, sw), (ph, pw) = (node.attrs[k] for k in ("kernel", "stride", "padding"))
    return e.node("MaxPool", [ins[0]], kernel_shape=[kh, kw], strides=[sh, sw],
                  pads=[ph, pw, ph, pw])


def one_hot(e, node, ins):
    """OneHot with depth `num_classes` and values (0, 1) of the output dtype; with an
    `ignore_index`, that label picks class 0 and its row is then multiplied by 0."""
    depth = e.int64(node.attrs["num_classes"], "depth")
    values = e.const([0, 1], node.dtype, name="off_on")
    ignore = node.attrs.get("ignore_index")
    if ignore is None:
        return e.node("OneHot", [ins[0], depth, values], axis=-1)
    label_dtype = node.inputs[0].dtype
    keep = e.node("Not", [e.node("Equal", [ins[0], e.const(ignore, label_dtype, "ignore")],
                                 name=node.name + "_ignored")], name=node.name + "_keep")
    safe = e.node("Where", [keep, ins[0], e.const(0, label_dtype, "zero")],
                  name=node.name + "_safe")
    rows = e.node("OneHot", [safe, depth, values], axis=-1, name=node.name + "_rows")
    kept = e.node("Unsqueeze", [e.cast(keep, dtypes.bool_, node.dtype), e.ints([-1], "axes")],
                  name=node.name + "_kept")
    return e.node("Mul", [rows, kept])
