"""`dongjing.utils`: PyTorch's import paths (`dongjing.utils.data`)."""

from . import data
