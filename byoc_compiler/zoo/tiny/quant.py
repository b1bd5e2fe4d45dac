"""The int8 form of a Spec: per-tensor int8 activations, per-channel symmetric int8 weights, int32 biases.

Chosen once here and written unchanged by every form (ONNX QDQ, .tflite), with TFLite's conventions:
- activations: asymmetric int8 over the calibrated range widened to include 0 (scale = range / 255,
  zero point = round(-128 - min / scale)); calibration runs the float spec on seeded normal inputs;
- pools, flatten, reshape and transpose keep their input's parameters; softmax's output is 1/256 with
  zero point -128; constants (layer norm's gamma, beta, epsilon) are int8 tensors with their own range;
- weights: per output channel (depthwise: per channel of its last axis), symmetric in [-127, 127],
  scale = max |w| / 127;
- biases: int32 with scale float32(input scale * weight scale) per channel, zero point 0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .evaluate import evaluate
from .spec import Spec

CALIBRATION_BATCHES = 8
SOFTMAX_PARAMS = (np.float32(1.0 / 256.0), -128)
# the output keeps the input's parameters (TFLite requires it of these int8 kernels)
SAME_AS_INPUT = ("avg_pool", "max_pool", "flatten", "reshape", "transpose")
# the axis of a weight along which it has one scale per channel (TFLite's quantized_dimension)
WEIGHT_AXIS = {"conv": 0, "depthwise": 3, "fc": 0}


@dataclass
class QuantizedSpec:
    spec: Spec
    act: dict[str, tuple[np.float32, int]]                   # tensor -> (scale, zero point)
    weight: dict[str, tuple[np.ndarray, np.ndarray]]         # layer output -> (int8 weight, float32 scales)
    bias: dict[str, np.ndarray]                              # layer output -> int32 bias (its scale: bias_scale)
    act_dtype: str = "int8"                                  # "int16": TFLite's 16x8 (quant16.py), int64 biases

    def constant(self, layer) -> np.ndarray:
        """A const layer's value as int8 with its parameters."""
        scale, zp = self.act[layer.output]
        return np.clip(np.round(layer.attrs["value"] / scale) + zp, -128, 127).astype(np.int8)

    def bias_scale(self, layer_output: str, input_tensor: str) -> np.ndarray:
        return (self.act[input_tensor][0] * self.weight[layer_output][1]).astype(np.float32)


def _params(lo: float, hi: float, act: str) -> tuple[np.float32, int]:
    if act == "relu6":
        hi = min(hi, 6.0)
    lo, hi = min(lo, 0.0), max(hi, 0.0, 1e-6)
    scale = np.float32((hi - lo) / 255.0)
    if act == "relu6" and float(scale) * 255.0 > 6.0:   # the int8 range stays inside the clip's
        scale = np.nextafter(scale, np.float32(0))
    zp = int(np.clip(np.round(-128.0 - lo / float(scale)), -128, 127))
    return scale, zp


def calibrate(spec: Spec, seed: int = 0, params=_params, softmax=SOFTMAX_PARAMS) -> dict[str, tuple[np.float32, int]]:
    """Activation parameters of every tensor from the float spec's ranges on seeded normal inputs:
    `params(lo, hi, activation)` of each range, softmax's output `softmax` (quant16.py: the 16x8 ones)."""
    rng = np.random.default_rng(seed)
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for _ in range(CALIBRATION_BATCHES):
        for name, value in evaluate(spec, rng.standard_normal(spec.input_shape)).items():
            lo[name] = min(lo.get(name, np.inf), float(value.min()))
            hi[name] = max(hi.get(name, -np.inf), float(value.max()))
    act = {spec.input: params(lo[spec.input], hi[spec.input], "none")}
    for layer in spec.layers:
        if layer.op in SAME_AS_INPUT:
            act[layer.output] = act[layer.inputs[0]]
        elif layer.op == "softmax":
            act[layer.output] = softmax
        else:
            act[layer.output] = params(lo[layer.output], hi[layer.output], layer.attrs.get("act", "none"))
    return act


def _weight(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    other = tuple(a for a in range(w.ndim) if a != axis)
    scale = (np.abs(w).max(axis=other) / 127.0).astype(np.float32)
    scale = np.where(scale > 0, scale, np.float32(1e-8)).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


def quantize(spec: Spec, params=_params, softmax=SOFTMAX_PARAMS, act_dtype: str = "int8") -> QuantizedSpec:
    """The int8 form (or, with quant16.py's parameters and act_dtype "int16", the 16x8 one: int64 biases)."""
    q = QuantizedSpec(spec, calibrate(spec, params=params, softmax=softmax), {}, {}, act_dtype=act_dtype)
    for layer in spec.layers:
        if layer.op in WEIGHT_AXIS:
            q.weight[layer.output] = _weight(layer.weight, WEIGHT_AXIS[layer.op])
            bias_scale = q.bias_scale(layer.output, layer.inputs[0]).astype(np.float64)
            q.bias[layer.output] = np.round(layer.bias / bias_scale).astype(np.int64 if act_dtype == "int16" else
                                                                             np.int32)
    return q
