"""MergeCompilerRegions: grow annotated regions of one target as far as possible without creating a cycle.

Every region becomes one function call, so the graph with each region
contracted to a single node must stay acyclic. That forbids the "diamond" (A-ops
on two paths around a host op must not merge into one region that both feeds
and consumes the host op) and also its subtler cousin through other regions: a
region made of two unconnected parts can feed and consume the same other region.

The graph is walked once in topological order. Each node may join the regions
of its inputs that have its target (its candidates). Every live value and open
region knows the exact set of regions upstream of it in the contracted graph;
joining candidate G is legal unless another input of the node has G upstream,
and several candidates are joined together only when neither is upstream of the
other. When a region grows and gains new regions upstream, everything already
downstream of it learns them through a reverse index (region -> what lies
downstream), so no set ever goes stale and nothing is walked twice. A region
closes when every user of its nodes has been visited; closed regions and fully
consumed values leave the sets, which therefore stay as small as the number of
regions open at once: near-linear on network-shaped graphs. Regions merge with
union-find; the result is deterministic (candidates in argument order, no
decision depends on set iteration order).
"""
from __future__ import annotations

from ..ir.module import IRModule
from .annotations import Annotations, graph_nodes, inputs_of, read, write
from .named_pass import NamedPass


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
    find = uf.find
    group: dict[int, int] = {}              # annotated node -> its group (a union-find element)
    pending: dict[int, int] = {}            # group root -> user edges of its nodes not visited yet
    node_up: dict[int, set[int]] = {}       # live host node -> groups upstream of it (contracted graph)
    group_up: dict[int, set[int]] = {}      # open group root -> groups upstream of it (contracted graph)
    below: dict[int, set[tuple[str, int]]] = {}  # group root -> ("n", node) / ("g", group) downstream of it
    first_group_of_region: dict[int, int] = {}

    def live(items) -> set[int]:
        return {r for r in map(find, items) if pending.get(r, 0) > 0}

    def contribution(c: int) -> set[int]:
        """What input `c` puts upstream of its reader: its group and that group's upstream, or its own set."""
        if c in group:
            g = find(group[c])
            ups = group_up[g] = live(group_up[g])
            return ups | {g}
        return live(node_up.get(c, ()))

    def register(entity: tuple[str, int], groups) -> None:
        for g in groups:
            below.setdefault(find(g), set()).add(entity)

    def widen(entities, delta: set[int], skip: int) -> None:
        """Everything in `entities` (downstream of a region that grew) has `delta` upstream too."""
        if not delta:
            return
        for kind, key in list(entities):
            if kind == "n":
                ups = node_up.get(key)
            else:
                key = find(key)
                ups = group_up.get(key) if key != skip else None
            if ups is None:
                continue
            ups |= delta
            register((kind, key), delta)

    for i in range(n):
        kids = children[i]
        contrib = {c: contribution(c) for c in kids}
        t = target.get(i)
        if t is None:
            if users_left[i]:
                ups: set[int] = set()
                for s in contrib.values():
                    ups |= s
                if ups:
                    node_up[i] = ups
                    register(("n", i), ups)
        else:
            candidates: list[int] = []
            for c in kids:
                if target.get(c) == t:
                    g = find(group[c])
                    if g not in candidates:
                        candidates.append(g)

            def blocked(g: int) -> bool:
                return any(g in contrib[c] for c in kids if not (c in group and find(group[c]) == g))

            chosen: list[int] = []
            forced = first_group_of_region.get(ann.region[i])
            if forced is not None:
                chosen.append(find(forced))
            for g in candidates:
                if g in chosen or blocked(g) or any(g in group_up.get(o, ()) or o in group_up.get(g, ()) for o in chosen):
                    continue
                chosen.append(g)
            incoming: set[int] = set()      # what the node's outside inputs put upstream
            for c in kids:
                if not (c in group and find(group[c]) in chosen):
                    incoming |= contrib[c]
            if len(chosen) == 1:
                root = chosen[0]
                ups = group_up.setdefault(root, set())
                delta = incoming - ups
                delta.discard(root)
                if delta:
                    ups |= delta
                    widen(below.get(root, ()), delta, root)
                new_up = delta
            elif chosen:
                root = chosen[0]
                new_up = set(incoming)
                for g in chosen:
                    new_up |= group_up.get(g, set())
                new_up -= set(chosen)
                old = [(group_up.get(g, set()), below.pop(g, set())) for g in chosen]
                for other in chosen[1:]:
                    uf.parent[other] = root
                    pending[root] = pending.get(root, 0) + pending.pop(other, 0)
                    group_up.pop(other, None)
                group_up[root] = new_up
                merged_below = max((b for _, b in old), key=len)
                for _, b in old:
                    if b is not merged_below:
                        merged_below |= b
                below[root] = merged_below
                for ups_before, downstream in old:
                    widen(downstream, new_up - ups_before, root)
            else:
                root = uf.make()
                new_up = incoming
                new_up.discard(root)
                group_up[root] = new_up
            register(("g", root), new_up)
            group[i] = root
            first_group_of_region.setdefault(ann.region[i], root)
            pending[root] = pending.get(root, 0) + users_left[i]
        # Each input has one user fewer to wait for; closed regions and consumed values leave the sets.
        for c in kids:
            if c in group:
                g = find(group[c])
                pending[g] -= 1
                if pending[g] == 0:
                    group_up.pop(g, None)
                    below.pop(g, None)
            users_left[c] -= 1
            if users_left[c] == 0 and c in node_up:
                for g in node_up.pop(c):
                    entries = below.get(find(g))
                    if entries:
                        entries.discard(("n", c))

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
