"""The text form as the IR's own classes see it (`repr(expr)`, `mod.astext()`, a structural diff), installed
by the printer.

The printer reads expressions, modules and structural keys, so those modules cannot import it back; it
installs its `astext` here when it is imported (ir/__init__ imports it, so whenever the IR is).
"""
from __future__ import annotations

from typing import Any, Callable

_astext: Callable[[Any], str] | None = None


def install(astext: Callable[[Any], str]) -> None:
    global _astext
    _astext = astext


def as_text(obj: Any) -> str:
    """`obj` (an Expr, Function or IRModule) in the text format (printer.astext)."""
    if _astext is None:
        raise RuntimeError("the IR printer is not loaded: import byoc_compiler.ir")
    return _astext(obj)
