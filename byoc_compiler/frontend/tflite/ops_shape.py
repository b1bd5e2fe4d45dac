"""Converters of data movement and reductions: reshape, concatenation, padding, transpose, slicing, mean.

On quantized tensors these ops move values without rescaling, so they need (as TFLite's kernels do)
the same scale and zero point on input and output.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir.expr import Constant, Tuple
from ..graph_context import NodeError
from .qparams import INT_TYPES, fused_activation, per_tensor, requantize, same_quant
from .table import converter
from .values import NHWC_AXIS_IN_NCHW, TO_NCHW, Value


def _same_quant_io(cx, op, inputs=None) -> None:
    if cx.info(op.inputs[0]).dtype not in INT_TYPES:
        return
    out_q = cx.info(op.outputs[0]).quant
    for i in (inputs if inputs is not None else [op.inputs[0]]):
        if not same_quant(cx.info(i).quant, out_q):
            raise NodeError(f"input {cx.info(i).name!r} and the output are quantized differently; byoc moves "
                            "quantized values only between equal scales and zero points, as TFLite Micro does")


def _out_shape(cx, op, index: int = 0) -> tuple[int, ...]:
    return tuple(cx.info(op.outputs[index]).shape)


@converter("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def _reshape(op, cx):
    _same_quant_io(cx, op)
    v = cx.value(op, 0)
    shape = _out_shape(cx, op)
    if v.layout == "nchw" and len(shape) == 2:
        n, c, h, w = cx.shape(v.expr)
        if shape == (n, c * h * w):
            flat = cx.call("reshape", v.expr, newshape=shape)
            if c == 1 or h * w == 1:          # NCHW and NHWC flatten to the same order
                return [Value(flat)]
            return [Value(flat, "flat_nchw", (n, h, w, c))]
    x = cx.plain(v)
    if math.prod(cx.shape(x)) != math.prod(shape):
        raise NodeError(f"cannot reshape {list(cx.shape(x))} to {list(shape)}")
    return [Value(cx.call("reshape", x, newshape=shape))]


@converter("CONCATENATION")
def _concat(op, cx):
    _same_quant_io(cx, op, op.inputs)
    values = [cx.value(op, i) for i in range(len(op.inputs))]
    exprs, layout = cx.like(values)
    rank = len(cx.info(op.outputs[0]).shape)
    axis = op.options.get("axis", 0) % max(rank, 1)
    if layout == "nchw":
        axis = NHWC_AXIS_IN_NCHW[axis]
    dtype = cx.info(op.inputs[0]).dtype
    y = cx.call("concatenate", Tuple(list(exprs)), axis=axis)
    out_q = cx.info(op.outputs[0]).quant
    return [Value(fused_activation(cx, op, y, out_q, dtype), layout)]


@converter("PAD", "PADV2", "MIRROR_PAD")
def _pad(op, cx):
    _same_quant_io(cx, op)
    v = cx.value(op, 0)
    pads = cx.const(op, 1, "paddings").astype(np.int64)
    dtype = cx.info(op.inputs[0]).dtype
    if pads.ndim != 2 or pads.shape[1] != 2 or (pads < 0).any():
        raise NodeError(f"paddings {pads.tolist()} must be non-negative (before, after) pairs")
    x, layout = (v.expr, "nchw") if v.layout == "nchw" else (cx.plain(v), "plain")
    if layout == "nchw":
        pads = pads[list(TO_NCHW)]
    value = 0.0
    if op.name == "PADV2" and cx.has_input(op, 2):
        value = float(cx.const(op, 2, "constant value").reshape(-1)[0])
    elif dtype in INT_TYPES:
        value = float(cx.info(op.outputs[0]).quant.zero_point[0])
    mode = "constant"
    if op.name == "MIRROR_PAD":
        mode = {0: "reflect", 1: "symmetric"}.get(op.options.get("mode", 0))
        if mode != "reflect":
            raise NodeError("MIRROR_PAD mode SYMMETRIC is not supported (REFLECT is)")
    y = cx.call("nn.pad", x, pad_width=tuple(tuple(int(p) for p in row) for row in pads), pad_value=value,
                pad_mode=mode)
    return [Value(y, layout)]


@converter("TRANSPOSE")
def _transpose(op, cx):
    v = cx.value(op, 0)
    perm = tuple(int(p) for p in cx.const(op, 1, "permutation").reshape(-1))
    if v.layout == "nchw" and perm == TO_NCHW:        # the value already is NCHW
        return [Value(v.expr)]
    return [Value(cx.call("transpose", cx.plain(v), axes=perm))]


_REDUCERS = {"MEAN": "mean", "SUM": "sum", "REDUCE_MAX": "max"}


@converter("MEAN", "SUM", "REDUCE_MAX")
def _reduce(op, cx):
    v = cx.value(op, 0)
    rank = len(cx.info(op.inputs[0]).shape)
    axes = sorted({int(a) % rank for a in cx.const(op, 1, "axes").reshape(-1)}) if rank else []
    keep = bool(op.options.get("keep_dims", False))
    dtype = cx.info(op.inputs[0]).dtype
    if dtype in INT_TYPES and op.name == "REDUCE_MAX":
        _same_quant_io(cx, op)
    nchw = v.layout == "nchw" and (keep or _kept_order_same(axes))
    red_axes = tuple(NHWC_AXIS_IN_NCHW[a] for a in axes) if nchw else tuple(axes)

    x = v.expr if nchw else cx.plain(v)
    layout = "nchw" if nchw and keep else "plain"
    if dtype in INT_TYPES and op.name != "REDUCE_MAX":
        if dtype not in ("int8", "int16"):
            raise NodeError(f"{op.name} on {dtype} is not supported (TFLite Micro computes int8 and int16)")
        (s, z), (os_, oz) = (per_tensor(cx.quant(op.inputs[0], "the input"), "the input"),
                             per_tensor(cx.quant(op.outputs[0], "the output"), "the output"))
        name = "qnn.mean" if op.name == "MEAN" else "qnn.sum"
        return [Value(cx.call(name, x, axis=red_axes, keepdims=keep, input_scale=s, input_zero_point=z,
                              output_scale=os_, output_zero_point=oz), layout)]
    return [Value(cx.call(_REDUCERS[op.name], x, axis=red_axes, keepdims=keep), layout)]


@converter("ARG_MAX", "ARG_MIN")
def _arg(op, cx):
    x = cx.plain(cx.value(op, 0))
    axis = cx.const(op, 1, "axis").reshape(-1)
    if axis.size != 1:
        raise NodeError(f"axis {axis.tolist()}: one axis")
    dst = cx.info(op.outputs[0]).dtype
    if dst not in ("int32", "int64"):
        raise NodeError(f"output type {cx.info(op.outputs[0]).type_name} is not supported (int32, int64 are)")
    y = cx.call("argmax" if op.name == "ARG_MAX" else "argmin", x, axis=int(axis[0]), keepdims=False)
    return [Value(y if dst == "int64" else cx.call("cast", y, dtype=dst))]


def _kept_order_same(axes) -> bool:
    """Whether dropping `axes` from NCHW leaves the remaining axes in TFLite's (NHWC) order."""
    kept_nhwc = [a for a in range(4) if a not in axes]
    kept_nchw = [a for a in (0, 3, 1, 2) if a not in axes]
    return kept_nhwc == kept_nchw


# int8 products summed in float32 stay exact while every partial sum is an integer below 2**24
_EXACT_FLOAT_SUM = 2 ** 24


@converter("BATCH_MATMUL")
def _batch_matmul(op, cx):
    dtype = cx.info(op.inputs[0]).dtype
    a, b = cx.plain(cx.value(op, 0)), cx.plain(cx.value(op, 1))
    flags = dict(transpose_a=bool(op.options.get("adj_x")), transpose_b=bool(op.options.get("adj_y")))
    if dtype == "float32":
        return [Value(cx.call("nn.batch_matmul", a, b, **flags))]
    if dtype != "int8" or cx.info(op.inputs[1]).dtype != "int8":
        raise NodeError(f"BATCH_MATMUL of {dtype} x {cx.info(op.inputs[1]).dtype} is not supported (int8 x int8 is)")
    (sa, za), (sb, zb) = (per_tensor(cx.quant(op.inputs[i], f"input {i}"), f"input {i}") for i in (0, 1))
    out_q = cx.quant(op.outputs[0], "the output")
    depth = cx.shape(a)[-2 if flags["transpose_a"] else -1]
    if depth * 255 * 255 >= _EXACT_FLOAT_SUM:
        raise NodeError(f"int8 BATCH_MATMUL over a depth of {depth} (byoc sums it exactly up to depth 258)")
    # exact integer sums of (a - za) * (b - zb), then TFLite's requantization of the int32 result
    af = cx.call("subtract", cx.call("cast", a, dtype="float32"), Constant(np.float32(za)))
    bf = cx.call("subtract", cx.call("cast", b, dtype="float32"), Constant(np.float32(zb)))
    acc = cx.call("cast", cx.call("nn.batch_matmul", af, bf, **flags), dtype="int32")
    nd = len(cx.shape(acc))
    return [Value(requantize(cx, acc, [sa * sb], out_q, nd - 1, "int8"))]


@converter("GATHER")
def _gather(op, cx):
    _same_quant_io(cx, op)
    if op.options.get("batch_dims", 0):
        raise NodeError("batch_dims is not supported")
    x = cx.plain(cx.value(op, 0))
    indices = cx.plain(cx.value(op, 1))
    return [Value(cx.call("take", x, indices, axis=op.options.get("axis", 0)))]


@converter("SLICE")
def _slice(op, cx):
    _same_quant_io(cx, op)
    x = cx.plain(cx.value(op, 0))
    shape = cx.shape(x)
    begin = [int(b) for b in cx.const(op, 1, "begin").reshape(-1)]
    size = [int(s) for s in cx.const(op, 2, "size").reshape(-1)]
    end = [d if s == -1 else b + s for b, s, d in zip(begin, size, shape)]
    return [Value(cx.call("strided_slice", x, begin=begin, end=end, strides=[1] * len(begin)))]


@converter("PACK")
def _pack(op, cx):
    _same_quant_io(cx, op, op.inputs)
    axis = op.options.get("axis", 0)
    parts = [cx.call("expand_dims", cx.plain(cx.value(op, i)), axis=axis) for i in range(len(op.inputs))]
    return [Value(cx.call("concatenate", Tuple(parts), axis=axis))]


@converter("SPLIT", "SPLIT_V")
def _split(op, cx):
    data_pos, axis_pos = (1, 0) if op.name == "SPLIT" else (0, 2)
    x = cx.plain(cx.value(op, data_pos))
    rank = len(cx.shape(x))
    axis = int(cx.const(op, axis_pos, "axis").reshape(-1)[0]) % rank
    sizes = [cx.info(o).shape[axis] for o in op.outputs]
    points = list(np.cumsum(sizes)[:-1])
    parts = cx.call("split", x, indices_or_sections=[int(p) for p in points], axis=axis)
    return [Value(cx.g.item(parts, i)) for i in range(len(op.outputs))]


@converter("UNPACK")
def _unpack(op, cx):
    x = cx.plain(cx.value(op, 0))
    axis = op.options.get("axis", 0) % len(cx.shape(x))
    n = cx.shape(x)[axis]
    parts = cx.call("split", x, indices_or_sections=n, axis=axis) if n > 1 else None
    items = [cx.g.item(parts, i) for i in range(n)] if parts is not None else [x]
    return [Value(cx.call("squeeze", item, axis=[axis])) for item in items]


@converter("STRIDED_SLICE")
def _strided_slice(op, cx):
    o = op.options
    if o.get("ellipsis_mask") or o.get("new_axis_mask") or o.get("offset"):
        raise NodeError("ellipsis_mask, new_axis_mask and offset are not supported")
    _same_quant_io(cx, op)
    x = cx.plain(cx.value(op, 0))
    shape = cx.shape(x)
    begin = [int(b) for b in cx.const(op, 1, "begin").reshape(-1)]
    end = [int(e) for e in cx.const(op, 2, "end").reshape(-1)]
    strides = [int(s) for s in cx.const(op, 3, "strides").reshape(-1)]
    for i, dim in enumerate(shape[:len(begin)]):
        if o.get("begin_mask", 0) >> i & 1:
            begin[i] = 0 if strides[i] > 0 else dim - 1
        if o.get("end_mask", 0) >> i & 1:
            end[i] = dim if strides[i] > 0 else -dim - 1
        if o.get("shrink_axis_mask", 0) >> i & 1:
            end[i] = begin[i] + 1 if begin[i] != -1 else dim
    y = cx.call("strided_slice", x, begin=begin, end=end, strides=strides)
    return [Value(cx.call("reshape", y, newshape=_out_shape(cx, op)))]

