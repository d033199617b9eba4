"""The systems of the GPU benchmark: the CPU benchmark's runners with their arrays on one CUDA
GPU, each step returning only when the device has finished it. On the target "cpu-as-gpu"
the same systems are built from their CPU stand-ins (NumPy in place of CuPy), so that the
harness itself runs, and is tested, on a machine without a GPU."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.systems import dj_eager, dj_jit, dj_static, jax_jit, numpy_hand, torch_eager
from bench.systems.base import Probe, Unavailable
from bench.systems.dj_common import import_dj

# in the order they run (and are shown): dongjing's first, dj-jit (optional) last
NAMES = ("dj-eager", "dj-static", "torch", "jax-jit", "cupy", "dj-jit")
STATIC_LEVEL = 2


@dataclass(frozen=True)
class Target:
    """Where the systems run: "cuda" (one GPU), or "cpu-as-gpu" (the CPU stand-ins)."""

    name: str

    @property
    def gpu(self) -> bool:
        return self.name == "cuda"

    @property
    def device(self) -> str:
        """The device string of dongjing and PyTorch."""
        return "cuda" if self.gpu else "cpu"


def no_sync() -> None:
    """The CPU's steps are finished when they return."""


class Synced:
    """A runner whose ``step`` and ``probe`` return when the device work they queued is done;
    ``placement`` says where its arrays live (read after a probe)."""

    def __init__(self, runner: Any, sync: Callable[[], None], note: str,
                 placement: Callable[[], str]) -> None:
        self.runner, self.sync, self.placement = runner, sync, placement
        self.note = "; ".join(n for n in (getattr(runner, "note", ""), note) if n)

    def step(self) -> None:
        self.runner.step()
        self.sync()

    def probe(self) -> Probe:
        probe = self.runner.probe()
        self.sync()
        return probe


def first_array(runner: Any) -> Any:
    """An array the runner computes with: its first parameter, else its input."""
    for attr in ("params", "args", "x", "x2"):
        value = getattr(runner, attr, None)
        if isinstance(value, (list, tuple)) and value:
            return value[0]
        if value is not None:
            return value
    return None


def where(array: Any) -> str:
    """The device of an array of any library, as text ("cuda:0", "cpu", "<CUDA Device 0>")."""
    device = getattr(array, "device", None)
    if callable(device):  # an older JAX: .devices() only
        device = None
    if device is None and hasattr(array, "devices"):
        device = next(iter(array.devices()), None)
    return str(device) if device is not None else type(array).__module__.split(".")[0]


def on_gpu(placement: str) -> bool:
    text = placement.lower()
    return "cuda" in text or "gpu" in text


# --- dongjing ----------------------------------------------------------------------------------

def _dj(target: Target) -> tuple[Any, Callable[[], None]]:
    """dongjing, and the synchronisation of its device."""
    dj = import_dj()
    if not target.gpu:
        return dj, no_sync
    cuda = getattr(dj, "cuda", None)
    if cuda is None or not cuda.is_available():
        reason = "dj.cuda is missing"
        if cuda is not None:
            from dongjing.backends.cupy import unavailable_reason

            reason = f"dj.cuda.is_available() is False: {unavailable_reason()}"
        raise Unavailable(reason)
    return dj, cuda.synchronize


def build_dj_eager(target: Target, kind: str, data: Any) -> Synced:
    dj, sync = _dj(target)
    runner = dj_eager.build(kind, data, device=target.device)
    return Synced(runner, sync, "", lambda: where(first_array(runner)))


def build_dj_jit(target: Target, kind: str, data: Any) -> Synced:
    dj, sync = _dj(target)
    if not hasattr(dj, "jit"):
        raise Unavailable("dj.jit is not there")
    runner = dj_jit.build(kind, data, device=target.device)
    return Synced(runner, sync, "", lambda: where(first_array(runner)))


def build_dj_static(target: Target, kind: str, data: Any) -> Synced:
    dj, sync = _dj(target)
    runner = dj_static.build(kind, data, STATIC_LEVEL, device=target.device)

    # placed where the Session returned the loss of the last probe (computed there)
    return Synced(runner, sync, f"optimize={STATIC_LEVEL}", lambda: where(runner.fetched_loss))


# --- PyTorch, JAX, CuPy ------------------------------------------------------------------------

def build_torch(target: Target, kind: str, data: Any) -> Synced:
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"torch not importable ({e})") from e
    sync, note = no_sync, ""
    if target.gpu:
        if not torch.cuda.is_available():
            raise Unavailable(f"torch {torch.__version__}: torch.cuda.is_available() is False")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        sync, note = torch.cuda.synchronize, "TF32 off"
    runner = torch_eager.build(kind, data, device=target.device)
    return Synced(runner, sync, note, lambda: where(first_array(runner)))


def build_jax(target: Target, kind: str, data: Any) -> Synced:
    if "jax" not in sys.modules:  # share the GPU: no 75% preallocation
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
    except ImportError as e:
        raise Unavailable(f"jax not importable ({e})") from e
    jax.config.update("jax_default_matmul_precision", "highest")  # float32 GEMMs, not TF32
    platform = "gpu" if target.gpu else "cpu"
    try:
        device = jax.devices(platform)[0]
    except RuntimeError as e:
        raise Unavailable(f"jax {jax.__version__} has no {platform} device ({e})") from e
    runner = jax_jit.build(kind, data, device=device)
    runner.note = f"jax.jit on {device}, matmul precision highest"
    return Synced(runner, no_sync, "", lambda: where(first_array(runner)))  # steps block


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as e:
        raise Unavailable(f"CuPy not importable ({e})") from e
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError without a driver or device
        raise Unavailable(f"CuPy sees no GPU ({e})") from e
    if count < 1:
        raise Unavailable("CuPy sees no GPU")
    return cupy


def build_cupy(target: Target, kind: str, data: Any) -> Synced:
    """The hand-written NumPy step with ``xp = cupy`` (``xp = numpy`` on the CPU stand-in)."""
    if target.gpu:
        cupy = _cupy()
        xp, sync = cupy, cupy.cuda.Device().synchronize
    else:
        import numpy as xp

        sync = no_sync
    runner = numpy_hand.build(kind, data, xp=xp)
    return Synced(runner, sync, f"xp = {xp.__name__}", lambda: where(first_array(runner)))


BUILDERS: dict[str, Callable[[Target, str, Any], Synced]] = {
    "dj-eager": build_dj_eager,
    "dj-static": build_dj_static,
    "dj-jit": build_dj_jit,
    "torch": build_torch,
    "jax-jit": build_jax,
    "cupy": build_cupy,
}


def versions(name: str) -> dict[str, str]:
    """The versions of the libraries a system uses (those already imported)."""
    modules = {"dj-": ["dongjing", "cupy"], "torch": ["torch"], "jax": ["jax", "jaxlib"],
               "cupy": ["cupy", "numpy"]}
    out = {}
    for prefix, names in modules.items():
        if name.startswith(prefix):
            for module in names:
                if module in sys.modules:
                    out[module] = str(getattr(sys.modules[module], "__version__", "?"))
    return out


def gpu_name(target: Target) -> str:
    """The GPU's name as the libraries loaded here report it; "" when none can tell."""
    if not target.gpu:
        return ""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return str(torch.cuda.get_device_name(0))
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
            return name.decode() if isinstance(name, bytes) else str(name)
        except Exception:
            pass
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            return str(jax.devices("gpu")[0].device_kind)
        except Exception:
            pass
    return ""
