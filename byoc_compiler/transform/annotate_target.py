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
from .annotations import Annotations, graph_nodes, inputs_of, read, write
from .named_pass import NamedPass, typed


def choose_target(call: Call, targets: list[Target]) -> str | None:
    """The first target in `targets` that takes `call`, or None."""
    if type(call.op) is Op:
        name = call.op.name
        for target in targets:      # (asked of every call: a target without the op is not asked why)
            if name in target.ops and target.check(call) is None:
                return target.name
        return None
    if isinstance(call.op, Function):
        composite = call.op.attrs.get("Composite")
        prefix = str(composite).partition(".")[0] if composite else None
        return prefix if any(t.name == prefix for t in targets) else None
    return None  # a call of a global function: already partitioned


def annotate_target(mod: IRModule, targets) -> IRModule:
    """`mod` with the calls of main annotated for `targets` (a name, a Target, or a priority list)."""
    mod, nodes, ann = target_annotations(mod, targets)
    main = mod["main"]
    return mod.with_function("main", write(main, ann, nodes))


def target_annotations(mod: IRModule, targets) -> tuple[IRModule, list, Annotations]:
    """What annotate_target writes, as a table: (`mod` typed, graph_nodes of its main, the annotations
    of those nodes: the marks main has already plus the new ones). For a caller that goes on with the
    table (transform/annotate_partition.py) instead of the annotated module."""
    targets = get_targets(targets)
    mod = typed(mod)
    nodes = graph_nodes(mod["main"])
    old = read(mod["main"], nodes)
    chosen, tuples = _choose(nodes, old, targets)
    _keep_tuples_whole(nodes, old, chosen, tuples)
    target = dict(old.target)
    region = dict(old.region)
    next_region = max(region.values(), default=-1) + 1
    for i in sorted(chosen):
        target[i], region[i] = chosen[i], next_region
        args = nodes[i].args
        if len(args) == 1 and isinstance(args[0], Tuple):
            j = tuples[id(args[0])]
            target[j], region[j] = chosen[i], next_region
        next_region += 1
    for i, node in enumerate(nodes if tuples else ()):
        if isinstance(node, TupleGetItem) and i not in target:
            producer = tuples.get(id(node.tuple_value))
            if producer in chosen:
                target[i], region[i] = target[producer], region[producer]
    return mod, nodes, Annotations(target, region).normalized()


def _choose(nodes, old, targets) -> tuple[dict[int, str], dict[int, int]]:
    """(position -> target, for each call a target takes and no mark has yet; id -> position of every
    Tuple and tuple-valued call, the only nodes whose users decide anything)."""
    chosen: dict[int, str] = {}
    tuples: dict[int, int] = {}
    for i, node in enumerate(nodes):
        kind = type(node)
        if kind is Tuple:
            tuples[id(node)] = i
            continue
        if kind is not Call:
            continue
        if isinstance(node.checked_type, TupleType):
            tuples[id(node)] = i
        if i not in old.target:
            name = choose_target(node, targets)
            if name is not None:
                chosen[i] = name
    return chosen, tuples


def _keep_tuples_whole(nodes, old, chosen: dict[int, str], tuples: dict[int, int]) -> None:
    """Drop from `chosen` a tuple-valued call whose tuple is used whole (or is main's result), and a call
    taking a Tuple that has another user (or is annotated, or is the result): no region takes or returns
    a tuple."""
    if not tuples:
        return
    users: dict[int, list[int]] = {j: [] for j in tuples.values()}   # tuple position -> its user nodes
    for i, node in enumerate(nodes):
        for child in inputs_of(node):
            j = tuples.get(id(child))
            if j is not None and (not users[j] or users[j][-1] != i):
                users[j].append(i)
    root = len(nodes) - 1
    for i in [i for i in chosen if id(nodes[i]) in tuples]:
        if i == root or any(not isinstance(nodes[u], TupleGetItem) for u in users[i]):
            del chosen[i]
    for i in list(chosen):
        args = nodes[i].args
        if len(args) == 1 and isinstance(args[0], Tuple):
            j = tuples[id(args[0])]
            if j in old.target or users[j] != [i] or j == root:
                del chosen[i]


def AnnotateTarget(targets) -> NamedPass:  # noqa: N802 - TVM's spelling
    """The pass: `AnnotateTarget(["ccompiler", "examplejson"])(mod)`."""
    return NamedPass("AnnotateTarget", lambda mod: annotate_target(mod, targets))
