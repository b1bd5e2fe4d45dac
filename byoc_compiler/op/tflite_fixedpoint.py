"""TFLite's int8 softmax, logistic and tanh: the fixed-point function evaluations its reference kernels use.

TensorFlow Lite Micro computes these in 32-bit fixed point (gemmlowp's formulation): exp of a
negative value from a Taylor polynomial on [-1/4, 0) times exp(-2**k) for the set bits of the rest,
1/(1+x) and (1-x)/(1+x) by three Newton-Raphson steps. Products are `srdhm` (Q0.31 x Qm.n -> the
wider format's raw value), rescales are rounding or saturating shifts. A value is a raw int32 (held
in int64 numpy arrays); "Qk" below names a format with k integer bits.

logistic and tanh map each int8 input to one output: the importer turns them into a 256-entry
table. softmax depends on the whole row: `softmax` here is qnn.softmax's reference, and the host
kernel gets the same exp table and reciprocal.
"""
from __future__ import annotations

import math

import numpy as np

from .tflite_math import (INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier, quantize_multiplier,
                          rounding_divide_by_pot, srdhm, wrap32)

# exp(-2**k) in Q0.31 for k = -2 .. 4 (the "barrel shifter" factors)
_EXP_FACTORS = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
                (4, 242))
_EXP_MINUS_EIGHTH = 1895147668      # exp(-1/8) in Q0.31
_ONE_THIRD = 715827883              # 1/3 in Q0.31
_48_OVER_17 = 1515870810            # in Q2.29
_NEG_32_OVER_17 = -1010580540       # in Q2.29
SOFTMAX_DIFF_BITS = 5               # integer bits of the scaled input differences (Q5.26)
SOFTMAX_SUM_BITS = 12               # integer bits of the sum of exps (Q12.19)
SIGMOID_INPUT_BITS = 4              # logistic and tanh read their input as Q4.27


def saturating_shift_left(x, k: int) -> np.ndarray:
    x = np.asarray(x, np.int64)
    limit = (1 << (31 - k)) - 1
    return np.where(x > limit, INT32_MAX, np.where(x < -limit, INT32_MIN, x << k))


def _exp_on_quarter(a: np.ndarray) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0.31 -> Q0.31: a polynomial around -1/8."""
    x = wrap32(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    poly = rounding_divide_by_pot(wrap32(srdhm(wrap32(rounding_divide_by_pot(x4, 2) + x3), _ONE_THIRD) + x2), 1)
    return wrap32(_EXP_MINUS_EIGHTH + srdhm(_EXP_MINUS_EIGHTH, wrap32(x + poly)))


def exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    """exp(a) for a <= 0 given in Q`integer_bits`, as Q0.31."""
    a = np.asarray(a, np.int64)
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    mod_minus_quarter = (a & (quarter - 1)) - quarter
    result = _exp_on_quarter(saturating_shift_left(mod_minus_quarter, integer_bits))
    remainder = wrap32(mod_minus_quarter - a)
    for exponent, factor in _EXP_FACTORS:
        if integer_bits > exponent:
            bit = np.int64(1) << (frac + exponent)
            result = np.where(remainder & bit, srdhm(result, factor), result)
    return np.where(a == 0, INT32_MAX, result)


def _newton_reciprocal_half(a: np.ndarray) -> np.ndarray:
    """x ~ 2 / (1 + a) in Q2.29 for a in [0, 1) (Q0.31)."""
    a = np.asarray(a, np.int64)
    total = a + INT32_MAX
    half = np.where(total >= 0, total + 1, total - 1)
    half = np.where(half >= 0, half // 2, -((-half) // 2))            # C's truncating division
    x = wrap32(_48_OVER_17 + srdhm(half, _NEG_32_OVER_17))
    for _ in range(3):
        error = wrap32((1 << 29) - srdhm(half, x))
        x = wrap32(x + saturating_shift_left(srdhm(x, error), 2))
    return x


def one_over_one_plus_x(a) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1), Q0.31 -> Q0.31."""
    return saturating_shift_left(_newton_reciprocal_half(a), 1)


def one_minus_x_over_one_plus_x(a) -> np.ndarray:
    """(1 - a) / (1 + a) for a in [0, 1), Q0.31 -> Q0.31."""
    return saturating_shift_left(wrap32(_newton_reciprocal_half(a) - (1 << 29)), 2)


def logistic_q31(a, integer_bits: int) -> np.ndarray:
    a = np.asarray(a, np.int64)
    positive = a > 0
    magnitude = np.where(positive, a, -a)
    if_positive = one_over_one_plus_x(exp_on_negative_values(wrap32(-magnitude), integer_bits))
    out = np.where(positive, if_positive, INT32_MAX - if_positive)
    return np.where(a == 0, 1 << 30, out)


def tanh_q31(a, integer_bits: int) -> np.ndarray:
    a = np.asarray(a, np.int64)
    negative = a < 0
    n = np.where(negative, a, wrap32(-a))                       # -|a|
    t = one_minus_x_over_one_plus_x(exp_on_negative_values(n, integer_bits + 1))   # exp(2n): Q(bits+1) view
    out = np.where(negative, wrap32(-t), t)
    return np.where(a == 0, 0, out)


def input_radius(integer_bits: int, left_shift: int) -> int:
    """The largest |input difference| whose rescale cannot overflow (TFLite's CalculateInputRadius)."""
    return int(math.floor(((1 << integer_bits) - 1) * float(1 << (31 - integer_bits)) / float(1 << left_shift)))


def _sigmoid_input(input_scale: float) -> tuple[int, int, int]:
    """(multiplier, exponent, radius) of logistic/tanh's input rescale to Q4.27."""
    q, exponent = math.frexp(float(np.float32(input_scale)) * float(1 << (31 - SIGMOID_INPUT_BITS)))
    multiplier = int(math.floor(q * 2.0 ** 31 + 0.5))          # TfLiteRound, without frexp's renormalizing
    return multiplier, exponent, input_radius(SIGMOID_INPUT_BITS, exponent)


def sigmoid_table(kind: str, input_scale: float, input_zero_point: int) -> np.ndarray:
    """int8 output of TFLite's int8 LOGISTIC (output 1/256, -128) or TANH (1/128, 0) for inputs -128..127."""
    multiplier, exponent, radius = _sigmoid_input(input_scale)
    d = np.arange(-128, 128, dtype=np.int64) - input_zero_point
    q4 = multiply_by_quantized_multiplier(d, multiplier, exponent)
    if kind == "logistic":
        raw = rounding_divide_by_pot(logistic_q31(q4, SIGMOID_INPUT_BITS), 23) - 128
    else:
        raw = rounding_divide_by_pot(tanh_q31(q4, SIGMOID_INPUT_BITS), 24)
    raw = np.where(d <= -radius, -128, np.where(d >= radius, 127, raw))
    return np.clip(raw, -128, 127).astype(np.int8)


def softmax_params(input_scale: float, beta: float) -> tuple[int, int, int]:
    """(multiplier, left shift, diff_min) of TFLite's int8 softmax."""
    real = min(beta * float(np.float32(input_scale)) * float(1 << (31 - SOFTMAX_DIFF_BITS)), 2.0 ** 31 - 1.0)
    multiplier, shift = quantize_multiplier(real)
    return multiplier, shift, -input_radius(SOFTMAX_DIFF_BITS, shift)


def softmax_exp_table(input_scale: float, beta: float) -> np.ndarray:
    """exp of the rescaled difference d = x - max for d = 0, -1, ..., -255 (Q0.31); 0 below diff_min."""
    multiplier, shift, diff_min = softmax_params(input_scale, beta)
    d = -np.arange(256, dtype=np.int64)
    scaled = srdhm(wrap32(d << shift), multiplier)
    return np.where(d >= diff_min, exp_on_negative_values(scaled, SOFTMAX_DIFF_BITS), 0)


def count_leading_zeros32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.int64) & 0xFFFFFFFF
    out = np.full_like(x, 32)
    for k in range(32):
        out = np.where((x >> k) != 0, 31 - k, out)
    return out


def softmax(x: np.ndarray, input_scale: float, beta: float, axis: int) -> np.ndarray:
    """TFLite's int8 softmax along `axis` (output scale 1/256, zero point -128)."""
    table = softmax_exp_table(input_scale, beta)
    _, _, diff_min = softmax_params(input_scale, beta)
    v = np.moveaxis(x.astype(np.int64), axis, -1)
    d = v - v.max(axis=-1, keepdims=True)
    valid = d >= diff_min
    exps = np.where(valid, table[np.minimum(-d, 255)], 0)
    total = wrap32(np.where(valid, rounding_divide_by_pot(exps, SOFTMAX_SUM_BITS), 0).sum(axis=-1, keepdims=True))
    clz = count_leading_zeros32(total)
    over_unit = SOFTMAX_SUM_BITS - clz
    shifted = wrap32(((total << clz) & 0xFFFFFFFF) - (1 << 31))
    scale = one_over_one_plus_x(shifted)
    out = rounding_divide_by_pot(srdhm(scale, exps), over_unit + 31 - 8) - 128
    out = np.where(valid, np.clip(out, -128, 127), -128)
    return np.moveaxis(out.astype(np.int8), -1, axis)


_HALF_SQRT_2 = 1518500250           # sqrt(2) / 2 in Q0.31
_THREE_HALVES_Q3 = (1 << 28) + (1 << 27)   # 1.5 in Q3.28


def inv_sqrt_multiplier(value: int) -> tuple[int, int]:
    """(M, e) with 1 / sqrt(value) ~= M * 2**(e - 31) for an int32 value >= 0, as TFLite's
    GetInvSqrtQuantizedMultiplierExp computes it (with its reverse shift: e is a left shift): the value
    normalized to [2**27, 2**29) by bit pairs, five Newton-Raphson steps x <- 1.5 x - (value / 2) x**3 in
    Q3.28, times sqrt(2) / 2. Values 0 and 1 give (INT32_MAX, 0)."""
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = (32 - value.bit_length() - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    half_input = int(rounding_divide_by_pot(value >> 1, 1))
    x = 1 << 28
    for _ in range(5):
        x3 = int(saturating_shift_left(srdhm(srdhm(x, x), x), 6))
        x = int(saturating_shift_left(wrap32(int(srdhm(_THREE_HALVES_Q3, x)) - int(srdhm(half_input, x3))), 3))
    x = int(srdhm(x, _HALF_SQRT_2))
    if shift < 0:
        x, shift = int(wrap32(x << -shift)), 0
    return x, -shift


def rsqrt_table(input_scale: float, input_zp: int, output_scale: float, output_zp: int) -> np.ndarray:
    """int8 output of TFLite's int8 RSQRT for inputs -128..127: 1 / sqrt(x - zp) as a multiplier applied to 1
    (shifted left by 20 to keep it an integer), rescaled by 1 / (sqrt(input scale) * output scale) (float32
    sqrt and product, the reciprocal in double); x == zp gives 127. TFLite refuses to run on x < zp; byoc
    gives what the same arithmetic gives there (the value of x == zp + 1)."""
    s = np.float32(np.sqrt(np.float32(input_scale))) * np.float32(output_scale)
    m, e = quantize_multiplier(1.0 / float(s))
    out = []
    for x in range(-128, 128):
        value = x - input_zp
        if value == 0:
            out.append(127)
            continue
        inv_m, inv_e = inv_sqrt_multiplier(value)
        data = multiply_by_quantized_multiplier(1, inv_m, inv_e + 20)
        out.append(int(multiply_by_quantized_multiplier(data, m, e - 20)) + output_zp)
    return np.clip(np.asarray(out, np.int64), -128, 127).astype(np.int8)


L2_OUTPUT_SHIFT = 7                  # int8 L2_NORMALIZATION's output is in 1/128 steps (zero point 0)


def l2_normalize(x: np.ndarray, input_zp: int, axis: int) -> np.ndarray:
    """TFLite's int8 L2_NORMALIZATION along `axis`: the sum of squares of x - zp in int32, its inverse square
    root as a multiplier (inv_sqrt_multiplier), each x - zp multiplied by it with the exponent raised by 7
    (output scale 1/128), saturated to int8."""
    v = np.moveaxis(x.astype(np.int64), axis, -1) - input_zp
    sums = wrap32((v * v).sum(axis=-1))
    rows = v.reshape(-1, v.shape[-1]) if v.size else v.reshape(0, max(v.shape[-1], 0))
    out = np.empty_like(rows)
    for r, total in enumerate(sums.reshape(-1)):
        m, e = inv_sqrt_multiplier(int(total))
        out[r] = multiply_by_quantized_multiplier(rows[r], m, e + L2_OUTPUT_SHIFT)
    out = np.clip(out, -128, 127).astype(np.int8).reshape(v.shape)
    return np.moveaxis(out, -1, axis)


def _leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """CountLeadingSignBits of int32 values: the redundant sign bits (31 for 0 and -1)."""
    x = np.asarray(x, np.int64)
    return count_leading_zeros32(np.where(x >= 0, x, ~x)) - 1


def div_table(s1: float, z1: int, s2: float, z2: int, so: float, zo: int) -> np.ndarray:
    """int8 output of TFLite's int8 DIV for every pair of int8 inputs (a, b), shape (256, 256) indexed by
    a + 128, b + 128: the divisor's reciprocal from GetReciprocal (1/(1+x) by Newton-Raphson), the dividend
    shifted left by its headroom and multiplied by it, then rescaled by s1 / (s2 * so) (in double, as
    TensorFlow Lite Micro's build computes it; LiteRT's reference kernel divides in float32 and differs at
    ties). Where that last rescale is a right shift by more than 31 (a dividend within a few steps of its
    zero point over a large divisor) TFLM shifts an int32 by 32 or more, which C++ leaves undefined (its
    x86 build saturates the output); byoc rounds the true product there (to the output zero point, or
    one step off it). TFLite does not define b == z2 (division by zero); byoc gives the saturated value of
    the dividend's sign there (the output zero point for 0 / 0)."""
    m, e = quantize_multiplier(float(np.float32(s1)) / (float(np.float32(s2)) * float(np.float32(so))))
    a, b = np.meshgrid(np.arange(-128, 128, dtype=np.int64) - z1, np.arange(-128, 128, dtype=np.int64) - z2,
                       indexing="ij")
    a = np.where(b < 0, -a, a)
    b = np.abs(b)
    safe = np.maximum(b, 1)
    clz = count_leading_zeros32(safe)
    inverse = one_over_one_plus_x(wrap32(((safe << clz) & 0xFFFFFFFF) - (1 << 31)))
    headroom = _leading_sign_bits(a)
    quotient = srdhm(wrap32(a << headroom), inverse)
    shift = e - (31 - clz) - headroom
    out = multiply_by_quantized_multiplier(quotient, m, shift) + zo
    out = np.where(b == 0, np.where(a > 0, 127, np.where(a < 0, -128, zo)), out)
    return np.clip(out, -128, 127).astype(np.int8)


def leaky_relu_table(input_scale: float, input_zp: int, alpha: float, output_scale: float,
                     output_zp: int) -> np.ndarray:
    """int8 output of TFLite's int8 LEAKY_RELU for inputs -128..127: x - zp rescaled by input/output scale where
    it is >= 0, by input scale x alpha / output scale below (the factors in float32, as its kernel computes
    them, then QuantizeMultiplier; a negative alpha through its magnitude, the product negated)."""
    si, so, a = np.float32(input_scale), np.float32(output_scale), np.float32(alpha)
    mi, ei = quantize_multiplier(float(si / so))
    ma, ea = quantize_multiplier(float(abs(si * a / so)))
    v = np.arange(-128, 128, dtype=np.int64) - input_zp
    negative = multiply_by_quantized_multiplier(v, ma, ea) * (-1 if a < 0 else 1)
    out = np.where(v >= 0, multiply_by_quantized_multiplier(v, mi, ei), negative) + output_zp
    return np.clip(out, -128, 127).astype(np.int8)


def _srdhm16(a: int, b: int) -> int:
    """SaturatingRoundingDoublingHighMul of int16 values."""
    if a == b == -(1 << 15):
        return (1 << 15) - 1
    ab = a * b
    total = ab + ((1 << 14) if ab >= 0 else 1 - (1 << 14))
    return int(math.copysign(abs(total) // (1 << 15), total)) if total else 0


def _sat_shl16(x: int, k: int) -> int:
    return max(-(1 << 15), min((1 << 15) - 1, x * (1 << k)))


def _int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier, then the multiplier rounded to 16 bits (DownScaleInt32ToInt16Multiplier)."""
    m, e = quantize_multiplier(real)
    return (32767 if m >= INT32_MAX - (1 << 15) else (m + (1 << 15)) >> 16), e


def hard_swish_table(input_scale: float, input_zp: int, output_scale: float, output_zp: int) -> np.ndarray:
    """int8 output of TFLite's int8 HARD_SWISH for inputs -128..127, in its int16 fixed point: x - zp on a
    scale 128 times finer, one rescale to the output, the "reluish" factor (x + 3) / 6 clamped to [0, 1]
    from a second rescale (3/32768 units), their truncating doubling high product, a rounding shift."""
    hires = np.float32(1.0 / 128.0) * np.float32(input_scale)
    out_m, out_e = _int16_multiplier(float(hires / np.float32(output_scale)))
    relu_m, relu_e = _int16_multiplier(float(hires / np.float32(3.0 / 32768.0)))
    if out_e > 0:
        raise ValueError(f"input scale {input_scale} over output scale {output_scale} is above 128")
    out = []
    for x in range(-128, 128):
        value = (x - input_zp) * 128
        preshift = _srdhm16(value, out_m)
        reluish = _sat_shl16(value, relu_e - 1) if relu_e > 0 else value
        reluish = _srdhm16(reluish, relu_m)
        if relu_e > 0:
            reluish = _sat_shl16(reluish, 1)
        elif relu_e < 0:
            reluish = int(rounding_divide_by_pot(reluish, -relu_e))
        reluish = (reluish + (1 << 15)) >> 1
        product = reluish * preshift
        high = int(math.copysign(abs(product) // (1 << 15), product)) if product else 0
        out.append(int(rounding_divide_by_pot(high, -out_e)) + output_zp)
    return np.clip(np.asarray(out, np.int64), -128, 127).astype(np.int8)
