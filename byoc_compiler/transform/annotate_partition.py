"""MergeComposite, AnnotateTarget, MergeCompilerRegions, PartitionGraph and InferType as one pass, for a
pipeline nobody watches.

Run one after the other, the passes hand the regions on as node meta: AnnotateTarget writes them
(a new node for each annotated node and for every node downstream of one), MergeCompilerRegions reads
them and writes them again (the same), PartitionGraph reads them. On a 100,000-node graph those two
rebuilds and the reads between are a third of partition_for. When no one looks at the modules between
the passes (partition_for without a trace), the same regions go from one step to the next as the
position-keyed table the passes compute anyway (annotations.Annotations), and only PartitionGraph builds
nodes.

MergeComposite, too, would rebuild every node downstream of its first composite call (a node reading a
new node is new), only for PartitionGraph to rebuild them again. Here main's composite calls are made
(reading the matches' inputs as main has them) and stand in for the nodes they replace: main's order
without the matches' inner nodes, each root replaced by its call, is the order of the graph
MergeComposite would give, node for node (merge_composite.merged_order; less the composites' Functions,
which nothing reads as an input), and PartitionGraph makes each node once, reading what stands in for
its inputs.

It builds each node with its type: a lifted node is the node it was in main, reading values of the same
types, and the calls, parameters and tuples it adds are typed as they are made; so the InferType after
PartitionGraph, which walks every node of the result again (a tenth of partition_for on 100,000 nodes),
would find every type already there and change nothing. The result is the module the passes give one
after the other, types included (tests/test_partition_fused.py compares them).
"""
from __future__ import annotations

from ..ir.expr import Expr
from ..ir.module import IRModule
from ..ir.visitor import graph_order
from .annotate_target import target_annotations
from .annotations import input_positions
from .merge_compiler_regions import merge_regions
from .merge_composite import (composite_calls, composite_entries, find_matches, merge_composite, merged_function,
                              merged_order)
from .named_pass import NamedPass, typed
from .partition_graph import lift_regions

NAME = "AnnotateTarget+MergeCompilerRegions+PartitionGraph+InferType"


def annotate_and_partition(mod: IRModule, targets, mod_name: str = "default", bind_constants: bool = True,
                           patterns=None) -> IRModule:
    """InferType()(PartitionGraph(mod_name, bind_constants)(MergeCompilerRegions()(AnnotateTarget(targets)(
    MergeComposite(patterns)(mod))))), without MergeComposite when `patterns` is None."""
    mod = typed(mod)
    main = mod["main"]
    order = graph_order(main.body)
    entries = composite_entries(patterns or ())
    matches = find_matches(main.body, entries, order) if entries and "Compiler" not in main.attrs else {}
    if entries:
        mod = merge_composite(mod, entries, keep="main")       # any other function of the module
    stand_ins = composite_calls(matches)
    nodes = merged_order(order, matches, stand_ins) if stand_ins else order
    index = {id(node): pos for pos, node in enumerate(nodes)}
    for key, node in stand_ins.items():     # readers of a replaced node find what stands in for it
        index[key] = index[id(node)]
    kids = input_positions(nodes, index)
    ann = target_annotations(nodes, kids, targets)
    if not ann.target:
        return _merged_main(mod, order, matches)
    return lift_regions(mod, nodes, merge_regions(ann, kids), kids, mod_name, bind_constants, stand_ins, index)


def _merged_main(mod: IRModule, order: list[Expr], matches) -> IRModule:
    """`mod` whose main is MergeComposite's (no target takes anything: nothing else changes)."""
    return mod.with_function("main", merged_function(mod["main"], order, matches)) if matches else mod


def AnnotateMergePartition(targets, mod_name: str = "default", bind_constants: bool = True,  # noqa: N802
                           patterns=None) -> NamedPass:
    name = NAME if patterns is None else "MergeComposite+" + NAME
    return NamedPass(name, lambda mod: annotate_and_partition(mod, targets, mod_name, bind_constants, patterns))
