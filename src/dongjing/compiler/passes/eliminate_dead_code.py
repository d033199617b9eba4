"""Dead-code elimination: only the nodes the fetches need survive."""

from __future__ import annotations

from ..ir import PassResult, Rebuilder


def eliminate_dead_code(graph, fetches: list) -> PassResult:
    """Drop every node no fetch depends on (unfetched assignments too: they never run)."""
    live = set()
    stack = list(fetches)
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        stack.extend(node.inputs)
    rb = Rebuilder(graph, lazy=True)
    dropped = []
    for node in graph.nodes:
        if node in live:
            rb.map[node] = rb.copy(node)
        else:
            dropped.append(node.name)
    changes = [f"removed %{name} (no fetch needs it)" for name in dropped]
    return PassResult(*rb.finish(fetches), changes)
