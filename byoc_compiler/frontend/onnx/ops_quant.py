"""Quantized ONNX ops: QuantizeLinear/DequantizeLinear (the QDQ format), the QOperator ops QLinearConv,
QLinearMatMul, ConvInteger, MatMulInteger (2-D or batched), and onnxruntime's QLinearAdd/QLinearMul
(com.microsoft).

Scales and zero points must be constants (they become attributes of the qnn ops). float16 scales are
taken as the float32 values they are (exactly); a QuantizeLinear of float16 data divides in float32
and a DequantizeLinear with a float16 scale rounds its float32 product to float16, as onnxruntime does. A QLinear op
becomes its integer op + int32 bias + qnn.requantize whose input scale is x_scale * w_scale in
float32, as onnxruntime computes it. DequantizeLinear of a constant is not folded, so that
transform.qdq_to_integer can still see integer weights.
"""
from __future__ import annotations

import numpy as np

from ...op.qnn import global_avg_pool_int, qmatmul_nd
from .context import Context, Node, NodeError
from .dtypes import onnx_dtype
from .ops_nn import _ints_attr, padding
from .table import MS_TABLE, Converter, converter

_ONNX_QDTYPES = ("int8", "uint8", "int16", "uint16", "int32")


def _qparams(node: Node, ctx: Context, scale_index: int, zp_index: int | None, what: str,
             default_dtype: str = "uint8") -> tuple[list[float], list[int], str]:
    """(scales, zero points, zero point dtype) from constant inputs; zero points default to 0."""
    scale = ctx.constant_input(node, scale_index, f"{what} scale")
    if scale is None:
        raise NodeError(f"input {scale_index} ({what} scale) is missing")
    if scale.dtype not in (np.float32, np.float16):
        raise NodeError(f"{what} scale has dtype {scale.dtype}; float32 and float16 scales are supported")
    zp = ctx.constant_input(node, zp_index, f"{what} zero point") if zp_index is not None else None
    if zp is None:
        zps, dtype = [0] * scale.size, default_dtype
    else:
        dtype = str(zp.dtype)
        if dtype not in _ONNX_QDTYPES:
            raise NodeError(f"{what} zero point has dtype {dtype}; supported: {', '.join(_ONNX_QDTYPES)}")
        zps = [int(v) for v in zp.reshape(-1)]
    return [float(v) for v in scale.reshape(-1)], zps, dtype


def _check_block(node: Node) -> None:
    if int(node.attr("block_size", 0)) != 0:
        raise NodeError("blocked quantization (block_size != 0) is not supported")


@converter("QuantizeLinear", (10, 13, 19, 21))
def _quantize(node: Node, ctx: Context):
    _check_block(node)
    x = node.required(0, "x")
    if ctx.dtype(x) not in ("float32", "float16"):
        raise NodeError(f"QuantizeLinear of a {ctx.dtype(x)} input is not supported (float32 and float16 are)")
    if ctx.dtype(x) == "float16":    # onnxruntime divides a float16 input by its scale in float32
        x = ctx.call("cast", x, dtype="float32")
    scales, zps, dtype = _qparams(node, ctx, 1, 2, "y")
    if node.attr("output_dtype", 0):
        dtype = onnx_dtype(node.attr("output_dtype")) or dtype
    return [ctx.call("qnn.quantize", x, scale=scales, zero_point=zps, axis=int(node.attr("axis", 1)),
                     out_dtype=dtype)]


@converter("DequantizeLinear", (10, 13, 19, 21))
def _dequantize(node: Node, ctx: Context):
    _check_block(node)
    x = node.required(0, "x")
    scales, zps, _ = _qparams(node, ctx, 1, 2, "x")
    y = ctx.call_unfolded("qnn.dequantize", x, scale=scales, zero_point=zps, axis=int(node.attr("axis", 1)))
    if ctx.constant_input(node, 1, "x scale").dtype == np.float16:   # the float32 product, rounded to float16
        y = ctx.call("cast", y, dtype="float16")
    return [y]


def _conv_attrs(node: Node, ctx: Context, x, w) -> dict:
    xs, ws = ctx.shape(x), ctx.shape(w)
    if len(xs) != 4 or len(ws) != 4:
        raise NodeError(f"only 2-D quantized convolutions are supported (4-D X and W), got {xs} and {ws}")
    kernel = ws[2:]
    strides, dilations = _ints_attr(node, "strides", 2, 1), _ints_attr(node, "dilations", 2, 1)
    pads = padding(node, 2, xs[2:], kernel, strides, dilations)
    return dict(strides=strides, padding=pads, dilation=dilations, groups=int(node.attr("group", 1)))


def _requantize(ctx: Context, acc, in_scales: list[float], out_scale: list[float], out_zp: list[int],
                out_dtype: str, axis: int):
    return ctx.call("qnn.requantize", acc, input_scale=in_scales, input_zero_point=[0], output_scale=out_scale,
                    output_zero_point=out_zp, axis=axis, out_dtype=out_dtype)


def _product_scales(a: list[float], b: list[float]) -> list[float]:
    """a * b per channel, rounded to float32 (onnxruntime's requantization input scale)."""
    return [float(np.float32(np.float32(x) * np.float32(y))) for x in a for y in b] if len(a) == 1 or len(b) == 1 \
        else [float(np.float32(np.float32(x) * np.float32(y))) for x, y in zip(a, b)]


def _int_bias(ctx: Context, acc, bias, channels: int):
    if bias is None:
        return acc
    if ctx.dtype(bias) != "int32" or ctx.shape(bias) != (channels,):
        raise NodeError(f"bias B must be int32 of shape ({channels},), got {ctx.dtype(bias)} {ctx.shape(bias)}")
    shaped = ctx.call("reshape", bias, newshape=(channels, 1, 1)) if len(ctx.shape(acc)) == 4 else bias
    return ctx.call("add", acc, shaped)


@converter("QLinearConv", (10,), check=lambda attrs: [] if attrs.get("auto_pad", "NOTSET") in
           ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER") else ["bad auto_pad"])
def _qlinear_conv(node: Node, ctx: Context):
    x, w = node.required(0, "x"), node.required(3, "w")
    xs, xzp, _ = _qparams(node, ctx, 1, 2, "x")
    ws, wzp, _ = _qparams(node, ctx, 4, 5, "w")
    ys, yzp, ydtype = _qparams(node, ctx, 6, 7, "y")
    if len(xzp) != 1:
        raise NodeError("x zero point must be one value (per-tensor)")
    acc = ctx.call("qnn.conv2d", x, w, input_zero_point=xzp[0], kernel_zero_point=wzp, **_conv_attrs(node, ctx, x, w))
    channels = ctx.shape(w)[0]
    acc = _int_bias(ctx, acc, node.input(8), channels)
    return [_requantize(ctx, acc, _product_scales(xs, ws), ys, yzp, ydtype, axis=1)]


@converter("ConvInteger", (10,))
def _conv_integer(node: Node, ctx: Context):
    x, w = node.required(0, "x"), node.required(1, "w")
    xzp = ctx.constant_input(node, 2, "x zero point")
    wzp = ctx.constant_input(node, 3, "w zero point")
    return [ctx.call("qnn.conv2d", x, w, input_zero_point=0 if xzp is None else int(xzp.reshape(-1)[0]),
                     kernel_zero_point=[0] if wzp is None else [int(v) for v in wzp.reshape(-1)],
                     **_conv_attrs(node, ctx, x, w))]


def _matmul_int(ctx: Context, a, b, azp: int, bzp: list[int]):
    """Integer MatMul of 2-D or batched operands (op/qnn.py qmatmul_nd: 2-D qnn.matmul calls)."""
    try:
        return qmatmul_nd(ctx.call, a, b, ctx.shape(a), ctx.shape(b), azp, bzp)
    except ValueError as exc:
        raise NodeError(str(exc)) from None


@converter("MatMulInteger", (10,))
def _matmul_integer(node: Node, ctx: Context):
    a, b = node.required(0, "A"), node.required(1, "B")
    azp = ctx.constant_input(node, 2, "a zero point")
    bzp = ctx.constant_input(node, 3, "b zero point")
    return [_matmul_int(ctx, a, b, 0 if azp is None else int(azp.reshape(-1)[0]),
                       [0] if bzp is None else [int(v) for v in bzp.reshape(-1)])]


@converter("QLinearMatMul", (10, 21))
def _qlinear_matmul(node: Node, ctx: Context):
    a, b = node.required(0, "a"), node.required(3, "b")
    as_, azp, _ = _qparams(node, ctx, 1, 2, "a")
    bs, bzp, _ = _qparams(node, ctx, 4, 5, "b")
    ys, yzp, ydtype = _qparams(node, ctx, 6, 7, "y")
    if len(azp) != 1 or len(as_) != 1:
        raise NodeError("a scale and zero point must be per-tensor")
    acc = _matmul_int(ctx, a, b, azp[0], bzp)
    return [_requantize(ctx, acc, _product_scales(as_, bs), ys, yzp, ydtype, axis=-1)]


def _qlinear_binary(ir_op: str):
    def convert(node: Node, ctx: Context):
        a, b = node.required(0, "A"), node.required(3, "B")
        as_, azp, _ = _qparams(node, ctx, 1, 2, "A")
        bs, bzp, _ = _qparams(node, ctx, 4, 5, "B")
        cs, czp, _ = _qparams(node, ctx, 6, 7, "C")
        if max(len(v) for v in (as_, azp, bs, bzp, cs, czp)) != 1:
            raise NodeError("scales and zero points must be per-tensor")
        return [ctx.call(ir_op, a, b, lhs_scale=as_, lhs_zero_point=azp[0], rhs_scale=bs, rhs_zero_point=bzp[0],
                         output_scale=cs, output_zero_point=czp[0])]
    return convert


MS_TABLE["QLinearAdd"] = Converter("QLinearAdd", (1,), _qlinear_binary("qnn.add"))
MS_TABLE["QLinearMul"] = Converter("QLinearMul", (1,), _qlinear_binary("qnn.mul"))


def _qgemm(node: Node, ctx: Context):
    """com.microsoft QGemm: (A - a_zp) (B - b_zp) [+ C int32], requantized to y or, without y_scale, float."""
    a, b = node.required(0, "A"), node.required(3, "B")
    as_, azp, _ = _qparams(node, ctx, 1, 2, "A")
    bs, bzp, _ = _qparams(node, ctx, 4, 5, "B")
    if len(azp) != 1 or len(as_) != 1:
        raise NodeError("A scale and zero point must be per-tensor")
    if int(node.attr("transA", 0)):
        raise NodeError("transA=1 is not supported")
    if int(node.attr("transB", 0)):
        acc = ctx.call("qnn.dense", a, b, input_zero_point=azp[0], kernel_zero_point=bzp)
        channels = ctx.shape(b)[0]
    else:
        acc = _matmul_int(ctx, a, b, azp[0], bzp)
        channels = ctx.shape(b)[1]
    acc = _int_bias(ctx, acc, node.input(6), channels)
    alpha = np.float32(node.attr("alpha", 1.0))
    scales = [float(np.float32(np.float32(s) * alpha)) for s in _product_scales(as_, bs)]
    if node.input(7) is None:
        return [ctx.call("qnn.dequantize", acc, scale=scales, zero_point=[0], axis=-1)]
    ys, yzp, ydtype = _qparams(node, ctx, 7, 8, "y")
    return [_requantize(ctx, acc, scales, ys, yzp, ydtype, axis=-1)]


def _qlinear_global_avg_pool(node: Node, ctx: Context):
    """com.microsoft QLinearGlobalAveragePool (NCHW): the sum over H x W as a depthwise qnn.conv2d with a
    kernel of ones, requantized by x_scale / (y_scale * H * W) in float32 (onnxruntime's order)."""
    if int(node.attr("channels_last", 0)):
        raise NodeError("channels_last=1 is not supported")
    x = node.required(0, "X")
    xs, xzp, _ = _qparams(node, ctx, 1, 2, "x")
    ys, yzp, ydtype = _qparams(node, ctx, 3, 4, "y")
    shape = ctx.shape(x)
    if len(shape) != 4 or max(len(v) for v in (xs, xzp, ys, yzp)) != 1:
        raise NodeError("only 4-D NCHW input with per-tensor scales is supported")
    return [global_avg_pool_int(ctx.call, x, shape, ctx.dtype(x), xs[0], xzp[0], ys[0], yzp[0], ydtype)]


MS_TABLE["QGemm"] = Converter("QGemm", (1,), _qgemm)
MS_TABLE["QLinearGlobalAveragePool"] = Converter("QLinearGlobalAveragePool", (1,), _qlinear_global_avg_pool)
