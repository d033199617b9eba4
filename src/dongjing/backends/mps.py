"""`dj.backends.mps` (PyTorch's `torch.backends.mps`): Apple's Metal is not a dongjing backend,
so both answers are False."""


def is_available() -> bool:
    """Whether an Apple-silicon GPU can run tensors: never in dongjing."""
    return False


def is_built() -> bool:
    """Whether this build supports Metal: dongjing has no Metal backend."""
    return False
