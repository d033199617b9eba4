"""Session.run's prepared runners: a cached run still checks every feed value, follows the fetches
it is given (not the ones it saw first), and is rebuilt when the graph changes."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import dongjing as dj
from dongjing.runtime.fetch_structure import identified, run_key, structure_key

LEVELS = pytest.mark.parametrize("level", [0, 2], ids=["interpreted", "compiled"])
XV = np.ones((2, 3), np.float32)


@pytest.fixture
def small():
    g = dj.Graph()
    with g.as_default():
        x = dj.placeholder((None, 3), name="x")
        k = dj.placeholder((), dj.int64, name="k")
        w = dj.Variable(np.arange(3, dtype=np.float32), name="w")
        y = x * w
        s = dj.sum(y)
    return g, x, k, w, y, s


@LEVELS
def test_a_new_list_of_the_same_fetches_reuses_the_runner(small, level):
    g, x, k, w, y, s = small
    sess = dj.Session(g, optimize=level)
    first = sess.run([s, y], {x: XV})
    second = sess.run([s, y], {x: XV * 2})
    assert len(sess._runs) == 1 and len(sess._programs) == 1
    assert first[0] == 6.0 and second[0] == 12.0 and isinstance(second, list)
    assert second[1] is not first[1]


@LEVELS
@pytest.mark.parametrize("value,pattern", [
    (np.ones((2, 4), np.float32), r"'x': expected shape \(None, 3\) float32, got shape \(2, 4\)"),
    (np.ones(3, np.float32), r"'x': expected shape \(None, 3\) float32, got shape \(3,\)"),
    ([["a", "b", "c"]], r"'x': expected .* got shape \(1, 3\) <U1 \(strings\)"),
], ids=["wrong_dim", "wrong_rank", "strings"])
def test_a_cached_run_still_checks_each_value_before_running(small, level, value, pattern):
    g, x, k, w, y, s = small
    with g.as_default():
        step = dj.assign(w, w + 1.0)
    sess = dj.Session(g, optimize=level)
    sess.run([s, step], {x: XV})
    with pytest.raises(dj.FeedError, match=pattern):
        sess.run([s, step], {x: value})
    np.testing.assert_array_equal(w.numpy(), [1, 2, 3])  # only the first run committed


@LEVELS
def test_a_cached_run_converts_values_of_the_same_kind(small, level):
    g, x, k, w, y, s = small
    sess = dj.Session(g, optimize=level)
    assert sess.run(s, {x: XV}) == 6.0
    assert sess.run(s, {x: [[1, 1, 1]]}) == 3.0
    assert sess.run(s, {x: np.ones((4, 3), np.float64)}) == 12.0
    swapped = np.ones((2, 3), np.dtype(">f4"))  # float32 in the other byte order
    assert sess.run(s, {x: swapped}) == 6.0
    assert sess.run(s, {x: dj.tensor(XV)}) == 6.0  # an eager tensor feeds its data
    assert len(sess._runs) == 1


def test_feeds_the_fetches_do_not_need_are_checked_on_every_run(small):
    g, x, k, w, y, s = small
    sess = dj.Session(g)
    assert sess.run(s, {x: XV, k: 3}) == 6.0
    with pytest.raises(dj.FeedError, match=r"'k': expected shape \(\) int64, got shape \(2,\)"):
        sess.run(s, {x: XV, k: np.ones(2, np.int64)})


def test_feed_keys_by_name_and_by_tensor_and_the_last_of_two_for_one_node_wins(small):
    g, x, k, w, y, s = small
    sess = dj.Session(g)
    assert sess.run(s, {"x": XV}) == 6.0
    assert sess.run(s, {"x:0": XV * 3}) == 18.0
    name = "".join(["x", ":0"])  # an equal string, another object: the same runner
    assert sess.run(s, {name: XV}) == 6.0 and len(sess._runs) == 2
    assert sess.run(s, {x: XV, "x": XV * 2}) == 12.0
    assert sess.run(s, {"x": XV * 2, x: XV}) == 6.0


def test_a_changed_list_of_fetches_runs_what_it_holds_now(small):
    g, x, k, w, y, s = small
    sess = dj.Session(g)
    fetches = [s]
    assert sess.run(fetches, {x: XV}) == [6.0]
    fetches[0] = y
    np.testing.assert_array_equal(sess.run(fetches, {x: XV})[0], [[0, 1, 2]] * 2)
    fetches.append([s, "sum_0:0"])
    out = sess.run(fetches, {x: XV})
    assert out[1] == [6.0, 6.0]


@LEVELS
def test_structures_variables_and_effects_on_cached_runs(small, level):
    g, x, k, w, y, s = small
    with g.as_default():
        step = dj.assign(w, w * 2.0)
    sess = dj.Session(g, optimize=level)
    Pair = namedtuple("Pair", "a b")
    fetches = {"s": s, 3: (w, step), "pair": Pair(s, [y])}
    for expect_w in ([0, 1, 2], [0, 2, 4]):
        out = sess.run(fetches, {x: XV})
        assert list(out) == ["s", 3, "pair"] and out[3][1] is None
        np.testing.assert_array_equal(out[3][0], expect_w)
        assert isinstance(out["pair"], Pair) and isinstance(out["pair"].b, list)
    assert sess.run(w).tolist() == [0, 4, 8] and sess.run((w,))[0].tolist() == [0, 4, 8]
    assert sess.run(step) is None and sess.run({"w": w})["w"].tolist() == [0, 8, 16]


def test_a_graph_changed_after_a_run_is_prepared_again(small):
    g, x, k, w, y, s = small
    sess = dj.Session(g, optimize=2)
    fetches = [s]
    assert sess.run(fetches, {x: XV}) == [6.0]
    with g.as_default():
        s += 1.0  # symbolic in place: the handle now names a new node
    assert sess.run([s], {x: XV}) == [7.0] and len(sess._programs) == 2
    with g.as_default():
        z = dj.placeholder((), name="z")
    with pytest.raises(dj.FeedError, match="not given"):
        sess.run([s, z], {x: XV})


def test_structure_keys_tell_nests_and_leaves_apart(small):
    g, x, k, w, y, s = small
    keys = [structure_key(f) for f in ([s, y], (s, y), [s, [y]], {"a": s}, {"a": y}, [y, s], s,
                                       "sum_0", ["sum_0"])]
    assert len(set(keys)) == len(keys)
    assert structure_key([s, "sum_0"]) == structure_key([s, "".join(["sum", "_0"])])
    assert run_key(s, {x: 1, "k": 2}) == (id(s), id(x), "k") and run_key(s, None) == (id(s),)
    assert identified({w: [s, "n"], "a": (y,)}, []) == [w, s, y]
