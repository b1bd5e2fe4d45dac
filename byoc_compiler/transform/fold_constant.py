"""FoldConstant: evaluate at compile time every op call whose inputs are all constants.

Uses each op's numpy reference from the registry, so folding computes exactly
what the reference interpreter would. A TupleGetItem of a Tuple becomes the
field. Functions with a `Compiler` attr (already handed to a target) and
composite functions are left alone: their shape belongs to the target.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Constant, Expr, Function, Op, Tuple, TupleGetItem, carry_meta
from ..ir.module import IRModule
from ..ir.types import TensorType, TupleType
from ..ir.visitor import ExprMutator, graph_order
from ..op.registry import get_op_def
from .named_pass import NamedPass, rewrite_bodies


# A result larger than this stays a call and is computed at run time: folding it would put that many bytes
# in the compiler's memory and in the params blob (a constant padded to gigabytes is a typo, not a model).
MAX_FOLD_BYTES = 1 << 28


def result_bytes(ty) -> int:
    """Bytes of a (tuple of) tensor type(s); 0 when the type is unknown."""
    if isinstance(ty, TensorType):
        return ty.nbytes
    if isinstance(ty, TupleType):
        return sum(result_bytes(f) for f in ty.fields)
    return 0


def _constant_value(expr: Expr):
    """The numpy value of a constant expression (a Constant, or a Tuple of them), else None."""
    if isinstance(expr, Constant):
        return expr.data
    if isinstance(expr, Tuple) and all(isinstance(f, Constant) for f in expr.fields):
        return [f.data for f in expr.fields]
    return None


def _as_constant(value, ty) -> Expr:
    if isinstance(value, (tuple, list)):
        fields = [_as_constant(v, t) for v, t in
                  zip(value, ty.fields if isinstance(ty, TupleType) else [None] * len(value))]
        out = Tuple(fields)
        out.checked_type = TupleType([f.checked_type for f in fields])
        return out
    data = np.asarray(value)
    if isinstance(ty, TensorType):
        data = data.astype(ty.dtype, copy=False).reshape(ty.shape)
    const = Constant(data)
    const.checked_type = const.tensor_type
    return const


class _Folder(ExprMutator):
    into_functions = False  # composite bodies are patterns of a target: keep them as matched

    def rewrite_call(self, original: Call, rebuilt: Expr) -> Expr:
        if not isinstance(rebuilt, Call) or not isinstance(rebuilt.op, Op):
            return rebuilt
        values = [_constant_value(a) for a in rebuilt.args]
        if not rebuilt.args or any(v is None for v in values):
            return rebuilt
        if result_bytes(original.checked_type) > MAX_FOLD_BYTES:
            return rebuilt
        opdef = get_op_def(rebuilt.op.name)
        result = opdef.ref(values, rebuilt.attrs)
        return carry_meta(original, _as_constant(result, original.checked_type))

    def rewrite_tuple_getitem(self, original: TupleGetItem, rebuilt: Expr) -> Expr:
        if isinstance(rebuilt, TupleGetItem) and isinstance(rebuilt.tuple_value, Tuple):
            return rebuilt.tuple_value.fields[rebuilt.index]
        return rebuilt

    def rewrite_tuple(self, original: Tuple, rebuilt: Expr) -> Expr:
        if rebuilt is not original and original.checked_type is not None:
            rebuilt.checked_type = original.checked_type
        return rebuilt


def _has_work(func: Function) -> bool:
    """Whether anything in `func` folds (a quick look first: most graphs have nothing to fold)."""
    for node in graph_order(func.body):
        if type(node) is Call and node.args and type(node.args[0]) not in (Constant, Tuple):
            continue                # (most calls: the first argument is not a constant, nothing more to ask)
        if isinstance(node, Call) and isinstance(node.op, Op) and node.args and \
                all(_constant_value(a) is not None for a in node.args) and \
                result_bytes(node.checked_type) <= MAX_FOLD_BYTES:
            return True
        if isinstance(node, TupleGetItem) and isinstance(node.tuple_value, Tuple):
            return True
    return False


def fold_constant(mod: IRModule) -> IRModule:
    return rewrite_bodies(mod, lambda func: _Folder().visit(func.body) if _has_work(func) else None)


def FoldConstant() -> NamedPass:  # noqa: N802 - TVM's spelling
    return NamedPass("FoldConstant", fold_constant)
