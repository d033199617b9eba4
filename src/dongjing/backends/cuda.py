"""`dj.backends.cuda` (PyTorch's `torch.backends.cuda`): whether dongjing can run on CUDA
(the CuPy backend) and the precision flags PyTorch programs set. dongjing's GPU products
compute in the tensors' own precision (no TF32), so `matmul.allow_tf32` stays False; setting it
changes nothing."""

from __future__ import annotations

import importlib.util


class _MatmulFlags:
    """`torch.backends.cuda.matmul`'s flags, with PyTorch's defaults."""

    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether this installation can run on CUDA: CuPy imports (`pip install
    'dongjing[gpu]'`), whether or not a GPU is present."""
    return importlib.util.find_spec("cupy") is not None
