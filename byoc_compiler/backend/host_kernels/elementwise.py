"""Elementwise ops as tables of C expressions: binary (numpy broadcasting), unary, clip, cast.

Expressions read the operands as `a`, `b` (binary) or `x` (unary) and give the
result. int32 arithmetic goes through uint32_t so that overflow wraps like
numpy instead of being undefined behaviour; float results that numpy computes
in float64 (leaky_relu's alpha * x) are computed in double here too.

Other dtypes reuse a row of the tables (`_ROW`): float16 loads to float, uses the
float32 expression and rounds once at the store (numpy's half loops do the
same); int8/int16/uint8/uint16 use the int32 expression and wrap at the store;
float64 has its own expressions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...ctext import c_type, double_literal, float_literal, int_literal
from .cwriter import broadcast_strides, contiguous_strides, flat_loop, loop_nest, size_of

# wrap-around int32 arithmetic (numpy semantics, no signed overflow in C)
_WRAP = "(int32_t)((uint32_t)a {op} (uint32_t)b)"


@dataclass(frozen=True)
class CExpr:
    """`expr` per dtype; `guard` (optional) is a condition that makes the element an error."""

    expr: str
    guard: str | None = None
    error: str = ""
    headers: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()


_SELECT = ("byoc_select_f32",)


BINARY: dict[str, dict[str, CExpr]] = {
    "add": {"float32": CExpr("a + b"), "int32": CExpr(_WRAP.format(op="+"))},
    "subtract": {"float32": CExpr("a - b"), "int32": CExpr(_WRAP.format(op="-"))},
    "multiply": {"float32": CExpr("a * b"), "int32": CExpr(_WRAP.format(op="*"))},
    "divide": {
        "float32": CExpr("a / b"),
        # C's / truncates like the op; INT32_MIN / -1 overflows, so negate with wrap-around instead.
        "int32": CExpr("b == -1 ? (int32_t)(0u - (uint32_t)a) : a / b", guard="b == 0",
                      error="integer division by zero"),
    },
    # numpy's maximum/minimum propagate NaN from either side (a != a: a is NaN).
    "maximum": {"float32": CExpr("byoc_select_f32((a > b) | (a != a), a, b)", helpers=_SELECT),
                "int32": CExpr("a > b ? a : b")},
    "minimum": {"float32": CExpr("byoc_select_f32((a < b) | (a != a), a, b)", helpers=_SELECT),
                "int32": CExpr("a < b ? a : b")},
    "power": {"float32": CExpr("(float)pow((double)a, (double)b)", headers=("math.h",))},
}

# int64 arithmetic (index computations of exported models): wrap-around through uint64_t like int32.
_WRAP64 = "(int64_t)((uint64_t)a {op} (uint64_t)b)"
BINARY["add"]["int64"] = CExpr(_WRAP64.format(op="+"))
BINARY["subtract"]["int64"] = CExpr(_WRAP64.format(op="-"))
BINARY["multiply"]["int64"] = CExpr(_WRAP64.format(op="*"))
BINARY["divide"]["int64"] = CExpr("b == -1 ? (int64_t)(0u - (uint64_t)a) : a / b", guard="b == 0",
                                  error="integer division by zero")
BINARY["maximum"]["int64"] = CExpr("a > b ? a : b")
BINARY["minimum"]["int64"] = CExpr("a < b ? a : b")

UNARY: dict[str, dict[str, CExpr]] = {
    "negative": {"float32": CExpr("-x"), "int32": CExpr("(int32_t)(0u - (uint32_t)x)")},
    "abs": {"float32": CExpr("fabsf(x)", headers=("math.h",)),
            "int32": CExpr("x < 0 ? (int32_t)(0u - (uint32_t)x) : x")},
    "exp": {"float32": CExpr("expf(x)", headers=("math.h",))},
    "log": {"float32": CExpr("logf(x)", headers=("math.h",))},
    "sqrt": {"float32": CExpr("sqrtf(x)", headers=("math.h",))},
    "tanh": {"float32": CExpr("tanhf(x)", headers=("math.h",))},
    "sigmoid": {"float32": CExpr("1.0f / (1.0f + expf(-x))", headers=("math.h",))},
    "erf": {"float32": CExpr("(float)erf((double)x)", headers=("math.h",))},
    # Written with comparisons (not fmin/fmax) so that NaN propagates like numpy's clip.
    "nn.hard_sigmoid": {"float32": CExpr("(float)byoc_unit_clamp({alpha} * (double)x + {beta})",
                                         helpers=("byoc_unit_clamp",))},
    # x * clip(x / 6 + 0.5, 0, 1) with the clip decided on x (x < -3: 0, x > 3: 1; exact, as x / 6 + 0.5 is
    # monotonic), through bit selects: a loop the compilers vectorize (comparisons of the double value
    # stay branches under gcc's default trapping math). NaN fails both tests and stays NaN.
    "nn.hard_swish": {"float32": CExpr("byoc_select_f32(x < -3.0f, x * 0.0f, byoc_select_f32(x > 3.0f, x, "
                                       "(float)((double)x * ((double)x / 6.0 + 0.5))))", helpers=_SELECT)},
    "nn.gelu": {"float32": CExpr("byoc_gelu_f32(x, {approximate})", helpers=("byoc_gelu_f32",))},
    # x < 0 ? 0 : x lets NaN through, like numpy's maximum(x, 0).
    "nn.relu": {"float32": CExpr("byoc_select_f32(x < 0.0f, 0.0f, x)", helpers=_SELECT),
                "int32": CExpr("x < 0 ? 0 : x")},
    "nn.leaky_relu": {"float32": CExpr("byoc_select_f32(x > 0.0f, x, (float)({alpha} * (double)x))",
                                       helpers=_SELECT)},
}

# dtype -> the table row its expressions come from.
_ROW = {"float32": "float32", "float16": "float32", "float64": "float64", "int32": "int32", "int64": "int64",
        "int8": "int32", "int16": "int32", "uint8": "int32", "uint16": "int32"}

# double expressions of the float32 rows that need another spelling in float64
_F64 = {
    "maximum": CExpr("((a > b) | (a != a)) ? a : b"),
    "minimum": CExpr("((a < b) | (a != a)) ? a : b"),
    "abs": CExpr("fabs(x)", headers=("math.h",)),
    "exp": CExpr("exp(x)", headers=("math.h",)),
    "log": CExpr("log(x)", headers=("math.h",)),
    "sqrt": CExpr("sqrt(x)", headers=("math.h",)),
    "tanh": CExpr("tanh(x)", headers=("math.h",)),
    "sigmoid": CExpr("1.0 / (1.0 + exp(-x))", headers=("math.h",)),
    "nn.relu": CExpr("x < 0.0 ? 0.0 : x"),
    "nn.leaky_relu": CExpr("x > 0.0 ? x : {alpha} * x"),
    "power": CExpr("pow(a, b)", headers=("math.h",)),
}


def load(ctx, dtype: str, value: str) -> str:
    """C text reading one element of `dtype` as the type its arithmetic runs in."""
    if dtype == "float16":
        ctx.use("byoc_f16_to_f32")
        return f"byoc_f16_to_f32({value})"
    return value


def work_type(dtype: str) -> str:
    """The C type elementwise arithmetic on `dtype` runs in."""
    return {"float16": "float", "int8": "int32_t", "int16": "int32_t", "uint8": "int32_t",
            "uint16": "int32_t"}.get(dtype, c_type(dtype))


def store(ctx, dtype: str, value: str) -> str:
    """C text turning a result of work_type(dtype) into an element of `dtype` (round or wrap)."""
    if dtype == "float16":
        ctx.use("byoc_f32_to_f16")
        return f"byoc_f32_to_f16({value})"
    if dtype in ("int8", "int16"):
        name = f"byoc_wrap_{dtype.replace('int', 'i')}"
        ctx.use(name)
        return f"{name}({value})"
    if dtype in ("uint8", "uint16"):
        return f"({c_type(dtype)})({value})"   # conversion to unsigned is modulo 2^N in C
    return value


def _entry(table: dict[str, dict[str, CExpr]], name: str, dtype: str) -> CExpr | None:
    row = _ROW.get(dtype)
    if row is None:
        return None
    if row == "float64":
        return table[name].get("float64") or _F64.get(name) or table[name].get("float32")
    return table[name].get(row)


def _attr_text(value) -> str:
    if isinstance(value, str):           # gelu's approximate: 1 for the tanh formula
        return "1" if value == "tanh" else "0"
    return double_literal(value)


def _element_rule(table: dict[str, dict[str, CExpr]], name: str):
    def rule(ctx) -> str:
        dtype = ctx.inputs[0].dtype
        entry = _entry(table, name, dtype)
        if entry is None:
            raise ValueError(f"host kernel {name}: no C expression for dtype {dtype}")
        for h in entry.headers:
            ctx.need(h)
        for h in entry.helpers:
            ctx.use(h)
        expr = entry.expr.format(**{k: _attr_text(v) for k, v in ctx.attrs.items()})
        guard = [f"if ({entry.guard}) {{", ctx.fail(entry.error), "}"] if entry.guard else []
        return _loaded_loop(ctx, dtype, lambda out: [*guard, f"{out} = {store(ctx, dtype, expr)};"])
    return rule


def _loaded_loop(ctx, dtype: str, statements: Callable[[str], list[str]]) -> str:
    """Loops over the output with the inputs (broadcast) loaded into `a`, `b` (or `x` for one input) in
    the work type of `dtype`; `statements(out)` gets the output element's C lvalue and writes it."""
    out = ctx.outputs[0]
    t = work_type(dtype)
    names = ("a", "b") if len(ctx.inputs) == 2 else ("x",)
    strides = {f"in{i}": broadcast_strides(ti.shape, out.shape) for i, ti in enumerate(ctx.inputs)}
    strides["out0"] = contiguous_strides(out.shape)

    def body(off):
        lines = [f"const {t} {n} = {load(ctx, dtype, 'in%d[%s]' % (i, off[f'in{i}']))};"
                 for i, n in enumerate(names)]
        return "\n".join(lines + statements(f"out0[{off['out0']}]"))

    return loop_nest(out.shape, strides, body)


_INT_RANGE = {"int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
              "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
              "uint8": (0, (1 << 8) - 1), "uint16": (0, (1 << 16) - 1), "bool": (0, 1)}


def float_to_int(v: str, dst: str) -> str:
    """C expression converting the float/double `v` to integer `dst`: truncate, saturate, NaN -> 0
    (op/cast_rule.py; C leaves out-of-range conversions undefined)."""
    lo, hi = _INT_RANGE[dst]
    t = c_type(dst)
    # Both bounds are powers of two, exact in float and double, so the comparisons are exact.
    return (f"(isnan({v}) ? ({t})0 : {v} >= {double_literal(float(hi + 1))} ? ({t}){int_literal(hi, 'int64')} : "
            f"{v} < {double_literal(float(lo))} ? ({t}){int_literal(lo, 'int64')} : ({t}){v})")


def cast_expr(src: str, dst: str, x: str = "x") -> str:
    """C expression converting `x` of dtype `src` (a float for float16: already loaded) to `dst`."""
    if src == dst and src != "float16":
        return x
    if dst == "bool":
        return f"(uint8_t)({x} != 0)"
    if dst == "float16":
        return f"byoc_f64_to_f16((double){x})"
    if src in ("float32", "float16", "float64") and dst in _INT_RANGE:
        return float_to_int(x, dst)
    lo, hi = _INT_RANGE.get(src, (0, 0))
    if dst in ("int8", "int16", "int32") and src in _INT_RANGE and not (
            _INT_RANGE[dst][0] <= lo and hi <= _INT_RANGE[dst][1]):
        return f"byoc_wrap_{dst.replace('int', 'i')}((int64_t){x})"
    return f"({c_type(dst)}){x}"   # exact, modulo 2^N to unsigned, or rounded to nearest float


def _clip(ctx) -> str:
    x_type, out = ctx.inputs[0], ctx.outputs[0]
    dtype = x_type.dtype
    lo, hi = ctx.attrs.a_min, ctx.attrs.a_max
    n = size_of(out.shape)
    if dtype in ("float32", "float16"):
        # numpy compares with the bounds rounded to x's type (weak Python scalars).
        lo_c, hi_c = (float_literal(float(np.dtype(dtype).type(b))) for b in (lo, hi))
        if "INFINITY" in lo_c + hi_c:
            ctx.need("math.h")
        select = ctx.use("byoc_select_f32")
        step = (f"const float x = {load(ctx, dtype, 'in0[i]')};\n"
                f"const float v = {select}(x < {lo_c}, {lo_c}, x);\n"
                f"out0[i] = {store(ctx, dtype, f'{select}(v > {hi_c}, {hi_c}, v)')};")
    elif dtype == "float64":
        ctx.need("math.h")
        lo_c, hi_c = double_literal(lo), double_literal(hi)
        step = (f"const double x = in0[i];\nconst double v = x < {lo_c} ? {lo_c} : x;\n"
                f"out0[i] = v > {hi_c} ? {hi_c} : v;")
    else:
        # integer data against float bounds: numpy clips in float64 and converts back.
        ctx.need("math.h")
        lo_c, hi_c = double_literal(lo), double_literal(hi)
        step = (f"const double x = (double)in0[i];\nconst double u = x < {lo_c} ? {lo_c} : x;\n"
                f"const double v = u > {hi_c} ? {hi_c} : u;\nout0[i] = {float_to_int('v', dtype)};")
    return flat_loop(n, step)


def _cast(ctx) -> str:
    src, dst = ctx.inputs[0].dtype, ctx.outputs[0].dtype
    if src == dst:
        return flat_loop(size_of(ctx.outputs[0].shape), "out0[i] = in0[i];")
    if src == "float16" and dst == "bool":   # every bit pattern but +-0 is true (NaN too, as numpy)
        expr = "(uint8_t)((in0[i] & 0x7fffu) != 0)"
        return flat_loop(size_of(ctx.outputs[0].shape), f"out0[i] = {expr};")
    x = load(ctx, src, "in0[i]")
    expr = cast_expr(src, dst, "x")
    if "isnan" in expr:
        ctx.need("math.h")
    for helper in ("byoc_f64_to_f16", "byoc_wrap_i8", "byoc_wrap_i16", "byoc_wrap_i32"):
        if helper in expr:
            ctx.use(helper)
    t = work_type(src) if src == "float16" else c_type(src)
    return flat_loop(size_of(ctx.outputs[0].shape), f"const {t} x = {x};\nout0[i] = {expr};")


RULES = {name: _element_rule(BINARY, name) for name in BINARY}
RULES.update({name: _element_rule(UNARY, name) for name in UNARY})
RULES["clip"] = _clip
RULES["cast"] = _cast


def _where(ctx) -> str:
    out = ctx.outputs[0]
    strides = {f"in{i}": broadcast_strides(t.shape, out.shape) for i, t in enumerate(ctx.inputs)}
    strides["out0"] = contiguous_strides(out.shape)
    return loop_nest(out.shape, strides,
                     lambda off: f"out0[{off['out0']}] = in0[{off['in0']}] ? in1[{off['in1']}] : in2[{off['in2']}];")


RULES["where"] = _where

# Comparisons and logical ops: operands of any dtype (float16 loaded as float), a bool (0/1) result.
COMPARE = {"equal": "a == b", "less": "a < b", "greater": "a > b", "less_equal": "a <= b",
           "greater_equal": "a >= b", "logical_and": "(a != 0) & (b != 0)", "logical_or": "(a != 0) | (b != 0)",
           "logical_xor": "(a != 0) ^ (b != 0)", "logical_not": "x == 0"}


def _compare_rule(name: str):
    def rule(ctx) -> str:
        return _loaded_loop(ctx, ctx.inputs[0].dtype, lambda out: [f"{out} = (uint8_t)({COMPARE[name]});"])
    return rule


RULES.update({name: _compare_rule(name) for name in COMPARE})
