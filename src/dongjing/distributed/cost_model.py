"""The planner's cost model: what a graph node costs to compute, what a message costs to send,
and how many bytes a value holds.

A node's time is the compiler's estimate of its work scaled by measured throughput: products
(matmul, conv) by their multiply-adds at `flops_per_s`, every node by the bytes it reads and
writes at `bytes_per_s`, whichever is slower, plus a fixed `node_overhead_s` (the interpreter's
cost per node). A message costs `link_latency_s` plus its bytes at `link_bytes_per_s`; a ring
all-reduce of n bytes over K ranks moves 2(K-1)/K n bytes in 2(K-1) steps.

`CostModel.measure()` times this machine once (a float32 product, a copy, a tiny op) and reads
the link figures `python -m bench.distributed link` saved (`link_file()`), else uses
`DEFAULT_LINK`. Give a `CostModel(...)` of your own to plan for another machine.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

# A shared-memory MPI transport on one machine, roughly (the bench measures the real figures).
DEFAULT_LINK = {"link_latency_s": 3e-5, "link_bytes_per_s": 2e9}
_PRODUCTS = ("matmul", "conv2d", "conv1d", "conv3d")


@dataclass(frozen=True)
class CostModel:
    """Throughputs the planner predicts step times from (seconds, bytes, float operations)."""

    flops_per_s: float = 2e10
    bytes_per_s: float = 5e9
    node_overhead_s: float = 3e-6
    link_latency_s: float = DEFAULT_LINK["link_latency_s"]
    link_bytes_per_s: float = DEFAULT_LINK["link_bytes_per_s"]
    source: str = "given"

    @classmethod
    def measure(cls) -> CostModel:
        """This machine's compute figures, timed now, and the saved link figures."""
        rng = np.random.default_rng(0)
        a = rng.standard_normal((256, 256)).astype(np.float32)
        flops = 2 * 256 ** 3 / _best(lambda: a @ a)
        big = np.ones(1 << 20, np.float32)
        copy_bytes = 2 * big.nbytes / _best(lambda: big.copy())
        small = np.ones(8, np.float32)
        overhead = _best(lambda: np.add(small, small), reps=200)
        link, where = load_link()
        return cls(flops, copy_bytes, max(overhead, 1e-6) * 3, link["link_latency_s"],
                   link["link_bytes_per_s"], f"measured now; link {where}")

    def node_seconds(self, flops: float, nbytes: float) -> float:
        """Predicted time of one node of `flops` operations touching `nbytes` bytes."""
        return max(flops / self.flops_per_s, nbytes / self.bytes_per_s) + self.node_overhead_s

    def message_seconds(self, nbytes: float) -> float:
        """One point-to-point message of `nbytes` bytes."""
        return self.link_latency_s + nbytes / self.link_bytes_per_s

    def all_reduce_seconds(self, nbytes: float, ranks: int) -> float:
        """A ring all-reduce of `nbytes` bytes over `ranks` ranks."""
        if ranks <= 1:
            return 0.0
        steps = 2 * (ranks - 1)
        return steps * self.link_latency_s + steps / ranks * nbytes / self.link_bytes_per_s

    def as_array(self) -> np.ndarray:
        """The five figures as float64 (to broadcast one rank's measurement to all)."""
        return np.array([self.flops_per_s, self.bytes_per_s, self.node_overhead_s,
                         self.link_latency_s, self.link_bytes_per_s], np.float64)

    def with_figures(self, figures) -> CostModel:
        """This model with the five figures of `as_array()` order replaced."""
        names = ("flops_per_s", "bytes_per_s", "node_overhead_s", "link_latency_s",
                 "link_bytes_per_s")
        values = asdict(self)
        values.update({n: float(v) for n, v in zip(names, figures)})
        return CostModel(**values)


def _best(fn, reps: int = 5) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return max(min(times), 1e-9)


def link_file() -> Path:
    """Where `python -m bench.distributed link` saves the link figures (`DONGJING_LINK_FILE`
    overrides)."""
    given = os.environ.get("DONGJING_LINK_FILE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dongjing" / "link.json"


def load_link() -> tuple[dict, str]:
    """The saved link figures and where they came from, else `DEFAULT_LINK`."""
    path = link_file()
    try:
        saved = json.loads(path.read_text())
        link = {k: float(saved[k]) for k in DEFAULT_LINK}
        return link, f"from {path}"
    except (OSError, ValueError, KeyError, TypeError):
        return dict(DEFAULT_LINK), "default (run `mpiexec -n 2 python -m bench.distributed link`)"


def value_bytes(node, batch: int) -> int:
    """Bytes of `node`'s value, an unknown dim counted as the batch size."""
    if node.dtype is None:
        return 0
    count = math.prod(batch if d is None else d for d in node.shape)
    return int(count) * np.dtype(node.dtype).itemsize


def node_flops(node, batch: int) -> float:
    """The compiler's estimate of a node's float operations: multiply-adds of a product,
    else one per output element."""
    out = math.prod(batch if d is None else d for d in node.shape) if node.dtype else 0
    if node.op.name in _PRODUCTS and len(node.inputs) >= 2:
        first, second = node.inputs[0].shape, node.inputs[1].shape
        if node.op.name == "matmul":
            inner = first[-1] if first else 1
        else:  # a convolution: the weight's (in_channels, *kernel) per output element
            inner = math.prod(d or 1 for d in second[1:])
        return 2.0 * out * (batch if inner is None else inner)
    return float(out)


def node_cost(model: CostModel, node, batch: int) -> float:
    """Predicted seconds of computing `node` at `batch` rows."""
    nbytes = value_bytes(node, batch) + sum(value_bytes(i, batch) for i in node.inputs)
    return model.node_seconds(node_flops(node, batch), nbytes)
