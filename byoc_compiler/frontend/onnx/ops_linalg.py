"""Gemm and MatMul, mapped onto nn.dense (x . w^T, any leading dims) and 2-D nn.matmul.

nn.dense is what targets pattern-match (dense + bias_add), so a constant right-hand
side is transposed at import (folded) and becomes a dense weight.
"""
from __future__ import annotations

import numpy as np

from .context import Context, Node, NodeError
from .table import converter


def _broadcast(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(lhs, rhs))
    except ValueError:
        raise NodeError(f"batch dimensions {lhs} and {rhs} do not broadcast") from None


# ---- Gemm: Y = alpha * A' B' + beta * C -----------------------------------------------------------

# 7 and 9 require C (unidirectionally broadcast to [M, N]); 11 makes it optional; 13 adds types.
@converter("Gemm", (7, 9, 11, 13))
def _gemm(node: Node, ctx: Context):
    a, b, c = node.required(0, "A"), node.required(1, "B"), node.input(2)
    for name, value in (("A", a), ("B", b)):
        if len(ctx.shape(value)) != 2:
            raise NodeError(f"input {name} must be 2-D, got shape {ctx.shape(value)}")
    trans_a, trans_b = bool(node.attr("transA", 0)), bool(node.attr("transB", 0))
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    if alpha != 1.0 and ctx.value(b) is not None:
        b, alpha = ctx.call("multiply", b, ctx.const(alpha, ctx.dtype(b))), 1.0
    if not trans_a and (trans_b or ctx.value(b) is not None):
        weight = b if trans_b else ctx.call("transpose", b, axes=(1, 0))
        out = ctx.call("nn.dense", a, weight)
    else:
        out = ctx.call("nn.matmul", a, b, transpose_a=trans_a, transpose_b=trans_b)
    if alpha != 1.0:
        out = ctx.call("multiply", out, ctx.const(alpha, ctx.dtype(out)))
    if c is None or beta == 0.0:
        return [out]
    if beta != 1.0:
        c = ctx.call("multiply", c, ctx.const(beta, ctx.dtype(c)))
    n = ctx.shape(out)[1]
    if ctx.shape(c) == (n,):
        return [ctx.call("nn.bias_add", out, c, axis=1)]
    return [ctx.call("add", out, c)]


# ---- MatMul: numpy matmul semantics ---------------------------------------------------------------

@converter("MatMul", (1, 9, 13))
def _matmul(node: Node, ctx: Context):
    a, b = node.required(0, "A"), node.required(1, "B")
    a_shape, b_shape = ctx.shape(a), ctx.shape(b)
    if not a_shape or not b_shape:
        raise NodeError("MatMul inputs must have at least 1 dimension")
    # 1-D operands are promoted to matrices and the added dimension removed at the end.
    out_shape = _matmul_shape(a_shape, b_shape)
    if len(a_shape) == 1:
        a, a_shape = ctx.call("reshape", a, newshape=(1, a_shape[0])), (1, a_shape[0])
    if len(b_shape) == 1:
        b, b_shape = ctx.call("reshape", b, newshape=(b_shape[0], 1)), (b_shape[0], 1)
    if a_shape[-1] != b_shape[-2]:
        raise NodeError(f"inner dimensions differ: A {a_shape}, B {b_shape}")
    if len(b_shape) == 2:
        # [..., M, K] x [K, N] is a dense layer with weight B^T.
        out = ctx.call("nn.dense", a, ctx.call("transpose", b, axes=(1, 0)))
    else:
        out = _batched(ctx, a, a_shape, b, b_shape)
    if ctx.shape(out) != out_shape:
        out = ctx.call("reshape", out, newshape=out_shape)
    return [out]


def _matmul_shape(a_shape, b_shape) -> tuple[int, ...]:
    a2 = (1,) + a_shape if len(a_shape) == 1 else a_shape
    b2 = b_shape + (1,) if len(b_shape) == 1 else b_shape
    batch = _broadcast(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a_shape) == 1:
        out = out[:-2] + out[-1:]
    if len(b_shape) == 1:
        out = out[:-1]
    return out


def _batched(ctx: Context, a, a_shape, b, b_shape):
    """Broadcast batch dims: one nn.batch_matmul (a 2-D right operand went to nn.dense above)."""
    return ctx.call("nn.batch_matmul", a, b)
