"""Batching a loop's per-step GEMMs: an unrolled recurrence multiplies every time step of an
input `X` (T, B, D) by one weight, `X[t] @ W` for t = 0 .. T-1, and its gradients sum T
per-step terms (`X[t].T @ G_t`, `H_t.T @ G_t`, `sum(G_t, dim=0)`). Each is T small library
calls and T - 1 additions; as one call on all the steps' rows it is what hand-written
recurrent code does (W5: 50 steps of a (32, 32) @ (32, 64) product).

- forward: the T products `matmul(getitem(X, t), W)` become `reshape(X, (T*B, D)) @ W`,
  reshaped to (T, B, H), and each product is its row block `Y[t]` (a view); where each step
  is summed with the same bias terms (any order or grouping of the adds, e.g.
  `x[t] @ W + h @ U + b`, `b + matmul(h, U) + matmul(x[t], W)`, or an RNN cell's
  `(x[t] @ W + b1) + (h @ U + b2)`), they are added to Y once;
- a sum (a tree of same-shape adds, each used only inside the tree) of at least `MIN_TERMS`
  products `A_k.T @ G_k` becomes `concat(A_k).T @ concat(G_k)` (for `A_k = X[t]` over every
  step of one X: `reshape(X).T @ concat(G_t)`, no copy of X; for `G_t.T @ X[t]`, the gradient
  of a weight used as `x[t] @ W.T` by `F.linear` and `nn.RNNCell`:
  `concat(G_t).T @ reshape(X)`);
- such a sum of column sums `sum(G_k, dim=(0,))` (a bias gradient) becomes one column sum of
  `concat(G_k)`.

The terms are concatenated in step order (the reverse of the order a backward pass computes
their G_k), so all three sums share one concatenation (common-subexpression elimination).
Only the order of float additions changes (within float rounding). Groups apply only where
every shape is known.
"""

from __future__ import annotations

from ...core.registry import OPS
from ..ir import PassResult, Rebuilder

MIN_TERMS = 4  # a sum of fewer products is left as it is (the copies would not pay)


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


def _add_tree(m, consumers: dict, fetched: set):
    """(root, leaves) of the tree of adds that sums `m` with other terms: climbing from `m`
    while a node's only reader is an add of `m`'s shape, then every add inside read only by
    its parent; the leaves (in operand order) are what the tree sums. None when `m` is not
    added to anything."""
    root = m
    while True:
        user = _only_use(root, consumers, fetched)
        if user is None or user.op.name != "add" or user.shape != m.shape:
            break
        root = user
    if root is m:
        return None
    leaves, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.op.name == "add" and (node is root
                                      or _only_use(node, consumers, fetched) is not None):
            stack.extend(reversed(node.inputs))
        else:
            leaves.append(node)
    return root, leaves


def _bias_of(steps: dict, consumers: dict, fetched: set):
    """([b, ...], {t: (root_t, other terms)}) when every step's product m_t is summed, in a tree
    of adds (any order and grouping: `x[t] @ W + h @ U + b`, `b + (h @ U + x[t] @ W)`, an RNN
    cell's `(x[t] @ W + b1) + (h @ U + b2)`), with the same source nodes b that broadcast over
    it: they are then added once to all the steps' products, and each step's root becomes its
    biased product plus the other terms. Else None."""
    trees, common = {}, None
    for t, m in steps.items():
        tree = _add_tree(m, consumers, fetched)
        if tree is None:
            return None
        sources = [leaf for leaf in tree[1] if not leaf.inputs and leaf is not m]
        if len(set(sources)) != len(sources) or tree[1].count(m) != 1:
            return None
        common = set(sources) if common is None else common & set(sources)
        trees[t] = tree
    if not common:  # (a source only some steps add, e.g. the first step's zero state, stays)
        return None
    found = {t: (root, [leaf for leaf in leaves if leaf is not steps[t] and leaf not in common])
             for t, (root, leaves) in trees.items()}
    m = next(iter(steps.values()))
    biases = _ordered_sources(steps, found, consumers, fetched)
    if not biases or any(b.dtype != m.dtype or not _broadcasts(b.shape, m.shape)
                         for b in biases):
        return None
    return biases, found


def _ordered_sources(steps: dict, found: dict, consumers: dict, fetched: set) -> list:
    """The first step's source terms, in its operand order (a stable order for the adds)."""
    t, m = next(iter(steps.items()))
    _, leaves = _add_tree(m, consumers, fetched)
    others = found[t][1]
    return [leaf for leaf in leaves if leaf is not m and leaf not in others]


def _broadcasts(shape, over) -> bool:
    """Whether a bias of `shape` adds to every (B, H) step alike: (H,), (1, H) or (B, H)."""
    return (len(shape) == 1 and shape == over[1:]
            or len(shape) == 2 and shape[1] == over[1] and shape[0] in (1, over[0]))


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


def _sum_leaves(root, consumers: dict, fetched: set) -> list:
    """The terms of the tree of same-shape adds rooted at `root` whose inner adds are used
    only inside the tree (a plain sum of its leaves), or [] when some add broadcasts."""
    leaves, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.op.name == "add" and (node is root or _summed(node, consumers, fetched)):
            if any(i.shape != node.shape for i in node.inputs):
                return []
            stack.extend(node.inputs)
        else:
            leaves.append(node)
    return leaves


def _products(leaves, consumers: dict, fetched: set):
    """[(P_k, G_k)] when every leaf is `P_k.T @ G_k` (2-d, used only by the sum); else None."""
    pairs = []
    for leaf in leaves:
        if leaf.op.name != "matmul" or _only_use(leaf, consumers, fetched) is None:
            return None
        a, g = leaf.inputs
        if len(a.shape) != 2 or len(g.shape) != 2 or None in a.shape or None in g.shape:
            return None
        transposed = a.op.name == "permute" and a.attrs.get("dims") == (1, 0)
        pairs.append((a.inputs[0] if transposed else a, transposed, g))
    columns = {p.shape[1] if transposed else p.shape[0] for p, transposed, _ in pairs}
    return pairs if len(columns) == 1 and len({g.shape[1] for *_, g in pairs}) == 1 else None


def _column_sums(leaves, consumers: dict, fetched: set):
    """[G_k] when every leaf is `sum(G_k, dim=(0,))` of a 2-d G_k used only by the sum."""
    grads = []
    for leaf in leaves:
        if (leaf.op.name != "sum" or _only_use(leaf, consumers, fetched) is None
                or leaf.attrs.get("dim") != (0,) or leaf.attrs.get("keepdim")):
            return None
        g = leaf.inputs[0]
        if len(g.shape) != 2 or None in g.shape:
            return None
        grads.append(g)
    return grads


def _over_steps(pairs):
    """(X, {t: G_t}) when the products are `X[t].T @ G_t` for every step t of one X."""
    x, grads = None, {}
    for p, transposed, g in pairs:
        found = _step(p) if transposed else None
        if found is None or (x is not None and found[0] is not x) or found[1] in grads:
            return None
        x = found[0]
        grads[found[1]] = g
    return (x, grads) if x is not None and len(grads) == x.shape[0] else None


def _steps_on_the_right(pairs):
    """(X, {t: G_t}) when the products are `G_t.T @ X[t]` for every step t of one X (the
    gradient of a weight used as `x[t] @ W.T`, as `F.linear` and `nn.RNNCell` do)."""
    x, grads = None, {}
    for p, transposed, g in pairs:
        found = _step(g) if transposed else None
        if found is None or (x is not None and found[0] is not x) or found[1] in grads:
            return None
        x = found[0]
        grads[found[1]] = p
    return (x, grads) if x is not None and len(grads) == x.shape[0] else None


def batch_time_matmuls(graph, fetches: list) -> PassResult:
    """Turn per-time-step GEMMs over one input and weight into one GEMM (see the module)."""
    order = {node: i for i, node in enumerate(graph.nodes)}
    forward = _forward_groups(graph)
    first = {min(steps.values(), key=order.__getitem__): key for key, steps in forward.items()}
    member = {node: (key, t) for key, steps in forward.items() for t, node in steps.items()}
    consumers, fetched = _consumers(graph), set(fetches)
    biases = {}  # (X, W) -> the biases added once to its batched product
    folded = {}  # a step's root add -> (its product m_t, the other terms it adds to m_t)
    for key, steps in forward.items():
        found = _bias_of(steps, consumers, fetched)
        if found is not None:
            biases[key] = found[0]
            for t, (root, others) in found[1].items():
                folded[root] = (steps[t], others)
    # the root add of a sum -> ("steps", X, {t: G_t}), ("products", pairs) or ("sums", [G_k]);
    # terms in the reverse of the order their G_k are computed: a backward pass computes the
    # last step's first, so this is step order, that of reshape(X)'s rows, and every sum over
    # the same G_k concatenates them alike (one node after common-subexpression elimination)
    roots = {}
    for node in graph.nodes:
        if node.op.name != "add" or _summed(node, consumers, fetched):
            continue
        leaves = _sum_leaves(node, consumers, fetched)
        if len(leaves) < MIN_TERMS:
            continue
        pairs = _products(leaves, consumers, fetched)
        steps = _over_steps(pairs) if pairs else None
        right = _steps_on_the_right(pairs) if pairs and steps is None else None
        if steps is not None:
            roots[node] = ("steps", *steps)
        elif right is not None:
            roots[node] = ("steps_right", *right)
        elif pairs is not None:
            # by the later-computed operand, the gradient: `H_t.T @ G_t` or `G_t.T @ H_t`
            roots[node] = ("products", sorted(
                pairs, key=lambda pair: -max(order[pair[0]], order[pair[2]])))
        else:
            grads = _column_sums(leaves, consumers, fetched)
            if grads is not None:
                roots[node] = ("sums", sorted(grads, key=lambda g: -order[g]))
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

    def joined(parts, like, name):
        """`concat(parts, dim=0)` of new-graph nodes (2-d, equal columns)."""
        return rb.emit(parts, op=OPS["concat"], attrs={"dim": 0},
                       shape=(sum(p.shape[0] for p in parts), parts[0].shape[1]),
                       dtype=parts[0].dtype, name=name, source=like.source)

    def transposed(x, like, name):
        return rb.emit((x,), op=OPS["permute"], attrs={"dims": (1, 0)}, shape=x.shape[::-1],
                       dtype=x.dtype, name=name, source=like.source)

    def matmul(a, b, like):
        return rb.emit((a, b), op=OPS["matmul"], attrs={}, shape=like.shape, dtype=like.dtype,
                       name=like.name, source=like.source)

    def over_steps(node, x, grads):
        changes.append(f"%{node.name}: a sum of {x.shape[0]} products %{x.name}[t].T @ G_t "
                       "-> one")
        g = joined([rb.map[grads[t]] for t in range(x.shape[0])], node, "steps_grads")
        return matmul(transposed(flat(x, node), node, "steps_flat_t"), g, node)

    def steps_right(node, x, grads):
        changes.append(f"%{node.name}: a sum of {x.shape[0]} products G_t.T @ %{x.name}[t] "
                       "-> one")
        g = joined([rb.map[grads[t]] for t in range(x.shape[0])], node, "steps_grads")
        return matmul(transposed(g, node, "steps_grads_t"), flat(x, node), node)

    def products(node, pairs):
        changes.append(f"%{node.name}: a sum of {len(pairs)} products A_k.T @ G_k -> one")
        rows_a = [rb.map[p] if is_transposed else transposed(rb.map[p], node, "terms_t")
                  for p, is_transposed, _ in pairs]  # A_k.T: a permute's input, or A_k.T
        a = joined(rows_a, node, "terms_a")
        g = joined([rb.map[g] for *_, g in pairs], node, "terms_g")
        return matmul(transposed(a, node, "terms_a_t"), g, node)

    def sums(node, grads):
        changes.append(f"%{node.name}: a sum of {len(grads)} column sums -> one")
        g = joined([rb.map[g] for g in grads], node, "terms_g")
        return rb.emit((g,), op=OPS["sum"], attrs={"dim": (0,), "keepdim": False},
                       shape=node.shape, dtype=node.dtype, name=node.name, source=node.source)

    for node in graph.nodes:
        if node in rb.map:  # a bias copied ahead of its place
            continue
        if node in folded:  # a step's sum: the biases are in its product already
            product, others = folded[node]
            value = rb.map[product]
            for other in others:
                value = rb.emit((value, rb.map[other]), op=OPS["add"], attrs={},
                                shape=node.shape, dtype=node.dtype, name=node.name,
                                source=node.source)
            rb.map[node] = value
            continue
        if node in first:
            x, w = first[node]
            t, b, _ = x.shape
            h = w.shape[1]
            product = rb.emit((flat(x, node), rb.map[w]), op=OPS["matmul"], attrs={},
                              shape=(t * b, h), dtype=node.dtype, name="steps_matmul",
                              source=node.source)
            steps3 = rb.emit((product,), op=OPS["reshape"], attrs={"shape": (t, b, h)},
                             shape=(t, b, h), dtype=node.dtype, name="steps_product",
                             source=node.source)
            changes.append(f"{t} products %{x.name}[t] @ %{w.name} -> one (%{product.name})")
            for bias in biases.get((x, w), ()):  # source nodes: copied here, ahead of place
                if bias not in rb.map:
                    rb.map[bias] = rb.copy(bias)
                steps3 = rb.emit((steps3, rb.map[bias]), op=OPS["add"], attrs={},
                                 shape=(t, b, h), dtype=node.dtype, name="steps_biased",
                                 source=node.source)
                changes.append(f"%{bias.name} added once to the {t} products")
            batched[x, w] = steps3
        if node in member:
            key, t = member[node]
            rb.map[node] = rb.emit((batched[key],), op=OPS["getitem"], attrs={"key": (t,)},
                                   shape=node.shape, dtype=node.dtype, name=node.name,
                                   source=node.source)
        elif node in roots:
            kind, *found = roots[node]
            rb.map[node] = {"steps": over_steps, "steps_right": steps_right,
                            "products": products, "sums": sums}[kind](node, *found)
        else:
            rb.map[node] = rb.copy(node)
    return PassResult(*rb.finish(fetches), changes)
