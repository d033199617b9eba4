"""The ONNX import table: `imports()[op_type](ctx, ins, attrs) -> Tensor | tuple`.

An op whose record exports it as one ONNX node without attributes (``onnx="Tanh"``,
``Onnx("Mul", cast="out")``) imports by the inverse of that mapping, derived from the op table
(so an op a user declares imports too); `import_ops.HAND_WRITTEN` holds the op types whose
import is more than that, and takes precedence.
"""

from __future__ import annotations

import functools

from ..core.registry import OPS, Onnx, Op
from ..dispatch import apply
from .errors import OnnxImportError
from .import_math import MATH_IMPORTS
from .import_nn import NN_IMPORTS
from .import_ops import HAND_WRITTEN
from .import_resize import RESIZE_IMPORTS

# attributes of opsets before 7 that say nothing about the result: a memory hint, and the flag
# allowing NumPy-style trailing broadcasting (an `axis` with it is another broadcast: refused)
_LEGACY_ATTRS = {"consumed_inputs", "broadcast"}


def _plain_type(onnx) -> str | None:
    """The ONNX op type of a 1:1 export without attributes, else None."""
    if isinstance(onnx, str):
        return onnx
    if isinstance(onnx, Onnx) and not onnx.attrs:
        return onnx.op_type
    return None


def _inverse(op: Op, op_type: str):
    """The import of `op_type` as `op` (the inverse of its 1:1 export), through the op's
    binding (its promotion and checks) or, without one, the op itself."""
    fn = op.binding if op.binding is not None else functools.partial(apply, op)

    def rule(ctx, ins, attrs):
        extra = sorted(set(attrs) - _LEGACY_ATTRS)
        if extra:
            raise OnnxImportError(f"{op_type}: attributes {extra} are not supported (imported "
                                  f"as dongjing's {op.name}, which takes none)")
        return fn(*ins)

    return rule


_derived: dict = {"key": None, "table": {}}


def imports() -> dict:
    """ONNX op type -> importer: the 1:1 inverses of the op table's exports (when several ops
    export as one type, the first declared imports it), then `HAND_WRITTEN` and the tables of
    `import_math`, `import_nn` and `import_resize`."""
    key = tuple(map(id, OPS.values()))
    if _derived["key"] != key:
        table: dict = {}
        for op in OPS.values():
            op_type = _plain_type(op.onnx)
            if op_type is not None and op_type not in table:
                table[op_type] = _inverse(op, op_type)
        table.update(HAND_WRITTEN)
        table.update(MATH_IMPORTS)
        table.update(NN_IMPORTS)
        table.update(RESIZE_IMPORTS)
        _derived["key"], _derived["table"] = key, table
    return _derived["table"]
