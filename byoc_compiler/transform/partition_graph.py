"""PartitionGraph: lift each annotated region of main into an external function.

Three steps, each checkable on its own:
  propose  -- regions from the annotations: members, inputs, outputs (ordered, deduplicated);
  fuse     -- walk the graph with every region contracted to one unit, in dependency order,
              building one `Call(GlobalVar(symbol), inputs)` per region;
  validate -- the contracted graph must be acyclic (every region convex) — a cycle is a bug
              of the pass that made the regions, reported as such.

Names follow TVM: `tvmgen_<mod_name>_<target>_main_<n>`, n = 0, 1, 2 ... per target in
the order the regions are called; params `<target>_<n>_i<k>`; attrs Compiler,
global_symbol, Primitive=1, Inline=1. A region with several outputs returns a
Tuple read with TupleGetItem; constants are bound inside unless bind_constants=False.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ctext import identifier_part, sanitize_identifier
from ..errors import ByocError
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TupleType
from .annotations import copy_node, graph_nodes, input_positions, inputs_of, moved_inputs, read, rebuildable_inputs
from .named_pass import NamedPass


class PartitionInvariantError(ByocError):
    """A pass produced regions that cannot be lifted; this is a bug of that pass, not of the model."""

    def __init__(self, pass_name: str, problem: str):
        self.pass_name = pass_name
        super().__init__(f"internal error: after {pass_name}, {problem} (this is a bug in byoc's {pass_name}; "
                         "please report it with the model)")


def external_symbol(mod_name: str, target: str, n: int) -> str:
    """The region's C symbol: a valid identifier for any module name (ctext, the one sanitizer)."""
    return sanitize_identifier(f"tvmgen_{identifier_part(mod_name)}_{identifier_part(target)}_main_{n}")


@dataclass
class Region:
    number: int                     # position in the annotations (first-node order)
    target: str
    members: list[int]              # node positions, topological
    inputs: list[int] = field(default_factory=list)    # positions feeding it from outside, first use order
    outputs: list[int] = field(default_factory=list)   # members read from outside (or main's result)


def propose(nodes: list[Expr], kids: list[list[int]], ann, bind_constants: bool) -> tuple[list[Region], list[int]]:
    """The regions to lift, and node position -> region number (-1: host). `kids`: input_positions(nodes)."""
    owner = [-1] * len(nodes)
    regions = []
    for number, members in enumerate(ann.regions().values()):     # (numbers from 0: contracted_order's ~n)
        regions.append(Region(number, ann.target[members[0]], members))
        for pos in members:
            owner[pos] = number
    root = len(nodes) - 1
    used_outside = [False] * len(nodes)
    used_outside[root] = True
    for pos, inputs in enumerate(kids):
        mine = owner[pos]
        for c in inputs:
            if owner[c] != -1 and owner[c] != mine:
                used_outside[c] = True
    for region in regions:
        seen: set[int] = set()
        for pos in region.members:
            for c in kids[pos]:
                if owner[c] == region.number or c in seen:
                    continue
                seen.add(c)
                if bind_constants and isinstance(nodes[c], Constant):
                    continue
                region.inputs.append(c)
        region.outputs = [pos for pos in region.members if used_outside[pos]]
    return regions, owner


def contracted_order(kids: list[list[int]], owner, regions, blame: str = "MergeCompilerRegions") -> list[int]:
    """Units in dependency order: a host node as its position (>= 0), a region as ~its number (< 0), plain
    ints because the walk meets every edge of the graph (`kids`: input_positions of the nodes).

    A cycle means some region cannot become one call; it is reported as a bug of the pass `blame`.
    """
    by_number = {r.number: r for r in regions}

    def deps_of(unit: int) -> list[int]:
        if unit >= 0:
            return [c if owner[c] == -1 else ~owner[c] for c in kids[unit]]
        key = ~unit
        return [c if owner[c] == -1 else ~owner[c] for pos in by_number[key].members for c in kids[pos]
                if owner[c] != key]

    order: list[int] = []
    state: dict[int, int] = {}  # 1: on the stack, 2: done
    root = len(kids) - 1
    start = root if owner[root] == -1 else ~owner[root]
    stack = [(start, iter(deps_of(start)))]
    state[start] = 1
    while stack:
        unit, pending = stack[-1]
        for dep in pending:
            s = state.get(dep)
            if s == 1:
                region = by_number.get(~dep) if dep < 0 else None
                if region is None:
                    region = by_number[~unit] if unit < 0 else None
                what = f"region {region.number} of {region.target}" if region else "a region"
                raise PartitionInvariantError(
                    blame, f"a path leaves {what} and comes back into it (directly or through other regions), "
                    "so it cannot become one call")
            if s is None:
                state[dep] = 1
                stack.append((dep, iter(deps_of(dep))))
                break
        else:
            stack.pop()
            state[unit] = 2
            order.append(unit)
    return order


def partition_graph(mod: IRModule, mod_name: str = "default", bind_constants: bool = True) -> IRModule:
    """`mod` with every annotated region of main lifted into an external function."""
    main = mod["main"]
    nodes = graph_nodes(main)
    ann = read(main, nodes)
    if not ann.target:
        return mod
    return lift_regions(mod, nodes, ann, input_positions(nodes), mod_name, bind_constants)


def lift_regions(mod: IRModule, nodes: list[Expr], ann, kids: list[list[int]], mod_name: str = "default",
                 bind_constants: bool = True, stand_ins: dict[int, Expr] | None = None,
                 index: dict[int, int] | None = None) -> IRModule:
    """partition_graph for the regions `ann` (annotations of `nodes`, graph_nodes of main, whatever
    main's nodes carry; `kids`: input_positions(nodes)): the nodes lifted lose their region annotation.
    `stand_ins` (id of a node of main -> the node of `nodes` standing in for it): `nodes` is the order of
    main with those nodes replaced (post_order's replace), and their readers, read as main has them, read
    the stand-ins instead (`index`: id -> position of every node of `nodes` and every node stood in for,
    when the caller has it)."""
    main = mod["main"]
    regions, owner = propose(nodes, kids, ann, bind_constants)
    by_number = {r.number: r for r in regions}
    order = contracted_order(kids, owner, regions)
    keys = _keys(nodes, stand_ins, index)
    counters: dict[str, int] = {}
    new: dict[int, Expr] = dict(stand_ins or ())    # id(node read) -> its value in the new main (absent: itself)
    externals: dict[str, Function] = {}

    def value(pos: int) -> Expr:
        return new.get(keys[pos], nodes[pos])

    for unit in order:
        if unit >= 0:                           # a host node
            node = nodes[unit]
            inputs = node.args if type(node) is Call else inputs_of(node)
            if not inputs:
                continue                        # a leaf: kept
            moved = moved_inputs(inputs, new.get)
            if moved is not inputs:            # host nodes carry no annotation: else kept as they are
                new[keys[unit]] = copy_node(node, moved)
            continue
        region = by_number[~unit]
        n = counters.get(region.target, 0)
        symbol = external_symbol(mod_name, region.target, n)
        while symbol in mod or symbol in externals:  # a module partitioned before keeps its functions
            n += 1
            symbol = external_symbol(mod_name, region.target, n)
        counters[region.target] = n + 1
        func, call = _lift(region, nodes, keys, symbol, n, value)
        externals[symbol] = func
        if len(region.outputs) == 1:
            new[keys[region.outputs[0]]] = call
        else:
            for k, pos in enumerate(region.outputs):
                item = TupleGetItem(call, k)
                item.checked_type = nodes[pos].checked_type
                new[keys[pos]] = item

    new_main = Function(main.params, value(len(nodes) - 1), main.ret_type, main.attrs, main.span)
    new_main.checked_type = main.checked_type
    functions = mod.functions
    functions["main"] = new_main
    functions.update(externals)
    return IRModule(functions)


def _keys(nodes: list[Expr], stand_ins: dict[int, Expr] | None, index: dict[int, int] | None) -> list[int]:
    """Per position, the id its readers look it up by: the node's, or that of the node it stands in for."""
    keys = list(map(id, nodes))
    if stand_ins:
        position = index if index is not None else {key: pos for pos, key in enumerate(keys)}
        for key, node in stand_ins.items():
            keys[position[id(node)]] = key
    return keys


def _lift(region: Region, nodes, keys: list[int], symbol: str, n: int, value) -> tuple[Function, Call]:
    prefix = sanitize_identifier(f"{region.target}_{n}_i")
    inner: dict[int, Expr] = {}               # id(node read) -> its value in the function (absent: itself, a constant)
    params: list[Var] = []
    for k, pos in enumerate(region.inputs):
        param = Var(f"{prefix}{k}", nodes[pos].checked_type)
        param.checked_type = nodes[pos].checked_type
        params.append(param)
        inner[keys[pos]] = param
    get = inner.get
    for pos in region.members:               # (every annotated node of the graph: no helper calls per input)
        node = nodes[pos]
        inputs = node.args if type(node) is Call else rebuildable_inputs(node)
        if len(inputs) == 1:                  # (most nodes: without making a list)
            one = inputs[0]
            inner[keys[pos]] = copy_node(node, (get(id(one), one),))
        else:
            inner[keys[pos]] = copy_node(node, [get(id(k), k) for k in inputs])
    body = inner[keys[region.outputs[0]]] if len(region.outputs) == 1 else None
    if body is None:
        body = Tuple([inner[keys[pos]] for pos in region.outputs])
        body.checked_type = TupleType([nodes[pos].checked_type for pos in region.outputs])
    attrs = {"Compiler": region.target, "global_symbol": symbol, "Primitive": 1, "Inline": 1}
    func = Function(params, body, body.checked_type, attrs)
    call = Call(GlobalVar(symbol), [value(pos) for pos in region.inputs])
    call.checked_type = body.checked_type
    return func, call


def PartitionGraph(mod_name: str = "default", bind_constants: bool = True) -> NamedPass:  # noqa: N802
    return NamedPass("PartitionGraph", lambda mod: partition_graph(mod, mod_name, bind_constants))
