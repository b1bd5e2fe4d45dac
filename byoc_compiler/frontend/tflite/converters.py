"""The whole converter table: every converter module imported (each registers its operators into table.py on
import), and the questions asked of the complete table."""
from __future__ import annotations

from . import ops_elementwise, ops_nn, ops_shape, ops_spatial  # noqa: F401
from .table import _TABLE, Converter


def resolve(name: str) -> Converter | None:
    return _TABLE.get(name)


def supported_ops() -> list[str]:
    """The TFLite builtin operators byoc imports, sorted."""
    return sorted(_TABLE)
