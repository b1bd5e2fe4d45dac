"""The one owner of generated C text: every literal, identifier, array and entry point byoc writes.

    literals.py   one value of any dtype -> C text that reads back bit-exact (`literal`, `float_literal`,
                  `double_literal`, `half_literal`, `int_literal`, `element_literals` for initializers)
    names.py      names from a model -> identifiers (`sanitize_identifier`, `unique_identifiers`,
                  `identifier_part`), string literals (`c_string`) and comments (`comment`)
    arrays.py     static arrays (`const_array`, `byte_array`, `line_array`, `int64_array`), `shape_text`, `wrap_list`
    dtypes.py     a dtype's C element type and DLDataType
    abi.py        the calling convention: element C types, DLDataType codes, a region's core signature
                  and its entry points in both interfaces (`entry_points`)

It is the lowest layer of byoc_compiler (it imports nothing else of it), so the passes that name
regions and the backend that writes them share it, and targets get it through byoc_compiler.vendor.
Change how C looks here, once: the executors (backend/), the host kernels and every target follow.
"""
from __future__ import annotations

from .abi import WORKSPACE_PARAM, core_signature, entry_points
from .dtypes import C_TYPES, DL_DTYPES, c_type, dltype_init
from .arrays import byte_array, const_array, int64_array, line_array, shape_text, wrap_list
from .literals import (bare, bool_literal, double_literal, element_literals, float_literal, half_literal,
                       int_literal, literal)
from .names import (MAX_LEN, c_string, check_identifier, comment, comment_text, identifier_part, is_identifier,
                    sanitize_identifier, unique_identifiers)

__all__ = [
    "C_TYPES", "DL_DTYPES", "WORKSPACE_PARAM", "c_type", "core_signature", "dltype_init", "entry_points",
    "byte_array", "const_array", "int64_array", "line_array", "shape_text", "wrap_list",
    "bare", "bool_literal", "double_literal", "element_literals", "float_literal", "half_literal", "int_literal",
    "literal",
    "MAX_LEN", "c_string", "check_identifier", "comment", "comment_text", "identifier_part", "is_identifier",
    "sanitize_identifier", "unique_identifiers",
]
