"""Rule: how one op (or one step the codegen makes) becomes one call of the kernel library.

The tables of rules (rules.py and the rules_*.py it merges) are built from this class; the lowering reads
`scratch` to plan the workspace, render.py calls `emit` and `scratch_query` to write the call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Rule:
    emit: Callable
    scratch: Callable = lambda step: 0
    # C expression of the library's own scratch size for this call (in the scope of emit's
    # declarations): the generated code compares it with what was planned, so a kernel library
    # whose size formula drifted from kernels.py fails with a message instead of overrunning.
    scratch_query: Callable | None = None
    # Inputs the kernel may overwrite with its output (byoc_ck.h: "out may alias ..."), when the
    # shapes are equal and the input is not read afterwards: the codegen then runs it in place.
    inplace: tuple[int, ...] = ()
