"""Imported values and their layout: TFLite is NHWC, byoc's conv and pool ops are NCHW.

A 4-D activation enters NCHW at the first op that needs it (one transpose after a model input) and
stays NCHW through every op that can follow it there (elementwise ops, concatenation and reductions
with remapped axes, padding, the next conv): only the model's inputs and outputs, and the rare op
with no NCHW form, see a transpose. A flatten of an NCHW value before a fully connected layer keeps
NCHW order ("flat_nchw"); the layer permutes its constant weight columns to match instead.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir.expr import Constant, Expr
from ..graph_context import Context, NodeError
from .reader import ModelInfo, OpInfo, Quant, TensorInfo

TO_NCHW = (0, 3, 1, 2)
TO_NHWC = (0, 2, 3, 1)
NHWC_AXIS_IN_NCHW = (0, 2, 3, 1)   # TFLite axis a of a 4-D tensor is NCHW axis NHWC_AXIS_IN_NCHW[a]


@dataclass(frozen=True)
class Value:
    expr: Expr
    layout: str = "plain"          # "plain", "nchw" or "flat_nchw"
    nhwc: tuple[int, ...] = ()     # flat_nchw: the (N, H, W, C) shape that was flattened


class Converting:
    """What converters use: tensors and their quantization, values in the layout an op wants, typed calls."""

    def __init__(self, model: ModelInfo):
        self.model = model
        self.g = Context()
        self.values: dict[int, Value] = {}

    # ---- tensors ---------------------------------------------------------------------------------

    def info(self, index: int) -> TensorInfo:
        return self.model.tensors[index]

    def quant(self, index: int, what: str) -> Quant:
        q = self.info(index).quant
        if q is None:
            raise NodeError(f"{what} tensor {self.info(index).name!r} ({self.info(index).type_name}) has no "
                            "quantization parameters")
        return q

    def const(self, op: OpInfo, position: int, what: str) -> np.ndarray:
        """The data of a constant input (weights, shapes, axes)."""
        index = op.inputs[position] if position < len(op.inputs) else -1
        if index < 0:
            raise NodeError(f"input {position} ({what}) is missing")
        data = self.info(index).data
        if data is None:
            raise NodeError(f"input {position} ({what}, tensor {self.info(index).name!r}) must be a constant")
        return data

    def has_input(self, op: OpInfo, position: int) -> bool:
        return position < len(op.inputs) and op.inputs[position] >= 0

    def value(self, op: OpInfo, position: int) -> Value:
        index = op.inputs[position] if position < len(op.inputs) else -1
        if index < 0:
            raise NodeError(f"input {position} is missing")
        if index in self.values:
            return self.values[index]
        data = self.info(index).data
        if data is None:
            raise NodeError(f"input {position} (tensor {self.info(index).name!r}) is read before any operator "
                            "writes it")
        return Value(Constant(data))

    # ---- layouts ---------------------------------------------------------------------------------

    def plain(self, v: Value) -> Expr:
        """The value in TFLite's own layout."""
        if v.layout == "nchw":
            return self.g.call("transpose", v.expr, axes=TO_NHWC)
        if v.layout == "flat_nchw":
            n, h, w, c = v.nhwc
            x = self.g.call("reshape", v.expr, newshape=(n, c, h, w))
            x = self.g.call("transpose", x, axes=TO_NHWC)
            return self.g.call("reshape", x, newshape=(n, h * w * c))
        return v.expr

    def nchw(self, v: Value) -> Expr:
        """A 4-D value in NCHW."""
        if v.layout == "nchw":
            return v.expr
        x = self.plain(v)
        if len(self.g.shape(x)) != 4:
            raise NodeError(f"expected a 4-D (NHWC) tensor, found shape {list(self.g.shape(x))}")
        return self.g.call("transpose", x, axes=TO_NCHW)

    def like(self, values: list[Value]) -> tuple[list[Expr], str]:
        """Operands of an elementwise op in one layout: NCHW if any is NCHW and all can follow, else plain."""
        if any(v.layout == "nchw" for v in values):
            ranks = [len(self.g.shape(v.expr)) for v in values]
            if all(v.layout == "nchw" or isinstance(v.expr, Constant) or r == 4 for v, r in zip(values, ranks)):
                return [self._to_nchw_broadcast(v) for v in values], "nchw"
        return [self.plain(v) for v in values], "plain"

    def _to_nchw_broadcast(self, v: Value) -> Expr:
        if v.layout == "nchw":
            return v.expr
        if isinstance(v.expr, Constant):     # broadcast to rank 4 the NHWC way, then permute: folded
            data = v.expr.data
            data = data.reshape((1,) * (4 - data.ndim) + data.shape)
            return Constant(np.ascontiguousarray(data.transpose(TO_NCHW)))
        return self.nchw(v)

    def call(self, op_name: str, *args, **attrs) -> Expr:
        return self.g.call(op_name, *args, **attrs)

    def shape(self, expr: Expr) -> tuple[int, ...]:
        return self.g.shape(expr)

    def dtype(self, expr: Expr) -> str:
        return self.g.dtype(expr)
