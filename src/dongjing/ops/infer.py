"""The shape/dtype inference helpers' old import path; they live in `dongjing.core.infer`."""

from ..core.infer import *  # noqa: F403
from ..core.infer import broadcast, fmt, normalize_dim  # noqa: F401
