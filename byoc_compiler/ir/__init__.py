"""The dataflow IR: expressions, types, modules, traversal, printing (parsing is byoc_compiler.text)."""
from .attrs import Attrs
from .expr import Call, Constant, Expr, Function, GlobalVar, Op, Span, Tuple, TupleGetItem, Var, const
from .module import IRModule
from .types import DTYPES, TensorType, TupleType, Type, flatten_type
from .visitor import ExprMutator, ExprVisitor, post_order, rewrite
from .analysis import free_vars, op_counts, users


def __getattr__(name):
    # Printing and structural comparison live in their own modules; load them on first use.
    # (Parsing needs the op registry, a layer above: byoc_compiler.text.)
    if name == "astext":
        from .printer import astext
        return astext
    if name in ("structural_equal", "structural_hash", "assert_structural_equal"):
        from . import structural
        return getattr(structural, name)
    raise AttributeError(f"module 'byoc_compiler.ir' has no attribute {name!r}")
