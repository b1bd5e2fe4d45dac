"""A random graph as data: a `Recipe` is a list of values (inputs, constants, op steps naming earlier
values) and the indices of the outputs. Keeping it apart from the IR makes graphs easy to print, save
and shrink; `Recipe.to_module()` gives the IRModule.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field, replace

import numpy as np

from ...ir.expr import Constant, Function, Tuple as TupleExpr, TupleGetItem, Var
from ...ir.module import IRModule
from ...ir.types import TensorType
from ...op.registry import get_op_def, make_call
from ...transform.infer_type import infer_type


@dataclass(frozen=True)
class Input:
    name: str
    shape: tuple[int, ...]
    dtype: str
    tag: int = -1                  # the value it stands for in a recipe made from a model (debug.bisect)


@dataclass(frozen=True)
class Const:
    shape: tuple[int, ...]
    dtype: str
    low: float
    high: float
    seed: int


@dataclass(frozen=True)
class Data:
    """A constant with given values (a model's weights), kept as bytes so recipes stay hashable."""
    shape: tuple[int, ...]
    dtype: str
    raw: bytes = field(repr=False)

    def array(self) -> np.ndarray:
        return np.frombuffer(self.raw, dtype=np.dtype(self.dtype)).reshape(self.shape).copy()


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple[int, ...]          # indices of earlier values (a tuple-input op takes them as one Tuple)
    attrs: tuple = ()              # sorted (name, value) pairs, hashable and printable
    field: int | None = None       # which field of a tuple result is this value
    tag: int = -1                  # as Input.tag: cutting this step makes an Input with the same tag


Value = Input | Const | Data | Step


@dataclass(frozen=True)
class Recipe:
    values: tuple[Value, ...]
    outputs: tuple[int, ...]
    seed: int = 0

    def to_module(self) -> IRModule:
        exprs, params = _to_exprs(self.values)
        outs = [exprs[i] for i in self.outputs]
        body = outs[0] if len(outs) == 1 else TupleExpr(outs)
        return infer_type(IRModule({"main": Function(params, body)}))

    def to_text(self) -> str:
        return self.to_module().astext()

    def to_json(self) -> str:
        def encode(v):
            fields = {k: getattr(v, k) for k in v.__dataclass_fields__}
            if isinstance(v, Data):
                fields["raw"] = base64.b64encode(v.raw).decode()
            return {"kind": type(v).__name__, **fields}

        return json.dumps({"seed": self.seed, "outputs": list(self.outputs),
                           "values": [encode(v) for v in self.values]}, indent=1, default=list)

    @property
    def op_steps(self) -> int:
        return sum(isinstance(v, Step) for v in self.values)


def _const_array(c: Const) -> np.ndarray:
    rng = np.random.default_rng(c.seed)
    if c.dtype.startswith("int"):
        return rng.integers(int(c.low), int(c.high) + 1, size=c.shape).astype(c.dtype)
    return rng.uniform(c.low, c.high, size=c.shape).astype(c.dtype)


def _to_exprs(values) -> tuple[list, list[Var]]:
    exprs, params = [], []
    for v in values:
        if isinstance(v, Input):
            var = Var(v.name, TensorType(v.shape, v.dtype))
            params.append(var)
            exprs.append(var)
        elif isinstance(v, Const):
            exprs.append(Constant(_const_array(v)))
        elif isinstance(v, Data):
            exprs.append(Constant(v.array()))
        else:
            args = [exprs[i] for i in v.args]
            if get_op_def(v.op).tuple_input:
                args = [TupleExpr(args)]
            call = make_call(v.op, *args, **dict(v.attrs))
            exprs.append(call if v.field is None else TupleGetItem(call, v.field))
    return exprs, params


def compact(recipe: Recipe) -> Recipe:
    """Drop values no output depends on, renumbering the rest (inputs are renamed x0, x1, ...)."""
    live = set()
    stack = list(recipe.outputs)
    while stack:
        i = stack.pop()
        if i in live:
            continue
        live.add(i)
        v = recipe.values[i]
        if isinstance(v, Step):
            stack.extend(v.args)
    order = sorted(live)
    new_index = {old: new for new, old in enumerate(order)}
    values, inputs = [], 0
    for old in order:
        v = recipe.values[old]
        if isinstance(v, Input):
            v = replace(v, name=f"x{inputs}")
            inputs += 1
        elif isinstance(v, Step):
            v = replace(v, args=tuple(new_index[a] for a in v.args))
        values.append(v)
    if inputs == 0:                      # main needs a parameter: keep the first input-free graph runnable
        return recipe
    return Recipe(tuple(values), tuple(new_index[o] for o in recipe.outputs), recipe.seed)


def value_types(recipe: Recipe) -> list:
    """The type of every value of `recipe`, in order."""
    exprs, params = _to_exprs(recipe.values)
    infer_type(IRModule({"main": Function(params, TupleExpr(exprs))}))
    return [e.checked_type for e in exprs]
