"""One format-neutral description of a microcontroller-sized model: layers in NHWC with seeded float weights.

A `Spec` is what the writers (onnx_form.py, tflite_form.py) translate; the quantization (quant.py)
is derived from it once, so the ONNX and the .tflite file of a model carry the same weights and the
same quantization parameters. Layouts follow TFLite, whose conventions are the stricter ones:
activations NHWC, conv weights (O, kh, kw, I), depthwise weights (1, kh, kw, C), fully connected
weights (O, I). Padding is explicit (top, left, bottom, right), computed as TensorFlow's "same"
(the extra row or column at the bottom and right), so both formats pad the same pixels.

Weights are He-normal with small biases, then scaled layer by layer so every layer's output has RMS 1
on a seeded input (evaluate.normalized; the logits more, so a softmax's outputs spread): the role a
trained conv + folded batch norm plays, so int8 steps mean something in every layer.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# op -> what it is (docs for readers of a spec; the writers and the evaluator cover exactly these)
OPS = {
    "conv": "2-D convolution, weight (O, kh, kw, I), bias (O,), fused activation",
    "depthwise": "depthwise 2-D convolution (multiplier 1), weight (1, kh, kw, C), bias (C,), fused activation",
    "fc": "fully connected on (N, K), weight (O, K), bias (O,), fused activation",
    "add": "elementwise sum of two tensors of one shape, fused activation",
    "avg_pool": "average pool, VALID, kernel and stride",
    "max_pool": "max pool, VALID or SAME, kernel and stride",
    "flatten": "(N, 1, 1, C) -> (N, C)",
    "concat": "concatenation on the channel (last) axis",
    "softmax": "softmax on the last axis",
    # the transformer's (2-D and 3-D activations)
    "const": "a constant tensor (attrs value), e.g. layer norm's gamma and beta",
    "matmul": "batched matrix product of two activations of one batch shape",
    "reshape": "to attrs shape", "transpose": "by attrs perm",
    "mean": "mean over the last axis, kept as size 1",
    "sub": "a - b, broadcasting", "mul": "a * b, broadcasting", "rsqrt": "1 / sqrt(x)",
}
ACTIVATIONS = ("none", "relu", "relu6")


@dataclass(frozen=True)
class Layer:
    op: str
    inputs: tuple[str, ...]
    output: str
    shape: tuple[int, ...]                         # the output's shape (NHWC, or (N, K))
    attrs: dict = field(default_factory=dict)      # kernel, stride, pads, act
    weight: np.ndarray | None = None
    bias: np.ndarray | None = None


@dataclass
class Spec:
    name: str
    input: str
    input_shape: tuple[int, ...]
    layers: list[Layer] = field(default_factory=list)

    @property
    def output(self) -> str:
        return self.layers[-1].output

    def shape(self, tensor: str) -> tuple[int, ...]:
        if tensor == self.input:
            return self.input_shape
        return next(layer.shape for layer in self.layers if layer.output == tensor)


def same_pads(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow's SAME padding of one spatial axis: (before, after), the odd pixel after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2
