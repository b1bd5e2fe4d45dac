"""Reductions (ReduceSum/Mean/Max/Min/Prod and the composed L1, L2, LogSum, LogSumExp, SumSquare)
and ArgMax/ArgMin.

The axes are an attribute up to one definition and an optional input after it (ReduceSum 13,
the others 18); `noop_with_empty_axes` (same definitions) makes "no axes" the identity
instead of "every axis".
"""
from __future__ import annotations

import numpy as np

from .context import Context, Node, NodeError
from .table import converter

# op -> (attribute-axes definitions, input-axes definitions)
_VERSIONS = {
    "ReduceSum": ((1, 11), (13,)),
    "ReduceMean": ((1, 11, 13), (18,)),
    "ReduceProd": ((1, 11, 13), (18,)),
    "ReduceMax": ((1, 11, 12, 13), (18, 20)),
    "ReduceMin": ((1, 11, 12, 13), (18, 20)),
    "ReduceL1": ((1, 11, 13), (18,)),
    "ReduceL2": ((1, 11, 13), (18,)),
    "ReduceLogSum": ((1, 11, 13), (18, 28)),        # 28: an empty reduction is -inf (log 0 already is)
    "ReduceLogSumExp": ((1, 11, 13), (18, 28)),
    "ReduceSumSquare": ((1, 11, 13), (18,)),
}


def _axes(node: Node, ctx: Context, from_input: bool, ndim: int):
    """The IR `axis` attribute: None for every axis, () for none."""
    if from_input:
        data = ctx.constant_input(node, 1, "axes")
        axes = None if data is None else [int(v) for v in np.ravel(data)]
    else:
        axes = node.attr("axes")
        axes = None if axes is None else [int(v) for v in axes]
    if not axes:
        return () if from_input and node.attr("noop_with_empty_axes", 0) else None
    for a in axes:
        if not -ndim <= a < ndim:
            raise NodeError(f"axis {a} is out of range for a {ndim}-D input")
    return tuple(sorted({a % ndim for a in axes}))


def _reduce(op_type: str, from_input: bool):
    def convert(node: Node, ctx: Context):
        x = node.required(0, "data")
        axis = _axes(node, ctx, from_input, len(ctx.shape(x)))
        keep = bool(node.attr("keepdims", 1))

        def total(v, name="sum"):
            return ctx.call(name, v, axis=axis, keepdims=keep)

        if op_type in ("ReduceSum", "ReduceMean", "ReduceProd", "ReduceMax", "ReduceMin"):
            name = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceProd": "prod", "ReduceMax": "max",
                    "ReduceMin": "min"}[op_type]
            return [total(x, name)]
        if op_type == "ReduceL1":
            return [total(ctx.call("abs", x))]
        if op_type == "ReduceSumSquare":
            return [total(ctx.call("multiply", x, x))]
        if op_type == "ReduceL2":
            return [ctx.call("sqrt", total(ctx.call("multiply", x, x)))]
        if op_type == "ReduceLogSum":
            return [ctx.call("log", total(x))]
        return [ctx.call("log", total(ctx.call("exp", x)))]   # ReduceLogSumExp
    return convert


for _op, (_attr_versions, _input_versions) in _VERSIONS.items():
    converter(_op, _attr_versions)(_reduce(_op, False))
    converter(_op, _input_versions)(_reduce(_op, True))


def _arg(ir_op: str):
    def convert(node: Node, ctx: Context):
        x = node.required(0, "data")
        ndim = len(ctx.shape(x))
        axis = int(node.attr("axis", 0))
        if not -ndim <= axis < ndim:
            raise NodeError(f"axis {axis} is out of range for a {ndim}-D input")
        return [ctx.call(ir_op, x, axis=axis % ndim, keepdims=bool(node.attr("keepdims", 1)),
                         select_last_index=bool(node.attr("select_last_index", 0)))]
    return convert


# 12 adds select_last_index, 13 types.
converter("ArgMax", (1, 11, 12, 13))(_arg("argmax"))
converter("ArgMin", (1, 11, 12, 13))(_arg("argmin"))
