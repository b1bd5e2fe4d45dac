"""Targets as partitioning sees them: `Target` (ops, predicates, composite patterns), the reusable
predicates, and the registry that finds targets through config.toml."""
from .registry import (TargetInfo, find_composite, get_target, get_targets, register_target, reload_targets,
                       targets, unregister_target)
from .system_library import SystemLibrary
from .target import (VENDOR_API_VERSION, CompositePattern, Predicate, Target, TargetError, all_of, dtypes_only,
                     float32_only, rank_at_most)

__all__ = ["Target", "TargetError", "CompositePattern", "Predicate", "all_of", "dtypes_only", "float32_only",
           "rank_at_most", "TargetInfo", "find_composite", "get_target", "get_targets", "register_target",
           "reload_targets", "targets", "unregister_target", "SystemLibrary", "VENDOR_API_VERSION"]
