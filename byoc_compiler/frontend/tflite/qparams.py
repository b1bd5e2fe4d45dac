"""Quantization helpers of the converters: TFLite's fused activation ranges, requantization, dtypes."""
from __future__ import annotations

import math

import numpy as np

from ...ir.expr import Expr
from ..graph_context import NodeError
from .reader import Quant
from .schema import enum_names

INT_TYPES = ("int8", "uint8", "int16")
# the operators byoc computes on int16 activations (TFLite's 16x8 quantization)
INT16_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "SUB", "MUL", "AVERAGE_POOL_2D", "MAX_POOL_2D",
             "MEAN", "SUM", "SOFTMAX", "QUANTIZE", "DEQUANTIZE")


def int16_refusal(op_name: str) -> str:
    """The one message for an int16 (16x8) operator byoc does not compute."""
    return (f"int16 {op_name} (16x8 quantization) is not supported: byoc computes int16 activations in "
            f"{', '.join(INT16_OPS)}")


def activation_name(op) -> str:
    code = op.options.get("fused_activation_function", 0)
    return enum_names("ActivationFunctionType").get(code, f"activation {code}")


def _round_away(v: float) -> int:
    return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def activation_range(name: str, q: Quant, dtype: str) -> tuple[int, int]:
    """TFLite's CalculateActivationRangeQuantized: the output's integer clamp for a fused activation."""
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    scale, zp = np.float32(q.scale[0]), int(q.zero_point[0])

    def quantize(f: float) -> int:      # zero point + round(f / scale), the division in float32
        return zp + _round_away(float(np.float32(f) / scale))
    if name == "NONE":
        return lo, hi
    if name == "RELU":
        return max(lo, quantize(0.0)), hi
    if name == "RELU6":
        return max(lo, quantize(0.0)), min(hi, quantize(6.0))
    if name == "RELU_N1_TO_1":
        return max(lo, quantize(-1.0)), min(hi, quantize(1.0))
    raise NodeError(f"fused activation {name} is not supported on quantized tensors")


def fused_activation(cx, op, x: Expr, out_q: Quant | None, dtype: str) -> Expr:
    """The op's fused activation applied to its result `x` (float, or integer with out_q)."""
    name = activation_name(op)
    if dtype in INT_TYPES:
        lo, hi = activation_range(name, out_q, dtype)
        info = np.iinfo(dtype)
        if (lo, hi) == (info.min, info.max):
            return x
        return cx.call("clip", x, a_min=float(lo), a_max=float(hi))
    if name == "NONE":
        return x
    if name == "RELU":
        return cx.call("nn.relu", x)
    if name == "RELU6":
        return cx.call("clip", x, a_min=0.0, a_max=6.0)
    if name == "RELU_N1_TO_1":
        return cx.call("clip", x, a_min=-1.0, a_max=1.0)
    if name == "TANH":
        return cx.call("tanh", x)
    raise NodeError(f"fused activation {name} is not supported")


def requantize(cx, acc: Expr, input_scales, out_q: Quant, axis: int, dtype: str) -> Expr:
    """acc (int32) * input_scale[c] / output_scale, TFLite's MultiplyByQuantizedMultiplier."""
    return cx.call("qnn.requantize", acc, input_scale=[float(s) for s in input_scales], input_zero_point=[0],
                   output_scale=[float(out_q.scale[0])], output_zero_point=[int(out_q.zero_point[0])],
                   axis=axis, out_dtype=dtype, rounding="tflite")


def per_tensor(q: Quant, what: str) -> tuple[float, int]:
    if len(q.scale) != 1:
        raise NodeError(f"{what} is quantized per channel; TFLite quantizes it per tensor")
    return float(q.scale[0]), int(q.zero_point[0])


def same_quant(a: Quant | None, b: Quant | None) -> bool:
    if a is None or b is None:
        return a is b
    return np.float32(a.scale[0]) == np.float32(b.scale[0]) and a.zero_point[0] == b.zero_point[0]
