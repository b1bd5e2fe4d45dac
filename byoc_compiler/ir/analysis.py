"""Small queries over expressions: free variables, users, op counts."""
from __future__ import annotations

from collections import Counter

from .expr import Call, Expr, Function, Op, Var
from .visitor import post_order


def free_vars(expr: Expr) -> list[Var]:
    """Vars used in `expr` but not bound by a Function inside it, in first-use order."""
    bound: set[int] = set()
    for node in post_order(expr, into_functions=True):
        if isinstance(node, Function):
            bound.update(id(p) for p in node.params)
    if isinstance(expr, Function):
        bound.update(id(p) for p in expr.params)
    return [n for n in post_order(expr, into_functions=True) if isinstance(n, Var) and id(n) not in bound]


def users(root: Expr) -> dict[int, list[Expr]]:
    """id(node) -> the nodes that read it, for the dataflow graph under `root` (functions not entered)."""
    out: dict[int, list[Expr]] = {}
    for node in post_order(root):
        for child in node.children():
            out.setdefault(id(child), []).append(node)
    return out


def op_counts(expr: Expr) -> Counter:
    """How many calls of each primitive op `expr` contains (composite bodies included)."""
    counts: Counter = Counter()
    for node in post_order(expr, into_functions=True):
        if isinstance(node, Call) and isinstance(node.op, Op):
            counts[node.op.name] += 1
    return counts
