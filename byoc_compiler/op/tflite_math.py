"""TensorFlow Lite's integer arithmetic, for the quantized ops whose `rounding` is "tflite".

TFLite (and TensorFlow Lite Micro, whose reference kernels microcontrollers run) rescale an int32
value by a real factor r given as a 31-bit multiplier M and a power-of-two exponent e:
r ~= M * 2**(e - 31), M in [2**30, 2**31). The factor is computed in double from the float32 scales
(input * weight / output) and split by `quantize_multiplier` (frexp, then M rounded half away from
zero). Applying it ("double rounding", TFLite's default build) is two roundings: a left shift for
e > 0, the saturating rounding doubling high multiply (the top 32 bits of 2*x*M; the sign decides the
nudge, so a positive tie rounds up and a negative one towards zero: -0.5 gives 0), then a rounding right shift by -e (ties away from zero,
computed with a mask). The single-rounding build (TFLITE_SINGLE_ROUNDING) rounds once:
(x * M + 2**(s-1)) >> s with s = 31 - e, ties towards +infinity.

Everything works on int64 numpy arrays holding int32 values, so that the C kernels, which use int32
and int64 exactly like this, agree bit for bit.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
ADD_LEFT_SHIFT = {"int8": 20, "uint8": 20, "int16": 15}   # TFLite's ADD/SUB headroom, per input dtype


def quantize_multiplier(real: float) -> tuple[int, int]:
    """(M, e) with real ~= M * 2**(e - 31), M < 2**31; (0, 0) for 0 and factors too small to represent."""
    if real == 0.0:
        return 0, 0
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"scale factor {real!r} must be finite and non-negative")
    q, exponent = math.frexp(real)                     # real = q * 2**exponent, q in [0.5, 1)
    m = math.floor(q * 2.0 ** 31 + 0.5)                # std::round: half away from zero (q > 0)
    if m == 2 ** 31:
        m //= 2
        exponent += 1
    if exponent < -31:                                 # below 2**-32: every product rounds to 0
        return 0, 0
    if exponent > 30:
        raise ValueError(f"scale factor {real!r} is too large for a 31-bit multiplier (2**30 at most)")
    return int(m), int(exponent)


def multipliers(reals: Sequence[float]) -> tuple[list[int], list[int]]:
    pairs = [quantize_multiplier(r) for r in reals]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _trunc_div(a: np.ndarray, d: int) -> np.ndarray:
    """a / d rounded towards zero (C's integer division), int64."""
    q = np.abs(a) // d
    return np.where(a < 0, -q, q)


def srdhm(a: np.ndarray, b) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul of int32 values: round(a * b / 2**31), a tie of a positive
    product up, of a negative product towards zero (the nudge 1 - 2**30, then truncation)."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    prod = a * b
    nudge = np.where(prod >= 0, 1 << 30, 1 - (1 << 30))
    out = _trunc_div(prod + nudge, 1 << 31)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, out)


def rounding_divide_by_pot(x: np.ndarray, exponent) -> np.ndarray:
    """x / 2**exponent rounded half away from zero (exponent in [0, 31])."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def wrap32(x: np.ndarray) -> np.ndarray:
    """int64 -> the int32 value C's two's-complement arithmetic keeps (as int64)."""
    return ((np.asarray(x, np.int64) + 2 ** 31) % 2 ** 32) - 2 ** 31


def multiply_by_quantized_multiplier(x: np.ndarray, m, e, single_rounding: bool = False) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier(x, M, e) on int32 values (int64 arrays; m, e broadcast)."""
    x = np.asarray(x, np.int64)
    m = np.asarray(m, np.int64)
    e = np.asarray(e, np.int64)
    if single_rounding:
        shift = 31 - e
        return wrap32((x * m + (np.int64(1) << (shift - 1))) >> shift)
    left = np.maximum(e, 0)
    right = np.maximum(-e, 0)
    return rounding_divide_by_pot(srdhm(wrap32(x << left), m), right)


def multiply_by_quantized_multiplier_64(x: np.ndarray, m, e) -> np.ndarray:
    """The int64-accumulator form (16x8 kernels): M rounded to 16 bits, then one rounding shift by 15 - e
    (ties towards +infinity: the shift floors), the result kept as an int32 (C's conversion wraps). The
    products wrap in int64 like the C kernel's unsigned arithmetic (TFLite assumes |x| < 2**47)."""
    x = np.asarray(x, np.int64)
    m = np.asarray(m, np.int64)
    reduced = np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)
    shift = 15 - np.asarray(e, np.int64)
    with np.errstate(over="ignore"):
        total = x * reduced + (np.int64(1) << (shift - 1))
    return wrap32(total >> shift)


def requantize(acc: np.ndarray, reals: Sequence[float], out_zp, axis: int, out_dtype: str,
               single_rounding: bool = False, wide: bool = False) -> np.ndarray:
    """saturate(MultiplyByQuantizedMultiplier(acc, M_c, e_c) + out_zp) per channel along `axis`."""
    ms, es = multipliers(reals)
    nd = acc.ndim
    shape = [1] * nd
    if len(ms) > 1:
        shape[axis] = len(ms)
    m = np.asarray(ms, np.int64).reshape(shape if len(ms) > 1 else ())
    e = np.asarray(es, np.int64).reshape(shape if len(ms) > 1 else ())
    if wide:
        scaled = multiply_by_quantized_multiplier_64(acc, m, e)
    else:
        scaled = multiply_by_quantized_multiplier(acc, m, e, single_rounding)
    info = np.iinfo(out_dtype)
    zp = np.asarray(out_zp, np.int64).reshape(shape if np.size(out_zp) > 1 else ())
    return np.clip(scaled + zp, info.min, info.max).astype(out_dtype)


def add_params(lhs_scale: float, rhs_scale: float, out_scale: float, dtype: str) -> dict:
    """TFLite ADD's fixed-point parameters: both inputs to twice the larger scale, shifted left first."""
    left = ADD_LEFT_SHIFT[dtype]
    twice_max = 2.0 * max(lhs_scale, rhs_scale)
    m1, e1 = quantize_multiplier(lhs_scale / twice_max)
    m2, e2 = quantize_multiplier(rhs_scale / twice_max)
    mo, eo = quantize_multiplier(twice_max / ((1 << left) * out_scale))
    return {"left_shift": left, "m1": m1, "e1": e1, "m2": m2, "e2": e2, "mo": mo, "eo": eo}


def add(lhs: np.ndarray, rhs: np.ndarray, lhs_zp: int, rhs_zp: int, out_zp: int, p: dict,
        out_dtype: str, subtract: bool = False) -> np.ndarray:
    """TFLite's quantized ADD (SUB with `subtract`: the rhs multiplier negated), before the activation clamp."""
    a = (np.asarray(lhs, np.int64) - lhs_zp) << p["left_shift"]
    b = (np.asarray(rhs, np.int64) - rhs_zp) << p["left_shift"]
    sa = multiply_by_quantized_multiplier(a, p["m1"], p["e1"])
    sb = multiply_by_quantized_multiplier(b, -p["m2"] if subtract else p["m2"], p["e2"])
    raw = multiply_by_quantized_multiplier(wrap32(sa + sb), p["mo"], p["eo"]) + out_zp
    info = np.iinfo(out_dtype)
    return np.clip(raw, info.min, info.max).astype(out_dtype)


def average_pool_divide(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    """TFLite's integer average: total / count rounded half away from zero (C division truncates)."""
    total = np.asarray(total, np.int64)
    count = np.asarray(count, np.int64)
    half = count // 2
    return np.where(total > 0, (total + half) // count, -((half - total) // count))


def reduce_multiplier(input_scale: float, output_scale: float, count: int, divide: bool) -> tuple[int, int]:
    """(M, e) of TFLite's int8/int16 MEAN (divide) or SUM: input/output scale in double through
    quantize_multiplier; MEAN folds 1/count in as (M << s) / count (integer division) with the exponent
    lowered by s = floor(log2(count)), s clamped to 32 and to 31 + e."""
    m, e = quantize_multiplier(input_scale / output_scale)
    if divide and count > 0:
        shift = min(count.bit_length() - 1, 32, 31 + e)
        m, e = (m << shift) // count, e - shift
    return m, e


def reduce_rescale(total: np.ndarray, count: int, input_zp: int, output_zp: int, m: int, e: int,
                   out_dtype: str) -> np.ndarray:
    """saturate(MultiplyByQuantizedMultiplier(total - input_zp * count, M, e) + output_zp): the last step of
    TFLite's quantized MEAN and SUM, `total` the int32 sum of the raw inputs."""
    shifted = wrap32(wrap32(total) - input_zp * count)   # TFLite sums in int32
    info = np.iinfo(out_dtype)
    return np.clip(multiply_by_quantized_multiplier(shifted, m, e) + output_zp, info.min, info.max).astype(out_dtype)
