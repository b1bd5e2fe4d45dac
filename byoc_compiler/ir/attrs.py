"""Immutable attribute maps: op attributes of a Call and the attrs of a Function."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


class Attrs(Mapping):
    """An ordered, hashable, read-only mapping that also allows `attrs.name` access."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping[str, Any] | None = None, **kwargs: Any):
        merged = dict(items or {})
        merged.update(kwargs)
        object.__setattr__(self, "_items", {str(k): _freeze(v) for k, v in merged.items()})
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    # Mapping's own `in` and get() go through __getitem__ and an exception; the passes ask every function
    # and composite call whether it has "Compiler" / "Composite".
    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._items[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Attrs are immutable; use .with_(name=value)")

    def with_(self, **changes: Any) -> "Attrs":
        merged = dict(self._items)
        merged.update(changes)
        return Attrs(merged)

    def without(self, *names: str) -> "Attrs":
        return Attrs({k: v for k, v in self._items.items() if k not in names})

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(self._items.items())))
        return self._hash

    def __repr__(self) -> str:
        return "Attrs(" + ", ".join(f"{k}={v!r}" for k, v in self._items.items()) + ")"
