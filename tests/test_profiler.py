"""dj.profiler: event counts, nesting, the Chrome trace, compiled-program events, self times,
recording limits and the zero cost when off."""

import json
import threading
import time

import numpy as np
import pytest

import dongjing as dj
from dongjing import nn
from dongjing.core import profiler_hooks as hooks
from dongjing.ops.registry import OPS

HERE = "test_profiler.py:"


def _mlp():
    dj.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 4))
    opt = dj.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = dj.randn(5, 8)
    y = dj.tensor(np.array([0, 1, 2, 3, 0]))
    return model, opt, x, y


def _train_step(model, opt, x, y):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def _in_backward(event):
    return any(a.kind == "backward" for a in event.ancestors())


def test_mlp_step_counts_each_op_and_backward_node_once():
    model, opt, x, y = _mlp()
    _train_step(model, opt, x, y)
    with dj.profiler.profile() as prof:
        _train_step(model, opt, x, y)
    events = prof.events()
    forward_matmuls = [e for e in events if e.name == "matmul" and not _in_backward(e)]
    assert len(forward_matmuls) == 3
    grad_name = OPS["matmul"].grad_name
    assert len([e for e in events if e.name == grad_name]) == 3
    assert len([e for e in events if e.name == "AccumulateGrad"]) == 6
    steps = [e for e in events if e.kind == "optimizer"]
    assert [e.name for e in steps] == ["Optimizer.step#SGD.step"]
    # the vjp's ops run inside their backward node; the update's ops inside the step
    backward_matmuls = [e for e in events if e.name == "matmul" and _in_backward(e)]
    assert backward_matmuls and all(e.parent.name == grad_name for e in backward_matmuls)
    assert any(e.parent is steps[0] for e in events if e.kind == "op")
    table = prof.key_averages()
    row = next(r for r in table if r.name == "matmul")
    assert row.count == len(forward_matmuls) + len(backward_matmuls)
    text = table.table(sort_by="count", row_limit=5)
    assert "matmul" in text and len(text.splitlines()) == 5 + 5


def test_record_function_ranges_nest():
    @dj.profiler.record_function("decorated")
    def inner(t):
        return t * 2

    @dj.profiler.record_function
    def bare(t):
        return t + 1

    with dj.profiler.profile() as prof:
        with dj.profiler.record_function("outer"):
            with dj.profiler.record_function("middle"):
                inner(dj.ones(3))
            bare(dj.ones(3))
    by_name = {e.name: e for e in prof.events()}
    assert by_name["outer"].parent is None
    assert by_name["middle"].parent is by_name["outer"]
    assert by_name["decorated"].parent is by_name["middle"]
    assert by_name["mul"].parent is by_name["decorated"]
    assert by_name["add"].parent.name.endswith("bare")
    assert by_name["add"].parent.parent is by_name["outer"]


def test_chrome_trace_is_valid_and_properly_nested(tmp_path):
    model, opt, x, y = _mlp()
    step = dj.jit(_train_step)
    step(model, opt, x, y)
    with dj.profiler.profile(record_shapes=True) as prof:
        with dj.profiler.record_function("eager step"):
            _train_step(model, opt, x, y)
        step(model, opt, x, y)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    complete = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(prof.events())
    for e in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= e.keys()
        assert e["dur"] >= 0 and e["ts"] >= 0
    by_thread: dict = {}
    for e in complete:
        by_thread.setdefault(e["tid"], []).append(e)
    for events in by_thread.values():
        starts = [e["ts"] for e in events]
        assert starts == sorted(starts)
        open_ends: list = []
        for e in events:  # each event inside the enclosing one, or after it has ended
            while open_ends and e["ts"] >= open_ends[-1] - 1e-3:  # µs with ns resolution
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends:
                assert end <= open_ends[-1] + 1e-3, (e, open_ends)
            open_ends.append(end)


def test_compiled_events_carry_source_lines_and_run_the_same_values():
    g = dj.Graph()
    with g.as_default():
        a = dj.placeholder((None, 3), dj.float32, name="a")
        b = dj.Variable(np.ones(3, np.float32), name="b")
        out = (dj.tanh(a * b) + 1).sum()
        update = dj.assign(b, b * 0.5)
    feed = {a: np.arange(6, dtype=np.float32).reshape(2, 3)}
    for level in (0, 2):
        b.data[...] = 1.0
        sess = dj.Session(g, optimize=level)
        expected = sess.run(out, feed)
        with dj.profiler.profile() as prof:
            value, _ = sess.run([out, update], feed)
        assert np.array_equal(value, expected)
        assert np.array_equal(b.data, np.full(3, 0.5, np.float32))  # the assign committed
        nodes = [e for e in prof.events() if e.kind == "node"]
        assert {"mul", "tanh", "add", "sum"} <= {e.name for e in nodes}
        assert all(e.source.startswith(HERE) for e in nodes if e.name != "assign")
        program = [e for e in prof.events() if e.kind == "program"]
        assert len(program) == 1 and all(e.parent is program[0] for e in nodes)


def test_fused_kernel_events_list_their_members(compiler_options, monkeypatch):
    pytest.importorskip("numba")

    compiler_options(kernel_formulas="always")  # not this machine's measurement

    @dj.jit
    def gelu(x):
        return 0.5 * x * (1 + dj.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))

    x = dj.randn(1 << 17)
    expected = gelu(x).numpy()
    with dj.profiler.profile() as prof:
        got = gelu(x).numpy()
    assert np.array_equal(got, expected)
    kernels = [e for e in prof.events() if e.kind == "kernel"]
    assert kernels
    for k in kernels:
        members = k.args["members"]
        assert len(members) >= 2
        assert all(m["source"].startswith(HERE) and m["node"].startswith("%") for m in members)
    # float32 tanh is computed inside the kernel (its vectorizable formulation): no node left
    assert [e.name for e in prof.events() if e.kind == "node"] == []
    assert "tanh" in [m["op"] for k in kernels for m in k.args["members"]]


def test_self_times_sum_to_at_most_the_wall_time():
    model, opt, x, y = _mlp()
    with dj.profiler.profile() as prof:
        for _ in range(2):
            _train_step(model, opt, x, y)
    events = prof.events()
    assert sum(e.self_us for e in events) <= prof.wall_us
    assert all(0 <= e.self_us <= e.duration_us for e in events)
    s = prof.summary()
    assert s.compute_us > 0
    assert s.compute_us + s.overhead_us + s.idle_us == pytest.approx(s.wall_us)
    assert "op compute" in str(s)


def test_nothing_is_recorded_after_the_block_ends():
    x = dj.ones(3, requires_grad=True)
    with dj.profiler.profile() as prof:
        (x * 2).sum().backward()
    count = len(prof.events())
    assert not hooks.on and hooks.listeners == ()
    (x * 3).sum().backward()
    with dj.profiler.record_function("late"):
        x + 1
    assert len(prof.events()) == count and prof.buffer == []
    assert all(e.end_ns <= prof.stop_ns for e in prof.events())


class _ClockCounter:
    NAMES = ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns",
             "thread_time", "thread_time_ns", "process_time", "process_time_ns")

    def __init__(self, monkeypatch):
        self.calls = 0
        for name in self.NAMES:
            original = getattr(time, name)
            monkeypatch.setattr(time, name, self._counting(original))

    def _counting(self, original):
        def clock():
            self.calls += 1
            return original()

        return clock


def _everything(model, opt, x, y, step, sess, fetch, feed, interp):
    _train_step(model, opt, x, y)
    step(model, opt, x, y)
    sess.run(fetch, feed)
    interp.run(fetch, feed)
    with dj.profiler.record_function("range"):
        x * 2


def test_profiler_off_reads_no_clock(monkeypatch):
    model, opt, x, y = _mlp()
    step = dj.jit(_train_step)
    g = dj.Graph()
    with g.as_default():
        a = dj.placeholder((2, 3), dj.float32)
        fetch = (a * 2 + 1).sum()
    sess, interp = dj.Session(g), dj.Session(g, optimize=0)
    feed = {a: np.ones((2, 3), np.float32)}
    args = (model, opt, x, y, step, sess, fetch, feed, interp)
    _everything(*args)  # traces and compiles (which reads the clock) before counting
    counter = _ClockCounter(monkeypatch)
    _everything(*args)
    assert counter.calls == 0
    with dj.profiler.profile():
        _everything(*args)
    assert counter.calls > 0  # the counter does see the profiler's clock


def test_other_threads_only_with_all_threads():
    def work():
        (dj.ones(4) * 3).sum()

    for all_threads in (False, True):
        with dj.profiler.profile(all_threads=all_threads) as prof:
            worker = threading.Thread(target=work)
            worker.start()
            worker.join()
            dj.ones(2) + 1
        threads = {e.thread for e in prof.events()}
        assert threading.get_ident() in threads
        assert len(threads) == (2 if all_threads else 1)
        names = [e.name for e in prof.events() if e.thread != threading.get_ident()]
        assert names == (["mul", "sum"] if all_threads else [])


def test_shapes_memory_and_stack():
    with dj.profiler.profile(record_shapes=True, profile_memory=True, with_stack=True) as prof:
        y = dj.ones(256, 1024) * 2  # a fresh 1 MiB array
    event = next(e for e in prof.events() if e.name == "mul")
    assert event.args["input_shapes"][0] == [256, 1024]
    assert event.args["input_dtypes"][0] == "float32"
    assert event.source.startswith(HERE)
    assert event.args["memory"] >= y.numpy().nbytes
    assert prof.peak_memory >= y.numpy().nbytes
    table = prof.key_averages(group_by_input_shape=True).table()
    assert "[[256, 1024], []]" in table and "Mem" in table


def test_compare_maps_both_modes_to_source_lines():
    model, opt, x, y = _mlp()
    cmp = dj.profiler.compare(_train_step, model, opt, x, y)
    text = str(cmp)
    assert "matmul" in text and "framework overhead" in text
    lines = [ln for ln in cmp.by_line().splitlines() if ln.startswith(HERE)]
    assert lines  # at least one user line with ops on both sides
    assert any(e.kind == "program" for e in cmp.compiled.events())
    assert not any(e.kind == "program" for e in cmp.eager.events())


def test_misuse_raises_clear_errors():
    prof = dj.profiler.profile()
    with pytest.raises(dj.profiler.ProfilerError, match="after the `with` block"):
        prof.key_averages()
    with pytest.raises(dj.profiler.ProfilerError, match="start"):
        prof.stop()
    with prof:
        dj.ones(2) + 1
    with pytest.raises(dj.profiler.ProfilerError, match="already started"):
        prof.start()
    with pytest.raises(dj.profiler.ProfilerError, match="record_shapes"):
        prof.key_averages(group_by_input_shape=True)
    with pytest.raises(dj.DongjingError, match="sort_by"):
        prof.key_averages().table(sort_by="speed")

