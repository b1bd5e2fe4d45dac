"""A small ONNX graph builder for the zoo's real-size models, with seeded weights and sane activations.

Real-size models are built as ONNX graphs (onnx.helper) so that one definition is both what byoc
imports (`zoo.get`) and what onnxruntime runs as the peer (`zoo.onnx_model`). Weights are random but
scaled so float32 outputs mean something: every conv has He-normal weights (std sqrt(2 / fan_in)), and
every BatchNormalization's running statistics are the variance the conv's output is expected to have
(tracked analytically, see `Tensor`), so each BN output is close to N(beta, gamma^2) however deep
the net is — the same role a trained network's statistics play. The estimates are computed from the
architecture alone, not by running it, so the weights are the same bits on every machine. Without that, activations of a random
50-layer net grow or vanish geometrically and a float32 comparison tests nothing.

A model module (resnet.py, mobilenet.py, ...) writes nodes with these helpers and returns
`builder.model(...)`; add a new architecture next to them and a row in zoo's ONNX_MODELS.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import erf, exp, pi, sqrt

import numpy as np

OPSET = 13


@dataclass(frozen=True)
class Tensor:
    """A value of the graph being built: its ONNX name, NCHW shape, and the mean and variance its
    elements are expected to have (over weights and inputs), modelled as a Gaussian."""
    name: str
    shape: tuple[int, ...]
    mean: float
    var: float

    @property
    def second_moment(self) -> float:
        return self.mean ** 2 + self.var


def _rectified(mean: float, var: float) -> tuple[float, float]:
    """Mean and variance of max(X, 0) for X ~ N(mean, var): the rectified Gaussian."""
    std = sqrt(max(var, 1e-30))
    z = mean / std
    cdf, pdf = 0.5 * (1.0 + erf(z / sqrt(2.0))), exp(-0.5 * z * z) / sqrt(2.0 * pi)
    m1 = mean * cdf + std * pdf
    m2 = (mean ** 2 + var) * cdf + mean * std * pdf
    return m1, max(m2 - m1 ** 2, 0.0)


class GraphBuilder:
    """Collects nodes and initializers; weights are drawn from one seeded generator in build order."""

    def __init__(self, name: str, seed: int):
        from onnx import helper  # the zoo's ONNX models need the onnx package; the small models do not

        self._helper = helper
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.initializers: dict[str, np.ndarray] = {}
        self.inputs: list[Tensor] = []
        self._count: dict[str, int] = {}

    # ---- names and weights ------------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self._count[prefix] = self._count.get(prefix, 0) + 1
        return f"{prefix}{self._count[prefix]}"

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers[name] = np.ascontiguousarray(value)
        return name

    def _normal(self, shape, std: float) -> np.ndarray:
        return (self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)

    def input(self, name: str, shape) -> Tensor:
        # zoo.inputs and the check feed standard-normal or uniform(-1, 1) values: variance <= 1.
        t = Tensor(name, tuple(shape), 0.0, 1.0)
        self.inputs.append(t)
        return t

    def _node(self, op_type: str, inputs, prefix: str, **attrs) -> str:
        out = self.fresh(prefix)
        self.nodes.append(self._helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    # ---- layers -----------------------------------------------------------------------------------

    def conv(self, x: Tensor, channels: int, kernel: int, stride: int = 1, groups: int = 1,
             bias: bool = False) -> Tensor:
        """Conv with 'same'-style padding kernel // 2 and He-normal weights."""
        n, c, h, w = x.shape
        fan_in = (c // groups) * kernel * kernel
        weight = self.constant(self.fresh("conv_w"), self._normal((channels, c // groups, kernel, kernel),
                                                                   np.sqrt(2.0 / fan_in)))
        args = [x.name, weight]
        if bias:
            args.append(self.constant(self.fresh("conv_b"), self._normal((channels,), 0.1)))
        pad = kernel // 2
        out = self._node("Conv", args, "conv", kernel_shape=[kernel, kernel], strides=[stride, stride],
                         pads=[pad] * 4, group=groups)
        size = lambda d: (d + 2 * pad - kernel) // stride + 1  # noqa: E731
        # Over the zero-mean weights: E[y] = 0 and Var(y) = fan_in * (2 / fan_in) * E[x^2].
        return Tensor(out, (n, channels, size(h), size(w)), 0.0, 2.0 * x.second_moment)

    def batch_norm(self, x: Tensor, gamma: tuple[float, float] = (0.8, 1.2)) -> Tensor:
        """Inference BN whose running statistics match x's expected distribution (within noise);
        gamma uniform in `gamma`, beta ~N(0, 0.1^2)."""
        c = x.shape[1]
        std = np.sqrt(x.var)
        scale = self.rng.uniform(*gamma, c).astype(np.float32)
        shift = self._normal((c,), 0.1)
        mean = (x.mean + self._normal((c,), 0.05 * std)).astype(np.float32)
        var = (x.var * self.rng.uniform(0.8, 1.25, c)).astype(np.float32)
        names = [self.constant(self.fresh(p), v) for p, v in
                 (("bn_gamma", scale), ("bn_beta", shift), ("bn_mean", mean), ("bn_var", var))]
        out = self._node("BatchNormalization", [x.name, *names], "bn", epsilon=1e-5)
        return Tensor(out, x.shape, 0.0, float(np.mean(scale ** 2 + shift ** 2)))

    def relu(self, x: Tensor) -> Tensor:
        return Tensor(self._node("Relu", [x.name], "relu"), x.shape, *_rectified(x.mean, x.var))

    def relu6(self, x: Tensor) -> Tensor:
        """Clip to [0, 6]; activations here are of order 1, so the estimate ignores the upper clip."""
        lo = self.constant("relu6_min", np.array(0.0, np.float32))
        hi = self.constant("relu6_max", np.array(6.0, np.float32))
        return Tensor(self._node("Clip", [x.name, lo, hi], "relu6"), x.shape, *_rectified(x.mean, x.var))

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        return Tensor(self._node("Add", [a.name, b.name], "add"), a.shape, a.mean + b.mean, a.var + b.var)

    def max_pool(self, x: Tensor, kernel: int, stride: int, pad: int) -> Tensor:
        n, c, h, w = x.shape
        out = self._node("MaxPool", [x.name], "maxpool", kernel_shape=[kernel, kernel], strides=[stride, stride],
                         pads=[pad] * 4)
        size = lambda d: (d + 2 * pad - kernel) // stride + 1  # noqa: E731
        # The max of k*k Gaussians: about 1.5 standard deviations above the mean for 3x3, less spread.
        return Tensor(out, (n, c, size(h), size(w)), x.mean + 1.5 * np.sqrt(x.var), 0.4 * x.var)

    def global_avg_pool_flatten(self, x: Tensor) -> Tensor:
        pooled = self._node("GlobalAveragePool", [x.name], "gap")
        flat = self._node("Flatten", [pooled], "flatten", axis=1)
        return Tensor(flat, (x.shape[0], x.shape[1]), x.mean, x.var)   # spatial correlation unknown: kept

    def fc(self, x: Tensor, units: int) -> Tensor:
        """Gemm with weights (units, k) transposed, std 1/sqrt(k): logits of about x's magnitude."""
        k = x.shape[1]
        weight = self.constant(self.fresh("fc_w"), self._normal((units, k), 1.0 / np.sqrt(k)))
        bias = self.constant(self.fresh("fc_b"), self._normal((units,), 0.1))
        out = self._node("Gemm", [x.name, weight, bias], "fc", transB=1)
        return Tensor(out, (x.shape[0], units), 0.0, x.second_moment)

    # ---- the model --------------------------------------------------------------------------------

    def model(self, output: Tensor, output_name: str = "logits", opset: int = OPSET):
        """The checked onnx.ModelProto; `output` (made by the last node) is renamed `output_name`."""
        last = self.nodes[-1]
        assert list(last.output) == [output.name], "the model's output must be the last node's"
        last.output[0] = output_name
        return checked_model(self.name, self.nodes, [(t.name, t.shape) for t in self.inputs],
                             [(output_name, output.shape)], self.initializers, opset)


def checked_model(name: str, nodes, inputs, outputs, initializers: dict, opset: int = OPSET,
                  producer: str = "byoc_compiler.zoo"):
    """The checked onnx.ModelProto of a graph with float32 inputs and outputs given as (name, shape)."""
    import onnx   # the zoo's ONNX models need the onnx package; the small models do not
    from onnx import helper, numpy_helper

    def values(pairs):
        return [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, shape) for n, shape in pairs]

    graph = helper.make_graph(nodes, name, values(inputs), values(outputs),
                              [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=producer)
    model.ir_version = min(model.ir_version, 8)     # readable by older onnxruntime releases too
    onnx.checker.check_model(model)
    return model
