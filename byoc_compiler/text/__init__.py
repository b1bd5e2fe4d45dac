"""The text form of the IR (Relay's text format): `parse` reads it, `astext` writes it.

Parsing builds calls through the op registry (`op.registry.make_call` checks attributes and fills
defaults), so this package sits above `op`; printing needs no registry and lives in `ir.printer`.
"""
from ..ir.printer import astext
from .parser import MAX_NESTING, ParseError, parse, parse_expr

__all__ = ["parse", "parse_expr", "ParseError", "astext", "MAX_NESTING"]
