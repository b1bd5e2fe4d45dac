"""Host C for the quantized ops whose rounding is "tflite": TFLite's fixed-point steps (op/tflite_math.py).

The multipliers and exponents are computed at code generation (quantize_multiplier) and written as
constants; the C does what TFLite's reference kernels do, in int32/int64, with floor shifts written
without right-shifting negative values (implementation-defined in C99).
"""
from __future__ import annotations

from ...ctext import c_type, int_literal as L, line_array
from ...op import tflite_math
from ...op.qnn import tflite_add_params, tflite_mul_multiplier, tflite_requantize_reals
from .cwriter import flat_loop, size_of

_RANGE = {"int8": ("INT8_MIN", "INT8_MAX"), "uint8": ("0", "UINT8_MAX"), "int16": ("INT16_MIN", "INT16_MAX"),
          "uint16": ("0", "UINT16_MAX"), "int32": ("INT32_MIN", "INT32_MAX")}

HELPERS = {
    # floor(x / 2**e) for 0 <= e <= 62
    "byoc_floor_shift": ((), """static inline int64_t byoc_floor_shift(int64_t x, int32_t e) {
  return x >= 0 ? x >> e : -(((-(x + 1)) >> e)) - 1;
}"""),
    # SaturatingRoundingDoublingHighMul: round(a * b / 2**31), ties away from zero
    "byoc_tfl_srdhm": ((), """static inline int32_t byoc_tfl_srdhm(int32_t a, int32_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  const int64_t ab = (int64_t)a * (int64_t)b;
  const int64_t nudge = ab >= 0 ? (INT64_C(1) << 30) : INT64_C(1) - (INT64_C(1) << 30);
  return (int32_t)((ab + nudge) / (INT64_C(1) << 31));   /* C division truncates, as TFLite's */
}"""),
    # RoundingDivideByPOT: x / 2**e, ties away from zero
    "byoc_tfl_rdbpot": ((), """static inline int32_t byoc_tfl_rdbpot(int32_t x, int32_t e) {
  const int64_t q = byoc_floor_shift(x, e);
  const int64_t remainder = (int64_t)x - q * (INT64_C(1) << e);
  const int64_t threshold = ((INT64_C(1) << e) - 1) / 2 + (x < 0 ? 1 : 0);
  return (int32_t)(q + (remainder > threshold ? 1 : 0));
}"""),
    # MultiplyByQuantizedMultiplier, double rounding (TFLite's default)
    "byoc_tfl_mbqm": ((), """static inline int32_t byoc_tfl_mbqm(int64_t x, int32_t m, int32_t e) {
  const int32_t left = e > 0 ? e : 0, right = e > 0 ? 0 : -e;
  return byoc_tfl_rdbpot(byoc_tfl_srdhm(byoc_wrap_i32(x * (INT64_C(1) << left)), m), right);
}"""),
    # MultiplyByQuantizedMultiplier, single rounding (TFLITE_SINGLE_ROUNDING)
    "byoc_tfl_mbqm_single": ((), """static inline int32_t byoc_tfl_mbqm_single(int64_t x, int32_t m, int32_t e) {
  const int32_t shift = 31 - e;
  return byoc_wrap_i32(byoc_floor_shift((int64_t)byoc_wrap_i32(x) * m + (INT64_C(1) << (shift - 1)), shift));
}"""),
}
HELPER_DEPS = {"byoc_tfl_rdbpot": ("byoc_floor_shift",),
               "byoc_tfl_mbqm": ("byoc_tfl_srdhm", "byoc_tfl_rdbpot", "byoc_wrap_i32"),
               "byoc_tfl_mbqm_single": ("byoc_floor_shift", "byoc_wrap_i32")}


def _clamped(ctx, value: str, dtype: str) -> str:
    ctx.use("byoc_clamp64")
    lo, hi = _RANGE[dtype]
    return f"({c_type(dtype)})byoc_clamp64((int64_t){value}, {lo}, {hi})"


def requantize(ctx, channel: str, n: int) -> str:
    """qnn.requantize, rounding "tflite" / "tflite_single"; `channel` is the C expression of element i's
    channel, n the number of channels."""
    a = ctx.attrs
    ms, es = tflite_math.multipliers(tflite_requantize_reals(a))
    spread = (lambda v: list(v) * (n if len(v) == 1 else 1))
    fn = ctx.use("byoc_tfl_mbqm_single" if a.rounding == "tflite_single" else "byoc_tfl_mbqm")
    pre = ["  " + line_array("mult", "int32", spread(ms)), "  " + line_array("expo", "int32", spread(es)),
           "  " + line_array("izp", "int64", spread([int(z) for z in a.input_zero_point])),
           "  " + line_array("ozp", "int64", spread([int(z) for z in a.output_zero_point]))]
    body = (f"const int64_t c = {channel};\n"
            f"out0[i] = {_clamped(ctx, f'({fn}((int64_t)in0[i] - izp[c], mult[c], expo[c]) + ozp[c])', ctx.outputs[0].dtype)};")
    return "\n".join(pre) + "\n" + flat_loop(size_of(ctx.inputs[0].shape), body)


def add(ctx, binary) -> str:
    """TFLite's ADD: both inputs shifted left, rescaled to twice the larger scale, summed, rescaled.
    `binary(ctx, expr_of)` is qnn.py's loop over the broadcast operands a, b (zero points subtracted)."""
    dtype = ctx.outputs[0].dtype
    p = tflite_add_params(ctx.attrs, dtype)
    f = ctx.use("byoc_tfl_mbqm")
    ctx.use("byoc_wrap_i32")
    shift = L(1 << p["left_shift"])

    def expr(a, b):
        sa = f"{f}({a} * {shift}, {L(p['m1'])}, {p['e1']})"
        sb = f"{f}({b} * {shift}, {L(p['m2'])}, {p['e2']})"
        raw = f"{f}((int64_t)byoc_wrap_i32((int64_t){sa} + {sb}), {L(p['mo'])}, {p['eo']})"
        return _clamped(ctx, f"({raw} + {L(ctx.attrs.output_zero_point)})", dtype)
    return binary(ctx, expr)


def mul(ctx, binary) -> str:
    dtype = ctx.outputs[0].dtype
    m, e = tflite_mul_multiplier(ctx.attrs)
    f = ctx.use("byoc_tfl_mbqm")
    return binary(ctx, lambda a, b: _clamped(ctx, f"({f}({a} * {b}, {L(m)}, {e}) + {L(ctx.attrs.output_zero_point)})",
                                              dtype))
