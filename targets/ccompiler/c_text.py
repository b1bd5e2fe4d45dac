"""Small C-text helpers of the ccompiler codegen: literals, shape arrays, safe comments."""
from __future__ import annotations

import math
import re

import numpy as np

# Everything else in a comment becomes "_": no "*/" or "/*" (comment nesting, -Wcomment), no
# backslash or "??/" (line splicing), no newline or control characters from a model's names.
_COMMENT_UNSAFE = re.compile(r"[^A-Za-z0-9_ .,:;=+\-()\[\]%#<>@']")


def comment(text: str) -> str:
    """`/* text */` with everything that could end, nest or splice the comment replaced."""
    return f"/* {_COMMENT_UNSAFE.sub('_', str(text))} */"


def float_literal(value) -> str:
    """A float32 value as C text that reads back to the same bits (NAN/INFINITY from math.h)."""
    v = np.float32(value)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    # numpy prints the shortest digits that read back as this float32; the f suffix makes the
    # compiler round that decimal straight to float (no double rounding through double).
    text = str(v)
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def int_literal(value: int) -> str:
    return f"INT64_C({int(value)})" if not -(2 ** 31) < int(value) < 2 ** 31 else str(int(value))


def shape_text(shape) -> str:
    """[1, 3, 16, 16] for comments."""
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def int64_array(name: str, values) -> str:
    """`static const int64_t name[n] = {...};` (callers pass NULL instead for rank 0)."""
    values = [int(v) for v in values]
    return f"static const int64_t {name}[{len(values)}] = {{{', '.join(int_literal(v) for v in values)}}};"


# Small constants (biases, scales) get the shortest digits, which a person can read; big weight
# arrays get 9 significant digits (FLT_DECIMAL_DIG: always enough to read back the same float32),
# formatted in bulk, several times faster on ResNet-sized weights.
SHORTEST_UP_TO = 1024


def _bulk_float_literals(flat: np.ndarray) -> list[str]:
    values = flat.astype(np.float64).tolist()
    items = (("%.9gf\n" * len(values)) % tuple(values)).split("\n")[:-1]
    # Non-finite values, and whole numbers ("%g" prints 1.0 as "1" and -0.0 as "-0": "1f" is not C).
    with np.errstate(invalid="ignore"):
        special = ~np.isfinite(flat) | (flat == np.trunc(flat))
    for i in np.flatnonzero(special).tolist():
        items[i] = float_literal(flat[i])
    return items


def array_values(data: np.ndarray, per_line: int = 8) -> list[str]:
    """Initializer lines of a flattened array (at least one value: C has no empty arrays)."""
    flat = np.asarray(data).reshape(-1)
    if flat.dtype == np.float32 and flat.size <= SHORTEST_UP_TO:
        items = [float_literal(v) for v in flat]
    elif flat.dtype == np.float32:
        items = _bulk_float_literals(flat)
    elif flat.dtype.kind in "iu":
        items = [int_literal(v) for v in flat]
    elif flat.dtype == np.bool_:
        items = ["1" if v else "0" for v in flat]
    else:
        raise ValueError(f"constant of dtype {flat.dtype} cannot be written as C")
    if not items:
        items = ["0"]
    return [", ".join(items[i:i + per_line]) + "," for i in range(0, len(items), per_line)]


def wrap_list(text: str, width: int = 100, indent: str = "    ") -> list[str]:
    """Split a long one-line C declaration after its commas into lines of at most ~width characters."""
    if len(text) <= width:
        return [text]
    lines, current = [], ""
    for piece in text.split(", "):
        candidate = f"{current}, {piece}" if current else piece
        if current and len(candidate) + 1 > width:
            lines.append(current + ",")
            current = indent + piece
        else:
            current = candidate
    lines.append(current)
    return lines
