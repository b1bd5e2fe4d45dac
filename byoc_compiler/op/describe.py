"""`describe_ops()`: the op table printed by `python -m byoc_compiler ops`."""
from __future__ import annotations

from .registry import REQUIRED, all_ops


def _attr_text(attr) -> str:
    if attr.default is REQUIRED:
        return attr.name
    return f"{attr.name}={attr.default!r}"


def describe_ops() -> str:
    """A text table: op, inputs, attributes with defaults (required ones bare), family."""
    rows = [("op", "family", "inputs", "attrs (default)")]
    for name, opdef in all_ops().items():
        inputs = "(" + ", ".join(opdef.inputs) + ")" if not opdef.tuple_input else "(tuple of tensors)"
        attrs = ", ".join(_attr_text(a) for a in opdef.attrs) or "-"
        rows.append((name, opdef.family, inputs, attrs))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for i, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + row[3])
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 15)
    return "\n".join(lines)
