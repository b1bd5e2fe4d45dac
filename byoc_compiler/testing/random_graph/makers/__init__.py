"""Random-graph makers, one per op, registered as the op's "random_maker" attribute (op/attrs.py).

A maker takes the builder and an operand (the index of a value built so far) and appends a step of its
op whose attributes fit the operand's type (shapes that broadcast, odd sizes, 1-element and large-prime
dims), or returns None when the operand does not suit the op. The order of this table is the draw
order of `random_recipe`: a seed's graph depends on it, so a new op's maker goes at the end.
"""
from __future__ import annotations

from ....op.attrs import register_op_attr
from . import elementwise as ew, nn, qnn, shape

_MAKERS = {
    **{op: ew.binary(op) for op in ("add", "subtract", "multiply", "divide", "maximum", "minimum")},
    "negative": ew.unary("negative"), "abs": ew.unary("abs"), "nn.relu": ew.unary("nn.relu"),
    "exp": ew.unary("exp", True, "clip"), "log": ew.unary("log", True, "positive"),
    "sqrt": ew.unary("sqrt", True, "positive"), "tanh": ew.unary("tanh", True), "sigmoid": ew.unary("sigmoid", True),
    "clip": ew.clip, "nn.leaky_relu": ew.leaky_relu,
    "nn.dense": nn.dense, "nn.matmul": nn.matmul, "nn.bias_add": nn.bias_add, "nn.conv2d": nn.conv2d,
    "nn.max_pool2d": nn.pool("nn.max_pool2d"), "nn.avg_pool2d": nn.pool("nn.avg_pool2d"),
    "nn.global_avg_pool2d": nn.global_pool, "nn.batch_norm": nn.batch_norm, "nn.softmax": nn.softmax, "nn.lrn": nn.lrn,
    "nn.pad": shape.pad, "nn.dropout": nn.dropout, "reshape": shape.reshape, "transpose": shape.transpose,
    "concatenate": shape.concatenate, "squeeze": shape.squeeze, "expand_dims": shape.expand_dims,
    "nn.batch_flatten": shape.batch_flatten, "split": shape.split, "take": shape.take, "cast": ew.cast,
    **{op: ew.compare(op) for op in ("equal", "less", "greater", "less_equal", "greater_equal")},
    **{op: ew.logical(op) for op in ("logical_and", "logical_or", "logical_xor", "logical_not")},
    "where": ew.compare("less"),
    **{op: shape.reduce(op) for op in ("sum", "mean", "max", "min", "prod")},
    "argmax": shape.arg("argmax"), "argmin": shape.arg("argmin"),
    "erf": ew.float_unary("erf"), "nn.gelu": ew.float_unary("nn.gelu"),
    "nn.hard_swish": ew.float_unary("nn.hard_swish"),
    "nn.hard_sigmoid": ew.float_unary("nn.hard_sigmoid", alpha=0.2, beta=0.5), "power": ew.power,
    "strided_slice": shape.strided_slice, "tile": shape.tile, "broadcast_to": shape.broadcast_to,
    "nn.batch_matmul": nn.batch_matmul, "nn.layer_norm": nn.layer_norm, "image.resize": nn.resize,
    "qnn.quantize": qnn.quantize, "qnn.dequantize": qnn.dequantize, "qnn.requantize": qnn.requantize,
    "qnn.conv2d": qnn.qconv2d, "qnn.dense": qnn.qdense, "qnn.matmul": qnn.qmatmul, "qnn.add": qnn.qbinary("qnn.add"),
    "qnn.mul": qnn.qbinary("qnn.mul"), "qnn.concatenate": qnn.qconcatenate, "qnn.softmax": qnn.qsoftmax,
    "qnn.subtract": qnn.qbinary("qnn.subtract"), "qnn.avg_pool2d": qnn.qavg_pool,
    "qnn.mean": qnn.qreduce("qnn.mean"), "qnn.sum": qnn.qreduce("qnn.sum"), "qnn.l2_normalize": qnn.ql2_normalize,
}

for _name, _maker in _MAKERS.items():
    register_op_attr(_name, "random_maker", _maker)
