"""MergeComposite: replace each match of a target's composite pattern by one composite call.

A match becomes `Call(Function(params, body, Composite="<target>.<name>",
PartitionedFromPattern="nn.conv2d_nn.bias_add_nn.relu_"), inputs)`: the
matched ops move into the function, the expressions bound by the pattern's
leaves (wildcards, constants, vars) become its arguments, each once.

Rules (TVM's): patterns are applied one after the other, so an earlier pattern
wins over a later one; within a pattern, roots are tried from the graph's
outputs backwards so the largest match is taken first; a match whose check
rejects it leaves the graph as it was; a match none of whose inner values is
used outside it is required — otherwise the composite would need to return an
intermediate value, and the node reading it could create a cycle.
"""
from __future__ import annotations

from typing import Iterable

from ..ir.analysis import use_counts
from ..ir.expr import Call, Expr, Function, Op, Var, carry_meta, with_inputs
from ..ir.module import IRModule
from ..ir.visitor import graph_order, post_order
from ..pattern import Match
from ..pattern.matcher import may_match_among, root_op_names
from ..target import CompositePattern
from .annotations import moved_inputs, rebuildable_inputs
from .named_pass import NamedPass, typed


def composite_entries(patterns: Iterable) -> list[CompositePattern]:
    """`patterns` as CompositePattern entries (CompositePatterns, or TVM's (name, pattern[, check]) rows)."""
    out = []
    for p in patterns:
        if isinstance(p, CompositePattern):
            out.append(p)
            continue
        name, pattern, *rest = p  # TVM's pattern-table rows: ("dnnl.conv2d_bias_relu", pattern[, check])
        target, _, short = str(name).partition(".")
        out.append(CompositePattern(target, short, pattern, rest[0] if rest else None))
    return out


def _partitioned_from(match: Match) -> str:
    return "".join(name + "_" for name in match.op_names)


def candidate_roots(nodes: list[Call], roots: frozenset[str] | None, by_op: dict[str, list[int]]) -> list[Call]:
    """The op calls among `nodes` (topological order) a pattern with root ops `roots` (None: any) may
    be rooted at, from the graph's outputs backwards; `by_op` (op name -> ascending positions in
    `nodes`, from ops_index) spares a look at every node for every pattern."""
    if roots is None:
        return nodes[::-1]
    positions = [p for name in roots for p in by_op.get(name, ())]
    positions.sort(reverse=True)
    return [nodes[p] for p in positions]


def ops_index(order: list[Expr]) -> tuple[list[Call], dict[str, list[int]]]:
    """(the op calls of `order`, op name -> their ascending positions in that list)."""
    nodes: list[Call] = []
    by_op: dict[str, list[int]] = {}
    for node in order:
        if type(node) is Call and type(node.op) is Op:
            positions = by_op.get(node.op.name)
            if positions is None:
                positions = by_op[node.op.name] = []
            positions.append(len(nodes))
            nodes.append(node)
    return nodes, by_op


def escapes(match: Match, body: Expr, uses: dict[int, int]) -> bool:
    """Whether a value the match computes before its root is read outside it (or is the graph's result):
    the composite would have to return it. `uses`: use_counts of the graph."""
    inside: dict[int, int] = {}
    for n in match.nodes:
        for child in n.children():
            inside[id(child)] = inside.get(id(child), 0) + 1
    return any(n is body or uses.get(id(n), 0) != inside.get(id(n), 0) for n in match.nodes if n is not match.root)


def find_matches(body: Expr, entries: list[CompositePattern],
                 order: list[Expr] | None = None) -> dict[int, tuple[Match, CompositePattern]]:
    """Root id -> (Match, pattern) for the non-overlapping, self-contained, accepted matches in `body`
    (`order`: post_order(body), when the caller has it).

    Patterns are tried one after the other over the whole graph, each skipping the nodes
    earlier patterns took — the same result as rewriting after each pattern, with one walk.
    """
    order = order if order is not None else post_order(body)
    nodes, by_op = ops_index(order)
    uses = None
    claimed: set[int] = set()
    found: dict[int, tuple[Match, CompositePattern]] = {}
    for entry in entries:
        for node in may_match_among(entry.pattern, candidate_roots(nodes, root_op_names(entry.pattern), by_op)):
            if id(node) in claimed:
                continue
            match = entry.pattern.find(node)
            if match is None:
                continue
            inner = {id(n) for n in match.nodes}
            if inner & claimed:
                continue
            if uses is None:
                uses = use_counts(order)
            if escapes(match, body, uses) or not entry.accepts(node):
                continue
            claimed |= inner
            found[id(node)] = (match, entry)
    return found


def _composite(match: Match, entry: CompositePattern, args: list[Expr]) -> Call:
    params = []
    inner: dict[int, Expr] = {}
    for k, expr in enumerate(match.inputs):
        param = Var(f"FunctionVar_{k}", expr.checked_type)
        param.checked_type = expr.checked_type
        params.append(param)
        inner[id(expr)] = param
    for node in match.nodes:
        if type(node) is Call:                 # (same op, attrs, span, type and a copy of the meta)
            inner[id(node)] = with_inputs(node, [inner.get(id(k), k) for k in node.args])
            continue
        copied = [inner.get(id(k), k) for k in node.children()]
        new = type(node)(copied) if not hasattr(node, "index") else type(node)(copied[0], node.index)
        new.checked_type = node.checked_type
        inner[id(node)] = carry_meta(node, new)
    body = inner[id(match.root)]
    func = Function(params, body, match.root.checked_type,
                    {"Composite": entry.composite, "PartitionedFromPattern": _partitioned_from(match)})
    call = Call(func, args)
    call.checked_type = match.root.checked_type
    return call


def rewrite_matches(order: list[Expr], matches: dict[int, tuple[Match, CompositePattern]]) -> Expr:
    """The graph whose post_order is `order` with each match (find_matches) replaced by its composite call:
    every other node reading a replaced one is a new node (with_inputs: same type and meta), the rest keep
    their identity. One loop over the graph instead of an ExprMutator: this runs on every node."""
    new: dict[int, Expr] = {}                  # id(old node) -> its replacement
    replaced = new.get
    for node in order:
        found = matches.get(id(node))
        if found is not None:
            match, entry = found
            new[id(node)] = _composite(match, entry, [replaced(id(e), e) for e in match.inputs])
            continue
        if not new:
            continue                           # nothing replaced upstream yet
        if type(node) is Call and len(node.args) == 1:  # (most nodes: one input, no helper calls)
            moved = replaced(id(node.args[0]))
            if moved is not None:
                new[id(node)] = with_inputs(node, (moved,))
            continue
        inputs = rebuildable_inputs(node)
        if inputs is None:
            continue                           # leaves, and Functions (composite bodies are not entered)
        moved = moved_inputs(inputs, replaced)
        if moved is not inputs:
            new[id(node)] = with_inputs(node, moved)
    root = order[-1]
    return new.get(id(root), root)


def composite_calls(matches: dict[int, tuple[Match, CompositePattern]]) -> dict[int, Call]:
    """Root id -> the composite call replacing the match (find_matches) rooted there, reading the match's
    inputs themselves, not what replaces them: they stand in for the nodes they replace in merged_order
    (transform/annotate_partition.py)."""
    return {root: _composite(match, entry, match.inputs) for root, (match, entry) in matches.items()}


def merged_order(order: list[Expr], matches: dict[int, tuple[Match, CompositePattern]],
                 calls: dict[int, Call]) -> list[Expr]:
    """post_order of the body rewrite_matches makes of the body whose post_order is `order` (`calls`:
    composite_calls(matches)), without making it and without walking: less the composites' Functions,
    leaves no node reads as an input. A match's inner nodes are reached only through its root (escapes),
    and the matcher binds its inputs left to right, depth first, as a walk from the root meets them; so
    the walk of the merged body meets the nodes of `order` in the same order, less the inner ones."""
    inner = {id(n) for match, _ in matches.values() for n in match.nodes if n is not match.root}
    get = calls.get
    return [get(id(n), n) for n in order if id(n) not in inner]


def merge_composite(mod: IRModule, patterns, keep: str | None = None) -> IRModule:
    """`mod` with every match of `patterns` (CompositePattern entries or (name, pattern[, check]) rows,
    in priority order) replaced by a composite call (`keep`: a function left as it is, for a caller that
    replaces its matches itself)."""
    entries = composite_entries(patterns)
    if not entries:
        return mod
    mod = typed(mod)
    out = mod
    for name, func in mod.items():
        if "Compiler" in func.attrs or name == keep:
            continue
        order = graph_order(func.body)
        matches = find_matches(func.body, entries, order)
        if matches:
            out = out.with_function(name, merged_function(func, order, matches))
    return out


def merged_function(func: Function, order: list[Expr], matches: dict[int, tuple[Match, CompositePattern]]) -> Function:
    """`func` with the `matches` of its body (find_matches; `order`: graph_order of the body) replaced."""
    new = Function(func.params, rewrite_matches(order, matches), func.ret_type, func.attrs, func.span)
    new.checked_type = func.checked_type
    return new


def MergeComposite(patterns) -> NamedPass:  # noqa: N802 - TVM's spelling
    return NamedPass("MergeComposite", lambda mod: merge_composite(mod, patterns))
