"""Structural equality and hashing of expressions, functions and modules.

Two terms are structurally equal when they compute the same thing written the
same way, whatever their object identities:

* Vars are compared by binding position: the i-th parameters of two compared
  functions correspond, and must then be used at the same places. Free vars
  must be the very same object, unless `map_free_vars=True` (then they are
  paired on first meeting, one-to-one).
* Constants: dtype, shape and raw bytes (so NaNs with equal bits are equal).
* Call attrs and function attrs: by value (floats by bits); ops by name;
  GlobalVars by name; modules: the same global names, each function equal.
* Types (parameter annotations, return types) are compared where both sides
  have one: a missing annotation is "not said", not a different type, so a
  module equals its own print -> parse round trip.
* Sharing is not structure: a value used twice compares equal to two copies of it.

The hash is consistent with equality (equal => same hash) and deterministic
across processes (blake2b, not Python's salted `hash`). Everything is
iterative; a 100,000-node chain is fine.
"""
from __future__ import annotations

import difflib
import hashlib
import struct
from typing import Any

import numpy as np

from .attrs import Attrs
from .expr import Call, Constant, Expr, Function, GlobalVar, Op, Tuple, TupleGetItem, Var
from .module import IRModule
from .show import as_text
from .types import Type
from .visitor import post_order

__all__ = ["structural_equal", "structural_hash", "assert_structural_equal"]


def canonical_attr_value(value: Any) -> Any:
    """A hashable form of an attribute value in which == means 'same value, same kind' (floats by bits)."""
    if isinstance(value, (bool, np.bool_)):
        return ("b", bool(value))
    if isinstance(value, (int, np.integer)):
        return ("i", int(value))
    if isinstance(value, (float, np.floating)):
        return ("f", struct.pack("<d", float(value)))
    if isinstance(value, (list, tuple)):
        return ("l", tuple(canonical_attr_value(v) for v in value))
    if value is None:
        return ("n",)
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, Type):
        return ("t", str(value))
    return ("o", repr(value))


def _canon_attrs(attrs: Attrs) -> tuple:
    return tuple((k, canonical_attr_value(v)) for k, v in attrs.items())


def _types_match(a: Type | None, b: Type | None) -> bool:
    return a is None or b is None or a == b


def _describe(expr: Expr) -> str:
    if isinstance(expr, Call):
        op = expr.op
        name = op.name if isinstance(op, Op) else "@" + op.name_hint if isinstance(op, GlobalVar) else "fn"
        where = f" at {expr.span}" if expr.span is not None else ""
        return f"call of {name}{where}"
    if isinstance(expr, Var):
        return f"var %{expr.name_hint}"
    if isinstance(expr, Constant):
        return f"constant {expr.data.dtype}{list(expr.data.shape)}"
    if isinstance(expr, GlobalVar):
        return f"@{expr.name_hint}"
    return type(expr).__name__


class _Comparer:
    """Walks pairs of nodes with an explicit stack; `difference` says what differed first."""

    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.var_map: dict[int, Var] = {}      # id(lhs var) -> rhs var
        self.var_map_rev: dict[int, Var] = {}  # id(rhs var) -> lhs var
        self.proven: set[tuple[int, int]] = set()
        self.difference: str | None = None

    def fail(self, a: Expr, b: Expr, what: str) -> bool:
        self.difference = f"{what}: {_describe(a)} vs {_describe(b)}"
        return False

    def bind(self, a: Var, b: Var) -> bool:
        mapped = self.var_map.get(id(a))
        if mapped is not None or id(b) in self.var_map_rev:
            if mapped is not b:
                return self.fail(a, b, "parameters bound twice differently")
            return True
        if not _types_match(a.type_annotation, b.type_annotation):
            return self.fail(a, b, f"parameter types differ ({a.type_annotation} vs {b.type_annotation})")
        self.var_map[id(a)] = b
        self.var_map_rev[id(b)] = a
        return True

    def equal(self, lhs: Expr, rhs: Expr) -> bool:
        stack: list[tuple[Expr, Expr]] = [(lhs, rhs)]
        proven = self.proven
        while stack:
            a, b = stack.pop()
            key = (id(a), id(b))
            if key in proven:
                continue
            proven.add(key)
            if type(a) is not type(b):
                return self.fail(a, b, "different kinds of node")
            for kind, check in self._CHECKS:
                if isinstance(a, kind):
                    if not check(self, a, b, stack):
                        return False
                    break
            else:
                raise TypeError(f"structural_equal: unexpected node {type(a).__name__}")
        return True

    # One check per kind of node: (a, b, stack) -> False on a difference (recorded by fail); pairs of
    # children to compare go on the stack.
    def _var(self, a: Var, b: Var, stack) -> bool:
        mapped = self.var_map.get(id(a))
        if mapped is not None:
            return mapped is b or self.fail(a, b, "different variables")
        if id(b) in self.var_map_rev:
            return self.fail(a, b, "different variables")
        if self.map_free_vars:
            return self.bind(a, b)
        return a is b or self.fail(a, b, "different free variables (pass map_free_vars=True to pair them)")

    def _constant(self, a: Constant, b: Constant, stack) -> bool:
        da, db = a.data, b.data
        if da.dtype != db.dtype or da.shape != db.shape:
            return self.fail(a, b, "constants of different type")
        return da.tobytes() == db.tobytes() or self.fail(a, b, "constants with different values")

    def _global_var(self, a: GlobalVar, b: GlobalVar, stack) -> bool:
        return a.name_hint == b.name_hint or self.fail(a, b, "different global functions")

    def _call(self, a: Call, b: Call, stack) -> bool:
        if isinstance(a.op, Function) and isinstance(b.op, Function):
            stack.append((a.op, b.op))
        elif type(a.op) is not type(b.op) or _op_key(a.op) != _op_key(b.op):
            return self.fail(a, b, "different callees")
        if len(a.args) != len(b.args):
            return self.fail(a, b, "different numbers of arguments")
        if _canon_attrs(a.attrs) != _canon_attrs(b.attrs):
            return self.fail(a, b, f"different attributes ({_attr_diff(a.attrs, b.attrs)})")
        stack.extend(zip(reversed(a.args), reversed(b.args)))
        return True

    def _tuple(self, a: Tuple, b: Tuple, stack) -> bool:
        if len(a.fields) != len(b.fields):
            return self.fail(a, b, "tuples of different lengths")
        stack.extend(zip(reversed(a.fields), reversed(b.fields)))
        return True

    def _tuple_getitem(self, a: TupleGetItem, b: TupleGetItem, stack) -> bool:
        if a.index != b.index:
            return self.fail(a, b, f"tuple indices differ ({a.index} vs {b.index})")
        stack.append((a.tuple_value, b.tuple_value))
        return True

    def _function(self, a: Function, b: Function, stack) -> bool:
        if len(a.params) != len(b.params):
            return self.fail(a, b, "functions with different numbers of parameters")
        if _canon_attrs(a.attrs) != _canon_attrs(b.attrs):
            return self.fail(a, b, f"different function attributes ({_attr_diff(a.attrs, b.attrs)})")
        if not _types_match(a.ret_type, b.ret_type):
            return self.fail(a, b, f"return types differ ({a.ret_type} vs {b.ret_type})")
        for pa, pb in zip(a.params, b.params):
            if not self.bind(pa, pb):
                return False
        stack.append((a.body, b.body))
        return True

    _CHECKS = ((Var, _var), (Constant, _constant), (GlobalVar, _global_var), (Call, _call), (Tuple, _tuple),
               (TupleGetItem, _tuple_getitem), (Function, _function))


def _op_key(op) -> str:
    return op.name if isinstance(op, Op) else op.name_hint


def _attr_diff(a: Attrs, b: Attrs) -> str:
    for key in list(a) + [k for k in b if k not in a]:
        if key not in a or key not in b or canonical_attr_value(a[key]) != canonical_attr_value(b[key]):
            return f"{key}: {a.get(key, '<absent>')!r} vs {b.get(key, '<absent>')!r}"
    return "order of attributes"


def _compare(a, b, map_free_vars: bool) -> str | None:
    """None when equal, else a description of the first difference found."""
    if isinstance(a, IRModule) or isinstance(b, IRModule):
        if not (isinstance(a, IRModule) and isinstance(b, IRModule)):
            return f"an IRModule compared with {type(b if isinstance(a, IRModule) else a).__name__}"
        if set(a.functions) != set(b.functions):
            return f"different global functions: {sorted(a.functions)} vs {sorted(b.functions)}"
        for name in a.functions:
            problem = _compare(a[name], b[name], map_free_vars)
            if problem is not None:
                return f"in @{name}: {problem}"
        return None
    comparer = _Comparer(map_free_vars)
    if comparer.equal(a, b):
        return None
    return comparer.difference


def structural_equal(a, b, map_free_vars: bool = False) -> bool:
    """Whether two Exprs / Functions / IRModules are the same up to variable renaming (see module doc)."""
    return _compare(a, b, map_free_vars) is None


def assert_structural_equal(a, b, map_free_vars: bool = False) -> None:
    """Raise AssertionError naming the first difference and showing a diff of both texts."""
    problem = _compare(a, b, map_free_vars)
    if problem is None:
        return
    lhs, rhs = as_text(a).splitlines(), as_text(b).splitlines()
    diff = list(difflib.unified_diff(lhs, rhs, "lhs", "rhs", lineterm="", n=2))
    if len(diff) > 80:
        diff = diff[:80] + [f"... ({len(diff) - 80} more diff lines)"]
    shown = "\n".join(diff) if diff else "(the texts are identical; the difference is in free variables or identity)"
    raise AssertionError(f"not structurally equal: {problem}\n{shown}")


# ---- hashing -----------------------------------------------------------------------------------

def _digest(*parts: Any) -> bytes:
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).digest()


def _hash_expr(root: Expr) -> bytes:
    # Bound vars hash as their parameter position; free vars all hash alike, which
    # keeps the hash consistent with equality whether or not free vars are mapped.
    binding: dict[int, tuple] = {}
    memo: dict[int, bytes] = {}
    for node in post_order(root, into_functions=True):
        if isinstance(node, Function):
            for i, p in enumerate(node.params):
                binding.setdefault(id(p), ("param", i))
    for node in post_order(root, into_functions=True):
        if isinstance(node, Var):
            h = _digest("var", binding.get(id(node), "free"))
        elif isinstance(node, Constant):
            data = node.data
            h = _digest("const", str(data.dtype), data.shape, hashlib.blake2b(data.tobytes(), digest_size=16).digest())
        elif isinstance(node, GlobalVar):
            h = _digest("global", node.name_hint)
        elif isinstance(node, Call):
            callee = memo[id(node.op)] if isinstance(node.op, Function) else ("op", _op_key(node.op))
            h = _digest("call", callee, _canon_attrs(node.attrs), [memo[id(a)] for a in node.args])
        elif isinstance(node, Tuple):
            h = _digest("tuple", [memo[id(f)] for f in node.fields])
        elif isinstance(node, TupleGetItem):
            h = _digest("get", node.index, memo[id(node.tuple_value)])
        elif isinstance(node, Function):
            h = _digest("fn", len(node.params), _canon_attrs(node.attrs), memo[id(node.body)])
        else:
            raise TypeError(f"structural_hash: unexpected node {type(node).__name__}")
        memo[id(node)] = h
    return memo[id(root)]


def structural_hash(obj) -> int:
    """A deterministic 64-bit hash; structurally equal objects hash alike."""
    if isinstance(obj, IRModule):
        h = _digest("module", sorted((name, _hash_expr(func)) for name, func in obj.items()))
    else:
        h = _hash_expr(obj)
    return int.from_bytes(h[:8], "little")
