"""AnnotateTarget, MergeCompilerRegions, PartitionGraph and InferType as one pass, for a pipeline nobody
watches.

Run one after the other, the three passes hand the regions on as node meta: AnnotateTarget writes them
(a new node for each annotated node and for every node downstream of one), MergeCompilerRegions reads
them and writes them again (the same), PartitionGraph reads them. On a 100,000-node graph those two
rebuilds and the reads between are a third of partition_for. When no one looks at the modules between
the passes (partition_for without a trace), the same regions go from one step to the next as the
position-keyed table the passes compute anyway (annotations.Annotations), and only PartitionGraph builds
nodes. It builds each node with its type: a lifted node is the node it was in main, reading values of
the same types, and the calls, parameters and tuples it adds are typed as they are made; so the InferType
after PartitionGraph, which walks every node of the result again (a tenth of partition_for on 100,000
nodes), would find every type already there and change nothing. The result is the module the four passes
give one after the other, types included (tests/test_partition_fused.py compares them).
"""
from __future__ import annotations

from ..ir.module import IRModule
from .annotate_target import target_annotations
from .annotations import input_positions
from .merge_compiler_regions import merge_regions
from .named_pass import NamedPass
from .partition_graph import lift_regions

NAME = "AnnotateTarget+MergeCompilerRegions+PartitionGraph+InferType"


def annotate_and_partition(mod: IRModule, targets, mod_name: str = "default", bind_constants: bool = True) -> IRModule:
    """InferType()(PartitionGraph(mod_name, bind_constants)(MergeCompilerRegions()(AnnotateTarget(targets)(mod))))."""
    mod, nodes, ann = target_annotations(mod, targets)
    if not ann.target:
        return mod
    kids = input_positions(nodes)
    return lift_regions(mod, nodes, merge_regions(ann, kids), kids, mod_name, bind_constants)


def AnnotateMergePartition(targets, mod_name: str = "default", bind_constants: bool = True) -> NamedPass:  # noqa: N802
    return NamedPass(NAME, lambda mod: annotate_and_partition(mod, targets, mod_name, bind_constants))
