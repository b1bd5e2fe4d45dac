"""Converters of TFLite's layers: convolutions, fully connected, pooling, softmax and the S-shaped activations.

Quantized layers are the integer ops with TFLite's arithmetic (qnn.conv2d/qnn.dense summing exact
int32 products, then qnn.requantize rounding="tflite" with the factor input scale x weight scale /
output scale in double, then the fused activation's clamp).
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.expr import Constant
from ...op.tflite_fixedpoint import sigmoid_table
from ..graph_context import NodeError
from .qparams import (INT_TYPES, activation_name, fused_activation, int16_refusal, per_tensor, requantize,
                      same_quant)
from .schema import enum_names
from .table import converter
from .values import Value


def same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite's SAME padding (before, after): the output is ceil(size / stride), the extra pad after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _padding(op, h: int, w: int, kh: int, kw: int, sh: int, sw: int, dh: int = 1, dw: int = 1) -> tuple:
    bad = [f"{name} {value}" for name, value in (("kernel height", kh), ("kernel width", kw), ("stride_h", sh),
                                                 ("stride_w", sw), ("dilation_h", dh), ("dilation_w", dw))
           if value < 1]
    if bad:
        raise NodeError(f"{', '.join(bad)}: strides, dilations and window sizes must be positive")
    kind = enum_names("Padding").get(op.options.get("padding", 0), "?")
    if kind == "VALID":
        return (0, 0, 0, 0)
    if kind != "SAME":
        raise NodeError(f"padding {kind} is not supported")
    top, bottom = same_padding(h, kh, sh, dh)
    left, right = same_padding(w, kw, sw, dw)
    return (top, left, bottom, right)


def _check_int_dtype(cx, op, dtype: str) -> None:
    if dtype not in ("float32", "int8", "uint8", "int16"):
        raise NodeError(f"input type {cx.info(op.inputs[0]).type_name} is not supported")
    if dtype == "int16":
        check_16x8(cx, op)


def check_16x8(cx, op) -> None:
    """int16 activations (TFLite's 16x8 quantization): symmetric (zero point 0: TFLite's 16x8 kernels add no
    offsets) and, for the layers with weights, int8 weights."""
    for index in [i for i in (*op.inputs, *op.outputs) if i >= 0 and cx.info(i).dtype == "int16"]:
        q = cx.quant(index, "the int16")
        if any(int(z) != 0 for z in q.zero_point):
            raise NodeError(f"int16 tensor {cx.info(index).name!r} has zero point {list(q.zero_point)}; "
                            "TFLite's 16x8 quantization is symmetric (zero point 0)")
    if op.name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") and cx.info(op.inputs[1]).dtype != "int8":
        raise NodeError(f"int16 input with {cx.info(op.inputs[1]).type_name} weights; 16x8 takes int8 weights")


def _accumulator(cx, op, dtype: str, position: int) -> str:
    """The dtype TFLite sums a quantized layer in: int64 for 16x8 unless the bias is int32, int32 otherwise."""
    bias = cx.info(op.inputs[position]).dtype if cx.has_input(op, position) else None
    if bias not in (None, "int32", "int64") or (bias == "int64" and dtype != "int16"):
        raise NodeError(f"a {bias} bias with {dtype} input (TFLite's biases: int32, or int64 for int16 input)")
    return "int64" if dtype == "int16" and bias != "int32" else "int32"


def _weight_scales(cx, op, axis_ok: int) -> list[float]:
    wq = cx.quant(op.inputs[1], "the filter")
    if any(int(z) != 0 for z in wq.zero_point) and cx.info(op.inputs[1]).dtype == "int8":
        raise NodeError("int8 weights with a non-zero zero point (TFLite's int8 weights are symmetric)")
    if len(wq.scale) > 1 and wq.axis != axis_ok:
        raise NodeError(f"weights quantized along dimension {wq.axis}; TFLite uses dimension {axis_ok}")
    return list(wq.scale)


def _bias(cx, op, y, position: int, shape_of_one):
    if not cx.has_input(op, position):
        return y
    bias = cx.const(op, position, "bias")
    if bias.size != int(np.prod(shape_of_one)):
        raise NodeError(f"the bias has {bias.size} values (shape {list(bias.shape)}); expected one per output "
                        f"channel, {int(np.prod(shape_of_one))}")
    return cx.call("add", y, Constant(np.ascontiguousarray(bias.reshape(shape_of_one))))


def _conv_weight(cx, op, in_channels: int) -> tuple[np.ndarray, int]:
    w = cx.const(op, 1, "filter")
    if w.ndim != 4:
        raise NodeError(f"the filter has shape {list(w.shape)}; expected 4-D")
    if op.name == "CONV_2D":                       # OHWI -> OIHW
        if w.shape[3] == 0 or in_channels % w.shape[3]:
            raise NodeError(f"filter {list(w.shape)} does not fit {in_channels} input channels")
        return np.ascontiguousarray(w.transpose(0, 3, 1, 2)), in_channels // w.shape[3]
    if w.shape[0] != 1 or in_channels == 0 or w.shape[3] % in_channels:   # depthwise: 1HW(C*M) -> (C*M)1HW
        raise NodeError(f"depthwise filter {list(w.shape)} does not fit {in_channels} input channels")
    return np.ascontiguousarray(w[0].transpose(2, 0, 1)[:, None]), in_channels


@converter("CONV_2D", "DEPTHWISE_CONV_2D")
def _conv(op, cx):
    dtype = cx.info(op.inputs[0]).dtype
    _check_int_dtype(cx, op, dtype)
    x = cx.nchw(cx.value(op, 0))
    _, c, h, w = cx.shape(x)
    weight, groups = _conv_weight(cx, op, c)
    o = op.options
    sh, sw = o.get("stride_h", 1), o.get("stride_w", 1)
    dh, dw = o.get("dilation_h_factor", 1), o.get("dilation_w_factor", 1)
    kh, kw = weight.shape[2:]
    attrs = dict(strides=(sh, sw), dilation=(dh, dw), groups=groups, padding=_padding(op, h, w, kh, kw, sh, sw, dh, dw),
                 channels=weight.shape[0], kernel_size=(kh, kw))
    bias_shape = (1, weight.shape[0], 1, 1)
    if dtype == "float32":
        y = _bias(cx, op, cx.call("nn.conv2d", x, Constant(weight), **attrs), 2, bias_shape)
        return [Value(fused_activation(cx, op, y, None, dtype), "nchw")]
    x_scale, x_zp = per_tensor(cx.quant(op.inputs[0], "the input"), "the input")
    out_q = cx.quant(op.outputs[0], "the output")
    w_scales = _weight_scales(cx, op, 0 if op.name == "CONV_2D" else 3)
    acc = cx.call("qnn.conv2d", x, Constant(weight), input_zero_point=x_zp, kernel_zero_point=[0],
                  out_dtype=_accumulator(cx, op, dtype, 2), **attrs)
    acc = _bias(cx, op, acc, 2, bias_shape)
    y = requantize(cx, acc, [x_scale * s for s in w_scales], out_q, 1, dtype)
    return [Value(fused_activation(cx, op, y, out_q, dtype), "nchw")]


def _fc_input(cx, op, k: int, weight: np.ndarray):
    """(input expression, weight) with the weight's columns permuted when the input is an NCHW flatten."""
    v = cx.value(op, 0)
    if v.layout == "flat_nchw" and v.nhwc[1] * v.nhwc[2] * v.nhwc[3] == k:
        _, h, w, c = v.nhwc
        order = np.arange(h * w * c).reshape(h, w, c).transpose(2, 0, 1).ravel()
        return v.expr, np.ascontiguousarray(weight[:, order])
    x = cx.plain(v)
    shape = cx.shape(x)
    if not shape or shape[-1] != k:
        total = math.prod(shape)
        if k == 0 or total % k:
            raise NodeError(f"input of shape {list(shape)} cannot be flattened to rows of {k}")
        x = cx.call("reshape", x, newshape=(total // k, k))
    return x, weight


@converter("FULLY_CONNECTED")
def _fully_connected(op, cx):
    dtype = cx.info(op.inputs[0]).dtype
    _check_int_dtype(cx, op, dtype)
    if op.options.get("weights_format", 0) != 0:
        raise NodeError("shuffled weights (weights_format SHUFFLED4x16INT8) are not supported")
    if op.options.get("asymmetric_quantize_inputs"):
        raise NodeError("asymmetric_quantize_inputs (a dynamic-range quantized model) is not supported")
    weight = cx.const(op, 1, "weights")
    if weight.ndim != 2:
        raise NodeError(f"weights of shape {list(weight.shape)}; expected (units, depth)")
    x, weight = _fc_input(cx, op, weight.shape[1], weight)
    nd = len(cx.shape(x))
    if dtype == "float32":
        y = _bias(cx, op, cx.call("nn.dense", x, Constant(weight)), 2, (weight.shape[0],))
        y = fused_activation(cx, op, y, None, dtype)
    else:
        x_scale, x_zp = per_tensor(cx.quant(op.inputs[0], "the input"), "the input")
        out_q = cx.quant(op.outputs[0], "the output")
        w_scales = _weight_scales(cx, op, 0)
        acc = cx.call("qnn.dense", x, Constant(weight), input_zero_point=x_zp, kernel_zero_point=[0],
                      out_dtype=_accumulator(cx, op, dtype, 2))
        acc = _bias(cx, op, acc, 2, (weight.shape[0],))
        # per tensor, TFLite multiplies the two scales in float32 before going to double
        products = [float(np.float32(x_scale) * np.float32(w_scales[0]))] if len(w_scales) == 1 else \
            [x_scale * s for s in w_scales]
        y = fused_activation(cx, op, requantize(cx, acc, products, out_q, nd - 1, dtype), out_q, dtype)
    out_shape = cx.info(op.outputs[0]).shape
    if tuple(cx.shape(y)) != tuple(out_shape) and math.prod(out_shape) == math.prod(cx.shape(y)):
        y = cx.call("reshape", y, newshape=tuple(out_shape))
    return [Value(y)]


@converter("AVERAGE_POOL_2D", "MAX_POOL_2D")
def _pool(op, cx):
    dtype = cx.info(op.inputs[0]).dtype
    _check_int_dtype(cx, op, dtype)
    x = cx.nchw(cx.value(op, 0))
    _, _, h, w = cx.shape(x)
    o = op.options
    kh, kw, sh, sw = o.get("filter_height", 1), o.get("filter_width", 1), o.get("stride_h", 1), o.get("stride_w", 1)
    attrs = dict(pool_size=(kh, kw), strides=(sh, sw), padding=_padding(op, h, w, kh, kw, sh, sw))
    out_q = None
    if dtype in INT_TYPES:
        out_q = cx.quant(op.outputs[0], "the output")
        if not same_quant(cx.quant(op.inputs[0], "the input"), out_q):
            raise NodeError("the input and output quantization differ (TFLite's pools keep them equal)")
    if op.name == "MAX_POOL_2D":
        y = cx.call("nn.max_pool2d", x, **attrs)
    elif dtype in INT_TYPES:
        y = cx.call("nn.avg_pool2d", x, rounding="tflite", **attrs)
    else:
        y = cx.call("nn.avg_pool2d", x, **attrs)
    return [Value(fused_activation(cx, op, y, out_q, dtype), "nchw")]


def float_path(cx, op, fn, layout_ok: bool = True):
    """An op on int8 data computed in float: dequantize, fn, quantize with TFLite's rounding.
    (Not TFLite's integer kernel: equal to it except near rounding ties.)"""
    v = cx.value(op, 0)
    x = v.expr if layout_ok else cx.plain(v)
    layout = v.layout if layout_ok else "plain"
    dtype = cx.info(op.inputs[0]).dtype
    if dtype == "float32":
        return [Value(fn(x, layout), layout)]
    if dtype == "int16":
        raise NodeError(int16_refusal(op.name))
    if dtype not in ("int8", "uint8"):
        raise NodeError(f"input type {cx.info(op.inputs[0]).type_name} is not supported")
    s, zp = per_tensor(cx.quant(op.inputs[0], "the input"), "the input")
    os_, ozp = per_tensor(cx.quant(op.outputs[0], "the output"), "the output")
    f = cx.call("qnn.dequantize", x, scale=[s], zero_point=[zp])
    y = cx.call("qnn.quantize", fn(f, layout), scale=[os_], zero_point=[ozp], out_dtype=dtype, rounding="tflite")
    return [Value(y, layout)]


def _fixed_output(cx, op, scale: float, zero_point: int) -> None:
    q = cx.quant(op.outputs[0], "the output")
    if len(q.scale) != 1 or np.float32(q.scale[0]) != np.float32(scale) or q.zero_point[0] != zero_point:
        raise NodeError(f"int8 {op.name} needs the output scale {scale} and zero point {zero_point} (TFLite's "
                        f"kernels assume them); the model has {list(q.scale)}, {list(q.zero_point)}")


def _near_output(cx, op, scale: float) -> None:
    """int16 SOFTMAX's output scale: within 0.1% of `scale` (TFLite's check; its kernel assumes `scale`)."""
    q = cx.quant(op.outputs[0], "the output")
    if len(q.scale) != 1 or abs(float(q.scale[0]) - scale) > 0.001 * scale:
        raise NodeError(f"int16 {op.name} needs the output scale {scale} (TFLite's kernel assumes it); the model "
                        f"has {list(q.scale)}")


@converter("SOFTMAX")
def _softmax(op, cx):
    beta = float(np.float32(op.options.get("beta", 1.0)))
    dtype = cx.info(op.inputs[0]).dtype
    if dtype in ("int8", "int16"):
        if dtype == "int16":
            check_16x8(cx, op)
            _near_output(cx, op, 1.0 / 32768)
        else:
            _fixed_output(cx, op, 1.0 / 256, -128)
        v = cx.value(op, 0)
        scale, _ = per_tensor(cx.quant(op.inputs[0], "the input"), "the input")
        axis = 1 if v.layout == "nchw" else -1
        return [Value(cx.call("qnn.softmax", v.expr, input_scale=scale, beta=beta, axis=axis), v.layout)]

    def fn(x, layout):
        if beta != 1.0:
            x = cx.call("multiply", x, Constant(np.float32(beta)))
        return cx.call("nn.softmax", x, axis=1 if layout == "nchw" else -1)
    return float_path(cx, op, fn)


def table_lookup(cx, op, make_table):
    """An int8 operator with one input whose output depends on each element alone (TFLite's LOGISTIC, TANH,
    RSQRT): `make_table()` gives its 256 outputs for inputs -128..127, computed with TFLite's integer
    arithmetic at import; the model looks them up (`take`)."""
    v = cx.value(op, 0)
    index = cx.call("add", cx.call("cast", v.expr, dtype="int32"), Constant(np.int32(128)))
    try:
        table = Constant(make_table())
    except (ValueError, OverflowError) as exc:
        raise NodeError(f"the quantization scales cannot be rescaled the way TFLite's kernel does: {exc}") from None
    return [Value(cx.call("take", table, index, axis=0), v.layout, v.nhwc)]


def _sigmoid_lookup(cx, op, kind: str):
    """int8 LOGISTIC / TANH: TFLite's fixed-point result for each of the 256 inputs, looked up."""
    _fixed_output(cx, op, *((1.0 / 256, -128) if kind == "logistic" else (1.0 / 128, 0)))
    scale, zp = per_tensor(cx.quant(op.inputs[0], "the input"), "the input")
    return table_lookup(cx, op, lambda: sigmoid_table(kind, scale, zp))


@converter("LOGISTIC")
def _logistic(op, cx):
    if cx.info(op.inputs[0]).dtype == "int8":
        return _sigmoid_lookup(cx, op, "logistic")
    return float_path(cx, op, lambda x, _: cx.call("sigmoid", x))


@converter("TANH")
def _tanh(op, cx):
    if cx.info(op.inputs[0]).dtype == "int8":
        return _sigmoid_lookup(cx, op, "tanh")
    return float_path(cx, op, lambda x, _: cx.call("tanh", x))


def _zero_inserted(cx, x, sh: int, sw: int, value: float):
    """NCHW x with sh - 1 rows and sw - 1 columns of `value` after each row and column (the last ones dropped):
    the input of a transposed convolution seen as an ordinary one."""
    n, c, h, w = cx.shape(x)
    if sh == sw == 1:
        return x
    y = cx.call("reshape", x, newshape=(n, c, h, 1, w, 1))
    y = cx.call("nn.pad", y, pad_width=((0, 0), (0, 0), (0, 0), (0, sh - 1), (0, 0), (0, sw - 1)), pad_value=value)
    y = cx.call("reshape", y, newshape=(n, c, h * sh, w * sw))
    return cx.call("strided_slice", y, begin=[0, 0, 0, 0], end=[n, c, (h - 1) * sh + 1, (w - 1) * sw + 1],
                   strides=[1, 1, 1, 1])


def _transpose_conv_input(cx, op, x, value: float, kh: int, kw: int, out_hw):
    """The zero-inserted input padded (or cropped) so that a stride-1 convolution with the flipped filter
    computes TFLite's TRANSPOSE_CONV: output row o sums input row i, filter row f where i * stride - top + f = o,
    `top` TFLite's padding for a convolution from the output's size back to the input's."""
    sh, sw = op.options.get("stride_h", 1), op.options.get("stride_w", 1)
    top, left, _, _ = _padding(op, out_hw[0], out_hw[1], kh, kw, sh, sw)
    d = _zero_inserted(cx, x, sh, sw, value)
    n, c, dh, dw = cx.shape(d)
    before = [kh - 1 - top, kw - 1 - left]
    after = [out_hw[0] + top - dh, out_hw[1] + left - dw]
    begin = [0, 0, max(0, -before[0]), max(0, -before[1])]
    end = [n, c, dh - max(0, -after[0]), dw - max(0, -after[1])]
    if begin[2:] != [0, 0] or end[2:] != [dh, dw]:
        d = cx.call("strided_slice", d, begin=begin, end=end, strides=[1, 1, 1, 1])
    pads = ((0, 0), (0, 0), (max(0, before[0]), max(0, after[0])), (max(0, before[1]), max(0, after[1])))
    return cx.call("nn.pad", d, pad_width=pads, pad_value=value) if any(sum(p) for p in pads) else d


@converter("TRANSPOSE_CONV")
def _transpose_conv(op, cx):
    """TRANSPOSE_CONV(output shape, filter OHWI, input, bias): a stride-1 convolution with the filter flipped
    over the zero-inserted, padded input (exact: the same integer products are summed)."""
    x = cx.nchw(cx.value(op, 2))
    x_index = op.inputs[2]
    dtype = cx.info(x_index).dtype
    if dtype == "int16":
        raise NodeError(int16_refusal(op.name))
    if dtype not in ("float32", "int8"):
        raise NodeError(f"input type {cx.info(x_index).type_name} is not supported (float32, int8 are)")
    out_shape = [int(v) for v in cx.const(op, 0, "output shape").reshape(-1)]
    if out_shape != list(cx.info(op.outputs[0]).shape):
        raise NodeError(f"output shape {out_shape} differs from the output tensor's {list(cx.info(op.outputs[0]).shape)}")
    w = cx.const(op, 1, "filter")
    if w.ndim != 4 or len(out_shape) != 4 or w.shape[3] != cx.shape(x)[1] or w.shape[0] != out_shape[3]:
        raise NodeError(f"filter {list(w.shape)} does not fit input {list(cx.shape(x))} and output {out_shape}")
    weight = np.ascontiguousarray(w.transpose(0, 3, 1, 2)[:, :, ::-1, ::-1])      # OHWI -> OIHW, flipped
    kh, kw = weight.shape[2:]
    attrs = dict(strides=(1, 1), padding=(0, 0, 0, 0), channels=weight.shape[0], kernel_size=(kh, kw))
    bias_shape = (1, weight.shape[0], 1, 1)
    if dtype == "float32":
        d = _transpose_conv_input(cx, op, x, 0.0, kh, kw, out_shape[1:3])
        y = _bias(cx, op, cx.call("nn.conv2d", d, Constant(weight), **attrs), 3, bias_shape)
        return [Value(fused_activation(cx, op, y, None, dtype), "nchw")]
    x_scale, x_zp = per_tensor(cx.quant(x_index, "the input"), "the input")
    out_q = cx.quant(op.outputs[0], "the output")
    w_scales = _weight_scales(cx, op, 0)
    d = _transpose_conv_input(cx, op, x, float(x_zp), kh, kw, out_shape[1:3])
    acc = cx.call("qnn.conv2d", d, Constant(weight), input_zero_point=x_zp, kernel_zero_point=[0], **attrs)
    acc = _bias(cx, op, acc, 3, bias_shape)
    y = requantize(cx, acc, [x_scale * s for s in w_scales], out_q, 1, dtype)
    return [Value(fused_activation(cx, op, y, out_q, dtype), "nchw")]


@converter("L2_NORMALIZATION")
def _l2_normalization(op, cx):
    """x / sqrt(sum of x**2) over the last axis; int8 as TFLite computes it (output 1/128, zero point 0)."""
    v = cx.value(op, 0)
    dtype = cx.info(op.inputs[0]).dtype
    if activation_name(op) != "NONE":
        raise NodeError(f"fused activation {activation_name(op)} is not supported")
    axis = 1 if v.layout == "nchw" else -1
    if dtype == "int8":
        _fixed_output(cx, op, 1.0 / 128, 0)
        _, zp = per_tensor(cx.quant(op.inputs[0], "the input"), "the input")
        return [Value(cx.call("qnn.l2_normalize", v.expr, input_zero_point=zp, axis=axis), v.layout, v.nhwc)]
    if dtype != "float32":
        raise NodeError(f"L2_NORMALIZATION on {cx.info(op.inputs[0]).type_name} is not supported (float32, int8 are)")
    # TFLite's float kernel: x / max(sqrt(sum of squares), 1e-6)
    norm = cx.call("sqrt", cx.call("sum", cx.call("multiply", v.expr, v.expr), axis=[axis], keepdims=True))
    norm = cx.call("maximum", norm, Constant(np.float32(1e-6)))
    return [Value(cx.call("divide", v.expr, norm), v.layout, v.nhwc)]
