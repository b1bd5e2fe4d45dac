"""The inverted residual block of MobileNetV2 (Sandler et al. 2018), which EfficientNet's MBConv (Tan &
Le 2019) extends with a squeeze-and-excitation gate: expand 1x1 + BN + act, depthwise kxk + BN + act,
[gate,] linear project 1x1 + BN, and a residual add where stride 1 keeps the channels."""
from __future__ import annotations

from typing import Callable, Optional

from .onnx_graph import GraphBuilder, Tensor

Activation = Callable[[GraphBuilder, Tensor], Tensor]
# (builder, block features, reduced channels) -> the gated features
Gate = Callable[[GraphBuilder, Tensor, int], Tensor]


def conv_bn(b: GraphBuilder, x: Tensor, channels: int, kernel: int, act: Optional[Activation], stride: int = 1,
            groups: int = 1, gamma=(0.8, 1.2)) -> Tensor:
    y = b.batch_norm(b.conv(x, channels, kernel, stride, groups), gamma)
    return act(b, y) if act is not None else y


def inverted_residual(b: GraphBuilder, x: Tensor, expansion: int, channels: int, stride: int, act: Activation,
                      kernel: int = 3, gate: Optional[Gate] = None) -> Tensor:
    hidden = x.shape[1] * expansion
    h = conv_bn(b, x, hidden, 1, act) if expansion != 1 else x
    h = conv_bn(b, h, hidden, kernel, act, stride, groups=hidden)
    if gate is not None:
        h = gate(b, h, max(8, x.shape[1] // 4))
    residual = stride == 1 and x.shape[1] == channels
    # a smaller gamma on the residual branch keeps the sum's variance from growing block after block
    h = conv_bn(b, h, channels, 1, None, gamma=(0.3, 0.6) if residual else (0.8, 1.2))
    return b.add(h, x) if residual else h
