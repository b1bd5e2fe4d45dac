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
- concat CNN: Inception/DenseNet-style blocks whose branches (1x1, 3x3, 3x3 after a 1x1, max pool
  + 1x1) are concatenated with differing int8 scales, a DenseNet transition (1x1 conv, 2x2 average
  pool) between them, on 32x32x3; the cases that make an int8 runtime requantize concat inputs and
  round average pools.
"""
from __future__ import annotations

from .spec import Spec, SpecBuilder


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
