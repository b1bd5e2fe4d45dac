"""ShuffleNet v1 (Zhang et al. 2017), groups = 3: pointwise group convolutions with a channel shuffle between
them, the model whose shuffles are the data movement a vendor library usually leaves to the host.

Stem conv 3x3/2 (24) + BN + ReLU, max pool 3x3/2; stages of 4, 8 and 4 units with 240, 480 and 960
output channels. A unit: 1x1 group conv to a quarter of the output width + BN + ReLU, channel shuffle
(Reshape to (n, groups, c / groups, h, w), Transpose 0 2 1 3 4, Reshape back), depthwise 3x3 (stride 2
in a stage's first unit) + BN, 1x1 group conv + BN; a stride-2 unit concatenates its branch with a
3x3/2 average pool of its input, the others add the input; ReLU after either. The first unit's first
conv is not grouped (24 input channels). Global average pool and a fully connected layer. At 224x224:
16 shuffles, about 1.9 M weights.
"""
from __future__ import annotations

import numpy as np

from .inverted_residual import conv_bn
from .onnx_graph import GraphBuilder, Tensor

STAGES = ((240, 4), (480, 8), (960, 4))   # (output channels, units) at groups = 3


def _relu(b: GraphBuilder, x: Tensor) -> Tensor:
    return b.relu(x)


def channel_shuffle(b: GraphBuilder, x: Tensor, groups: int) -> Tensor:
    """(n, c, h, w) -> channels reordered so each group receives one channel of every other group."""
    n, c, h, w = x.shape
    split = b.constant(b.fresh("shuffle_shape"), np.array([n, groups, c // groups, h, w], np.int64))
    whole = b.constant(b.fresh("shuffle_shape"), np.array([n, c, h, w], np.int64))
    grouped = b._node("Reshape", [x.name, split], "shuffle_split")
    swapped = b._node("Transpose", [grouped], "shuffle", perm=[0, 2, 1, 3, 4])
    return Tensor(b._node("Reshape", [swapped, whole], "shuffle_merge"), x.shape, x.mean, x.var)


def _unit(b: GraphBuilder, x: Tensor, channels: int, stride: int, groups: int, first: bool) -> Tensor:
    branch_channels = channels - x.shape[1] if stride == 2 else channels
    h = conv_bn(b, x, channels // 4, 1, _relu, groups=1 if first else groups)
    h = channel_shuffle(b, h, groups)
    h = conv_bn(b, h, channels // 4, 3, None, stride, groups=channels // 4)
    h = conv_bn(b, h, branch_channels, 1, None, groups=groups, gamma=(0.3, 0.6) if stride == 1 else (0.8, 1.2))
    if stride == 1:
        return b.relu(b.add(h, x))
    n, c, hh, ww = x.shape
    pooled = b._node("AveragePool", [x.name], "shortcut_pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    joined = b._node("Concat", [h.name, pooled], "concat", axis=1)
    # the pooled half keeps x's mean with a smaller spread; the branch is ~N(0, gamma^2): mix the two
    part = h.shape[1] / channels
    mean = (1 - part) * x.mean
    second = part * h.second_moment + (1 - part) * (x.mean ** 2 + 0.5 * x.var)
    return b.relu(Tensor(joined, (n, channels, h.shape[2], h.shape[3]), mean, max(second - mean ** 2, 1e-6)))


def shufflenet(groups: int = 3, resolution: int = 224, classes: int = 1000, width: float = 1.0, seed: int = 6):
    """The model as an onnx.ModelProto: input `data` (1, 3, resolution, resolution), output `logits`."""
    b = GraphBuilder(f"shufflenet_g{groups}_w{width}_r{resolution}", seed)
    x = b.input("data", (1, 3, resolution, resolution))
    h = conv_bn(b, x, 24, 3, _relu, 2)
    h = b.max_pool(h, 3, 2, 1)
    first = True
    for channels, units in STAGES:
        wide = int(channels * width) // (4 * groups) * (4 * groups)    # divisible by the groups at every width
        for i in range(units):
            h = _unit(b, h, wide, 2 if i == 0 else 1, groups, first)
            first = False
    return b.model(b.fc(b.global_avg_pool_flatten(h), classes))
