"""The converter registry: TFLite BuiltinOperator name -> converter. The converter modules (ops_*.py)
register into it with `@converter`; converters.py imports them all and answers for the whole table.

A converter is `fn(op, cx) -> list[Value]` (one per output); it raises NodeError with the reason an
operator cannot be imported. `check(op, cx)` (optional) lists static reasons before conversion.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

_TABLE: dict[str, "Converter"] = {}


@dataclass(frozen=True)
class Converter:
    op: str
    convert: Callable


def converter(*ops: str):
    """Decorator: register `fn(op, cx)` for the given operator names."""
    def register(fn):
        for name in ops:
            if name in _TABLE:
                raise AssertionError(f"{name} registered twice")
            _TABLE[name] = Converter(name, fn)
        return fn
    return register
