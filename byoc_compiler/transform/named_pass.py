"""A pass with a name: what the TVM-style factories (`AnnotateTarget([...])`) return.

The name is what the partition pipeline reports when an invariant breaks after it.
"""
from __future__ import annotations

from typing import Callable

from ..ir.module import IRModule


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
        from ..transform.infer_type import infer_type

        return infer_type(mod)
    return mod
