"""`tf.errors`: the TF error classes a TF1 program catches, as dongjing errors."""

from ...errors import DongjingError, FeedError, IndexOutOfRangeError
from .session_state import FailedPreconditionError
from .unsupported import module_getattr

OpError = DongjingError
OutOfRangeError = IndexOutOfRangeError
InvalidArgumentError = FeedError


class NotFoundError(DongjingError, LookupError):
    """Something named (a checkpoint, a key in it) was not found."""


__getattr__ = module_getattr("tf.errors")

__all__ = ["OpError", "OutOfRangeError", "InvalidArgumentError", "NotFoundError",
           "FailedPreconditionError"]
