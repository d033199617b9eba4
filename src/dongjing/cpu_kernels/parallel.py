"""Threads over blocks: a large kernel or ufunc call split in two halves, one run by a worker
thread (numba kernels and NumPy ufuncs release the GIL), the other by the caller."""

from __future__ import annotations

import os
import threading
from queue import SimpleQueue

from ..backends import numpy_backend
from ..short_paths import declare as _declare_short_path
from ..short_paths import state as _short
from .options import get_options

# `parallel_min_size` (options; default 2**18 elements): below it a thread hand-off costs more
# than it saves. W3 on the 2-core machine (best of 40, machine lightly loaded): 865 µs split vs
# 1,096 µs on one thread. Under heavy load from other processes a second thread can lose;
# `dj.compiler.set_options(threads=1)` keeps every call on the caller's thread.
_jobs: SimpleQueue | None = None  # (function, args, reply queue) for the worker thread
_lock = threading.Lock()

_declare_short_path("parallel.halves", __name__, "large calls split in two halves on two threads "
                    "(unfold2d, max pooling and its gradient, relu and its gradient eagerly; "
                    "compiled programs' ufuncs and kernels, decided when they compile)")


def threads() -> int:
    """How many threads large elementwise calls use: the `threads` setting (options), or
    when it is None OMP_NUM_THREADS (default 2); at most 2 and at most the CPUs there are."""
    if not _short.on:  # short path: parallel.halves (off: one thread)
        return 1
    wanted = get_options().threads
    if wanted is None:
        try:
            wanted = int(os.environ.get("OMP_NUM_THREADS", "2"))
        except ValueError:
            wanted = 2
    return max(1, min(2, wanted, os.cpu_count() or 1))


def min_size() -> int:
    """Elements from which a kernel or ufunc call is split over the threads (options)."""
    return get_options().parallel_min_size


def _serve(jobs: SimpleQueue) -> None:
    """The worker thread: run each job, reply with None or the exception it raised."""
    while True:
        fn, args, reply = jobs.get()
        try:
            fn(*args)
        except BaseException as exc:  # handed to the caller, which re-raises it
            reply.put(exc)
        else:
            reply.put(None)


def _submit(fn, *args) -> SimpleQueue:
    """Run `fn(*args)` on the worker thread (started on first use; a plain thread and queue,
    not concurrent.futures, whose import alone costs a first compile several ms)."""
    global _jobs
    if _jobs is None:
        with _lock:
            if _jobs is None:
                jobs: SimpleQueue = SimpleQueue()
                threading.Thread(target=_serve, args=(jobs,), name="dongjing-block",
                                 daemon=True).start()
                _jobs = jobs
    reply: SimpleQueue = SimpleQueue()
    _jobs.put((fn, args, reply))
    return reply


def _wait(reply: SimpleQueue) -> None:
    exc = reply.get()
    if exc is not None:
        raise exc


# Elements of the largest array below which NumPy's own calls (strided copies, ufuncs) are
# faster on one thread than as two halves. Measured on W7's shapes (2 cores): unfold2d of
# (64, 1, 28, 28), 0.39 M columns, 0.079 ms on one thread against 0.136 on two; of
# (64, 8, 28, 28), 3.1 M columns, 0.62 against 0.40 ms.
NUMPY_MIN_SIZE = 1 << 20


def numpy_halves_pay(*arrays) -> bool:
    """Whether NumPy work on `arrays` should run as two halves of their leading dim at once
    (`split_leading`, `split_ufunc`): two threads allowed, NumPy's own arrays, at least two
    rows, and the largest array at least `NUMPY_MIN_SIZE` elements."""
    ndarray = numpy_backend.array_types[0]
    return (threads() > 1 and all(type(a) is ndarray for a in arrays)
            and arrays[0].ndim > 0 and arrays[0].shape[0] > 1
            and max(a.size for a in arrays) >= NUMPY_MIN_SIZE)


def halves(part, n: int) -> None:
    """`part(0, n // 2)` on the worker thread while `part(n // 2, n)` runs on this one."""
    half = n // 2
    reply = _submit(part, 0, half)
    try:
        part(half, n)
    finally:
        _wait(reply)


def split_kernel(kernel, n: int, args: tuple, is_array: tuple) -> None:
    """`kernel(n, *args)` as two calls on the halves of every 1-d array argument."""

    def part(lo, hi):
        kernel(hi - lo, *[a[lo:hi] if flag else a for a, flag in zip(args, is_array)])

    halves(part, n)


def split_leading(fn, n: int, args: tuple, is_split: tuple) -> None:
    """`fn(*args)` as two calls, each on one half of the leading dim (of length `n`) of the
    arguments flagged in `is_split` (the others go to both calls as they are)."""

    def part(lo, hi):
        fn(*[a[lo:hi] if flag else a for a, flag in zip(args, is_split)])

    halves(part, n)


def split_ufunc(ufunc, out, *args):
    """`ufunc(*args, out=out)` over two halves of flat arrays of one shape (or scalars)."""
    if not out.flags.c_contiguous:  # a flat view of `out` is needed to write through
        return ufunc(*args, out=out)
    flat_out = out.reshape(-1)
    n = flat_out.shape[0]
    flat, sliced = [], []
    for a in args:
        shape = getattr(a, "shape", ())
        if shape == out.shape:
            flat.append(a.reshape(-1))
            sliced.append(True)
        elif getattr(a, "size", 1) == 1:  # a scalar broadcasts against either half
            flat.append(a.reshape(()) if shape else a)
            sliced.append(False)
        else:  # a broadcast operand (e.g. (1, 3) into (2, 3)): flat halves don't line up
            return ufunc(*args, out=out)

    def part(lo, hi):
        ufunc(*[a[lo:hi] if cut else a for a, cut in zip(flat, sliced)], out=flat_out[lo:hi])

    halves(part, n)
    return out
