"""Uncaught dongjing errors print from the user's line: dongjing's own frames are left out
(and counted), unless filtering is off; other errors print as Python prints them."""

import os
import subprocess
import sys
import textwrap

import pytest

import dongjing as dj
from dongjing.utils import tracebacks

SCRIPT = textwrap.dedent("""
    import dongjing as dj

    def model(a, b):
        return a @ b

    model(dj.ones(2, 3), dj.ones(4, 5))
""")


def run(tmp_path, source, **env):
    path = tmp_path / "user_script.py"
    path.write_text(source)
    environ = {**os.environ, **env}
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          timeout=120, env=environ)
    assert done.returncode == 1
    return done.stderr


def test_a_shape_error_shows_only_the_users_frames(tmp_path):
    err = run(tmp_path, SCRIPT)
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    files = [line for line in lines if line.lstrip().startswith("File ")]
    assert len(files) == 2 and all("user_script.py" in f for f in files)
    assert "return a @ b" in err and "dongjing/" not in err.replace("dongjing.errors", "")
    assert lines[-2].startswith("dongjing.errors.ShapeError: matmul: shapes (2, 3) and (4, 5)")
    assert lines[-1].startswith("(dongjing left out ") and "frames of its own" in lines[-1]


def test_filtering_off_shows_every_frame(tmp_path):
    err = run(tmp_path, SCRIPT, DONGJING_TRACEBACK_FILTERING="off")
    assert "dispatch" in err and "left out" not in err
    err = run(tmp_path, "import dongjing as dj\ndj.set_traceback_filtering('off')\n" + SCRIPT)
    assert "dispatch" in err and "left out" not in err


def test_other_errors_print_as_python_prints_them(tmp_path):
    err = run(tmp_path, "import dongjing as dj\n\ndef f():\n    raise KeyError('x')\n\nf()\n")
    assert "KeyError: 'x'" in err and "left out" not in err


def test_a_chain_keeps_the_users_frames_of_each_error(tmp_path):
    source = SCRIPT.replace("model(dj.ones(2, 3), dj.ones(4, 5))", textwrap.dedent("""
        try:
            model(dj.ones(2, 3), dj.ones(4, 5))
        except dj.ShapeError as exc:
            raise RuntimeError("while building the model") from exc
    """))
    err = run(tmp_path, source)
    assert "ShapeError" in err and "RuntimeError: while building the model" in err
    assert "return a @ b" in err and "/dongjing/ops/" not in err


def test_format_filtered_and_the_setting():
    dj.ones(2, 3) @ dj.ones(3, 5)  # a first product caches matmul's float32 rule (a fast path)
    for _ in range(2):
        try:
            dj.ones(2, 3) @ dj.ones(4, 5)
        except dj.ShapeError as exc:
            text = tracebacks.format_filtered(exc)
        assert "test_tracebacks.py" in text and "/dongjing/" not in text
        assert "During handling" not in text and "gufunc" not in text
    assert dj.traceback_filtering() == "on"
    with pytest.raises(ValueError, match="'on' or 'off'"):
        dj.set_traceback_filtering("sometimes")


def test_an_internal_exception_behind_a_dongjing_error_is_not_shown():
    try:
        try:
            raise ValueError("the user's own words")
        except ValueError:
            raise dj.ShapeError("raised while the user handled an error")  # noqa: B904
    except dj.ShapeError as exc:
        # the ValueError came from the user's frames, so it stays visible
        assert "the user's own words" in tracebacks.format_filtered(exc)
    error = dj.ShapeError("raised inside dongjing")
    error.__context__ = ValueError("internal")
    error.__context__.__traceback__ = _internal_traceback()
    text = tracebacks.format_filtered(error)
    assert "internal" not in text.replace("raised inside dongjing", "")


def _internal_traceback():
    """A traceback whose only frame runs in a dongjing module."""
    from dongjing import errors

    code = compile("raise ValueError('internal')", errors.__file__, "exec")
    try:
        exec(code, {})
    except ValueError as exc:
        tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb
