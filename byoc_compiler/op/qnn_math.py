"""The arithmetic of the quantized ops, shared by their numpy reference and their C kernels.

qnn.requantize has two roundings: `float32` (the default, what onnxruntime computes: the int32 value
times the float32 factor, rounded to float32, then to the nearest integer, ties to even) and
`fixed_point` (below: integers only, for hardware without floats). A deep network turns even a rare
last-bit difference into many changed outputs, so matching a peer bit for bit needs its rounding.

A rescale by a real factor r (input scale / output scale) is done the way integer hardware does it:
r = M * 2**-S with an integer multiplier M (31 significant bits at most) and a shift S, chosen once
when the graph is compiled; the kernel computes round(x * M / 2**S) in 64-bit integers, rounding
half to even (the rounding ONNX's QuantizeLinear uses), then adds the zero point and saturates.

The factor r itself is computed in float32 from the scales, as onnxruntime does (x_scale * w_scale
/ y_scale, each step rounded to float32). A float32 has 24 significant bits, so M represents it
exactly and the only difference to onnxruntime's float kernels is their final float32 rounding of
acc * r, which changes a result only when it lies within about 2**-24 (relative) of a .5 tie.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

QUANT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32")


def f32(value: float) -> float:
    """`value` rounded to float32, as a Python float."""
    return float(np.float32(value))


def scale_ratio(numerator: float, denominator: float) -> float:
    """numerator / denominator in float32 (onnxruntime's requantization scale)."""
    return float(np.float32(np.float32(numerator) / np.float32(denominator)))


def fixed_point(ratios: Sequence[float]) -> tuple[list[int], int]:
    """Multipliers M_i and one shift S with ratios[i] ~= M_i * 2**-S; the largest M in [2**30, 2**31).

    One shift for all the ratios lets a kernel add several rescaled terms (qnn.add) before rounding.
    """
    largest = max(abs(r) for r in ratios)
    if largest == 0.0:
        return [0 for _ in ratios], 31
    if not math.isfinite(largest) or largest >= 2.0 ** 30:
        raise ValueError(f"scale ratio {largest!r} cannot be requantized (must be finite and below 2**30)")
    _, exp = math.frexp(largest)           # largest = m * 2**exp, m in [0.5, 1)
    shift = 31 - exp
    if shift > 62:                         # every product rounds to 0: |x * M| < 2**62 <= 2**(S-1)
        return [0 for _ in ratios], 31
    mults = [int(np.rint(math.ldexp(r, shift))) for r in ratios]   # exact scaling, ties to even
    if max(abs(m) for m in mults) >= 2 ** 31:                       # the largest rounded up to 2**31
        mults = [int(np.rint(math.ldexp(r, shift - 1))) for r in ratios]
        shift -= 1
    return mults, shift


def round_shift(p: np.ndarray, shift) -> np.ndarray:
    """round(p / 2**shift), ties to even, for int64 `p` (|p| < 2**62) and shift >= 1 (may broadcast)."""
    p = np.asarray(p, np.int64)
    shift = np.asarray(shift, np.int64)
    a = np.abs(p)
    q = a >> shift
    r = a - (q << shift)
    half = np.left_shift(np.int64(1), shift - 1)
    q = q + ((r > half) | ((r == half) & ((q & 1) == 1)))
    return np.where(p < 0, -q, q)


def saturate(v: np.ndarray, dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(v, info.min, info.max).astype(dtype)


def along(values: Sequence, axis: int, ndim: int, dtype) -> np.ndarray:
    """A per-tensor (1 value) or per-channel vector shaped to broadcast along `axis` of an ndim array."""
    arr = np.asarray(values, dtype)
    if arr.size == 1 or ndim == 0:
        return arr.reshape(()) if arr.size == 1 else arr
    shape = [1] * ndim
    shape[axis] = arr.size
    return arr.reshape(shape)


def requantize_array(x: np.ndarray, ratios: Sequence[float], in_zp, out_zp, axis: int,
                     out_dtype: str) -> np.ndarray:
    """saturate(round((x - in_zp) * ratio) + out_zp), per channel along `axis`, in integers."""
    nd = x.ndim
    pairs = [fixed_point([r]) for r in ratios]
    m = along([p[0][0] for p in pairs], axis, nd, np.int64)
    s = along([p[1] for p in pairs], axis, nd, np.int64)
    # |x - zp| is kept below 2**31 so that the product with M < 2**31 fits 64 bits (C does the same).
    d = np.clip(x.astype(np.int64) - along(in_zp, axis, nd, np.int64), -(2 ** 31) + 1, 2 ** 31 - 1)
    return saturate(round_shift(d * m, s) + along(out_zp, axis, nd, np.int64), out_dtype)


def requantize_float32(x: np.ndarray, ratios: Sequence[float], in_zp, out_zp, axis: int,
                       out_dtype: str) -> np.ndarray:
    """saturate(round_half_even(float32(x - in_zp) * ratio) + out_zp), the product rounded to float32:
    what onnxruntime's requantizing kernels (MlasRequantizeOutput) compute, bit for bit."""
    nd = x.ndim
    d = (x.astype(np.int64) - along(in_zp, axis, nd, np.int64)).astype(np.float32)
    v = np.rint(d * along(ratios, axis, nd, np.float32))
    info = np.iinfo(out_dtype)
    v = np.clip(v.astype(np.float64) + along(out_zp, axis, nd, np.float64), info.min, info.max)
    return v.astype(out_dtype)
