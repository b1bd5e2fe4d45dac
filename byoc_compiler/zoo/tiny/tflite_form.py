"""A Spec written as a .tflite file: float32, or int8 (or 16x8: int16 activations, int64 biases) with the
QuantizedSpec's parameters (no TensorFlow).

TFLite's conventions, which the Spec already follows: NHWC; conv weights (O, kh, kw, I) per-channel on
axis 0, depthwise weights (1, kh, kw, C) per-channel on axis 3, fully connected weights (O, K) per-channel
on axis 0; int32 biases with scale input scale x weight scale; fused activations; softmax's int8 output
1/256 with zero point -128; pools and reshapes keeping their input's parameters. The int8 model's input
and output are int8 (as MLPerf Tiny's TFLite models are); the float model's are float32. Written with
byoc's flatbuffers writer (frontend/tflite/writer.py).
"""
from __future__ import annotations

import numpy as np

from ...frontend.tflite.writer import TFLiteWriter
from .quant import WEIGHT_AXIS, QuantizedSpec
from .spec import Layer, Spec, same_pads

_ACTIVATION = {"none": "NONE", "relu": "RELU", "relu6": "RELU6"}
_OPS = {"conv": "CONV_2D", "depthwise": "DEPTHWISE_CONV_2D", "fc": "FULLY_CONNECTED", "add": "ADD",
        "avg_pool": "AVERAGE_POOL_2D", "max_pool": "MAX_POOL_2D", "flatten": "RESHAPE", "concat": "CONCATENATION",
        "softmax": "SOFTMAX", "matmul": "BATCH_MATMUL", "reshape": "RESHAPE", "transpose": "TRANSPOSE",
        "mean": "MEAN", "sub": "SUB", "mul": "MUL", "rsqrt": "RSQRT"}


def _padding(spec: Spec, layer: Layer) -> str:
    """SAME or VALID: the Spec's explicit pads must be one of TFLite's two paddings."""
    _, h, w, _ = spec.shape(layer.inputs[0])
    (kh, kw), s = layer.attrs["kernel"], layer.attrs["stride"]
    top, left, bottom, right = layer.attrs["pads"]
    if (top, bottom, left, right) == (*same_pads(h, kh, s), *same_pads(w, kw, s)):
        return "SAME"
    if not any(layer.attrs["pads"]):
        return "VALID"
    raise ValueError(f"{layer.output}: pads {layer.attrs['pads']} are neither TFLite's SAME nor VALID")


class _Writer:
    def __init__(self, spec: Spec, q: QuantizedSpec | None):
        self.spec, self.q, self.w = spec, q, TFLiteWriter()
        self.index: dict[str, int] = {}

    def activation(self, name: str) -> int:
        shape = self.spec.shape(name)
        if self.q is None:
            self.index[name] = self.w.tensor(name, shape, "float32")
        else:
            scale, zp = self.q.act[name]
            self.index[name] = self.w.tensor(name, shape, self.q.act_dtype, scale=float(scale), zero_point=int(zp))
        return self.index[name]

    def ints(self, name: str, values) -> int:
        values = np.asarray(values, np.int32)
        return self.w.tensor(name, values.shape, "int32", data=values)

    def constant(self, layer: Layer) -> None:
        """A const layer: a tensor with data (int8 with its parameters, or float32)."""
        if self.q is None:
            self.index[layer.output] = self.w.tensor(layer.output, layer.shape, "float32", data=layer.attrs["value"])
            return
        scale, zp = self.q.act[layer.output]
        self.index[layer.output] = self.w.tensor(layer.output, layer.shape, "int8", data=self.q.constant(layer),
                                                 scale=float(scale), zero_point=int(zp))

    def params(self, layer: Layer) -> list[int]:
        """The weight and bias tensors of a conv, depthwise or fc layer."""
        name, n = layer.output, layer.bias.size
        if self.q is None:
            return [self.w.tensor(f"{name}_w", layer.weight.shape, "float32", data=layer.weight),
                    self.w.tensor(f"{name}_b", (n,), "float32", data=layer.bias)]
        w, scales = self.q.weight[name]
        bias_scale = self.q.bias_scale(name, layer.inputs[0])
        return [self.w.tensor(f"{name}_w", w.shape, "int8", data=w, scale=scales, zero_point=0,
                              quantized_dimension=WEIGHT_AXIS[layer.op]),
                self.w.tensor(f"{name}_b", (n,), "int64" if self.q.act_dtype == "int16" else "int32",
                              data=self.q.bias[name], scale=bias_scale, zero_point=0)]

    def options(self, layer: Layer) -> tuple[list[int], dict]:
        """(extra inputs, options) of a layer's operator."""
        act = {"fused_activation_function": _ACTIVATION[layer.attrs.get("act", "none")]}
        if layer.op in ("conv", "depthwise"):
            s = layer.attrs["stride"]
            opts = dict(padding=_padding(self.spec, layer), stride_w=s, stride_h=s, **act)
            return self.params(layer), (dict(opts, depth_multiplier=1) if layer.op == "depthwise" else opts)
        if layer.op == "fc":
            return self.params(layer), act
        if layer.op in ("avg_pool", "max_pool"):
            (kh, kw), s = layer.attrs["kernel"], layer.attrs["stride"]
            return [], dict(padding=_padding(self.spec, layer), stride_w=s, stride_h=s, filter_width=kw,
                            filter_height=kh, **act)
        if layer.op in ("flatten", "reshape"):
            return [self.ints(f"{layer.output}_shape", layer.shape)], dict(new_shape=[int(d) for d in layer.shape])
        if layer.op == "transpose":
            return [self.ints(f"{layer.output}_perm", layer.attrs["perm"])], {}
        if layer.op == "mean":
            return [self.ints(f"{layer.output}_axis", [len(layer.shape) - 1])], dict(keep_dims=True)
        if layer.op == "matmul":
            return [], dict(adj_x=False, adj_y=False)
        if layer.op == "rsqrt":
            return [], {}
        if layer.op == "concat":
            return [], dict(axis=len(layer.shape) - 1, **act)
        if layer.op == "softmax":
            return [], dict(beta=1.0)
        return [], act                                     # add, sub, mul


def tflite_model(spec: Spec, q: QuantizedSpec | None = None) -> bytes:
    """The .tflite bytes of spec: float32, or int8 when q is given."""
    w = _Writer(spec, q)
    first = w.activation(spec.input)
    for layer in spec.layers:
        if layer.op == "const":
            w.constant(layer)
            continue
        extra, options = w.options(layer)
        inputs = [w.index[i] for i in layer.inputs] + extra
        w.w.op(_OPS[layer.op], inputs, [w.activation(layer.output)], **options)
    return w.w.finish([first], [w.index[spec.output]])
