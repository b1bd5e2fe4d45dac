"""The whole converter table: every converter module imported (each registers its rows into table.py on
import), so the table's queries answer for all of them. The importer, upgrade.py and `supported_ops` reach
the table through here; a converter module imports table.py only."""
from __future__ import annotations

from . import (ops_compare, ops_elementwise, ops_linalg, ops_math, ops_nn, ops_quant, ops_quant_contrib,  # noqa: F401
               ops_reduce, ops_resize, ops_slicing, ops_tensor)
from .table import implemented_versions, resolve, supported_ops

__all__ = ["implemented_versions", "resolve", "supported_ops"]
