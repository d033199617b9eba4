"""Recorded events as objects: nesting per thread, total and self times."""

from __future__ import annotations

# kinds whose own time is computation (an op's forward, a compiled node, a fused kernel)
COMPUTE_KINDS = ("op", "node", "kernel")


class Event:
    """One executed unit: `name`, `kind`, `start_ns`/`end_ns` (perf_counter_ns), `thread`,
    `args` (dict), `parent` and `children` (nesting within its thread)."""

    __slots__ = ("start_ns", "end_ns", "thread", "kind", "name", "args", "parent", "children")

    def __init__(self, start_ns, end_ns, thread, kind, name, args):
        self.start_ns, self.end_ns, self.thread = start_ns, end_ns, thread
        self.kind, self.name, self.args = kind, name, args or {}
        self.parent = None
        self.children: list = []

    @property
    def duration_us(self) -> float:
        """Wall time from start to end, in µs."""
        return (self.end_ns - self.start_ns) / 1000

    @property
    def self_us(self) -> float:
        """Wall time not spent in nested events, in µs."""
        inner = sum(c.end_ns - c.start_ns for c in self.children)
        return (self.end_ns - self.start_ns - inner) / 1000

    @property
    def source(self) -> str | None:
        """The user's `file:line` that produced it (compiled nodes; eager ops with with_stack)."""
        return self.args.get("source")

    def ancestors(self):
        """The enclosing events, innermost first."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def __repr__(self) -> str:
        return f"<Event {self.kind} {self.name} {self.duration_us:.1f} us>"


def build(raw: list) -> list:
    """Events from raw tuples, nested per thread (a parent contains its children's interval).

    Raw events are appended when they end, so for equal intervals the later one is the outer.
    """
    indexed = [(r[0], -r[1], -i, r) for i, r in enumerate(raw)]
    indexed.sort()
    events = []
    stacks: dict = {}
    for _, _, _, r in indexed:
        event = Event(*r)
        stack = stacks.setdefault(event.thread, [])
        while stack and not (event.end_ns <= stack[-1].end_ns
                             and event.start_ns < stack[-1].end_ns):
            stack.pop()
        if stack:
            event.parent = stack[-1]
            stack[-1].children.append(event)
        stack.append(event)
        events.append(event)
    return events
