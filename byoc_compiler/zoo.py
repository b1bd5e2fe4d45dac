"""A few small models with fixed-seed float32 weights, for examples, tests and builds.

`get(name)` returns a fresh, type-checked IRModule (weights are Constants,
inputs are parameters of main); `inputs(name, seed)` gives deterministic inputs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import op
from .ir.expr import Constant, Expr, Function, Tuple, TupleGetItem, Var
from .ir.module import IRModule
from .ir.types import TensorType


class _Weights:
    """Deterministic float32 constants, drawn in the order a model asks for them."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def normal(self, shape, scale: float = 1.0) -> Constant:
        return Constant((self.rng.standard_normal(shape) * scale).astype(np.float32))

    def uniform(self, shape, low: float, high: float) -> Constant:
        return Constant(self.rng.uniform(low, high, shape).astype(np.float32))

    def conv(self, out_channels: int, in_channels: int, k: int) -> Constant:
        return self.normal((out_channels, in_channels, k, k), 1.0 / np.sqrt(in_channels * k * k))

    def dense(self, units: int, k: int) -> Constant:
        return self.normal((units, k), 1.0 / np.sqrt(k))

    def batch_norm(self, x: Expr, channels: int) -> Expr:
        bn = op.nn.batch_norm(x, self.uniform((channels,), 0.5, 1.5), self.normal((channels,), 0.1),
                              self.normal((channels,), 0.1), self.uniform((channels,), 0.5, 1.5))
        return TupleGetItem(bn, 0)


def _var(name: str, shape) -> Var:
    return Var(name, TensorType(tuple(shape), "float32"))


def byoc_guide() -> Function:
    """The TVM BYOC guide's example: (a + b - c) * d on four 10x10 inputs."""
    a, b, c, d = (_var(n, (10, 10)) for n in "abcd")
    return Function([a, b, c, d], op.multiply(op.subtract(op.add(a, b), c), d))


def mlp() -> Function:
    w = _Weights(1)
    x = _var("x", (1, 32))
    h = x
    sizes = [32, 64, 32, 10]
    for i, (k, units) in enumerate(zip(sizes, sizes[1:])):
        h = op.nn.bias_add(op.nn.dense(h, w.dense(units, k)), w.normal((units,), 0.1))
        h = op.nn.relu(h) if i < len(sizes) - 2 else op.nn.softmax(h)
    return Function([x], h)


def _conv_bn_relu(w: _Weights, x: Expr, in_channels: int, out_channels: int) -> Expr:
    y = op.nn.conv2d(x, w.conv(out_channels, in_channels, 3), padding=(1, 1), channels=out_channels,
                     kernel_size=(3, 3))
    return op.nn.relu(w.batch_norm(y, out_channels))


def small_cnn() -> Function:
    w = _Weights(2)
    x = _var("data", (1, 3, 16, 16))
    h = op.nn.max_pool2d(_conv_bn_relu(w, x, 3, 8), pool_size=(2, 2), strides=(2, 2))
    h = op.nn.max_pool2d(_conv_bn_relu(w, h, 8, 16), pool_size=(2, 2), strides=(2, 2))
    h = op.nn.batch_flatten(h)
    h = op.nn.bias_add(op.nn.dense(h, w.dense(10, 16 * 4 * 4)), w.normal((10,), 0.1))
    return Function([x], op.nn.softmax(h))


def residual_block() -> Function:
    w = _Weights(3)
    x = _var("data", (1, 8, 8, 8))
    h = _conv_bn_relu(w, x, 8, 8)
    h = w.batch_norm(op.nn.conv2d(h, w.conv(8, 8, 3), padding=(1, 1)), 8)
    return Function([x], op.nn.relu(op.add(h, x)))


def multi_output() -> Function:
    """One input feeding three branches; lrn, concatenate and split exercise the host fallback."""
    w = _Weights(4)
    x = _var("data", (1, 4, 8, 8))
    conv = op.nn.relu(op.nn.conv2d(x, w.conv(4, 4, 3), padding=(1, 1)))
    norm = op.nn.lrn(x, size=3)
    halves = op.split(op.concatenate([conv, norm], axis=1), 2, axis=1)
    mixed = op.add(TupleGetItem(halves, 0), TupleGetItem(halves, 1))
    pooled = op.nn.max_pool2d(conv, pool_size=(2, 2), strides=(2, 2))
    return Function([x], Tuple([pooled, op.tanh(norm), mixed]))


_MODELS: dict[str, Callable[[], Function]] = {
    "byoc_guide": byoc_guide,
    "mlp": mlp,
    "small_cnn": small_cnn,
    "residual_block": residual_block,
    "multi_output": multi_output,
}


def names() -> list[str]:
    return list(_MODELS)


def _builder(name: str) -> Callable[[], Function]:
    try:
        return _MODELS[name]
    except KeyError:
        raise ValueError(f"unknown zoo model {name!r}; the zoo has: {', '.join(_MODELS)}") from None


def get(name: str) -> IRModule:
    """A fresh, type-checked module of zoo model `name`."""
    from .transform.infer_type import infer_type

    return infer_type(IRModule({"main": _builder(name)()}))


def inputs(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic standard-normal inputs for every parameter of the model's main."""
    rng = np.random.default_rng(seed)
    out = {}
    for param in _builder(name)().params:
        ty = param.type_annotation
        out[param.name_hint] = rng.standard_normal(ty.shape).astype(ty.dtype)
    return out
