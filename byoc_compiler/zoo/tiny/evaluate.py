"""A Spec computed in float64 numpy (NHWC): the scaling of its random weights and the calibration that
gives every tensor its int8 range.

Only the generator uses it (to scale weights and pick quantization parameters, the way training and a
converter's calibration on sample data do); tests compare the written models with byoc and with the peer runtimes, never
with this.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .spec import Layer, Spec


def _windows(x: np.ndarray, layer: Layer, pad_value: float = 0.0) -> np.ndarray:
    """(N, OH, OW, C, kh, kw) windows of x padded as the layer says."""
    top, left, bottom, right = layer.attrs["pads"]
    padded = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=pad_value)
    s = layer.attrs["stride"]
    return sliding_window_view(padded, layer.attrs["kernel"], axis=(1, 2))[:, ::s, ::s]


def _activate(y: np.ndarray, act: str) -> np.ndarray:
    if act == "relu":
        return np.maximum(y, 0)
    if act == "relu6":
        return np.clip(y, 0, 6)
    return y


def _conv(x, layer):
    if tuple(layer.attrs["kernel"]) == (1, 1) and not any(layer.attrs["pads"]):   # pointwise: a plain product
        s = layer.attrs["stride"]
        return x[:, ::s, ::s] @ layer.weight[:, 0, 0, :].T.astype(np.float64) + layer.bias
    return np.einsum("nhwcij,oijc->nhwo", _windows(x, layer), layer.weight) + layer.bias


def _depthwise(x, layer):
    return np.einsum("nhwcij,ijc->nhwc", _windows(x, layer), layer.weight[0]) + layer.bias


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_COMPUTE = {
    "conv": lambda xs, layer: _conv(xs[0], layer),
    "depthwise": lambda xs, layer: _depthwise(xs[0], layer),
    "fc": lambda xs, layer: xs[0] @ layer.weight.T + layer.bias,
    "add": lambda xs, layer: xs[0] + xs[1],
    "avg_pool": lambda xs, layer: _windows(xs[0], layer).mean(axis=(-2, -1)),
    "max_pool": lambda xs, layer: _windows(xs[0], layer, -np.inf).max(axis=(-2, -1)),
    "flatten": lambda xs, layer: xs[0].reshape(layer.shape),
    "concat": lambda xs, layer: np.concatenate(xs, axis=-1),
    "softmax": lambda xs, layer: _softmax(xs[0]),
    "const": lambda xs, layer: layer.attrs["value"].astype(np.float64),
    "matmul": lambda xs, layer: xs[0] @ xs[1],
    "reshape": lambda xs, layer: xs[0].reshape(layer.shape),
    "transpose": lambda xs, layer: xs[0].transpose(layer.attrs["perm"]),
    "mean": lambda xs, layer: xs[0].mean(axis=-1, keepdims=True),
    "sub": lambda xs, layer: xs[0] - xs[1],
    "mul": lambda xs, layer: xs[0] * xs[1],
    "rsqrt": lambda xs, layer: 1.0 / np.sqrt(xs[0]),
}


def evaluate(spec: Spec, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every tensor of the spec (input included) for input x, by name."""
    values = {spec.input: np.asarray(x, np.float64)}
    for layer in spec.layers:
        y = _COMPUTE[layer.op]([values[i] for i in layer.inputs], layer)
        values[layer.output] = _activate(y, layer.attrs.get("act", "none"))
    return values


def normalized(spec: Spec, seed: int = 1) -> Spec:
    """The spec with each weighted layer's weight and bias scaled so its output before the activation has
    the RMS `attrs["rms"]` (default 1) on a seeded normal input, layer after layer: what batch norm does
    for a trained network (the LSUV initialisation of Mishkin and Matas 2016). Without it, activations of
    a random deep net shrink or grow geometrically and int8 steps end up meaning nothing."""
    values = {spec.input: np.random.default_rng(seed).standard_normal(spec.input_shape)}
    layers = []
    for layer in spec.layers:
        xs = [values[i] for i in layer.inputs]
        y = _COMPUTE[layer.op](xs, layer)
        if layer.weight is not None:
            gain = layer.attrs.get("rms", 1.0) / max(float(np.sqrt(np.mean(y ** 2))), 1e-12)
            layer = replace(layer, weight=(layer.weight * gain).astype(np.float32),
                            bias=(layer.bias * gain).astype(np.float32))
            y = y * gain
        values[layer.output] = _activate(y, layer.attrs.get("act", "none"))
        layers.append(layer)
    return replace(spec, layers=layers)
