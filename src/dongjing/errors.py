"""The errors dongjing raises: each names the op, the shapes or the placeholder involved."""


class DongjingError(Exception):
    """Base class of every error dongjing raises on bad input."""


class ShapeError(DongjingError, ValueError):
    """Shapes that an op cannot combine."""


class DTypeError(DongjingError, TypeError):
    """A dtype an op or a placeholder does not accept."""


class GraphError(DongjingError, RuntimeError):
    """Misuse of a static graph: a value asked of a symbolic tensor, mixed graphs, ..."""


class FeedError(DongjingError, ValueError):
    """A bad feed_dict given to Session.run."""


class StateDictError(DongjingError, RuntimeError):
    """A state dict that does not fit a module or optimizer: missing/unexpected keys, shapes."""


class CheckpointError(DongjingError, ValueError):
    """A checkpoint file that cannot be read: truncated, corrupted, or not a dongjing checkpoint."""


class DeviceError(DongjingError, RuntimeError):
    """A device that this build cannot run on (only "cpu" until a GPU backend exists)."""


class JitError(DongjingError, RuntimeError):
    """A dj.jit call that cannot be compiled or differentiated as asked (or a bad argument)."""


class CheckError(JitError):
    """dj.jit check mode: the compiled function disagrees with the eager one (the report names
    the first diverging node)."""


class SideEffectError(JitError):
    """dj.jit(strict=True): the traced function did something that runs only at trace time."""


class ArgumentError(DongjingError, TypeError, ValueError):
    """An argument of the wrong type or value; the message names the function and argument."""


class IndexOutOfRangeError(DongjingError, IndexError):
    """An index (given or fed at run time) outside the dimension it indexes."""


class OutOfMemoryError(DongjingError, MemoryError):
    """An array too large to allocate (the message names the function and the size asked)."""


class AutogradError(DongjingError, RuntimeError):
    """Backward cannot run as asked: a saved tensor modified in place, a graph already freed by
    an earlier backward, a hook returning a gradient of the wrong shape."""


class AnomalyError(AutogradError):
    """Anomaly mode / check_numerics: an op's forward or backward output holds NaN or inf (the
    message names the op, its input shapes and ranges, and the user's source line)."""


class DataLoaderError(DongjingError, RuntimeError):
    """A DataLoader worker process that died, timed out, or raised an error of a kind that
    cannot be raised again as it was (the message names the worker and holds its traceback)."""
