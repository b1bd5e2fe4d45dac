"""Index-space ops: strided_slice, tile, broadcast_to.

strided_slice takes one (begin, end, stride) per axis with ONNX Slice's rules: a negative
begin/end counts from the end, then both are clamped to the axis (to [-1, dim-1] for a
negative stride, so end=-1 after clamping means "through index 0"). `slice_range` is the
one place those rules live; the element i of an axis is begin + i * stride.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call
from ..ir.types import DTYPES
from .registry import Attr, OpTypeError, make_call, register
from .typecheck import shape_text, tensor_arg, tensor_type

__all__ = ["strided_slice", "tile", "broadcast_to"]


def slice_range(dim: int, begin: int, end: int, stride: int) -> tuple[int, int]:
    """(first index, count) of ONNX Slice on an axis of size `dim`."""
    if begin < 0:
        begin += dim
    if end < 0:
        end += dim
    if stride > 0:
        begin = min(max(begin, 0), dim)
        end = min(max(end, 0), dim)
        count = max(0, -(-(end - begin) // stride))
    else:
        begin = min(max(begin, -1), dim - 1)
        end = min(max(end, -1), dim - 1)
        count = max(0, -(-(begin - end) // -stride))
    return begin, count


def _infer_strided_slice(types, attrs):
    data = tensor_arg("strided_slice", "data", types[0], DTYPES)
    n = data.ndim
    if not len(attrs.begin) == len(attrs.end) == len(attrs.strides) == n:
        raise OpTypeError("strided_slice", "data", f"a tensor of rank {len(attrs.begin)} (one begin/end/stride "
                          "per axis)", f"shape {shape_text(data.shape)}")
    if any(s == 0 for s in attrs.strides):
        raise OpTypeError("strided_slice", "strides", "non-zero strides", f"strides {list(attrs.strides)}")
    shape = [slice_range(d, b, e, s)[1] for d, b, e, s in zip(data.shape, attrs.begin, attrs.end, attrs.strides)]
    return tensor_type(shape, data.dtype)


def _strided_slice_ref(args, attrs):
    x = args[0]
    index = []
    for d, b, e, s in zip(x.shape, attrs.begin, attrs.end, attrs.strides):
        first, count = slice_range(d, b, e, s)
        index.append(first + s * np.arange(count, dtype=np.int64))
    return np.ascontiguousarray(x[np.ix_(*index)]) if index else x.copy()


register("strided_slice", ("data",), (Attr("begin", "ints"), Attr("end", "ints"), Attr("strides", "ints")),
         infer=_infer_strided_slice, ref=_strided_slice_ref, family="shape",
         doc="per axis: elements begin, begin+stride, ... before end (ONNX Slice's clamping)")


def _infer_tile(types, attrs):
    data = tensor_arg("tile", "data", types[0], DTYPES)
    if len(attrs.reps) != data.ndim or any(r < 0 for r in attrs.reps):
        raise OpTypeError("tile", "reps", f"{data.ndim} non-negative repeats (one per axis)",
                          f"reps {list(attrs.reps)}")
    return tensor_type(tuple(d * r for d, r in zip(data.shape, attrs.reps)), data.dtype)


register("tile", ("data",), (Attr("reps", "ints"),), infer=_infer_tile,
         ref=lambda args, attrs: np.tile(args[0], attrs.reps) if attrs.reps else args[0].copy(),
         family="shape", doc="repeat the tensor reps[i] times along axis i")


def broadcast_shape(shape, target) -> tuple[int, ...] | None:
    """numpy broadcasting of `shape` with `target` (ONNX Expand: both ways), None if they do not fit."""
    try:
        return tuple(np.broadcast_shapes(tuple(shape), tuple(target)))
    except ValueError:
        return None


def _infer_broadcast_to(types, attrs):
    data = tensor_arg("broadcast_to", "data", types[0], DTYPES)
    out = broadcast_shape(data.shape, attrs.shape)
    if out is None or out != tuple(attrs.shape):
        raise OpTypeError("broadcast_to", "data", f"a shape that broadcasts to {shape_text(attrs.shape)}",
                          f"shape {shape_text(data.shape)}")
    return tensor_type(out, data.dtype)


register("broadcast_to", ("data",), (Attr("shape", "ints"),), infer=_infer_broadcast_to,
         ref=lambda args, attrs: np.ascontiguousarray(np.broadcast_to(args[0], attrs.shape)),
         family="shape", doc="numpy broadcasting of data to shape")


def strided_slice(data, begin, end, strides) -> Call:
    return make_call("strided_slice", data, begin=begin, end=end, strides=strides)


def tile(data, reps) -> Call:
    return make_call("tile", data, reps=reps)


def broadcast_to(data, shape) -> Call:
    return make_call("broadcast_to", data, shape=shape)
