"""ResNet-50 v1 (He et al. 2015, "Deep Residual Learning"), and width/resolution-reduced variants.

v1: a downsampling bottleneck strides in its first 1x1 conv (v1.5, torchvision's, strides in the 3x3).
Stem conv 7x7/2 + BN + ReLU + max pool 3x3/2; stages of [3, 4, 6, 3] bottlenecks (1x1, 3x3, 1x1 with
4x expansion, a projection shortcut conv 1x1 + BN in each stage's first block); global average pool
and a fully connected layer. At width 64, 224x224 and 1000 classes: 25,557,032 weights, 3.9 GMAC.
"""
from __future__ import annotations

from .onnx_graph import GraphBuilder, Tensor

STAGES = (3, 4, 6, 3)
EXPANSION = 4


def _conv_bn(b: GraphBuilder, x: Tensor, channels: int, kernel: int, stride: int = 1, relu: bool = True,
             gamma=(0.8, 1.2)) -> Tensor:
    y = b.batch_norm(b.conv(x, channels, kernel, stride), gamma)
    return b.relu(y) if relu else y


def _bottleneck(b: GraphBuilder, x: Tensor, width: int, stride: int) -> Tensor:
    out_channels = width * EXPANSION
    h = _conv_bn(b, x, width, 1, stride)
    h = _conv_bn(b, h, width, 3)
    # The residual branch's last BN scales down (like the common zero-init of that gamma, but not
    # zero so the branch is tested): the stream's variance then grows slowly over 16 blocks.
    h = _conv_bn(b, h, out_channels, 1, relu=False, gamma=(0.3, 0.6))
    shortcut = x
    if stride != 1 or x.shape[1] != out_channels:
        shortcut = _conv_bn(b, x, out_channels, 1, stride, relu=False)
    return b.relu(b.add(h, shortcut))


def resnet50(width: int = 64, resolution: int = 224, classes: int = 1000, seed: int = 50):
    """ResNet-50 v1 as an onnx.ModelProto: input `data` (1, 3, resolution, resolution), output `logits`."""
    b = GraphBuilder(f"resnet50_w{width}_r{resolution}", seed)
    x = b.input("data", (1, 3, resolution, resolution))
    h = _conv_bn(b, x, width, 7, 2)
    h = b.max_pool(h, 3, 2, 1)
    for stage, blocks in enumerate(STAGES):
        for i in range(blocks):
            h = _bottleneck(b, h, width * 2 ** stage, 2 if (i == 0 and stage > 0) else 1)
    return b.model(b.fc(b.global_avg_pool_flatten(h), classes))
