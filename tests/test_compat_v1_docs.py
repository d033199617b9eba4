"""The Python blocks of docs/coming-from-tensorflow.md run and print what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import dongjing.compat.v1 as tf

PAGE = Path(__file__).parent.parent / "docs" / "coming-from-tensorflow.md"


def test_page_code_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) == 4
    out = io.StringIO()
    tf.reset_default_graph()
    try:
        with contextlib.redirect_stdout(out):
            for block in blocks:
                exec(compile(block, str(PAGE), "exec"), {})
    finally:
        tf.reset_default_graph()
    assert out.getvalue().split() == ["[-0.9999969]", "[0.9999908]", "5.6999738e-11",
                                      "20", "8", "0.0"]


def test_every_not_provided_name_on_the_page_raises():
    text = PAGE.read_text().split("## What does not map")[1]
    for name in ("estimator", "keras", "app", "flags"):
        assert f"tf.{name}" in text
        try:
            getattr(tf, name)()
        except tf.NotProvidedError as exc:
            assert f"tf.{name}" in str(exc)
        else:
            raise AssertionError(f"tf.{name} did not raise NotProvidedError")
    for feature in ("tf.summary.image", "tf.train.MonitoredTrainingSession"):
        assert feature in text
    try:
        tf.summary.image("x", tf.zeros([1, 2, 2, 1]))
    except tf.NotProvidedError as exc:
        assert "tf.summary.image" in str(exc)
    else:
        raise AssertionError("tf.summary.image did not raise NotProvidedError")
