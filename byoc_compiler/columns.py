"""Plain-text tables for reports (check, debug compare/profile, `byoc targets`): left-aligned columns
two spaces apart, no trailing blanks."""
from __future__ import annotations

from typing import Sequence


def columns(rows: Sequence[Sequence[str]], rule: bool = True) -> str:
    """`rows[0]` is the header; with `rule`, a line of dashes under it as wide as each column."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if rule:
        out.insert(1, "  ".join("-" * w for w in widths).rstrip())
    return "\n".join(out)
