"""A Spec written as ONNX (NCHW): the float32 model, or the QDQ model of its QuantizedSpec.

The QDQ form is the one onnxruntime's quantizer writes: every activation passes QuantizeLinear ->
DequantizeLinear with its int8 parameters; weights are int8 initializers behind a per-channel
DequantizeLinear (axis 0), biases int32 behind one with scale input scale x weight scale; a fused
activation is the float Relu/Clip before the output's QuantizeLinear (onnxruntime and byoc drop it
when the quantization's saturation does its work). Inputs and outputs stay float32.
"""
from __future__ import annotations

import numpy as np

from ..onnx_graph import checked_model
from .quant import QuantizedSpec
from .spec import Layer, Spec

OPSET = 13


def _nchw(shape) -> tuple[int, ...]:
    return (shape[0], shape[3], shape[1], shape[2]) if len(shape) == 4 else tuple(shape)


def _onnx_weight(layer: Layer, w: np.ndarray) -> np.ndarray:
    if layer.op == "conv":
        return w.transpose(0, 3, 1, 2)                      # (O, kh, kw, I) -> (O, I, kh, kw)
    if layer.op == "depthwise":
        return w.transpose(3, 0, 1, 2)                      # (1, kh, kw, C) -> (C, 1, kh, kw)
    return w                                                # fc: (O, K), Gemm transB=1


class _Writer:
    def __init__(self, spec: Spec, q: QuantizedSpec | None):
        from onnx import helper   # the zoo's ONNX models need the onnx package; the small models do not

        self.helper, self.spec, self.q = helper, spec, q
        self.nodes: list = []
        self.inits: dict[str, np.ndarray] = {}

    def node(self, op_type: str, inputs, output: str, **attrs) -> str:
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [output], name=output, **attrs))
        return output

    def init(self, name: str, value) -> str:
        # np.asarray keeps a scalar 0-d (per-tensor parameters must be scalars for onnxruntime's contrib ops)
        self.inits[name] = np.asarray(value)
        return name

    def qdq(self, tensor: str, value: str, dq_name: str) -> str:
        """value -> QuantizeLinear -> DequantizeLinear with tensor's parameters, named dq_name."""
        if self.q is None:
            return value
        scale, zp = self.q.act[tensor]
        s, z = self.init(f"{tensor}_scale", np.float32(scale)), self.init(f"{tensor}_zp", np.int8(zp))
        quantized = self.node("QuantizeLinear", [value, s, z], f"{tensor}_q")
        return self.node("DequantizeLinear", [quantized, s, z], dq_name)

    def constant(self, name: str, value: np.ndarray, q: np.ndarray | None, scales: np.ndarray | None) -> str:
        """A float initializer, or (quantized) an integer one behind a per-channel DequantizeLinear."""
        if self.q is None:
            return self.init(name, value.astype(np.float32))
        s = self.init(f"{name}_scale", scales.astype(np.float32))
        z = self.init(f"{name}_zp", np.zeros(scales.shape, q.dtype))
        return self.node("DequantizeLinear", [self.init(f"{name}_quantized", q), s, z], name, axis=0)

    def params(self, layer: Layer) -> list[str]:
        """Weight and bias of a conv, depthwise or fc layer as ONNX inputs."""
        w_q = b_q = w_s = b_s = None
        if self.q is not None:
            w_q, w_s = self.q.weight[layer.output]
            w_q, b_q = _onnx_weight(layer, w_q), self.q.bias[layer.output]
            b_s = self.q.bias_scale(layer.output, layer.inputs[0])
        w = self.constant(f"{layer.output}_w", _onnx_weight(layer, layer.weight), w_q, w_s)
        return [w, self.constant(f"{layer.output}_b", layer.bias, b_q, b_s)]

    def activation(self, layer: Layer, value: str) -> str:
        act = layer.attrs.get("act", "none")
        if act == "relu":
            return self.node("Relu", [value], f"{layer.output}_relu")
        if act == "relu6":
            lo, hi = self.init("relu6_lo", np.float32(0)), self.init("relu6_hi", np.float32(6))
            return self.node("Clip", [value, lo, hi], f"{layer.output}_relu6")
        return value


def _window_attrs(layer: Layer) -> dict:
    top, left, bottom, right = layer.attrs["pads"]
    return dict(kernel_shape=list(layer.attrs["kernel"]), strides=[layer.attrs["stride"]] * 2,
                pads=[top, left, bottom, right])


def _layer_node(w: _Writer, layer: Layer, inputs: list[str]) -> str:
    out = f"{layer.output}_float"
    if layer.op in ("conv", "depthwise"):
        group = layer.shape[-1] if layer.op == "depthwise" else 1
        return w.node("Conv", inputs + w.params(layer), out, group=group, **_window_attrs(layer))
    if layer.op == "fc":
        return w.node("Gemm", inputs + w.params(layer), out, transB=1)
    if layer.op in ("avg_pool", "max_pool"):
        whole = tuple(layer.attrs["kernel"]) == w.spec.shape(layer.inputs[0])[1:3] and layer.shape[1:3] == (1, 1)
        if layer.op == "avg_pool" and whole:
            return w.node("GlobalAveragePool", inputs, out)
        return w.node("AveragePool" if layer.op == "avg_pool" else "MaxPool", inputs, out, **_window_attrs(layer))
    if layer.op == "const":            # an initializer (quantized by the QuantizeLinear after it in QDQ)
        return w.init(out, layer.attrs["value"])
    if layer.op == "reshape":
        return w.node("Reshape", inputs + [w.init(f"{layer.output}_shape", np.array(layer.shape, np.int64))], out)
    if layer.op == "rsqrt":
        return w.node("Reciprocal", [w.node("Sqrt", inputs, f"{layer.output}_sqrt")], out)
    op_type, attrs = _SIMPLE[layer.op]
    return w.node(op_type, inputs, out, **(attrs(layer) if callable(attrs) else attrs))


# spec op -> (ONNX op, attributes or a function of the layer giving them)
_SIMPLE = {"add": ("Add", {}), "sub": ("Sub", {}), "mul": ("Mul", {}), "matmul": ("MatMul", {}),
           "flatten": ("Flatten", {"axis": 1}), "concat": ("Concat", {"axis": 1}), "softmax": ("Softmax", {"axis": -1}),
           "mean": ("ReduceMean", {"axes": [-1], "keepdims": 1}),
           "transpose": ("Transpose", lambda layer: {"perm": list(layer.attrs["perm"])})}


def onnx_model(spec: Spec, q: QuantizedSpec | None = None, output_name: str = "output"):
    """The checked onnx.ModelProto of spec: float32, or QDQ int8 when q is given."""
    w = _Writer(spec, q)
    first = w.qdq(spec.input, spec.input, f"{spec.input}_dq") if q is not None else spec.input
    names = {spec.input: first}
    for layer in spec.layers:
        value = w.activation(layer, _layer_node(w, layer, [names[i] for i in layer.inputs]))
        final = output_name if layer.output == spec.output else layer.output
        names[layer.output] = w.qdq(layer.output, value, final)
    if q is None:                       # the float model's last node writes the output itself
        w.nodes[-1].output[0] = output_name
    return checked_model(spec.name + ("_int8" if q is not None else ""), w.nodes,
                         [(spec.input, _nchw(spec.input_shape))], [(output_name, _nchw(spec.layers[-1].shape))],
                         w.inits, OPSET, producer="byoc_compiler.zoo.tiny")
