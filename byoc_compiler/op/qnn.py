"""Quantized ops (`qnn.*`): quantize, dequantize, requantize, conv2d, dense, matmul, add, mul, concatenate.

Scales and zero points are attributes (constants of the model): one value (per tensor) or one per
channel along `axis`. The references are integer arithmetic (qnn_math): conv2d/dense/matmul sum
exact integer products into int32 (their float64 evaluation is exact: every sum stays far below
2**53), rescaling uses a fixed-point multiplier and shift with round half to even, results saturate.
quantize and dequantize are the ONNX formulas in float32, as onnxruntime computes them.
"""
from __future__ import annotations

import numpy as np

from .attr_forms import all_positive
from .conv import CONV2D_ATTRS, _infer_conv2d, conv2d_float64
from ..ir.attrs import Attrs
from ..ir.expr import Constant
from .registry import Attr, OpTypeError, get_op_def, register
from . import tflite_math
from .qnn_math import (QUANT_DTYPES, along, fixed_point, requantize_array, requantize_float32, round_shift, saturate,
                       scale_ratio)
from .typecheck import broadcast_shapes, normalize_axis, same_dtype, shape_text, tensor_arg, tensor_type

Q8 = ("int8", "uint8")
# which arithmetic a quantized op follows: onnxruntime's ("float32"), integer-only ("fixed_point"), TFLite's
REQUANTIZE_ROUNDINGS = ("float32", "fixed_point", "tflite", "tflite_single")
QIN = ("int8", "uint8", "int16", "uint16", "int32", "int64")
# conv2d/dense operands: int8/uint8 x int8/uint8, or TFLite's 16x8 (int16 data x int8 weights) whose sums
# TFLite keeps in int64 when the bias is int64 (out_dtype "int64"), in int32 otherwise
_QDATA = (*Q8, "int16")
ACC_DTYPES = ("int32", "int64")


def _positive_scales(value) -> str | None:
    return None if value and all(v > 0 and np.isfinite(v) for v in value) else "must be positive and finite"


def _scale(name: str) -> Attr:
    return Attr(name, "floats", check=_positive_scales)


def _zero_point(name: str) -> Attr:
    return Attr(name, "ints", (0,))


def _per_channel(op: str, argument: str, ty, axis: int, attrs, names: tuple[str, ...]) -> int:
    """Check that every per-channel attribute has 1 or shape[axis] values; the normalized axis."""
    if all(len(attrs[n]) == 1 for n in names):   # per tensor: the axis does not matter
        return 0
    ax = normalize_axis(op, "axis", axis, max(ty.ndim, 1)) if ty.ndim else 0
    extent = ty.shape[ax] if ty.ndim else 1
    for n in names:
        count = len(attrs[n])
        if count not in (1, extent):
            raise OpTypeError(op, n, f"1 value or {extent} (one per channel along axis {ax})", f"{count} values")
    return ax


def _range_check(op: str, name: str, values, dtype: str) -> None:
    info = np.iinfo(dtype)
    if any(not info.min <= v <= info.max for v in values):
        raise OpTypeError(op, name, f"zero points in the range of {dtype}", f"{list(values)}")


# ---- quantize / dequantize / requantize -----------------------------------------------------------

def _infer_quantize(types, attrs):
    data = tensor_arg("qnn.quantize", "data", types[0], ("float32",))
    _per_channel("qnn.quantize", "data", data, attrs.axis, attrs, ("scale", "zero_point"))
    _range_check("qnn.quantize", "zero_point", attrs.zero_point, attrs.out_dtype)
    return tensor_type(data.shape, attrs.out_dtype)


def _quantize_ref(args, attrs):
    x = args[0]
    ax = attrs.axis % x.ndim if x.ndim else 0
    s = along(attrs.scale, ax, x.ndim, np.float32)
    zp = along(attrs.zero_point, ax, x.ndim, np.float32)
    with np.errstate(all="ignore"):
        q = x / s                                    # float32 division
        if attrs.rounding == "tflite":               # TFLite's TfLiteRound: ties away from zero
            t = np.trunc(q)
            v = t + np.where(np.abs(q - t) >= 0.5, np.sign(q), 0) + zp
        else:
            v = np.rint(q) + zp                      # ties to even (ONNX QuantizeLinear)
    info = np.iinfo(attrs.out_dtype)
    v = np.where(np.isnan(v), 0.0, np.clip(v, info.min, info.max))
    return v.astype(attrs.out_dtype)


register("qnn.quantize", ("data",),
         (_scale("scale"), _zero_point("zero_point"), Attr("axis", "int", 1),
          Attr("out_dtype", "str", "int8", choices=QUANT_DTYPES),
          Attr("rounding", "str", "half_even", choices=("half_even", "tflite"))),
         infer=_infer_quantize, ref=_quantize_ref, family="qnn",
         doc="saturate(round_half_even(data / scale) + zero_point), float32 -> out_dtype (NaN -> 0); "
             "rounding='tflite': ties away from zero (TFLite's QUANTIZE)")


def _infer_dequantize(types, attrs):
    data = tensor_arg("qnn.dequantize", "data", types[0], QIN)
    _per_channel("qnn.dequantize", "data", data, attrs.axis, attrs, ("scale", "zero_point"))
    return tensor_type(data.shape, "float32")


def _dequantize_ref(args, attrs):
    x = args[0]
    ax = attrs.axis % x.ndim if x.ndim else 0
    d = x.astype(np.int64) - along(attrs.zero_point, ax, x.ndim, np.int64)
    return d.astype(np.float32) * along(attrs.scale, ax, x.ndim, np.float32)


register("qnn.dequantize", ("data",), (_scale("scale"), _zero_point("zero_point"), Attr("axis", "int", 1)),
         infer=_infer_dequantize, ref=_dequantize_ref, family="qnn",
         doc="float32(data - zero_point) * scale")


def requantize_ratios(attrs) -> list[float]:
    """Per output channel: input_scale / output_scale in float32."""
    n = max(len(attrs.input_scale), len(attrs.output_scale))
    ins = list(attrs.input_scale) * (n if len(attrs.input_scale) == 1 else 1)
    outs = list(attrs.output_scale) * (n if len(attrs.output_scale) == 1 else 1)
    return [scale_ratio(a, b) for a, b in zip(ins, outs)]


def _infer_requantize(types, attrs):
    data = tensor_arg("qnn.requantize", "data", types[0], QIN)
    _per_channel("qnn.requantize", "data", data, attrs.axis, attrs,
                 ("input_scale", "input_zero_point", "output_scale", "output_zero_point"))
    _range_check("qnn.requantize", "output_zero_point", attrs.output_zero_point, attrs.out_dtype)
    try:
        for r in requantize_ratios(attrs):
            fixed_point([r])
        if attrs.rounding in ("tflite", "tflite_single"):
            _, exponents = tflite_math.multipliers(tflite_requantize_reals(attrs))
    except ValueError as exc:
        raise OpTypeError("qnn.requantize", "input_scale", "a scale ratio below 2**30", str(exc)) from None
    if data.dtype == "int64":
        _check_wide_requantize(attrs, exponents if attrs.rounding == "tflite" else None)
    return tensor_type(data.shape, attrs.out_dtype)


def _check_wide_requantize(attrs, exponents) -> None:
    """int64 data (a 16x8 accumulator): only TFLite's 64-bit MultiplyByQuantizedMultiplier rescales it, whose
    shift 15 - e must stay positive (TFLite asserts e < 8)."""
    if exponents is None:
        raise OpTypeError("qnn.requantize", "rounding", "'tflite' for int64 data (TFLite's 16x8 requantize)",
                          repr(attrs.rounding))
    if any(int(z) != 0 for z in attrs.input_zero_point):
        raise OpTypeError("qnn.requantize", "input_zero_point", "0 for int64 data", f"{list(attrs.input_zero_point)}")
    if max(exponents) >= 8:
        raise OpTypeError("qnn.requantize", "input_scale", "input_scale / output_scale below 2**7 for int64 data",
                          f"exponents {exponents}")


def tflite_requantize_reals(attrs) -> list[float]:
    """Per output channel: input_scale / output_scale in double (TFLite computes its factors in double)."""
    n = max(len(attrs.input_scale), len(attrs.output_scale))
    ins = list(attrs.input_scale) * (n if len(attrs.input_scale) == 1 else 1)
    outs = list(attrs.output_scale) * (n if len(attrs.output_scale) == 1 else 1)
    return [a / b for a, b in zip(ins, outs)]


def tflite_requantize_multipliers(attrs) -> tuple[list[int], list[int]]:
    """Per output channel: TFLite's (31-bit multiplier, exponent) of a rounding="tflite" requantize, the pairs
    its reference applies (tflite_math.requantize)."""
    return tflite_math.multipliers(tflite_requantize_reals(attrs))


def _requantize_ref(args, attrs):
    x = args[0]
    ax = attrs.axis % x.ndim if x.ndim else 0
    if attrs.rounding in ("tflite", "tflite_single"):
        d = x.astype(np.int64) - along(attrs.input_zero_point, ax, x.ndim, np.int64)
        return tflite_math.requantize(d, tflite_requantize_reals(attrs), attrs.output_zero_point, ax,
                                      attrs.out_dtype, single_rounding=attrs.rounding == "tflite_single",
                                      wide=x.dtype == np.int64)
    if attrs.rounding == "fixed_point":
        return requantize_array(x, requantize_ratios(attrs), attrs.input_zero_point, attrs.output_zero_point, ax,
                                attrs.out_dtype)
    return requantize_float32(x, requantize_ratios(attrs), attrs.input_zero_point, attrs.output_zero_point, ax,
                              attrs.out_dtype)


register("qnn.requantize", ("data",),
         (_scale("input_scale"), _zero_point("input_zero_point"), _scale("output_scale"),
          _zero_point("output_zero_point"), Attr("axis", "int", 1),
          Attr("out_dtype", "str", "int8", choices=QUANT_DTYPES),
          Attr("rounding", "str", "float32", choices=REQUANTIZE_ROUNDINGS)),
         infer=_infer_requantize, ref=_requantize_ref, family="qnn",
         doc="saturate(round((data - input_zero_point) * input_scale / output_scale) + output_zero_point), "
             "ties to even; rounding='float32': the product in float32 (onnxruntime's kernels), "
             "'fixed_point': a 31-bit multiplier and shift in integers; 'tflite' / 'tflite_single': TFLite's "
             "MultiplyByQuantizedMultiplier (double / single rounding, factor in double, op/tflite_math.py)")


# ---- conv2d / dense / matmul: int8 x int8 -> int32 -----------------------------------------------------

def _infer_qconv2d(types, attrs):
    data = tensor_arg("qnn.conv2d", "data", types[0], _QDATA, ndim=4)
    weight = tensor_arg("qnn.conv2d", "weight", types[1], Q8, ndim=4)
    _check_operands("qnn.conv2d", data.dtype, weight.dtype, attrs.out_dtype)
    f32 = [tensor_type(data.shape, "float32"), tensor_type(weight.shape, "float32")]
    out = _infer_conv2d(f32, attrs)
    if len(attrs.kernel_zero_point) not in (1, weight.shape[0]):
        raise OpTypeError("qnn.conv2d", "kernel_zero_point", f"1 value or {weight.shape[0]} (one per output "
                          "channel)", f"{len(attrs.kernel_zero_point)} values")
    _range_check("qnn.conv2d", "input_zero_point", (attrs.input_zero_point,), data.dtype)
    _range_check("qnn.conv2d", "kernel_zero_point", attrs.kernel_zero_point, weight.dtype)
    return tensor_type(out.shape, attrs.out_dtype)


def _check_operands(op: str, data: str, weight: str, out_dtype: str) -> None:
    """int16 data goes with int8 weights (16x8); only it may sum into int64."""
    if data == "int16" and weight != "int8":
        raise OpTypeError(op, "weight", "int8 weights with int16 data (16x8)", weight)
    if out_dtype == "int64" and data != "int16":
        raise OpTypeError(op, "out_dtype", "int32 for int8/uint8 data (int64 sums are 16x8's)", out_dtype)


def _qconv2d_ref(args, attrs):
    x = args[0].astype(np.float64) - attrs.input_zero_point    # padding then adds exact zeros
    w = args[1].astype(np.float64) - along(attrs.kernel_zero_point, 0, 4, np.float64)
    # float64 sums are exact (|products| < 2**23, far fewer than 2**30 of them); int32 wraps like C's
    return conv2d_float64(x, w, attrs).astype(np.int64).astype(attrs.out_dtype)


register("qnn.conv2d", ("data", "weight"),
         (*CONV2D_ATTRS[:-1], Attr("input_zero_point", "int", 0), Attr("kernel_zero_point", "ints", (0,)),
          Attr("out_dtype", "str", "int32", choices=ACC_DTYPES)),
         infer=_infer_qconv2d, ref=_qconv2d_ref, family="qnn",
         doc="sum (data - input_zero_point) * (weight - kernel_zero_point[o]) in int32 (int64: int16 x int8, "
             "TFLite's 16x8); padding is the input zero point")


def _infer_qdense(types, attrs):
    data = tensor_arg("qnn.dense", "data", types[0], _QDATA)
    weight = tensor_arg("qnn.dense", "weight", types[1], Q8, ndim=2)
    _check_operands("qnn.dense", data.dtype, weight.dtype, attrs.out_dtype)
    if data.ndim < 1 or data.shape[-1] != weight.shape[1]:
        raise OpTypeError("qnn.dense", "weight", f"shape (units, {data.shape[-1] if data.ndim else '?'})",
                          f"shape {shape_text(weight.shape)}")
    if len(attrs.kernel_zero_point) not in (1, weight.shape[0]):
        raise OpTypeError("qnn.dense", "kernel_zero_point", f"1 value or {weight.shape[0]}",
                          f"{len(attrs.kernel_zero_point)} values")
    return tensor_type(data.shape[:-1] + (weight.shape[0],), attrs.out_dtype)


def _qdense_ref(args, attrs):
    x = args[0].astype(np.float64) - attrs.input_zero_point
    w = args[1].astype(np.float64) - np.asarray(attrs.kernel_zero_point, np.float64)[:, None]
    return (x @ w.T).astype(np.int64).astype(attrs.out_dtype)


register("qnn.dense", ("data", "weight"),
         (Attr("input_zero_point", "int", 0), Attr("kernel_zero_point", "ints", (0,)),
          Attr("units", "int_or_none", None, check=all_positive), Attr("out_dtype", "str", "int32",
                                                                         choices=ACC_DTYPES)),
         infer=_infer_qdense, ref=_qdense_ref, family="qnn",
         doc="(data - input_zero_point) @ (weight - kernel_zero_point[n]).T in int32 (int64: int16 x int8, "
             "TFLite's 16x8); weight is (units, K)")


def _infer_qmatmul(types, attrs):
    a = tensor_arg("qnn.matmul", "tensor_a", types[0], Q8, ndim=2)
    b = tensor_arg("qnn.matmul", "tensor_b", types[1], Q8, ndim=2)
    if a.shape[1] != b.shape[0]:
        raise OpTypeError("qnn.matmul", "tensor_b", f"shape ({a.shape[1]}, N)", f"shape {shape_text(b.shape)}")
    if len(attrs.b_zero_point) not in (1, b.shape[1]):
        raise OpTypeError("qnn.matmul", "b_zero_point", f"1 value or {b.shape[1]}", f"{len(attrs.b_zero_point)} values")
    return tensor_type((a.shape[0], b.shape[1]), "int32")


def _qmatmul_ref(args, attrs):
    a = args[0].astype(np.float64) - attrs.a_zero_point
    b = args[1].astype(np.float64) - np.asarray(attrs.b_zero_point, np.float64)[None, :]
    return (a @ b).astype(np.int64).astype(np.int32)


register("qnn.matmul", ("tensor_a", "tensor_b"),
         (Attr("a_zero_point", "int", 0), Attr("b_zero_point", "ints", (0,))),
         infer=_infer_qmatmul, ref=_qmatmul_ref, family="qnn",
         doc="(a - a_zero_point) @ (b - b_zero_point[n]) in int32 (ONNX MatMulInteger, 2-D)")


# ---- add / mul / concatenate: rescaled in integers ------------------------------------------------------

_BIN_ATTRS = (_scale("lhs_scale"), Attr("lhs_zero_point", "int", 0), _scale("rhs_scale"),
              Attr("rhs_zero_point", "int", 0), _scale("output_scale"), Attr("output_zero_point", "int", 0))


def _infer_qbinary(name):
    def infer(types, attrs):
        dtypes = _QDATA if attrs.rounding == "tflite" else Q8     # TFLite's arithmetic takes int16 too
        lhs = tensor_arg(name, "lhs", types[0], dtypes)
        rhs = tensor_arg(name, "rhs", types[1], dtypes)
        same_dtype(name, "rhs", lhs, rhs)
        for n in ("lhs_scale", "rhs_scale", "output_scale"):
            if len(attrs[n]) != 1:
                raise OpTypeError(name, n, "one value (per-tensor)", f"{len(attrs[n])} values")
        _range_check(name, "output_zero_point", (attrs.output_zero_point,), lhs.dtype)
        if attrs.rounding == "tflite":
            try:
                tflite_mul_multiplier(attrs) if name == "qnn.mul" else tflite_add_params(attrs, lhs.dtype)
            except ValueError as exc:
                raise OpTypeError(name, "output_scale", "scales whose ratios TFLite's multipliers represent",
                                  str(exc)) from None
        return tensor_type(broadcast_shapes(name, "rhs", lhs.shape, rhs.shape), lhs.dtype)
    return infer


def add_multipliers(attrs) -> tuple[list[int], int]:
    """(M_lhs, M_rhs), S of qnn.add: lhs_scale/output_scale and rhs_scale/output_scale on one shift."""
    return fixed_point([scale_ratio(attrs.lhs_scale[0], attrs.output_scale[0]),
                        scale_ratio(attrs.rhs_scale[0], attrs.output_scale[0])])


def mul_multiplier(attrs) -> tuple[list[int], int]:
    """[M], S of qnn.mul: lhs_scale * rhs_scale / output_scale (float32, as onnxruntime)."""
    prod = float(np.float32(attrs.lhs_scale[0]) * np.float32(attrs.rhs_scale[0]))
    return fixed_point([scale_ratio(prod, attrs.output_scale[0])])


def fma32(a, b, c):
    """float32 fused multiply-add: a * b + c rounded once (exact in float64 for these operands)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(np.float32)


def add_float32_params(attrs) -> tuple[float, float, float]:
    """(ratio_a, ratio_b, fixed) of qnn.add's float32 rounding, as onnxruntime's x86 QLinearAdd kernel
    computes them: ratios = scale / output scale in float32, fixed = zc - fma(ratio_a, za, ratio_b * zb)."""
    f = np.float32
    ra = f(f(attrs.lhs_scale[0]) / f(attrs.output_scale[0]))
    rb = f(f(attrs.rhs_scale[0]) / f(attrs.output_scale[0]))
    za, zb = f(attrs.lhs_zero_point), f(attrs.rhs_zero_point)
    fixed = f(f(attrs.output_zero_point) - fma32(ra, za, f(rb * zb)))
    return float(ra), float(rb), float(fixed)


def tflite_add_params(attrs, dtype: str) -> dict:
    return tflite_math.add_params(attrs.lhs_scale[0], attrs.rhs_scale[0], attrs.output_scale[0], dtype)


def _qadd_ref(args, attrs):
    if attrs.rounding == "tflite":
        dtype = str(args[0].dtype)
        return tflite_math.add(args[0], args[1], attrs.lhs_zero_point, attrs.rhs_zero_point,
                               attrs.output_zero_point, tflite_add_params(attrs, dtype), dtype)
    if attrs.rounding == "float32":
        ra, rb, fixed = (np.float32(v) for v in add_float32_params(attrs))
        t = fma32(args[1].astype(np.float32), rb, fixed)       # fmaf(b, rb, fixed)
        v = np.rint(fma32(args[0].astype(np.float32), ra, t))  # fmaf(a, ra, t), ties to even
        return saturate(v.astype(np.int64), str(args[0].dtype))
    (ma, mb), s = add_multipliers(attrs)
    a = args[0].astype(np.int64) - attrs.lhs_zero_point
    b = args[1].astype(np.int64) - attrs.rhs_zero_point
    return saturate(round_shift(a * ma + b * mb, s) + attrs.output_zero_point, str(args[0].dtype))


def tflite_mul_multiplier(attrs) -> tuple[int, int]:
    """TFLite MUL's (M, e): lhs_scale * rhs_scale / output_scale in double."""
    return tflite_math.quantize_multiplier(attrs.lhs_scale[0] * attrs.rhs_scale[0] / attrs.output_scale[0])


def _qmul_ref(args, attrs):
    if attrs.rounding == "tflite":
        m, e = tflite_mul_multiplier(attrs)
        a = args[0].astype(np.int64) - attrs.lhs_zero_point
        b = args[1].astype(np.int64) - attrs.rhs_zero_point
        v = tflite_math.multiply_by_quantized_multiplier(a * b, m, e) + attrs.output_zero_point
        return saturate(v, str(args[0].dtype))
    (m,), s = mul_multiplier(attrs)
    a = args[0].astype(np.int64) - attrs.lhs_zero_point
    b = args[1].astype(np.int64) - attrs.rhs_zero_point
    return saturate(round_shift(a * b * m, s) + attrs.output_zero_point, str(args[0].dtype))


register("qnn.add", ("lhs", "rhs"), _BIN_ATTRS + (Attr("rounding", "str", "float32",
                                                      choices=("float32", "fixed_point", "tflite")),),
         infer=_infer_qbinary("qnn.add"), ref=_qadd_ref, family="qnn",
         doc="saturate(round((lhs - zl) * sl/so + (rhs - zr) * sr/so) + zo), ties to even; rounding='float32': "
             "fma(lhs, rl, fma(rhs, rr, zo - (rl*zl + rr*zr))) in float32 (onnxruntime's x86 QLinearAdd), "
             "'fixed_point': integers; 'tflite': TFLite's ADD (inputs shifted left by 20, three multipliers)")
register("qnn.mul", ("lhs", "rhs"), _BIN_ATTRS + (Attr("rounding", "str", "fixed_point",
                                                      choices=("fixed_point", "tflite")),),
         infer=_infer_qbinary("qnn.mul"), ref=_qmul_ref, family="qnn",
         doc="saturate(round((lhs - zl) * (rhs - zr) * sl*sr/so) + zo), fixed-point, ties to even; "
             "rounding='tflite': TFLite's MUL (the factor in double, MultiplyByQuantizedMultiplier)")


def _infer_qconcat(types, attrs):
    tup = types[0]
    for i, f in enumerate(getattr(tup, "fields", ())):
        tensor_arg("qnn.concatenate", f"data[{i}]", f, Q8)
    out = get_op_def("concatenate").infer(types, Attrs({"axis": attrs.axis}))
    for n in ("input_scales", "input_zero_points"):
        if len(attrs[n]) != len(tup.fields):
            raise OpTypeError("qnn.concatenate", n, f"{len(tup.fields)} values (one per input)", f"{len(attrs[n])}")
    return out


def concat_requant(attrs) -> list[tuple[float, int]]:
    """Per input: (ratio input_scale/output_scale in float32, input zero point)."""
    return [(scale_ratio(s, attrs.output_scale), int(z)) for s, z in zip(attrs.input_scales, attrs.input_zero_points)]


def concat_copies(attrs) -> list[bool]:
    """Per input: whether it is copied unchanged (its scale and zero point are the output's)."""
    return [float(np.float32(s)) == float(np.float32(attrs.output_scale)) and int(z) == attrs.output_zero_point
            for s, z in zip(attrs.input_scales, attrs.input_zero_points)]


def concat_table(attrs, index: int, dtype: str) -> np.ndarray:
    """rounding='float32': input `index`'s value v -> output value, for every v of dtype (from its minimum):
    saturate(round_half_even(float32(float32(v - z) * s) / so) + zo), each step rounded to float32 —
    dequantize then quantize, onnxruntime's QLinearConcat (a 256-entry table, as it builds one)."""
    info = np.iinfo(dtype)
    v = np.arange(info.min, info.max + 1, dtype=np.int64) - int(attrs.input_zero_points[index])
    real = v.astype(np.float32) * np.float32(attrs.input_scales[index])
    q = np.rint(real / np.float32(attrs.output_scale)).astype(np.float64) + attrs.output_zero_point
    return saturate(q, dtype)


def _qconcat_ref(args, attrs):
    parts = []
    out_dtype = str(args[0][0].dtype)
    lowest = int(np.iinfo(out_dtype).min)
    for i, (x, (ratio, zp), copy) in enumerate(zip(args[0], concat_requant(attrs), concat_copies(attrs))):
        if copy:
            parts.append(x)
        elif attrs.rounding == "float32":
            parts.append(concat_table(attrs, i, out_dtype)[x.astype(np.int64) - lowest])
        else:
            parts.append(requantize_array(x, [ratio], (zp,), (attrs.output_zero_point,), 0, out_dtype))
    return np.concatenate(parts, axis=attrs.axis)


register("qnn.concatenate", ("data",),
         (Attr("input_scales", "floats", check=_positive_scales), Attr("input_zero_points", "ints"),
          Attr("output_scale", "float"), Attr("output_zero_point", "int", 0), Attr("axis", "int", 0),
          Attr("rounding", "str", "float32", choices=("float32", "fixed_point"))),
         infer=_infer_qconcat, ref=_qconcat_ref, family="qnn", tuple_input=True,
         doc="each input requantized to the output scale and zero point, then concatenated; rounding='float32': "
             "dequantized and quantized again in float32 (onnxruntime's QLinearConcat), 'fixed_point': integers")


def qmatmul_nd(call, a, b, a_shape, b_shape, a_zp: int, b_zp: list[int]):
    """(A - a_zp) @ (B - b_zp) in int32 for A, B of 2 or more dimensions (numpy's matmul broadcasting of
    the leading ones), as 2-D qnn.matmul calls: with a 2-D B (weights) one call on A's rows flattened;
    otherwise one call per matrix of the broadcast batch, the results concatenated."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise ValueError(f"quantized MatMul of a 1-D operand is not supported: {a_shape} and {b_shape}")
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    if len(b_shape) == 2:
        flat = a if len(a_shape) == 2 else call("reshape", a, newshape=(int(np.prod(a_shape[:-1])), k))
        out = call("qnn.matmul", flat, b, a_zero_point=a_zp, b_zero_point=b_zp)
        return out if len(a_shape) == 2 else call("reshape", out, newshape=a_shape[:-1] + (n,))
    batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    count = int(np.prod(batch))
    stacks = [call("reshape", call("broadcast_to", x, shape=batch + s[-2:]) if s[:-2] != batch else x,
                   newshape=(count,) + s[-2:]) for x, s in ((a, a_shape), (b, b_shape))]

    def matrix(x, i, rows, cols):
        piece = call("strided_slice", x, begin=(i, 0, 0), end=(i + 1, rows, cols), strides=(1, 1, 1))
        return call("reshape", piece, newshape=(rows, cols))
    parts = [call("reshape", call("qnn.matmul", matrix(stacks[0], i, m, k), matrix(stacks[1], i, k, n),
                                  a_zero_point=a_zp, b_zero_point=b_zp), newshape=(1, m, n)) for i in range(count)]
    joined = parts[0] if count == 1 else call("concatenate", parts, axis=0)
    return call("reshape", joined, newshape=batch + (m, n))


def softmax_output_scale(y_scale: float) -> float:
    """The output step onnxruntime's quantized softmax really uses: it multiplies the probability by
    floor(1 / y_scale) (256 for the usual 1/256; 263 for a calibrated 0.0038, whose results are then
    3% low), so byoc quantizes with 1 / floor(1 / y_scale) to land on the same integers."""
    return float(np.float32(1.0 / np.floor(np.float32(1.0) / np.float32(y_scale))))


def global_avg_pool_int(call, x, shape, dtype: str, x_scale: float, x_zp: int, y_scale: float, y_zp: int,
                        y_dtype: str):
    """Integer global average pool: sum(x - x_zp) over H x W (a depthwise qnn.conv2d with a kernel of ones)
    requantized by x_scale / (y_scale * H * W), each step in float32 as onnxruntime's kernel computes it."""
    _, c, h, w = shape
    ones = Constant(np.ones((c, 1, h, w), np.dtype(dtype)))
    acc = call("qnn.conv2d", x, ones, groups=c, input_zero_point=int(x_zp), kernel_zero_point=[0])
    ratio = float(np.float32(np.float32(x_scale) / np.float32(np.float32(y_scale) * np.float32(h * w))))
    return call("qnn.requantize", acc, input_scale=[ratio], input_zero_point=[0], output_scale=[1.0],
                output_zero_point=[int(y_zp)], axis=1, out_dtype=y_dtype)
