"""`dj.backends.cudnn` (PyTorch's `torch.backends.cudnn`): dongjing's GPU kernels come from
CuPy and its own code, never cuDNN, so `is_available()` is False. The flags PyTorch programs set
(`benchmark`, `deterministic`, `enabled`, `allow_tf32`) are kept with PyTorch's defaults and
change nothing: dongjing's kernels are deterministic and never pick algorithms by timing."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN serves convolutions: never in dongjing."""
    return False


def version() -> None:
    """cuDNN's version: None, as PyTorch answers without cuDNN."""
    return None
