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
