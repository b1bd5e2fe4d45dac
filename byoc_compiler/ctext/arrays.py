"""Static C arrays: typed constants, raw bytes, int64 shapes; and wrapping long lists.

C has no empty arrays, so an empty one gets a single 0 element (its declared length is 1).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .dtypes import c_type
from .literals import element_literals


def const_array(name: str, array, per_line: int = 8) -> str:
    """`static const T name[n] = {...};` with the exact values of `array`, `per_line` per line
    (typed literals, so the same text is right on any byte order)."""
    array = np.asarray(array)
    dtype = "bool" if array.dtype == np.bool_ else str(array.dtype)
    items = element_literals(array) or ["0"]
    rows = ["  " + ", ".join(items[i:i + per_line]) + "," for i in range(0, len(items), per_line)]
    return f"static const {c_type(dtype)} {name}[{len(items)}] = {{\n" + "\n".join(rows) + "\n};\n"


def byte_array(name: str, data: bytes, per_line: int = 24) -> str:
    """`static const unsigned char name[n] = {...};`."""
    body = bytes(data) or b"\0"
    rows = [",".join(str(b) for b in body[i:i + per_line]) for i in range(0, len(body), per_line)]
    return f"static const unsigned char {name}[{len(body)}] = {{\n" + ",\n".join(rows) + "\n};\n"


def line_array(name: str, dtype: str, values, const: bool = True) -> str:
    """`static const T name[n] = {a, b};` on one line (shapes, offsets, per-channel parameters), each item
    exact in `dtype`; `const=False` for a DLTensor's shape, which C types as `int64_t*`."""
    items = element_literals(np.asarray(list(values), dtype=dtype)) or ["0"]
    qualifier = "static const" if const else "static"
    return f"{qualifier} {c_type(dtype)} {name}[{len(items)}] = {{{', '.join(items)}}};"


def int64_array(name: str, values: Sequence[int], const: bool = True) -> str:
    """`line_array` of int64 (shapes, offsets); callers write NULL instead of an empty shape."""
    return line_array(name, "int64", [int(v) for v in values], const)


def shape_text(shape: Sequence[int]) -> str:
    """[1, 3, 16, 16] for comments."""
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


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
