"""Matching a pattern at a root expression.

Patterns are small, so matching recurses on the pattern (never on the graph);
alternatives backtrack by copying the little binding state.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, Var
from .patterns import (AltPattern, AttrPattern, CallPattern, ConstantPattern, ExprPattern, OpPattern, Pattern,
                       TupleGetItemPattern, TuplePattern, TypePattern, VarPattern, WildcardPattern, install_matcher)


@dataclass(frozen=True)
class Match:
    """What a pattern matched at `root`.

    nodes  -- the expressions matched by call/tuple/get-item patterns, inputs before users (the root last)
    inputs -- the expressions matched by leaf patterns (wildcard, var, constant, expr), in pattern order,
              each once: left to right, depth first, the order a walk from the root meets them
              (transform/merge_composite.merged_order relies on it)
    """

    root: Expr
    nodes: tuple[Expr, ...]
    inputs: tuple[Expr, ...]

    @property
    def op_names(self) -> tuple[str, ...]:
        return tuple(_node_name(n) for n in self.nodes)


def _node_name(node: Expr) -> str:
    if isinstance(node, Call):
        if isinstance(node.op, Op):
            return node.op.name
        if isinstance(node.op, Function):
            return str(node.op.attrs.get("Composite", "fn"))
        return "@" + node.op.name_hint
    return type(node).__name__


class _State:
    __slots__ = ("bound", "interior", "inputs")

    def __init__(self):
        self.bound: dict[int, tuple[Pattern, Expr]] = {}
        self.interior: dict[int, Expr] = {}
        self.inputs: dict[int, Expr] = {}

    def copy(self) -> "_State":
        other = _State()
        other.bound = dict(self.bound)
        other.interior = dict(self.interior)
        other.inputs = dict(self.inputs)
        return other


def match(pattern: Pattern, expr: Expr) -> Match | None:
    """The Match of `pattern` rooted at `expr`, or None."""
    if not _may_match(pattern, expr):
        return None
    state = _match(pattern, expr, _State())
    if state is None:
        return None
    interior = state.interior
    inputs = tuple(e for k, e in state.inputs.items() if k not in interior)
    return Match(expr, _post_order_within(expr, interior), inputs)


def _may_match(pat: Pattern, expr: Expr) -> bool:
    """False when a call pattern of an op cannot match `expr` by the ops of the call and of its arguments
    (what _match would find first, without its state): passes try every pattern at every call of its root
    op, and most of those tries fail right there."""
    if type(pat) is not CallPattern or type(pat.op) is not OpPattern:
        return True
    if not isinstance(expr, Call) or not _op_ok(pat.op, expr.op) or len(expr.args) != len(pat.args):
        return False
    for sub, arg in zip(pat.args, expr.args):
        if type(sub) is CallPattern and type(sub.op) is OpPattern and \
                not (isinstance(arg, Call) and _op_ok(sub.op, arg.op)):
            return False
    return True


def may_match_among(pattern: Pattern, exprs: list[Expr]) -> list[Expr]:
    """The expressions of `exprs` _may_match does not rule out for `pattern`, in order: one filter over the
    list instead of a match call per expression (MergeComposite tries every call of a pattern's root op,
    and most are ruled out by the op of an argument)."""
    if type(pattern) is not CallPattern or type(pattern.op) is not OpPattern:
        return exprs
    name, count = pattern.op.name, len(pattern.args)
    kept = [e for e in exprs if type(e) is Call and type(e.op) is Op and e.op.name == name and len(e.args) == count]
    for k, sub in enumerate(pattern.args):
        if type(sub) is CallPattern and type(sub.op) is OpPattern:
            arg_name = sub.op.name
            kept = [e for e in kept if type(e.args[k]) is Call and type(e.args[k].op) is Op
                    and e.args[k].op.name == arg_name]
    return kept


def root_op_names(pattern: Pattern) -> frozenset[str] | None:
    """The op names a match of `pattern` can have at its root, or None when any expression may match.

    Lets a pass skip the (comparatively slow) full match at nodes that cannot be roots.
    """
    if isinstance(pattern, (AttrPattern, TypePattern)):
        return root_op_names(pattern.inner)
    if isinstance(pattern, AltPattern):
        left, right = root_op_names(pattern.left), root_op_names(pattern.right)
        return None if left is None or right is None else left | right
    if isinstance(pattern, OpPattern):
        return frozenset([pattern.name])
    if isinstance(pattern, CallPattern):
        return root_op_names(pattern.op) if isinstance(pattern.op, (OpPattern, AltPattern)) else None
    return None


def op_names(pattern: Pattern) -> frozenset[str]:
    """Every op name a match of `pattern` can contain (the why-not report asks which ops a target
    takes only inside composites)."""
    names: set[str] = set()
    stack = [pattern]
    while stack:
        pat = stack.pop()
        if isinstance(pat, OpPattern):
            names.add(pat.name)
        elif isinstance(pat, CallPattern):
            stack += [pat.op, *pat.args]
        elif isinstance(pat, AltPattern):
            stack += [pat.left, pat.right]
        elif isinstance(pat, (AttrPattern, TypePattern)):
            stack.append(pat.inner)
        elif isinstance(pat, TuplePattern):
            stack += list(pat.fields)
        elif isinstance(pat, TupleGetItemPattern):
            stack.append(pat.tuple_value)
    return frozenset(names)


def _post_order_within(root: Expr, members: dict[int, Expr]) -> tuple[Expr, ...]:
    order: list[Expr] = []
    seen = {id(root)}
    stack = [(root, iter(root.children()))]
    while stack:
        node, pending = stack[-1]
        for child in pending:
            if id(child) in members and id(child) not in seen:
                seen.add(id(child))
                stack.append((child, iter(child.children())))
                break
        else:
            stack.pop()
            order.append(node)
    return tuple(order)


def _match(pat: Pattern, expr: Expr, st: _State) -> _State | None:
    # The same pattern object must bind the same expression everywhere it is used.
    seen = st.bound.get(id(pat))
    if seen is not None:
        return st if seen[1] is expr else None

    if isinstance(pat, AltPattern):
        left = _match(pat.left, expr, st.copy())
        if left is not None:
            return _bind(left, pat, expr)
        right = _match(pat.right, expr, st.copy())
        return None if right is None else _bind(right, pat, expr)

    if isinstance(pat, (AttrPattern, TypePattern)):
        if not _extra_ok(pat, expr):
            return None
        inner = _match(pat.inner, expr, st)
        return None if inner is None else _bind(inner, pat, expr)

    if pat.is_leaf:
        if not _leaf_ok(pat, expr):
            return None
        st.inputs.setdefault(id(expr), expr)
        return _bind(st, pat, expr)

    if isinstance(pat, OpPattern):  # a bare op pattern: a call of that op, any arguments
        pat = CallPattern(pat, [WildcardPattern() for _ in getattr(expr, "args", ())])
    if isinstance(pat, CallPattern):
        if not isinstance(expr, Call) or len(expr.args) != len(pat.args) or not _op_ok(pat.op, expr.op):
            return None
        children = zip(pat.args, expr.args)
    elif isinstance(pat, TuplePattern):
        if not isinstance(expr, Tuple) or len(expr.fields) != len(pat.fields):
            return None
        children = zip(pat.fields, expr.fields)
    elif isinstance(pat, TupleGetItemPattern):
        if not isinstance(expr, TupleGetItem) or (pat.index is not None and pat.index != expr.index):
            return None
        children = [(pat.tuple_value, expr.tuple_value)]
    else:
        raise TypeError(f"cannot match a {type(pat).__name__}")
    st.interior[id(expr)] = expr
    for sub_pat, sub_expr in children:
        st = _match(sub_pat, sub_expr, st)
        if st is None:
            return None
    return _bind(st, pat, expr)


def _bind(st: _State, pat: Pattern, expr: Expr) -> _State:
    st.bound[id(pat)] = (pat, expr)
    return st


def _leaf_ok(pat: Pattern, expr: Expr) -> bool:
    if isinstance(pat, WildcardPattern):
        return True
    if isinstance(pat, ConstantPattern):
        return isinstance(expr, Constant)
    if isinstance(pat, VarPattern):
        return isinstance(expr, Var) and (not pat.name or pat.name == expr.name_hint)
    if isinstance(pat, ExprPattern):
        return pat.expr is expr
    raise TypeError(f"unknown leaf pattern {type(pat).__name__}")


def _op_ok(pat: Pattern, op) -> bool:
    if isinstance(pat, OpPattern):
        return isinstance(op, Op) and op.name == pat.name
    if isinstance(pat, AltPattern):
        return _op_ok(pat.left, op) or _op_ok(pat.right, op)
    if isinstance(pat, WildcardPattern):
        return True
    if isinstance(pat, AttrPattern) and isinstance(op, Function):  # a composite by its attrs
        return all(op.attrs.get(k) == v for k, v in pat.attrs.items())
    return False


def _same(a, b) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _extra_ok(pat: Pattern, expr: Expr) -> bool:
    if isinstance(pat, AttrPattern):
        attrs = expr.attrs if isinstance(expr, (Call, Function)) else None
        if attrs is None:
            return False
        return all(k in attrs and _same(attrs[k], v) for k, v in pat.attrs.items())
    ty = expr.checked_type
    if ty is None and isinstance(expr, Constant):
        ty = expr.tensor_type
    if ty is None or not hasattr(ty, "dtype"):
        return False
    if pat.dtype is not None and ty.dtype != pat.dtype:
        return False
    return pat.shape is None or tuple(ty.shape) == pat.shape


install_matcher(match)   # Pattern.match and Pattern.find call it
