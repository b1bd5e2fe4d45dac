"""Comparisons, logical ops and `where`: numpy broadcasting, bool results.

Comparisons take two tensors of one dtype and give bool; the logical ops take
and give bool; `where(condition, x, y)` picks from x or y by a bool condition,
all three broadcast together like numpy.where.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call
from ..ir.types import DTYPES
from .registry import make_call, register
from .typecheck import broadcast_shapes, same_dtype, tensor_arg, tensor_type

__all__ = ["equal", "less", "greater", "less_equal", "greater_equal", "logical_and", "logical_or",
           "logical_xor", "logical_not", "where"]

COMPARABLE = DTYPES
BOOL = ("bool",)

COMPARISONS = {
    "equal": np.equal,
    "less": np.less,
    "greater": np.greater,
    "less_equal": np.less_equal,
    "greater_equal": np.greater_equal,
}
LOGICAL = {
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "logical_xor": np.logical_xor,
}


def _infer_compare(name, dtypes):
    def infer(types, attrs):
        lhs = tensor_arg(name, "lhs", types[0], dtypes)
        rhs = tensor_arg(name, "rhs", types[1], dtypes)
        same_dtype(name, "rhs", lhs, rhs)
        return tensor_type(broadcast_shapes(name, "rhs", lhs.shape, rhs.shape), "bool")
    return infer


for _name, _fn in COMPARISONS.items():
    register(_name, ("lhs", "rhs"), infer=_infer_compare(_name, COMPARABLE),
             ref=lambda args, attrs, fn=_fn: np.asarray(fn(args[0], args[1])),
             family="elementwise", doc=f"elementwise {_name} with numpy broadcasting -> bool")

for _name, _fn in LOGICAL.items():
    register(_name, ("lhs", "rhs"), infer=_infer_compare(_name, BOOL),
             ref=lambda args, attrs, fn=_fn: np.asarray(fn(args[0], args[1])),
             family="elementwise", doc=f"elementwise {_name} of bool tensors with numpy broadcasting")


def _infer_not(types, attrs):
    return tensor_arg("logical_not", "data", types[0], BOOL)


register("logical_not", ("data",), infer=_infer_not, ref=lambda args, attrs: np.logical_not(args[0]),
         family="elementwise", doc="elementwise not of a bool tensor")


def _infer_where(types, attrs):
    cond = tensor_arg("where", "condition", types[0], BOOL)
    x = tensor_arg("where", "x", types[1], COMPARABLE)
    y = tensor_arg("where", "y", types[2], COMPARABLE)
    same_dtype("where", "y", x, y)
    shape = broadcast_shapes("where", "x", cond.shape, x.shape)
    return tensor_type(broadcast_shapes("where", "y", shape, y.shape), x.dtype)


register("where", ("condition", "x", "y"), infer=_infer_where,
         ref=lambda args, attrs: np.asarray(np.where(args[0], args[1], args[2])),
         family="shape", doc="x where condition else y (numpy broadcasting of all three)")


def _binary(name):
    def construct(lhs, rhs) -> Call:
        return make_call(name, lhs, rhs)
    construct.__name__ = construct.__qualname__ = name
    return construct


equal, less, greater, less_equal, greater_equal = (_binary(n) for n in COMPARISONS)
logical_and, logical_or, logical_xor = (_binary(n) for n in LOGICAL)


def logical_not(data) -> Call:
    return make_call("logical_not", data)


def where(condition, x, y) -> Call:
    return make_call("where", condition, x, y)
