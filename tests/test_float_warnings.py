"""dongjing's ops compute inf and NaN silently, as PyTorch does: NumPy's floating-point
warnings from dongjing's modules are filtered; the user's own NumPy warnings still show."""

import subprocess
import sys
import textwrap


def test_ops_are_silent_and_user_numpy_still_warns(tmp_path):
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import dongjing as dj

        print(dj.log(dj.zeros(2)).tolist(), (dj.zeros(1) / dj.zeros(1)).tolist())
        x = dj.zeros(3, requires_grad=True)
        dj.log(x).sum().backward()
        print(x.grad.tolist())
        np.log(np.zeros(1))
    """))
    # -W default: every warning shown once, as a user may ask on the command line
    done = subprocess.run([sys.executable, "-W", "default", str(script)], capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.splitlines()[0] == "[-inf, -inf] [nan]"
    assert done.stdout.splitlines()[1] == "[inf, inf, inf]"
    warned = [line for line in done.stderr.splitlines() if "RuntimeWarning" in line]
    assert len(warned) == 1 and "user.py" in warned[0], done.stderr


def test_compiled_programs_are_silent_too(tmp_path):
    script = tmp_path / "graph.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        import dongjing as dj

        with dj.Graph() as g:
            x = dj.placeholder((2,), name="x")
            y = dj.log(x) + 1.0 / x
        for level in (0, 1, 2):
            out = dj.Session(g, optimize=level).run(y, {x: np.zeros(2, np.float32)})
            print(level, np.isnan(out).all())  # log(0) + 1/0 = -inf + inf
    """))
    done = subprocess.run([sys.executable, "-W", "default", str(script)], capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.split() == ["0", "True", "1", "True", "2", "True"]
    assert "RuntimeWarning" not in done.stderr, done.stderr
