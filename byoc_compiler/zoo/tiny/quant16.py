"""The 16x8 form of a Spec (TFLite's int16 activations with int8 weights): symmetric int16 activations,
the int8 form's per-channel weights, int64 biases.

As TFLite's converter writes 16x8 models: every activation has zero point 0 and the scale max |value| / 32767
over the int8 form's calibration ranges (a ReLU6 output's capped at 6); pools, flatten, reshape and
transpose keep their input's scale; softmax's output is 1/32768; biases are int64 with scale
float32(input scale x weight scale) per channel. Only the layers TFLite computes in 16x8 and byoc imports
(conv, depthwise, fc, add, pools, flatten, reshape, softmax) are taken.
"""
from __future__ import annotations

import numpy as np

from .quant import QuantizedSpec, quantize
from .spec import Spec

OPS_16X8 = ("conv", "depthwise", "fc", "add", "avg_pool", "max_pool", "flatten", "reshape", "softmax")
SOFTMAX_PARAMS_16 = (np.float32(1.0 / 32768.0), 0)


def _params16(lo: float, hi: float, act: str) -> tuple[np.float32, int]:
    top = max(abs(lo), abs(hi))
    if act == "relu6":
        top = min(top, 6.0)
    return np.float32(max(top, 1e-6) / 32767.0), 0


def quantize16(spec: Spec) -> QuantizedSpec:
    refused = sorted({layer.op for layer in spec.layers} - set(OPS_16X8))
    if refused:
        raise ValueError(f"{spec.name}: no 16x8 form for its {', '.join(refused)} layers")
    return quantize(spec, _params16, SOFTMAX_PARAMS_16, act_dtype="int16")
