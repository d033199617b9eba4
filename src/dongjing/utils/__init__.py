"""`dj.utils`: PyTorch's import paths (`dj.utils.data`)."""

from . import data
