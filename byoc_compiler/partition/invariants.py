"""Invariants the partition pipeline checks between passes.

A violation is a bug of the pass that just ran, and is reported naming it:
regions must stay convex (no path leaves a region and comes back), main's
result type must not change, and every external function must carry a unique
symbol equal to its name, the attrs codegens rely on, and be called from main.
"""
from __future__ import annotations

from ..ir.expr import Call, GlobalVar, meta_of
from ..ir.module import IRModule
from ..ir.visitor import reachable
from ..transform.annotations import KEY, graph_nodes, input_positions, read
from ..transform.partition_graph import PartitionInvariantError, contracted_order, propose


def check_regions(mod: IRModule, pass_name: str) -> None:
    """Every annotated region of main can become one call: contracting each leaves the graph acyclic."""
    main = mod["main"]
    nodes = graph_nodes(main)
    ann = read(main, nodes)
    if not ann.target:
        return
    kids = input_positions(nodes)
    regions, owner = propose(nodes, kids, ann, bind_constants=True)
    contracted_order(kids, owner, regions, blame=pass_name)


def check_partitioned(before: IRModule, after: IRModule, pass_name: str) -> None:
    def fail(problem: str):
        raise PartitionInvariantError(pass_name, problem)

    old_type = before["main"].body.checked_type
    new_type = after["main"].body.checked_type
    if old_type is not None and new_type is not None and old_type != new_type:
        fail(f"main's result type changed from {old_type} to {new_type}")
    called: dict[str, list[str]] = {}      # global function -> the functions calling it
    for name, func in after.items():
        nodes = reachable(func.body)   # (no order: nothing after partition_for asks for these bodies' graph order)
        for callee in [n.op.name_hint for n in nodes if type(n) is Call and type(n.op) is GlobalVar]:
            called.setdefault(callee, []).append(name)
        if any(ann is not None for ann in meta_of(nodes, KEY).values()):
            fail(f"a node of @{name} still carries a region annotation")
    symbols: dict[str, str] = {}
    for name, func in after.items():
        if "Compiler" not in func.attrs:
            continue
        symbol = func.attrs.get("global_symbol")
        if symbol != name:
            fail(f"external function @{name} has global_symbol {symbol!r}, not its name")
        if symbol in symbols:
            fail(f"external functions @{symbols[symbol]} and @{name} share the symbol {symbol!r}")
        symbols[symbol] = name
        if func.attrs.get("Primitive") != 1 or func.attrs.get("Inline") != 1:
            fail(f"external function @{name} lacks Primitive=1 / Inline=1")
        if name not in called:
            fail(f"external function @{name} is never called")
    for callee, callers in called.items():
        caller = next((c for c in callers if "Compiler" in after[c].attrs), None)
        if caller is not None:
            fail(f"external function @{caller} calls another global function")
