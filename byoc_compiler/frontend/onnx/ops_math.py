"""Unary math and activations (Neg, Abs, Exp, Log, Sqrt, Reciprocal, Erf, Gelu, HardSigmoid,
HardSwish), Pow, Cast and LayerNormalization."""
from __future__ import annotations

import numpy as np
import onnx

from .context import Context, Node, NodeError
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


def _unary(ir_op: str):
    def convert(node: Node, ctx: Context):
        return [ctx.call(ir_op, node.required(0, "X"))]
    return convert


for _onnx, (_ir, _versions) in _UNARY.items():
    converter(_onnx, _versions)(_unary(_ir))


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
    if ctx.dtype(x) != "float32":
        raise NodeError(f"Pow of a {ctx.dtype(x)} base is not supported (float32 only)")
    if ctx.dtype(y) != "float32":
        y = ctx.call("cast", y, dtype="float32")
    return [ctx.call("power", x, y)]


def onnx_dtype(elem_type: int) -> str | None:
    """The IR dtype of an ONNX element type, None when the IR has none."""
    from .importer import _INPUT_DTYPES

    return _INPUT_DTYPES.get(elem_type)


# Definition 1 names the type as a string (reached by upgrading); 19 adds `saturate`, which only
# changes float8 targets; later ones add types.
@converter("Cast", (6, 9, 13, 19, 21, 23, 24, 25, 28))
def _cast(node: Node, ctx: Context):
    x = node.required(0, "input")
    to = node.attr("to")
    dtype = onnx_dtype(int(to)) if to is not None else None
    if dtype is None:
        name = onnx.TensorProto.DataType.Name(int(to)) if to is not None else "missing"
        raise NodeError(f"cast to {name} is not supported")
    if ctx.dtype(x) == dtype:
        return [x]
    return [ctx.call("cast", x, dtype=dtype)]


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
