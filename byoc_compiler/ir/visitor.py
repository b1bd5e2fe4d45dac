"""Memoized, iterative traversal of expression DAGs.

Models are chains of tens of thousands of calls, so nothing here recurses on
the depth of the graph: traversal keeps its own stack. Every node is visited
once however many users it has.
"""
from __future__ import annotations

import operator
from typing import Callable, Iterator

from .expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var, carry_meta, with_inputs


def _inputs(node: Expr, into_functions: bool) -> tuple[Expr, ...]:
    if isinstance(node, Function):
        return (*node.params, node.body) if into_functions else ()
    return node.children()


def post_order(root: Expr, into_functions: bool = False) -> list[Expr]:
    """Every node reachable from `root`, each once, inputs before users (a topological order).

    With `into_functions`, the parameters and body of Functions (e.g. composite
    functions used as call targets) are included before the Function itself.
    The order is deterministic: inputs are explored left to right (a depth-first
    walk that appends a node when its last input is done).
    """
    # Every pass walks the whole graph, several times per partition: this loop is the hottest of the
    # partitioner, hence the inlined children of the common node kinds and leaves appended at once.
    order: list[Expr] = []
    append = order.append
    seen: set[int] = {id(root)}
    mark = seen.add
    stack: list[tuple[Expr, Iterator[Expr]]] = [(root, iter(_inputs(root, into_functions)))]
    push, pop = stack.append, stack.pop
    while stack:
        node, pending = stack[-1]
        for child in pending:
            key = id(child)
            if key in seen:
                continue
            mark(key)
            kind = type(child)
            if kind is Call:
                kids = child.args if type(child.op) is not Function else (child.op, *child.args)
            elif kind is Var or kind is Constant or kind is GlobalVar:
                append(child)
                continue
            else:
                kids = _inputs(child, into_functions)
            if kids:
                push((child, iter(kids)))
                break
            append(child)
        else:
            pop()
            append(node)
    return order


def reachable(root: Expr) -> list[Expr]:
    """Every node post_order(root) has (Functions not entered), each once, in an order of no meaning (the
    same every time): for a question about every node of a graph that does not care about order, a walk
    about a third cheaper than post_order (no iterator per node, no revisit of a node's inputs)."""
    found = [root]
    seen = {id(root)}
    stack = [root]
    mark, add, pop, push = seen.add, found.append, stack.pop, stack.append
    while stack:
        node = pop()
        kind = type(node)
        if kind is Call:
            kids = node.args if type(node.op) is not Function else (node.op, *node.args)
        elif kind is TupleGetItem:
            kids = (node.tuple_value,)
        elif kind is Tuple:
            kids = node.fields
        elif kind is Var or kind is Constant or kind is GlobalVar:
            continue
        else:
            kids = node.children()
        for child in kids:
            if id(child) not in seen:
                mark(id(child))
                add(child)
                push(child)
    return found


def graph_order(body: Expr) -> list[Expr]:
    """post_order(body) (Functions not entered), remembered on `body`: nodes never change, so the passes
    of a pipeline that walk the same function body share one walk. For function bodies only (a cache per
    walked root: calling it on every node of a chain would hold n^2 references). A fresh list each call."""
    known = getattr(body, "_order", None)
    if known is None:
        order = post_order(body)
        remember_order(body, order)
        return order
    order = list(known)
    order.append(body)
    return order


def remember_order(body: Expr, order: list[Expr]) -> None:
    """Record `order` as post_order(body), for a pass that built `body` node for node from a walk it had
    (so the order is known without walking again). The root is left out of what is kept: a node holding
    a reference to itself would be a cycle only the cycle collector frees."""
    body._order = tuple(order[:-1])


class ExprVisitor:
    """Calls `visit_<kind>(node)` once per node, inputs first.

    Override `visit_call`, `visit_var`, ... ; `into_functions` decides whether
    the bodies of nested Functions (composites) are walked too.
    """

    into_functions = True

    def visit(self, expr: Expr) -> None:
        for node in post_order(expr, self.into_functions):
            _dispatch(self, node)

    def visit_var(self, var: Var) -> None:
        pass

    def visit_constant(self, const: Constant) -> None:
        pass

    def visit_global_var(self, gvar: GlobalVar) -> None:
        pass

    def visit_call(self, call: Call) -> None:
        pass

    def visit_tuple(self, tup: Tuple) -> None:
        pass

    def visit_tuple_getitem(self, item: TupleGetItem) -> None:
        pass

    def visit_function(self, func: Function) -> None:
        pass


_KIND = {
    Var: "var",
    Constant: "constant",
    GlobalVar: "global_var",
    Call: "call",
    Tuple: "tuple",
    TupleGetItem: "tuple_getitem",
    Function: "function",
}


def _dispatch(obj, node: Expr, *extra):
    return getattr(obj, "visit_" + _KIND[type(node)])(node, *extra)


class ExprMutator:
    """Rebuilds an expression bottom-up, memoized, without recursion.

    For every node (inputs first) the mutator makes `rebuilt`: the node with its
    inputs replaced by their rewritten versions (the very same object when no
    input changed, so untouched subgraphs keep their identity; a new node carries
    the node's meta). It then calls
    `rewrite_<kind>(original, rebuilt)`, whose result replaces the node.
    Override those hooks; the defaults return `rebuilt`.

    Function bodies are rewritten only when `into_functions` is true.
    """

    into_functions = True

    def __init__(self) -> None:
        self.memo: dict[int, Expr] = {}

    def lookup(self, expr: Expr) -> Expr:
        """The rewritten version of an already-visited node."""
        return self.memo[id(expr)]

    def visit(self, expr: Expr, order: list[Expr] | None = None) -> Expr:
        """The rewritten `expr` (`order`: post_order(expr, self.into_functions), when the caller has it)."""
        memo = self.memo
        if id(expr) in memo:
            return memo[id(expr)]
        hooks = {kind: getattr(self, "rewrite_" + name) for kind, name in _KIND.items()}
        rebuild = self._rebuild
        for node in order if order is not None else post_order(expr, self.into_functions):
            key = id(node)
            if key not in memo:
                memo[key] = hooks[type(node)](node, rebuild(node))
        return memo[id(expr)]

    def _rebuild(self, node: Expr) -> Expr:
        """`node` reading the rewritten versions of its inputs: itself when none changed, else a new node
        (with_inputs: no type yet, a copy of node's meta)."""
        memo = self.memo
        kind = type(node)
        if kind is Call:
            op = memo.get(id(node.op), node.op) if type(node.op) is Function else node.op
            inputs = node.args
        elif kind is Tuple:
            op, inputs = None, node.fields
        elif kind is TupleGetItem:
            op, inputs = None, (node.tuple_value,)
        elif kind is Function and self.into_functions:
            return self._rebuild_function(node)
        else:
            return node
        moved = [memo[id(a)] for a in inputs]
        if all(map(operator.is_, moved, inputs)) and (op is None or op is node.op):
            return node
        out = with_inputs(node, moved)
        out.checked_type = None
        if op is not None:
            out.op = op
        return out

    def _rebuild_function(self, node: Function) -> Expr:
        memo = self.memo
        params = [memo.get(id(p), p) for p in node.params]
        body = memo[id(node.body)]
        if body is node.body and all(a is b for a, b in zip(params, node.params)):
            return node
        return carry_meta(node, Function(params, body, node.ret_type, node.attrs, node.span))

    def rewrite_var(self, original: Var, rebuilt: Expr) -> Expr:
        return rebuilt

    def rewrite_constant(self, original: Constant, rebuilt: Expr) -> Expr:
        return rebuilt

    def rewrite_global_var(self, original: GlobalVar, rebuilt: Expr) -> Expr:
        return rebuilt

    def rewrite_call(self, original: Call, rebuilt: Expr) -> Expr:
        return rebuilt

    def rewrite_tuple(self, original: Tuple, rebuilt: Expr) -> Expr:
        return rebuilt

    def rewrite_tuple_getitem(self, original: TupleGetItem, rebuilt: Expr) -> Expr:
        return rebuilt

    def rewrite_function(self, original: Function, rebuilt: Expr) -> Expr:
        return rebuilt


def rewrite(expr: Expr, fn: Callable[[Expr, Expr], Expr], into_functions: bool = True) -> Expr:
    """Functional form of ExprMutator: `fn(original, rebuilt)` is applied to every node."""

    class _Fn(ExprMutator):
        pass

    mutator = _Fn()
    mutator.into_functions = into_functions
    for kind in _KIND.values():
        setattr(mutator, "rewrite_" + kind, fn)
    return mutator.visit(expr)
