"""Region bisection: from a failing model to the smallest subgraph that still fails, as a reproducer.

    result = bisect_failure(mod, ["ccompiler"], dict(toolchain="gcc", executor="graph", ...), inputs, "out/")
    result.model_path       # out/repro.txt: a text-IR model `scons model=out/repro.txt target=ccompiler check` takes
    result.inputs_dir       # out/repro_inputs/<input>.npy: the values its inputs had inside the original run

The model becomes a random-graph `Recipe` (testing/random_graph/: inputs, weights as `Data`, op
steps, each tagged with its node of the original model) so the matrix's shrinker does the
shrinking. A candidate "fails" when, partitioned and built like the original, its runner's outputs
are beyond the check's tolerance both on the values its inputs had in the original run (the
reference values of the nodes it cut) and on the deterministic inputs `scons check` feeds it.

The search starts where the per-step compare points (debug/compare.py): the op (or composite)
found wrong inside the first failing region, alone with its inputs cut; then that region's nodes;
then everything up to it. The first of these that fails is shrunk further.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..backend.build import build
from ..check import deterministic_inputs
from ..errors import ByocError
from ..ir.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from ..ir.visitor import post_order
from ..op.registry import get_op_def
from ..partition import partition_for
from ..testing import run_reference
from ..testing.random_graph import Data, Input, Recipe, Step, compact, save_reproducer, shrink, value_types
from ..testing.reference import node_values
from ..transform.infer_type import infer_type
from .compare import compare_build
from .error import worst_error
from .nodes import ModelNodes


def _hashable(value):
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, np.ndarray):
        return tuple(value.tolist())
    return value


def recipe_of(mod):
    """(Recipe, {tag: node}, {id(node): [value indices]}) of a module's main (type-checked here); every
    value is tagged with its position, and a node of a tuple type stands for several values."""
    mod = infer_type(mod)
    func = mod["main"]
    values: list = []
    index: dict[int, list[int]] = {}       # id(node) -> value indices (several for a tuple result)
    nodes: dict[int, object] = {}

    def add(value, node) -> int:
        tag = len(values)
        values.append(replace(value, tag=tag) if isinstance(value, (Input, Step)) else value)
        nodes[tag] = node
        return tag

    for p in func.params:
        index[id(p)] = [add(Input(p.name_hint, tuple(p.checked_type.shape), p.checked_type.dtype), p)]
    for node in post_order(func.body):
        if id(node) in index or isinstance(node, Var):
            continue
        if isinstance(node, Constant):
            index[id(node)] = [add(Data(tuple(node.data.shape), str(node.data.dtype), node.data.tobytes()), node)]
        elif isinstance(node, Call):
            if not hasattr(node.op, "name") or isinstance(node.op, Function):
                raise ByocError("bisect: the model calls a function; bisect the unpartitioned model")
            opdef = get_op_def(node.op.name)
            if opdef.tuple_input:
                args = tuple(i for f in node.args[0].fields for i in index[id(f)])
            else:
                args = tuple(index[id(a)][0] for a in node.args)
            attrs = tuple(sorted((k, _hashable(v)) for k, v in node.attrs.items()))
            n_out = len(node.checked_type.fields) if hasattr(node.checked_type, "fields") else 0
            if n_out:
                index[id(node)] = [add(Step(node.op.name, args, attrs, k), node) for k in range(n_out)]
            else:
                index[id(node)] = [add(Step(node.op.name, args, attrs), node)]
        elif isinstance(node, TupleGetItem):
            index[id(node)] = [index[id(node.tuple_value)][node.index]]
        elif isinstance(node, Tuple):
            index[id(node)] = [i for f in node.fields for i in index[id(f)]]
        else:
            raise ByocError(f"bisect: cannot turn a {type(node).__name__} of main into a recipe")
    outputs = tuple(index[id(func.body)])
    return Recipe(tuple(values), outputs), nodes, index


def restrict(recipe, outputs, keep_steps=None):
    """The recipe computing `outputs` (value indices); steps not in `keep_steps` (if given) become inputs."""
    types = value_types(recipe)
    values = list(recipe.values)
    if keep_steps is not None:
        for i, v in enumerate(values):
            if isinstance(v, Step) and i not in keep_steps:
                values[i] = Input("cut", tuple(types[i].shape), types[i].dtype, v.tag)
    return compact(replace(recipe, values=tuple(values), outputs=tuple(outputs)))


@dataclass
class BisectResult:
    recipe: object
    model_path: Path
    inputs_dir: Path
    tries: int
    log: list = field(default_factory=list)

    @property
    def op_count(self) -> int:
        return self.recipe.op_steps


class _Judge:
    """Builds and runs candidates like the original build; remembers every verdict."""

    def __init__(self, targets, options, tag_values, seed: int = 0):
        self.targets, self.options, self.tag_values, self.seed = targets, options, tag_values, seed
        self.verdicts: dict = {}
        self.log: list[str] = []
        self.problem = ""

    def inputs_of(self, recipe) -> dict:
        return {v.name: self.tag_values[v.tag] for v in recipe.values if isinstance(v, Input)}

    def fails(self, recipe) -> bool:
        if recipe in self.verdicts:
            return self.verdicts[recipe]
        self.problem = ""
        verdict = self._fails(recipe)
        self.verdicts[recipe] = verdict
        self.log.append(f"{recipe.op_steps} op(s): {'fails' if verdict else 'passes'}"
                        + (f" (not counted as the failure: {self.problem})" if self.problem else ""))
        return verdict

    def _fails(self, recipe) -> bool:
        if recipe.op_steps == 0:
            return False
        try:
            mod = recipe.to_module()
            part = partition_for(self.targets, mod) if self.targets else mod
            lib = build(part, **self.options)
            for inputs in (self.inputs_of(recipe), deterministic_inputs(mod, self.seed)):
                got = lib.run_runner(inputs)
                if not worst_error(list(zip(got, run_reference(mod, inputs)))).beyond:
                    return False
            return True
        except ByocError as exc:
            self.problem = str(exc).splitlines()[0][:200]
            return False            # another problem (a build error): not the failure being bisected


def bisect_failure(mod, targets, options: dict, inputs: dict, outdir, name: str = "repro",
                   max_tries: int = 60, report=None) -> BisectResult:
    """Shrink a model whose build fails the check to a small failing subgraph and write it to `outdir`."""
    recipe, tag_nodes, node_index = recipe_of(mod)
    _, env = node_values(mod, inputs)
    tag_values = {}
    for tag, node in tag_nodes.items():
        value = env.get(id(node))
        v = recipe.values[tag]
        if isinstance(value, tuple):
            value = value[v.field]
        if value is not None:
            tag_values[tag] = np.asarray(value)
    judge = _Judge(targets, options, tag_values)
    if report is None:
        part = partition_for(targets, mod) if targets else mod
        report = compare_build(build(part, **options), mod, inputs)
    if report.passed:
        raise ByocError("bisect: the model passes (every step and output within tolerance); nothing to bisect")
    judge.log.append(report.summary())

    nodes = ModelNodes.of(mod, inputs)
    tag_of = {name: node_index[id(node)][0] for name, node in nodes.by_name.items() if id(node) in node_index}
    starts = _starting_points(recipe, report, tag_of)
    start = None
    for label, candidate in starts:
        judge.log.append(f"start: {label}")
        if judge.fails(candidate):
            start = candidate
            break
    if start is None:
        if not judge.fails(recipe):
            raise ByocError("bisect: the whole model does not fail when rebuilt from its recipe; the failure "
                            "may depend on inputs the check does not feed (tried: " + "; ".join(judge.log[1:]) + ")")
        start = recipe
    small = shrink(start, judge.fails, max_tries=max_tries)
    outdir = Path(outdir)
    note = (f"byoc bisect: smallest failing subgraph found ({small.op_steps} op(s)); targets="
            f"{','.join(targets) or 'host'} toolchain={options.get('toolchain')} executor={options.get('executor')} "
            f"interface={options.get('interface')} opt={options.get('opt')}")
    path = save_reproducer(small, outdir, name, note)
    inputs_dir = outdir / f"{name}_inputs"
    inputs_dir.mkdir(parents=True, exist_ok=True)
    for old in inputs_dir.glob("*.npy"):
        old.unlink()
    for v in small.values:
        if isinstance(v, Input):
            np.save(inputs_dir / f"{v.name}.npy", tag_values[v.tag])
    return BisectResult(small, path, inputs_dir, len(judge.verdicts), judge.log)


def _between(recipe, output: int, stops: set) -> set:
    """Steps `output` depends on without going through `stops` (which become inputs)."""
    keep, stack = set(), [output]
    while stack:
        i = stack.pop()
        if i in keep or i in stops or not isinstance(recipe.values[i], Step):
            continue
        keep.add(i)
        stack.extend(recipe.values[i].args)
    return keep


def _starting_points(recipe, report, tag_of):
    """(label, candidate) to try first, smallest first: the diagnosed op fed by its inputs cut out, the
    first failing host op alone, everything up to the first failing step."""
    out = []
    d = report.diagnosis
    row = report.first_row()
    if d is not None and d.op_node in tag_of:
        culprit = tag_of[d.op_node]
        stops = {tag_of[n] for n in d.op_inputs if n in tag_of}
        out.append((f"{d.op} ({d.op_node}) with its inputs cut", restrict(recipe, [culprit],
                                                                         _between(recipe, culprit, stops))))
    if row is not None:
        names = [n.strip() for n in row.node.split(",") if n.strip() in tag_of]
        if names and row.where == "host":
            out.append((f"host op {row.what} ({', '.join(names)}) alone",
                        restrict(recipe, [tag_of[n] for n in names], {tag_of[n] for n in names})))
        if names:
            out.append((f"everything up to {', '.join(names)}", restrict(recipe, [tag_of[n] for n in names])))
    return out
