"""`compare(fn, *args)`: profile a function eagerly and compiled, side by side, mapped back
through the user's source lines."""

from __future__ import annotations

import re
from collections import Counter

from ..runtime.jit import JitFunction, jit
from .events import COMPUTE_KINDS
from .profile import profile


def compare(fn, *args, optimize: int = 2, warmup: int = 1, runs: int = 1,
            **kwargs) -> Comparison:
    """Run `fn(*args, **kwargs)` eagerly and as `dj.jit(fn, optimize=optimize)`: `warmup`
    calls each (the first compiled one traces and compiles), then `runs` profiled calls each.

    Returns a Comparison; print it for the two tables (times are totals over the `runs`
    calls). `fn` runs `2 * (warmup + runs)` times, so a training step updates its parameters
    that often.
    """
    plain = fn.fn if isinstance(fn, JitFunction) else fn
    compiled_fn = fn if isinstance(fn, JitFunction) else jit(fn, optimize=optimize)
    for _ in range(warmup):
        with profile(with_stack=True):  # also warms the profiler's own paths
            plain(*args, **kwargs)
    with profile(with_stack=True) as eager:
        for _ in range(runs):
            plain(*args, **kwargs)
    for _ in range(max(warmup, 1)):
        with profile():  # traces and compiles, then generates the timed variant
            compiled_fn(*args, **kwargs)
    with profile() as compiled:
        for _ in range(runs):
            compiled_fn(*args, **kwargs)
    return Comparison(eager, compiled)


def _line_key(source: str | None):
    if not source:
        return ("~", 0)
    match = re.match(r"(.*):(\d+)$", source)
    return (match.group(1), int(match.group(2))) if match else (source, 0)


def _ops_text(counter: Counter) -> str:
    return ", ".join(f"{name}x{n}" if n > 1 else name for name, n in counter.items())


class Comparison:
    """Two finished profiles of one function: `.eager` and `.compiled`.

    `by_op()` and `by_line()` give the side-by-side tables (`str()` shows both). On a line, a
    fused kernel's time is shared equally among its member nodes.
    """

    def __init__(self, eager: profile, compiled: profile):
        self.eager, self.compiled = eager, compiled

    def _rows_by_line(self) -> dict:
        rows: dict = {}  # source -> [eager ops, eager us, compiled ops, compiled us]

        def row(source):
            return rows.setdefault(source, [Counter(), 0.0, Counter(), 0.0])

        for e in self.eager.events():
            if e.kind == "op":
                r = row(e.source)
                r[0][e.name] += 1
                r[1] += e.self_us
        for e in self.compiled.events():
            if e.kind == "node":
                r = row(e.source)
                r[2][e.name] += 1
                r[3] += e.self_us
            elif e.kind == "kernel":
                members = e.args.get("members") or [{"op": e.name, "source": e.source}]
                share = e.self_us / len(members)
                for m in members:
                    r = row(m["source"])
                    r[2][m["op"] + "*"] += 1  # * = inside a fused kernel
                    r[3] += share
        return rows

    def by_line(self) -> str:
        """Per user source line: the eager ops and their time, the compiled nodes and theirs."""
        rows = self._rows_by_line()
        lines = []
        head = f"{'source line':<22} {'eager ops':<34}{'eager us':>10}   " \
               f"{'compiled nodes (* fused)':<34}{'compiled us':>12}"
        lines += [head, "-" * len(head)]
        for source in sorted(rows, key=_line_key):
            eo, et, co, ct = rows[source]
            note = "" if co else "   (no compiled node here)"
            lines.append(f"{(source or '?')[:22]:<22} {_ops_text(eo)[:33]:<34}{et:>10.1f}   "
                         f"{_ops_text(co)[:33]:<34}{ct:>12.1f}{note}")
        lines.append("-" * len(head))
        lines += self._totals()
        return "\n".join(lines)

    def by_op(self) -> str:
        """Per op name: calls and total self time eagerly and compiled."""
        eager = {r.name: r for r in self.eager.key_averages() if r.kind in COMPUTE_KINDS}
        comp = {r.name: r for r in self.compiled.key_averages() if r.kind in COMPUTE_KINDS}
        names = sorted(set(eager) | set(comp), key=lambda n: -max(
            eager[n].self_time_total if n in eager else 0.0,
            comp[n].self_time_total if n in comp else 0.0))
        head = f"{'op':<22}{'eager calls':>12}{'eager us':>12}   " \
               f"{'compiled calls':>15}{'compiled us':>12}"
        lines = [head, "-" * len(head)]
        for n in names:
            e, c = eager.get(n), comp.get(n)
            lines.append(f"{n[:22]:<22}{(e.count if e else 0):>12}"
                         f"{(e.self_time_total if e else 0.0):>12.1f}   "
                         f"{(c.count if c else 0):>15}{(c.self_time_total if c else 0.0):>12.1f}")
        lines.append("-" * len(head))
        lines += self._totals()
        return "\n".join(lines)

    def _totals(self) -> list:
        se, sc = self.eager.summary(), self.compiled.summary()
        return [f"{label:<22}{a:>12.1f} us (eager) {b:>12.1f} us (compiled)"
                for label, a, b in (("op compute", se.compute_us, sc.compute_us),
                                    ("framework overhead", se.overhead_us, sc.overhead_us),
                                    ("idle", se.idle_us, sc.idle_us),
                                    ("wall", se.wall_us, sc.wall_us))]

    def __str__(self) -> str:
        return self.by_op() + "\n\n" + self.by_line()

    __repr__ = __str__
