"""`key_averages()`: events aggregated by name (and input shapes), printed as a table."""

from __future__ import annotations

from ..errors import DongjingError

_SORT_ALIASES = {"self_cpu_time_total": "self_time_total", "cpu_time_total": "time_total",
                 "cpu_time": "mean", "calls": "count", "self_cpu_memory_usage": "self_memory",
                 "cpu_memory_usage": "memory"}
SORT_KEYS = ("self_time_total", "time_total", "mean", "count", "memory", "self_memory", "name")


class FunctionStats:
    """The events of one name (and shapes): `count`, `time_total`/`self_time_total`/`mean`
    (µs), `memory`/`self_memory` (bytes, net), `kind`, `input_shapes`."""

    __slots__ = ("name", "kind", "input_shapes", "count", "time_total", "self_time_total",
                 "memory", "self_memory")

    def __init__(self, name: str, kind: str, input_shapes=None):
        self.name, self.kind, self.input_shapes = name, kind, input_shapes
        self.count = 0
        self.time_total = self.self_time_total = 0.0
        self.memory = self.self_memory = 0

    @property
    def mean(self) -> float:
        """Mean wall time per call, µs."""
        return self.time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (f"<FunctionStats {self.name}: {self.count} calls, {self.time_total:.1f} us total,"
                f" {self.self_time_total:.1f} us self>")


class EventTable(list):
    """A list of FunctionStats; `.table()` prints it."""

    def __init__(self, rows, show_memory: bool, show_shapes: bool):
        super().__init__(rows)
        self.show_memory, self.show_shapes = show_memory, show_shapes

    def table(self, sort_by: str = "self_time_total", row_limit: int = 20) -> str:
        """The rows sorted by `sort_by` (largest first; `name` A-Z) as a fixed-width table,
        at most `row_limit` rows (all if negative)."""
        key = _SORT_ALIASES.get(sort_by, sort_by)
        if key not in SORT_KEYS:
            raise DongjingError(f"table(sort_by={sort_by!r}): expected one of {SORT_KEYS}")
        if key == "name":
            rows = sorted(self, key=lambda r: r.name)
        else:
            rows = sorted(self, key=lambda r: getattr(r, key), reverse=True)
        if row_limit is not None and row_limit >= 0:
            rows = rows[:row_limit]
        return format_table(rows, self, self.show_memory, self.show_shapes)

    def __str__(self) -> str:
        return self.table()


def aggregate(events: list, group_by_input_shape: bool, show_memory: bool) -> EventTable:
    """FunctionStats per event name (and input shapes), in order of first appearance."""
    rows: dict = {}
    for e in events:
        shapes = None
        if group_by_input_shape:
            shapes = e.args.get("input_shapes")
            key = (e.name, repr(shapes))
        else:
            key = e.name
        row = rows.get(key)
        if row is None:
            row = rows[key] = FunctionStats(e.name, e.kind, shapes)
        row.count += 1
        row.time_total += e.duration_us
        row.self_time_total += e.self_us
        mem = e.args.get("memory")
        if mem is not None:
            row.memory += mem
            row.self_memory += mem - sum(c.args.get("memory", 0) for c in e.children)
    return EventTable(rows.values(), show_memory, group_by_input_shape)


def _time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _bytes(n: int) -> str:
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


def format_table(rows: list, everything: list, show_memory: bool, show_shapes: bool) -> str:
    """PyTorch's key_averages table layout: self and total time with their shares, mean,
    calls (then memory and input shapes when recorded)."""
    self_total = sum(r.self_time_total for r in everything) or 1.0
    header = ["Name", "Self time %", "Self time", "Total %", "Total time", "Time avg",
              "# of Calls"]
    if show_memory:
        header += ["Self Mem", "Mem"]
    if show_shapes:
        header += ["Input Shapes"]
    body = []
    for r in rows:
        line = [r.name, f"{100 * r.self_time_total / self_total:.2f}%", _time(r.self_time_total),
                f"{100 * r.time_total / self_total:.2f}%", _time(r.time_total), _time(r.mean),
                str(r.count)]
        if show_memory:
            line += [_bytes(r.self_memory), _bytes(r.memory)]
        if show_shapes:
            line += [str(r.input_shapes or [])]
        body.append(line)
    widths = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(header)]
    widths[0] = min(max(widths[0], 4), 60)

    def fmt(cells):
        first = cells[0] if len(cells[0]) <= widths[0] else cells[0][:widths[0] - 3] + "..."
        parts = [first.ljust(widths[0])] + [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    lines = [rule, fmt(header), rule] + [fmt(b) for b in body] + [rule]
    lines.append(f"Self time total: {_time(self_total if everything else 0.0)}")
    return "\n".join(lines)
