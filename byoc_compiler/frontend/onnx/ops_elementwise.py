"""Elementwise ONNX ops: binary arithmetic, the variadic Sum/Max/Min, activations and Clip."""
from __future__ import annotations

import numpy as np

from ...ir.types import DTYPES
from .context import Context, Node, NodeError
from .dtypes import onnx_dtype, onnx_type_name
from .table import converter

# ONNX op -> (IR op, since_versions). Definitions 7+ broadcast numpy-style (6 and older had a
# `broadcast` attribute and are out of range); 13/14 only add types.
_BINARY = {
    "Add": ("add", (7, 13, 14)),
    "Sub": ("subtract", (7, 13, 14)),
    "Mul": ("multiply", (7, 13, 14)),
    "Div": ("divide", (7, 13, 14)),
}

# Variadic ops fold left over their inputs. Definition 6 requires equal shapes (a special case of
# broadcasting), 8 broadcasts, 12/13 add types.
_VARIADIC = {
    "Sum": ("add", (6, 8, 13)),
    "Max": ("maximum", (6, 8, 12, 13)),
    "Min": ("minimum", (6, 8, 12, 13)),
}

_UNARY = {
    "Relu": ("nn.relu", (6, 13, 14)),
    "Sigmoid": ("sigmoid", (6, 13)),
    "Tanh": ("tanh", (6, 13)),
}


def _same_dtype(node: Node, ctx: Context, args) -> None:
    dtypes = [ctx.dtype(a) for a in args]
    if len(set(dtypes)) > 1:
        raise NodeError(f"inputs have different dtypes ({', '.join(dtypes)})")


_NARROW_INTS = ("int8", "int16", "uint8", "uint16")


def _binary(ir_op: str):
    def convert(node: Node, ctx: Context):
        args = [node.required(0, "A"), node.required(1, "B")]
        _same_dtype(node, ctx, args)
        dtype = ctx.dtype(args[0])
        if ir_op == "divide" and dtype in _NARROW_INTS:
            # divide has no narrow-integer form: divide in int32 (exact) and wrap back.
            wide = [ctx.call("cast", a, dtype="int32") for a in args]
            return [ctx.call("cast", ctx.call("divide", *wide), dtype=dtype)]
        return [ctx.call(ir_op, *args)]
    return convert


def _variadic(ir_op: str):
    def convert(node: Node, ctx: Context):
        args = [a for a in node.inputs if a is not None]
        if not args:
            raise NodeError("needs at least one input")
        _same_dtype(node, ctx, args)
        out = args[0]
        for arg in args[1:]:
            out = ctx.call(ir_op, out, arg)
        return [out]
    return convert


def unary(ir_op: str):
    """The converter of a one-input ONNX op that is one IR op (ops_math.py uses it too)."""
    def convert(node: Node, ctx: Context):
        return [ctx.call(ir_op, node.required(0, "X"))]
    return convert


for _onnx, (_ir, _versions) in _BINARY.items():
    converter(_onnx, _versions)(_binary(_ir))
for _onnx, (_ir, _versions) in _VARIADIC.items():
    converter(_onnx, _versions)(_variadic(_ir))
for _onnx, (_ir, _versions) in _UNARY.items():
    converter(_onnx, _versions)(unary(_ir))


@converter("LeakyRelu", (6, 16))
def _leaky_relu(node: Node, ctx: Context):
    return [ctx.call("nn.leaky_relu", node.required(0, "X"), alpha=float(node.attr("alpha", 0.01)))]


# ---- Clip: bounds were attributes up to definition 6, optional inputs from 11 ---------------------

@converter("Clip", (6,))
def _clip_attrs(node: Node, ctx: Context):
    # Definition 6 defaults are the float range, i.e. an absent bound does not clip.
    low, high = node.attr("min"), node.attr("max")
    x = node.required(0, "input")
    return [_clip(ctx, x, None if low is None else ctx.const(low, ctx.dtype(x)),
                  None if high is None else ctx.const(high, ctx.dtype(x)))]


@converter("Clip", (11, 12, 13))
def _clip_inputs(node: Node, ctx: Context):
    return [_clip(ctx, node.required(0, "input"), node.input(1), node.input(2))]


def _clip(ctx: Context, x, low, high):
    """clip when both bounds are constants, else maximum/minimum with whatever bounds there are."""
    for bound in (low, high):
        if bound is not None and ctx.tensor(bound).ndim != 0 and ctx.tensor(bound).size != 1:
            raise NodeError(f"Clip bounds must be scalars, got shape {ctx.shape(bound)}")
    low_value, high_value = ctx.value(low), ctx.value(high)
    if low_value is not None and high_value is not None:
        return ctx.call("clip", x, a_min=float(np.ravel(low_value)[0]), a_max=float(np.ravel(high_value)[0]))
    out = x
    if low is not None:
        out = ctx.call("maximum", out, _scalar(ctx, low, x))
    if high is not None:
        out = ctx.call("minimum", out, _scalar(ctx, high, x))
    return out


def _scalar(ctx: Context, bound, x):
    """A bound as a 0-D value of x's dtype (a 1-element bound would otherwise broadcast x up to 1-D)."""
    if ctx.dtype(bound) != ctx.dtype(x):
        raise NodeError(f"Clip bound has dtype {ctx.dtype(bound)}, the input {ctx.dtype(x)}")
    if ctx.tensor(bound).ndim:
        bound = ctx.call("reshape", bound, newshape=())
    return bound


def _cast(node: Node, ctx: Context):
    to = node.attrs.get("to")
    dtype = onnx_dtype(to)
    if dtype is None:
        raise NodeError(f"Cast to element type {onnx_type_name(to)} is not supported "
                        f"(supported: {', '.join(DTYPES)})")
    x = node.required(0, "input")
    if ctx.dtype(x) == dtype:
        return [x]
    return [ctx.call("cast", x, dtype=dtype)]


# 23, 24, 25 and 28 only add element types (float4, int2, float8e8m0's round_mode) that byoc has not.
converter("Cast", (6, 9, 13, 19, 21, 23, 24, 25, 28))(_cast)
