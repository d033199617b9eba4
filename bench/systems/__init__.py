"""The systems compared: hand-written NumPy, dongjing eager and static, PyTorch, JAX."""

from __future__ import annotations

from functools import partial

from bench.systems import (
    dj_eager,
    dj_jit,
    dj_static,
    gemm_floor,
    jax_jit,
    numpy_hand,
    torch_eager,
)
from bench.systems.base import Probe, Runner, System, Unavailable

REFERENCE = "numpy"


def all_systems() -> list[System]:
    """Every system, the reference first; unavailable ones skip themselves when built."""
    systems = [
        System(REFERENCE, numpy_hand.build),
        System("gemm-floor", gemm_floor.build, floor=True),
        System("dj-eager", dj_eager.build),
    ]
    systems += [
        System(f"dj-static-O{lvl}", partial(dj_static.build, level=lvl), compiled=True)
        for lvl in (0, 1, 2)
    ]
    systems.append(System("dj-jit", dj_jit.build, compiled=True))
    systems += [System("torch", torch_eager.build), System("jax-jit", jax_jit.build, True)]
    return systems


__all__ = ["Probe", "Runner", "System", "Unavailable", "all_systems", "REFERENCE"]
