"""`dj.io`: checkpoints (`dj.save` / `dj.load`) in the safetensors format."""

from .checkpoint import load, save
