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

from collections import Counter
from itertools import chain

from ..ir.module import IRModule
from .annotations import Annotations, graph_nodes, input_positions, read, write
from .named_pass import NamedPass

_NOTHING: frozenset[int] = frozenset()      # what an input with nothing upstream contributes (never changed)


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


class _RegionMerger:
    """The one topological walk (module docstring): per annotated node, propose the regions of its inputs
    it may join, then fuse them with it; per node, release what its inputs no longer wait for."""

    def __init__(self, ann: Annotations, children: list[list[int]]):
        self.ann = ann
        self.children = children
        uses = Counter(chain.from_iterable(children))        # (counted in C: one look per edge of the graph)
        self.users_left = [uses[i] for i in range(len(children))]
        self.uf = _UnionFind()
        self.find = self.uf.find
        self.group: dict[int, int] = {}              # annotated node -> its group (a union-find element)
        self.pending: dict[int, int] = {}            # group root -> user edges of its nodes not visited yet
        self.node_up: dict[int, set[int]] = {}       # live host node -> groups upstream of it (contracted graph)
        self.group_up: dict[int, set[int]] = {}      # open group root -> groups upstream of it (contracted graph)
        self.below: dict[int, set[tuple[str, int]]] = {}  # group root -> ("n", node) / ("g", group) downstream
        self.first_group_of_region: dict[int, int] = {}

    def run(self) -> Annotations:
        target, region = self.ann.target, self.ann.region
        group, pending, users_left, joins_whole = self.group, self.pending, self.users_left, self.joins_whole
        for i, kids in enumerate(self.children):
            if i not in target:
                if kids:
                    self.visit_host(i, {c: self.contribution(c) for c in kids})
                    self.release(kids)
                continue                        # a leaf: nothing upstream of it, nothing to release
            g, grouped = joins_whole(i, kids, target)
            if g is not None:                   # the common case, without the upstream sets (joins_whole)
                group[i] = g
                self.first_group_of_region.setdefault(region[i], g)
                # release(kids), knowing `grouped` inputs are in g and the others have nothing upstream
                left = pending[g] = pending.get(g, 0) + users_left[i] - grouped
                if not left:
                    self.group_up.pop(g, None)
                    self.below.pop(g, None)
                for c in kids:
                    users_left[c] -= 1
                continue
            contrib = {c: self.contribution(c) for c in kids}
            chosen = self.propose(i, contrib)
            incoming: set[int] = set()          # what the node's outside inputs put upstream
            for c in kids:
                if not (c in group and self.find(group[c]) in chosen):
                    incoming |= contrib[c]
            self.join(i, self.fuse(chosen, incoming))
            self.release(kids)
        parent, find = self.uf.parent, self.find
        region = {i: g if parent[g] == g else find(g) for i, g in self.group.items()}
        return Annotations(dict(self.ann.target), region).normalized()

    def joins_whole(self, i: int, kids: list[int], target: dict[int, str]) -> tuple[int | None, int]:
        """(g, how many inputs are in g) when every input of annotated node i either has its target and is in
        group g (which its region's first group, if any, is too) or is a host value with nothing upstream (a
        constant, a parameter): the node joins g and nothing changes upstream of anything. Otherwise
        (None, 0): the general steps decide."""
        t, group, parent, node_up = target[i], self.group, self.uf.parent, self.node_up
        g, grouped = None, 0
        for c in kids:
            have = target.get(c)
            if have != t:
                if have is not None or node_up.get(c):
                    return None, 0
                continue                        # nothing upstream: adds nothing, waits for nothing
            root = group[c]
            if parent[root] != root:
                root = self.find(root)
            if g is None:
                g = root
            elif root != g:
                return None, 0
            grouped += 1
        if g is None:
            return None, 0
        forced = self.first_group_of_region.get(self.ann.region[i])
        return (g, grouped) if forced is None or self.find(forced) == g else (None, 0)

    # ---- the upstream sets ----------------------------------------------------------------------
    def live(self, items) -> set[int]:
        parent, pending, find = self.uf.parent, self.pending, self.find
        out = set()
        for r in items:         # (asked for every input of a quarter of the nodes: no call for a root)
            if parent[r] != r:
                r = find(r)
            if pending.get(r, 0) > 0:
                out.add(r)
        return out

    def contribution(self, c: int) -> set[int] | frozenset[int]:
        """What input `c` puts upstream of its reader: its group and that group's upstream, or its own set
        (callers read it, never change it)."""
        g = self.group.get(c)
        if g is not None:
            if self.uf.parent[g] != g:
                g = self.find(g)
            ups = self.group_up[g]
            if ups:
                ups = self.group_up[g] = self.live(ups)
            return ups | {g}
        ups = self.node_up.get(c)
        return self.live(ups) if ups else _NOTHING

    def register(self, entity: tuple[str, int], groups) -> None:
        for g in groups:
            self.below.setdefault(self.find(g), set()).add(entity)

    def widen(self, entities, delta: set[int], skip: int) -> None:
        """Everything in `entities` (downstream of a region that grew) has `delta` upstream too."""
        if not delta:
            return
        for kind, key in list(entities):
            if kind == "n":
                ups = self.node_up.get(key)
            else:
                key = self.find(key)
                ups = self.group_up.get(key) if key != skip else None
            if ups is None:
                continue
            ups |= delta
            self.register((kind, key), delta)

    # ---- the steps of one node ------------------------------------------------------------------
    def visit_host(self, i: int, contrib: dict[int, set[int]]) -> None:
        """A host node that will be read keeps what its inputs have upstream."""
        if not self.users_left[i]:
            return
        ups: set[int] = set()
        for s in contrib.values():
            ups |= s
        if ups:
            self.node_up[i] = ups
            self.register(("n", i), ups)

    def propose(self, i: int, contrib: dict[int, set[int]]) -> list[int]:
        """The groups node i joins: its region's first group (regions annotated as one stay one), then each
        input group of its target that no other input has upstream and that is not upstream of (or
        downstream from) a group already chosen; in argument order."""
        kids, t, find = self.children[i], self.ann.target[i], self.find
        chosen: list[int] = []
        forced = self.first_group_of_region.get(self.ann.region[i])
        if forced is not None:
            chosen.append(find(forced))
        for c in kids:
            if self.ann.target.get(c) != t:
                continue
            g = find(self.group[c])
            if g in chosen or self._blocked(g, kids, contrib) or self._ordered_with(g, chosen):
                continue
            chosen.append(g)
        return chosen

    def _blocked(self, g: int, kids: list[int], contrib: dict[int, set[int]]) -> bool:
        """Joining g would close a cycle: another input of the node has g upstream."""
        group, find = self.group, self.find
        for c in kids:      # (asked per candidate of a quarter of the nodes: the cheap membership test first)
            if g in contrib[c]:
                h = group.get(c)
                if h is None or find(h) != g:
                    return True
        return False

    def _ordered_with(self, g: int, chosen: list[int]) -> bool:
        return any(g in self.group_up.get(o, ()) or o in self.group_up.get(g, ()) for o in chosen)

    def fuse(self, chosen: list[int], incoming: set[int]) -> tuple[int, set[int]]:
        """(the root of the group the node joins, what that group newly has upstream)."""
        if len(chosen) == 1:
            return chosen[0], self._grow(chosen[0], incoming)
        if chosen:
            return chosen[0], self._unite(chosen, incoming)
        root = self.uf.make()
        incoming.discard(root)
        self.group_up[root] = incoming
        return root, incoming

    def _grow(self, root: int, incoming: set[int]) -> set[int]:
        ups = self.group_up.setdefault(root, set())
        delta = incoming - ups
        delta.discard(root)
        if delta:
            ups |= delta
            self.widen(self.below.get(root, ()), delta, root)
        return delta

    def _unite(self, chosen: list[int], incoming: set[int]) -> set[int]:
        root = chosen[0]
        new_up = set(incoming)
        for g in chosen:
            new_up |= self.group_up.get(g, set())
        new_up -= set(chosen)
        old = [(self.group_up.get(g, set()), self.below.pop(g, set())) for g in chosen]
        for other in chosen[1:]:
            self.uf.parent[other] = root
            self.pending[root] = self.pending.get(root, 0) + self.pending.pop(other, 0)
            self.group_up.pop(other, None)
        self.group_up[root] = new_up
        merged_below = max((b for _, b in old), key=len)
        for _, b in old:
            if b is not merged_below:
                merged_below |= b
        self.below[root] = merged_below
        for ups_before, downstream in old:
            self.widen(downstream, new_up - ups_before, root)
        return new_up

    def join(self, i: int, fused: tuple[int, set[int]]) -> None:
        root, new_up = fused
        self.register(("g", root), new_up)
        self.group[i] = root
        self.first_group_of_region.setdefault(self.ann.region[i], root)
        self.pending[root] = self.pending.get(root, 0) + self.users_left[i]

    def release(self, kids: list[int]) -> None:
        """Each input has one user fewer to wait for; closed regions and consumed values leave the sets."""
        group, pending, users_left, parent = self.group, self.pending, self.users_left, self.uf.parent
        for c in kids:
            g = group.get(c)
            if g is not None:
                if parent[g] != g:
                    g = self.find(g)
                left = pending[g] = pending[g] - 1
                if not left:
                    self.group_up.pop(g, None)
                    self.below.pop(g, None)
            left = users_left[c] = users_left[c] - 1
            if not left and c in self.node_up:
                for g in self.node_up.pop(c):
                    entries = self.below.get(self.find(g))
                    if entries:
                        entries.discard(("n", c))


def merge_regions(ann: Annotations, children: list[list[int]]) -> Annotations:
    """Merged annotations for a graph given as children positions per node (topological order)."""
    return _RegionMerger(ann, children).run()


def merge_compiler_regions(mod: IRModule) -> IRModule:
    """`mod` with the annotated regions of main merged as far as no cycle arises."""
    main = mod["main"]
    nodes = graph_nodes(main)
    ann = read(main, nodes)
    if not ann.target:
        return mod
    merged = merge_regions(ann, input_positions(nodes))
    return mod.with_function("main", write(main, merged, nodes))


def MergeCompilerRegions() -> NamedPass:  # noqa: N802 - TVM's spelling
    return NamedPass("MergeCompilerRegions", merge_compiler_regions)
