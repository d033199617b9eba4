"""Comparisons and logic: elementwise ops with bool results and no gradient."""

from __future__ import annotations

from .. import dtypes
from ..core import infer as inf
from ..core.registry import Cost, Kind, Onnx, define
from . import onnx_rules
from .bindings import binary, unary

E = Kind.ELEMENTWISE


def _compare(name: str, ufunc: str, dunder: str, onnx):
    return define(name, ufunc=ufunc, infer=inf.comparison(name), kind=E, cost=Cost.CHEAP,
                  binding=binary, public=name, methods=(name, dunder), onnx=onnx,
                  doc=f"Elementwise comparison `{name}` (a bool tensor; no gradient).")


def _logic_infer(name):
    def infer(*specs):
        return inf.broadcast(name, *(s.shape for s in specs)), dtypes.bool_

    return infer


def _logic(name: str, binding, dunder: str, onnx: str):
    return define(name, ufunc=name, infer=_logic_infer(name), kind=E, cost=Cost.CHEAP,
                  binding=binding, public=name, methods=(name, dunder), onnx=onnx,
                  doc=f"Elementwise {name.replace('_', ' ')} (bool result).")


eq = _compare("eq", "equal", "__eq__", Onnx("Equal", cast="common")).binding
ne = _compare("ne", "not_equal", "__ne__", onnx_rules.not_equal).binding
lt = _compare("lt", "less", "__lt__", Onnx("Less", cast="common")).binding
le = _compare("le", "less_equal", "__le__", Onnx("LessOrEqual", cast="common")).binding
gt = _compare("gt", "greater", "__gt__", Onnx("Greater", cast="common")).binding
ge = _compare("ge", "greater_equal", "__ge__", Onnx("GreaterOrEqual", cast="common")).binding
logical_and = _logic("logical_and", binary, "__and__", "And").binding
logical_or = _logic("logical_or", binary, "__or__", "Or").binding
logical_not = _logic("logical_not", unary, "__invert__", "Not").binding
