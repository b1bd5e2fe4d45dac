"""Unary math and activations (Neg, Abs, Exp, Log, Sqrt, Reciprocal, Erf, Gelu, HardSigmoid,
HardSwish), Pow and LayerNormalization (Cast is in ops_elementwise.py)."""
from __future__ import annotations

import numpy as np

from .context import Context, Node, NodeError
from .ops_elementwise import unary
from .table import converter

# Definitions 6 and 13 only add types (1 had the legacy `consumed_inputs`, reached by upgrading).
_UNARY = {
    "Neg": ("negative", (6, 13)),
    "Abs": ("abs", (6, 13)),
    "Exp": ("exp", (6, 13)),
    "Log": ("log", (6, 13)),
    "Sqrt": ("sqrt", (6, 13)),
    "Erf": ("erf", (9, 13)),
    "HardSwish": ("nn.hard_swish", (14, 22)),
}


for _onnx, (_ir, _versions) in _UNARY.items():
    converter(_onnx, _versions)(unary(_ir))


@converter("Reciprocal", (6, 13))
def _reciprocal(node: Node, ctx: Context):
    x = node.required(0, "X")
    return [ctx.call("divide", ctx.const(1, ctx.dtype(x)), x)]


@converter("HardSigmoid", (6, 22))
def _hard_sigmoid(node: Node, ctx: Context):
    return [ctx.call("nn.hard_sigmoid", node.required(0, "X"), alpha=float(node.attr("alpha", 0.2)),
                     beta=float(node.attr("beta", 0.5)))]


def _check_gelu(attrs) -> list[str]:
    mode = attrs.get("approximate", "none")
    return [] if mode in ("none", "tanh") else [f"approximate {mode!r} is not 'none' or 'tanh'"]


@converter("Gelu", (20,), check=_check_gelu)
def _gelu(node: Node, ctx: Context):
    return [ctx.call("nn.gelu", node.required(0, "X"), approximate=node.attr("approximate", "none"))]


# 7 requires one type for both inputs; 12 lets the exponent have its own type; 13/15 add types.
@converter("Pow", (7, 12, 13, 15))
def _pow(node: Node, ctx: Context):
    x, y = node.required(0, "X"), node.required(1, "Y")
    dtype = ctx.dtype(x)
    if dtype in ("float32", "float64"):
        if ctx.dtype(y) != dtype:
            y = ctx.call("cast", y, dtype=dtype)
        return [ctx.call("power", x, y)]
    if dtype in ("int32", "int64"):
        # Integer powers in float64 (exact while the result fits 53 bits), truncated back.
        wide = ctx.call("power", ctx.call("cast", x, dtype="float64"), ctx.call("cast", y, dtype="float64"))
        return [ctx.call("cast", wide, dtype=dtype)]
    raise NodeError(f"Pow of a {dtype} base is not supported (float32, float64, int32, int64)")


# Mean and InvStdDev (outputs 1 and 2) are computed with reductions; they are dead code unless used.
@converter("LayerNormalization", (17,), outputs=3)
def _layer_norm(node: Node, ctx: Context):
    x, scale, bias = node.required(0, "X"), node.required(1, "Scale"), node.input(2)
    shape = ctx.shape(x)
    axis = int(node.attr("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise NodeError(f"axis {axis} is out of range for a {len(shape)}-D input")
    axis %= len(shape)
    eps = float(node.attr("epsilon", 1e-5))
    if bias is None:
        bias = ctx.const(np.zeros(shape[axis:], np.float32))
    y = ctx.call("nn.layer_norm", x, scale, bias, axis=axis, epsilon=eps)
    axes = tuple(range(axis, len(shape)))
    mean = ctx.call("mean", x, axis=axes, keepdims=True)
    centered = ctx.call("subtract", x, mean)
    var = ctx.call("mean", ctx.call("multiply", centered, centered), axis=axes, keepdims=True)
    inv = ctx.call("divide", ctx.const(1.0, "float32"),
                   ctx.call("sqrt", ctx.call("add", var, ctx.const(eps, "float32"))))
    return [y, mean, inv]
