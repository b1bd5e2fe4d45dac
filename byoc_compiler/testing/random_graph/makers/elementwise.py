"""Random-graph makers of the elementwise ops (registered as their "random_maker" in makers/__init__.py):
binary ops with broadcasting partners, unary ops with guards (exp of a clipped value, log and sqrt of
abs(x) + 1), comparisons and logic through `where`.
"""
from __future__ import annotations

import math

from ..builder import INT_BOUND, Builder, broadcast_partner


def binary(op: str):
    def make(b: Builder, x: int):
        dt = b.dtype(x)
        other = b.pick(dt)
        if other is None or b.rng.random() < 0.5:
            other = b.const(broadcast_partner(b, x), dt, *((-1.0, 1.0) if dt == "float32" else (0, 7)))
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


def unary(op: str, float_only: bool = False, guard: str | None = None):
    def make(b: Builder, x: int):
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


def clip(b, x):
    lo = float(b.choice((-1.0, -0.5, 0.0)))
    hi = float(b.choice((0.25, 0.5, 2.0)))
    return b.step("clip", [x], max(abs(lo), hi), a_min=lo, a_max=hi)


def leaky_relu(b, x):
    if b.dtype(x) != "float32":
        return None
    return b.step("nn.leaky_relu", [x], b.bound(x), alpha=float(b.choice((0.01, 0.2, 0.5))))


def cast(b, x):
    if b.dtype(x) == "float32":
        if b.bound(x) > INT_BOUND:
            return None
        return b.step("cast", [x], b.bound(x), dtype="int32")
    return b.step("cast", [x], b.bound(x), dtype="float32")


def compare(op):
    def make(b, x):
        if b.dtype(x) != "float32":
            return None
        other = b.const(broadcast_partner(b, x), "float32")
        cond = b.step(op, [x, other], 1.0)
        if cond is None:
            return None
        return b.step("where", [cond, x, other], max(b.bound(x), 1.0))
    return make


def logical(op):
    def make(b, x):
        if b.dtype(x) != "float32":
            return None
        zero = b.const((1,), "float32", 0.0, 0.0)
        lhs = b.step("greater", [x, zero], 1.0)
        if op == "logical_not":
            cond = b.step(op, [lhs], 1.0) if lhs is not None else None
        else:
            rhs = b.step("less", [x, b.const(broadcast_partner(b, x), "float32")], 1.0)
            cond = b.step(op, [lhs, rhs], 1.0) if lhs is not None and rhs is not None else None
        return None if cond is None else b.step("where", [cond, x, zero], b.bound(x))
    return make


def float_unary(op, **attrs):
    def make(b, x):
        if b.dtype(x) != "float32":
            return None
        bound = {"erf": 1.0, "nn.hard_sigmoid": 1.0}.get(op, b.bound(x))
        return b.step(op, [x], bound, **attrs)
    return make


def power(b, x):
    if b.dtype(x) != "float32":
        return None
    bx = b.bound(x)
    one = b.const((1,), "float32", 1.0, 1.0)
    base = b.step("add", [b.step("abs", [x], bx), one], bx + 1)
    exponent = b.const(broadcast_partner(b, x), "float32", -1.0, 2.0)
    return None if base is None else b.step("power", [base, exponent], (bx + 1) ** 2)
