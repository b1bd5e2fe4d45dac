"""image.resize: N-D nearest / linear / cubic resampling with ONNX Resize's coordinate rules.

Resampling is separable: along each axis, output position o reads `taps` input positions
with weights (`resize_taps`), and an N-D output element is the weighted sum over every
combination of its axes' taps. The taps follow ONNX Resize (opset 11-19): the coordinate
transformation maps o to a source coordinate x; the n nearest input positions to x (ties to
the smaller) are read, clamped to the axis (edge padding); the weights are the nearest
pick, the linear hat or the cubic kernel (with `antialias`, the kernel stretched by 1/scale
when downsampling); `exclude_outside` drops positions outside the axis and renormalizes;
with tf_crop_and_resize a source coordinate outside the axis gives extrapolation_value.
The reference applies the axes one at a time in float64 and rounds once.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.expr import Call
from .registry import Attr, OpTypeError, float_result, make_call, register
from .typecheck import FLOAT, shape_text, tensor_arg, tensor_type

__all__ = ["resize"]

METHODS = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source_coordinate(mode: str, o: int, scale: float, size_in: int, size_out: int, roi) -> float:
    length = scale * size_in     # ONNX uses the un-rounded output length in these formulas
    if mode == "align_corners":
        return 0.0 if length == 1 else o * (size_in - 1) / (length - 1)
    if mode == "asymmetric":
        return o / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if length == 1:
            return (end - start) * (size_in - 1) / 2 + start * (size_in - 1)
        return o * (end - start) * (size_in - 1) / (length - 1) + start * (size_in - 1)
    if mode == "pytorch_half_pixel":
        return -0.5 if length == 1 else (o + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = size_in / 2 * (1 - size_out / length)
        return offset + (o + 0.5) / scale - 0.5
    return (o + 0.5) / scale - 0.5   # half_pixel


def _cubic(x: float, a: float) -> float:
    x = abs(x)
    if x <= 1:
        return (a + 2) * x ** 3 - (a + 3) * x ** 2 + 1
    if x < 2:
        return a * x ** 3 - 5 * a * x ** 2 + 8 * a * x - 4 * a
    return 0.0


def _weights(method: str, ratio: float, scale: float, attrs) -> list[float]:
    """Weights of the taps at offsets start..start+n-1, where `ratio` in (0, 1] is how far the source
    coordinate lies past the tap just before it."""
    if method == "nearest":
        if ratio == 1:
            return [0.0, 1.0]
        mode = attrs["nearest_mode"]
        right = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5,
                 "floor": False, "ceil": True}[mode]
        return [0.0, 1.0] if right else [1.0, 0.0]
    if method == "linear":
        if not attrs["antialias"]:
            return [1 - ratio, ratio]
        s = min(scale, 1.0)
        first = math.floor(-1 / s) + 1
        w = [max(0.0, 1 - abs((i - ratio) * s)) for i in range(first, 2 - first)]
        return [v / sum(w) for v in w]
    a = attrs["cubic_coeff_a"]
    if not attrs["antialias"]:
        return [_cubic(ratio + 1, a), _cubic(ratio, a), _cubic(1 - ratio, a), _cubic(2 - ratio, a)]
    s = min(scale, 1.0)
    first = math.floor(-2 / s) + 1
    w = [_cubic(s * (i - ratio), a) for i in range(first, 2 - first)]
    return [v / sum(w) for v in w]


def resize_taps(size_in: int, size_out: int, scale: float, roi, attrs):
    """(index [out, n] int64, weight [out, n] float64, extrapolate [out] bool) of one axis."""
    identity = size_out == size_in and math.isclose(scale, 1.0) and (
        roi is None or (math.isclose(roi[0], 0.0) and math.isclose(roi[1], 1.0)))
    if identity or size_out == 0:
        return (np.arange(size_out, dtype=np.int64)[:, None], np.ones((size_out, 1)), np.zeros(size_out, bool))
    method, mode = attrs["method"], attrs["coordinate_transformation_mode"]
    rows_i, rows_w, outside = [], [], []
    for o in range(size_out):
        x = _source_coordinate(mode, o, scale, size_in, size_out, roi)
        outside.append(mode == "tf_crop_and_resize" and (x < 0 or x > size_in - 1))
        below = math.floor(x)
        ratio = 1.0 if x == below else x - below
        w = _weights(method, ratio, scale, attrs)
        n = len(w)
        # The n nearest positions, ties to the smaller: for even n the window ends at ceil(x) + n/2 - 1.
        start = math.ceil(x) - n // 2 if n % 2 == 0 else math.ceil(x - 0.5) - (n - 1) // 2
        idx = list(range(start, start + n))
        if attrs["exclude_outside"]:
            w = [0.0 if not 0 <= i < size_in else v for i, v in zip(idx, w)]
            total = sum(w)
            w = [v / total for v in w] if total else w
        rows_i.append([min(max(i, 0), size_in - 1) for i in idx])
        rows_w.append(w)
    index, weight = np.array(rows_i, np.int64), np.array(rows_w, np.float64)
    if method == "nearest":   # one tap: the chosen position (never 0 * inf from the other one)
        pick = np.argmax(weight, axis=1)
        index = index[np.arange(size_out), pick][:, None]
        weight = np.ones((size_out, 1))
    return index, weight, np.array(outside, bool)


def axis_taps(shape, attrs):
    """resize_taps of every axis of an input of `shape`."""
    rank = len(shape)
    roi = attrs["roi"]
    out = []
    for a in range(rank):
        axis_roi = None if not roi else (roi[a], roi[a + rank])
        out.append(resize_taps(shape[a], attrs["size"][a], attrs["scales"][a], axis_roi, attrs))
    return out


def _infer(types, attrs):
    data = tensor_arg("image.resize", "data", types[0], FLOAT)
    rank = data.ndim
    if len(attrs.size) != rank or len(attrs.scales) != rank:
        raise OpTypeError("image.resize", "data", f"a {len(attrs.size)}-D tensor (size and scales give one value "
                          "per axis)", f"shape {shape_text(data.shape)}")
    if attrs.roi and len(attrs.roi) != 2 * rank:
        raise OpTypeError("image.resize", "roi", f"{2 * rank} values (starts then ends)", f"{len(attrs.roi)} values")
    if any(s <= 0 for s in attrs.scales):
        raise OpTypeError("image.resize", "scales", "positive scales", f"scales {list(attrs.scales)}")
    if any(d == 0 for d in data.shape) and any(d for d in attrs.size):
        raise OpTypeError("image.resize", "data", "a non-empty tensor", f"shape {shape_text(data.shape)}")
    return tensor_type(attrs.size, data.dtype)


def _ref(args, attrs):
    x = args[0].astype(np.float64)
    for axis, (index, weight, outside) in enumerate(axis_taps(x.shape, attrs)):
        gathered = np.take(x, index, axis=axis)           # [..., out, n, ...]
        wshape = (1,) * axis + weight.shape + (1,) * (x.ndim - axis - 1)
        x = (gathered * weight.reshape(wshape)).sum(axis=axis + 1)
        if outside.any():
            mask = outside.reshape((1,) * axis + (-1,) + (1,) * (x.ndim - axis - 1))
            x = np.where(mask, attrs["extrapolation_value"], x)
    return float_result(x, args[0])


register("image.resize", ("data",),
         (Attr("size", "ints"), Attr("scales", "floats"), Attr("roi", "floats", ()),
          Attr("method", "str", "nearest", choices=METHODS),
          Attr("coordinate_transformation_mode", "str", "half_pixel", choices=COORDINATE_MODES),
          Attr("nearest_mode", "str", "round_prefer_floor", choices=NEAREST_MODES),
          Attr("cubic_coeff_a", "float", -0.75), Attr("exclude_outside", "bool", False),
          Attr("extrapolation_value", "float", 0.0), Attr("antialias", "bool", False)),
         infer=_infer, ref=_ref, family="nn",
         doc="resample every axis to `size` (nearest, linear, cubic; ONNX Resize's coordinate modes)")


def resize(data, size, scales, method="nearest", **attrs) -> Call:
    return make_call("image.resize", data, size=size, scales=scales, method=method, **attrs)
