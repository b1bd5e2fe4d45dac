"""Reductions (sum, mean, max, min, prod) and argmax/argmin as loop nests.

The outer nest walks the output, the inner one the reduced axes of one output element.
float32 sums, means and products accumulate in double and round once (like the
references); integers accumulate in uint64_t so overflow wraps like numpy's int64 sums
cast back; max/min propagate NaN like numpy.
"""
from __future__ import annotations

import numpy as np

from ...ctext import c_type, double_literal, float_literal, int_literal as L, literal
from ...op.reduce import empty_value, reduce_axes
from .cwriter import contiguous_strides, loop_nest, size_of


def _split_shapes(shape, axes):
    """(kept shape with reduced dims 1, reduced shape with kept dims 1)."""
    kept = [1 if i in axes else d for i, d in enumerate(shape)]
    reduced = [d if i in axes else 1 for i, d in enumerate(shape)]
    return kept, reduced


def reduction_nest(ctx, init: str, step: str, finish: str, axes) -> str:
    data, out = ctx.inputs[0], ctx.outputs[0]
    if size_of(out.shape) == 0:
        return ""
    own = contiguous_strides(data.shape)
    kept, reduced = _split_shapes(data.shape, axes)
    outer_strides = {"in0": own, "out0": contiguous_strides(kept)}

    def outer(off):
        inner = loop_nest(reduced, {"in0": own}, lambda o: step.format(at=f"base + {o['in0']}"), indent=0,
                          prefix="r")
        return "\n".join([f"const int64_t base = {off['in0']};", "(void)base;", init, inner,
                          finish.format(out=off["out0"])])
    return loop_nest(kept, outer_strides, outer)


def _reduction(name: str):
    def rule(ctx) -> str:
        data = ctx.inputs[0]
        dtype = data.dtype
        axes = reduce_axes(name, data.ndim, ctx.attrs.axis)
        count = size_of([data.shape[a] for a in axes])
        t = c_type(dtype)
        if dtype in ("float32", "float64"):
            ctx.need("math.h")
            if name in ("sum", "mean", "prod"):
                init = f"double acc = {'1.0' if name == 'prod' else '0.0'};"
                op = "acc *= (double)in0[{at}];" if name == "prod" else "acc += (double)in0[{at}];"
                value = f"({t})(acc / {double_literal(float(count))})" if name == "mean" else f"({t})acc"
                if name == "mean" and count == 0:
                    value = f"({t})NAN"
                return reduction_nest(ctx, init, op, "out0[{out}] = " + value + ";", axes)
            better = ">" if name == "max" else "<"
            init = f"{t} acc = {literal(empty_value(name, dtype), dtype)};"
            # NaN wins and stays (numpy's max/min propagate it).
            op = f"{{{{ const {t} v = in0[{{at}}]; if (acc == acc && ((v {better} acc) || v != v)) acc = v; }}}}"
            return reduction_nest(ctx, init, op, "out0[{out}] = acc;", axes)
        if name in ("sum", "mean", "prod"):
            init = f"uint64_t acc = {'1u' if name == 'prod' else '0u'};"
            op = "acc *= (uint64_t)(int64_t)in0[{at}];" if name == "prod" else "acc += (uint64_t)(int64_t)in0[{at}];"
            if name == "mean":
                if count == 0:
                    raise ValueError("the mean of no integers is undefined")
                value = f"({t})((double)(int64_t)acc / {double_literal(float(count))})"
            else:
                value = f"({t})acc"
            return reduction_nest(ctx, init, op, "out0[{out}] = " + value + ";", axes)
        better = ">" if name == "max" else "<"
        init = f"{t} acc = {literal(empty_value(name, dtype), dtype)};"
        return reduction_nest(ctx, init, f"{{{{ const {t} v = in0[{{at}}]; if (v {better} acc) acc = v; }}}}",
                     "out0[{out}] = acc;", axes)
    return rule


def _arg(name: str):
    def rule(ctx) -> str:
        data = ctx.inputs[0]
        axis = ctx.attrs.axis % data.ndim
        t = c_type(data.dtype)
        better = ">" if name == "argmax" else "<"
        if ctx.attrs.select_last_index:
            cond = f"(v {better}= best)" + (" | (v != v)" if data.dtype in ("float32", "float64") else "")
        else:
            cond = f"(v {better} best)" + (" | ((v != v) & (best == best))" if data.dtype in ("float32", "float64")
                                           else "")
        init = f"{t} best = in0[base];\nint64_t index = 0;\nint64_t position = 0;"
        step = f"{{{{ const {t} v = in0[{{at}}]; if (position > 0 && ({cond})) {{{{ best = v; index = position; }}}} " \
               "++position; }}"
        return reduction_nest(ctx, init, step, "out0[{out}] = index;", (axis,))
    return rule


RULES = {name: _reduction(name) for name in ("sum", "mean", "max", "min", "prod")}
RULES.update({name: _arg(name) for name in ("argmax", "argmin")})
_ = np
