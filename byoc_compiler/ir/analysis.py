"""Small queries over expressions: free variables, users, op counts, flattened tuple values."""
from __future__ import annotations

from collections import Counter

from .expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from .types import flatten_type
from .visitor import post_order


def free_vars(expr: Expr) -> list[Var]:
    """Vars used in `expr` but not bound by a Function inside it, in first-use order."""
    return free_vars_and_order(expr)[0]


def free_vars_and_order(expr: Expr) -> tuple[list[Var], list[Expr] | None]:
    """(free_vars(expr), post_order(expr) when no Function is reachable from `expr`, else None: the walk
    free_vars makes anyway is then the order graph_order would compute, for a caller that keeps it)."""
    order = post_order(expr, into_functions=True)
    bound: set[int] = set()
    has_function = False
    for node in order:
        if type(node) is Function:
            has_function = True
            bound.update(id(p) for p in node.params)
    free = [n for n in order if type(n) is Var and id(n) not in bound]
    return free, None if has_function else order


def users(root: Expr, order: list[Expr] | None = None) -> dict[int, list[Expr]]:
    """id(node) -> the nodes that read it, for the dataflow graph under `root` (functions not entered;
    `order`: post_order(root), when the caller has it)."""
    out: dict[int, list[Expr]] = {}
    for node in order if order is not None else post_order(root):
        for child in node.children():
            out.setdefault(id(child), []).append(node)
    return out


def use_counts(order: list[Expr]) -> dict[int, int]:
    """id(node) -> how many times the nodes of `order` (a post_order) read it (a node reading it twice counts
    twice; functions not entered): a node is used only inside a set of nodes when they read it as often."""
    counts: dict[int, int] = {}
    get = counts.get
    for node in order:
        kind = type(node)
        if kind is Call:      # (every node of the graph: the common kinds without a method call)
            kids = node.args if type(node.op) is not Function else node.children()
        elif kind is Var or kind is Constant:
            continue
        else:
            kids = node.children()
        for child in kids:
            key = id(child)
            counts[key] = get(key, 0) + 1
    return counts


def op_counts(expr: Expr) -> Counter:
    """How many calls of each primitive op `expr` contains (composite bodies included)."""
    counts: Counter = Counter()
    for node in post_order(expr, into_functions=True):
        if isinstance(node, Call) and isinstance(node.op, Op):
            counts[node.op.name] += 1
    return counts


def flat_value(node: Tuple | TupleGetItem, values: dict[int, list]) -> list:
    """The tensors a Tuple or TupleGetItem stands for, from `values` (node id -> its tensors, in order).

    Lowerings give every value the flat list of its tensors (a tuple's fields flattened), so a Tuple
    concatenates its fields' lists and a TupleGetItem slices its field out of the tuple's list.
    """
    if isinstance(node, Tuple):
        return [t for f in node.fields for t in values[id(f)]]
    fields = node.tuple_value.checked_type.fields
    start = sum(len(flatten_type(f)) for f in fields[: node.index])
    return values[id(node.tuple_value)][start:start + len(flatten_type(fields[node.index]))]
