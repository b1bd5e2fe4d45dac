"""Elementwise ops as tables of C expressions: binary (numpy broadcasting), unary, clip, cast.

Expressions read the operands as `a`, `b` (binary) or `x` (unary) and give the
result. int32 arithmetic goes through uint32_t so that overflow wraps like
numpy instead of being undefined behaviour; float results that numpy computes
in float64 (leaky_relu's alpha * x) are computed in double here too.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..c_abi import c_type
from .cwriter import (broadcast_strides, contiguous_strides, double_literal, flat_loop, float_literal,
                      loop_nest, size_of)

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
}

UNARY: dict[str, dict[str, CExpr]] = {
    "negative": {"float32": CExpr("-x"), "int32": CExpr("(int32_t)(0u - (uint32_t)x)")},
    "abs": {"float32": CExpr("fabsf(x)", headers=("math.h",)),
            "int32": CExpr("x < 0 ? (int32_t)(0u - (uint32_t)x) : x")},
    "exp": {"float32": CExpr("expf(x)", headers=("math.h",))},
    "log": {"float32": CExpr("logf(x)", headers=("math.h",))},
    "sqrt": {"float32": CExpr("sqrtf(x)", headers=("math.h",))},
    "tanh": {"float32": CExpr("tanhf(x)", headers=("math.h",))},
    "sigmoid": {"float32": CExpr("1.0f / (1.0f + expf(-x))", headers=("math.h",))},
    # x < 0 ? 0 : x lets NaN through, like numpy's maximum(x, 0).
    "nn.relu": {"float32": CExpr("byoc_select_f32(x < 0.0f, 0.0f, x)", helpers=_SELECT),
                "int32": CExpr("x < 0 ? 0 : x")},
    "nn.leaky_relu": {"float32": CExpr("byoc_select_f32(x > 0.0f, x, (float)({alpha} * (double)x))",
                                       helpers=_SELECT)},
}

# float -> int out of range (and NaN) is undefined in C; numpy on x86 yields the minimum value
# ("integer indefinite"), which the reference sees, so do the same.
_FLOAT_TO_INT = "(isnan({v}) || {v} >= {hi} || {v} < {lo}) ? {low} : ({t}){v}"
_F2I = {
    "int32": dict(hi="2147483648.0f", lo="-2147483648.0f", low="INT32_MIN", t="int32_t"),
    "int64": dict(hi="9223372036854775808.0f", lo="-9223372036854775808.0f", low="INT64_MIN", t="int64_t"),
}


def cast_expr(src: str, dst: str) -> str:
    """C expression converting `x` of dtype `src` to `dst`."""
    if src == dst:
        return "x"
    if dst == "bool":
        return "(uint8_t)(x != 0)"
    if src == "float32" and dst in _F2I:
        return _FLOAT_TO_INT.format(v="x", **_F2I[dst])
    return f"({c_type(dst)})x"


def _element_rule(table: dict[str, dict[str, CExpr]], name: str):
    def rule(ctx) -> str:
        dtype = ctx.inputs[0].dtype
        entry = table[name].get(dtype)
        if entry is None:
            raise ValueError(f"host kernel {name}: no C expression for dtype {dtype}")
        for h in entry.headers:
            ctx.need(h)
        for h in entry.helpers:
            ctx.use(h)
        expr = entry.expr.format(**{k: double_literal(v) for k, v in ctx.attrs.items()})
        out = ctx.outputs[0]
        t = c_type(dtype)
        names = ("a", "b") if len(ctx.inputs) == 2 else ("x",)
        strides = {f"in{i}": broadcast_strides(ti.shape, out.shape) for i, ti in enumerate(ctx.inputs)}
        strides["out0"] = contiguous_strides(out.shape)

        def body(off):
            lines = [f"const {t} {n} = in{i}[{off[f'in{i}']}];" for i, n in enumerate(names)]
            if entry.guard:
                lines.append(f"if ({entry.guard}) {{")
                lines.append(ctx.fail(entry.error))
                lines.append("}")
            lines.append(f"out0[{off['out0']}] = {expr};")
            return "\n".join(lines)

        return loop_nest(out.shape, strides, body)
    return rule


def _clip(ctx) -> str:
    x_type, out = ctx.inputs[0], ctx.outputs[0]
    lo, hi = ctx.attrs.a_min, ctx.attrs.a_max
    n = size_of(out.shape)
    if x_type.dtype == "float32":
        # numpy compares with the bounds rounded to float32 (weak Python scalars).
        lo_c, hi_c = float_literal(lo), float_literal(hi)
        select = ctx.use("byoc_select_f32")
        step = (f"const float x = in0[i];\nconst float v = {select}(x < {lo_c}, {lo_c}, x);\n"
                f"out0[i] = {select}(v > {hi_c}, {hi_c}, v);")
    else:
        # int32 data against float bounds: numpy clips in float64 and truncates back.
        ctx.need("math.h")
        lo_c, hi_c = double_literal(lo), double_literal(hi)
        f2i = _FLOAT_TO_INT.format(v="v", hi="2147483648.0", lo="-2147483648.0", low="INT32_MIN", t="int32_t")
        step = (f"const double x = (double)in0[i];\nconst double u = x < {lo_c} ? {lo_c} : x;\n"
                f"const double v = u > {hi_c} ? {hi_c} : u;\nout0[i] = {f2i};")
    return flat_loop(n, step)


def _cast(ctx) -> str:
    src, dst = ctx.inputs[0].dtype, ctx.outputs[0].dtype
    expr = cast_expr(src, dst)
    if "isnan" in expr:
        ctx.need("math.h")
    t = c_type(src)
    return flat_loop(size_of(ctx.outputs[0].shape), f"const {t} x = in0[i];\nout0[i] = {expr};")


RULES = {name: _element_rule(BINARY, name) for name in BINARY}
RULES.update({name: _element_rule(UNARY, name) for name in UNARY})
RULES["clip"] = _clip
RULES["cast"] = _cast
