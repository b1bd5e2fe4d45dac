"""ccompiler's lowering: a region's body -> steps (one kernel call each) over abstract buffers.

A reshape is a view (no step that calls anything); a composite whose body is a fusable chain (fusions.FUSIONS)
is one fused step, an int8 chain is lowered by rules_qnn, any other composite is its body op by op.
The passes (passes.py) then place and name the buffers; render.py writes the text.
"""
from __future__ import annotations

from dataclasses import dataclass

from byoc_compiler.vendor import (ByocError, Call, Constant, Function, GlobalVar, Op, TensorType, Tuple,
                                  TupleGetItem, Var, c_type, flat_value, flatten_type, post_order, shape_text)

from . import rules_qnn
from .fusions import FUSIONS
from .rules import PASS_THROUGH, RULES, VIEWS


@dataclass(eq=False)
class Buffer:
    kind: str                    # "input" | "const" | "temp" | "output" | "scratch"
    nbytes: int
    index: int = 0               # inN / outN / cN number
    data: object = None          # the ndarray of a constant
    cname: str = ""
    first: int | None = None     # lifetime in steps (temps, scratch)
    last: int | None = None
    offset: int = 0              # bytes into the workspace (temps, scratch)
    merged: "Buffer | None" = None  # an in-place result lives in this (earlier) buffer instead
    note: str = ""               # what a constant is, when it is not a tensor of the model (packed weights)
    source: "Buffer | None" = None  # the constant a packed one was made from
    ctype: str = "float"         # C element type of a temp

    def root(self) -> "Buffer":
        buf = self
        while buf.merged is not None:
            buf = buf.merged
        return buf


@dataclass(eq=False)
class Value:
    type: TensorType
    raw: Buffer

    @property
    def buffer(self) -> Buffer:
        return self.raw.root()

    @property
    def ptr(self) -> str:
        return self.buffer.cname

    def label(self) -> str:
        return f"{self.buffer.cname} {shape_text(self.type.shape)}"


@dataclass(eq=False)
class Step:
    op: str                      # a RULES key, or a view op (no call)
    attrs: dict
    ins: list
    outs: list
    title: str                   # what the comment names: the op or composite
    activation: str | None = None
    scratch: Buffer | None = None

    @property
    def scratch_ptr(self) -> str:
        return self.scratch.cname if self.scratch is not None else "NULL"

    @property
    def is_call(self) -> bool:
        return self.op in RULES


DTYPES = ("float32", "int8", "uint8", "int32")     # what the kernel library computes on (int32: biases)


def tensor_types(ty, what: str) -> list[TensorType]:
    if ty is None:
        raise ByocError(f"{what} has no type; run transform.InferType() on the module before the codegen")
    types = flatten_type(ty)
    for t in types:
        if t.dtype not in DTYPES:
            raise ByocError(f"{what} has dtype {t.dtype}; the ccompiler kernel library takes {', '.join(DTYPES)}")
    return types


class Lowering:
    """Region body -> steps over buffers, in topological order."""

    def __init__(self, func: Function):
        self.func = func
        self.steps: list[Step] = []
        self.inputs: list[Buffer] = []
        self.input_names: list[str] = []
        self.input_types: list[TensorType] = []
        self.consts: dict[int, Buffer] = {}
        self.temps: list[Buffer] = []

    def run(self) -> list[Value]:
        values: dict[int, list[Value]] = {}
        for param in self.func.params:
            what = f"region parameter {param.name_hint!r}"
            for ty in tensor_types(param.checked_type or param.type_annotation, what):
                buf = Buffer("input", ty.nbytes, index=len(self.inputs))
                self.inputs.append(buf)
                self.input_names.append(param.name_hint)
                self.input_types.append(ty)
                values.setdefault(id(param), []).append(Value(ty, buf))
        return self.walk(self.func.body, values)

    def walk(self, root, values: dict[int, list[Value]]) -> list[Value]:
        for node in post_order(root):
            if id(node) in values or isinstance(node, Function):
                continue          # parameters bound by the caller; composite bodies are walked at their call
            if isinstance(node, Var):
                raise ByocError(f"variable {node.name_hint!r} is used in the region but is not its parameter")
            if isinstance(node, Constant):
                values[id(node)] = [self.constant(node)]
            elif isinstance(node, (Tuple, TupleGetItem)):
                values[id(node)] = flat_value(node, values)
            elif isinstance(node, Call) and isinstance(node.op, Op):
                ins = [v for a in node.args for v in values[id(a)]]
                out_types = tensor_types(node.checked_type, f"the result of {node.op.name}")
                values[id(node)] = self.op(node.op.name, dict(node.attrs), ins, out_types, node.op.name)
            elif isinstance(node, Call) and isinstance(node.op, Function):
                values[id(node)] = self.composite(node, [values[id(a)] for a in node.args])
            elif isinstance(node, (Call, GlobalVar)):
                raise ByocError("a region of ccompiler cannot call other functions; partition the model again")
            else:
                raise ByocError(f"unexpected {type(node).__name__} in a ccompiler region")
        return values[id(root)]

    def constant(self, node: Constant) -> Value:
        ty = node.tensor_type
        if ty.dtype not in DTYPES:
            raise ByocError(f"a constant of dtype {ty.dtype} reached a ccompiler region ({', '.join(DTYPES)} only)")
        buf = self.consts.get(id(node))
        if buf is None:
            buf = Buffer("const", ty.nbytes, index=len(self.consts), data=node.data)
            self.consts[id(node)] = buf
        return Value(ty, buf)

    def derived_constant(self, data, note: str) -> Value:
        """A constant the codegen computed (a packed weight, a folded bias), not a tensor of the model."""
        buf = Buffer("const", data.nbytes, index=len(self.consts), data=data, note=note)
        self.consts[id(buf)] = buf
        return Value(TensorType(tuple(data.shape), str(data.dtype)), buf)

    def temp(self, ty: TensorType) -> Value:
        buf = Buffer("temp", ty.nbytes, ctype=c_type(ty.dtype))
        self.temps.append(buf)
        return Value(ty, buf)

    def op(self, name: str, attrs: dict, ins: list[Value], out_types: list[TensorType], title: str,
           activation: str | None = None) -> list[Value]:
        if name in VIEWS:
            outs = [Value(t, ins[i].buffer) for t, i in zip(out_types, VIEWS[name])]
            self.steps.append(Step(name, attrs, ins, outs, title))
            return outs
        if name not in RULES:
            raise ByocError(f"the ccompiler kernel library has no function for {name}; "
                            "keep it on the host (remove it from targets/ccompiler/__init__.py)")
        through = PASS_THROUGH.get(name, {})
        outs = [Value(t, ins[through[k]].buffer) if k in through else self.temp(t) for k, t in enumerate(out_types)]
        step = Step(name, attrs, ins, [o for k, o in enumerate(outs) if k not in through], title, activation)
        nbytes = RULES[name].scratch(step)
        if nbytes:
            step.scratch = Buffer("scratch", int(nbytes))
        self.steps.append(step)
        return outs

    def composite(self, call: Call, args: list[list[Value]]) -> list[Value]:
        func = call.op
        name = str(func.attrs.get("Composite", ""))
        if name in rules_qnn.COMPOSITES:
            return rules_qnn.lower_composite(self, call, name, func, args)
        fused = match_fusion(name, func)
        if fused is not None:
            chain, data, weight, bias = fused
            by_param = {id(p): a for p, a in zip(func.params, args)}
            ins = [v for p in (data, weight, bias) for v in by_param[id(p)]]
            out_types = tensor_types(call.checked_type, f"the result of composite {name}")
            activation = FUSIONS[name].activation
            title = f"{name} [{' + '.join(c.op.name for c in chain)}]"
            return self.op(FUSIONS[name].op, dict(chain[0].attrs), ins, out_types, title, activation)
        # Anything else: the composite's body, op by op.
        values = {id(p): a for p, a in zip(func.params, args)}
        return self.walk(func.body, values)


def match_fusion(name: str, func: Function):
    """(chain of calls, data param, weight param, bias param) when the body is the fusion's chain."""
    fusion = FUSIONS.get(name)
    if fusion is None:
        return None
    calls = [n for n in post_order(func.body) if isinstance(n, Call)]
    if tuple(c.op.name if isinstance(c.op, Op) else "" for c in calls) != fusion.ops or calls[-1] is not func.body:
        return None
    if any(c.args[0] is not prev for prev, c in zip(calls, calls[1:])):
        return None
    producer, bias_add = calls[0], calls[1]
    params = {id(p) for p in func.params}
    data, weight, bias = producer.args[0], producer.args[1], bias_add.args[1]
    if not all(id(x) in params for x in (data, weight, bias)):
        return None
    out_ndim = producer.checked_type.ndim
    axis = int(bias_add.attrs["axis"])
    if out_ndim == 0 or axis % out_ndim != fusion.bias_axis(out_ndim) or bias.checked_type.ndim != 1:
        return None
    return calls, data, weight, bias
