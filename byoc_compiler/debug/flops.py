"""Floating-point operations of one call, for the profile's GFLOP/s: each op's "flops" attribute.

Counted are the multiply-adds (x 2) of the float ops that are sums of products; every other op counts 0
(data movement, elementwise and normalizing ops, and the integer qnn ops: GFLOP/s says how well a
multiply-add kernel runs, not how busy a copy was). Registered here, read through op/attrs.py.
"""
from __future__ import annotations

from ..ir.expr import Op
from ..op.attrs import get_op_attr, register_op_attr


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _conv2d(call) -> int:
    w = call.args[1].checked_type.shape            # OIHW: O, I/groups, KH, KW
    return 2 * _prod(call.checked_type.shape) * w[1] * w[2] * w[3]


def _dense(call) -> int:
    return 2 * _prod(call.checked_type.shape) * call.args[0].checked_type.shape[-1]


def _matmul(call) -> int:
    a = call.args[0].checked_type.shape
    k = a[0] if call.attrs.get("transpose_a") else a[-1]
    return 2 * _prod(call.checked_type.shape) * k


def _batch_matmul(call) -> int:
    a = call.args[0].checked_type.shape              # (batch, M, K), or (batch, K, M) with transpose_a
    k = a[-2] if call.attrs.get("transpose_a") else a[-1]
    return 2 * _prod(call.checked_type.shape) * k


def _none(call) -> int:
    return 0


MULTIPLY_ADDS = {"nn.conv2d": _conv2d, "nn.dense": _dense, "nn.matmul": _matmul, "nn.batch_matmul": _batch_matmul}
NO_MULTIPLY_ADDS = (
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "negative", "abs", "exp", "log", "sqrt",
    "tanh", "sigmoid", "nn.relu", "erf", "nn.hard_swish", "clip", "nn.leaky_relu", "nn.hard_sigmoid", "nn.gelu",
    "cast", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "reshape", "transpose", "concatenate",
    "split", "squeeze", "expand_dims", "nn.batch_flatten", "take", "nn.pad", "nn.dropout", "equal", "less",
    "greater", "less_equal", "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "where",
    "sum", "mean", "max", "min", "prod", "argmax", "argmin", "strided_slice", "tile", "broadcast_to",
    "image.resize", "nn.layer_norm", "nn.bias_add", "nn.batch_norm", "nn.softmax", "nn.lrn",
    "qnn.quantize", "qnn.dequantize", "qnn.requantize", "qnn.conv2d", "qnn.dense", "qnn.matmul", "qnn.add",
    "qnn.mul", "qnn.concatenate", "qnn.avg_pool2d", "qnn.softmax", "qnn.subtract", "qnn.mean", "qnn.sum",
    "qnn.l2_normalize")

for _name, _count in {**MULTIPLY_ADDS, **dict.fromkeys(NO_MULTIPLY_ADDS, _none)}.items():
    register_op_attr(_name, "flops", _count)


def call_flops(call) -> int:
    """Floating-point operations of one typed call of an op (0 for a call of a function, or of an op whose
    count is not registered)."""
    if not isinstance(call.op, Op):
        return 0
    return get_op_attr(call.op.name, "flops", _none)(call)
