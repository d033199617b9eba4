"""The error for TF1 features dongjing.compat.v1 does not provide: it names the feature."""

from __future__ import annotations

from typing import NoReturn

from ...errors import DongjingError


class NotProvidedError(DongjingError, NotImplementedError):
    """A TensorFlow 1.x feature that dongjing.compat.v1 does not provide."""


def not_provided(feature: str, where: str = "dongjing.compat.v1") -> NoReturn:
    """Raise NotProvidedError naming `feature`."""
    raise NotProvidedError(f"{feature} is not provided by {where} (see "
                           "docs/coming-from-tensorflow.md for what maps)")


def module_getattr(module: str):
    """A module `__getattr__` raising NotProvidedError for any name it does not define."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        not_provided(f"{module}.{name}", "dongjing.compat.v1")

    return __getattr__
