"""CUDA graphs for compiled programs on a GPU: a steady-state run is captured once and replayed.

A compiled program launches one kernel (or library call) per node; on a GPU the launches, not
the arithmetic, dominate small steps. After `WARMUP` plain runs (CuPy compiles and loads its
kernels then), the next run with the same feed shapes is captured on a side stream with CuPy's
stream capture and checked once against a plain run of the same step: outputs and every
Variable written must agree, else the program stays uncaptured. Later runs with those shapes
copy their feeds into the graph's input arrays, launch the graph on the current stream, copy the
outputs out and bump the Variables' versions as a plain run would.

What the graph depends on stays fixed: the planned buffers and constants are the program's own;
each Variable's array is checked by identity before a replay (a Variable given a new array is
captured again); everything a captured run allocates comes from a memory pool of its own, kept
with the graph, so no other array is ever given that memory.

Not captured: programs with random ops (a replay would repeat the draws), control flow (its
condition is read on the host), collectives, or ops outside `CAPTURABLE`; and any program whose
capture fails (an op that reads a value on the host). `DONGJING_CUDA_GRAPHS=0` turns capture
off. `Replayer.reason` says why a program is not captured.
"""

from __future__ import annotations

import os

from ..core.registry import Kind
from ..dtypes import is_floating
from ..graph.program import commit_assignments
from ..ops.nn import check_classes

WARMUP = 2  # plain runs before the first capture
MAX_GRAPHS = 4  # captured feed-shape signatures per program
# kinds by value: the compiler's own fused-kernel op gives its kind as a string
_CAPTURED_KINDS = {str(k) for k in (Kind.SOURCE, Kind.ELEMENTWISE, Kind.REDUCE, Kind.EFFECT,
                                    Kind.FUSED)}
CAPTURABLE = frozenset({
    "reshape", "reshape_like", "permute", "expand", "broadcast_to_like", "unsqueeze", "squeeze",
    "concat", "einsum", "getitem", "slice_assign", "getitem_grad", "matmul", "roll", "flip",
    "tril", "triu", "unfold2d", "fold2d", "one_hot", "max_pool2d", "max_pool2d_backward",
    "cumsum", "cumprod", "gather", "scatter_add", "scatter", "tuple_get",
})


def enabled() -> bool:
    """Whether CUDA-graph capture is on (`DONGJING_CUDA_GRAPHS`, default on)."""
    return os.environ.get("DONGJING_CUDA_GRAPHS", "1") not in ("0", "")


# CuPy refuses cuBLAS calls while a stream captures (NotImplementedError, seen with CuPy 14.2
# on an H100): products are captured only when the program computes them through cuBLAS
# itself (backends/cuda_gemm.py: 2-D and 3-D float32/float64), else they stay uncaptured
# rather than fail one capture per program
_PRODUCT_DTYPES = frozenset({"float32", "float64"})


def _product_reason(node, own_gemm: bool) -> str | None:
    if node.op.name == "einsum":
        return "einsum calls cuBLAS through CuPy, which refuses it during stream capture"
    if node.op.name != "matmul":
        return None
    if not own_gemm:
        return "matmul calls cuBLAS through CuPy, which refuses it during stream capture"
    if any(len(i.shape) not in (2, 3) or getattr(i.dtype, "name", None) not in _PRODUCT_DTYPES
           for i in node.inputs):
        return (f"matmul of {[tuple(i.shape) for i in node.inputs]} goes through CuPy's "
                "cuBLAS, which refuses stream capture")
    return None


def uncapturable(graph, own_gemm: bool = False) -> str | None:
    """Why the program of `graph` cannot be captured (None when it may be); `own_gemm`: its
    2-D products call cuBLAS directly (cuda_gemm.py)."""
    for node in graph.nodes:
        op = node.op
        reason = _product_reason(node, own_gemm)
        if reason is not None:
            return reason
        if op.random:
            return f"{op.name} is random (a replay would repeat its draws)"
        if op.name == "tuple_get" and str(node.inputs[0].op.kind) != str(Kind.FUSED):
            return f"{node.inputs[0].op.name} runs sub-graphs (control flow reads the host)"
        if str(op.kind) not in _CAPTURED_KINDS and op.name not in CAPTURABLE:
            return f"{op.name} is not known to be capturable"
    return None


def _refs(graph) -> list:
    """The Variables the program reads or writes, each once."""
    seen, refs = set(), []
    for node in graph.nodes:
        ref = node.attrs.get("ref")
        if ref is not None and id(ref) not in seen:
            seen.add(id(ref))
            refs.append(ref)
    return refs


def _label_checks(program) -> tuple[list, str | None]:
    """The host checks a replay runs on its feeds first: `one_hot` reads its labels on the host
    to reject out-of-range classes, which a capture cannot do, so a replay checks the label
    feeds itself (labels computed inside the graph make the program uncapturable)."""
    fed = {node: i for i, node in enumerate(program.feed_nodes) if node is not None}
    checks = []
    for node in program.graph.nodes:
        if node.op.name != "one_hot":
            continue
        labels = node.inputs[0]
        if labels not in fed:
            return [], "one_hot's labels are computed in the graph (checking them reads the host)"
        attrs = node.attrs
        checks.append((fed[labels], attrs["num_classes"], attrs.get("ignore_index"),
                       check_classes))
    return checks, None


class _Capture:
    """One captured run: its graph, input arrays, outputs, and the Variables' version steps."""

    def __init__(self, graph, inputs, outputs, state, steps, pool):
        self.graph, self.inputs, self.outputs = graph, inputs, outputs
        self.state = state  # (Variable, its array when captured)
        self.steps = steps  # (Variable, version increase per run)
        self.pool = pool  # the memory the captured run allocated: the graph's alone

    def valid(self) -> bool:
        return all(ref._data is array for ref, array in self.state)

    def replay(self, xp, feeds: list) -> list:
        for static, given in zip(self.inputs, feeds):
            if static is not None:
                xp.copyto(static, given)
        self.graph.launch()
        for ref, step in self.steps:
            ref._version[0] += step
        return [None if out is None else out.copy() for out in self.outputs]


class Replayer:
    """Runs a compiled CUDA program: plainly at first, then by replaying captured graphs."""

    def __init__(self, program, reason: str | None):
        self.program = program
        self.xp = program.backend.xp
        self.reason = reason  # why runs are not captured (None while they may be)
        self.plain_runs = 0
        self.replays = 0
        self.captures: dict = {}  # feed signature -> _Capture
        self.refs = _refs(program.graph)
        self.checks, why = _label_checks(program)
        self.reason = self.reason or why

    @classmethod
    def for_program(cls, program) -> Replayer:
        own_gemm = "_gemm" in program.namespace
        reason = ("DONGJING_CUDA_GRAPHS=0" if not enabled() else
                  uncapturable(program.graph, own_gemm))
        return cls(program, reason)

    def __call__(self, feeds: list) -> list:
        if self.reason is None:
            key = tuple(None if a is None else (a.shape, a.dtype.str) for a in feeds)
            capture = self.captures.get(key)
            if capture is not None:
                if capture.valid():
                    for i, classes, ignore, check in self.checks:  # before any work
                        check(feeds[i], classes, ignore)
                    self.replays += 1
                    return capture.replay(self.xp, feeds)
                del self.captures[key]  # a Variable was given a new array: capture again
            self.plain_runs += 1
            if self.plain_runs > WARMUP and len(self.captures) < MAX_GRAPHS:
                return self._capture(key, feeds)
        return self._plain(feeds)

    def _plain(self, feeds: list) -> list:
        outputs, pending = self.program._run(feeds)
        commit_assignments(pending)
        return outputs

    def _capture(self, key, feeds: list) -> list:
        """Run this step plainly, then captured from the same state; keep the capture when both
        agree. Returns the step's outputs (state as after one run either way)."""
        xp = self.xp
        saved = [(ref, ref._data.copy(), ref._version[0]) for ref in self.refs]
        expected = self._plain(feeds)
        after = [(ref, ref._data.copy(), ref._version[0]) for ref in self.refs]
        for ref, data, version in saved:
            xp.copyto(ref._data, data)
            ref._version[0] = version
        try:
            capture = self._record(feeds)
        except Exception as exc:  # an op that reads the host, a library that cannot capture
            self._give_up(f"capture failed: {type(exc).__name__}: {exc}", saved, after)
            return expected
        capture.graph.launch()
        got = [None if out is None else out.copy() for out in capture.outputs]
        same = all(_agree(xp, a, b) for a, b in zip(expected, got)) and all(
            _agree(xp, ref._data, data) for ref, data, _ in after)
        if not same:
            self._give_up("a replay differed from plain execution", saved, after)
            return expected
        self.captures[key] = capture
        return got

    def _give_up(self, reason: str, saved, after) -> None:
        self.reason = reason
        for ref, data, version in after:  # the state of the one plain run
            self.xp.copyto(ref._data, data)
            ref._version[0] = version

    def _record(self, feeds: list) -> _Capture:
        xp = self.xp
        versions = [ref._version[0] for ref in self.refs]
        state = [(ref, ref._data) for ref in self.refs]
        inputs = [None if a is None else xp.empty_like(a) for a in feeds]
        for static, given in zip(inputs, feeds):
            if static is not None:
                xp.copyto(static, given)
        xp.cuda.get_current_stream().synchronize()
        pool = xp.cuda.MemoryPool()
        stream = xp.cuda.Stream(non_blocking=True)
        try:
            with xp.cuda.using_allocator(pool.malloc), stream:
                stream.begin_capture()
                try:
                    outputs, pending = self.program._run(inputs)
                    commit_assignments(pending)
                except BaseException:
                    try:  # end the broken capture; the run's own error is the one to report
                        stream.end_capture()
                    except Exception:  # noqa: S110
                        pass
                    raise
                graph = stream.end_capture()
        except BaseException:
            for ref, version in zip(self.refs, versions):  # nothing ran: undo the bookkeeping
                ref._version[0] = version
            raise
        steps = [(ref, ref._version[0] - v) for ref, v in zip(self.refs, versions)]
        return _Capture(graph, inputs, list(outputs), state, [s for s in steps if s[1]], pool)


def _agree(xp, a, b) -> bool:
    if a is None or b is None:
        return a is b
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if (is_floating(a.dtype) or a.dtype.kind == "c"):
        return bool(xp.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(xp.array_equal(a, b))
