"""What partitioning did: per target its regions and ops; per host op why no target took it."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..ir.analysis import op_counts
from ..ir.expr import Call, Function, GlobalVar, Op
from ..ir.module import IRModule
from ..ir.visitor import post_order


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


def why_not(call: Call, targets) -> str:
    """Why no target in `targets` (Target objects, priority order) takes `call`."""
    if isinstance(call.op, Function):
        composite = call.op.attrs.get("Composite", "a function")
        return f"composite {composite} belongs to a target that was not asked for"
    if not isinstance(call.op, Op):
        return "not an op"
    name = call.op.name
    reasons = [(t.name, t.check(call)) for t in targets]
    if all(r == f"does not support {name}" for _, r in reasons):
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


def summarize_module(mod: IRModule, targets) -> PartitionReport:
    """The report of a partitioned module, for `targets` (Target objects, priority order)."""
    report = PartitionReport([t.name for t in targets])
    for name, func in mod.items():
        compiler = func.attrs.get("Compiler")
        if compiler is None:
            continue
        composites = Counter(str(n.op.attrs["Composite"]) for n in post_order(func.body, into_functions=True)
                             if isinstance(n, Call) and isinstance(n.op, Function) and "Composite" in n.op.attrs)
        report.regions.append(RegionInfo(name, str(compiler), op_counts(func.body), composites))
    for t in {r.target for r in report.regions} - set(report.targets):
        report.targets.append(t)
    host: Counter = Counter()
    for node in post_order(mod["main"].body):
        if isinstance(node, Call) and not isinstance(node.op, GlobalVar):
            host[(_node_label(node), why_not(node, targets))] += 1
    report.host = [HostOp(op, n, why) for (op, why), n in host.items()]
    return report
