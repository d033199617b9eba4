"""The order an ONNX graph's nodes run in. The ONNX spec asks for topologically sorted nodes;
onnxruntime sorts them itself and refuses only cycles and inputs nothing defines, so dongjing
does the same: a graph already in order runs as given, one out of order runs sorted (stable:
ties keep the file's order), and a cycle, an undefined input or a tensor two nodes produce is
an OnnxImportError naming the node and tensor."""

from __future__ import annotations

import heapq

from .errors import OnnxImportError


def subgraphs(node):
    """The graphs a node's attributes hold (a Loop's body, an If's branches)."""
    for attr in node.attribute:
        if attr.HasField("g"):
            yield attr.g
        yield from attr.graphs


def free_names(graph) -> set:
    """Names a graph (a Loop/If body) reads from its enclosing scopes."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    used: set = set()
    for node in graph.node:
        used.update(name for name in node.input if name)
        for sub in subgraphs(node):
            used |= free_names(sub)
        defined.update(node.output)
    used.update(o.name for o in graph.output)
    return used - defined


def _needs(node) -> list:
    """The names `node` reads: its inputs and what its subgraphs read from outside."""
    names = [name for name in node.input if name]
    for sub in subgraphs(node):
        names.extend(sorted(free_names(sub)))
    return names


def _label(node, index: int) -> str:
    name = node.name or (node.output[0] if node.output else f"#{index}")
    return f"{node.op_type} node {name!r}"


def ordered_nodes(graph, known) -> list:
    """The nodes of `graph` in an order where each runs after what it reads; `known`: the
    names defined before the graph runs (inputs, initializers, enclosing scopes)."""
    nodes = list(graph.node)
    producer: dict = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            if not name:
                continue
            if name in producer:
                raise OnnxImportError(f"tensor {name!r} is produced twice: by "
                                      f"{_label(nodes[producer[name]], producer[name])} and by "
                                      f"{_label(node, index)}")
            producer[name] = index
    needs = [_needs(node) for node in nodes]
    for index, node in enumerate(nodes):
        for name in needs[index]:
            if name not in known and name not in producer:
                raise OnnxImportError(f"{_label(node, index)} reads {name!r}, which is not a "
                                      "graph input, an initializer or any node's output")
    defined, in_order = set(), True
    for index in range(len(nodes)):
        if any(name in producer and name not in defined and name not in known
               for name in needs[index]):
            in_order = False
            break
        defined.update(nodes[index].output)
    if in_order:
        return nodes
    return _sorted(nodes, needs, producer, known)


def _sorted(nodes, needs, producer, known) -> list:
    waiting = [0] * len(nodes)
    readers: dict = {}
    for index, names in enumerate(needs):
        sources = {producer[n] for n in names if n in producer and n not in known}
        waiting[index] = len(sources)
        for source in sources:
            readers.setdefault(source, []).append(index)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(nodes[index])
        for reader in readers.get(index, ()):
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, reader)
    if len(order) != len(nodes):
        stuck = [_label(nodes[i], i) for i, count in enumerate(waiting) if count][:5]
        raise OnnxImportError(f"the graph has a cycle: {', '.join(stuck)} each wait on "
                              "another's output")
    return order
