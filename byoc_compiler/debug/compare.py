"""Per-node compare: which step of a build first leaves the reference, and inside a region, which op.

    report = compare_build(lib, unpartitioned_mod, inputs)
    print(report.table())        # one row per step, in execution (topological) order
    print(report.summary())      # "first beyond tolerance: step 3, region ... (ccompiler), op ..."

The build runs once with a dump of every step's outputs (runner --dump, under qemu-user for a
foreign CPU); each output is judged as `scons check` judges model outputs: against the float64
reference of the unpartitioned node it computes, allowing testing.tolerance.allowed_error of that
node's float32 error estimate (testing/error_bound.py). A row's margin is the largest share of the
allowance any element uses; above 1 the element would fail the check. (A value no node of the
unpartitioned model has falls back to per-dtype rtol/atol against the float32 reference.)

The first step beyond tolerance is diagnosed when it is a region (diagnose_region): its function is
built alone and run on the REFERENCE values of its inputs. Still beyond tolerance: the region is
wrong by itself. Within: it only inherited inputs that were already off. Then the same function
with every intermediate value made a region output shows which op (or composite) inside it is the
first one off.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..backend.build import build
from ..runtime.runner import run_runner_proc
from ..columns import columns
from ..errors import ByocError
from ..ir.expr import Call, Constant, Function, GlobalVar, Tuple, Var
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import post_order
from ..runtime.dump import read_dump
from ..testing.reference import node_values
from ..transform import InferType
from .board_dump import run_dumped_on_board
from .error import Error, error_of, worst
from .nodes import ModelNodes, describe_call, flatten_value, step_inputs, step_references


# ---- rows ------------------------------------------------------------------------------------------
@dataclass
class Row:
    step: int
    where: str                     # "host" or the region's symbol
    target: str                    # "host" or the target's name
    what: str                      # the op, or the region's ops
    node: str                      # the unpartitioned node(s) it computes
    shape: str
    error: Error


@dataclass
class RegionDiagnosis:
    step: int
    symbol: str
    target: str
    by_itself: bool | None         # None: the region could not be run alone (see note)
    op: str | None = None          # the first op/composite inside it beyond tolerance
    op_node: str | None = None     # its unpartitioned node
    op_rows: list = field(default_factory=list)
    op_inputs: list = field(default_factory=list)   # unpartitioned nodes feeding that op (not constants)
    note: str = ""

    def sentence(self) -> str:
        if self.by_itself is None:
            return f"could not be re-run alone ({self.note})"
        if not self.by_itself:
            return "within tolerance when run alone on reference inputs: it inherited inputs that were off"
        text = "wrong by itself (beyond tolerance on reference inputs)"
        if self.op:
            text += f"; first op beyond tolerance inside it: {self.op} ({self.op_node})"
        elif self.note:
            text += f"; {self.note}"
        return text


@dataclass
class CompareReport:
    model: str
    config: str                    # "target=... toolchain=... executor=... interface=... opt=..."
    rows: list
    outputs: list                  # Error per model output
    first: int | None              # index into rows of the first step beyond tolerance
    diagnosis: RegionDiagnosis | None = None
    partition_note: str = ""       # set when the partitioned reference differs from the unpartitioned one

    @property
    def passed(self) -> bool:
        return self.first is None and not any(e.beyond for e in self.outputs)

    def first_row(self) -> Row | None:
        return None if self.first is None else self.rows[self.first]

    def summary(self) -> str:
        """One sentence: the first step beyond tolerance, its region and op (what `scons check` prints)."""
        if self.partition_note:
            return self.partition_note
        row = self.first_row()
        if row is None:
            return "every step is within tolerance" if self.passed else \
                "every step is within tolerance, but an output is not (it repeats an input or constant?)"
        where = "host op" if row.where == "host" else f"region {row.where} ({row.target})"
        what = f"{row.what} " if row.where == "host" else ""
        text = (f"first step beyond tolerance: step {row.step}, {where}, {what}computing {row.node} "
                f"(margin {row.error.margin:.3g}x the tolerance)")
        if self.diagnosis is not None:
            text += f"; the region is {self.diagnosis.sentence()}"
        return text

    def table(self) -> str:
        head = ("step", "region/target", "op or composite", "node", "shape", "max abs", "max rel", "margin", "")
        lines = [head]
        for i, r in enumerate(self.rows):
            mark = "<< first" if i == self.first else ("beyond" if r.error.beyond else "")
            lines.append((str(r.step), r.where if r.where == "host" else f"{r.where} ({r.target})", r.what,
                          r.node, r.shape, f"{r.error.max_abs:.3g}", f"{r.error.max_rel:.3g}",
                          f"{r.error.margin:.3g}", mark))
        text = columns(lines)
        if self.diagnosis is not None and self.diagnosis.op_rows:
            d = self.diagnosis
            sub = [("", "inside " + d.symbol, "op or composite", "node", "shape", "max abs", "max rel", "margin", "")]
            first = next((k for k, r in enumerate(d.op_rows) if r.error.beyond), len(d.op_rows))
            lo, hi = max(0, first - 3), first + 3   # the first op off, with a few ops around it
            for k in range(lo, min(hi, len(d.op_rows))):
                r = d.op_rows[k]
                mark = "<< first" if k == first else ("beyond" if r.error.beyond else "")
                sub.append(("", f"op {k}", r.what, r.node, r.shape, f"{r.error.max_abs:.3g}",
                            f"{r.error.max_rel:.3g}", f"{r.error.margin:.3g}", mark))
            lines = columns(sub).split("\n")
            if lo:
                lines.insert(2, f"  ... {lo} ops before, within tolerance")
            text += "\n\n" + "\n".join(lines)
            rest = d.op_rows[hi:]
            if rest:
                text += (f"\n  ... {len(rest)} more ops inside, {sum(r.error.beyond for r in rest)} of them beyond "
                         "tolerance")
        return f"{self.model}: {self.config}\n{text}\n{self.summary()}"


def _region_ops(func) -> str:
    """The ops of a region in graph order, composites by their short name: `conv2d_bias_relu x2, add, nn.relu`."""
    names = []
    for n in post_order(func.body):
        if isinstance(n, Call):
            name = str(n.op.attrs.get("Composite", "fn")).split(".")[-1] if isinstance(n.op, Function) \
                else describe_call(n)
            if names and names[-1][0] == name:
                names[-1][1] += 1
            else:
                names.append([name, 1])
    text = ", ".join(n if k == 1 else f"{n} x{k}" for n, k in names)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- running ---------------------------------------------------------------------------------------
def run_dumped(lib, inputs, runner=None, run_prefix=None, timeout: float = 600.0):
    """Run `lib`'s runner once on `inputs` with --dump; (outputs, [DumpedStep])."""
    arrays = [inputs[i["name"]] for i in lib.metadata["inputs"]] if isinstance(inputs, dict) else list(inputs)
    if lib.toolchain.freestanding:     # no files nor options on a board: an image with its own dump
        return run_dumped_on_board(lib, arrays)
    runner = runner or lib.runner()
    run_prefix = lib.toolchain.run if run_prefix is None else run_prefix
    with tempfile.TemporaryDirectory(prefix="byoc-dump-") as tmp:
        dump = Path(tmp) / "dump"
        dump.mkdir()
        outputs, _ = run_runner_proc(runner, run_prefix, arrays, Path(tmp), extra_args=["--dump", dump, *lib.runner_args()],
                                     timeout=timeout, what=f"running {runner} with --dump")
        return outputs, read_dump(dump)


def _config_text(lib, target: str) -> str:
    return (f"target={target} toolchain={lib.toolchain.name} executor={lib.executor} "
            f"interface={lib.interface} opt={lib.opt}")


def compare_build(lib, unpartitioned, inputs: dict, *, model: str = "model", target: str = "",
                  runner=None, run_prefix=None, diagnose: bool = True) -> CompareReport:
    """Run `lib` (a BuildResult of `unpartitioned`, partitioned or not) with a dump, compare every step."""
    outputs, dumped = run_dumped(lib, inputs, runner, run_prefix)
    refs, env = step_references(lib, inputs)
    nodes = ModelNodes.of(unpartitioned, inputs)
    steps = lib.program.steps
    if len(dumped) != len(steps):
        raise ByocError(f"compare: the dump has {len(dumped)} steps but the build has {len(steps)}; "
                        "the runner does not belong to this build")
    rows = []
    first = None
    for step, got, want in zip(steps, dumped, refs):
        if step.kind == "host":
            where, tgt, what = "host", "host", step.op_name
            names = [nodes.name_of(w, what) for w in want]
        else:
            where, tgt = step.symbol, step.target
            what = _region_ops(lib.program.regions[step.symbol][1])
            names = [nodes.name_of(w) for w in want]
        node = ", ".join(names)
        err = worst([nodes.error(g, n, w) for g, n, w in zip(got.outputs, names, want)])
        shape = ", ".join("x".join(map(str, w.shape)) or "scalar" for w in want)
        rows.append(Row(len(rows), where, tgt, what, node, shape, err))
        if first is None and err.beyond:
            first = len(rows) - 1
    ref_outputs = nodes.outputs()
    out_errors = [nodes.error(g, nodes.name_of(w), w) for g, w in zip(outputs, ref_outputs)]
    part_errors = [error_of(a, b) for a, b in zip(flatten_value(env[id(lib.mod["main"].body)]), ref_outputs)]
    report = CompareReport(model, _config_text(lib, target or ",".join(lib.metadata["targets"]) or "host"),
                           rows, out_errors, first)
    if any(e.beyond for e in part_errors):
        report.partition_note = ("the partitioned module's reference differs from the unpartitioned model's: "
                                 "partitioning changed the result (a bug in a pass, not in a target)")
    if diagnose and first is not None and steps[first].kind == "region":
        report.diagnosis = diagnose_region(lib, steps[first], first, step_inputs(lib, env, steps[first]),
                                           refs[first], nodes)
    return report


# ---- inside a region -------------------------------------------------------------------------------
def region_module(lib, step, expose: bool = False):
    """A module whose main calls only the region of `step` (the same function, symbol and target).

    With `expose`, the region returns every intermediate tensor of its body too (ops and composite
    calls, in graph order), so a run shows each one; returns (module, the exposed nodes)."""
    gname, func = lib.program.regions[step.symbol]
    exposed = []
    if expose:
        exposed = [n for n in post_order(func.body)
                   if isinstance(n, Call) and isinstance(n.checked_type, TensorType)]
        body = Tuple(exposed)
        func = Function(func.params, body, None, func.attrs, func.span)
    params = [Var(f"i{k}", p.checked_type or p.type_annotation) for k, p in enumerate(func.params)]
    main = Function(params, Call(GlobalVar(gname), params))
    return InferType()(IRModule({"main": main, gname: func})), exposed


def _run_alone(lib, mod, arrays):
    sub = build(mod, toolchain=lib.toolchain.name, executor=lib.executor, interface=lib.interface,
                opt=lib.opt, config=lib.config)
    return sub.run_runner(list(arrays))


def diagnose_region(lib, step, index: int, ref_inputs, ref_outputs, nodes: ModelNodes) -> RegionDiagnosis:
    """Is the region of `step` wrong by itself, and which op inside it is first off?

    One build when it can: the region with its intermediates exposed, run on the reference inputs,
    answers both (its last values are the region's outputs). Only when that build is impossible (a
    codegen without multi-output regions) or shows the region right (exposing values changed what the
    codegen does) is the region built again exactly as it is."""
    d = RegionDiagnosis(index, step.symbol, step.target, None)
    gname, func = lib.program.regions[step.symbol]
    mod, exposed = region_module(lib, step, expose=True)
    got = None
    if len(exposed) > 1:
        try:
            got = _run_alone(lib, mod, ref_inputs)
        except ByocError as exc:
            d.note = "its ops could not be exposed one by one: " + str(exc).splitlines()[0]
    if got is not None:
        _, env = node_values(mod, list(ref_inputs), func_name=gname)
        for node, value in zip(exposed, got):
            want = env[id(node)]
            what = describe_call(node)
            name = nodes.name_of(want, what if "(" not in what else None)
            d.op_rows.append(Row(len(d.op_rows), step.symbol, step.target, what, name,
                                 "x".join(map(str, want.shape)), nodes.error(value, name, want)))
            if d.op is None and d.op_rows[-1].error.beyond:
                d.op, d.op_node = what, d.op_rows[-1].node
                d.op_inputs = [n for a in node.args if not isinstance(a, Constant)
                               for n in map(nodes.name_of, flatten_value(env[id(a)])) if n != "?"]
        if d.op is not None:
            d.by_itself = True
            return d
        d.op_rows = []
        d.note = "no single op is beyond tolerance once its intermediates are outputs"
    try:
        plain, _ = region_module(lib, step)
        got = _run_alone(lib, plain, ref_inputs)
    except ByocError as exc:
        d.note = str(exc).splitlines()[0]
        return d
    d.by_itself = worst([nodes.error(g, nodes.name_of(w), w) for g, w in zip(got, ref_outputs)]).beyond
    if d.by_itself and len(exposed) == 1:       # one op (or composite): it is the one
        d.op = describe_call(exposed[0])
        d.op_node = nodes.name_of(ref_outputs[0], d.op if "(" not in d.op else None)
        d.op_inputs = [n for n in map(nodes.name_of, ref_inputs) if n != "?"]   # constants have no name
        d.note = ""
    elif d.by_itself and d.note.startswith("no single op"):
        d.note += " (the bug needs them internal)"
    return d


def explain_failure(lib, unpartitioned, inputs, runner=None, run_prefix=None, model: str = "model") -> str:
    """compare_build's summary for a failed check (one sentence); never raises for a compare problem."""
    try:
        return compare_build(lib, unpartitioned, inputs, model=model, runner=runner, run_prefix=run_prefix).summary()
    except ByocError as exc:
        return f"per-step compare failed: {str(exc).splitlines()[0]}"
