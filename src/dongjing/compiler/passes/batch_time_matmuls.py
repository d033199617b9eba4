"""Batching a loop's per-step GEMMs: an unrolled recurrence multiplies every time step of an
input `X` (T, B, D) by one weight, `X[t] @ W` for t = 0 .. T-1, and its gradient sums
`X[t].T @ G_t` over the steps. Each is T small GEMMs (and T - 1 additions); as one GEMM over
all the steps' rows it is one library call on a T times larger matrix, as hand-written
recurrent code does it (W5: 50 steps of a (32, 32) @ (32, 64) product).

- forward: the T products `matmul(getitem(X, t), W)` become `reshape(X, (T*B, D)) @ W`,
  reshaped to (T, B, H), and each product is its row block `Y[t]` (a view);
- weight gradient: a tree of `add` nodes (used only inside the tree) whose leaves are the T
  products `matmul(permute(getitem(X, t)), G_t)` becomes
  `permute(reshape(X, (T*B, D))) @ concat(G_0 .. G_{T-1})`.

Both change only the order in which float sums are taken (within float rounding). A group
applies only when every step 0 .. T-1 appears exactly once and the shapes are known.
"""

from __future__ import annotations

from ...registry import OPS
from ..ir import PassResult, Rebuilder


def _step(node):
    """(X, t) when `node` is `X[t]` for a known (T, B, D) X and an int t in range; else None."""
    if node.op.name != "getitem":
        return None
    key = node.attrs.get("key")
    x = node.inputs[0]
    if (type(key) is not tuple or len(key) != 1 or type(key[0]) is not int
            or len(x.shape) != 3 or None in x.shape or not 0 <= key[0] < x.shape[0]):
        return None
    return x, key[0]


def _forward_groups(graph) -> dict:
    """{(X, W): {t: matmul node}} for `X[t] @ W` products covering every step of X."""
    groups: dict = {}
    for node in graph.nodes:
        if node.op.name != "matmul":
            continue
        a, w = node.inputs
        found = _step(a)
        if found is None or len(w.shape) != 2 or None in w.shape:
            continue
        steps = groups.setdefault((found[0], w), {})
        if found[1] in steps:  # the same step twice (left to common-subexpression elimination)
            steps[found[1]] = None
        else:
            steps[found[1]] = node
    return {key: steps for key, steps in groups.items() if _complete(key[0], steps)}


def _complete(x, steps: dict) -> bool:
    return (x.shape[0] >= 2 and len(steps) == x.shape[0]
            and all(node is not None for node in steps.values()))


def _consumers(graph) -> dict:
    found: dict = {}
    for node in graph.nodes:
        for i in node.inputs:
            found.setdefault(i, []).append(node)
    return found


def _only_use(node, consumers: dict, fetched: set):
    """The one node that reads `node` (and nothing fetches it), or None."""
    users = consumers.get(node, ())
    return users[0] if len(users) == 1 and node not in fetched else None


def _summed(node, consumers: dict, fetched: set) -> bool:
    """Whether `node` is only an operand of a plain (same-shape) add: part of a larger sum."""
    user = _only_use(node, consumers, fetched)
    return (user is not None and user.op.name == "add"
            and all(i.shape == user.shape for i in user.inputs))


def _weight_gradient(root, consumers: dict, fetched: set):
    """(X, {t: G_t}) when `root` is a tree of same-shape adds, each inner one used only by
    the tree, whose leaves are `permute(X[t], (1, 0)) @ G_t` for every step t of one X."""
    leaves, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.op.name == "add" and (node is root or _summed(node, consumers, fetched)):
            if any(i.shape != node.shape for i in node.inputs):
                return None
            stack.extend(node.inputs)
        else:
            leaves.append(node)
    x, grads = None, {}
    for leaf in leaves:
        if leaf.op.name != "matmul" or _only_use(leaf, consumers, fetched) is None:
            return None
        p, g = leaf.inputs
        if p.op.name != "permute" or p.attrs.get("dims") != (1, 0):
            return None
        found = _step(p.inputs[0])
        if found is None or (x is not None and found[0] is not x) or found[1] in grads:
            return None
        x = found[0]
        grads[found[1]] = g
    if x is None or len(grads) != x.shape[0] or x.shape[0] < 2:
        return None
    return x, grads


def batch_time_matmuls(graph, fetches: list) -> PassResult:
    """Turn per-time-step GEMMs over one input and weight into one GEMM (see the module)."""
    forward = _forward_groups(graph)
    first = {min(steps.values(), key=graph.nodes.index): key for key, steps in forward.items()}
    member = {node: (key, t) for key, steps in forward.items() for t, node in steps.items()}
    consumers, fetched = _consumers(graph), set(fetches)
    roots = {}
    for node in graph.nodes:
        if node.op.name == "add" and not _summed(node, consumers, fetched):
            found = _weight_gradient(node, consumers, fetched)
            if found is not None:
                roots[node] = found
    if not forward and not roots:
        return PassResult(graph, list(fetches), [])
    rb = Rebuilder(graph)
    rows: dict = {}  # X -> its new (T*B, D) reshape
    batched: dict = {}  # (X, W) -> the (T, B, H) product
    changes = []

    def flat(x, like):
        if x not in rows:
            t, b, d = x.shape
            rows[x] = rb.emit((rb.map[x],), op=OPS["reshape"], attrs={"shape": (t * b, d)},
                              shape=(t * b, d), dtype=x.dtype, name="steps_flat",
                              source=like.source)
        return rows[x]

    for node in graph.nodes:
        if node in first:
            x, w = first[node]
            t, b, _ = x.shape
            h = w.shape[1]
            product = rb.emit((flat(x, node), rb.map[w]), op=OPS["matmul"], attrs={},
                              shape=(t * b, h), dtype=node.dtype, name="steps_matmul",
                              source=node.source)
            batched[x, w] = rb.emit((product,), op=OPS["reshape"], attrs={"shape": (t, b, h)},
                                    shape=(t, b, h), dtype=node.dtype, name="steps_product",
                                    source=node.source)
            changes.append(f"{t} products %{x.name}[t] @ %{w.name} -> one (%{product.name})")
        if node in member:
            key, t = member[node]
            rb.map[node] = rb.emit((batched[key],), op=OPS["getitem"], attrs={"key": (t,)},
                                   shape=node.shape, dtype=node.dtype, name=node.name,
                                   source=node.source)
        elif node in roots:
            x, grads = roots[node]
            parts = [rb.map[grads[t]] for t in range(x.shape[0])]
            rows_g = sum(p.shape[0] for p in parts)
            joined = rb.emit(parts, op=OPS["concat"], attrs={"dim": 0},
                             shape=(rows_g, parts[0].shape[1]), dtype=parts[0].dtype,
                             name="steps_grads", source=node.source)
            flat_x = flat(x, node)
            xt = rb.emit((flat_x,), op=OPS["permute"], attrs={"dims": (1, 0)},
                         shape=flat_x.shape[::-1], dtype=x.dtype, name="steps_flat_t",
                         source=node.source)
            rb.map[node] = rb.emit((xt, joined), op=OPS["matmul"], attrs={}, shape=node.shape,
                                   dtype=node.dtype, name=node.name, source=node.source)
            changes.append(f"%{node.name}: a sum of {x.shape[0]} products %{x.name}[t].T @ G_t "
                           "-> one")
        else:
            rb.map[node] = rb.copy(node)
    return PassResult(*rb.finish(fetches), changes)
