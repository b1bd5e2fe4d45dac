"""The region annotations that AnnotateTarget writes and MergeCompilerRegions / PartitionGraph read.

Instead of TVM's compiler_begin/compiler_end marker ops, each annotated node carries its region as
structured data in its meta (`node.meta["region"] = RegionAnnotation(target, region)`, ir/expr.py):
the graph computes, prints and type-checks as before, the annotation is not part of the module's
structure (equality, hashing), and every rewriting pass carries it to the node that replaces the
annotated one, so it cannot come apart from its node. Writing annotations makes new nodes (a pass
never edits the nodes it was given): annotating is a pure function of the module.

Inside a pass, the annotations of a graph are read into position-keyed tables (`Annotations`, positions
in `post_order(main.body)`); regions are numbered 0, 1, ... in order of their first node.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

from ..ir.expr import Call, Expr, Function, Tuple, TupleGetItem, carry_meta, meta_of, meta_with, with_inputs
from ..ir.visitor import graph_order, remember_order

KEY = "region"


@dataclass(frozen=True)
class RegionAnnotation:
    """What a node's meta["region"] says: the target that takes it, and which of that graph's regions."""

    target: str
    region: int

    def __str__(self) -> str:       # how `--print-after AnnotateTarget` shows it: region=ccompiler:0
        return f"{self.target}:{self.region}"


@dataclass(frozen=True)
class Annotations:
    target: dict[int, str]      # node position -> target name
    region: dict[int, int]      # node position -> region number

    @staticmethod
    def empty() -> "Annotations":
        return Annotations({}, {})

    def regions(self) -> dict[int, list[int]]:
        """region number -> its node positions, ascending; regions in number order."""
        out: dict[int, list[int]] = {}
        for pos in sorted(self.region):
            number = self.region[pos]
            members = out.get(number)
            if members is None:
                out[number] = [pos]
            else:
                members.append(pos)
        return dict(sorted(out.items()))

    def normalized(self) -> "Annotations":
        """The same regions renumbered 0, 1, ... by their first node, so equal partitions compare equal.
        Tables already in that form (what the passes hand each other) are shared, not sorted again."""
        target, region = self.target, self.region
        positions = list(region)
        in_order = _ascending(positions)
        if not in_order:
            positions.sort()
        numbers = list(map(region.__getitem__, positions))
        first_seen = list(dict.fromkeys(numbers))          # region numbers in order of their first node
        if first_seen != list(range(len(first_seen))):
            renumber = {r: k for k, r in enumerate(first_seen)}
            region = dict(zip(positions, map(renumber.__getitem__, numbers)))
        elif not in_order:
            region = dict(zip(positions, numbers))
        if not _ascending(list(target)):
            target = dict(sorted(target.items()))
        return Annotations(target, region)


def _ascending(keys: list[int]) -> bool:
    return all(map(operator.lt, keys, keys[1:]))


def region_of(node: Expr) -> RegionAnnotation | None:
    return node.meta_get(KEY)


def graph_nodes(func: Function) -> list[Expr]:
    """The nodes the annotation positions refer to (functions such as composites are not entered)."""
    return graph_order(func.body)


def inputs_of(node: Expr) -> tuple[Expr, ...]:
    """The dataflow inputs of a node: a composite call's Function is part of the call, not an input."""
    return node.args if isinstance(node, Call) else node.children()


def rebuildable_inputs(node: Expr) -> tuple[Expr, ...] | None:
    """What with_inputs replaces in `node` (a Call's args, a TupleGetItem's tuple, a Tuple's fields);
    None for a leaf or a Function, which the graph-copying loops keep as they are."""
    kind = type(node)
    if kind is Call:
        return node.args
    if kind is TupleGetItem:
        return (node.tuple_value,)
    return node.fields if kind is Tuple else None


def input_positions(nodes: list[Expr], index: dict[int, int] | None = None) -> list[list[int]]:
    """Per node of `nodes` (a post_order), the positions of its distinct dataflow inputs, in argument order
    (`index`: id(node) -> position, when the caller has it)."""
    if index is None:
        index = {id(node): i for i, node in enumerate(nodes)}
    out: list[list[int]] = []
    append = out.append
    for node in nodes:              # (every node of the graph: one and two inputs without a loop)
        kind = type(node)
        inputs = node.args if kind is Call else node.children()
        count = len(inputs)
        if count == 1:
            append([index[id(inputs[0])]])
        elif count == 2:
            first, second = index[id(inputs[0])], index[id(inputs[1])]
            append([first, second] if first != second else [first])
        elif count == 0:
            append([])
        else:
            positions = [index[id(c)] for c in inputs]
            append(positions if len(set(positions)) == count else list(dict.fromkeys(positions)))
    return out


def read(func: Function | None, nodes: list[Expr] | None = None) -> Annotations:
    """The annotations on the nodes of `func`'s graph (`nodes`: graph_nodes(func), if the caller has it;
    then `func` may be None)."""
    found = meta_of(nodes if nodes is not None else graph_nodes(func), KEY)
    return Annotations({pos: ann.target for pos, ann in found.items()},
                       {pos: ann.region for pos, ann in found.items()})


def copy_node(node: Expr, inputs: list[Expr]) -> Expr:
    """A new node like `node` (same op, attrs, span, type and meta, but no region annotation) reading
    `inputs`."""
    return with_inputs(node, inputs, meta_with(node, KEY, None) if node._meta else None)


def moved_inputs(inputs: tuple[Expr, ...], replaced) -> tuple[Expr, ...] | list[Expr]:
    """`inputs` with each replaced by `replaced(id(input))` where that is not None; `inputs` itself when
    none is (most nodes read one value: that case first)."""
    if len(inputs) == 1:
        new = replaced(id(inputs[0]))
        return inputs if new is None else (new,)
    moved = [replaced(id(k), k) for k in inputs]
    return inputs if all(map(operator.is_, moved, inputs)) else moved


def write(func: Function, ann: Annotations, nodes: list[Expr] | None = None) -> Function:
    """`func` whose graph nodes carry exactly the annotations `ann` (positions into `nodes`, which is
    graph_nodes(func) when not given): a node whose annotation changes is a new node, and so is every
    node reading a new node; the rest keep their identity."""
    nodes = nodes if nodes is not None else graph_nodes(func)
    wanted = ann.region
    made: dict[int, RegionAnnotation] = {}     # one object per region (its first node's target), shared
    for pos in sorted(wanted):
        number = wanted[pos]
        if number not in made:
            made[number] = RegionAnnotation(ann.target[pos], number)
    have_now = meta_of(nodes, KEY)
    new: dict[int, Expr] = {}                  # id(old node) -> its replacement
    replaced = new.get
    for pos, node in enumerate(nodes):
        inputs = rebuildable_inputs(node)
        if inputs is None:
            continue                           # leaves and functions carry no region annotation
        number = wanted.get(pos)
        want = made[number] if number is not None else None
        moved = moved_inputs(inputs, replaced) if new else inputs
        if moved is inputs:
            have = have_now.get(pos)
            if have is want or have == want:
                continue
        new[id(node)] = with_inputs(node, moved, meta_with(node, KEY, want))
    body = new.get(id(func.body), func.body)
    if body is func.body:
        return func
    remember_order(body, [replaced(id(n), n) for n in nodes])   # node for node: the same order
    out = Function(func.params, body, func.ret_type, func.attrs, func.span)
    out.checked_type = func.checked_type
    return carry_meta(func, out)


def strip(func: Function) -> Function:
    """`func` with no region annotation left on its graph."""
    return write(func, Annotations.empty())
