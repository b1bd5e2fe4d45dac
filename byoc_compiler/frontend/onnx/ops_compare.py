"""Comparisons, logical ops and Where. Definitions 7+ broadcast numpy-style (1 had a `broadcast`
attribute and is reached by upgrading); later definitions only add types."""
from __future__ import annotations

from .context import Context, Node, NodeError
from .table import converter

_COMPARE = {
    "Equal": ("equal", (7, 11, 13, 19)),
    "Less": ("less", (7, 9, 13)),
    "Greater": ("greater", (7, 9, 13)),
    "LessOrEqual": ("less_equal", (12, 16)),
    "GreaterOrEqual": ("greater_equal", (12, 16)),
    "And": ("logical_and", (7,)),
    "Or": ("logical_or", (7,)),
    "Xor": ("logical_xor", (7,)),
}


def _compare(ir_op: str):
    def convert(node: Node, ctx: Context):
        a, b = node.required(0, "A"), node.required(1, "B")
        if ctx.dtype(a) != ctx.dtype(b):
            raise NodeError(f"inputs have different dtypes ({ctx.dtype(a)}, {ctx.dtype(b)})")
        return [ctx.call(ir_op, a, b)]
    return convert


for _onnx, (_ir, _versions) in _COMPARE.items():
    converter(_onnx, _versions)(_compare(_ir))


@converter("Not", (1,))
def _not(node: Node, ctx: Context):
    return [ctx.call("logical_not", node.required(0, "X"))]


@converter("Where", (9, 16))
def _where(node: Node, ctx: Context):
    cond, x, y = node.required(0, "condition"), node.required(1, "X"), node.required(2, "Y")
    return [ctx.call("where", cond, x, y)]
