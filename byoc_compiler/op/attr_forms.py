"""Normal forms and checks of attribute values shared by several ops (pairs, paddings, axes)."""
from __future__ import annotations

from typing import Any

from ..ir.types import DTYPES


def pair(value: tuple[int, ...]) -> tuple[int, int]:
    """1 int -> (v, v); 2 ints as they are."""
    if len(value) == 1:
        return (value[0], value[0])
    if len(value) == 2:
        return tuple(value)
    raise ValueError(f"expected 1 or 2 integers, got {len(value)}")


def padding4(value: tuple[int, ...]) -> tuple[int, int, int, int]:
    """1, 2 or 4 ints -> (top, left, bottom, right), Relay's convention."""
    if len(value) == 1:
        return (value[0],) * 4
    if len(value) == 2:
        return (value[0], value[1], value[0], value[1])
    if len(value) == 4:
        return tuple(value)
    raise ValueError(f"expected 1, 2 or 4 integers (top, left, bottom, right), got {len(value)}")


def all_positive(value: Any) -> str | None:
    values = value if isinstance(value, tuple) else (value,)
    return None if all(v > 0 for v in values) else "must be positive"


def all_non_negative(value: Any) -> str | None:
    values = value if isinstance(value, tuple) else (value,)
    flat = [v for item in values for v in (item if isinstance(item, tuple) else (item,))]
    return None if all(v >= 0 for v in flat) else "must not be negative"


def dtype_name(value: str) -> str | None:
    return None if value in DTYPES else f"must be one of {', '.join(DTYPES)}"
