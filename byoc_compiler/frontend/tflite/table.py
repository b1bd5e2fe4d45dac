"""The converter table: TFLite BuiltinOperator name -> converter.

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


def resolve(name: str) -> Converter | None:
    _load_converters()
    return _TABLE.get(name)


def supported_ops() -> list[str]:
    """The TFLite builtin operators byoc imports, sorted."""
    _load_converters()
    return sorted(_TABLE)


def _load_converters() -> None:
    # The converter modules register themselves on import.
    from . import ops_elementwise, ops_nn, ops_shape  # noqa: F401
