"""Timing: warm-up, an ``inner`` count per system so a repeat lasts ~0.25 s, and repeats run
interleaved across systems (repeat r of each in turn) so that drift hits all alike."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.machine import rss_mb


@dataclass
class TimingConfig:
    warmup_steps: int = 5
    warmup_s: float = 0.3
    repeat_s: float = 0.25
    repeats: int = 7
    # A repeat stops early past this many seconds: on an oversubscribed machine a threaded
    # step can become 100x slower than during warm-up, and inner steps would then take minutes.
    repeat_limit_s: float = 1.0
    # A system whose memory grows past this while timed is dropped (a leak would otherwise
    # take the whole machine, shared with others, into the out-of-memory killer).
    memory_growth_mb: float = 2048.0

    @classmethod
    def quick(cls) -> TimingConfig:
        return cls(warmup_steps=3, warmup_s=0.1, repeat_s=0.1, repeats=3, repeat_limit_s=0.5)


@dataclass
class Timing:
    """Seconds per step of each repeat, and the summary in microseconds."""

    inner: int
    per_step_s: list[float] = field(default_factory=list)
    cut: int = 0  # repeats stopped early by the time limit
    dropped: str = ""  # why timing stopped before all repeats, if it did
    rss_mb: float = 0.0  # resident memory when timing began

    @property
    def median_us(self) -> float:
        return statistics.median(self.per_step_s) * 1e6

    @property
    def min_us(self) -> float:
        return min(self.per_step_s) * 1e6

    @property
    def max_us(self) -> float:
        return max(self.per_step_s) * 1e6


def warm_up(step: Callable[[], object], cfg: TimingConfig) -> int:
    """Run ``step`` at least ``warmup_steps`` times and ``warmup_s`` seconds; return the inner
    count that makes one repeat last about ``repeat_s``."""
    count, start = 0, time.perf_counter()
    times: list[float] = []
    while count < cfg.warmup_steps or time.perf_counter() - start < cfg.warmup_s:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        count += 1
    recent = sorted(times[len(times) // 2:])  # the settled half, robust to a slow outlier
    per_step = max(recent[len(recent) // 2], 1e-9)
    return max(1, round(cfg.repeat_s / per_step))


def time_repeat(step: Callable[[], object], inner: int,
                limit_s: float = float("inf")) -> tuple[float, int]:
    """Seconds per step over ``inner`` back-to-back steps, after a ``gc.collect()``, and the
    steps done: fewer when the repeat ran past ``limit_s`` (checked every eighth of it)."""
    gc.collect()
    chunk = max(1, inner // 8)
    done = 0
    t0 = time.perf_counter()
    while done < inner:
        n = min(chunk, inner - done)
        for _ in range(n):
            step()
        done += n
        if time.perf_counter() - t0 > limit_s:
            break
    return (time.perf_counter() - t0) / done, done


def measure(steps: dict[str, Callable[[], object]], cfg: TimingConfig | None = None,
            progress: Callable[[str], None] | None = None) -> dict[str, Timing]:
    """Warm each system up, then time ``cfg.repeats`` rounds, each system once per round."""
    cfg = cfg or TimingConfig()
    timings = {}
    # Objects alive now (libraries, runners) are frozen out of the collector, so that the
    # gc.collect() before each repeat costs little (with torch loaded, a full one takes ~0.2 s)
    # while the garbage made by the steps is still collected.
    gc.collect()
    gc.freeze()
    try:
        for name, step in steps.items():
            rss = rss_mb()
            timings[name] = Timing(warm_up(step, cfg), rss_mb=rss)
        if progress:
            progress("warmed up: inner " + ", ".join(f"{n} {t.inner}" for n, t in timings.items()))
        for r in range(cfg.repeats):
            for name, step in steps.items():
                t = timings[name]
                if not t.dropped:
                    _timed_repeat(t, step, cfg)
            if progress:
                progress(f"repeat {r + 1}/{cfg.repeats}")
    finally:
        gc.unfreeze()
    return timings


def _timed_repeat(t: Timing, step: Callable[[], object], cfg: TimingConfig) -> None:
    """One repeat into ``t``; drop the system if its memory keeps growing."""
    per_step, done = time_repeat(step, t.inner, cfg.repeat_limit_s)
    t.per_step_s.append(per_step)
    t.cut += done < t.inner
    grown = rss_mb() - t.rss_mb
    if grown > cfg.memory_growth_mb:
        t.dropped = f"memory grew by {grown:,.0f} MB while timed (a leak?)"
        gc.collect()
