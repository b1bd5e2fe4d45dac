"""qnn.avg_pool2d: an int8/uint8 average pool that rescales, computed as onnxruntime's QLinearAveragePool.

onnxruntime (the QOperator op and a QDQ DequantizeLinear -> AveragePool -> QuantizeLinear it fuses into
it) averages in float32: every element dequantized (float32(x - x_zp) * x_scale), summed in float32
in window order (rows, then columns; padding is not added), divided by the count in float32, and
quantized as nearbyint(float32(y / y_scale) + y_zp). An integer mean rounded half to even is not the
same: where the mean is an exact tie (a 2x2 pool: one output in eight), the float rounding errors
pick the side, so the integer form differs by one step on about 3% of such a pool's outputs (the
1 LSB of concat-heavy QDQ CNNs, whose transition layers are 2x2 average pools). The count is the
input elements in the window, or with count_include_pad the whole kernel (onnxruntime's choice).
"""
from __future__ import annotations

import numpy as np

from .pool import _infer_pool, _pool_attrs, _windows
from .qnn import Q8, _scale, global_avg_pool_int, saturate
from .registry import Attr, register
from .typecheck import tensor_arg


def _infer(types, attrs):
    tensor_arg("qnn.avg_pool2d", "data", types[0], Q8, ndim=4)
    return _infer_pool("qnn.avg_pool2d")(types, attrs)


def _ref(args, attrs):
    x = args[0]
    f = np.float32
    real = (x.astype(np.int64) - attrs.input_zero_point).astype(f) * f(attrs.input_scale[0])
    total, count = None, 0.0
    for window, in_input, _ in _windows(real, attrs, 0.0):      # window order: rows, then columns
        total = window.astype(f) if total is None else (total + window).astype(f)
        count = count + in_input
    if attrs.count_include_pad:
        count = np.full_like(count, attrs.pool_size[0] * attrs.pool_size[1])
    mean = (total / np.maximum(count, 1.0).astype(f)).astype(f)
    v = (mean / f(attrs.output_scale[0])).astype(f) + f(attrs.output_zero_point)
    return saturate(np.rint(v.astype(f)).astype(np.int64), str(x.dtype))


register("qnn.avg_pool2d", ("data",),
         _pool_attrs(Attr("count_include_pad", "bool", False), _scale("input_scale"), Attr("input_zero_point", "int", 0),
                     _scale("output_scale"), Attr("output_zero_point", "int", 0)),
         infer=_infer, ref=_ref, family="qnn",
         doc="2-D average pool of int8/uint8 data in float32, as onnxruntime's QLinearAveragePool: "
             "nearbyint(sum(float32(x - xz) * xs) / count / ys + yz), sums in window order")


def avg_pool_int(call, x, shape, pool: dict, dtype: str, x_params: tuple[float, int], y_params: tuple[float, int]):
    """onnxruntime's quantized average pool of x (NCHW `shape`) with the attributes `pool` of an
    nn.avg_pool2d: over the whole plane with no padding its integer global pool (the kernel switches to
    it), else qnn.avg_pool2d."""
    whole = tuple(pool["pool_size"]) == tuple(shape[2:]) and not any(pool["padding"])
    if whole and tuple(pool["dilation"]) == (1, 1):
        return global_avg_pool_int(call, x, shape, dtype, *x_params, *y_params, dtype)
    window = {k: v for k, v in pool.items() if k != "rounding"}     # the integer mean's rounding: not used here
    return call("qnn.avg_pool2d", x, input_scale=[x_params[0]], input_zero_point=int(x_params[1]),
                output_scale=[y_params[0]], output_zero_point=int(y_params[1]), **window)
