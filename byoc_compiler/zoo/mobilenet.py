"""MobileNetV2 (Sandler et al. 2018, "Inverted Residuals and Linear Bottlenecks") and reduced variants.

Stem conv 3x3/2 (32 channels) + BN + ReLU6; the paper's 17 inverted residual blocks (expand 1x1 +
BN + ReLU6, depthwise 3x3 + BN + ReLU6, linear project 1x1 + BN; a residual add where stride 1 keeps
the channels); conv 1x1 to 1280 + BN + ReLU6; global average pool and a fully connected layer.
At width 1.0, 224x224 and 1000 classes: 3,504,872 weights, 300 MMAC.
"""
from __future__ import annotations

from .inverted_residual import conv_bn, inverted_residual
from .onnx_graph import GraphBuilder

# (expansion t, output channels c, repeats n, first stride s), the paper's table 2
BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
          (6, 320, 1, 1))


def _divisible(value: float, divisor: int = 8) -> int:
    """Channels rounded to a multiple of 8, never more than 10% below `value` (the reference models' rule)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def mobilenetv2(width: float = 1.0, resolution: int = 224, classes: int = 1000, last_channels: int = 1280,
                seed: int = 2):
    """MobileNetV2 as an onnx.ModelProto: input `data` (1, 3, resolution, resolution), output `logits`."""
    b = GraphBuilder(f"mobilenetv2_w{width}_r{resolution}", seed)
    x = b.input("data", (1, 3, resolution, resolution))
    h = conv_bn(b, x, _divisible(32 * width), 3, GraphBuilder.relu6, 2)
    for expansion, channels, repeats, stride in BLOCKS:
        for i in range(repeats):
            h = inverted_residual(b, h, expansion, _divisible(channels * width), stride if i == 0 else 1,
                                  GraphBuilder.relu6)
    h = conv_bn(b, h, last_channels, 1, GraphBuilder.relu6)
    return b.model(b.fc(b.global_avg_pool_flatten(h), classes))
