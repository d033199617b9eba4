"""`dongjing.utils`: PyTorch's import paths (`dongjing.utils.data`) and activation
checkpointing (`dongjing.utils.checkpoint`)."""

from . import checkpoint, data
