"""Runs one fuzz program every way dongjing can run it and compares with eager execution:
values and gradients at optimize=0/1/2 (three runs on one Session: fresh inputs each time, the
returned and fed arrays of a run mutated before the next), under dj.jit, from several threads at
once, with an unknown (None) leading dimension, eagerly with every short path off and with 0-d
inputs given as NumPy scalars (bit for bit), and against PyTorch where it is installed."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import fuzz_torch
import numpy as np
from fuzz_program import Program

import dongjing as dj
from dongjing import short_paths

MODES = ("O0", "O1", "O2", "O2_fused", "jit", "threads", "unknown_dims", "unknown_all",
         "short_paths", "torch")
THREADS = 4


@dataclass
class Failure:
    """One mismatch or crash: in which mode, and what."""

    mode: str
    message: str


def _float_inputs(program: Program) -> list:
    return [i for i, inp in enumerate(program.inputs) if inp.array.dtype.kind == "f"]


def _loss(outs):
    """A scalar depending on every float output (None if there is none)."""
    loss = None
    for k, out in enumerate(outs):
        if out.dtype.kind == "f":
            term = dj.sum(out) * float(k + 1)
            loss = term if loss is None else loss + term
    return loss


def _forward_and_grads(fn, float_idx, grad_fn):
    def run(*xs):
        outs = fn(*xs)
        loss = _loss(outs)
        grads = [None] * len(float_idx)
        if loss is not None and (loss.requires_grad or loss._node is not None):
            grads = list(grad_fn(loss, [xs[i] for i in float_idx]))
        return outs, grads
    return run


class NotAnArray(Exception):
    """An eager tensor holds something other than an ndarray (a NumPy scalar, say)."""


def _by_backward(loss, xs):
    loss.backward()
    return [x.grad for x in xs]


def eager_reference(program: Program, arrays: list, scalars: bool = False,
                    backward: bool = False) -> list:
    """The values of the outputs, then one gradient per float input (None when unconnected);
    0-d inputs given as NumPy scalars (`scalars`), gradients by `loss.backward()` (`backward`)
    rather than dj.grad."""
    fn = program.function()
    float_idx = _float_inputs(program)
    tensors = [dj.tensor(a[()] if scalars and a.ndim == 0 else a, requires_grad=i in float_idx)
               for i, a in enumerate(arrays)]
    grad_fn = _by_backward if backward else (
        lambda loss, xs: dj.grad(loss, xs, allow_unused=True))
    with np.errstate(all="ignore"):
        outs, grads = _forward_and_grads(fn, float_idx, grad_fn)(*tensors)
    for k, t in enumerate(list(outs) + list(grads)):
        if t is not None and type(t._data) is not np.ndarray:
            raise NotAnArray(f"result {k} holds a {type(t._data).__name__}, not an ndarray")
    return [o.numpy().copy() for o in outs] + [None if g is None else g.numpy().copy()
                                               for g in grads]


def _nan_as_one(a: np.ndarray) -> bytes:
    """`a`'s bytes with every NaN written as the same NaN."""
    if a.dtype.kind == "f" and np.isnan(a).any():
        a = np.where(np.isnan(a), a.dtype.type(np.nan), a)
    return a.tobytes()


def same_bits(ref: list, got: list, what: str) -> str | None:
    """None when every result has the same dtype, shape and bytes (None where None), all NaNs
    counting as one: IEEE 754 leaves a computed NaN's sign and payload unspecified, and NumPy's
    loops (SIMD or not, x - y or x + -y) give either; zeros' signs and infinities must match."""
    for k, (r, o) in enumerate(zip(ref, got)):
        if (r is None) != (o is None):
            return f"{what}: result {k} is None on one side only"
        if r is not None and (r.dtype != o.dtype or r.shape != o.shape
                              or _nan_as_one(r) != _nan_as_one(o)):
            bad = np.asarray(r != o).ravel() if r.shape == o.shape else slice(None)
            return (f"{what}: result {k} differs in its bits: {o.dtype}{list(o.shape)} "
                    f"{o.ravel()[bad][:4]} vs {r.dtype}{list(r.shape)} {r.ravel()[bad][:4]}")
    return None if len(ref) == len(got) else f"{what}: {len(got)} results, expected {len(ref)}"


def _short_paths_mode(program, arrays, ref) -> str | None:
    """Eager with every short path off, and with 0-d inputs as NumPy scalars, by dj.grad and by
    backward(): bit for bit the reference."""
    with short_paths.disabled():
        problem = same_bits(ref, eager_reference(program, arrays), "short paths off")
        problem = problem or same_bits(ref, eager_reference(program, arrays, backward=True),
                                       "short paths off, backward()")
    problem = problem or same_bits(ref, eager_reference(program, arrays, backward=True),
                                   "backward()")
    if not problem and any(a.ndim == 0 for a in arrays):
        problem = same_bits(ref, eager_reference(program, arrays, scalars=True),
                            "0-d inputs as NumPy scalars")
    return problem


TORCH_SKIPPED: dict = {}  # why programs were not compared with PyTorch -> how many


def _torch_mode(program, arrays, ref) -> str | None:
    """dongjing's eager values and gradients against PyTorch's (fuzz_torch.compare)."""
    if not fuzz_torch.available():
        return None
    float_idx = _float_inputs(program)
    try:
        low = fuzz_torch.run(program, arrays, float_idx)
    except fuzz_torch.Unsupported as why:
        key = str(why).split(":")[0]
        TORCH_SKIPPED[key] = TORCH_SKIPPED.get(key, 0) + 1
        return None
    try:
        high = fuzz_torch.run(program, arrays, float_idx, fuzz_torch.torch.float64)
    except fuzz_torch.Unsupported:
        high = None
    return fuzz_torch.compare(ref, low, high, "against PyTorch") or _refused(program, arrays)


def _refused(program, arrays) -> str | None:
    """A line the generator dropped because dongjing raised, which PyTorch computes."""
    for lines, expr, error in program.refused:
        candidate = Program(program.inputs, lines + [f"refused = {expr}"], ["refused"])
        try:
            fuzz_torch.run(candidate, arrays, _float_inputs(candidate))
        except fuzz_torch.Unsupported:
            continue
        return f"dongjing refuses `{expr}` ({error}); PyTorch computes it"
    return None


def _graph(program: Program, unknown: str = ""):
    """The program as a graph with its gradients; placeholders' leading dim (`unknown` is
    "leading") or every dim ("all") unknown."""
    fn = program.function()
    float_idx = _float_inputs(program)
    with dj.Graph() as g:
        phs = []
        for i, inp in enumerate(program.inputs):
            shape = inp.array.shape
            if unknown == "all":
                shape = (None,) * len(shape)
            elif unknown and shape:
                shape = (None,) + shape[1:]
            phs.append(dj.placeholder(shape, inp.array.dtype, name=f"x{i}"))
        outs, grads = _forward_and_grads(fn, float_idx, dj.gradients)(*phs)
    return g, phs, list(outs) + list(grads)


class _Fetcher:
    """Session.run over fetches some of which are None (unconnected gradients)."""

    def __init__(self, sess, fetches):
        self.sess, self.fetches = sess, fetches
        self.real = [f for f in fetches if f is not None]

    def run(self, feed):
        values = iter(self.sess.run(self.real, feed))
        return [None if f is None else next(values) for f in self.fetches]


def _has_float32(program: Program) -> bool:
    return any(inp.array.dtype == np.float32 for inp in program.inputs)


def compare(ref: list, got: list, what: str, values: int = 0,
            float32: bool = False) -> str | None:
    """None when `got` matches `ref` (NaN where NaN, inf where inf, floats to a tolerance; the
    first `values` results, computed by the same ops, must also agree on the sign of zeros).
    `float32`: the program has float32 inputs, so its float64 results may carry float32
    rounding (a float32 sum's order follows the fed layout: seed 2026, program 2526, a float32
    norm an ulp apart, promoted) and are held to float32's tolerance."""
    if len(ref) != len(got):
        return f"{what}: {len(got)} results, expected {len(ref)}"
    for k, (r, o) in enumerate(zip(ref, got)):
        if r is None or o is None:
            if (r is None) != (o is None) and np.any(np.asarray(r if o is None else o)):
                return f"{what}: result {k} is None on one side only"
            continue
        o = np.asarray(o)
        if r.shape != o.shape or r.dtype != o.dtype:
            return f"{what}: result {k} is {o.dtype}{list(o.shape)}, expected {r.dtype}" \
                   f"{list(r.shape)}"
        if r.dtype.kind != "f":
            if not np.array_equal(r, o):
                return f"{what}: result {k} differs: {o.ravel()[:6]} vs {r.ravel()[:6]}"
            continue
        rtol = 2e-4 if r.dtype == np.float32 or float32 else 1e-9
        finite = np.abs(r[np.isfinite(r)])
        # a result that cancels to about 0 (x/x - x/x) carries the rounding of its O(1) terms,
        # so the absolute tolerance never falls below a few dozen ulps of 1
        atol = max(rtol * (float(finite.max()) if finite.size else 1.0),
                   64 * float(np.finfo(r.dtype).eps))
        if not np.allclose(o, r, rtol=rtol, atol=atol, equal_nan=True):
            bad = ~np.isclose(o, r, rtol=rtol, atol=atol, equal_nan=True)
            return (f"{what}: result {k} differs at {int(bad.sum())} of {r.size} places: got "
                    f"{o[bad][:4]}, expected {r[bad][:4]}")
        zeros = r == 0
        if k < values and not np.array_equal(np.signbit(r[zeros]), np.signbit(o[zeros])):
            return f"{what}: result {k} has zeros of the wrong sign: {o[zeros][:6]} vs " \
                   f"{r[zeros][:6]}"
    return None


def _session_mode(program, g, phs, fetches, level, ref) -> str | None:
    sess = _Fetcher(dj.Session(g, optimize=level), fetches)
    layouts = [inp.layout for inp in program.inputs]

    def feed(layout_of):
        return {p: inp.fresh(layout_of(k)) for k, (p, inp) in enumerate(zip(phs, program.inputs))}

    first_feed = feed(lambda k: layouts[k])
    first = sess.run(first_feed)
    kept = [None if v is None else np.array(v, copy=True) for v in first]
    problem = compare(ref, kept, "first run", len(program.outputs), _has_float32(program))
    if problem:
        return problem
    second_feed = feed(lambda k: "C")
    second = sess.run(second_feed)
    problem = compare(ref, second, "second run (C-order inputs)", len(program.outputs),
                      _has_float32(program))
    if problem:
        return problem
    problem = compare(kept, first, "first run's results after a second run (aliased buffers?)",
                      float32=_has_float32(program))
    if problem:
        return problem
    for v in list(second) + list(second_feed.values()) + list(first_feed.values()):
        if isinstance(v, np.ndarray) and v.size and v.flags.writeable:
            v.fill(7)  # a program must not keep or reuse what it returned or was fed
    third = sess.run(feed(lambda k: "F"))
    return compare(ref, third, "third run (after mutating returned and fed arrays)",
                   len(program.outputs), _has_float32(program))


def _fused_mode(program, g, phs, fetches, ref) -> str | None:
    """O2 with fusion and threaded splitting forced on small shapes (they compile on first run)."""
    with dj.compiler.options(fusion_min_size=1, parallel_min_size=4):
        return _session_mode(program, g, phs, fetches, 2, ref)


def _jit_mode(program, ref) -> str | None:
    float_idx = _float_inputs(program)
    fn = dj.jit(_forward_and_grads(program.function(), float_idx,
                                   lambda loss, xs: dj.grad(loss, xs, allow_unused=True)))
    problem = None
    for call, layout in enumerate((None, "C")):
        tensors = [dj.from_numpy(inp.fresh(layout)) for inp in program.inputs]
        for i in float_idx:
            tensors[i].requires_grad_(True)
        outs, grads = fn(*tensors)
        got = [o.numpy() for o in outs] + [None if gr is None else gr.numpy() for gr in grads]
        problem = compare(ref, [None if v is None else v.copy() for v in got], f"jit call {call}",
                          len(program.outputs), _has_float32(program))
        if problem:
            return problem
        for v in got:
            if v is not None and v.size and v.flags.writeable:
                v.fill(7)
    return problem


def _other_inputs(program: Program, arrays: list) -> list:
    """A second set of inputs and its eager results, for threads to run alongside the first:
    the negated inputs, or (where negating changes a data-dependent shape so that the program
    is no longer valid, e.g. two boolean masks that no longer match) the doubled ones, which
    keep every sign; none if neither runs."""
    for alt in ([-a for a in arrays], [a * 2 for a in arrays]):
        try:
            return [(alt, eager_reference(program, alt))]
        except dj.errors.DongjingError:
            continue
    return []


def _threads_mode(program, g, phs, fetches, refs) -> str | None:
    sess = _Fetcher(dj.Session(g, optimize=2), fetches)
    problems: list = []

    def worker(t):
        for k in range(3):
            which = (t + k) % len(refs)
            arrays, ref = refs[which]
            try:
                got = sess.run({p: a.copy() for p, a in zip(phs, arrays)})
            except Exception as exc:  # noqa: BLE001 - reported as a failure
                problems.append(f"thread {t}: {type(exc).__name__}: {exc}")
                return
            problem = compare(ref, got, f"thread {t} run {k}", float32=_has_float32(program))
            if problem:
                problems.append(problem)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return problems[0] if problems else None


def check_program(program: Program, modes=MODES) -> list[Failure]:
    """Every mismatch or crash of `program` in `modes` compared with eager execution."""
    arrays = [inp.array for inp in program.inputs]
    try:
        ref = eager_reference(program, arrays)
    except Exception as exc:  # noqa: BLE001
        return [Failure("eager", f"eager gradients raised {type(exc).__name__}: {exc}")]
    failures = []
    with np.errstate(all="ignore"):
        graph = None
        for mode in modes:
            try:
                if mode in ("O0", "O1", "O2", "O2_fused", "threads") and graph is None:
                    graph = _graph(program)
                if mode in ("O0", "O1", "O2"):
                    problem = _session_mode(program, *graph, int(mode[1]), ref)
                elif mode == "O2_fused":  # every group fuses, every large call splits
                    problem = _fused_mode(program, *graph, ref)
                elif mode == "jit":
                    problem = _jit_mode(program, ref)
                elif mode == "short_paths":
                    problem = _short_paths_mode(program, arrays, ref)
                elif mode == "torch":
                    problem = _torch_mode(program, arrays, ref)
                elif mode == "threads":
                    problem = _threads_mode(program, *graph, [(arrays, ref)] +
                                            _other_inputs(program, arrays))
                else:  # unknown_dims, unknown_all: one graph, run at O0 and at O2
                    unknown = _graph(program, "all" if mode == "unknown_all" else "leading")
                    problem = (_session_mode(program, *unknown, 0, ref)
                               or _session_mode(program, *unknown, 2, ref))
            except Exception as exc:  # noqa: BLE001 - a crash is a finding
                problem = f"raised {type(exc).__name__}: {str(exc)[:300]}"
            if problem:
                failures.append(Failure(mode, problem))
    return failures
