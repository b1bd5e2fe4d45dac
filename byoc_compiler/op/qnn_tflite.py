"""TFLite-only quantized ops: qnn.softmax (int8, output scale 1/256 and zero point -128; int16, 1/32768 and 0),
qnn.subtract, the quantized reductions qnn.mean / qnn.sum and qnn.l2_normalize (int8, output scale 1/128 and
zero point 0), in TFLite's fixed point.

qnn.softmax's reference is op/tflite_fixedpoint.py's `softmax` (int16: op/tflite_softmax16.py); the host kernel
computes the same steps from the same tables. qnn.subtract is TFLite's SUB: its ADD with the second input's multiplier negated
(op/tflite_math.py). qnn.mean and qnn.sum sum the raw integers in int32 and rescale the sum (less the zero
point times the count) once by MultiplyByQuantizedMultiplier, MEAN's multiplier carrying 1/count
(tflite_math.reduce_multiplier). Host kernels: backend/host_kernels/tflite_qnn.py.
"""
from __future__ import annotations

import numpy as np

from . import tflite_math, tflite_softmax16 as softmax16
from .qnn import _BIN_ATTRS, _infer_qbinary, saturate, tflite_add_params
from .reduce import reduce_axes, reduced_shape
from .registry import Attr, OpTypeError, register
from .tflite_fixedpoint import l2_normalize, softmax, softmax_params
from .typecheck import normalize_axis, tensor_arg, tensor_type


def _infer(types, attrs):
    data = tensor_arg("qnn.softmax", "data", types[0], ("int8", "int16"))
    if data.ndim == 0:
        raise OpTypeError("qnn.softmax", "data", "a tensor of rank >= 1", "a scalar")
    axis = normalize_axis("qnn.softmax", "axis", attrs.axis, data.ndim)
    if data.dtype == "int16" and data.shape[axis] > 65536:     # the int32 sum of int16 exps must not overflow
        raise OpTypeError("qnn.softmax", "data", "at most 65536 int16 values along the axis",
                          f"shape {list(data.shape)}")
    try:
        (softmax16.input_multiplier if data.dtype == "int16" else softmax_params)(attrs.input_scale, attrs.beta)
    except ValueError as exc:
        raise OpTypeError("qnn.softmax", "input_scale", "input_scale * beta TFLite's multiplier represents",
                          str(exc)) from None
    return tensor_type(data.shape, data.dtype)


def _ref(args, attrs):
    x = args[0]
    fn = softmax16.softmax if x.dtype == np.int16 else softmax
    return fn(x, attrs.input_scale, attrs.beta, attrs.axis % x.ndim)


def _positive(value) -> str | None:
    return None if value > 0 else "must be positive"


register("qnn.softmax", ("data",),
         (Attr("input_scale", "float", check=_positive), Attr("beta", "float", 1.0, check=_positive),
          Attr("axis", "int", -1), Attr("rounding", "str", "tflite", choices=("tflite",))),
         infer=_infer, ref=_ref, family="qnn",
         doc="softmax of int8 data along axis, output scale 1/256 and zero point -128, as TFLite's int8 kernel "
             "computes it (fixed-point exp and reciprocal); int16 data (16x8): output scale 1/32768 and zero "
             "point 0, TFLite's int16 kernel (interpolated exp and reciprocal tables, op/tflite_softmax16.py)")


def _sub_ref(args, attrs):
    dtype = str(args[0].dtype)
    return saturate(tflite_math.add(args[0], args[1], attrs.lhs_zero_point, attrs.rhs_zero_point,
                                    attrs.output_zero_point, tflite_add_params(attrs, dtype), dtype, subtract=True),
                    dtype)


register("qnn.subtract", ("lhs", "rhs"), _BIN_ATTRS + (Attr("rounding", "str", "tflite", choices=("tflite",)),),
         infer=_infer_qbinary("qnn.subtract"), ref=_sub_ref, family="qnn",
         doc="saturate(round((lhs - zl) * sl/so - (rhs - zr) * sr/so) + zo): TFLite's SUB (inputs shifted left by "
             "20, three multipliers, the second negated)")


def reduce_params(name: str, data_shape, attrs) -> tuple[tuple[int, ...], int, int, int]:
    """(reduced axes, element count per output, M, e) of qnn.mean / qnn.sum on data of `data_shape`."""
    axes = reduce_axes(name, len(data_shape), attrs.axis)
    count = int(np.prod([data_shape[a] for a in axes], dtype=np.int64))
    m, e = tflite_math.reduce_multiplier(attrs.input_scale, attrs.output_scale, count, name == "qnn.mean")
    return axes, count, m, e


def _infer_reduce(name):
    def infer(types, attrs):
        data = tensor_arg(name, "data", types[0], ("int8", "int16"))
        axes = reduce_axes(name, data.ndim, attrs.axis)
        if any(data.shape[a] == 0 for a in axes):
            raise OpTypeError(name, "data", "non-empty reduced axes", f"shape {list(data.shape)}")
        try:
            reduce_params(name, data.shape, attrs)
        except ValueError as exc:
            raise OpTypeError(name, "input_scale", "input_scale / output_scale below 2**30", str(exc)) from None
        return tensor_type(reduced_shape(data.shape, axes, attrs.keepdims), data.dtype)
    return infer


def _reduce_ref(name):
    def ref(args, attrs):
        x = args[0]
        axes, count, m, e = reduce_params(name, x.shape, attrs)
        total = x.astype(np.int64).sum(axis=axes, keepdims=True) if axes else x.astype(np.int64)
        out = tflite_math.reduce_rescale(total, count, attrs.input_zero_point, attrs.output_zero_point, m, e,
                                         str(x.dtype))
        return out.reshape(reduced_shape(x.shape, axes, attrs.keepdims))
    return ref


def _float_scale(name: str) -> Attr:
    return Attr(name, "float", check=_positive)


for _name, _what in (("qnn.mean", "mean"), ("qnn.sum", "sum")):
    register(_name, ("data",),
             (Attr("axis", "ints_or_none", None), Attr("keepdims", "bool", False), _float_scale("input_scale"),
              Attr("input_zero_point", "int", 0), _float_scale("output_scale"), Attr("output_zero_point", "int", 0),
              Attr("rounding", "str", "tflite", choices=("tflite",))),
             infer=_infer_reduce(_name), ref=_reduce_ref(_name), family="qnn",
             doc=f"the {_what} of int8/int16 data over axis (None: all) rescaled to the output's quantization as "
                 f"TFLite's quantized {_what.upper()} computes it (an int32 sum, one MultiplyByQuantizedMultiplier"
                 + (" whose multiplier carries 1/count)" if _what == "mean" else ")"))


def _infer_l2(types, attrs):
    data = tensor_arg("qnn.l2_normalize", "data", types[0], ("int8",))
    if data.ndim == 0:
        raise OpTypeError("qnn.l2_normalize", "data", "a tensor of rank >= 1", "a scalar")
    normalize_axis("qnn.l2_normalize", "axis", attrs.axis, data.ndim)
    return tensor_type(data.shape, "int8")


register("qnn.l2_normalize", ("data",),
         (Attr("input_zero_point", "int", 0), Attr("axis", "int", -1),
          Attr("rounding", "str", "tflite", choices=("tflite",))),
         infer=_infer_l2, ref=lambda args, attrs: l2_normalize(args[0], attrs.input_zero_point,
                                                               attrs.axis % args[0].ndim),
         family="qnn",
         doc="x / sqrt(sum of squares along axis) of int8 data (less its zero point), output scale 1/128 and zero "
             "point 0, as TFLite's int8 L2_NORMALIZATION computes it (a fixed-point inverse square root per row)")
