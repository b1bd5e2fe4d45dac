"""MergeCompilerRegions: grow annotated regions of one target as far as possible without creating a cycle.

A region may not be left and re-entered: if a path runs from region R through
any node outside it back into R, lifting R into one function would make that
function both feed and consume the outside node (the "diamond": A-ops on two
paths around a host op).

The graph is walked once in topological order. Each node may join the regions
of its inputs that have its target (its candidates). Joining candidate G is
legal unless some *other* input of the node is reachable from G — then a path
leaves G and comes back. Several candidates are joined together only when they
are independent of one another. To answer "is G upstream of this input" each
node carries the set of still-open regions upstream of it; a region closes when
every user of its nodes has been visited (nothing can join it any more), and
closed regions are dropped from the sets. Sets stay as small as the number of
regions open at once, so the walk is near-linear on network-shaped graphs;
regions are merged with union-find. The result is deterministic: candidates are
taken in argument order and no decision depends on set iteration order.
"""
from __future__ import annotations

from ..ir.module import IRModule
from ..partition.annotations import Annotations, graph_nodes, inputs_of, read, write
from ..partition.named_pass import NamedPass


class _UnionFind:
    def __init__(self):
        self.parent: list[int] = []

    def make(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, g: int) -> int:
        parent = self.parent
        root = g
        while parent[root] != root:
            root = parent[root]
        while parent[g] != root:
            parent[g], g = root, parent[g]
        return root


def merge_regions(ann: Annotations, children: list[list[int]]) -> Annotations:
    """Merged annotations for a graph given as children positions per node (topological order)."""
    n = len(children)
    target = ann.target
    users_left = [0] * n
    for kids in children:
        for c in kids:
            users_left[c] += 1
    uf = _UnionFind()
    group: dict[int, int] = {}                  # node -> group (a union-find element)
    pending: dict[int, int] = {}                # group root -> unvisited user edges of its nodes
    upstream: dict[int, set[int]] = {}          # node -> open groups upstream of it (incl. its own)
    group_upstream: dict[int, set[int]] = {}    # group root -> open groups upstream of any of its nodes
    first_group_of_region: dict[int, int] = {}  # annotated region -> its group (regions stay whole)
    find = uf.find

    def is_open(g: int) -> bool:
        return pending.get(g, 0) > 0

    def live(items: set[int]) -> set[int]:
        return {r for r in map(find, items) if is_open(r)}

    for i in range(n):
        kids = children[i]
        ups: set[int] = set()
        for c in kids:
            s = upstream.get(c)
            if s:
                ups |= s
        ups = live(ups)
        t = target.get(i)
        if t is not None:
            candidates: list[int] = []
            for c in kids:
                if target.get(c) == t:
                    g = find(group[c])
                    if g not in candidates and is_open(g):
                        candidates.append(g)

            def blocked(g: int) -> bool:
                for c in kids:
                    if c in group and find(group[c]) == g:
                        continue
                    s = upstream.get(c)
                    if s and any(find(x) == g for x in s):
                        return True
                return False

            def related(a: int, b: int) -> bool:
                return b in live(group_upstream[a]) or a in live(group_upstream[b])

            chosen: list[int] = []
            forced = first_group_of_region.get(ann.region[i])
            if forced is not None:
                chosen.append(find(forced))
            for g in candidates:
                if g in chosen or blocked(g):
                    continue
                if all(not related(g, other) for other in chosen):
                    chosen.append(g)
            if chosen:
                root = chosen[0]
                for other in chosen[1:]:
                    uf.parent[other] = root
                    pending[root] = pending.get(root, 0) + pending.pop(other, 0)
                    a, b = group_upstream[root], group_upstream.pop(other)
                    if len(a) < len(b):
                        a, b = b, a
                    a |= b
                    group_upstream[root] = a
            else:
                root = uf.make()
                group_upstream[root] = set()
            group[i] = root
            first_group_of_region.setdefault(ann.region[i], root)
            pending[root] = pending.get(root, 0) + users_left[i]
            ups.add(root)
            gu = group_upstream[root]
            gu |= ups
            gu.discard(root)
        # This node's inputs have one user fewer to wait for; closed groups leave the sets.
        for c in kids:
            if c in group:
                g = find(group[c])
                pending[g] -= 1
        if ups:
            upstream[i] = ups
        for c in kids:
            users_left[c] -= 1
            if users_left[c] == 0:
                upstream.pop(c, None)

    region = {i: find(g) for i, g in group.items()}
    return Annotations(ann.node_count, dict(target), region).normalized()


def merge_compiler_regions(mod: IRModule) -> IRModule:
    """`mod` with the annotated regions of main merged as far as no cycle arises."""
    main = mod["main"]
    nodes = graph_nodes(main)
    ann = read(main, nodes)
    if not ann.target:
        return mod
    index = {id(node): i for i, node in enumerate(nodes)}
    children = [list(dict.fromkeys(index[id(c)] for c in inputs_of(node))) for node in nodes]
    merged = merge_regions(ann, children)
    return mod.with_function("main", write(main, merged))


def MergeCompilerRegions() -> NamedPass:  # noqa: N802 - TVM's spelling
    return NamedPass("MergeCompilerRegions", merge_compiler_regions)
