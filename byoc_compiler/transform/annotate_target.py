"""AnnotateTarget: mark every call a target takes; the rest stays on the host.

Each op call goes to the first target, in priority order, whose op table and
predicate accept it; a composite call goes to the target named by its
`Composite` prefix. Every newly marked call starts as a region of its own
(MergeCompilerRegions grows them). Two shapes are kept whole so that no region
ever takes or returns a tuple: a tuple-valued call (nn.batch_norm, split)
travels with the TupleGetItems that read it, and a call taking a Tuple
(concatenate) travels with that Tuple.

Marks already present are kept, so running the pass twice, or with ["A", "B"]
versus A then B, gives the same annotations. They are stored as a side table
(transform/annotations.py); the graph itself is unchanged.
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
    if isinstance(call.op, Function):
        composite = call.op.attrs.get("Composite")
        prefix = str(composite).partition(".")[0] if composite else None
        return prefix if any(t.name == prefix for t in targets) else None
    if not isinstance(call.op, Op):
        return None  # a call of a global function: already partitioned
    for target in targets:
        if target.check(call) is None:
            return target.name
    return None


def annotate_target(mod: IRModule, targets) -> IRModule:
    """`mod` with the calls of main annotated for `targets` (a name, a Target, or a priority list)."""
    targets = get_targets(targets)
    mod = typed(mod)
    main = mod["main"]
    nodes = graph_nodes(main)
    old = read(main, nodes)
    index = {id(n): i for i, n in enumerate(nodes)}
    users: list[list[int]] = [[] for _ in nodes]
    for i, node in enumerate(nodes):
        for child in dict.fromkeys(id(c) for c in inputs_of(node)):
            users[index[child]].append(i)
    root = len(nodes) - 1

    def whole_tuple_used(i: int) -> bool:
        return i == root or any(not isinstance(nodes[u], TupleGetItem) for u in users[i])

    chosen: dict[int, str] = {}
    for i, node in enumerate(nodes):
        if i in old.target or not isinstance(node, Call):
            continue
        name = choose_target(node, targets)
        if name is None:
            continue
        if isinstance(node.checked_type, TupleType) and whole_tuple_used(i):
            continue
        chosen[i] = name

    # A call that takes a Tuple keeps it: only when that Tuple has no other user.
    for i in list(chosen):
        args = nodes[i].args
        if len(args) == 1 and isinstance(args[0], Tuple):
            j = index[id(args[0])]
            if j in old.target or users[j] != [i] or j == root:
                del chosen[i]

    target = dict(old.target)
    region = dict(old.region)
    next_region = max(region.values(), default=-1) + 1
    for i in sorted(chosen):
        target[i], region[i] = chosen[i], next_region
        args = nodes[i].args
        if len(args) == 1 and isinstance(args[0], Tuple):
            j = index[id(args[0])]
            target[j], region[j] = chosen[i], next_region
        next_region += 1
    for i, node in enumerate(nodes):
        if isinstance(node, TupleGetItem) and i not in target:
            producer = index[id(node.tuple_value)]
            if producer in chosen:
                target[i], region[i] = target[producer], region[producer]

    ann = Annotations(len(nodes), target, region).normalized()
    return mod.with_function("main", write(main, ann))


def AnnotateTarget(targets) -> NamedPass:  # noqa: N802 - TVM's spelling
    """The pass: `AnnotateTarget(["ccompiler", "examplejson"])(mod)`."""
    return NamedPass("AnnotateTarget", lambda mod: annotate_target(mod, targets))
