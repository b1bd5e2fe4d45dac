"""ONNX test models built with onnx.helper: tiny single-op graphs and two classic classifiers.

Outputs are typed by running ONNX's own reference evaluator on the sample
inputs, so a builder only writes nodes, inputs and weights.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

node = helper.make_node


def make_model(nodes: Sequence[onnx.NodeProto], inputs: Mapping[str, np.ndarray], outputs: Sequence[str],
               initializers: Mapping[str, np.ndarray] | None = None, opset: int = 13,
               name: str = "test") -> onnx.ModelProto:
    """A checked model whose inputs have the shapes and dtypes of the sample `inputs`."""
    graph_inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                    for k, v in inputs.items()]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()]
    graph = helper.make_graph(list(nodes), name, graph_inputs, [onnx.ValueInfoProto(name=o) for o in outputs],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 10)
    _type_outputs(model, inputs)
    onnx.checker.check_model(model)
    return model


def _type_outputs(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> None:
    """Give the graph outputs their types: from ONNX shape inference, else by running the model."""
    graph = onnx.shape_inference.infer_shapes(model).graph
    inferred = {v.name: v for v in [*graph.value_info, *graph.output] if v.HasField("type")}
    typed = [inferred.get(o.name) for o in model.graph.output]
    if all(v is not None and v.type.tensor_type.HasField("shape")
           and all(d.HasField("dim_value") for d in v.type.tensor_type.shape.dim) for v in typed):
        for out, value_info in zip(model.graph.output, typed):
            out.CopyFrom(value_info)
        return
    try:
        results = ReferenceEvaluator(model).run(None, dict(inputs))
    except (TypeError, NotImplementedError):  # gaps of the reference evaluator: BatchNormalization-6/7
        # returns a tuple (TypeError); an op it lacks raises NotImplementedError
        import onnxruntime

        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        results = session.run(None, dict(inputs))
    for out, value in zip(model.graph.output, results):
        value = np.asarray(value)
        out.CopyFrom(helper.make_tensor_value_info(out.name, helper.np_dtype_to_tensor_dtype(value.dtype),
                                                   value.shape))


def reference_outputs(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The peer result: ONNX's reference evaluator."""
    return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, dict(inputs))]


# ---- classifiers ----------------------------------------------------------------------------------

class _Builder:
    """Accumulates nodes and random weights; names are generated in order."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.weights: dict[str, np.ndarray] = {}
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    def weight(self, prefix: str, shape, scale: float = 1.0, positive: bool = False) -> str:
        name = self.fresh(prefix)
        data = self.rng.standard_normal(shape)
        data = np.abs(data) + 0.5 if positive else data * scale
        self.weights[name] = data.astype(np.float32)
        return name

    def op(self, op_type: str, inputs: Sequence[str], **attrs) -> str:
        out = self.fresh(op_type.lower())
        self.nodes.append(node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, pad: int = 0, bias: bool = True) -> str:
        w = self.weight("w", (cout, cin, k, k), scale=(2.0 / (cin * k * k)) ** 0.5)
        inputs = [x, w] + ([self.weight("b", (cout,), scale=0.1)] if bias else [])
        return self.op("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4)

    def batch_norm(self, x: str, c: int) -> str:
        return self.op("BatchNormalization", [x, self.weight("gamma", (c,), positive=True),
                                              self.weight("beta", (c,), scale=0.1),
                                              self.weight("mean", (c,), scale=0.1),
                                              self.weight("var", (c,), positive=True)], epsilon=1e-5)


def resnet_style(seed: int = 0, opset: int = 13, image: int = 16) -> tuple[onnx.ModelProto, dict]:
    """Stem conv-bn-relu-maxpool, two basic residual blocks (one downsampling), GAP, Flatten, Gemm."""
    b = _Builder(seed)
    x = b.op("Relu", [b.batch_norm(b.conv("data", 3, 8, 3, pad=1, bias=False), 8)])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    for cin, cout, stride in ((8, 8, 1), (8, 16, 2)):
        y = b.op("Relu", [b.batch_norm(b.conv(x, cin, cout, 3, stride=stride, pad=1, bias=False), cout)])
        y = b.batch_norm(b.conv(y, cout, cout, 3, pad=1, bias=False), cout)
        shortcut = x if stride == 1 and cin == cout else b.batch_norm(
            b.conv(x, cin, cout, 1, stride=stride, bias=False), cout)
        x = b.op("Relu", [b.op("Add", [y, shortcut])])
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    logits = b.op("Gemm", [x, b.weight("fc_w", (10, 16), scale=0.3), b.weight("fc_b", (10,), scale=0.1)],
                  transB=1)
    b.nodes.append(node("Softmax", [logits], ["prob"], name="prob", axis=1))
    feeds = {"data": b.rng.standard_normal((1, 3, image, image)).astype(np.float32)}
    return make_model(b.nodes, feeds, ["prob"], b.weights, opset, "resnet_style"), feeds


def squeezenet_style(seed: int = 1, opset: int = 13, image: int = 32) -> tuple[onnx.ModelProto, dict]:
    """SqueezeNet 1.1 in miniature: conv/relu/maxpool stem, fire modules, dropout, 1x1 classifier, GAP."""
    b = _Builder(seed)
    x = b.op("Relu", [b.conv("data", 3, 16, 3, stride=2)])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    def fire(x: str, cin: int, squeeze: int, expand: int) -> str:
        s = b.op("Relu", [b.conv(x, cin, squeeze, 1)])
        e1 = b.op("Relu", [b.conv(s, squeeze, expand, 1)])
        e3 = b.op("Relu", [b.conv(s, squeeze, expand, 3, pad=1)])
        return b.op("Concat", [e1, e3], axis=1)

    x = fire(x, 16, 4, 8)
    x = fire(x, 16, 4, 8)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    x = fire(x, 16, 8, 12)
    x = b.op("Dropout", [x])
    x = b.op("Relu", [b.conv(x, 24, 10, 1)])
    x = b.op("GlobalAveragePool", [x])
    b.nodes.append(node("Flatten", [x], ["logits"], name="logits"))
    feeds = {"data": b.rng.standard_normal((1, 3, image, image)).astype(np.float32)}
    return make_model(b.nodes, feeds, ["logits"], b.weights, opset, "squeezenet_style"), feeds
