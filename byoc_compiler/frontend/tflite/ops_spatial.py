"""Converters of spatial data movement: RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND.

TFLite's resizes pick source rows and columns by float32 coordinate arithmetic; the importer does that
arithmetic once (numpy float32, as the kernels' C++ does) and writes the result as constant index
vectors, so the model gathers (`take`) rows and columns of the NCHW activation. Nearest neighbour is then
exact for every dtype. int8 bilinear follows TFLite's integer kernel: coordinates in 1/1024 steps, the
four neighbours weighted by integers, the sum rounded once by 2**20 (ties away from zero).
"""
from __future__ import annotations


import numpy as np

from ...ir.expr import Constant
from ...ir.types import shape_problem
from ..graph_context import NodeError
from .qparams import INT_TYPES, same_quant
from .table import converter
from .values import Value


_MAX_RESIZE = 1 << 24


def _same_quant_io(cx, op) -> None:
    if cx.info(op.inputs[0]).dtype in INT_TYPES and not same_quant(cx.info(op.inputs[0]).quant,
                                                                   cx.info(op.outputs[0]).quant):
        raise NodeError("the input and the output are quantized differently (TFLite's kernel keeps them equal)")


def _resize_target(cx, op) -> tuple[int, int, bool, bool]:
    size = [int(v) for v in cx.const(op, 1, "size").reshape(-1)]
    out = list(cx.info(op.outputs[0]).shape)
    if len(size) != 2 or min(size) < 1 or len(out) != 4 or out[1:3] != size:
        raise NodeError(f"size {size} must be two positive integers, the output's height and width ({out})")
    problem = shape_problem(tuple(out), cx.info(op.outputs[0]).dtype or "float32")
    if not problem and max(size) > _MAX_RESIZE:
        problem = f"height or width above {_MAX_RESIZE} (byoc makes an index vector per axis at import)"
    if problem:      # before the index vectors are made
        raise NodeError(f"the output: {problem}")
    align, half = bool(op.options.get("align_corners")), bool(op.options.get("half_pixel_centers"))
    if align and half:
        raise NodeError("align_corners and half_pixel_centers together (TFLite refuses them too)")
    return size[0], size[1], align, half


def _scale(in_size: int, out_size: int, align: bool) -> np.float32:
    if align and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def nearest_indices(in_size: int, out_size: int, align: bool, half: bool) -> np.ndarray:
    """The source index of each output index, as TFLite's GetNearestNeighbor computes it (float32)."""
    scale = _scale(in_size, out_size, align)
    pos = (np.arange(out_size, dtype=np.float32) + np.float32(0.5 if half else 0.0)) * scale
    index = (np.sign(pos) * np.floor(np.abs(pos) + np.float32(0.5)) if align else np.floor(pos)).astype(np.int64)
    index = np.minimum(index, in_size - 1)
    return np.maximum(index, 0) if half else index


@converter("RESIZE_NEAREST_NEIGHBOR")
def _resize_nearest(op, cx):
    _same_quant_io(cx, op)
    x = cx.nchw(cx.value(op, 0))
    _, _, h, w = cx.shape(x)
    oh, ow, align, half = _resize_target(cx, op)
    y = cx.call("take", x, Constant(nearest_indices(h, oh, align, half).astype(np.int32)), axis=2)
    return [Value(cx.call("take", y, Constant(nearest_indices(w, ow, align, half).astype(np.int32)), axis=3), "nchw")]


def bilinear_float_weights(in_size: int, out_size: int, align: bool, half: bool):
    """(lower index, upper index, fraction) per output index: TFLite's ComputeInterpolationValues (float32)."""
    scale = _scale(in_size, out_size, align)
    pos = np.arange(out_size, dtype=np.float32)
    scaled = (pos + np.float32(0.5)) * scale - np.float32(0.5) if half else pos * scale
    lower = np.maximum(np.floor(scaled), 0).astype(np.int64)
    upper = np.minimum(np.ceil(scaled), in_size - 1).astype(np.int64)
    return lower, upper, (scaled - lower.astype(np.float32)).astype(np.float32)


def bilinear_int_weights(in_size: int, out_size: int, align: bool, half: bool):
    """(lower, upper, weight of lower, weight of upper) per output index, weights in 1/1024:
    TFLite's integer ComputeInterpolationValuesInteger."""
    if align and out_size > 1:
        scale_10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale_10 = ((1 << 10) * in_size + out_size // 2) // out_size
    pos = np.arange(out_size, dtype=np.int64)
    scaled = pos * scale_10 + scale_10 // 2 - (1 << 9) if half else pos * scale_10
    lower = np.maximum(_trunc_div(scaled, 1 << 10), 0)
    upper = np.minimum(_trunc_div(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
    frac = scaled - (lower << 10)
    return lower, upper, (1 << 10) - frac, frac


def _trunc_div(a: np.ndarray, d: int) -> np.ndarray:
    """C's integer division (towards zero), which TFLite's kernel uses on these coordinates."""
    q = np.abs(a) // d
    return np.where(a < 0, -q, q)


def _gather_weighted(cx, x, axis: int, lower, upper, w_lower, w_upper, dtype: str):
    """x gathered at `lower` and `upper` along axis, weighted: lower * w_lower + upper * w_upper."""
    shape = [1, 1, 1, 1]
    shape[axis] = len(lower)
    lo = cx.call("take", x, Constant(lower.astype(np.int32)), axis=axis)
    hi = cx.call("take", x, Constant(upper.astype(np.int32)), axis=axis)
    return cx.call("add", cx.call("multiply", lo, Constant(w_lower.astype(dtype).reshape(shape))),
                   cx.call("multiply", hi, Constant(w_upper.astype(dtype).reshape(shape))))


@converter("RESIZE_BILINEAR")
def _resize_bilinear(op, cx):
    _same_quant_io(cx, op)
    dtype = cx.info(op.inputs[0]).dtype
    x = cx.nchw(cx.value(op, 0))
    _, _, h, w = cx.shape(x)
    oh, ow, align, half = _resize_target(cx, op)
    if dtype == "float32":
        rows, cols = bilinear_float_weights(h, oh, align, half), bilinear_float_weights(w, ow, align, half)
        y = _gather_weighted(cx, x, 2, rows[0], rows[1], 1 - rows[2], rows[2], "float32")
        return [Value(_gather_weighted(cx, y, 3, cols[0], cols[1], 1 - cols[2], cols[2], "float32"), "nchw")]
    if dtype != "int8":
        raise NodeError(f"RESIZE_BILINEAR on {cx.info(op.inputs[0]).type_name} is not supported (float32, int8 are)")
    # integers in int32: each term at most 255 * 2**20, the sum below 2**31 in magnitude
    xi = cx.call("cast", x, dtype="int32")
    y = _gather_weighted(cx, xi, 2, *bilinear_int_weights(h, oh, align, half), "int32")
    y = _gather_weighted(cx, y, 3, *bilinear_int_weights(w, ow, align, half), "int32")
    nudge = cx.call("where", cx.call("greater", y, Constant(np.int32(0))), Constant(np.int32(1 << 19)),
                    Constant(np.int32(-(1 << 19))))
    y = cx.call("divide", cx.call("add", y, nudge), Constant(np.int32(1 << 20)))   # truncates, as C does
    return [Value(cx.call("cast", y, dtype="int8"), "nchw")]


def _block_and_pads(cx, op, what: str):
    """(the NHWC input, block shape, paddings or crops) of SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND."""
    _same_quant_io(cx, op)
    x = cx.plain(cx.value(op, 0))
    if len(cx.shape(x)) != 4:
        raise NodeError(f"input of shape {list(cx.shape(x))}: byoc takes 4-D (NHWC) {op.name}")
    block = [int(v) for v in cx.const(op, 1, "block shape").reshape(-1)]
    pads = cx.const(op, 2, what).astype(np.int64)
    if len(block) != 2 or min(block) < 1 or pads.shape != (2, 2) or (pads < 0).any():
        raise NodeError(f"block shape {block} and {what} {pads.tolist()}: byoc takes 4-D NHWC tensors, two positive "
                        "block sizes and non-negative (before, after) pairs")
    return x, block, pads.tolist()


@converter("SPACE_TO_BATCH_ND")
def _space_to_batch(op, cx):
    x, (bh, bw), ((top, bottom), (left, right)) = _block_and_pads(cx, op, "paddings")
    q = cx.info(op.inputs[0]).quant
    value = float(q.zero_point[0]) if cx.info(op.inputs[0]).dtype in INT_TYPES else 0.0
    x = cx.call("nn.pad", x, pad_width=((0, 0), (top, bottom), (left, right), (0, 0)), pad_value=value)
    n, h, w, c = cx.shape(x)
    if h % bh or w % bw:
        raise NodeError(f"padded size {h}x{w} is not a multiple of the block {bh}x{bw}")
    x = cx.call("reshape", x, newshape=(n, h // bh, bh, w // bw, bw, c))
    x = cx.call("transpose", x, axes=(2, 4, 0, 1, 3, 5))
    return [Value(cx.call("reshape", x, newshape=(bh * bw * n, h // bh, w // bw, c)))]


@converter("BATCH_TO_SPACE_ND")
def _batch_to_space(op, cx):
    x, (bh, bw), ((top, bottom), (left, right)) = _block_and_pads(cx, op, "crops")
    nb, h, w, c = cx.shape(x)
    if nb % (bh * bw):
        raise NodeError(f"batch {nb} is not a multiple of the block {bh}x{bw}")
    n = nb // (bh * bw)
    x = cx.call("reshape", x, newshape=(bh, bw, n, h, w, c))
    x = cx.call("transpose", x, axes=(2, 3, 0, 4, 1, 5))
    x = cx.call("reshape", x, newshape=(n, h * bh, w * bw, c))
    end = [n, h * bh - bottom, w * bw - right, c]
    if min(end[1] - top, end[2] - left) < 1:
        raise NodeError(f"crops {[[top, bottom], [left, right]]} remove the whole {h * bh}x{w * bw} image")
    return [Value(cx.call("strided_slice", x, begin=[0, top, left, 0], end=end, strides=[1, 1, 1, 1]))]


