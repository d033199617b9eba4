"""The shape/dtype inference helpers' old import path; they live in `dongjing.infer`."""

from ..infer import *  # noqa: F403
from ..infer import broadcast, fmt, normalize_dim  # noqa: F401
