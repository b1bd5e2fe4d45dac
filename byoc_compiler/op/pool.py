"""2-D pooling: nn.max_pool2d, nn.avg_pool2d, nn.global_avg_pool2d (NCHW).

Output size (per spatial axis, `pad` = before + after, `k` the dilated window):
floor mode  (size + pad - k) // stride + 1;
ceil mode   ceil((size + pad - k) / stride) + 1, minus one when the last window
            would start in the trailing padding (ONNX and PyTorch drop it; it has
            no input element). Checked against onnxruntime in tests/test_ops.py.
A window may then hang over the trailing padding; positions past the padding
are never counted. avg_pool2d divides by the number of input elements in the
window, or with count_include_pad by the positions inside input + padding; on
integers it rounds half to even, or half away from zero with rounding="tflite".
"""
from __future__ import annotations

import numpy as np

from .attr_forms import all_non_negative, all_positive, padding4, pair
from .conv import strided_window
from .registry import Attr, OpTypeError, float_result, register
from .tflite_math import average_pool_divide
from .typecheck import FLOAT, shape_text, tensor_arg, tensor_type


def pool_out_size(size: int, pad_before: int, pad_after: int, kernel: int, stride: int, dilation: int,
                  ceil_mode: bool) -> int:
    span = size + pad_before + pad_after - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + pad_before:
        out -= 1
    return out


def _infer_pool(name):
    def infer(types, attrs):
        data = tensor_arg(name, "data", types[0], FLOAT + ("int8", "uint8", "int16"), ndim=4)
        pt, pl, pb, pr = attrs.padding
        sizes = []
        for axis, (before, after) in zip((2, 3), ((pt, pb), (pl, pr))):
            k, s, d = (attrs.pool_size[axis - 2], attrs.strides[axis - 2], attrs.dilation[axis - 2])
            extent = d * (k - 1) + 1
            if max(before, after) >= extent:
                raise OpTypeError(name, "padding", f"padding smaller than the pool window ({extent})",
                                  f"padding {attrs.padding}")
            out = pool_out_size(data.shape[axis], before, after, k, s, d, attrs.ceil_mode)
            if out < 1:
                raise OpTypeError(name, "data", f"spatial size at least the pool window {attrs.pool_size}",
                                  f"shape {shape_text(data.shape)}")
            sizes.append(out)
        return tensor_type(data.shape[:2] + tuple(sizes), data.dtype)
    return infer


def _windows(x: np.ndarray, attrs, fill: float):
    """(windows, inside_input, inside_padding): per kernel offset, the strided views of the
    padded input and of two masks, each [N, C, OH, OW]."""
    pt, pl, pb, pr = attrs.padding
    (kh, kw), (dh, dw) = attrs.pool_size, attrs.dilation
    h, w = x.shape[2:]
    out_h = pool_out_size(h, pt, pb, kh, attrs.strides[0], dh, attrs.ceil_mode)
    out_w = pool_out_size(w, pl, pr, kw, attrs.strides[1], dw, attrs.ceil_mode)
    # Room for ceil-mode windows that hang past the declared padding.
    extra_h = max(0, (out_h - 1) * attrs.strides[0] + dh * (kh - 1) + 1 - (h + pt + pb))
    extra_w = max(0, (out_w - 1) * attrs.strides[1] + dw * (kw - 1) + 1 - (w + pl + pr))
    widths = ((0, 0), (0, 0), (pt, pb + extra_h), (pl, pr + extra_w))
    padded = np.pad(x, widths, constant_values=fill)
    in_input = np.pad(np.ones((1, 1, h, w)), widths)
    in_padding = np.pad(np.ones((1, 1, h + pt + pb, w + pl + pr)), ((0, 0), (0, 0), (0, extra_h), (0, extra_w)))
    for y in range(kh):
        for z in range(kw):
            yield tuple(strided_window(a, y * dh, z * dw, out_h, out_w, attrs.strides)
                        for a in (padded, in_input, in_padding))


def _max_pool_ref(args, attrs):
    x = args[0].astype(np.float64)
    best = None
    for window, _, _ in _windows(x, attrs, -np.inf):
        best = window if best is None else np.maximum(best, window)
    return best.astype(args[0].dtype)   # integers: the max of exact values, exact


def _avg_pool_ref(args, attrs):
    x = args[0].astype(np.float64)
    total = count = 0.0
    for window, in_input, in_padding in _windows(x, attrs, 0.0):
        total = total + window
        count = count + (in_padding if attrs.count_include_pad else in_input)
    if args[0].dtype.kind in "iu" and attrs.rounding == "tflite":   # TFLite's: ties away from zero
        return average_pool_divide(total.astype(np.int64), np.maximum(count, 1.0).astype(np.int64)).astype(
            args[0].dtype)
    if args[0].dtype.kind in "iu":   # integer data: the integer mean, rounded half to even (exact sums)
        return divide_round_even(total.astype(np.int64), np.maximum(count, 1.0).astype(np.int64)).astype(args[0].dtype)
    return float_result(total / np.maximum(count, 1.0), args[0])


def divide_round_even(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """round(total / count) for integers, ties to even (count > 0)."""
    a = np.abs(total)
    q, r = a // count, a % count
    q = q + ((2 * r > count) | ((2 * r == count) & (q % 2 == 1)))
    return np.where(total < 0, -q, q)


def _pool_attrs(*extra: Attr) -> tuple[Attr, ...]:
    return (
        Attr("pool_size", "ints", (1, 1), convert=pair, check=all_positive),
        Attr("strides", "ints", (1, 1), convert=pair, check=all_positive),
        Attr("dilation", "ints", (1, 1), convert=pair, check=all_positive),
        Attr("padding", "ints", (0, 0, 0, 0), convert=padding4, check=all_non_negative),
        Attr("layout", "str", "NCHW", choices=("NCHW",)),
        Attr("ceil_mode", "bool", False),
    ) + extra


register("nn.max_pool2d", ("data",), _pool_attrs(), infer=_infer_pool("nn.max_pool2d"), ref=_max_pool_ref,
         family="nn", doc="2-D max pooling; padding never wins")
register("nn.avg_pool2d", ("data",), _pool_attrs(Attr("count_include_pad", "bool", False),
                                                 Attr("rounding", "str", "half_even", choices=("half_even", "tflite"))),
         infer=_infer_pool("nn.avg_pool2d"), ref=_avg_pool_ref, family="nn",
         doc="2-D average pooling; int8/uint8/int16: the integer mean rounded half to even, or with rounding='tflite' "
             "half away from zero (TFLite's kernels)")


def _infer_global_pool(types, attrs):
    data = tensor_arg("nn.global_avg_pool2d", "data", types[0], FLOAT, ndim=4)
    return tensor_type(data.shape[:2] + (1, 1), data.dtype)


register("nn.global_avg_pool2d", ("data",), (Attr("layout", "str", "NCHW", choices=("NCHW",)),),
         infer=_infer_global_pool,
         ref=lambda args, attrs: float_result(args[0].astype(np.float64).mean(axis=(2, 3), keepdims=True), args[0]),
         family="nn", doc="mean over H and W -> [N, C, 1, 1]")
