"""The region annotations that AnnotateTarget writes and MergeCompilerRegions / PartitionGraph read.

Instead of TVM's compiler_begin/compiler_end marker ops, the annotations are a
side table stored as one string attr of `main` (`TargetRegions`), keyed by the
position of each node in `post_order(main.body)`. The graph itself is left
untouched, so the module still prints, type-checks and runs as before, and
annotating is a pure function of the module. The table records how many nodes
the graph had, so a table that no longer fits its graph is detected instead of
being applied to the wrong nodes.

Text form: "<node count>|<target>:<i>,<i>,...|<target>:<i>,..." one `|` field
per region, regions numbered 0, 1, ... in order of their first node.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ByocError
from ..ir.expr import Call, Expr, Function
from ..ir.visitor import post_order

ATTR = "TargetRegions"


class StaleAnnotations(ByocError):
    pass


@dataclass(frozen=True)
class Annotations:
    node_count: int
    target: dict[int, str]      # node position -> target name
    region: dict[int, int]      # node position -> region number

    @staticmethod
    def empty(node_count: int) -> "Annotations":
        return Annotations(node_count, {}, {})

    def regions(self) -> dict[int, list[int]]:
        """region number -> its node positions, ascending; regions in number order."""
        out: dict[int, list[int]] = {}
        for pos in sorted(self.region):
            out.setdefault(self.region[pos], []).append(pos)
        return dict(sorted(out.items()))

    def normalized(self) -> "Annotations":
        """The same regions renumbered 0, 1, ... by their first node, so equal partitions compare equal."""
        first: dict[int, int] = {}
        for pos in sorted(self.region):
            first.setdefault(self.region[pos], len(first))
        return Annotations(self.node_count, dict(sorted(self.target.items())),
                           {pos: first[r] for pos, r in sorted(self.region.items())})

    def encode(self) -> str:
        norm = self.normalized()
        fields = [str(norm.node_count)]
        for positions in norm.regions().values():
            fields.append(f"{norm.target[positions[0]]}:" + ",".join(map(str, positions)))
        return "|".join(fields)

    @staticmethod
    def decode(text: str) -> "Annotations":
        count, *fields = text.split("|")
        target: dict[int, str] = {}
        region: dict[int, int] = {}
        for number, field in enumerate(fields):
            name, _, positions = field.rpartition(":")
            for pos in positions.split(","):
                target[int(pos)] = name
                region[int(pos)] = number
        return Annotations(int(count), target, region)


# The passes of one pipeline walk the same graph several times; remember the last few walks.
# Keyed by the body's id, holding the body itself so that the id cannot be reused meanwhile.
_WALKS: dict[int, tuple[Expr, list[Expr]]] = {}


def graph_nodes(func: Function) -> list[Expr]:
    """The nodes the annotation positions refer to (functions such as composites are not entered)."""
    hit = _WALKS.get(id(func.body))
    if hit is not None and hit[0] is func.body:
        return hit[1]
    nodes = post_order(func.body)
    if len(_WALKS) >= 4:
        _WALKS.pop(next(iter(_WALKS)))
    _WALKS[id(func.body)] = (func.body, nodes)
    return nodes


def inputs_of(node: Expr) -> tuple[Expr, ...]:
    """The dataflow inputs of a node: a composite call's Function is part of the call, not an input."""
    return node.args if isinstance(node, Call) else node.children()


def read(func: Function, nodes: list[Expr] | None = None) -> Annotations:
    """The annotations of `func` (empty when it has none), checked against its graph."""
    count = len(nodes if nodes is not None else graph_nodes(func))
    text = func.attrs.get(ATTR)
    if text is None:
        return Annotations.empty(count)
    ann = Annotations.decode(text)
    if ann.node_count != count:
        raise StaleAnnotations(
            f"the {ATTR} annotations of main were made for a graph of {ann.node_count} nodes but main now has "
            f"{count}: run AnnotateTarget again after changing the graph")
    return ann


def write(func: Function, ann: Annotations) -> Function:
    if not ann.target:
        return Function(func.params, func.body, func.ret_type, func.attrs.without(ATTR), func.span)
    out = func.with_attr(**{ATTR: ann.encode()})
    out.checked_type = func.checked_type
    return out


def strip(func: Function) -> Function:
    if ATTR not in func.attrs:
        return func
    out = Function(func.params, func.body, func.ret_type, func.attrs.without(ATTR), func.span)
    out.checked_type = func.checked_type
    return out
