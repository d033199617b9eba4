"""Does a W5 graph written the obvious public-API way get the bench's own program?

The bench builds W5's static graph with `systems.dj_common.rnn` (`x[t] @ W + h @ U + b`). A
user writes the same recurrence in other forms: operands in another order, `dj.matmul`,
`F.linear` with (out, in) weights, or an `nn.RNNCell`. Each is built here at W5's sizes,
compiled at O2, and its program compared with the bench builder's: the ops the compiled
graph holds (a transposed weight's `permute` and the weights themselves aside, and for the
RNN cell its second bias) and the value of the loss and gradients.

``python -m bench --program-check`` prints the table and exits 1 on a mismatch.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

STEPS, BATCH, N_IN, HIDDEN = 50, 32, 32, 64
LAYOUT_OPS = ("permute", "variable")  # a transposed weight: folded, or one permute per weight


def _data(steps: int):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((steps, BATCH, N_IN)).astype(np.float32)
    w = rng.uniform(-1 / 8, 1 / 8, (N_IN, HIDDEN)).astype(np.float32)
    u = rng.uniform(-1 / 8, 1 / 8, (HIDDEN, HIDDEN)).astype(np.float32)
    b = rng.uniform(-1 / 8, 1 / 8, (HIDDEN,)).astype(np.float32)
    return x, w, u, b


def _forms(dj: Any) -> dict:
    from bench.systems.dj_common import rnn

    F = dj.nn.functional

    def loop(step):
        def build(x, h, p, steps):
            for t in range(steps):
                h = dj.tanh(step(x[t], h, p))
            return h.sum()
        return build

    return {  # name: (loss builder, the weights it reads, in gradient order)
        "bench builder": (lambda x, h, p, n: rnn(dj, x, h, p["W"], p["U"], p["b"], n), "W U b"),
        "matmul(h, U) + matmul(x[t], W) + b": (
            loop(lambda xt, h, p: dj.matmul(h, p["U"]) + dj.matmul(xt, p["W"]) + p["b"]),
            "W U b"),
        "b + h @ U + x[t] @ W": (loop(lambda xt, h, p: p["b"] + h @ p["U"] + xt @ p["W"]),
                                 "W U b"),
        "F.linear(x[t], W', b) + F.linear(h, U')": (
            loop(lambda xt, h, p: F.linear(xt, p["Wt"], p["b"]) + F.linear(h, p["Ut"])),
            "Wt Ut b"),
        "nn.RNNCell": (None, ""),
    }


def _graph(dj: Any, build, names: str, steps: int):
    x_v, w, u, b = _data(steps)
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((steps, BATCH, N_IN), dj.float32, name="x")
        h = dj.zeros((BATCH, HIDDEN))
        if build is None:  # nn.RNNCell(32, 64) with the bench's weights and its bias split
            cell = dj.nn.RNNCell(N_IN, HIDDEN)
            cell.weight_ih.data = dj.tensor(w.T.copy())
            cell.weight_hh.data = dj.tensor(u.T.copy())
            cell.bias_ih.data = dj.tensor(b)
            cell.bias_hh.data = dj.tensor(np.zeros_like(b))
            for t in range(steps):
                h = cell(x[t], h)
            loss = h.sum()
            params = [cell.weight_ih, cell.weight_hh, cell.bias_ih]
        else:
            p = {"W": dj.Variable(w, name="W"), "U": dj.Variable(u, name="U"),
                 "b": dj.Variable(b, name="b"), "Wt": dj.Variable(w.T.copy(), name="Wt"),
                 "Ut": dj.Variable(u.T.copy(), name="Ut")}
            loss = build(x, h, p, steps)
            params = [p[n] for n in names.split()]
        grads = dj.gradients(loss, params)
    return g, x, x_v, [loss, *grads]


def _ops(program, ignore_adds: int = 0) -> Counter:
    ops = Counter(n.op.name for n in program.graph.nodes if n.op.name not in LAYOUT_OPS)
    ops["add"] -= ignore_adds
    return ops


def check(steps: int = STEPS) -> list[dict]:
    """One row per form: its compiled ops against the bench builder's, and its values."""
    import dongjing as dj
    from dongjing.compiler import build_program

    rows, reference = [], None
    for name, (build, names) in _forms(dj).items():
        g, x, x_v, fetches = _graph(dj, build, names, steps)
        program = build_program(g, [f.node for f in fetches], [x.node], 2)
        values = [np.asarray(v) for v in program([x_v])]
        # the RNN cell adds its second bias once more (to the batched product)
        ops = _ops(program, ignore_adds=1 if build is None else 0)
        if reference is None:
            reference = (ops, values)
        differs = {k: (ops[k], reference[0][k]) for k in set(ops) | set(reference[0])
                   if ops[k] != reference[0][k]}
        error = max(float(np.max(np.abs(np.ravel(a) - np.ravel(b)) if a.size else 0))
                    for a, b in zip(values, _in_reference_layout(values, name, reference[1])))
        rows.append({"form": name, "nodes": sum(ops.values()), "same_program": not differs,
                     "differs": differs, "max_error": error})
    return rows


def _in_reference_layout(values, name, reference):
    """The reference's values laid out as this form's: (out, in) weight gradients transposed."""
    if name.startswith("F.linear") or name == "nn.RNNCell":
        return [reference[0], reference[1].T, reference[2].T, reference[3]]
    return reference


def main() -> int:
    rows = check()
    print("| W5 written as | program ops | same program as the bench's | max value difference |")
    print("|---|---:|---|---:|")
    for r in rows:
        same = "yes" if r["same_program"] else f"no: {r['differs']}"
        print(f"| {r['form']} | {r['nodes']} | {same} | {r['max_error']:.1e} |")
    ok = all(r["same_program"] and r["max_error"] < 1e-4 for r in rows)
    return 0 if ok else 1
