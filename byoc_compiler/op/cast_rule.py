"""`cast` between every IR dtype, as numpy computes it, with out-of-range float -> int defined.

numpy's `astype` is C's conversion, which is undefined for a float outside the
target integer's range (and for NaN); the result then depends on the CPU. byoc
defines it instead, the same way in this reference and in the C kernels:

* float -> integer truncates toward zero and **saturates**: values above the
  type's maximum give the maximum, below its minimum the minimum; NaN gives 0.
* integer -> narrower integer wraps modulo 2**bits (two's complement), as numpy.
* -> float16 rounds to nearest, ties to even, from the exact source value
  (float64 sources are not rounded to float32 first); beyond 65504 -> inf.
* -> bool is `x != 0` (NaN is True).
"""
from __future__ import annotations

import numpy as np


def cast_array(x: np.ndarray, dtype: str) -> np.ndarray:
    """`x` converted to `dtype` by the rules above."""
    target = np.dtype(dtype)
    if x.dtype.kind == "f" and target.kind in "iu":
        return _float_to_int(x, target)
    with np.errstate(over="ignore"):   # float overflow to inf is the defined IEEE result
        return x.astype(target)


def _float_to_int(x: np.ndarray, target: np.dtype) -> np.ndarray:
    info = np.iinfo(target)
    v = np.trunc(x.astype(np.float64))
    nan = np.isnan(v)
    high = v >= float(info.max) + 1.0   # exact powers of two in float64, so the tests are exact
    low = v < float(info.min)
    safe = np.where(nan | high | low, 0.0, v)
    out = safe.astype(target)
    out[high] = info.max
    out[low] = info.min
    return out
