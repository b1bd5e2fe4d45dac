"""A pass with a name: what the TVM-style factories (`AnnotateTarget([...])`) return.

The name is what the partition pipeline reports when an invariant breaks after it.
"""
from __future__ import annotations

from typing import Callable, Optional

from ..ir.expr import Expr, Function
from ..ir.module import IRModule
from .infer_type import infer_type


class NamedPass:
    def __init__(self, name: str, fn: Callable[[IRModule], IRModule]):
        self.name = name
        self.fn = fn

    def __call__(self, mod: IRModule) -> IRModule:
        if not isinstance(mod, IRModule):
            raise TypeError(f"{self.name} expects an IRModule, got {type(mod).__name__}; wrap an expression "
                            "with IRModule.from_expr(expr)")
        return self.fn(mod)

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


def typed(mod: IRModule) -> IRModule:
    """`mod` with types inferred, unless main is typed already (passes keep types on the nodes they make)."""
    main = mod["main"]
    if main.body.checked_type is None:
        return infer_type(mod)
    return mod


def rewrite_bodies(mod: IRModule, rewrite: Callable[[Function], Optional[Expr]]) -> IRModule:
    """`mod` with each function's body replaced by `rewrite(func)`, types inferred again; `mod` itself
    when no body changed (`rewrite` returned None or the same body). External functions (a Compiler
    attribute) belong to their target and are never rewritten."""
    out, changed = IRModule(), False
    for name, func in mod.items():
        body = None if "Compiler" in func.attrs else rewrite(func)
        if body is None or body is func.body:
            out = out.with_function(name, func)
            continue
        changed = True
        out = out.with_function(name, Function(func.params, body, func.ret_type, func.attrs, func.span))
    return infer_type(out) if changed else mod
