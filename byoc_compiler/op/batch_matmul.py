"""nn.batch_matmul: matrix products over broadcast batch dimensions (numpy's matmul on >= 2-D operands).

a [..., M, K] x b [..., K, N] -> [batch, M, N], where batch is the numpy broadcast of both
operands' leading dimensions; transpose_a / transpose_b swap an operand's last two axes.
The reference accumulates in float64 and rounds once.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call
from .registry import Attr, OpTypeError, make_call, register
from .typecheck import shape_text, same_dtype, tensor_arg, tensor_type

FLOAT = ("float32", "float64")

__all__ = ["batch_matmul"]


def matmul_dims(a_shape, b_shape, transpose_a: bool, transpose_b: bool):
    """(batch, M, K, N) of a batch_matmul, or ValueError naming the mismatch."""
    m, k = (a_shape[-1], a_shape[-2]) if transpose_a else (a_shape[-2], a_shape[-1])
    kb, n = (b_shape[-1], b_shape[-2]) if transpose_b else (b_shape[-2], b_shape[-1])
    if k != kb:
        raise ValueError(f"inner dimensions differ (K = {k} from tensor_a, {kb} from tensor_b)")
    try:
        batch = tuple(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    except ValueError:
        raise ValueError(f"batch dimensions {shape_text(a_shape[:-2])} and {shape_text(b_shape[:-2])} "
                         "do not broadcast") from None
    return batch, m, k, n


def _infer(types, attrs):
    a = tensor_arg("nn.batch_matmul", "tensor_a", types[0], FLOAT)
    b = tensor_arg("nn.batch_matmul", "tensor_b", types[1], FLOAT)
    same_dtype("nn.batch_matmul", "tensor_b", a, b)
    for name, t in (("tensor_a", a), ("tensor_b", b)):
        if t.ndim < 2:
            raise OpTypeError("nn.batch_matmul", name, "a tensor of at least 2 dimensions",
                              f"shape {shape_text(t.shape)}")
    try:
        batch, m, _, n = matmul_dims(a.shape, b.shape, attrs.transpose_a, attrs.transpose_b)
    except ValueError as exc:
        raise OpTypeError("nn.batch_matmul", "tensor_b", "a shape that fits tensor_a",
                          f"shape {shape_text(b.shape)} ({exc})") from None
    return tensor_type(batch + (m, n), a.dtype)


def _ref(args, attrs):
    a, b = (x.astype(np.float64) for x in args)
    if attrs.transpose_a:
        a = np.swapaxes(a, -1, -2)
    if attrs.transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b).astype(args[0].dtype)


register("nn.batch_matmul", ("tensor_a", "tensor_b"),
         (Attr("transpose_a", "bool", False), Attr("transpose_b", "bool", False)),
         infer=_infer, ref=_ref, family="nn", doc="[..., M, K] x [..., K, N] with broadcast batch dims")


def batch_matmul(tensor_a, tensor_b, transpose_a=False, transpose_b=False) -> Call:
    return make_call("nn.batch_matmul", tensor_a, tensor_b, transpose_a=transpose_a, transpose_b=transpose_b)
