"""Host C for the quantized ops whose rounding is "tflite": TFLite's fixed-point steps (op/tflite_math.py).

The multipliers and exponents are computed at code generation (quantize_multiplier) and written as
constants; the C does what TFLite's reference kernels do, in int32/int64, with floor shifts written
without right-shifting negative values (implementation-defined in C99).
"""
from __future__ import annotations

from ...ctext import c_type, int_literal as L, line_array
from ...op import tflite_math, tflite_softmax16 as softmax16
from ...op.tflite_fixedpoint import L2_OUTPUT_SHIFT, SOFTMAX_SUM_BITS, softmax_exp_table
from ...op.qnn import tflite_add_params, tflite_mul_multiplier, tflite_requantize_reals
from ...op.qnn_tflite import reduce_params
from .cwriter import axis_split, flat_loop, size_of
from .reduce import reduction_nest

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
    # MultiplyByQuantizedMultiplier of an int64 (16x8) accumulator: m rounded to 16 bits, one rounding shift by
    # 15 - e (e < 8); the product in unsigned arithmetic (wraps where TFLite's range assumption fails, no UB)
    "byoc_tfl_mbqm64": ((), """static inline int32_t byoc_tfl_mbqm64(int64_t x, int32_t m, int32_t e) {
  const int64_t reduced = m < 0x7FFF0000 ? ((int64_t)m + (INT64_C(1) << 15)) / (INT64_C(1) << 16) : 0x7FFF;
  const int32_t shift = 15 - e;
  const int64_t total = (int64_t)((uint64_t)x * (uint64_t)reduced + ((uint64_t)1 << (shift - 1)));
  return byoc_wrap_i32(byoc_floor_shift(total, shift));
}"""),
    # TFLite's int16 table lookup: entry 256 + (v >> 7) interpolated towards the next by v's low 7 bits
    "byoc_tfl_lut16": ((), """static inline int16_t byoc_tfl_lut16(int16_t v, const int16_t *lut) {
  const int32_t index = 256 + (int32_t)byoc_floor_shift(v, 7);
  const int32_t slope = (int32_t)lut[index + 1] - lut[index];
  return (int16_t)byoc_wrap_i32(lut[index] + byoc_floor_shift((int64_t)slope * (v & 0x7F) + 64, 7));
}"""),
    # MultiplyByQuantizedMultiplier, single rounding (TFLITE_SINGLE_ROUNDING)
    "byoc_tfl_mbqm_single": ((), """static inline int32_t byoc_tfl_mbqm_single(int64_t x, int32_t m, int32_t e) {
  const int32_t shift = 31 - e;
  return byoc_wrap_i32(byoc_floor_shift((int64_t)byoc_wrap_i32(x) * m + (INT64_C(1) << (shift - 1)), shift));
}"""),
    # SaturatingRoundingMultiplyByPOT<k>: x * 2**k, saturated to int32
    "byoc_tfl_sat_shl": ((), """static inline int32_t byoc_tfl_sat_shl(int32_t x, int32_t k) {
  const int32_t limit = (int32_t)((INT64_C(1) << (31 - k)) - 1);
  return x > limit ? INT32_MAX : x < -limit ? INT32_MIN : byoc_wrap_i32((int64_t)x * (INT64_C(1) << k));
}"""),
    # 1 / (1 + a) for a in [0, 1), Q0.31: three Newton-Raphson steps on 2 / (1 + a) in Q2.29
    "byoc_tfl_one_over_one_plus_x": ((), """static inline int32_t byoc_tfl_one_over_one_plus_x(int32_t a) {
  const int64_t total = (int64_t)a + INT32_MAX;
  const int32_t half = (int32_t)((total + (total >= 0 ? 1 : -1)) / 2);
  int32_t x = byoc_wrap_i32(INT64_C(1515870810) + byoc_tfl_srdhm(half, -1010580540));
  for (int i = 0; i < 3; ++i) {
    const int32_t err = byoc_wrap_i32((INT64_C(1) << 29) - byoc_tfl_srdhm(half, x));
    x = byoc_wrap_i32((int64_t)x + byoc_tfl_sat_shl(byoc_tfl_srdhm(x, err), 2));
  }
  return byoc_tfl_sat_shl(x, 1);
}"""),
    # GetInvSqrtQuantizedMultiplierExp (op/tflite_fixedpoint.inv_sqrt_multiplier): 1/sqrt(v) as M, e
    "byoc_tfl_inv_sqrt": ((), """static inline void byoc_tfl_inv_sqrt(int32_t v, int32_t *mult, int32_t *expo) {
  if (v <= 1) { *mult = INT32_MAX; *expo = 0; return; }
  int32_t shift = 11;
  while (v >= (INT32_C(1) << 29)) { v /= 4; ++shift; }
  int32_t clz = 0;
  while (!(((uint32_t)v << clz) & 0x80000000u)) ++clz;
  const int32_t pairs = (clz - 1) / 2 - 1;
  shift -= pairs;
  v = (int32_t)((uint32_t)v << (2 * pairs));
  const int32_t half = byoc_tfl_rdbpot(v / 2, 1);
  int32_t x = INT32_C(1) << 28;
  for (int i = 0; i < 5; ++i) {
    const int32_t x3 = byoc_tfl_sat_shl(byoc_tfl_srdhm(byoc_tfl_srdhm(x, x), x), 6);
    x = byoc_tfl_sat_shl(byoc_wrap_i32((int64_t)byoc_tfl_srdhm(402653184, x) - byoc_tfl_srdhm(half, x3)), 3);
  }
  x = byoc_tfl_srdhm(x, 1518500250);
  if (shift < 0) { x = byoc_wrap_i32((int64_t)x * (INT64_C(1) << -shift)); shift = 0; }
  *mult = x;
  *expo = -shift;
}"""),
}
HELPER_DEPS = {"byoc_tfl_inv_sqrt": ("byoc_tfl_rdbpot", "byoc_tfl_sat_shl", "byoc_tfl_srdhm", "byoc_wrap_i32"),
               "byoc_tfl_rdbpot": ("byoc_floor_shift",),
               "byoc_tfl_sat_shl": ("byoc_wrap_i32",),
               "byoc_tfl_one_over_one_plus_x": ("byoc_tfl_srdhm", "byoc_tfl_sat_shl", "byoc_wrap_i32"),
               "byoc_tfl_mbqm": ("byoc_tfl_srdhm", "byoc_tfl_rdbpot", "byoc_wrap_i32"),
               "byoc_tfl_mbqm_single": ("byoc_floor_shift", "byoc_wrap_i32"),
               "byoc_tfl_mbqm64": ("byoc_floor_shift", "byoc_wrap_i32"),
               "byoc_tfl_lut16": ("byoc_floor_shift", "byoc_wrap_i32")}


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
    fn = ctx.use("byoc_tfl_mbqm64" if ctx.inputs[0].dtype == "int64" else
                 "byoc_tfl_mbqm_single" if a.rounding == "tflite_single" else "byoc_tfl_mbqm")
    pre = ["  " + line_array("mult", "int32", spread(ms)), "  " + line_array("expo", "int32", spread(es)),
           "  " + line_array("izp", "int64", spread([int(z) for z in a.input_zero_point])),
           "  " + line_array("ozp", "int64", spread([int(z) for z in a.output_zero_point]))]
    body = (f"const int64_t c = {channel};\n"
            f"out0[i] = {_clamped(ctx, f'({fn}((int64_t)in0[i] - izp[c], mult[c], expo[c]) + ozp[c])', ctx.outputs[0].dtype)};")
    return "\n".join(pre) + "\n" + flat_loop(size_of(ctx.inputs[0].shape), body)


def add(ctx, binary, subtract: bool = False) -> str:
    """TFLite's ADD: both inputs shifted left, rescaled to twice the larger scale, summed, rescaled.
    `binary(ctx, expr_of)` is qnn.py's loop over the broadcast operands a, b (zero points subtracted)."""
    dtype = ctx.outputs[0].dtype
    p = tflite_add_params(ctx.attrs, dtype)
    f = ctx.use("byoc_tfl_mbqm")
    ctx.use("byoc_wrap_i32")
    shift = L(1 << p["left_shift"])

    def expr(a, b):
        sa = f"{f}({a} * {shift}, {L(p['m1'])}, {p['e1']})"
        sb = f"{f}({b} * {shift}, {L(-p['m2'] if subtract else p['m2'])}, {p['e2']})"
        raw = f"{f}((int64_t)byoc_wrap_i32((int64_t){sa} + {sb}), {L(p['mo'])}, {p['eo']})"
        return _clamped(ctx, f"({raw} + {L(ctx.attrs.output_zero_point)})", dtype)
    return binary(ctx, expr)


def mul(ctx, binary) -> str:
    dtype = ctx.outputs[0].dtype
    m, e = tflite_mul_multiplier(ctx.attrs)
    f = ctx.use("byoc_tfl_mbqm")
    return binary(ctx, lambda a, b: _clamped(ctx, f"({f}({a} * {b}, {L(m)}, {e}) + {L(ctx.attrs.output_zero_point)})",
                                              dtype))


def softmax(ctx) -> str:
    """qnn.softmax along one axis: the exps of x - max (0 .. -255) from a table made at code generation (0 where
    TFLite skips a difference), their sum in Q12.19, its reciprocal, each exp times it (op/tflite_fixedpoint.py)."""
    x = ctx.inputs[0]
    outer, extent, inner = axis_split(x.shape, ctx.attrs.axis % x.ndim)
    if outer * extent * inner == 0:
        return ""
    if x.dtype == "int16":
        return _softmax16(ctx, outer, extent, inner)
    table = [int(v) for v in softmax_exp_table(ctx.attrs.input_scale, ctx.attrs.beta)]
    for helper in ("byoc_tfl_rdbpot", "byoc_tfl_srdhm", "byoc_tfl_one_over_one_plus_x", "byoc_clamp64"):
        ctx.use(helper)
    body = f"""const int64_t base = (o / {L(inner)}) * {L(extent * inner)} + o % {L(inner)};
int32_t top = INT8_MIN;
for (int64_t c = 0; c < {L(extent)}; ++c) if (in0[base + c * {L(inner)}] > top) top = in0[base + c * {L(inner)}];
int32_t sum = 0;
for (int64_t c = 0; c < {L(extent)}; ++c)
  sum = byoc_wrap_i32((int64_t)sum + byoc_tfl_rdbpot(exps[top - in0[base + c * {L(inner)}]], {SOFTMAX_SUM_BITS}));
int32_t clz = 0;
while (clz < 31 && !(((uint32_t)sum << clz) & 0x80000000u)) ++clz;
const int32_t scale = byoc_tfl_one_over_one_plus_x(byoc_wrap_i32((int64_t)(((uint32_t)sum << clz) & 0xFFFFFFFFu) - (INT64_C(1) << 31)));
const int32_t exponent = {SOFTMAX_SUM_BITS} - clz + 23;
for (int64_t c = 0; c < {L(extent)}; ++c) {{
  const int32_t e = exps[top - in0[base + c * {L(inner)}]];
  out0[base + c * {L(inner)}] = (int8_t)byoc_clamp64((int64_t)byoc_tfl_rdbpot(byoc_tfl_srdhm(scale, e), exponent) - 128, INT8_MIN, INT8_MAX);
}}"""
    return "  " + line_array("exps", "int32", table) + "\n" + flat_loop(outer * inner, body, var="o")


def _softmax16(ctx, outer: int, extent: int, inner: int) -> str:
    """int16 qnn.softmax (op/tflite_softmax16.py): each difference from the row's maximum rescaled, re-centred
    and looked up in the exp table, the int32 sum normalized and looked up in the reciprocal table, each exp
    times the reciprocal shifted right with rounding. The tables are the reference's, written as constants."""
    exp_table, recip_table = softmax16.tables()
    m, e = softmax16.input_multiplier(ctx.attrs.input_scale, ctx.attrs.beta)
    f = ctx.use("byoc_tfl_mbqm")
    lookup = ctx.use("byoc_tfl_lut16")
    ctx.use("byoc_clamp64")
    ctx.use("byoc_floor_shift")
    at = f"base + c * {L(inner)}"
    body = f"""const int64_t base = (o / {L(inner)}) * {L(extent * inner)} + o % {L(inner)};
int32_t top = INT16_MIN;
for (int64_t c = 0; c < {L(extent)}; ++c) if (in0[{at}] > top) top = in0[{at}];
int32_t sum = 0;
for (int64_t c = 0; c < {L(extent)}; ++c) {{
  const int32_t scaled = {f}((int64_t)in0[{at}] - top, {L(m)}, {e});
  out0[{at}] = {lookup}((int16_t)byoc_clamp64((int64_t)scaled + 32767, INT16_MIN, INT16_MAX), exp_lut);
  sum += out0[{at}];   /* at most 65536 x 32767 (the op's type check) */
}}
int32_t headroom = 0;
while (headroom < 31 && !(((uint32_t)sum << headroom) & 0x80000000u)) ++headroom;
const int64_t shifted = (((int64_t)sum << (headroom - 1)) + (1 << 13)) / (1 << 14);
const int32_t reciprocal = {lookup}((int16_t)byoc_clamp64(shifted - 98304, INT16_MIN, INT16_MAX), recip_lut);
const int32_t shift = 31 - headroom;
for (int64_t c = 0; c < {L(extent)}; ++c) {{
  const int64_t v = byoc_floor_shift((int64_t)out0[{at}] * reciprocal + (INT64_C(1) << (shift - 1)), shift);
  out0[{at}] = (int16_t)byoc_clamp64(v, 0, INT16_MAX);
}}"""
    tables = ["  " + line_array("exp_lut", "int16", [int(v) for v in exp_table]),
              "  " + line_array("recip_lut", "int16", [int(v) for v in recip_table])]
    return "\n".join(tables) + "\n" + flat_loop(outer * inner, body, var="o")


def _reduce(name: str):
    """qnn.mean / qnn.sum: the raw integers summed in int32 (TFLite's accumulator), then one
    MultiplyByQuantizedMultiplier of the sum less zero point x count (op/tflite_math.reduce_rescale)."""
    def rule(ctx) -> str:
        a = ctx.attrs
        axes, count, m, e = reduce_params(name, ctx.inputs[0].shape, a)
        f = ctx.use("byoc_tfl_mbqm")
        ctx.use("byoc_wrap_i32")
        rescaled = (f"({f}((int64_t)byoc_wrap_i32((int64_t)byoc_wrap_i32(acc) - {L(a.input_zero_point * count)}), "
                    f"{L(m)}, {e}) + {L(a.output_zero_point)})")
        finish = "out0[{out}] = " + _clamped(ctx, rescaled, ctx.outputs[0].dtype).replace("{", "{{").replace("}", "}}") + ";"
        return reduction_nest(ctx, "int64_t acc = 0;", "acc += in0[{at}];", finish, axes)
    return rule


def l2_normalize(ctx) -> str:
    """qnn.l2_normalize along one axis: the row's sum of squares (int32), its inverse square root as a
    multiplier, each element x - zp times it with the exponent raised by 7, saturated (op/tflite_fixedpoint.py)."""
    x = ctx.inputs[0]
    outer, extent, inner = axis_split(x.shape, ctx.attrs.axis % x.ndim)
    if outer * extent * inner == 0:
        return ""
    ctx.use("byoc_tfl_inv_sqrt")
    f = ctx.use("byoc_tfl_mbqm")
    zp = L(ctx.attrs.input_zero_point)
    body = f"""const int64_t base = (o / {L(inner)}) * {L(extent * inner)} + o % {L(inner)};
int32_t total = 0;
for (int64_t c = 0; c < {L(extent)}; ++c) {{
  const int64_t v = (int64_t)in0[base + c * {L(inner)}] - {zp};
  total = byoc_wrap_i32((int64_t)total + v * v);
}}
int32_t mult, expo;
byoc_tfl_inv_sqrt(total, &mult, &expo);
for (int64_t c = 0; c < {L(extent)}; ++c)
  out0[base + c * {L(inner)}] = {_clamped(ctx, f"{f}((int64_t)in0[base + c * {L(inner)}] - {zp}, mult, expo + {L2_OUTPUT_SHIFT})", "int8")};"""
    return flat_loop(outer * inner, body, var="o")


# qnn.subtract (TFLite's SUB, only with rounding="tflite") is qnn.py's rule: it needs qnn.py's loop
RULES = {"qnn.softmax": softmax, "qnn.mean": _reduce("qnn.mean"), "qnn.sum": _reduce("qnn.sum"),
         "qnn.l2_normalize": l2_normalize}
