"""The microcontroller models as Specs: MLPerf Tiny's four benchmark shapes (Banbury et al. 2021, the
reference Keras models of mlcommons/tiny) and a concat-heavy CNN, batch norm folded into the convs.

- DS-CNN keyword spotting: MFCC 49x10x1; conv 10x4/2 (64) + ReLU; four depthwise-separable blocks
  (depthwise 3x3 + ReLU, pointwise 64 + ReLU); average pool over the 25x5 plane; fc 12; softmax.
- ResNet-8 (image classification): 32x32x3; conv 3x3 (16) + ReLU; three residual stacks of two
  3x3 convs (16, 32/2, 64/2; a 1x1/2 projection shortcut where the size changes), add + ReLU;
  average pool 8x8; fc 10; softmax.
- MobileNet v1 0.25 (visual wake words): 96x96x3; conv 3x3/2 (8) + ReLU; 13 depthwise-separable
  blocks (16 ... 256 channels); average pool 3x3; fc 2; softmax.
- FC autoencoder (anomaly detection): 640 inputs; fc 128 + ReLU four times, fc 8 + ReLU, fc 128 +
  ReLU four times, fc 640 (linear).
- MobileNetV2 0.35 at 96x96 (Sandler et al. 2018; the width and resolution TFLite ships for
  microcontrollers): stem conv 3x3/2 + ReLU6, the paper's 17 inverted residual blocks (expand 1x1 +
  ReLU6, depthwise 3x3 + ReLU6, linear project 1x1, residual add where stride 1 keeps the channels),
  conv 1x1 to 1280 + ReLU6, average pool 3x3, fc 1000, softmax.
- micro CNN: the smallest int8 image classifier: two conv 3x3 + ReLU + max pool 2x2 stages on
  32x32x3, average pool, fc 10, softmax.
- transformer encoder: two post-norm (BERT-style) layers on a (sequence 16, hidden 32) input: Q, K, V
  projections, 2 heads split by reshape + transpose, scores and context by batched matmul, softmax,
  output projection, residual + layer norm (decomposed: mean, subtract, mean of squares, rsqrt, gamma,
  beta), a ReLU MLP 4x wide, residual + layer norm.
- concat CNN: Inception/DenseNet-style blocks whose branches (1x1, 3x3, 3x3 after a 1x1, max pool
  + 1x1) are concatenated with differing int8 scales, a DenseNet transition (1x1 conv, 2x2 average
  pool) between them, on 32x32x3; the cases that make an int8 runtime requantize concat inputs and
  round average pools.
"""
from __future__ import annotations

from ..mobilenet import BLOCKS as MOBILENET_V2_BLOCKS, _divisible
from .builder import SpecBuilder
from .spec import Spec


def ds_cnn() -> Spec:
    b = SpecBuilder("ds_cnn", (1, 49, 10, 1), seed=101)
    h = b.conv(b.spec.input, 64, (10, 4), stride=2)
    for _ in range(4):
        h = b.conv(b.depthwise(h), 64, 1)
    h = b.flatten(b.pool(h, "avg"))
    b.softmax(b.fc(h, 12, rms=3.0))
    return b.finish()


def resnet8() -> Spec:
    b = SpecBuilder("resnet8", (1, 32, 32, 3), seed=108)
    x = b.conv(b.spec.input, 16, 3)
    for channels, stride in ((16, 1), (32, 2), (64, 2)):
        y = b.conv(b.conv(x, channels, 3, stride), channels, 3, act="none")
        shortcut = x if stride == 1 else b.conv(x, channels, 1, stride, act="none")
        x = b.add(y, shortcut, act="relu")
    h = b.flatten(b.pool(x, "avg"))
    b.softmax(b.fc(h, 10, rms=3.0))
    return b.finish()


# (pointwise channels, depthwise stride) of MobileNet v1's 13 blocks at width 1.0
MOBILENET_V1_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1),
                       (512, 1), (512, 1), (1024, 2), (1024, 1))


def mobilenet_v1(alpha: float = 0.25, resolution: int = 96, classes: int = 2) -> Spec:
    b = SpecBuilder(f"mobilenet_v1_{alpha}", (1, resolution, resolution, 3), seed=125)
    h = b.conv(b.spec.input, int(32 * alpha), 3, stride=2)
    for channels, stride in MOBILENET_V1_BLOCKS:
        h = b.conv(b.depthwise(h, 3, stride), int(channels * alpha), 1)
    h = b.flatten(b.pool(h, "avg"))
    b.softmax(b.fc(h, classes, rms=3.0))
    return b.finish()


def fc_autoencoder() -> Spec:
    b = SpecBuilder("fc_autoencoder", (1, 640), seed=640)
    h = b.spec.input
    for units in (128, 128, 128, 128, 8, 128, 128, 128, 128):
        h = b.fc(h, units, act="relu")
    b.fc(h, 640, rms=3.0)
    return b.finish()


def concat_cnn() -> Spec:
    b = SpecBuilder("concat_cnn", (1, 32, 32, 3), seed=33)
    h = b.pool(b.conv(b.spec.input, 16, 3, stride=2), "max", 2)
    for block, width in enumerate((8, 12)):
        branches = [b.conv(h, width, 1), b.conv(h, width, 3), b.conv(b.conv(h, width // 2, 1), width, 3),
                    b.conv(b.pool(h, "max", 3, 1, same=True), width // 2, 1)]
        h = b.concat(branches)
        dense = b.conv(h, width, 3)
        h = b.concat([h, dense])                        # DenseNet-style: the block's input beside its output
        if block == 0:                                  # DenseNet's transition: 1x1 conv, 2x2 average pool
            h = b.pool(b.conv(h, 24, 1), "avg", 2)
    h = b.flatten(b.pool(h, "avg"))
    b.softmax(b.fc(h, 10, rms=3.0))
    return b.finish()


def _inverted_residual(b: SpecBuilder, x: str, expansion: int, channels: int, stride: int) -> str:
    in_channels = b.spec.shape(x)[-1]
    h = b.conv(x, in_channels * expansion, 1, act="relu6") if expansion != 1 else x
    h = b.conv(b.depthwise(h, 3, stride, act="relu6"), channels, 1, act="none")
    return b.add(h, x) if stride == 1 and in_channels == channels else h


def mobilenet_v2(alpha: float = 0.35, resolution: int = 96, classes: int = 1000) -> Spec:
    b = SpecBuilder(f"mobilenet_v2_{alpha}", (1, resolution, resolution, 3), seed=235)
    h = b.conv(b.spec.input, _divisible(32 * alpha), 3, stride=2, act="relu6")
    for expansion, channels, repeats, stride in MOBILENET_V2_BLOCKS:
        for i in range(repeats):
            h = _inverted_residual(b, h, expansion, _divisible(channels * alpha), stride if i == 0 else 1)
    h = b.conv(h, 1280, 1, act="relu6")
    b.softmax(b.fc(b.flatten(b.pool(h, "avg")), classes, rms=3.0))
    return b.finish()


def micro_cnn() -> Spec:
    b = SpecBuilder("micro_cnn", (1, 32, 32, 3), seed=32)
    h = b.pool(b.conv(b.spec.input, 8, 3), "max", 2)
    h = b.pool(b.conv(h, 16, 3), "max", 2)
    b.softmax(b.fc(b.flatten(b.pool(h, "avg")), 10, rms=3.0))
    return b.finish()


def _attention(b: SpecBuilder, x: str, heads: int) -> str:
    seq, hidden = b.spec.shape(x)
    size = hidden // heads
    # scores of about unit scale: q's output RMS 1/sqrt(head size), the usual 1/sqrt(d) folded into Wq
    q, k, v = b.fc(x, hidden, rms=size ** -0.5), b.fc(x, hidden), b.fc(x, hidden)
    split = [b.reshape(t, (seq, heads, size)) for t in (q, k, v)]
    scores = b.matmul(b.transpose(split[0], (1, 0, 2)), b.transpose(split[1], (1, 2, 0)))
    context = b.matmul(b.softmax(scores), b.transpose(split[2], (1, 0, 2)))
    return b.fc(b.reshape(b.transpose(context, (1, 0, 2)), (seq, hidden)), hidden)


def transformer_encoder(layers: int = 2, seq: int = 16, hidden: int = 32, heads: int = 2) -> Spec:
    b = SpecBuilder("transformer_encoder", (seq, hidden), seed=512)
    x = b.spec.input
    for _ in range(layers):
        x = b.layer_norm(b.add(x, _attention(b, x, heads)))
        x = b.layer_norm(b.add(x, b.fc(b.fc(x, 4 * hidden, act="relu"), hidden)))
    return b.finish()
