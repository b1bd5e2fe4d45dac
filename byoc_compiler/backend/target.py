"""The build side of a target: what `build()` asks of a target beyond its spec (byoc_compiler.spec).

The spec names stay importable from here for code written before the split.
"""
from __future__ import annotations

from ..spec import (CompositePattern, Predicate, Target, TargetError, TargetInfo, all_of,  # noqa: F401
                    dtypes_only, find_composite, float32_only, get_target, get_targets, rank_at_most,
                    register_target, reload_targets, targets, unregister_target)


def require_codegen(name: str) -> Target:
    """The enabled target `name`, which must have a codegen."""
    target = get_target(name)
    if target.codegen is None:
        where = (target.module or name).replace(".", "/")
        raise TargetError(f"target {target.name!r} declares no codegen: set `target.codegen` in {where}/ "
                          f"(a callable (function, symbol) -> artifact)")
    return target
