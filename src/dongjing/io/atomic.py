"""Atomic file replacement for checkpoints: write a temporary beside the target, fsync, rename.
The temporary is removed on any failure, and temporaries left by crashed processes are swept."""

from __future__ import annotations

import os
import tempfile


def _umask() -> int:
    """The process's umask, read without changing it where /proc allows."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _sweep_stale(folder: str, prefix: str) -> None:
    """Remove `prefix<pid>.*.tmp` files whose writing process no longer exists."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            try:
                os.remove(os.path.join(folder, name))
            except OSError:
                pass


def write_atomically(path: str, chunks: list[bytes]) -> None:
    """Replace `path` by the concatenation of `chunks` so that readers see either the old or
    the new file, never a partial one. Keeps an existing file's mode; a new file gets the
    umask's default mode."""
    folder = os.path.dirname(os.path.abspath(path))
    prefix = f".{os.path.basename(path)}."
    _sweep_stale(folder, prefix)
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f"{prefix}{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
