"""What an importer's converters see: the node (`Node`, ONNX's) and a builder of typed, constant-folded
IR (`Context`, shared by the ONNX and TFLite importers).

Converters need static shapes (Flatten, Softmax, MatMul, Shape), so every
expression the context builds is typed on the spot with the op's own type
inference. A call whose arguments are all Constants is evaluated at once with
the op's numpy reference and becomes a Constant: shape arithmetic (Shape ->
Gather -> Concat -> Reshape) and weight preprocessing never reach the graph.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..ir.expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from ..ir.types import DTYPES, TensorType, TupleType, Type
from ..op.registry import OpError, OpTypeError, get_op_def, make_call
from ..transform.fold_constant import MAX_FOLD_BYTES, result_bytes


class NodeError(Exception):
    """Raised by a converter: the reason this node cannot be imported (collected, not fatal at once)."""


class Node:
    """One ONNX node, decoded: attributes as Python values, inputs as IR expressions (None = omitted)."""

    def __init__(self, name: str, op_type: str, opset: int, since: int, attrs: dict[str, Any],
                 inputs: Sequence[Expr | None], input_names: Sequence[str], output_names: Sequence[str]):
        self.name, self.op_type, self.opset, self.since = name, op_type, opset, since
        self.attrs = attrs
        self.inputs = list(inputs)
        self.input_names = list(input_names)
        self.output_names = list(output_names)

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, index: int) -> Expr | None:
        """The index-th input, None when omitted (absent or named "")."""
        return self.inputs[index] if index < len(self.inputs) else None

    def required(self, index: int, what: str) -> Expr:
        value = self.input(index)
        if value is None:
            raise NodeError(f"input {index} ({what}) is missing")
        return value


class Context:
    """Builds IR for converters, typing every expression and folding constant ones."""

    def __init__(self):
        self._types: dict[int, tuple[Expr, Type]] = {}
        self.names: dict[int, str] = {}   # id(Constant) -> initializer name, for messages
        self.element_types: dict[int, str] = {}   # id(Constant) -> ONNX element type byoc lacks (STRING, ...)

    # ---- types -----------------------------------------------------------------------------------

    def type_of(self, expr: Expr) -> Type:
        hit = self._types.get(id(expr))
        if hit is not None:
            return hit[1]
        if isinstance(expr, Constant):
            try:
                ty = expr.tensor_type
            except ValueError:
                name = self.names.get(id(expr))
                what = f"initializer {name!r}" if name else "a constant"
                kind = self.element_types.get(id(expr)) or str(expr.data.dtype)
                raise NodeError(f"{what} has element type {kind}, which byoc does not support "
                                f"(supported: {', '.join(DTYPES)})") from None
        elif isinstance(expr, Var):
            ty = expr.type_annotation
        elif isinstance(expr, Tuple):
            ty = TupleType(tuple(self.type_of(f) for f in expr.fields))
        elif isinstance(expr, TupleGetItem):
            ty = self.type_of(expr.tuple_value).fields[expr.index]
        elif isinstance(expr, Call):
            ty = get_op_def(expr.op.name).infer([self.type_of(a) for a in expr.args], expr.attrs)
        else:
            raise AssertionError(f"unexpected {type(expr).__name__} in an imported graph")
        self._types[id(expr)] = (expr, ty)
        return ty

    def tensor(self, expr: Expr) -> TensorType:
        ty = self.type_of(expr)
        if not isinstance(ty, TensorType):
            raise NodeError(f"expected a tensor, found a tuple {ty}")
        return ty

    def shape(self, expr: Expr) -> tuple[int, ...]:
        return self.tensor(expr).shape

    def dtype(self, expr: Expr) -> str:
        if isinstance(expr, Constant):
            return str(expr.data.dtype)
        return self.tensor(expr).dtype

    # ---- constants -------------------------------------------------------------------------------

    @staticmethod
    def value(expr: Expr | None) -> np.ndarray | None:
        """The array of a constant expression, None for a run-time value."""
        return expr.data if isinstance(expr, Constant) else None

    def constant_input(self, node: Node, index: int, what: str) -> np.ndarray | None:
        """The value of an input that must be known at import time (a shape, pads, axes); None if omitted."""
        expr = node.input(index)
        if expr is None:
            return None
        data = self.value(expr)
        if data is None:
            raise NodeError(f"input {index} ({what}, {node.input_names[index]!r}) must be computable at import "
                            "time (from initializers, Constant nodes or static shapes), but it depends on a "
                            "model input")
        return data

    @staticmethod
    def const(value: Any, dtype: str | None = None) -> Constant:
        return Constant(np.asarray(value, dtype=dtype))

    # ---- building --------------------------------------------------------------------------------

    def call(self, op_name: str, *args: Any, **attrs: Any) -> Expr:
        """`op_name(args, attrs)`, typed; a Constant (or Tuple of Constants) when every argument is constant."""
        try:
            call = make_call(op_name, *args, **attrs)
        except OpError as exc:
            raise NodeError(str(exc)) from None
        leaves = call.args[0].fields if get_op_def(op_name).tuple_input else call.args
        if all(isinstance(a, Constant) for a in leaves):
            return self._fold(call)
        try:
            self.type_of(call)
        except (OpTypeError, ValueError) as exc:
            raise NodeError(str(exc)) from None
        return call

    def call_unfolded(self, op_name: str, *args: Any, **attrs: Any) -> Expr:
        """Like `call`, but never folded: qnn.dequantize of a constant weight stays a call, so that the
        QDQ pass (transform/qdq_to_integer.py) still sees the integer weight."""
        try:
            call = make_call(op_name, *args, **attrs)
            self.type_of(call)
        except (OpError, OpTypeError, ValueError) as exc:
            raise NodeError(str(exc)) from None
        return call

    def item(self, expr: Expr, index: int) -> Expr:
        if isinstance(expr, Tuple):
            return expr.fields[index]
        item = TupleGetItem(expr, index)
        self.type_of(item)
        return item

    def _fold(self, call: Call) -> Expr:
        opdef = get_op_def(call.op.name)
        try:
            ty = self.type_of(call)
        except (OpTypeError, ValueError) as exc:
            raise NodeError(str(exc)) from None
        if result_bytes(ty) > MAX_FOLD_BYTES:
            return call  # too big to hold as a constant: computed at run time instead
        if opdef.tuple_input:
            args = [tuple(np.asarray(f.data) for f in call.args[0].fields)]
        else:
            args = [a.data for a in call.args]
        try:
            with np.errstate(all="ignore"):
                result = opdef.ref(args, call.attrs)
        except Exception as exc:  # noqa: BLE001 - numpy's message says what did not fit
            raise NodeError(f"folding {call.op.name} on constants failed: {exc}") from None
        try:
            ty = self.type_of(call)   # references may compute wider: keep the inferred dtype
        except (OpTypeError, ValueError) as exc:
            raise NodeError(str(exc)) from None
        if isinstance(result, tuple):
            return Tuple([Constant(np.asarray(r).astype(t.dtype, copy=False)) for r, t in zip(result, ty.fields)])
        return Constant(np.asarray(result).astype(ty.dtype, copy=False))
