"""An EfficientNet-lite-style CNN (Tan & Le 2019 MBConv blocks; the mobile-friendly "lite" stem) with the
activations of today's mobile nets: HardSwish, and squeeze-and-excitation gates through a HardSigmoid.

Stem conv 3x3/2 (32) + BN + HardSwish; MBConv blocks (expand 1x1 + BN + HardSwish, depthwise kxk +
BN + HardSwish, squeeze-excite: GlobalAveragePool, 1x1 reduce + Relu, 1x1 expand + HardSigmoid, Mul;
project 1x1 + BN; residual add where the shape is kept); head conv 1x1 (1280) + BN + HardSwish;
global average pool and a fully connected layer. At width 1.0, 224x224: about 5 M weights.
"""
from __future__ import annotations

import numpy as np

from .inverted_residual import conv_bn, inverted_residual
from .onnx_graph import GraphBuilder, Tensor

# (expansion, output channels, repeats, first stride, kernel): EfficientNet-B0's stages
BLOCKS = ((1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3), (6, 112, 3, 1, 5),
          (6, 192, 4, 2, 5), (6, 320, 1, 1, 3))
OPSET = 14      # HardSwish


def _channels(value: float) -> int:
    return max(8, int(value + 4) // 8 * 8)


def _gaussian_moments(fn, mean: float, var: float) -> tuple[float, float]:
    """Mean and variance of fn(X) for X ~ N(mean, var), by Gauss-Hermite quadrature (deterministic)."""
    points, weights = np.polynomial.hermite_e.hermegauss(48)
    values = fn(mean + np.sqrt(max(var, 1e-30)) * points)
    weights = weights / weights.sum()
    m1 = float(np.sum(weights * values))
    return m1, max(float(np.sum(weights * values ** 2)) - m1 ** 2, 1e-12)


def _hswish(v):
    return v * np.clip(v / 6.0 + 0.5, 0.0, 1.0)


def _hard_swish(b: GraphBuilder, x: Tensor) -> Tensor:
    # BN after every conv relies on these estimates: a wrong one shrinks or grows the signal per layer.
    return Tensor(b._node("HardSwish", [x.name], "hswish"), x.shape, *_gaussian_moments(_hswish, x.mean, x.var))


def _squeeze_excite(b: GraphBuilder, x: Tensor, reduced: int) -> Tensor:
    n, c, h, w = x.shape
    pooled = Tensor(b._node("GlobalAveragePool", [x.name], "se_pool"), (n, c, 1, 1), x.mean, x.var)
    squeezed = b.relu(b.conv(pooled, reduced, 1, bias=True))
    gate = b.conv(squeezed, c, 1, bias=True)
    gated = b._node("HardSigmoid", [gate.name], "se_gate", alpha=1.0 / 6.0, beta=0.5)
    g_mean, g_var = _gaussian_moments(lambda v: np.clip(v / 6.0 + 0.5, 0.0, 1.0), gate.mean, gate.var)
    # x and the per-channel gate are independent: E[xg] = E[x]E[g], E[(xg)^2] = E[x^2]E[g^2].
    mean = x.mean * g_mean
    return Tensor(b._node("Mul", [x.name, gated], "se_mul"), x.shape, mean,
                  max(x.second_moment * (g_mean ** 2 + g_var) - mean ** 2, 1e-12))


def efficientnet_lite(width: float = 1.0, resolution: int = 224, classes: int = 1000, head: int = 1280,
                      seed: int = 5):
    """The model as an onnx.ModelProto: input `data` (1, 3, resolution, resolution), output `logits`."""
    b = GraphBuilder(f"efficientnet_lite_w{width}_r{resolution}", seed)
    x = b.input("data", (1, 3, resolution, resolution))
    h = conv_bn(b, x, _channels(32 * width), 3, _hard_swish, 2)
    for expansion, channels, repeats, stride, kernel in BLOCKS:
        for i in range(repeats):
            h = inverted_residual(b, h, expansion, _channels(channels * width), stride if i == 0 else 1, _hard_swish,
                                  kernel, gate=_squeeze_excite)
    h = conv_bn(b, h, head, 1, _hard_swish)
    return b.model(b.fc(b.global_avg_pool_flatten(h), classes), opset=OPSET)
