"""The build side of a target: what `build()` asks of a target beyond its declaration (byoc_compiler.target)."""
from __future__ import annotations

from ..target import Target, TargetError, get_target


def require_codegen(name: str) -> Target:
    """The enabled target `name`, which must have a codegen."""
    target = get_target(name)
    if target.codegen is None:
        where = (target.module or name).replace(".", "/")
        raise TargetError(f"target {target.name!r} declares no codegen: set `target.codegen` in {where}/ "
                          f"(a callable (function, symbol) -> artifact)")
    return target
