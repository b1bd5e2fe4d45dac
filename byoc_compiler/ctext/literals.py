"""C text for one value of any dtype byoc has, reading back to the very same value.

Floats are written as the shortest decimal that reads back as the same binary32 (`f` suffix: the
compiler rounds the decimal straight to float, never through double) or binary64 value, so every
finite value (-0.0 and subnormals included) is bit-exact. Infinities are `INFINITY` and NaN is
`NAN` from <math.h>, with their sign; a NaN's payload bits are not kept (C99 has no constant
expression for them). float16 travels as its binary16 bits (`15360u`), as the C side stores it.
Integers are plain decimals, INT64_C(...) beyond 32 bits, and the type's minimum as its macro
(INT32_MIN is not a literal in C: `-2147483648` is the negation of a wider constant).

Two forms of the same text: `literal(v, dtype)` (and the per-dtype writers) is safe in any
expression, so a negative number is parenthesized (`x - (-1.5f)` never becomes `x--1.5f`);
`element_literals(array)` gives the items of an initializer list, where numbers stay bare
(`-1.5f`) and only macro forms keep their parentheses (`(-INFINITY)`).
"""
from __future__ import annotations

import math

import numpy as np

# dtype -> (min, max) of the integer dtypes a model can hold.
INT_RANGES = {"int8": (-2 ** 7, 2 ** 7 - 1), "int16": (-2 ** 15, 2 ** 15 - 1), "int32": (-2 ** 31, 2 ** 31 - 1),
              "int64": (-2 ** 63, 2 ** 63 - 1), "uint8": (0, 2 ** 8 - 1), "uint16": (0, 2 ** 16 - 1)}


def _signed(text: str, negative: bool) -> str:
    return f"(-{text})" if negative else text


def _real(value: float, digits: str, suffix: str, nan: str, inf: str) -> str:
    negative = math.copysign(1.0, value) < 0
    if math.isnan(value):
        return _signed(nan, negative)
    if math.isinf(value):
        return _signed(inf, negative)
    text = digits.lstrip("-")
    if "e" not in text and "." not in text:
        text += ".0"  # "1f" is not a C constant
    return _signed(text + suffix, negative)   # -0.0 too: its sign is the whole point


def float_literal(value) -> str:
    """A C float constant with the bits of float32(value) (non-finite values need <math.h>)."""
    v = np.float32(value)
    # numpy prints the shortest digits that read back as this float32
    return _real(float(v), str(v), "f", "NAN", "INFINITY")


def double_literal(value) -> str:
    """A C double constant with the bits of `value` (non-finite values need <math.h>)."""
    v = float(value)
    return _real(v, repr(v), "", "((double)NAN)", "((double)INFINITY)")


def half_literal(value) -> str:
    """The binary16 bits of float16(value) as an unsigned constant (C99 has no half type)."""
    return f"{int(np.array(value, dtype=np.float16).view(np.uint16))}u"


def int_literal(value, dtype: str = "int64") -> str:
    """An integer constant of `dtype`, safe at the type's extremes; ValueError outside its range."""
    v = int(value)
    low, high = _int_range(dtype)
    if not low <= v <= high:
        raise ValueError(f"{v} does not fit in {dtype} ({low}..{high})")
    if v == low and dtype in ("int32", "int64"):
        return f"INT{dtype[3:]}_MIN"
    if not -(1 << 31) <= v < (1 << 31):
        return f"INT64_C({v})" if v >= 0 else f"(-INT64_C({-v}))"
    return _signed(str(-v), True) if v < 0 else str(v)


def _int_range(dtype: str) -> tuple[int, int]:
    try:
        return INT_RANGES[dtype]
    except KeyError:
        raise ValueError(f"no integer C constant of dtype {dtype!r}; one of {', '.join(INT_RANGES)}") from None


def bool_literal(value) -> str:
    return "1" if value else "0"


_WRITERS = {"float32": float_literal, "float64": double_literal, "float16": half_literal, "bool": bool_literal,
            **{dtype: (lambda v, _d=dtype: int_literal(v, _d)) for dtype in INT_RANGES}}


def literal(value, dtype: str) -> str:
    """A C constant of `dtype` with exactly the value `value` has in that dtype, safe in any expression."""
    try:
        writer = _WRITERS[dtype]
    except KeyError:
        raise ValueError(f"no C constant of dtype {dtype!r}; one of {', '.join(_WRITERS)}") from None
    return writer(value)


def bare(text: str) -> str:
    """The initializer form of a literal: a parenthesized negative number loses its parentheses."""
    return text[1:-1] if text.startswith("(-") and text[2:3].isdigit() else text


# Small arrays (biases, scales) get the shortest digits, which a person can read; big weight arrays
# get 9 significant digits (FLT_DECIMAL_DIG: always enough to read back the same float32), formatted
# in bulk, several times faster on ResNet-sized weights.
SHORTEST_UP_TO = 1024


def _bulk_float32(flat: np.ndarray) -> list[str]:
    with np.errstate(invalid="ignore"):       # a signalling NaN quietens; it is rewritten below anyway
        values = flat.astype(np.float64).tolist()
    items = (("%.9gf\n" * len(values)) % tuple(values)).split("\n")[:-1]
    # Non-finite values, and whole numbers ("%g" prints 1.0 as "1" and -0.0 as "-0": "1f" is not C).
    with np.errstate(invalid="ignore"):
        special = ~np.isfinite(flat) | (flat == np.trunc(flat))
    for i in np.flatnonzero(special).tolist():
        items[i] = bare(float_literal(flat[i]))
    return items


def element_literals(array) -> list[str]:
    """The items of a C initializer list for `array` (flattened, C order), each exact in its dtype."""
    flat = np.ascontiguousarray(array).reshape(-1)
    dtype = "bool" if flat.dtype == np.bool_ else str(flat.dtype)
    if dtype == "float32" and flat.size > SHORTEST_UP_TO:
        return _bulk_float32(flat)
    if dtype in INT_RANGES:
        return [bare(int_literal(v, dtype)) for v in flat.tolist()]
    if dtype not in _WRITERS:
        raise ValueError(f"a constant of dtype {dtype} cannot be written as C; one of {', '.join(_WRITERS)}")
    writer = _WRITERS[dtype]
    return [bare(writer(v)) for v in flat]
