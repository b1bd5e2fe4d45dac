"""Per-step profiles: where a build spends its time, and how two builds compare node by node.

    prof = profile_build(lib, inputs, repeat=21)     # runner --profile --repeat 21
    print(prof.table())                              # step, region/target, ops, median ms, share, GFLOP/s
    print(side_by_side([prof_host, prof_ccompiler], unpartitioned, inputs).table())

The runner times every step with clock_gettime around the call (the C runtime's node observer; its
arrays are allocated before the timed runs, nothing is allocated while timing) and prints, per step,
the median duration and median start within the run over the repeats, plus the median whole run.
`steps_ms / run_ms` says how much of the run the steps account for (the rest is the executor itself).
"""
from __future__ import annotations

import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..runtime.runner import run_runner_proc
from ..columns import columns
from ..errors import ByocError
from ..ir.expr import Call, Tuple, TupleGetItem
from ..ir.visitor import post_order
from .compare import _region_ops
from .flops import call_flops
from .nodes import ModelNodes, describe_call, step_inputs, step_references


@dataclass
class StepTime:
    step: int
    name: str                      # C function
    target: str                    # "host" or the region's target
    what: str                      # op, or the region's ops
    ms: float                      # median duration
    start_ms: float                # median start within the run
    flops: int = 0                 # multiply-adds x 2 (debug/flops.py)

    @property
    def gflops(self) -> float | None:
        return self.flops / (self.ms * 1e6) if self.flops and self.ms > 0 else None


@dataclass
class Profile:
    label: str                     # "ccompiler gcc graph packed -O2"
    run_ms: float                  # median whole run
    repeat: int
    steps: list = field(default_factory=list)
    lib: object = None

    @property
    def steps_ms(self) -> float:
        return sum(s.ms for s in self.steps)

    def by_target(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for s in self.steps:
            out[s.target] = out.get(s.target, 0.0) + s.ms
        return out

    def table(self) -> str:
        rows = [("step", "region/target", "op or composite", "median ms", "share", "GFLOP/s")]
        for s in self.steps:
            where = "host" if s.target == "host" else f"{s.name} ({s.target})"
            rows.append((str(s.step), where, s.what, f"{s.ms:.4f}", _share(s.ms, self.run_ms),
                         f"{s.gflops:.2f}" if s.gflops else ""))
        lines = [f"{self.label}: median of {self.repeat} runs", columns(rows), ""]
        per = [("target", "median ms", "share")]
        for target, ms in sorted(self.by_target().items(), key=lambda kv: -kv[1]):
            per.append((target, f"{ms:.4f}", _share(ms, self.run_ms)))
        per.append(("executor (rest of the run)", f"{max(self.run_ms - self.steps_ms, 0.0):.4f}",
                    _share(max(self.run_ms - self.steps_ms, 0.0), self.run_ms)))
        lines.append(columns(per))
        lines.append(f"whole run {self.run_ms:.4f} ms; steps add up to {self.steps_ms:.4f} ms "
                     f"({_share(self.steps_ms, self.run_ms)} of the run)")
        return "\n".join(lines)


def _share(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole > 0 else "-"


# ---- FLOPs --------------------------------------------------------------------------------------
def step_flops(lib, step) -> int:
    if step.kind == "host":
        return call_flops(step.call)
    func = lib.program.regions[step.symbol][1]
    return sum(call_flops(n) for n in post_order(func.body, into_functions=True) if isinstance(n, Call))


# ---- running ------------------------------------------------------------------------------------
_NUM = r"([0-9.eE+-]+)"
_STEP = re.compile(rf"^step (\d+) {_NUM} {_NUM} {_NUM} (\S+)$")
CLOCKS = ("wall", "cpu")


def parse_runner_profile(stdout: str, clock: str = "wall") -> tuple[float, list[tuple[int, float, float, str]]]:
    """(median run ms, [(step, median ms, median start ms, function)]) from `runner --profile` output,
    in wall time or in the thread's CPU time (`clock="cpu"`: steady on a loaded machine)."""
    if clock not in CLOCKS:
        raise ByocError(f"profile: clock {clock!r} is not one of {', '.join(CLOCKS)}")
    run = re.search(rf"^median{'_cpu' if clock == 'cpu' else ''}_ms={_NUM}$", stdout, re.M)
    if run is None:
        raise ByocError("runner --profile printed no median time; is the runner older than --profile?")
    steps = [(int(m[1]), float(m[4] if clock == "cpu" else m[2]), float(m[3]), m[5])
             for m in map(_STEP.match, stdout.splitlines()) if m]
    return float(run[1]), steps


def label_of(lib) -> str:
    targets = ",".join(lib.metadata["targets"]) or "host"
    return f"{targets} {lib.toolchain.name} {lib.executor} {lib.interface} {lib.opt}".rstrip()


def profile_build(lib, inputs, repeat: int = 21, runner=None, timeout: float = 1800.0, clock: str = "wall") -> Profile:
    """Run `lib`'s runner with --profile over `repeat` timed runs (after one warm-up run); times in `clock`."""
    if repeat < 1:
        raise ByocError(f"profile: repeat must be at least 1, got {repeat}")
    runner = runner or lib.runner()
    arrays = [inputs[i["name"]] for i in lib.metadata["inputs"]] if isinstance(inputs, dict) else list(inputs)
    with tempfile.TemporaryDirectory(prefix="byoc-profile-") as tmp:
        _, proc = run_runner_proc(runner, lib.toolchain.run, arrays, Path(tmp), repeat=repeat, timeout=timeout,
                                  extra_args=["--profile", *lib.runner_args()], what=f"profiling {label_of(lib)}")
    run_ms, rows = parse_runner_profile(proc.stdout, clock)
    steps = lib.program.steps
    if len(rows) != len(steps):
        raise ByocError(f"profile: the runner timed {len(rows)} steps but the build has {len(steps)}")
    prof = Profile(label_of(lib) + ("" if clock == "wall" else f" ({clock} time)"), run_ms, repeat, lib=lib)
    for (k, ms, start, name), step in zip(rows, steps):
        if step.kind == "host":
            target, what = "host", step.op_name
        else:
            target, what = step.target, _region_ops(lib.program.regions[step.symbol][1])
        prof.steps.append(StepTime(k, name, target, what, ms, start, step_flops(lib, step)))
    return prof


# ---- side by side -------------------------------------------------------------------------------
def step_nodes(lib, inputs, nodes: ModelNodes) -> list[set[str]]:
    """For every step of `lib`, the unpartitioned nodes it computes: every node between the nodes its
    inputs are and the nodes its outputs are (a region: every op inside it, whatever passes such as
    FoldBatchNorm did to them on the way)."""
    refs, env = step_references(lib, inputs)
    out = []
    for step, want in zip(lib.program.steps, refs):
        op = step.op_name if step.kind == "host" else None
        heads = {nodes.name_of(w, op) for w in want} - {"?"}
        stops = {nodes.name_of(v) for v in step_inputs(lib, env, step)} - {"?"}
        names, stack = set(), [nodes.by_name[h] for h in heads if h in nodes.by_name]
        while stack:
            node = stack.pop()
            name = nodes.names.get(id(node))
            if name is None or name in names or (name in stops and name not in heads):
                continue
            if isinstance(node, Call):
                children = node.args
            elif isinstance(node, TupleGetItem):
                children = (node.tuple_value,)
            elif isinstance(node, Tuple):
                children = node.fields
            else:
                continue            # an input of the model
            names.add(name)
            stack.extend(children)
        out.append(names)
    return out


@dataclass
class Segment:
    nodes: list                    # unpartitioned node names, graph order
    ops: str
    ms: list                       # per profile: time of the steps covering the segment
    steps: list                    # per profile: how many steps


@dataclass
class SideBySide:
    labels: list
    segments: list
    totals: list

    def table(self) -> str:
        first = self.labels[0].split()[0]
        head = ("nodes", "ops") + tuple(f"{label} ms" for label in self.labels) + \
            tuple(f"{label.split()[0]} speed-up" for label in self.labels[1:])
        rows = [head]
        for seg in self.segments:
            span = seg.nodes[0] if len(seg.nodes) == 1 else f"{seg.nodes[0]}..{seg.nodes[-1]} ({len(seg.nodes)})"
            ratios = tuple(f"{seg.ms[0] / m:.2f}" if m > 0 else "-" for m in seg.ms[1:])
            rows.append((span, seg.ops) + tuple(f"{m:.4f} ({n} steps)" if n != 1 else f"{m:.4f}"
                                                for m, n in zip(seg.ms, seg.steps)) + ratios)
        rows.append(("whole run", "") + tuple(f"{t:.4f}" for t in self.totals) +
                    tuple(f"{self.totals[0] / t:.2f}" if t > 0 else "-" for t in self.totals[1:]))
        return columns(rows) + f"\n(speed-up: {first}'s time / that build's time; above 1 that build is faster)"


def side_by_side(profiles: list, unpartitioned, inputs) -> SideBySide:
    """Compare builds of one model node by node: nodes are grouped so that every group is covered by
    whole steps in every build (a region of one build against the host ops it replaces in another)."""
    nodes = ModelNodes.of(unpartitioned, inputs)
    order = {name: i for i, name in enumerate(nodes.names.get(id(n)) for n in _graph_nodes(nodes))}
    parent: dict[str, str] = {}

    def find(a):
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    covers = []
    for prof in profiles:
        sets = step_nodes(prof.lib, inputs, nodes)
        covers.append(sets)
        for names in sets:
            names = sorted(names)
            for a in names[1:]:
                parent[find(a)] = find(names[0])
            for a in names[:1]:
                find(a)
    groups: dict[str, list] = {}
    for name in parent:
        groups.setdefault(find(name), []).append(name)
    segments = []
    for members in sorted(groups.values(), key=lambda m: min(order.get(n, 1 << 30) for n in m)):
        members.sort(key=lambda n: order.get(n, 1 << 30))
        root = find(members[0])
        ms, counts = [], []
        for prof, sets in zip(profiles, covers):
            hit = [s for s, names in zip(prof.steps, sets) if names and find(next(iter(names))) == root]
            ms.append(sum(s.ms for s in hit))
            counts.append(len(hit))
        segments.append(Segment(members, _ops_text([_op_of(nodes, n) for n in members]), ms, counts))
    return SideBySide([p.label for p in profiles], segments, [p.run_ms for p in profiles])


def _ops_text(ops: list[str]) -> str:
    """`nn.conv2d`, or the most frequent ops of a group: `nn.conv2d x52, nn.batch_norm x52, ... (170 ops)`."""
    calls = [o for o in ops if o not in ("TupleGetItem", "Tuple")] or ops
    if len(calls) == 1:
        return calls[0]
    top = Counter(calls).most_common(3)
    text = ", ".join(f"{o} x{k}" if k > 1 else o for o, k in top)
    return text + (f", ... ({len(calls)} ops)" if len(top) < len(set(calls)) else "")


def _graph_nodes(nodes: ModelNodes):
    return [n for n in post_order(nodes.func.body) if isinstance(n, (Call, Tuple, TupleGetItem))]


def _op_of(nodes: ModelNodes, name: str) -> str:
    for n in _graph_nodes(nodes):
        if nodes.names.get(id(n)) == name:
            return describe_call(n) if hasattr(n, "op") else type(n).__name__
    return "?"
