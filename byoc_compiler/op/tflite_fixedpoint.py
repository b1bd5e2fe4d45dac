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
