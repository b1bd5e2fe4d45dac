"""TFLite's int16 softmax (16x8 quantization: output scale 1/32768, zero point 0), as TensorFlow Lite Micro's
reference kernel computes it.

It works from two 513-entry int16 tables made in float32 when the model is prepared: exp(v) on [-10, 0] and
1 / (1 + v) on [0, 1], each sampled at 512 steps with the sample nudged by half the error of linear
interpolation at the step's midpoint (so interpolating between entries is closer to the function), plus the
end value for the last slope. A lookup of an int16 value v interpolates entry 256 + (v >> 7) towards the
next by the low 7 bits, rounding. Per row: the difference from the row's maximum rescaled so that
[-65535, 0] covers [-10, 0] (MultiplyByQuantizedMultiplier with the factor input scale x beta / (10 / 65535)),
re-centred by 32767 and saturated to int16, looked up in the exp table; the exps summed in int32; the sum
normalized by its leading zeros and looked up (less 1.5 in Q1.15, re-centred) in the reciprocal table;
each exp times the reciprocal, shifted right with rounding, clamped to [0, 32767].

The tables are computed here with numpy float32 arithmetic in TFLite's order (no fused multiply-add), the
exponential correctly rounded from float64; tests/test_tflite_import.py checks the whole kernel against
TensorFlow Lite Micro. The host C gets the same tables as constants (backend/host_kernels/tflite_qnn.py).
"""
from __future__ import annotations

import functools

import numpy as np

from .tflite_fixedpoint import count_leading_zeros32
from .tflite_math import multiply_by_quantized_multiplier, quantize_multiplier

LUT_STEPS = 512
EXP_RANGE = 10.0                       # exp's table covers [-10, 0]: exp(-10) adds nothing to a sum of 32767s


def _round_away(v: np.ndarray) -> np.ndarray:
    """TfLiteRound on float32: half away from zero."""
    return (np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))).astype(np.float32)


def _table(func, lo: float, hi: float) -> np.ndarray:
    """TFLite's gen_lut<float, int16_t, int16_t>(func, lo, hi, -1, 1): 512 nudged samples and the end value."""
    f32 = np.float32
    lo, hi = f32(lo), f32(hi)
    step = f32((hi - lo) / f32(LUT_STEPS))
    half = f32(step / f32(2))
    scale = f32(32768)
    i = np.arange(LUT_STEPS, dtype=np.float32)
    at = f32(lo) + (i * step).astype(np.float32)
    val = func(at)
    mid = func((at + half).astype(np.float32))
    nxt = func((lo + ((i + f32(1)) * step).astype(np.float32)).astype(np.float32))
    sample = _round_away((val * scale).astype(np.float32))
    interp = _round_away((((nxt * scale).astype(np.float32) + sample).astype(np.float32) / f32(2)).astype(np.float32))
    err = (interp - _round_away((mid * scale).astype(np.float32))).astype(np.float32)
    bias = _round_away((err / f32(2)).astype(np.float32))
    table = np.clip((sample - bias).astype(np.float32), -32768, 32767)
    end = np.clip(_round_away((func(np.asarray([hi], np.float32)) * scale).astype(np.float32)), -32768, 32767)
    return np.concatenate([table, end]).astype(np.int16)


def _exp(v: np.ndarray) -> np.ndarray:
    return np.exp(v.astype(np.float64)).astype(np.float32)


def _one_over_one_plus(v: np.ndarray) -> np.ndarray:
    return (np.float32(1) / (np.float32(1) + v).astype(np.float32)).astype(np.float32)


@functools.lru_cache(maxsize=1)
def tables() -> tuple[np.ndarray, np.ndarray]:
    """(exp table, 1/(1+x) table): 513 int16 values each."""
    return _table(_exp, -EXP_RANGE, 0.0), _table(_one_over_one_plus, 0.0, 1.0)


def lookup(value: np.ndarray, table: np.ndarray) -> np.ndarray:
    """TFLite's int16 table lookup: entry 256 + (v >> 7) and the next, interpolated by v's low 7 bits."""
    v = np.asarray(value, np.int64)
    index = 256 + (v >> 7)
    base = table[index].astype(np.int64)
    slope = table[index + 1].astype(np.int64) - base
    return ((base + ((slope * (v & 0x7F) + 64) >> 7) + 2 ** 15) % 2 ** 16 - 2 ** 15)   # kept as int16


def input_multiplier(input_scale: float, beta: float) -> tuple[int, int]:
    """(M, e) rescaling a difference so that [-65535, 0] covers [-10, 0]: input scale x beta / (10 / 65535)."""
    return quantize_multiplier(float(np.float32(input_scale)) * float(np.float32(beta)) / (EXP_RANGE / 65535.0))


def softmax(x: np.ndarray, input_scale: float, beta: float, axis: int) -> np.ndarray:
    """TFLite's int16 softmax along `axis` (output scale 1/32768, zero point 0)."""
    exp_table, recip_table = tables()
    m, e = input_multiplier(input_scale, beta)
    v = np.moveaxis(x.astype(np.int64), axis, -1)
    scaled = multiply_by_quantized_multiplier(v - v.max(axis=-1, keepdims=True), m, e)
    exps = lookup(np.clip(scaled + 32767, -32768, 32767), exp_table)
    total = exps.sum(axis=-1, keepdims=True)                       # > 0: the maximum's exp is about 32767
    headroom = count_leading_zeros32(total)
    shifted = ((total << (headroom - 1)) + (1 << 13)) >> 14
    reciprocal = lookup(np.clip(shifted - (1 << 15) - (1 << 16), -32768, 32767), recip_table)
    shift = 31 - headroom
    out = (exps * reciprocal + (np.int64(1) << (shift - 1))) >> shift
    return np.moveaxis(np.clip(out, 0, 32767).astype(np.int16), -1, axis)
