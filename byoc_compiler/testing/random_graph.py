"""Random well-typed graphs over the whole op set, from a seed, and a shrinker for failing ones.

A graph is a `Recipe`: a list of values (inputs, constants, op steps naming earlier
values) and the indices of the outputs. Keeping the recipe apart from the IR makes
graphs easy to print, save and shrink; `Recipe.to_module()` gives the IRModule.

`random_recipe(seed)` grows a graph one op at a time: an op "maker" picks an
operand among the values built so far and returns attributes that fit its type
(shapes that broadcast, odd sizes, 1-element and large-prime dims). Every step's
type comes from the op's own type inference, so a recipe is well-typed by
construction. The generator also tracks a bound on each value's magnitude and
refuses steps that could overflow int32 or leave float32's comfortable range;
log, sqrt and divide get positive operands through explicit abs/add guards.

`shrink(recipe, still_fails)` reduces a failing recipe (fewer outputs, steps bypassed
or turned into inputs) while `still_fails` holds, and `save_reproducer` writes it as
a text-IR model plus its recipe.
"""
from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from ..ir.expr import Constant, Function, Tuple as TupleExpr, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TensorType, TupleType
from ..op.registry import get_op_def, make_call
from ..text import parse
from ..transform.infer_type import infer_type

# Dimension sizes drawn for new tensors: 1-element, odd, small primes; large primes for short ranks.
SMALL_DIMS = (1, 2, 3, 4, 5, 7, 8, 13)
PRIME_DIMS = (31, 61, 97)
MAX_ELEMENTS = 4096
FLOAT_BOUND = 1e4        # no float value grows past this (exp is guarded by clip)
INT_BOUND = 1 << 20      # int32 values stay far from overflow


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

    def reductions(self) -> int:
        """Ops that sum many terms (their rounding errors compound along a chain)."""
        return sum(isinstance(v, Step) and v.op in _REDUCING for v in self.values)


_REDUCING = {"nn.dense", "nn.matmul", "nn.conv2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.softmax",
             "nn.lrn", "nn.batch_norm", "sum", "mean", "prod", "nn.batch_matmul", "nn.layer_norm", "image.resize"}


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


# --- the generator -------------------------------------------------------------------------------------

@dataclass
class _Slot:
    ty: TensorType
    bound: float


@dataclass
class _Builder:
    rng: np.random.Generator
    values: list = field(default_factory=list)
    slots: list = field(default_factory=list)
    const_seed: int = 0

    def shape(self, i: int) -> tuple[int, ...]:
        return tuple(self.slots[i].ty.shape)

    def dtype(self, i: int) -> str:
        return self.slots[i].ty.dtype

    def bound(self, i: int) -> float:
        return self.slots[i].bound

    def input(self, shape, dtype) -> int:
        name = f"x{sum(isinstance(v, Input) for v in self.values)}"
        return self._push(Input(name, tuple(shape), dtype), TensorType(tuple(shape), dtype),
                          1.0 if dtype == "float32" else 8.0)

    def const(self, shape, dtype, low=-1.0, high=1.0) -> int:
        self.const_seed += 1
        return self._push(Const(tuple(shape), dtype, low, high, self.const_seed), TensorType(tuple(shape), dtype),
                          max(abs(low), abs(high)))

    def step(self, op: str, args, bound: float, field_: int | None = None, **attrs) -> int | None:
        """Append `op(args, **attrs)` if it type-checks and stays in range; its index, else None."""
        opdef = get_op_def(op)
        try:
            normalized = opdef.normalize_attrs(attrs)
            arg_types = [self.slots[i].ty for i in args]
            if opdef.tuple_input:
                arg_types = [TupleType(arg_types)]
            ty = opdef.infer(arg_types, normalized)
        except (TypeError, ValueError):
            return None
        if isinstance(ty, TupleType):
            ty = ty.fields[field_ or 0]
            field_ = field_ or 0
        if not isinstance(ty, TensorType) or 0 in ty.shape or math.prod(ty.shape) > MAX_ELEMENTS:
            return None
        limit = FLOAT_BOUND if ty.dtype == "float32" else INT_BOUND
        if not bound <= limit:
            return None
        return self._push(Step(op, tuple(args), tuple(sorted(attrs.items())), field_), ty, bound)

    def _push(self, value, ty, bound) -> int:
        self.values.append(value)
        self.slots.append(_Slot(ty, float(bound)))
        return len(self.values) - 1

    def pick(self, dtype: str | None = None, rank: int | None = None, min_rank: int = 0) -> int | None:
        """A random earlier value (recent ones more likely) of this dtype/rank."""
        candidates = [i for i, s in enumerate(self.slots)
                      if (dtype is None or s.ty.dtype == dtype) and (rank is None or len(s.ty.shape) == rank)
                      and len(s.ty.shape) >= min_rank and not isinstance(self.values[i], Const)]
        if not candidates:
            return None
        weights = np.arange(1, len(candidates) + 1, dtype=float) ** 2
        return int(self.rng.choice(candidates, p=weights / weights.sum()))

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]


def _broadcast_partner(b: _Builder, x: int) -> tuple[int, ...]:
    """A shape that broadcasts with x's: some dims set to 1, maybe fewer leading dims, maybe a 1 in front."""
    shape = list(b.shape(x))
    out = [1 if b.rng.random() < 0.4 else d for d in shape]
    if out and b.rng.random() < 0.3:
        out = out[int(b.rng.integers(len(out))):]
    if len(out) < 4 and b.rng.random() < 0.15:
        out = [1] + out
    return tuple(out)


def _binary(op: str):
    def make(b: _Builder, x: int):
        dt = b.dtype(x)
        other = b.pick(dt)
        if other is None or b.rng.random() < 0.5:
            other = b.const(_broadcast_partner(b, x), dt, *((-1.0, 1.0) if dt == "float32" else (0, 7)))
        lhs, rhs = (x, other) if b.rng.random() < 0.7 else (other, x)
        bx, bo = b.bound(lhs), b.bound(rhs)
        if op == "divide":          # a positive divisor, at least 1: abs(rhs) + 1
            one = b.const((1,), dt, 1, 1)
            rhs = b.step("add", [b.step("abs", [rhs], bo), one], bo + 1)
            if rhs is None:
                return None
            return b.step("divide", [lhs, rhs], bx)
        bound = {"add": bx + bo, "subtract": bx + bo, "multiply": bx * bo}.get(op, max(bx, bo))
        return b.step(op, [lhs, rhs], bound)
    return make


# How a unary op changes a bound on its operand's magnitude (the identity when not listed).
_UNARY_BOUNDS = {"exp": math.exp, "log": lambda v: math.log(v + 1) + 1, "sqrt": math.sqrt,
                 "tanh": lambda v: 1.0, "sigmoid": lambda v: 1.0}


def _unary(op: str, float_only: bool = False, guard: str | None = None):
    def make(b: _Builder, x: int):
        dt = b.dtype(x)
        if float_only and dt != "float32":
            return None
        bx = b.bound(x)
        if guard == "positive":     # log/sqrt of abs(x) + 1
            one = b.const((1,), dt, 1.0, 1.0)
            x = b.step("add", [b.step("abs", [x], bx), one], bx + 1)
            bx += 1
        elif guard == "clip":       # exp(clip(x, -4, 4))
            x = b.step("clip", [x], min(bx, 4.0), a_min=-4.0, a_max=4.0)
            bx = min(bx, 4.0)
        if x is None:
            return None
        bound = _UNARY_BOUNDS.get(op, lambda v: v)(bx)
        return b.step(op, [x], bound)
    return make


def _clip(b, x):
    lo = float(b.choice((-1.0, -0.5, 0.0)))
    hi = float(b.choice((0.25, 0.5, 2.0)))
    return b.step("clip", [x], max(abs(lo), hi), a_min=lo, a_max=hi)


def _leaky_relu(b, x):
    return None if b.dtype(x) != "float32" else b.step("nn.leaky_relu", [x], b.bound(x), alpha=float(b.choice((0.01, 0.2, 0.5))))


def _dense(b, x):
    if b.dtype(x) != "float32" or not b.shape(x):
        return None
    k = b.shape(x)[-1]
    units = b.choice(SMALL_DIMS + (31,))
    w = b.const((units, k), "float32", -1 / math.sqrt(k), 1 / math.sqrt(k))
    return b.step("nn.dense", [x, w], b.bound(x) * math.sqrt(k), units=units if b.rng.random() < 0.5 else None)


def _matmul(b, x):
    if b.dtype(x) != "float32" or len(b.shape(x)) != 2:
        return None
    ta, tb = bool(b.rng.random() < 0.3), bool(b.rng.random() < 0.5)
    m, k = b.shape(x)[::-1] if ta else b.shape(x)
    n = b.choice(SMALL_DIMS)
    w = b.const((n, k) if tb else (k, n), "float32", -1 / math.sqrt(k), 1 / math.sqrt(k))
    return b.step("nn.matmul", [x, w], b.bound(x) * math.sqrt(k), transpose_a=ta, transpose_b=tb)


def _bias_add(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or not shape:
        return None
    axis = int(b.rng.integers(-len(shape), len(shape)))
    bias = b.const((shape[axis],), "float32")
    return b.step("nn.bias_add", [x, bias], b.bound(x) + 1, axis=axis)


def _nchw(b: _Builder, x: int) -> int | None:
    """x as a 4-D float tensor (reshaped when it has another rank)."""
    if b.dtype(x) != "float32":
        return None
    shape = b.shape(x)
    if len(shape) == 4:
        return x
    n = math.prod(shape)
    for c in (3, 2, 1):
        if n % c == 0:
            rest = n // c
            for h in range(int(math.isqrt(rest)), 0, -1):
                if rest % h == 0:
                    return b.step("reshape", [x], b.bound(x), newshape=(1, c, h, rest // h))
    return None


def _conv2d(b, x):
    x = _nchw(b, x)
    if x is None:
        return None
    _, c, h, w = b.shape(x)
    kh, kw = b.choice((1, 2, 3)), b.choice((1, 3))
    groups = b.choice((1, 1, c)) if c > 1 else 1
    out_c = c * b.choice((1, 2)) if groups == c else b.choice((1, 2, 3, 5))
    stride = (b.choice((1, 1, 2)), b.choice((1, 2)))
    dilation = (b.choice((1, 1, 2)), 1)
    pad = tuple(int(v) for v in b.rng.integers(0, 2, size=4))
    fan_in = (c // groups) * kh * kw
    wt = b.const((out_c, c // groups, kh, kw), "float32", -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
    return b.step("nn.conv2d", [x, wt], b.bound(x) * math.sqrt(fan_in), strides=stride, padding=pad,
                  dilation=dilation, groups=groups)


def _window_attrs(b, average: bool) -> dict:
    size = (b.choice((1, 2, 3)), b.choice((1, 2, 3)))
    attrs = dict(pool_size=size, strides=(b.choice((1, 2)), b.choice((1, 2))),
                 padding=tuple(int(v) for v in b.rng.integers(0, 2, size=4)),
                 ceil_mode=bool(b.rng.random() < 0.3))
    if any(p >= s for p, s in zip(attrs["padding"], size + size)):
        attrs["padding"] = (0, 0, 0, 0)   # a window of padding only has no defined max/average
    if attrs["ceil_mode"]:
        attrs["padding"] = (0, 0, 0, 0)
    if average:
        attrs["count_include_pad"] = bool(b.rng.random() < 0.5)
    return attrs


def _pool(op):
    def make(b, x):
        x = _nchw(b, x)
        if x is None:
            return None
        return b.step(op, [x], b.bound(x), **_window_attrs(b, op == "nn.avg_pool2d"))
    return make


def _global_pool(b, x):
    x = _nchw(b, x)
    return None if x is None else b.step("nn.global_avg_pool2d", [x], b.bound(x))


def _batch_norm(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or len(shape) < 2:
        return None
    axis = int(b.rng.integers(1, len(shape)))
    c = shape[axis]
    args = [x, b.const((c,), "float32", 0.5, 1.5), b.const((c,), "float32", -0.1, 0.1),
            b.const((c,), "float32", -0.1, 0.1), b.const((c,), "float32", 0.5, 1.5)]
    return b.step("nn.batch_norm", args, b.bound(x) * 2 + 1, 0, axis=axis)


def _softmax(b, x):
    if b.dtype(x) != "float32" or not b.shape(x):
        return None
    return b.step("nn.softmax", [x], 1.0, axis=int(b.rng.integers(-len(b.shape(x)), len(b.shape(x)))))


def _lrn(b, x):
    x = _nchw(b, x)
    if x is None:
        return None
    return b.step("nn.lrn", [x], b.bound(x) * 2, size=b.choice((1, 3, 5)), axis=1,
                  alpha=float(b.choice((1e-4, 0.1))))


def _pad(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    mode = b.choice(("constant", "reflect", "edge"))
    widths = []
    for d in shape:
        hi = d - 1 if mode == "reflect" else 2
        widths.append((int(b.rng.integers(0, min(hi, 2) + 1)), int(b.rng.integers(0, min(hi, 2) + 1))))
    value = float(b.choice((0.0, 1.5))) if b.dtype(x) == "float32" else 0.0
    return b.step("nn.pad", [x], max(b.bound(x), abs(value)), pad_width=tuple(widths), pad_value=value,
                  pad_mode=mode)


def _reshape(b, x):
    shape = b.shape(x)
    n = math.prod(shape)
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    first = b.choice(divisors)
    form = b.choice(("flat", "two", "zero"))
    if form == "flat":
        newshape = (-1,)
    elif form == "two" or not shape:
        newshape = (first, -1)
    else:
        newshape = (0, -1)
    return b.step("reshape", [x], b.bound(x), newshape=newshape)


def _transpose(b, x):
    rank = len(b.shape(x))
    if rank < 2:
        return None
    axes = None if b.rng.random() < 0.3 else tuple(int(a) for a in b.rng.permutation(rank))
    return b.step("transpose", [x], b.bound(x), axes=axes)


def _concatenate(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    axis = int(b.rng.integers(-len(shape), len(shape)))
    other = list(shape)
    other[axis] = b.choice((1, 2, 3))
    dt = b.dtype(x)
    c = b.const(tuple(other), dt, *((-1.0, 1.0) if dt == "float32" else (0, 7)))
    parts = [x, c, x] if b.rng.random() < 0.3 else [c, x]
    return b.step("concatenate", parts, max(b.bound(x), b.bound(c)), axis=axis)


def _squeeze(b, x):
    shape = b.shape(x)
    ones = [i for i, d in enumerate(shape) if d == 1]
    if not ones:
        return None
    axis = None if b.rng.random() < 0.4 else (b.choice(ones),)
    return b.step("squeeze", [x], b.bound(x), axis=axis)


def _expand_dims(b, x):
    rank = len(b.shape(x))
    if rank >= 4:
        return None
    return b.step("expand_dims", [x], b.bound(x), axis=int(b.rng.integers(-rank - 1, rank + 1)), num_newaxis=1)


def _batch_flatten(b, x):
    return None if len(b.shape(x)) < 2 else b.step("nn.batch_flatten", [x], b.bound(x))


def _split(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    axis = int(b.rng.integers(len(shape)))
    d = shape[axis]
    sections = [s for s in (2, 3) if d % s == 0]
    if sections and b.rng.random() < 0.5:
        spec, count = b.choice(sections), None
        count = spec
    else:
        cut = sorted({int(v) for v in b.rng.integers(1, d + 1, size=2)}) if d > 1 else [1]
        spec, count = tuple(cut), len(cut) + 1
    field_ = int(b.rng.integers(count))
    return b.step("split", [x], b.bound(x), field_, indices_or_sections=spec, axis=axis)


def _take(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    mode = b.choice(("clip", "wrap"))
    axis = None if b.rng.random() < 0.3 else int(b.rng.integers(len(shape)))
    n = math.prod(shape) if axis is None else shape[axis]
    # Out-of-range and negative indices on purpose: that is what the mode is for.
    idx = b.const((b.choice((1, 3, 5)),), "int32", -n - 2, n + 2)
    return b.step("take", [x, idx], b.bound(x), axis=axis, mode=mode)


def _cast(b, x):
    if b.dtype(x) == "float32":
        if b.bound(x) > INT_BOUND:
            return None
        return b.step("cast", [x], b.bound(x), dtype="int32")
    return b.step("cast", [x], b.bound(x), dtype="float32")


def _dropout(b, x):
    return b.step("nn.dropout", [x], b.bound(x), rate=0.5)


def _compare(op):
    def make(b, x):
        if b.dtype(x) != "float32":
            return None
        other = b.const(_broadcast_partner(b, x), "float32")
        cond = b.step(op, [x, other], 1.0)
        if cond is None:
            return None
        return b.step("where", [cond, x, other], max(b.bound(x), 1.0))
    return make


def _logical(op):
    def make(b, x):
        if b.dtype(x) != "float32":
            return None
        zero = b.const((1,), "float32", 0.0, 0.0)
        lhs = b.step("greater", [x, zero], 1.0)
        if op == "logical_not":
            cond = b.step(op, [lhs], 1.0) if lhs is not None else None
        else:
            rhs = b.step("less", [x, b.const(_broadcast_partner(b, x), "float32")], 1.0)
            cond = b.step(op, [lhs, rhs], 1.0) if lhs is not None and rhs is not None else None
        return None if cond is None else b.step("where", [cond, x, zero], b.bound(x))
    return make


def _reduce(op):
    def make(b, x):
        shape = b.shape(x)
        if not shape or (op in ("mean", "prod") and b.dtype(x) != "float32"):
            return None
        axes = tuple(sorted({int(a) for a in b.rng.integers(0, len(shape), size=int(b.rng.integers(1, 3)))}))
        axis = None if b.rng.random() < 0.2 else axes
        count = math.prod(shape if axis is None else [shape[a] for a in axes])
        if op == "prod" and count > 8:      # checked first: bound ** count overflows a float for large counts
            return None
        bound = b.bound(x) * count if op == "sum" else b.bound(x) ** count if op == "prod" else b.bound(x)
        return b.step(op, [x], bound, axis=axis, keepdims=bool(b.rng.random() < 0.5))
    return make


def _arg(op):
    def make(b, x):
        shape = b.shape(x)
        if not shape:
            return None
        axis = int(b.rng.integers(-len(shape), len(shape)))
        index = b.step(op, [x], float(shape[axis]), axis=axis, keepdims=bool(b.rng.random() < 0.5),
                       select_last_index=bool(b.rng.random() < 0.5))
        return None if index is None else b.step("cast", [index], float(shape[axis]), dtype="float32")
    return make


def _float_unary(op, **attrs):
    def make(b, x):
        if b.dtype(x) != "float32":
            return None
        bound = {"erf": 1.0, "nn.hard_sigmoid": 1.0}.get(op, b.bound(x))
        return b.step(op, [x], bound, **attrs)
    return make


def _power(b, x):
    if b.dtype(x) != "float32":
        return None
    bx = b.bound(x)
    one = b.const((1,), "float32", 1.0, 1.0)
    base = b.step("add", [b.step("abs", [x], bx), one], bx + 1)
    exponent = b.const(_broadcast_partner(b, x), "float32", -1.0, 2.0)
    return None if base is None else b.step("power", [base, exponent], (bx + 1) ** 2)


def _strided_slice(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    begin, end, strides = [], [], []
    for d in shape:
        step = int(b.choice((1, 1, 2, -1)))
        start = int(b.rng.integers(-d, d))
        begin.append(start)
        end.append(int(b.choice((d + 5, -d - 5))) if step < 0 else d + 5)
        strides.append(step)
    return b.step("strided_slice", [x], b.bound(x), begin=tuple(begin), end=tuple(end), strides=tuple(strides))


def _tile(b, x):
    shape = b.shape(x)
    reps = tuple(int(b.choice((1, 1, 2, 3))) for _ in shape)
    return b.step("tile", [x], b.bound(x), reps=reps)


def _broadcast_to(b, x):
    shape = b.shape(x)
    if len(shape) >= 4:
        return None
    target = (int(b.choice((2, 3))),) + tuple(d if d != 1 else int(b.choice((1, 2, 4))) for d in shape)
    return b.step("broadcast_to", [x], b.bound(x), shape=target)


def _batch_matmul(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or len(shape) < 3:
        return None
    k, n = shape[-1], b.choice(SMALL_DIMS)
    tb = bool(b.rng.random() < 0.5)
    w = b.const(shape[:-2][-1:] + ((n, k) if tb else (k, n)), "float32", -1 / math.sqrt(k), 1 / math.sqrt(k))
    return b.step("nn.batch_matmul", [x, w], b.bound(x) * math.sqrt(k), transpose_b=tb)


def _layer_norm(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or not shape:
        return None
    axis = int(b.rng.integers(-len(shape), len(shape)))
    normalized = shape[axis % len(shape):]
    gamma, beta = b.const(normalized, "float32"), b.const(normalized[-1:], "float32")
    size = math.prod(normalized)
    return b.step("nn.layer_norm", [x, gamma, beta], math.sqrt(size) + 1, axis=axis,
                  epsilon=float(b.choice((1e-5, 1e-3))))


def _resize(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or not shape:
        return None
    method = b.choice(("nearest", "linear", "cubic"))
    scales = tuple(float(b.choice((1.0, 0.5, 2.0, 1.5))) if i >= len(shape) - 2 else 1.0 for i in range(len(shape)))
    size = tuple(max(1, int(d * s)) for d, s in zip(shape, scales))
    mode = b.choice(("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"))
    return b.step("image.resize", [x], b.bound(x) * (2.0 if method == "cubic" else 1.0), size=size,
                  scales=tuple(n / d for n, d in zip(size, shape)), method=method,
                  coordinate_transformation_mode=mode)


# ---- quantized ops: int8 values come from qnn.quantize of a float value --------------------------------

def _scale_for(b, x) -> float:
    """A quantization scale mapping x's bound to about 100 steps (a power-of-two fraction keeps it exact)."""
    return float(np.float32(max(b.bound(x), 1e-3) / 100.0))


def _quantize(b, x):
    if b.dtype(x) != "float32":
        return None
    dtype = b.choice(("int8", "uint8"))
    zp = int(b.rng.integers(-10, 11)) + (128 if dtype == "uint8" else 0)
    return b.step("qnn.quantize", [x], 255.0, scale=[_scale_for(b, x)], zero_point=[zp], out_dtype=dtype)


def _q8(b, x) -> int | None:
    """x as an int8/uint8 value: itself, or quantized."""
    return x if b.dtype(x) in ("int8", "uint8") else _quantize(b, x)


def _dequantize(b, x):
    x = _q8(b, x)
    if x is None:
        return None
    return b.step("qnn.dequantize", [x], 256 * 0.05, scale=[0.05], zero_point=[int(b.rng.integers(-3, 4))])


def _requantize(b, x):
    if b.dtype(x) not in ("int8", "uint8", "int32"):
        x = _q8(b, x)
        if x is None:
            return None
    return b.step("qnn.requantize", [x], 255.0, input_scale=[0.02], output_scale=[b.choice((0.05, 0.3, 7.0))],
                  output_zero_point=[int(b.rng.integers(-5, 6))], out_dtype="int8")


def _q8_nchw(b, x) -> int | None:
    """x as a 4-D int8/uint8 value: itself, or a float value made 4-D and quantized."""
    if b.dtype(x) in ("int8", "uint8"):
        return x if len(b.shape(x)) == 4 else None
    x = _nchw(b, x)
    return None if x is None else _quantize(b, x)


def _qconv2d(b, x):
    x = _q8_nchw(b, x)
    if x is None:
        return None
    _, c, h, w = b.shape(x)
    kh, kw = b.choice((1, 3)), b.choice((1, 2))
    groups = b.choice((1, c))
    out_c = c if groups == c else b.choice((1, 2, 5))
    wt = b.const((out_c, c // groups, kh, kw), b.dtype(x), 0 if b.dtype(x) == "uint8" else -127, 127)
    zp = 128 if b.dtype(x) == "uint8" else 0
    return b.step("qnn.conv2d", [x, wt], 255.0 * 255.0 * (c // groups) * kh * kw, padding=int(b.rng.integers(0, 2)),
                  groups=groups, input_zero_point=zp, kernel_zero_point=[zp])


def _qdense(b, x):
    x = _q8(b, x)
    if x is None or not b.shape(x):
        return None
    k = b.shape(x)[-1]
    wt = b.const((b.choice((1, 3, 7)), k), b.dtype(x), 0 if b.dtype(x) == "uint8" else -127, 127)
    return b.step("qnn.dense", [x, wt], 255.0 * 255.0 * k, input_zero_point=int(b.rng.integers(-3, 4)),
                  kernel_zero_point=[int(b.rng.integers(0, 3))])


def _qmatmul(b, x):
    x = _q8(b, x)
    if x is not None and b.shape(x) and len(b.shape(x)) != 2:   # as a matrix: (rows, last dim)
        x = b.step("reshape", [x], b.bound(x), newshape=(-1, b.shape(x)[-1]))
    if x is None or len(b.shape(x)) != 2:
        return None
    k = b.shape(x)[1]
    wt = b.const((k, b.choice((1, 4))), b.dtype(x), 0 if b.dtype(x) == "uint8" else -127, 127)
    return b.step("qnn.matmul", [x, wt], 255.0 * 255.0 * k, a_zero_point=int(b.rng.integers(-3, 4)))


def _qbinary(op):
    def make(b, x):
        x = _q8(b, x)
        if x is None:
            return None
        lo, hi = (0, 255) if b.dtype(x) == "uint8" else (-128, 127)
        other = b.const(_broadcast_partner(b, x), b.dtype(x), lo, hi)
        zp = 128 if b.dtype(x) == "uint8" else 0
        extra = {"rounding": b.choice(("float32", "fixed_point"))} if op == "qnn.add" else {}
        return b.step(op, [x, other], 255.0, lhs_scale=[0.05], lhs_zero_point=zp, rhs_scale=[0.03],
                      rhs_zero_point=zp + 1, output_scale=[b.choice((0.04, 0.2))], output_zero_point=zp - 2, **extra)
    return make


def _qconcatenate(b, x):
    x = _q8(b, x)
    if x is None or not b.shape(x):
        return None
    zp = 128 if b.dtype(x) == "uint8" else 0
    return b.step("qnn.concatenate", [x, x], 255.0, input_scales=[0.05, 0.1], input_zero_points=[zp, zp + 3],
                  output_scale=0.07, output_zero_point=zp, axis=int(b.rng.integers(0, len(b.shape(x)))))


def _qavg_pool(b, x):
    x = _q8_nchw(b, x)
    if x is None:
        return None
    zp = 128 if b.dtype(x) == "uint8" else 0
    return b.step("qnn.avg_pool2d", [x], 255.0, input_scale=[0.05], input_zero_point=zp + 2,
                  output_scale=[b.choice((0.04, 0.2))], output_zero_point=zp - 1, **_window_attrs(b, True))


def _qsoftmax(b, x):
    x = _q8(b, x)
    if x is None or not b.shape(x) or b.dtype(x) != "int8":
        return None
    return b.step("qnn.softmax", [x], 128.0, input_scale=b.choice((0.05, 0.3)),
                  axis=int(b.rng.integers(0, len(b.shape(x)))))


MAKERS: dict[str, Callable] = {
    **{op: _binary(op) for op in ("add", "subtract", "multiply", "divide", "maximum", "minimum")},
    "negative": _unary("negative"), "abs": _unary("abs"), "nn.relu": _unary("nn.relu"),
    "exp": _unary("exp", True, "clip"), "log": _unary("log", True, "positive"),
    "sqrt": _unary("sqrt", True, "positive"), "tanh": _unary("tanh", True), "sigmoid": _unary("sigmoid", True),
    "clip": _clip, "nn.leaky_relu": _leaky_relu,
    "nn.dense": _dense, "nn.matmul": _matmul, "nn.bias_add": _bias_add, "nn.conv2d": _conv2d,
    "nn.max_pool2d": _pool("nn.max_pool2d"), "nn.avg_pool2d": _pool("nn.avg_pool2d"),
    "nn.global_avg_pool2d": _global_pool, "nn.batch_norm": _batch_norm, "nn.softmax": _softmax, "nn.lrn": _lrn,
    "nn.pad": _pad, "nn.dropout": _dropout, "reshape": _reshape, "transpose": _transpose,
    "concatenate": _concatenate, "squeeze": _squeeze, "expand_dims": _expand_dims,
    "nn.batch_flatten": _batch_flatten, "split": _split, "take": _take, "cast": _cast,
    **{op: _compare(op) for op in ("equal", "less", "greater", "less_equal", "greater_equal")},
    **{op: _logical(op) for op in ("logical_and", "logical_or", "logical_xor", "logical_not")},
    "where": _compare("less"),
    **{op: _reduce(op) for op in ("sum", "mean", "max", "min", "prod")},
    "argmax": _arg("argmax"), "argmin": _arg("argmin"),
    "erf": _float_unary("erf"), "nn.gelu": _float_unary("nn.gelu"), "nn.hard_swish": _float_unary("nn.hard_swish"),
    "nn.hard_sigmoid": _float_unary("nn.hard_sigmoid", alpha=0.2, beta=0.5), "power": _power,
    "strided_slice": _strided_slice, "tile": _tile, "broadcast_to": _broadcast_to,
    "nn.batch_matmul": _batch_matmul, "nn.layer_norm": _layer_norm, "image.resize": _resize,
    "qnn.quantize": _quantize, "qnn.dequantize": _dequantize, "qnn.requantize": _requantize,
    "qnn.conv2d": _qconv2d, "qnn.dense": _qdense, "qnn.matmul": _qmatmul, "qnn.add": _qbinary("qnn.add"),
    "qnn.mul": _qbinary("qnn.mul"), "qnn.concatenate": _qconcatenate, "qnn.softmax": _qsoftmax,
    "qnn.subtract": _qbinary("qnn.subtract"), "qnn.avg_pool2d": _qavg_pool,
}


def _random_shape(b: _Builder) -> tuple[int, ...]:
    while True:
        shape = _draw_shape(b)
        if math.prod(shape) <= MAX_ELEMENTS:
            return shape


def _draw_shape(b: _Builder) -> tuple[int, ...]:
    rank = int(b.rng.integers(1, 5))
    if rank <= 2 and b.rng.random() < 0.4:
        dims = [b.choice(PRIME_DIMS)] + [b.choice(SMALL_DIMS) for _ in range(rank - 1)]
        b.rng.shuffle(dims)
        return tuple(dims)
    return tuple(b.choice(SMALL_DIMS) for _ in range(rank))


def random_recipe(seed: int, steps: int = 12, ops: tuple[str, ...] | None = None, int_inputs: bool = True) -> Recipe:
    """A well-typed random graph of about `steps` ops drawn from `ops` (default: every op), from `seed`."""
    rng = np.random.default_rng(seed)
    b = _Builder(rng)
    names = list(ops or MAKERS)
    b.input(_random_shape(b), "float32")
    if rng.random() < 0.5:
        b.input(_random_shape(b), "float32")
    if int_inputs and rng.random() < 0.3:
        b.input(_random_shape(b), "int32")
    made, attempts = [], 0
    while len(made) < steps and attempts < steps * 20:
        attempts += 1
        x = b.pick()
        made_index = MAKERS[names[int(rng.integers(len(names)))]](b, x)
        if made_index is not None:
            made.append(made_index)
    if not made:
        made.append(b.step("negative", [0], 1.0))
    outputs = [made[-1]]
    extra = [i for i in made[:-1] if rng.random() < 0.15]
    outputs += extra[:2]
    return _compact(Recipe(tuple(b.values), tuple(outputs), seed))


# --- shrinking -----------------------------------------------------------------------------------------

def _compact(recipe: Recipe) -> Recipe:
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


def _candidates(recipe: Recipe):
    """Smaller variants of `recipe`, most aggressive first."""
    if len(recipe.outputs) > 1:
        for k in range(len(recipe.outputs)):
            yield replace(recipe, outputs=(recipe.outputs[k],))
    types = value_types(recipe)
    steps = [i for i, v in enumerate(recipe.values) if isinstance(v, Step)]
    for i in reversed(steps):
        v = recipe.values[i]
        # bypass: uses of i read one of its same-typed arguments instead
        for a in v.args:
            if types[a] == types[i] and not isinstance(recipe.values[a], (Const, Data)):
                yield _compact(_substitute(recipe, i, a))
        # cut: the value becomes a new input of main
        ty = types[i]
        values = list(recipe.values)
        values[i] = Input("cut", tuple(ty.shape), ty.dtype, v.tag)
        yield _compact(Recipe(tuple(values), recipe.outputs, recipe.seed))


def _substitute(recipe: Recipe, old: int, new: int) -> Recipe:
    values = [replace(v, args=tuple(new if a == old else a for a in v.args)) if isinstance(v, Step) else v
              for v in recipe.values]
    outputs = tuple(new if o == old else o for o in recipe.outputs)
    if any(isinstance(values[o], (Input, Const, Data)) for o in outputs):
        return recipe                     # an output must stay computed
    return Recipe(tuple(values), outputs, recipe.seed)


def shrink(recipe: Recipe, still_fails: Callable[[Recipe], bool], max_tries: int = 200) -> Recipe:
    """The smallest variant of a failing `recipe` found greedily for which `still_fails` holds."""
    tries = 0
    improved = True
    while improved and tries < max_tries:
        improved = False
        for candidate in _candidates(recipe):
            if candidate == recipe or candidate.op_steps > recipe.op_steps or (
                    candidate.op_steps == recipe.op_steps and len(candidate.values) >= len(recipe.values)):
                continue
            tries += 1
            if still_fails(candidate):
                recipe, improved = candidate, True
                break
            if tries >= max_tries:
                break
    return recipe


def save_reproducer(recipe: Recipe, directory, name: str, note: str = "") -> Path:
    """Write `<name>.txt` (the model, loadable by `scons model=`) and `<name>.json` (its recipe); the .txt path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    text = recipe.to_text()
    header = "".join(f"// {line}\n" for line in note.splitlines()) if note else ""
    path = directory / f"{name}.txt"
    path.write_text(header + text if _comments_parse(header + text) else text)
    (directory / f"{name}.json").write_text(recipe.to_json())
    if note:
        (directory / f"{name}.note").write_text(note + "\n")
    return path


def _comments_parse(text: str) -> bool:
    try:
        parse(text)
        return True
    except Exception:  # noqa: BLE001 - any parse problem: write the model without the comment header
        return False


__all__ = ["Const", "Data", "Input", "MAKERS", "Recipe", "Step", "random_recipe", "save_reproducer", "shrink", "value_types"]
