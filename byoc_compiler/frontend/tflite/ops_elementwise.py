"""Converters of elementwise operators: arithmetic, activations, quantize and dequantize.

They keep the layout of their operands (an NCHW activation stays NCHW; a constant operand is
broadcast and permuted to match at import time).
"""
from __future__ import annotations

import numpy as np

from ...ir.expr import Constant
from ..graph_context import NodeError
from ...op.tflite_fixedpoint import div_table, hard_swish_table, leaky_relu_table, rsqrt_table
from .ops_nn import check_16x8, float_path, table_lookup
from .qparams import INT_TYPES, activation_range, fused_activation, int16_refusal, per_tensor, same_quant
from .table import converter
from .values import Value

_FLOAT_BINARY = {"ADD": "add", "SUB": "subtract", "MUL": "multiply", "DIV": "divide", "MAXIMUM": "maximum",
                 "MINIMUM": "minimum"}


def _binary_operands(cx, op):
    exprs, layout = cx.like([cx.value(op, 0), cx.value(op, 1)])
    return exprs, layout


def _qbinary(cx, op, exprs, dtype: str):
    (ls, lz), (rs, rz) = (per_tensor(cx.quant(op.inputs[i], f"input {i}"), f"input {i}") for i in (0, 1))
    out_q = cx.quant(op.outputs[0], "the output")
    os_, oz = per_tensor(out_q, "the output")
    name = {"ADD": "qnn.add", "MUL": "qnn.mul", "SUB": "qnn.subtract"}[op.name]
    lhs, rhs = exprs
    y = cx.call(name, lhs, rhs, lhs_scale=[ls], lhs_zero_point=lz, rhs_scale=[rs], rhs_zero_point=rz,
                output_scale=[os_], output_zero_point=oz, rounding="tflite")
    return fused_activation(cx, op, y, out_q, dtype)


def _div_lookup(cx, op, exprs):
    """int8 DIV: TFLite's integer quotient of every pair of int8 inputs, computed at import (a 256 x 256
    table) and looked up at (a + 128) * 256 + b + 128."""
    (s1, z1), (s2, z2) = (per_tensor(cx.quant(op.inputs[i], f"input {i}"), f"input {i}") for i in (0, 1))
    so, zo = per_tensor(cx.quant(op.outputs[0], "the output"), "the output")
    try:
        table = div_table(s1, z1, s2, z2, so, zo).reshape(-1)
    except (ValueError, OverflowError) as exc:
        raise NodeError(f"the scales cannot be rescaled the way TFLite's DIV does: {exc}") from None
    a, b = (cx.call("add", cx.call("cast", e, dtype="int32"), Constant(np.int32(128))) for e in exprs)
    index = cx.call("add", cx.call("multiply", a, Constant(np.int32(256))), b)
    return cx.call("take", Constant(table), index, axis=0)


@converter("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE")
def _binary(op, cx):
    dtype = cx.info(op.inputs[0]).dtype
    exprs, layout = _binary_operands(cx, op)
    if dtype in ("float32", "int32"):
        if op.name == "SQUARED_DIFFERENCE":
            d = cx.call("subtract", *exprs)
            y = cx.call("multiply", d, d)
        else:
            y = cx.call(_FLOAT_BINARY[op.name], *exprs)
        return [Value(fused_activation(cx, op, y, None, "float32"), layout)]
    if dtype == "int16" and op.name in ("ADD", "MUL", "SUB"):
        check_16x8(cx, op)
        return [Value(_qbinary(cx, op, exprs, dtype), layout)]
    if dtype == "int16":
        raise NodeError(int16_refusal(op.name))
    if dtype not in ("int8", "uint8"):
        raise NodeError(f"input type {cx.info(op.inputs[0]).type_name} is not supported")
    if op.name in ("ADD", "MUL", "SUB"):
        return [Value(_qbinary(cx, op, exprs, dtype), layout)]
    if op.name == "DIV" and dtype == "int8":
        return [Value(fused_activation(cx, op, _div_lookup(cx, op, exprs), cx.quant(op.outputs[0], "the output"),
                                       dtype), layout)]
    if op.name in ("MAXIMUM", "MINIMUM") and all(same_quant(cx.info(i).quant, cx.info(op.outputs[0]).quant)
                                                 for i in op.inputs):
        return [Value(cx.call(_FLOAT_BINARY[op.name], *exprs), layout)]
    raise NodeError(f"{op.name} on {dtype} is not supported yet (ADD, SUB, MUL, DIV on int8, and MAXIMUM/MINIMUM "
                    "with one quantization are)")


@converter("PRELU")
def _prelu(op, cx):
    """x >= 0 ? x : alpha * x. int8 as TFLite computes it: the positive side requantized (input/output scale),
    the negative side the product (x - zx)(alpha - za) rescaled by input x alpha / output scale."""
    dtype = cx.info(op.inputs[0]).dtype
    (x, alpha), layout = _binary_operands(cx, op)
    if dtype == "float32":
        y = cx.call("where", cx.call("greater_equal", x, Constant(np.float32(0))), x, cx.call("multiply", x, alpha))
        return [Value(y, layout)]
    if dtype != "int8" or cx.info(op.inputs[1]).dtype != "int8":
        raise NodeError(f"PRELU on {cx.info(op.inputs[0]).type_name} is not supported (float32, int8 are)")
    (s, z), (sa, za) = (per_tensor(cx.quant(op.inputs[i], f"input {i}"), f"input {i}") for i in (0, 1))
    os_, oz = per_tensor(cx.quant(op.outputs[0], "the output"), "the output")
    positive = cx.call("qnn.requantize", x, input_scale=[s], input_zero_point=[z], output_scale=[os_],
                       output_zero_point=[oz], out_dtype="int8", rounding="tflite")
    negative = cx.call("qnn.mul", x, alpha, lhs_scale=[s], lhs_zero_point=z, rhs_scale=[sa], rhs_zero_point=za,
                       output_scale=[os_], output_zero_point=oz, rounding="tflite")
    y = cx.call("where", cx.call("greater_equal", x, Constant(np.int8(z))), positive, negative)
    return [Value(y, layout)]


_CLAMPS = {"RELU": "RELU", "RELU6": "RELU6", "RELU_N1_TO_1": "RELU_N1_TO_1"}


@converter("RELU", "RELU6", "RELU_N1_TO_1")
def _relu(op, cx):
    v = cx.value(op, 0)
    dtype = cx.info(op.inputs[0]).dtype
    if dtype == "float32":
        bounds = {"RELU": None, "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}[op.name]
        y = cx.call("nn.relu", v.expr) if bounds is None else cx.call("clip", v.expr, a_min=bounds[0], a_max=bounds[1])
        return [Value(y, v.layout, v.nhwc)]
    if dtype not in ("int8", "uint8"):
        raise NodeError(f"input type {cx.info(op.inputs[0]).type_name} is not supported")
    in_q, out_q = cx.quant(op.inputs[0], "the input"), cx.quant(op.outputs[0], "the output")
    x = v.expr
    if not same_quant(in_q, out_q):
        # TFLite's ReluQuantized: the factor in/out scale in float32, then MultiplyByQuantizedMultiplier
        (s, z), (os_, oz) = per_tensor(in_q, "the input"), per_tensor(out_q, "the output")
        x = cx.call("qnn.requantize", x, input_scale=[float(np.float32(s) / np.float32(os_))],
                    input_zero_point=[z], output_scale=[1.0], output_zero_point=[oz], out_dtype=dtype,
                    rounding="tflite")
    lo, hi = activation_range(_CLAMPS[op.name], out_q, dtype)
    return [Value(cx.call("clip", x, a_min=float(lo), a_max=float(hi)), v.layout, v.nhwc)]


def _unary(name: str, **attrs):
    def convert(op, cx):
        return float_path(cx, op, lambda x, _: cx.call(name, x, **attrs))
    return convert


@converter("HARD_SWISH")
def _hard_swish(op, cx):
    if cx.info(op.inputs[0]).dtype == "int8":
        (s, z), (os_, oz) = (per_tensor(cx.quant(op.inputs[0], "the input"), "the input"),
                             per_tensor(cx.quant(op.outputs[0], "the output"), "the output"))
        return table_lookup(cx, op, lambda: hard_swish_table(s, z, os_, oz))
    return float_path(cx, op, lambda x, _: cx.call("nn.hard_swish", x))

converter("EXP")(_unary("exp"))
converter("SQRT")(_unary("sqrt"))


@converter("GELU")
def _gelu(op, cx):
    approximate = "tanh" if op.options.get("approximate") else "none"
    return float_path(cx, op, lambda x, _: cx.call("nn.gelu", x, approximate=approximate))


@converter("LEAKY_RELU")
def _leaky_relu(op, cx):
    alpha = float(np.float32(op.options.get("alpha", 0.2)))
    if cx.info(op.inputs[0]).dtype == "int8":
        (s, z), (os_, oz) = (per_tensor(cx.quant(op.inputs[0], "the input"), "the input"),
                             per_tensor(cx.quant(op.outputs[0], "the output"), "the output"))
        return table_lookup(cx, op, lambda: leaky_relu_table(s, z, alpha, os_, oz))
    return float_path(cx, op, lambda x, _: cx.call("nn.leaky_relu", x, alpha=alpha))


@converter("RSQRT")
def _rsqrt(op, cx):
    dtype = cx.info(op.inputs[0]).dtype
    if dtype == "int8":
        (s, z), (os_, oz) = (per_tensor(cx.quant(op.inputs[0], "the input"), "the input"),
                             per_tensor(cx.quant(op.outputs[0], "the output"), "the output"))
        return table_lookup(cx, op, lambda: rsqrt_table(s, z, os_, oz))
    if dtype != "float32":
        raise NodeError(f"RSQRT on {cx.info(op.inputs[0]).type_name} is not supported (float32 and int8 are)")
    return float_path(cx, op, lambda x, _: cx.call("divide", Constant(np.float32(1.0)), cx.call("sqrt", x)))


@converter("QUANTIZE")
def _quantize(op, cx):
    v = cx.value(op, 0)
    src, dst = cx.info(op.inputs[0]).dtype, cx.info(op.outputs[0]).dtype
    if dst not in INT_TYPES:
        raise NodeError(f"quantizing to {cx.info(op.outputs[0]).type_name} is not supported")
    os_, oz = per_tensor(cx.quant(op.outputs[0], "the output"), "the output")
    if src == "float32":
        y = cx.call("qnn.quantize", v.expr, scale=[os_], zero_point=[oz], out_dtype=dst, rounding="tflite")
    elif src in INT_TYPES:
        s, z = per_tensor(cx.quant(op.inputs[0], "the input"), "the input")
        y = cx.call("qnn.requantize", v.expr, input_scale=[s], input_zero_point=[z], output_scale=[os_],
                    output_zero_point=[oz], out_dtype=dst, rounding="tflite")
    else:
        raise NodeError(f"quantizing {cx.info(op.inputs[0]).type_name} is not supported")
    return [Value(y, v.layout, v.nhwc)]


@converter("DEQUANTIZE")
def _dequantize(op, cx):
    info = cx.info(op.inputs[0])
    if info.type_name == "FLOAT16":
        raise NodeError("float16 weights dequantized to float32 (a float16-quantized model): convert the model "
                        "with float32 weights")
    if info.dtype not in INT_TYPES:
        raise NodeError(f"dequantizing {info.type_name} is not supported")
    v = cx.value(op, 0)
    q = cx.quant(op.inputs[0], "the input")
    axis = q.axis if len(q.scale) > 1 else 0
    if v.layout != "plain" and len(q.scale) > 1:   # per-channel axes are TFLite's
        v = Value(cx.plain(v))
    y = cx.call("qnn.dequantize", v.expr, scale=list(q.scale), zero_point=list(q.zero_point), axis=axis)
    return [Value(y, v.layout, v.nhwc)]


@converter("CAST")
def _cast(op, cx):
    v = cx.value(op, 0)
    dst = cx.info(op.outputs[0]).dtype
    if dst is None:
        raise NodeError(f"cast to {cx.info(op.outputs[0]).type_name} is not supported")
    return [Value(cx.call("cast", v.expr, dtype=dst), v.layout, v.nhwc)]
