"""Partitioning a model for BYOC targets in one call, and seeing what happened.

    mod = byoc_compiler.partition_for(["ccompiler", "examplejson"], mod)
    print(byoc_compiler.partition.summarize(mod))     # regions per target, host ops and why

The pipeline is flat and named (`PIPELINE`); after the passes that shape
regions an invariant check runs, so a pass that breaks one is named as the
culprit instead of the failure surfacing later in a codegen. Without a trace,
nobody sees the modules between MergeComposite, AnnotateTarget,
MergeCompilerRegions, PartitionGraph and the last InferType, so those run as one
pass that hands the regions on as a table instead of node meta, copies main's
nodes once and builds every node with its type (transform/annotate_partition.py;
the same result).
"""
from __future__ import annotations

import contextlib
import gc
import weakref

from ..errors import ByocError
from ..ir.module import IRModule
from ..target import get_targets
from ..transform import (AnnotateMergePartition, AnnotateTarget, FoldBatchNorm, FoldConstant, InferType,
                         MergeCompilerRegions, MergeComposite, PartitionGraph)
from ..transform.named_pass import NamedPass
from .invariants import check_partitioned
from .report import summarize_module

__all__ = ["partition_for", "summarize", "pipeline", "PartitionError", "PIPELINE"]

PIPELINE = ("InferType", "FoldConstant", "FoldBatchNorm", "MergeComposite", "AnnotateTarget",
            "MergeCompilerRegions", "PartitionGraph", "InferType")

# partitioned module -> its report, or the targets it was partitioned for until someone asks for the report
# (a build never does: the report's walks are ~5% of partition_for). Modules are values: the report stays
# valid as long as the module lives.
_REPORTS: "weakref.WeakKeyDictionary[IRModule, object]" = weakref.WeakKeyDictionary()


class PartitionError(ByocError):
    """strict=True and some ops stayed on the host; `report` has the table."""

    def __init__(self, message: str, report):
        super().__init__(message)
        self.report = report


def pipeline(targets, mod_name: str = "default", bind_constants: bool = True, fused: bool = False) -> list:
    """The passes of partition_for, in order, for `targets` (Target objects, priority order); `fused`:
    MergeComposite, AnnotateTarget, MergeCompilerRegions, PartitionGraph and the last InferType as one
    pass (module docstring)."""
    patterns = [p for t in targets for p in t.patterns]
    regions = [AnnotateMergePartition(targets, mod_name, bind_constants, patterns)] if fused else \
        [MergeComposite(patterns), AnnotateTarget(targets), MergeCompilerRegions(),
         PartitionGraph(mod_name, bind_constants), NamedPass("InferType", InferType())]
    return [NamedPass("InferType", InferType()), FoldConstant(), FoldBatchNorm(), *regions]


def partition_for(targets, mod: IRModule, strict: bool = False, mod_name: str = "default",
                  bind_constants: bool = True, trace=None) -> IRModule:
    """Partition `mod` for `targets` (a name or a priority list of names).

    Runs InferType -> FoldConstant -> FoldBatchNorm -> MergeComposite (the targets' patterns, in priority
    order) -> AnnotateTarget -> MergeCompilerRegions -> PartitionGraph -> InferType, checking invariants
    along the way. With strict=True, any op left on the host raises PartitionError carrying the
    summary. `summarize(result)` gives the summary. `trace(pass_name, mod)`, if given, is called
    after every pass, e.g. `trace=lambda name, m: print(f"// after {name}\n{m}")`.
    """
    if isinstance(targets, IRModule):
        raise TypeError("partition_for(targets, mod): the targets come first, e.g. "
                        "partition_for(['ccompiler'], mod)")
    if not isinstance(mod, IRModule):
        raise TypeError(f"partition_for expects an IRModule, got {type(mod).__name__}; wrap an expression "
                        "with IRModule.from_expr(expr)")
    chosen = get_targets(targets)
    with _collector_paused():
        mod = _run(pipeline(chosen, mod_name, bind_constants, fused=trace is None), mod, trace)
    _REPORTS[mod] = tuple(chosen)
    if not strict:
        return mod
    report = summarize(mod)
    if report.host:
        names = ", ".join(t.name for t in chosen)
        raise PartitionError(f"strict partition for {names}: {report.host_op_count} op(s) stay on the host\n"
                             f"{report.table()}", report)
    return mod


@contextlib.contextmanager
def _collector_paused():
    # The passes allocate many small acyclic nodes; Python's cycle collector would rescan all live
    # nodes over and over (superlinear on 100k-node graphs) while finding nothing to free.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _run(passes, mod, trace=None):
    typed_input = None
    for step in passes:
        mod = step(mod)
        if trace is not None:
            trace(step.name, mod)
        if typed_input is None:
            typed_input = mod
    # The regions MergeCompilerRegions made are checked by PartitionGraph itself, which contracts them in
    # dependency order and blames MergeCompilerRegions for a region that cannot become one call
    # (invariants.check_regions is that check alone). The last InferType only fills types (the fused pass
    # builds them), so what check_partitioned finds was made by PartitionGraph.
    check_partitioned(typed_input, mod, "PartitionGraph")
    return mod


def summarize(mod: IRModule, targets=None):
    """The PartitionReport of a module returned by partition_for (or computed for `targets`)."""
    if targets is None and mod in _REPORTS:
        report = _REPORTS[mod]
        if isinstance(report, tuple):       # partition_for's targets: the report made on first demand
            with _collector_paused():
                report = _REPORTS[mod] = summarize_module(mod, list(report))
        return report
    if targets is None:
        targets = list(dict.fromkeys(str(f.attrs["Compiler"]) for f in mod.functions.values()
                                     if "Compiler" in f.attrs))
        if not targets:
            raise ByocError("this module has no external functions and no partition_for report; "
                            "pass targets=[...] to summarize it")
    return summarize_module(mod, get_targets(targets, enabled_only=False))
