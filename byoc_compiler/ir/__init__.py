"""The dataflow IR: expressions, types, modules, traversal, printing (parsing is byoc_compiler.text)."""
from .attrs import Attrs
from .expr import Call, Constant, Expr, Function, GlobalVar, Op, Span, Tuple, TupleGetItem, Var, carry_meta, const
from .module import IRModule
from .types import DTYPES, TensorType, TupleType, Type, flatten_type
from .visitor import ExprMutator, ExprVisitor, post_order, rewrite
from .analysis import free_vars, op_counts, users
from .printer import astext
from .structural import assert_structural_equal, structural_equal, structural_hash
