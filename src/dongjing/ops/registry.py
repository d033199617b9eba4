"""The op table's old import path; the record and the table live in `dongjing.core.registry`."""

from ..core.registry import OPS, Attrs, Cost, Kind, Op, Spec, all_ops, bind, define, get, register

__all__ = ["OPS", "Attrs", "Cost", "Kind", "Op", "Spec", "all_ops", "bind", "define", "get",
           "register"]
