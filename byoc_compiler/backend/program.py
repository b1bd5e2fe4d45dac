"""Lowering `main` of a (partitioned) module to a flat program: tensors and steps.

Both executors are printed from this one structure: the graph executor writes it
as graph.json, AOT as C. A value of the IR is a list of tensors (a tuple is several);
every step reads and writes whole tensors:

    inputs  -- the parameters of main, in order
    consts  -- the Constants main uses (named p0, p1, ... like TVM's params)
    steps   -- one per call, in a topological order; a host op call or an external function
    outputs -- the flattened result of main (may repeat a tensor or name an input/constant)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ctext import unique_identifiers
from ..errors import ByocError
from ..ir.analysis import flat_value
from ..ir.expr import Call, Constant, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TensorType, flatten_type
from ..ir.visitor import ExprMutator, post_order
from .host_fusion import is_host_composite


@dataclass
class Tensor:
    id: int
    type: TensorType
    kind: str                      # "input" | "const" | "temp"
    name: str                      # input name, "p<k>" for constants, "" for temps
    data: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return self.type.nbytes


@dataclass
class Step:
    symbol: str                    # C function called (host kernel name or the region's global_symbol)
    kind: str                      # "host" | "region"
    inputs: list[int]
    outputs: list[int]
    call: Call
    target: str | None = None      # Compiler attr of a region
    op_name: str | None = None     # primitive op of a host step


@dataclass
class Program:
    tensors: list[Tensor] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    consts: list[int] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    regions: dict = field(default_factory=dict)       # symbol -> (global name, Function)

    def new_tensor(self, ty: TensorType, kind: str, name: str = "", data=None) -> int:
        self.tensors.append(Tensor(len(self.tensors), ty, kind, name, data))
        return len(self.tensors) - 1

    def lifetimes(self) -> dict[int, tuple[int, int]]:
        """Temp tensor id -> [step writing it, last step reading it]; model outputs live to the end."""
        end = len(self.steps)
        life: dict[int, list[int]] = {}
        for i, step in enumerate(self.steps):
            for t in step.outputs:
                life[t] = [i, i]
            for t in step.inputs:
                if t in life:
                    life[t][1] = max(life[t][1], i)
        for t in self.outputs:
            if t in life:
                life[t][1] = end
        return {t: (a, b) for t, (a, b) in life.items()}


class _InlineComposites(ExprMutator):
    """Replaces calls of local Functions (composites: the host has none) by their bodies."""

    into_functions = False

    def rewrite_call(self, original: Call, rebuilt: Call):
        if not isinstance(rebuilt.op, Function):
            return rebuilt
        func = rebuilt.op
        body = _InlineComposites()
        for param, arg in zip(func.params, rebuilt.args):
            body.memo[id(param)] = arg
        return body.visit(func.body)


def inline_composites(mod: IRModule) -> tuple[IRModule, bool]:
    """main with composite calls inlined; True if anything changed (types must then be inferred again)."""
    main = mod["main"]
    if not any(isinstance(n, Call) and isinstance(n.op, Function) for n in post_order(main.body)):
        return mod, False
    body = _InlineComposites().visit(main.body)
    return mod.with_function("main", Function(main.params, body, main.ret_type, main.attrs, main.span)), True


def lower_main(mod: IRModule, mod_name: str) -> Program:
    """The Program of a type-checked module whose main has no composite calls left: inputs, then one
    tensor per value and one step per call in post order, then the host kernels' names."""
    lowering = _Lowering(mod)
    main = mod["main"]
    lowering.inputs(main.params)
    for node in post_order(main.body):
        lowering.visit(node)
    prog = lowering.prog
    prog.outputs = list(lowering.values[id(main.body)])
    _name_host_kernels(prog, set(lowering.region_symbols.values()), mod_name)
    return prog


class _Lowering:
    """main's values -> tensors, its calls -> steps (one method per kind of node)."""

    def __init__(self, mod: IRModule):
        self.mod, self.prog = mod, Program()
        self.values: dict[int, list[int]] = {}          # id(node) -> its tensors (a tuple has several)
        self.region_symbols = {name: str(func.attrs.get("global_symbol", name))   # global name -> C symbol
                               for name, func in mod.items() if name != "main" and func.attrs.get("Compiler")}

    def inputs(self, params) -> None:
        for param, name in zip(params, _unique_names([p.name_hint for p in params])):
            ty = param.checked_type or param.type_annotation
            if not isinstance(ty, TensorType):
                raise ByocError(f"build: input {param.name_hint!r} of main has type {ty}; inputs must be tensors")
            self.values[id(param)] = [self.prog.new_tensor(ty, "input", name)]
            self.prog.inputs.append(self.values[id(param)][0])

    def visit(self, node) -> None:
        if isinstance(node, Var):
            if id(node) not in self.values:
                raise ByocError(f"build: variable {node.name_hint!r} is used in main but is not one of its parameters")
        elif isinstance(node, Constant):
            name = f"p{len(self.prog.consts)}"
            tid = self.prog.new_tensor(TensorType(node.data.shape, str(node.data.dtype)), "const", name, node.data)
            self.prog.consts.append(tid)
            self.values[id(node)] = [tid]
        elif isinstance(node, (Tuple, TupleGetItem)):
            self.values[id(node)] = flat_value(node, self.values)
        elif isinstance(node, Call):
            self.call(node)
        elif isinstance(node, Function) and not is_host_composite(node):   # a fused chain: its call is the step
            raise ByocError("build: main contains a nested function that is not a composite call; "
                            "only ops, tuples and calls of external functions can be built")
        elif isinstance(node, GlobalVar):
            raise ByocError(f"build: @{node.name_hint} is used as a value in main; only calls of it can be built")

    def call(self, node: Call) -> None:
        ins = [t for a in node.args for t in self.values[id(a)]]
        outs = [self.prog.new_tensor(ty, "temp") for ty in flatten_type(node.checked_type)]
        self.values[id(node)] = outs
        if isinstance(node.op, Op):
            self.prog.steps.append(Step("", "host", ins, outs, node, op_name=node.op.name))
        elif is_host_composite(node.op):     # a chain host_fusion.py made one step
            self.prog.steps.append(Step("", "host", ins, outs, node, op_name=str(node.op.attrs["Composite"])))
        elif isinstance(node.op, GlobalVar):
            self.region_call(node, ins, outs)
        else:
            raise ByocError(f"build: cannot build a call of {type(node.op).__name__} in main")

    def region_call(self, node: Call, ins: list[int], outs: list[int]) -> None:
        gname = node.op.name_hint
        if gname not in self.region_symbols:
            raise ByocError(f"build: main calls @{gname}, which is not an external function (no Compiler "
                            "attribute); only calls of ops and of partitioned regions can be built")
        func, symbol = self.mod[gname], self.region_symbols[gname]
        known = self.prog.regions.setdefault(symbol, (gname, func))
        if known[0] != gname:
            raise ByocError(f"build: external functions @{known[0]} and @{gname} share the global_symbol "
                            f"{symbol!r}; every region needs its own symbol")
        self.prog.steps.append(Step(symbol, "region", ins, outs, node, target=str(func.attrs["Compiler"])))


def _name_host_kernels(prog: Program, taken: set[str], mod_name: str) -> None:
    """One kernel per distinct (op, attrs, tensor types): repeated layers share their host kernel, so a
    deep chain of identical ops does not make a source file as long as the chain. Names are
    tvmgen_<mod>_fused_<op>[_n], distinct from the regions' symbols."""
    base = f"tvmgen_{mod_name}_fused"
    counters: dict[str, int] = {}
    by_key: dict[tuple, str] = {}
    for step in prog.steps:
        if step.kind != "host":
            continue
        key = (step.op_name, _kernel_attrs(step.call), tuple(prog.tensors[t].type for t in step.inputs),
               tuple(prog.tensors[t].type for t in step.outputs))
        if key not in by_key:
            op = step.op_name.replace(".", "_")
            n = counters.get(op, 0)
            counters[op] = n + 1
            wanted = f"{base}_{op}" + (f"_{n}" if n else "")
            by_key[key] = unique_identifiers([wanted], taken)[0]
            taken.add(by_key[key])
        step.symbol = by_key[key]


def _kernel_attrs(call: Call):
    """What besides the types decides a host step's kernel: the op's attrs, or a fused chain's (its ops and
    their attrs in order)."""
    if isinstance(call.op, Op):
        return call.attrs
    return tuple((n.op.name, n.attrs) for n in post_order(call.op.body) if isinstance(n, Call))


def _unique_names(names: list[str]) -> list[str]:
    used: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 0
        while candidate in used:
            n += 1
            candidate = f"{name}_{n}"
        used.add(candidate)
        out.append(candidate)
    return out
