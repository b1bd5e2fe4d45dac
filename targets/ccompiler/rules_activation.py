"""ccompiler rules of the mobile CNNs' piecewise-linear activations: hard sigmoid and hard swish.

Same shape as rules.py's table (op name -> Rule); rules.py merges RULES in. Elementwise, so they run
in place on an input nothing reads afterwards.
"""
from __future__ import annotations

from byoc_compiler.vendor import float_literal, int_literal

from .rule import Rule


def _hard_sigmoid(step):
    (x,), (out,) = step.ins, step.outs
    return [], (f"ck_hard_sigmoid({int_literal(out.type.size)}, {x.ptr}, {out.ptr}, "
                f"{float_literal(step.attrs['alpha'])}, {float_literal(step.attrs['beta'])})")


def _hard_swish(step):
    (x,), (out,) = step.ins, step.outs
    return [], f"ck_hard_swish({int_literal(out.type.size)}, {x.ptr}, {out.ptr})"


def rules() -> dict:
    """The table (rules.py merges it into RULES)."""
    return {"nn.hard_sigmoid": Rule(_hard_sigmoid, inplace=(0,)), "nn.hard_swish": Rule(_hard_swish, inplace=(0,))}
