"""TFLite-only quantized ops: qnn.softmax (int8, output scale 1/256 and zero point -128) and qnn.subtract,
in TFLite's fixed point.

qnn.softmax's reference is op/tflite_fixedpoint.py's `softmax`; the host kernel computes the same steps from
the same exp table. qnn.subtract is TFLite's SUB: its ADD with the second input's multiplier negated
(op/tflite_math.py). Host kernels: backend/host_kernels/tflite_qnn.py.
"""
from __future__ import annotations

from . import tflite_math
from .qnn import _BIN_ATTRS, _infer_qbinary, saturate, tflite_add_params
from .registry import Attr, OpTypeError, register
from .tflite_fixedpoint import softmax, softmax_params
from .typecheck import normalize_axis, tensor_arg, tensor_type


def _infer(types, attrs):
    data = tensor_arg("qnn.softmax", "data", types[0], ("int8",))
    if data.ndim == 0:
        raise OpTypeError("qnn.softmax", "data", "a tensor of rank >= 1", "a scalar")
    normalize_axis("qnn.softmax", "axis", attrs.axis, data.ndim)
    try:
        softmax_params(attrs.input_scale, attrs.beta)
    except ValueError as exc:
        raise OpTypeError("qnn.softmax", "input_scale", "input_scale * beta below 32", str(exc)) from None
    return tensor_type(data.shape, "int8")


def _ref(args, attrs):
    x = args[0]
    return softmax(x, attrs.input_scale, attrs.beta, attrs.axis % x.ndim)


def _positive(value) -> str | None:
    return None if value > 0 else "must be positive"


register("qnn.softmax", ("data",),
         (Attr("input_scale", "float", check=_positive), Attr("beta", "float", 1.0, check=_positive),
          Attr("axis", "int", -1), Attr("rounding", "str", "tflite", choices=("tflite",))),
         infer=_infer, ref=_ref, family="qnn",
         doc="softmax of int8 data along axis, output scale 1/256 and zero point -128, as TFLite's int8 kernel "
             "computes it (fixed-point exp and reciprocal)")


def _sub_ref(args, attrs):
    dtype = str(args[0].dtype)
    return saturate(tflite_math.add(args[0], args[1], attrs.lhs_zero_point, attrs.rhs_zero_point,
                                    attrs.output_zero_point, tflite_add_params(attrs, dtype), dtype, subtract=True),
                    dtype)


register("qnn.subtract", ("lhs", "rhs"), _BIN_ATTRS + (Attr("rounding", "str", "tflite", choices=("tflite",)),),
         infer=_infer_qbinary("qnn.subtract"), ref=_sub_ref, family="qnn",
         doc="saturate(round((lhs - zl) * sl/so - (rhs - zr) * sr/so) + zo): TFLite's SUB (inputs shifted left by "
             "20, three multipliers, the second negated)")
