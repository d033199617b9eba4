"""Which Variables the planner's tensor-parallel plan splits, and where each value of the graph
then lives (its layout), for one set of fetches.

A layout is one of: `None` replicated (the whole value on every rank), an int `d` (each rank
holds its even slice along dim `d`), or `PARTIAL` (each rank holds a term; the value is their
sum). The split Variables (`choose_shards`) follow Megatron-LM's pairing: the 2-D products
`x @ W` of a Variable weight `W` (or `x @ W.T`, as `nn.Linear` builds it), taken in the order
they were built, pair up as a column split (the output features) then a row split (the input
features), so that one pair needs one all-reduce forward; a bias added to a column product is
split with it, and the optimizer's state assigned from a split value is split the same way
(each rank holds and updates its shard of the weights and of their momentum or moments).

`propagate` walks the graph and gives each node the layout its op keeps (a product of a row
split is `PARTIAL`, an elementwise op keeps its inputs' split dim, a permute moves it, a sum
over it makes a partial...). Where an op cannot take its inputs as they are, the walk records a
conversion of the input (`CONVERSIONS`): an all-gather, an all-reduce, a reduce-scatter or a
local slice, each one a tensor-parallel op of `tensor_parallel.py`; an op it does not know
gets whole inputs. The graph computes the same values whatever it splits; what it splits
decides what runs once per rank and how much goes over the link.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.registry import Kind

PARTIAL = "partial"
# (from layout, to layout) -> the collective that converts; a local slice costs no message.
CONVERSIONS = ("gather", "reduce", "reduce_scatter", "split")


@dataclass
class Layouts:
    """Where each value lives under one choice of split Variables."""

    of: dict  # node -> layout (None, dim, or PARTIAL)
    inputs: dict  # node -> per input: the layout the op reads it in
    shards: dict  # variable node -> the dim it is split along
    pairs: list = field(default_factory=list)  # (column product, row product) nodes


def _weight(product):
    """(the Variable node, the dim of its output features) of a 2-D product of a Variable
    weight, else None."""
    if product.op.name != "matmul" or len(product.inputs) != 2:
        return None
    x, w = product.inputs
    if len(x.shape) != 2 or len(w.shape) != 2:
        return None
    if w.op.name == "variable":
        return w, 1  # x @ W, W is (in, out)
    if (w.op.name == "permute" and tuple(w.attrs.get("dims", ())) == (1, 0)
            and w.inputs[0].op.name == "variable"):
        return w.inputs[0], 0  # x @ W.T, W is (out, in) as nn.Linear holds it
    return None


def choose_shards(forward: list, trainable: set, world: int) -> tuple[dict, list]:
    """{Variable node: split dim} for the products of `forward` paired column-then-row, and the
    pairs; a pair whose hidden size does not split evenly over `world` ranks is left whole."""
    products = []
    for n in forward:
        found = _weight(n)
        if found is not None and found[0] in trainable and found[0] not in dict(products):
            products.append((found[0], (n, found[1])))
    shards, pairs = {}, []
    for (w1, (p1, out1)), (w2, (p2, out2)) in zip(products[0::2], products[1::2]):
        hidden, inner = w1.shape[out1], w2.shape[1 - out2]
        if hidden is None or hidden % world or inner is None or inner % world:
            continue
        shards[w1], shards[w2] = out1, 1 - out2
        pairs.append((p1, p2))
        for n in forward:  # the column product's bias: split with its output features
            if n.op.name == "add" and p1 in n.inputs:
                bias = n.inputs[1] if n.inputs[0] is p1 else n.inputs[0]
                if (bias.op.name == "variable" and len(bias.shape) == 1
                        and bias.shape[0] == hidden):
                    shards[bias] = 0
    return shards, pairs


def _dims(attr, ndim: int) -> tuple:
    if attr is None:
        return tuple(range(ndim))
    attr = (attr,) if isinstance(attr, int) else attr
    return tuple(d % ndim for d in attr)


def _elementwise(n, ins):
    out_ndim = len(n.shape)
    split = {d + out_ndim - len(i.shape) for i, d in zip(n.inputs, ins) if isinstance(d, int)}
    if len(split) != 1 or any(lay == PARTIAL for lay in ins):
        return [None] * len(ins), None
    d = split.pop()
    want = []
    for i, lay in zip(n.inputs, ins):
        j = d - (out_ndim - len(i.shape))
        if isinstance(lay, int):
            want.append(lay)
        elif j < 0 or i.shape[j] == 1:
            want.append(None)  # broadcast along the split dim: the whole value serves
        else:
            want.append(j)  # a whole input read beside split ones: this rank's slice of it
    return want, d


def _rule(n, ins: list):
    """(the layouts `n` reads its inputs in, the layout of its value)."""
    name = n.op.name
    if name == "assign":
        return [ins[0], ins[0]], ins[0]
    if n.op.kind == Kind.EFFECT:
        return list(ins), None
    if all(lay is None for lay in ins):
        return list(ins), None
    if name == "matmul" and len(ins) == 2 and all(len(i.shape) == 2 for i in n.inputs):
        a, b = (None if lay == PARTIAL else lay for lay in ins)
        table = {(None, 1): (None, 1, 1), (0, None): (0, None, 0), (1, 0): (1, 0, PARTIAL),
                 (1, None): (1, 0, PARTIAL), (None, 0): (1, 0, PARTIAL), (0, 1): (0, None, 0),
                 (0, 0): (0, None, 0), (1, 1): (None, 1, 1)}
        if (a, b) in table:
            wa, wb, out = table[(a, b)]
            return [wa, wb], out
    if name == "permute" and ins[0] is not None:
        lay = ins[0]
        return [lay], PARTIAL if lay == PARTIAL else list(n.attrs["dims"]).index(lay)
    if name == "sum" and ins[0] is not None:
        lay, ndim = ins[0], len(n.inputs[0].shape)
        if lay == PARTIAL:
            return [lay], PARTIAL
        dims = _dims(n.attrs.get("dim"), ndim)
        if lay in dims:
            return [lay], PARTIAL
        keep = n.attrs.get("keepdim", False)
        return [lay], lay if keep else lay - sum(1 for d in dims if d < lay)
    if name in ("sum_to_like", "broadcast_to_like") and len(ins) == 2:
        x, like = n.inputs
        lay, shift = ins[0], len(n.shape) - len(x.shape)
        if isinstance(lay, int):
            d = lay + shift
            if d < 0:  # summed away (sum_to_like's leading dims): a partial sum
                return [lay, None], PARTIAL
            if n.shape[d] == 1:
                return [lay, None], PARTIAL
            return [lay, d], d
        if lay == PARTIAL and name == "sum_to_like":
            return [PARTIAL, None], PARTIAL
        if lay is None and isinstance(ins[1], int):
            d = ins[1]
            j = d - shift
            if j < 0 or x.shape[j] == 1:
                return [None, d], d
    if n.op.kind == Kind.ELEMENTWISE and not n.op.random:
        return _elementwise(n, ins)
    return [None if i.dtype is not None else lay for i, lay in zip(n.inputs, ins)], None


def propagate(order: list, shards: dict) -> Layouts:
    """The layout of every node of `order` (built order) with `shards` split."""
    of, inputs = {}, {}
    for n in order:
        if n.op.name == "variable":
            of[n] = shards.get(n)
            continue
        if not n.inputs:
            of[n] = None
            continue
        want, out = _rule(n, [of[i] for i in n.inputs])
        inputs[n] = want
        of[n] = out
    return Layouts(of, inputs, dict(shards))


def plan_layouts(order: list, forward: list, trainable: set, world: int) -> Layouts | None:
    """The tensor-parallel layouts of a step: the paired products' weights split, then the
    Variables assigned from split values (the optimizer's state) split the same way, until no
    more are; None when no pair splits."""
    shards, pairs = choose_shards(forward, trainable, world)
    if not pairs:
        return None
    for _ in range(len(order)):
        layouts = propagate(order, shards)
        more = {}
        for n in order:
            if n.op.name == "assign" and n.inputs[0] not in shards:
                value = layouts.of[n.inputs[1]]
                if isinstance(value, int) and n.inputs[0].shape[value] % world == 0:
                    more[n.inputs[0]] = value
        if not more:
            layouts.pairs = pairs
            return layouts
        shards.update(more)
    raise AssertionError("the shards of the optimizer's state did not settle")


def follow(order: list, refs: dict) -> Layouts:
    """The layouts of other fetches of a graph whose Variables `refs` ({id of the Variable
    object: dim}) a first plan split."""
    shards = {n: refs[id(n.attrs["ref"])] for n in order
              if n.op.name == "variable" and id(n.attrs["ref"]) in refs}
    return propagate(order, shards)


def conversion(have, want) -> list[tuple]:
    """The steps from layout `have` to `want`: ("gather", d), ("reduce",),
    ("reduce_scatter", d), ("split", d)."""
    if have == want:
        return []
    if have == PARTIAL:
        return [("reduce",)] if want is None else [("reduce_scatter", want)]
    if want is None:
        return [("gather", have)]
    if have is None:
        return [("split", want)]
    return [("gather", have), ("split", want)]


def local_shape(node, layout, world: int) -> tuple:
    """This rank's shape of `node`'s value under `layout`."""
    if not isinstance(layout, int) or layout == PARTIAL:
        return tuple(node.shape)
    shape = list(node.shape)
    shape[layout] = None if shape[layout] is None else shape[layout] // world
    return tuple(shape)
