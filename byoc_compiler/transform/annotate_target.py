"""AnnotateTarget: mark every call a target takes; the rest stays on the host.

Each op call goes to the first target, in priority order, whose op table and
predicate accept it; a composite call goes to the target named by its
`Composite` prefix. Every newly marked call starts as a region of its own
(MergeCompilerRegions grows them). Two shapes are kept whole so that no region
ever takes or returns a tuple: a tuple-valued call (nn.batch_norm, split)
travels with the TupleGetItems that read it, and a call taking a Tuple
(concatenate) travels with that Tuple.

Marks already present are kept, so running the pass twice, or with ["A", "B"]
versus A then B, gives the same annotations. They are structured data in the
meta of the annotated nodes (transform/annotations.py); what the graph computes
is unchanged.
"""
from __future__ import annotations

from ..target import Target, get_targets
from ..ir.expr import Call, Function, Op, Tuple, TupleGetItem
from ..ir.module import IRModule
from ..ir.types import TupleType
from .annotations import Annotations, graph_nodes, input_positions, read, write
from .named_pass import NamedPass, typed


def choose_target(call: Call, targets: list[Target]) -> str | None:
    """The first target in `targets` that takes `call`, or None."""
    if type(call.op) is Op:
        name = call.op.name
        for target in targets:      # (asked of every call: no target is asked why not)
            if target.takes(call, name):
                return target.name
        return None
    if isinstance(call.op, Function):
        composite = call.op.attrs.get("Composite")
        prefix = str(composite).partition(".")[0] if composite else None
        return prefix if any(t.name == prefix for t in targets) else None
    return None  # a call of a global function: already partitioned


def annotate_target(mod: IRModule, targets) -> IRModule:
    """`mod` with the calls of main annotated for `targets` (a name, a Target, or a priority list)."""
    mod = typed(mod)
    main = mod["main"]
    nodes = graph_nodes(main)
    ann = target_annotations(nodes, input_positions(nodes), targets)
    return mod.with_function("main", write(main, ann, nodes))


def target_annotations(nodes: list, kids: list[list[int]], targets) -> Annotations:
    """What annotate_target writes, as a table: the annotations of `nodes` (graph_nodes of a typed main;
    `kids`: their input_positions), the marks they carry already plus the new ones. For a caller that
    goes on with the table (transform/annotate_partition.py) instead of the annotated module."""
    targets = get_targets(targets)
    old = read(None, nodes)
    chosen, tuples = _choose(nodes, old, targets)
    _keep_tuples_whole(nodes, kids, old, chosen, tuples)
    if not old.target and not tuples:       # most graphs: each new mark a region of its own, in order
        return Annotations(chosen, dict(zip(chosen, range(len(chosen))))).normalized()
    target = dict(old.target)
    region = dict(old.region)
    next_region = max(region.values(), default=-1) + 1
    for i in sorted(chosen):
        target[i], region[i] = chosen[i], next_region
        if tuples and _takes_tuple(nodes[i]):
            j = kids[i][0]
            target[j], region[j] = chosen[i], next_region
        next_region += 1
    for i, node in enumerate(nodes if tuples else ()):
        if isinstance(node, TupleGetItem) and i not in target:
            producer = kids[i][0]
            if producer in chosen and producer in tuples:
                target[i], region[i] = target[producer], region[producer]
    return Annotations(target, region).normalized()


def _choose(nodes, old, targets) -> tuple[dict[int, str], set[int]]:
    """(position -> target, for each call a target takes and no mark has yet; the positions of every
    Tuple and tuple-valued call, the only nodes whose users decide anything)."""
    chosen: dict[int, str] = {}
    tuples: set[int] = set()
    for i, node in enumerate(nodes):
        kind = type(node)
        if kind is Tuple:
            tuples.add(i)
            continue
        if kind is not Call:
            continue
        if isinstance(node.checked_type, TupleType):
            tuples.add(i)
        if i not in old.target:
            name = choose_target(node, targets)
            if name is not None:
                chosen[i] = name
    return chosen, tuples


def _keep_tuples_whole(nodes, kids, old, chosen: dict[int, str], tuples: set[int]) -> None:
    """Drop from `chosen` a tuple-valued call whose tuple is used whole (or is main's result), and a call
    taking a Tuple that has another user (or is annotated, or is the result): no region takes or returns
    a tuple."""
    if not tuples:
        return
    users: dict[int, list[int]] = {j: [] for j in tuples}   # tuple position -> its user nodes
    for i, inputs in enumerate(kids):
        for j in inputs:
            if j in tuples:
                users[j].append(i)
    root = len(nodes) - 1
    for i in [i for i in chosen if i in tuples]:
        if i == root or any(not isinstance(nodes[u], TupleGetItem) for u in users[i]):
            del chosen[i]
    for i in list(chosen):
        if tuples and _takes_tuple(nodes[i]):
            j = kids[i][0]
            if j in old.target or users[j] != [i] or j == root:
                del chosen[i]


def _takes_tuple(call) -> bool:
    args = call.args
    return len(args) == 1 and type(args[0]) is Tuple


def AnnotateTarget(targets) -> NamedPass:  # noqa: N802 - TVM's spelling
    """The pass: `AnnotateTarget(["ccompiler", "examplejson"])(mod)`."""
    return NamedPass("AnnotateTarget", lambda mod: annotate_target(mod, targets))
