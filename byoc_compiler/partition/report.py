"""What partitioning did: per target its regions and ops; per host op why no target took it."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..ir.analysis import use_counts
from ..ir.expr import Call, Function, GlobalVar, Op
from ..ir.module import IRModule
from ..ir.visitor import graph_order, post_order
from ..pattern.matcher import op_names as _pattern_op_names, root_op_names
from ..transform.merge_composite import candidate_roots, escapes, ops_index


@dataclass(frozen=True)
class RegionInfo:
    symbol: str
    target: str
    ops: Counter            # primitive op -> count (composite bodies included)
    composites: Counter     # Composite name -> count


@dataclass(frozen=True)
class HostOp:
    op: str
    count: int
    why: str


@dataclass
class PartitionReport:
    targets: list[str]
    regions: list[RegionInfo] = field(default_factory=list)
    host: list[HostOp] = field(default_factory=list)

    def regions_of(self, target: str) -> list[RegionInfo]:
        return [r for r in self.regions if r.target == target]

    @property
    def host_op_count(self) -> int:
        return sum(h.count for h in self.host)

    def table(self, regions: bool = False) -> str:
        """The summary as text; with `regions`, one line per external function too."""
        lines = ["target        regions  ops  op counts"]
        for name in self.targets:
            of_target = self.regions_of(name)
            total = Counter()
            for r in of_target:
                total.update(r.ops)
            lines.append(f"{name:<13} {len(of_target):>7}  {sum(total.values()):>3}  {_counts(total)}")
            if regions:
                for r in of_target:
                    composites = f"  [{_counts(r.composites)}]" if r.composites else ""
                    lines.append(f"  {r.symbol}: {_counts(r.ops)}{composites}")
        lines.append(f"{'host':<13} {'-':>7}  {self.host_op_count:>3}")
        if self.host:
            lines.append("")
            lines.append("host ops (why no target took them):")
            width = max(len(h.op) for h in self.host)
            for h in self.host:
                lines.append(f"  {h.op:<{width}}  x{h.count:<4} {h.why}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _counts(counter: Counter) -> str:
    return ", ".join(f"{name} x{n}" for name, n in sorted(counter.items())) or "-"


def composite_refusals(body, targets, order=None) -> dict[int, str]:
    """Node id -> why a composite pattern that matched around this host node did not take it: its
    check's reason, or an intermediate value used outside the match. First target and pattern win,
    in priority and declaration order (the order MergeComposite tries them). `order`: post_order(body),
    when the caller has it."""
    order = order if order is not None else post_order(body)
    nodes, by_op = ops_index(order)
    uses = None
    refusals: dict[int, str] = {}
    for target in targets:
        for entry in target.patterns:
            for root in candidate_roots(nodes, root_op_names(entry.pattern), by_op):
                match = entry.pattern.find(root)
                if match is None or all(id(n) in refusals for n in match.nodes):
                    continue
                if uses is None:
                    uses = use_counts(order)
                if escapes(match, body, uses):
                    why = "an intermediate value of the match is used outside it"
                else:
                    why = entry.refusal(root) or "it overlaps a match taken first"
                for n in match.nodes:
                    refusals.setdefault(id(n), f"{target.name} takes it only inside composite "
                                               f"{entry.composite}, which refused here: {why}")
    return refusals


def composite_ops(targets) -> dict[str, frozenset[str]]:
    """Target name -> the ops it takes inside its composite patterns (why_not asks this per host op)."""
    return {t.name: frozenset().union(*(_pattern_op_names(p.pattern) for p in t.patterns)) for t in targets}


def why_not(call: Call, targets, refusals: dict[int, str] | None = None,
            in_patterns: dict[str, frozenset[str]] | None = None) -> str:
    """Why no target in `targets` (Target objects, priority order) takes `call`; `refusals` (from
    `composite_refusals`) explains ops that a target takes only inside a composite; `in_patterns` is
    composite_ops(targets), computed once by a caller that asks for many calls."""
    if isinstance(call.op, Function):
        composite = call.op.attrs.get("Composite", "a function")
        return f"composite {composite} belongs to a target that was not asked for"
    if not isinstance(call.op, Op):
        return "not an op"
    name = call.op.name
    reasons = [(t.name, t.check(call)) for t in targets]
    if all(r == f"does not support {name}" for _, r in reasons):
        if refusals and id(call) in refusals:
            return refusals[id(call)]
        in_patterns = in_patterns if in_patterns is not None else composite_ops(targets)
        in_composites = [t.name for t in targets if name in in_patterns[t.name]]
        if in_composites:
            return f"{', '.join(in_composites)} take(s) {name} only inside composites, and none matched here"
        return f"no target supports {name}"
    takers = [t for t, r in reasons if r is None]
    if takers:
        return (f"{takers[0]} takes {name} but it was kept on the host so that no region takes or returns a "
                "tuple (its tuple is used whole or shared)")
    return "; ".join(f"{t}: {r}" for t, r in reasons)


def _node_label(call: Call) -> str:
    if isinstance(call.op, Op):
        return call.op.name
    if isinstance(call.op, Function):
        return str(call.op.attrs.get("Composite", "fn"))
    return "@" + call.op.name_hint


def _region_info(name: str, func: Function) -> RegionInfo:
    ops: Counter = Counter()
    composites: Counter = Counter()
    entered: set[int] = set()
    order = graph_order(func.body)    # the walk the last InferType made of this body
    for n in order:
        if type(n) is Call and type(n.op) is Function and id(n.op) not in entered:
            entered.add(id(n.op))
            _count_calls(post_order(n.op.body, into_functions=True), ops, composites)
    _count_calls(order, ops, composites)
    return RegionInfo(name, str(func.attrs["Compiler"]), ops, composites)


def _count_calls(nodes, ops: Counter, composites: Counter) -> None:
    for n in nodes:
        if type(n) is Call:
            if type(n.op) is Op:
                ops[n.op.name] += 1
            elif type(n.op) is Function and "Composite" in n.op.attrs:
                composites[str(n.op.attrs["Composite"])] += 1


def summarize_module(mod: IRModule, targets) -> PartitionReport:
    """The report of a partitioned module, for `targets` (Target objects, priority order)."""
    report = PartitionReport([t.name for t in targets])
    report.regions = [_region_info(name, func) for name, func in mod.items() if func.attrs.get("Compiler") is not None]
    for t in {r.target for r in report.regions} - set(report.targets):
        report.targets.append(t)
    host: Counter = Counter()
    body = mod["main"].body
    order = graph_order(body)
    refusals = composite_refusals(body, targets, order)
    in_patterns = composite_ops(targets)
    for node in order:
        if isinstance(node, Call) and not isinstance(node.op, GlobalVar):
            host[(_node_label(node), why_not(node, targets, refusals, in_patterns))] += 1
    report.host = [HostOp(op, n, why) for (op, why), n in host.items()]
    return report
