"""Every supported ONNX op and definition (opset variant): import, run the numpy reference,
compare with ONNX's reference evaluator on random inputs.

Case ids read `<Op>-opset<N>-<variant>`; test_every_definition_is_covered checks
that the table reaches every (op, since_version) the converter table claims.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest

from byoc_compiler.frontend import from_onnx
from byoc_compiler.frontend.onnx import supported_ops
from byoc_compiler.frontend.onnx.table import since_version
from byoc_compiler.testing.reference import run_reference
from onnx_models import make_model, node, reference_outputs

RNG = np.random.default_rng(1234)
ORT = "onnxruntime"


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def positive(*shape):
    return (np.abs(RNG.standard_normal(shape)) + 0.5).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


@dataclass
class Case:
    id: str
    opset: int
    nodes: list
    inputs: dict
    inits: dict = field(default_factory=dict)
    outputs: tuple = ("y",)
    # "reference" (onnx.reference.ReferenceEvaluator) or "onnxruntime" where the reference evaluator
    # of onnx 1.23 is wrong: BatchNormalization-7/9 run in training mode (momentum is filled from the
    # schema default), Softmax-1/11 ignore the 2-D coercion, LRN loops over the batch instead of the
    # channels; "loops" is an explicit loop nest.
    peer: str = "reference"
    # IR ops that must not appear after import (proves folding)
    absent_ops: tuple = ()

    @property
    def op_type(self) -> str:
        return self.id.split("-")[0]


def op(op_type, inputs, outputs=("y",), **attrs):
    return node(op_type, list(inputs), list(outputs), **attrs)


CASES: list[Case] = []


def add(*cases: Case) -> None:
    CASES.extend(cases)


# ---- elementwise ----------------------------------------------------------------------------------

for _op in ("Add", "Sub", "Mul", "Div"):
    for _opset in (7, 13, 14):
        add(Case(f"{_op}-opset{_opset}-broadcast", _opset, [op(_op, ["a", "b"])],
                 {"a": rand(2, 3, 4), "b": positive(3, 1)}))
    add(Case(f"{_op}-opset13-constant-rhs", 13, [op(_op, ["a", "b"])], {"a": rand(2, 3)}, {"b": positive(3)}))
    add(Case(f"{_op}-opset14-scalar-rhs", 14, [op(_op, ["a", "b"])], {"a": rand(4, 5)},
             {"b": np.array(1.5, np.float32)}))

for _op, _opsets in (("Sum", (7, 8, 13)), ("Max", (7, 8, 12, 13)), ("Min", (7, 8, 12, 13))):
    for _opset in _opsets:
        shapes = ((2, 3), (2, 3), (2, 3)) if _opset < 8 else ((2, 3), (3,), (1, 1))
        add(Case(f"{_op}-opset{_opset}-three", _opset, [op(_op, ["a", "b", "c"])],
                 {n: rand(*s) for n, s in zip("abc", shapes)}))
    add(Case(f"{_op}-opset13-single", 13, [op(_op, ["a"])], {"a": rand(3, 2)}))

for _op, _opsets in (("Relu", (7, 13, 14)), ("Sigmoid", (7, 13)), ("Tanh", (7, 13))):
    for _opset in _opsets:
        add(Case(f"{_op}-opset{_opset}", _opset, [op(_op, ["x"])], {"x": rand(2, 3, 4)}))
add(Case("LeakyRelu-opset7-default-alpha", 7, [op("LeakyRelu", ["x"])], {"x": rand(3, 4)}),
    Case("LeakyRelu-opset16-alpha", 16, [op("LeakyRelu", ["x"], alpha=0.2)], {"x": rand(3, 4)}))

# Cast: every definition; float -> int8 in range (ONNX leaves out-of-range undefined), uint8 -> float,
# float -> float16 (rounded to nearest even), int8 -> int32 and back through the float16 bits.
for _opset in (6, 9, 13, 19, 21):
    add(Case(f"Cast-opset{_opset}-float-int8", _opset, [op("Cast", ["x"], to=onnx.TensorProto.INT8)],
             {"x": np.clip(rand(3, 4) * 40, -127.9, 127.9).astype(np.float32)}),
        Case(f"Cast-opset{_opset}-uint8-float16", _opset, [op("Cast", ["x"], to=onnx.TensorProto.FLOAT16)],
             {"x": np.arange(12, dtype=np.uint8).reshape(3, 4) * 21}),
        Case(f"Cast-opset{_opset}-float-float16", _opset, [op("Cast", ["x"], to=onnx.TensorProto.FLOAT16)],
             {"x": rand(3, 4) * 1000}))

# Quantized ops (QOperator and QDQ pieces) against onnxruntime: every result must be equal, bit for bit.
def _q8(*shape, dtype=np.int8):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


_F = np.float32
for _opset in (10, 13, 19, 21):
    add(Case(f"QuantizeLinear-opset{_opset}-ties", _opset, [op("QuantizeLinear", ["x", "s", "z"])],
             {"x": (RNG.integers(-300, 300, (4, 6)) * 0.5).astype(_F)},
             {"s": np.array(0.5, _F), "z": np.array(3, np.int8)}, peer=ORT),
        Case(f"DequantizeLinear-opset{_opset}", _opset, [op("DequantizeLinear", ["x", "s", "z"])],
             {"x": _q8(3, 5, dtype=np.uint8)}, {"s": np.array(0.07, _F), "z": np.array(128, np.uint8)}, peer=ORT))
add(Case("QuantizeLinear-opset13-per-channel", 13, [op("QuantizeLinear", ["x", "s", "z"], axis=1)],
         {"x": rand(2, 3, 4) * 3}, {"s": np.array([0.01, 0.05, 0.1], _F), "z": np.array([0, -5, 7], np.int8)}, peer=ORT),
    Case("QLinearConv-opset10-per-channel-bias", 10,
         [op("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], pads=[1, 1, 1, 1], strides=[2, 1])],
         {"x": _q8(1, 3, 7, 6, dtype=np.uint8)},
         {"xs": np.array(0.02, _F), "xz": np.array(120, np.uint8), "w": _q8(4, 3, 3, 3),
          "ws": np.array([0.01, 0.003, 0.02, 0.007], _F), "wz": np.zeros(4, np.int8), "ys": np.array(0.3, _F),
          "yz": np.array(100, np.uint8), "b": RNG.integers(-2000, 2000, 4).astype(np.int32)}, peer=ORT),
    Case("QLinearConv-opset10-depthwise-int8", 10,
         [op("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], group=3, pads=[1, 1, 1, 1])],
         {"x": _q8(1, 3, 5, 5)},
         {"xs": np.array(0.05, _F), "xz": np.array(-3, np.int8), "w": _q8(3, 1, 3, 3),
          "ws": np.array(0.01, _F), "wz": np.array(0, np.int8), "ys": np.array(0.1, _F),
          "yz": np.array(-10, np.int8)}, peer=ORT),
    Case("ConvInteger-opset10", 10, [op("ConvInteger", ["x", "w", "xz"], pads=[0, 1, 0, 1])],
         {"x": _q8(1, 2, 5, 4, dtype=np.uint8)}, {"w": _q8(3, 2, 2, 2, dtype=np.uint8),
                                                   "xz": np.array(128, np.uint8)}, peer=ORT),
    Case("MatMulInteger-opset10", 10, [op("MatMulInteger", ["a", "b", "az", "bz"])],
         {"a": _q8(3, 8, dtype=np.uint8)}, {"b": _q8(8, 5, dtype=np.uint8), "az": np.array(128, np.uint8),
                                             "bz": np.array(3, np.uint8)}, peer=ORT))
for _opset in (10, 21):
    add(Case(f"QLinearMatMul-opset{_opset}", _opset,
             [op("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"])], {"a": _q8(4, 16, dtype=np.uint8)},
             {"as": np.array(0.03, _F), "az": np.array(128, np.uint8), "b": _q8(16, 6, dtype=np.uint8),
              "bs": np.array(0.02, _F), "bz": np.array(127, np.uint8), "ys": np.array(0.2, _F),
              "yz": np.array(130, np.uint8)}, peer=ORT))

add(Case("Clip-opset6-attrs", 6, [op("Clip", ["x"], min=-0.5, max=0.7)], {"x": rand(3, 4)}),
    Case("Clip-opset10-attr-min-only", 10, [op("Clip", ["x"], min=0.0)], {"x": rand(3, 4)}),
    Case("Clip-opset10-no-bounds", 10, [op("Clip", ["x"])], {"x": rand(3, 4)}),
    Case("Clip-opset11-inputs", 11, [op("Clip", ["x", "lo", "hi"])], {"x": rand(3, 4)},
         {"lo": np.array(-0.3, np.float32), "hi": np.array(0.4, np.float32)}),
    Case("Clip-opset12-max-only", 12, [op("Clip", ["x", "", "hi"])], {"x": rand(3, 4)},
         {"hi": np.array(0.1, np.float32)}),
    Case("Clip-opset13-inputs", 13, [op("Clip", ["x", "lo", "hi"])], {"x": rand(2, 5)},
         {"lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32)}),
    Case("Clip-opset13-min-only", 13, [op("Clip", ["x", "lo"])], {"x": rand(2, 5)},
         {"lo": np.array(-0.2, np.float32)}),
    Case("Clip-opset13-runtime-bounds", 13, [op("Clip", ["x", "lo", "hi"])],
         {"x": rand(2, 5), "lo": np.array(-0.5, np.float32), "hi": np.array(0.5, np.float32)}),
    Case("Clip-opset13-constant-node-bounds", 13,
         [op("Constant", [], ["lo"], value_float=-0.1), op("Constant", [], ["hi"], value=onnx.numpy_helper.from_array(
             np.array(0.2, np.float32))), op("Clip", ["x", "lo", "hi"])], {"x": rand(2, 5)}))

# ---- nn -------------------------------------------------------------------------------------------

_W = rand(4, 3, 3, 3)
for _opset in (7, 11, 22):
    add(Case(f"Conv-opset{_opset}-pads-strides-bias", _opset,
             [op("Conv", ["x", "w", "b"], kernel_shape=[3, 3], strides=[2, 1], pads=[1, 0, 2, 1])],
             {"x": rand(1, 3, 9, 8)}, {"w": _W, "b": rand(4)}))
add(Case("Conv-opset11-no-attrs", 11, [op("Conv", ["x", "w"])], {"x": rand(2, 3, 6, 6)}, {"w": _W}),
    Case("Conv-opset11-depthwise", 11, [op("Conv", ["x", "w"], group=4, pads=[1, 1, 1, 1])],
         {"x": rand(1, 4, 6, 6)}, {"w": rand(4, 1, 3, 3)}),
    Case("Conv-opset11-groups2", 11, [op("Conv", ["x", "w", "b"], group=2)],
         {"x": rand(1, 4, 5, 5)}, {"w": rand(6, 2, 3, 3), "b": rand(6)}),
    Case("Conv-opset11-dilations", 11, [op("Conv", ["x", "w"], dilations=[2, 2], pads=[2, 2, 2, 2])],
         {"x": rand(1, 3, 8, 8)}, {"w": _W}),
    Case("Conv-opset11-same-upper", 11, [op("Conv", ["x", "w"], auto_pad="SAME_UPPER", strides=[2, 2])],
         {"x": rand(1, 3, 8, 7)}, {"w": _W}),
    Case("Conv-opset11-same-lower", 11, [op("Conv", ["x", "w"], auto_pad="SAME_LOWER", strides=[2, 2])],
         {"x": rand(1, 3, 8, 7)}, {"w": rand(2, 3, 2, 2)}),
    Case("Conv-opset11-valid", 11, [op("Conv", ["x", "w"], auto_pad="VALID", strides=[2, 2])],
         {"x": rand(1, 3, 8, 7)}, {"w": _W}),
    Case("Conv-opset11-1d-pads-strides-dilations-bias", 11,
         [op("Conv", ["x", "w", "b"], strides=[2], pads=[1, 2], dilations=[2])],
         {"x": rand(2, 3, 11)}, {"w": rand(4, 3, 3), "b": rand(4)}),
    Case("Conv-opset22-1d-same-lower-groups", 22, [op("Conv", ["x", "w"], auto_pad="SAME_LOWER", group=3)],
         {"x": rand(1, 3, 8)}, {"w": rand(6, 1, 4)}),
    Case("Conv-opset13-runtime-weight", 13, [op("Conv", ["x", "w"], pads=[1, 1, 1, 1])],
         {"x": rand(1, 3, 5, 5), "w": _W}))

for _opset, _peer in ((7, ORT), (9, ORT), (14, "reference"), (15, "reference")):
    add(Case(f"BatchNormalization-opset{_opset}", _opset,
             [op("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-3)], {"x": rand(2, 3, 4, 4)},
             {"s": positive(3), "b": rand(3), "m": rand(3), "v": positive(3)}, peer=_peer))
add(Case("BatchNormalization-opset15-2d-input", 15, [op("BatchNormalization", ["x", "s", "b", "m", "v"])],
         {"x": rand(4, 3)}, {"s": positive(3), "b": rand(3), "m": rand(3), "v": positive(3)}))

for _opset in (7, 8, 10, 11, 12, 22):
    add(Case(f"MaxPool-opset{_opset}-pads-strides", _opset,
             [op("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])], {"x": rand(1, 2, 7, 8)}))
add(Case("MaxPool-opset8-same-upper", 8, [op("MaxPool", ["x"], kernel_shape=[3, 2], strides=[2, 2],
                                              auto_pad="SAME_UPPER")], {"x": rand(1, 2, 7, 7)}),
    Case("MaxPool-opset11-same-lower", 11, [op("MaxPool", ["x"], kernel_shape=[2, 2], strides=[1, 1],
                                                auto_pad="SAME_LOWER")], {"x": rand(1, 2, 5, 5)}),
    Case("MaxPool-opset10-ceil-mode", 10, [op("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)],
         {"x": rand(1, 2, 8, 8)}),
    Case("MaxPool-opset12-dilations", 12, [op("MaxPool", ["x"], kernel_shape=[2, 2], dilations=[2, 2])],
         {"x": rand(1, 2, 6, 6)}),
    Case("MaxPool-opset12-1d-ceil-mode", 12, [op("MaxPool", ["x"], kernel_shape=[3], strides=[2], pads=[1, 0],
                                                  ceil_mode=1)], {"x": rand(1, 2, 10)}),
    Case("MaxPool-opset8-storage-order-ignored", 8, [op("MaxPool", ["x"], kernel_shape=[2, 2], storage_order=1)],
         {"x": rand(1, 2, 4, 5)}),
    Case("MaxPool-opset12-indices-unused", 12, [op("MaxPool", ["x"], ["y", "idx"], kernel_shape=[2, 2])],
         {"x": rand(1, 1, 4, 4)}))

for _opset in (7, 10, 11, 19, 22):
    for _include in (0, 1):
        add(Case(f"AveragePool-opset{_opset}-count-include-pad{_include}", _opset,
                 [op("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                     count_include_pad=_include)], {"x": rand(1, 2, 7, 8)}))
add(Case("AveragePool-opset10-ceil-mode", 10, [op("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2],
                                                   ceil_mode=1)], {"x": rand(1, 2, 8, 8)}),
    Case("AveragePool-opset11-same-upper", 11, [op("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2],
                                                    auto_pad="SAME_UPPER")], {"x": rand(1, 2, 8, 8)}),
    Case("AveragePool-opset11-1d-count-include-pad", 11,
         [op("AveragePool", ["x"], kernel_shape=[3], pads=[1, 1], count_include_pad=1)], {"x": rand(2, 3, 7)}),
    Case("AveragePool-opset19-dilations", 19, [op("AveragePool", ["x"], kernel_shape=[2, 2], dilations=[2, 1])],
         {"x": rand(1, 2, 6, 6)}))

for _opset in (7, 22):
    add(Case(f"GlobalAveragePool-opset{_opset}", _opset, [op("GlobalAveragePool", ["x"])], {"x": rand(2, 3, 5, 4)}))
add(Case("GlobalAveragePool-opset13-1d", 13, [op("GlobalAveragePool", ["x"])], {"x": rand(2, 3, 5)}))

add(Case("Softmax-opset7-axis1-coerced", 7, [op("Softmax", ["x"])], {"x": rand(2, 3, 4)}, peer=ORT),
    Case("Softmax-opset11-default-axis-4d", 11, [op("Softmax", ["x"])], {"x": rand(2, 3, 2, 2)}, peer=ORT),
    Case("Softmax-opset11-axis0-coerced", 11, [op("Softmax", ["x"], axis=0)], {"x": rand(2, 3)}, peer=ORT),
    Case("Softmax-opset11-last-axis", 11, [op("Softmax", ["x"], axis=-1)], {"x": rand(2, 3, 4)}),
    Case("Softmax-opset13-default-axis", 13, [op("Softmax", ["x"])], {"x": rand(2, 3, 4)}),
    Case("Softmax-opset13-axis1", 13, [op("Softmax", ["x"], axis=1)], {"x": rand(2, 3, 4)}))

add(Case("LRN-opset7-size3", 7, [op("LRN", ["x"], size=3)], {"x": rand(2, 5, 3, 3)}, peer=ORT),
    Case("LRN-opset13-size4-attrs", 13, [op("LRN", ["x"], size=4, alpha=0.01, beta=0.5, bias=2.0)],
         {"x": rand(2, 6, 3, 3)}, peer="loops"))


def lrn_loops(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """The ONNX LRN definition written out: channels c - floor((size-1)/2) .. c + ceil((size-1)/2)."""
    x = x.astype(np.float64)
    out = np.empty_like(x)
    channels = x.shape[1]
    for n in range(x.shape[0]):
        for c in range(channels):
            low, high = max(0, c - (size - 1) // 2), min(channels - 1, c + -(-(size - 1) // 2))
            square_sum = sum(x[n, i] ** 2 for i in range(low, high + 1))
            out[n, c] = x[n, c] / (bias + alpha / size * square_sum) ** beta
    return out.astype(np.float32)

add(Case("Dropout-opset7-ratio-attr", 7, [op("Dropout", ["x"], ratio=0.3)], {"x": rand(3, 4)}),
    Case("Dropout-opset10", 10, [op("Dropout", ["x"])], {"x": rand(3, 4)}),
    Case("Dropout-opset12-ratio-input", 12, [op("Dropout", ["x", "r"])], {"x": rand(3, 4)},
         {"r": np.array(0.2, np.float32)}),
    Case("Dropout-opset13-training-false", 13, [op("Dropout", ["x", "r", "t"], ["y", "mask"])], {"x": rand(3, 4)},
         {"r": np.array(0.2, np.float32), "t": np.array(False)}),
    Case("Dropout-opset22", 22, [op("Dropout", ["x"])], {"x": rand(3, 4)}))

# ---- linear algebra -------------------------------------------------------------------------------

add(Case("Gemm-opset7-bias-vector", 7, [op("Gemm", ["a", "b", "c"])], {"a": rand(3, 4)},
         {"b": rand(4, 5), "c": rand(5)}),
    Case("Gemm-opset9-transB-alpha-beta", 9, [op("Gemm", ["a", "b", "c"], transB=1, alpha=0.5, beta=2.0)],
         {"a": rand(3, 4)}, {"b": rand(5, 4), "c": rand(3, 5)}),
    Case("Gemm-opset11-no-c", 11, [op("Gemm", ["a", "b"], transB=1)], {"a": rand(2, 4)}, {"b": rand(6, 4)}),
    Case("Gemm-opset11-transA", 11, [op("Gemm", ["a", "b", "c"], transA=1)], {"a": rand(4, 3)},
         {"b": rand(4, 5), "c": rand(1, 5)}),
    Case("Gemm-opset13-transA-transB-runtime", 13, [op("Gemm", ["a", "b", "c"], transA=1, transB=1, alpha=1.5)],
         {"a": rand(4, 3), "b": rand(5, 4)}, {"c": np.array(0.25, np.float32)}),
    Case("Gemm-opset13-runtime-b-and-c", 13, [op("Gemm", ["a", "b", "c"], beta=0.5)],
         {"a": rand(3, 4), "b": rand(4, 2), "c": rand(3, 1)}),
    Case("Gemm-opset13-beta0", 13, [op("Gemm", ["a", "b", "c"], beta=0.0)], {"a": rand(3, 4)},
         {"b": rand(4, 2), "c": rand(2)}))

for _opset in (7, 9, 13):
    add(Case(f"MatMul-opset{_opset}-2d-constant", _opset, [op("MatMul", ["a", "b"])], {"a": rand(3, 4)},
             {"b": rand(4, 5)}))
add(Case("MatMul-opset13-2d-runtime", 13, [op("MatMul", ["a", "b"])], {"a": rand(3, 4), "b": rand(4, 2)}),
    Case("MatMul-opset13-3d-by-2d", 13, [op("MatMul", ["a", "b"])], {"a": rand(2, 3, 4)}, {"b": rand(4, 5)}),
    Case("MatMul-opset13-batched-broadcast", 13, [op("MatMul", ["a", "b"])],
         {"a": rand(2, 1, 3, 4), "b": rand(3, 4, 2)}),
    Case("MatMul-opset13-2d-by-batched", 13, [op("MatMul", ["a", "b"])], {"a": rand(3, 4), "b": rand(2, 4, 5)}),
    Case("MatMul-opset13-1d-by-2d", 13, [op("MatMul", ["a", "b"])], {"a": rand(4)}, {"b": rand(4, 3)}),
    Case("MatMul-opset13-2d-by-1d", 13, [op("MatMul", ["a", "b"])], {"a": rand(3, 4), "b": rand(4)}),
    Case("MatMul-opset13-1d-by-1d", 13, [op("MatMul", ["a", "b"])], {"a": rand(4), "b": rand(4)}),
    Case("MatMul-opset13-1d-by-batched", 13, [op("MatMul", ["a", "b"])], {"a": rand(4), "b": rand(2, 4, 3)}))

# ---- shape ops ------------------------------------------------------------------------------------

for _opset, _axis in ((7, 1), (11, -1), (13, 0)):
    add(Case(f"Concat-opset{_opset}-axis{_axis}", _opset, [op("Concat", ["a", "b", "c"], axis=_axis)],
             {"a": rand(2, 3), "b": rand(2, 3)}, {"c": rand(2, 3)}))

for _opset in (7, 13, 19, 21, 23, 24, 25):
    add(Case(f"Reshape-opset{_opset}-zero-and-minus-one", _opset, [op("Reshape", ["x", "s"])],
             {"x": rand(2, 3, 4)}, {"s": i64(0, -1, 2)}))
add(Case("Reshape-opset14-allowzero", 14, [op("Reshape", ["x", "s"], allowzero=1)], {"x": rand(2, 3, 4)},
         {"s": i64(4, 6)}),
    Case("Reshape-opset14-allowzero0", 14, [op("Reshape", ["x", "s"], allowzero=0)], {"x": rand(2, 3, 4)},
         {"s": i64(0, 12)}),
    Case("Reshape-opset13-shape-from-constant-node", 13,
         [op("Constant", [], ["s"], value_ints=[-1]), op("Reshape", ["x", "s"])], {"x": rand(2, 3)}),
    Case("Reshape-opset13-exporter-shape-arithmetic", 13,
         [op("Shape", ["x"], ["shp"]), op("Gather", ["shp", "zero"], ["n"], axis=0),
          op("Unsqueeze", ["n", "ax0"], ["n1"]), op("Concat", ["n1", "minus1"], ["target"], axis=0),
          op("Reshape", ["x", "target"])],
         {"x": rand(2, 3, 4)}, {"zero": np.array(0, np.int64), "ax0": i64(0), "minus1": i64(-1)},
         absent_ops=("take", "concatenate", "expand_dims")))

for _opset, _axis in ((7, 1), (9, 2), (11, -1), (13, 0), (21, 3), (23, 1), (24, 2), (25, -3)):
    add(Case(f"Flatten-opset{_opset}-axis{_axis}", _opset, [op("Flatten", ["x"], axis=_axis)],
             {"x": rand(2, 3, 2, 2)}))

for _opset in (7, 13, 21, 23, 24, 25):
    add(Case(f"Transpose-opset{_opset}-perm", _opset, [op("Transpose", ["x"], perm=[1, 2, 0])], {"x": rand(2, 3, 4)}))
add(Case("Transpose-opset13-default-reverse", 13, [op("Transpose", ["x"])], {"x": rand(2, 3, 4)}))

add(Case("Squeeze-opset7-axes-attr", 7, [op("Squeeze", ["x"], axes=[0, 2])], {"x": rand(1, 3, 1, 2)}),
    Case("Squeeze-opset11-negative-axes", 11, [op("Squeeze", ["x"], axes=[-2])], {"x": rand(1, 3, 1, 2)}),
    Case("Squeeze-opset11-all", 11, [op("Squeeze", ["x"])], {"x": rand(1, 3, 1, 2)}),
    Case("Squeeze-opset13-axes-input", 13, [op("Squeeze", ["x", "axes"])], {"x": rand(1, 3, 1, 2)},
         {"axes": i64(0, -2)}),
    Case("Squeeze-opset13-no-axes", 13, [op("Squeeze", ["x"])], {"x": rand(1, 3, 1, 2)}),
    Case("Squeeze-opset21-axes-input", 21, [op("Squeeze", ["x", "axes"])], {"x": rand(3, 1)}, {"axes": i64(1)}),
    Case("Squeeze-opset23-axes-input", 23, [op("Squeeze", ["x", "axes"])], {"x": rand(1, 3)}, {"axes": i64(0)}),
    Case("Squeeze-opset24-no-axes", 24, [op("Squeeze", ["x"])], {"x": rand(1, 3, 1)}),
    Case("Squeeze-opset25-axes-input", 25, [op("Squeeze", ["x", "axes"])], {"x": rand(2, 1)}, {"axes": i64(-1)}))

add(Case("Unsqueeze-opset7-axes-attr", 7, [op("Unsqueeze", ["x"], axes=[0, 3])], {"x": rand(3, 2)}),
    Case("Unsqueeze-opset11-negative-axes", 11, [op("Unsqueeze", ["x"], axes=[-1, 1])], {"x": rand(3, 2)}),
    Case("Unsqueeze-opset13-axes-input", 13, [op("Unsqueeze", ["x", "axes"])], {"x": rand(3, 2)},
         {"axes": i64(4, 0, 2)}),
    Case("Unsqueeze-opset21-axes-input", 21, [op("Unsqueeze", ["x", "axes"])], {"x": rand(3)}, {"axes": i64(0)}),
    Case("Unsqueeze-opset23-axes-input", 23, [op("Unsqueeze", ["x", "axes"])], {"x": rand(3)}, {"axes": i64(-1)}),
    Case("Unsqueeze-opset24-axes-input", 24, [op("Unsqueeze", ["x", "axes"])], {"x": rand(3)}, {"axes": i64(1)}),
    Case("Unsqueeze-opset25-axes-input", 25, [op("Unsqueeze", ["x", "axes"])], {"x": rand(3, 2)},
         {"axes": i64(0, -1)}))

for _opset in (7, 13, 14, 16, 19, 21, 23, 24, 25):
    add(Case(f"Identity-opset{_opset}", _opset, [op("Identity", ["x"], ["i"]), op("Relu", ["i"])], {"x": rand(3, 2)}))
add(Case("Identity-opset13-graph-input-to-output", 13, [op("Identity", ["x"])], {"x": rand(3, 2)}))

add(Case("Pad-opset7-constant-attrs", 7, [op("Pad", ["x"], pads=[0, 1, 2, 1, 0, 2], value=1.5)],
         {"x": rand(2, 3, 2)}),
    Case("Pad-opset10-reflect-attrs", 10, [op("Pad", ["x"], mode="reflect", pads=[0, 0, 1, 2, 0, 0, 2, 1])],
         {"x": rand(1, 2, 4, 4)}),
    Case("Pad-opset10-edge-attrs", 10, [op("Pad", ["x"], mode="edge", pads=[0, 0, 1, 2, 0, 0, 2, 1])],
         {"x": rand(1, 2, 4, 4)}),
    Case("Pad-opset11-constant-inputs", 11, [op("Pad", ["x", "p", "v"])], {"x": rand(2, 3)},
         {"p": i64(1, 0, 0, 2), "v": np.array(-1.0, np.float32)}),
    Case("Pad-opset13-reflect-inputs", 13, [op("Pad", ["x", "p"], mode="reflect")], {"x": rand(3, 4)},
         {"p": i64(2, 1, 1, 3)}),
    Case("Pad-opset13-edge-inputs", 13, [op("Pad", ["x", "p"], mode="edge")], {"x": rand(3, 4)},
         {"p": i64(2, 1, 1, 3)}),
    Case("Pad-opset18-axes-input", 18, [op("Pad", ["x", "p", "", "axes"])], {"x": rand(2, 3, 4)},
         {"p": i64(1, 2, 3, 0), "axes": i64(0, -1)}),
    Case("Pad-opset19-constant", 19, [op("Pad", ["x", "p", "v"])], {"x": rand(2, 3)},
         {"p": i64(1, 1, 1, 1), "v": np.array(3.0, np.float32)}),
    Case("Pad-opset21-edge", 21, [op("Pad", ["x", "p"], mode="edge")], {"x": rand(2, 3)}, {"p": i64(1, 1, 1, 1)}),
    Case("Pad-opset23-reflect", 23, [op("Pad", ["x", "p"], mode="reflect")], {"x": rand(3, 3)},
         {"p": i64(1, 2, 2, 1)}),
    Case("Pad-opset24-constant-axes", 24, [op("Pad", ["x", "p", "v", "axes"])], {"x": rand(2, 3)},
         {"p": i64(2, 1), "v": np.array(0.5, np.float32), "axes": i64(1)}),
    Case("Pad-opset25-edge", 25, [op("Pad", ["x", "p"], mode="edge")], {"x": rand(2, 3)}, {"p": i64(0, 1, 2, 0)}))

_CONST = onnx.numpy_helper.from_array(rand(3, 2), "c")
for _opset in (7, 9, 11, 12, 13, 19, 21, 23, 24, 25):
    add(Case(f"Constant-opset{_opset}-value", _opset, [op("Constant", [], ["c"], value=_CONST), op("Add", ["x", "c"])],
             {"x": rand(3, 2)}))
add(Case("Constant-opset12-value-float", 12, [op("Constant", [], ["c"], value_float=2.5), op("Mul", ["x", "c"])],
         {"x": rand(3, 2)}),
    Case("Constant-opset12-value-floats", 12, [op("Constant", [], ["c"], value_floats=[1.0, -2.0]),
                                               op("Mul", ["x", "c"])], {"x": rand(3, 2)}),
    Case("Constant-opset13-value-ints", 13, [op("Constant", [], ["y"], value_ints=[3, 1, 4])], {}),
    Case("Constant-opset13-value-int", 13, [op("Constant", [], ["y"], value_int=7)], {}))

for _opset in (9, 20, 21, 23, 24, 25):
    add(Case(f"ConstantOfShape-opset{_opset}-value", _opset,
             [op("Shape", ["x"], ["s"]), op("ConstantOfShape", ["s"], ["c"],
                                            value=onnx.helper.make_tensor("v", onnx.TensorProto.FLOAT, [1], [2.5])),
              op("Add", ["x", "c"])], {"x": rand(2, 3)}))
add(Case("ConstantOfShape-opset9-default-zero", 9, [op("ConstantOfShape", ["s"])], {}, {"s": i64(2, 3)}))

for _opset in (7, 13, 19, 21, 23, 24, 25):
    add(Case(f"Shape-opset{_opset}", _opset, [op("Shape", ["x"])], {"x": rand(2, 3, 4)}))
add(Case("Shape-opset15-start-end", 15, [op("Shape", ["x"], start=1, end=-1)], {"x": rand(2, 3, 4, 5)}),
    Case("Shape-opset15-start-only", 15, [op("Shape", ["x"], start=-2)], {"x": rand(2, 3, 4, 5)}))

add(Case("Gather-opset7-constant-indices", 7, [op("Gather", ["x", "i"], axis=1)], {"x": rand(3, 4, 2)},
         {"i": i64(3, 0, 0)}),
    Case("Gather-opset11-negative-indices", 11, [op("Gather", ["x", "i"], axis=-1)], {"x": rand(3, 4)},
         {"i": np.array([[-1, 0], [2, -4]], np.int64)}),
    Case("Gather-opset13-scalar-index", 13, [op("Gather", ["x", "i"])], {"x": rand(3, 4)},
         {"i": np.array(-2, np.int64)}),
    Case("Gather-opset13-runtime-indices", 13, [op("Gather", ["x", "i"], axis=0)],
         {"x": rand(5, 3), "i": np.array([[4, -1], [0, -5]], np.int64)}),
    Case("Gather-opset13-runtime-int32-indices", 13, [op("Gather", ["x", "i"], axis=1)],
         {"x": rand(2, 5), "i": np.array([1, 3, 3], np.int32)}),
    Case("Gather-opset13-constant-data-folded", 13, [op("Gather", ["t", "i"], ["g"], axis=0), op("Add", ["x", "g"])],
         {"x": rand(2, 3)}, {"t": rand(4, 3), "i": i64(3, 1)}, absent_ops=("take",)),
    Case("Gather-opset13-constant-data-runtime-indices", 13, [op("Gather", ["t", "i"], axis=0)],
         {"i": np.array([2, 0], np.int64)}, {"t": rand(4, 3)}))

# ---- the ops of today's models (comparisons, reductions, slicing, resize, transformer ops) ---------

def _bools(*shape):
    return RNG.integers(0, 2, shape).astype(bool)


def _ints(*shape):
    return RNG.integers(-3, 4, shape).astype(np.float32)


for _op, _versions in (("Equal", (7, 11, 13, 19)), ("Less", (7, 9, 13)), ("Greater", (7, 9, 13)),
                       ("LessOrEqual", (12, 16)), ("GreaterOrEqual", (12, 16))):
    for _opset in _versions:
        add(Case(f"{_op}-opset{_opset}-broadcast", _opset, [op(_op, ["a", "b"])], {"a": _ints(2, 3), "b": _ints(3)}))
add(Case("Equal-opset13-int64", 13, [op("Equal", ["a", "b"])],
         {"a": np.array([[1, 2], [3, 4]], np.int64), "b": np.array([1, 4], np.int64)}))
for _op in ("And", "Or", "Xor"):
    add(Case(f"{_op}-opset7-broadcast", 7, [op(_op, ["a", "b"])], {"a": _bools(2, 3), "b": _bools(3)}))
add(Case("Not-opset1", 7, [op("Not", ["a"])], {"a": _bools(3, 4)}))
for _opset in (9, 16):
    add(Case(f"Where-opset{_opset}-broadcast", _opset, [op("Where", ["c", "x", "z"])],
             {"c": _bools(3, 1), "x": rand(1, 4), "z": rand(3, 4)}))

for _op, _versions in (("Neg", (6, 13)), ("Abs", (6, 13)), ("Exp", (6, 13)), ("Erf", (9, 13)),
                       ("HardSwish", (14, 22))):
    for _opset in _versions:
        add(Case(f"{_op}-opset{_opset}", _opset, [op(_op, ["x"])], {"x": rand(3, 5)}))
for _op in ("Log", "Sqrt", "Reciprocal"):
    for _opset in (6, 13):
        add(Case(f"{_op}-opset{_opset}", _opset, [op(_op, ["x"])], {"x": positive(3, 5)}))
for _opset in (6, 22):
    add(Case(f"HardSigmoid-opset{_opset}", _opset, [op("HardSigmoid", ["x"], alpha=0.3, beta=0.6)], {"x": rand(4, 5)}))
add(Case("Gelu-opset20-none", 20, [op("Gelu", ["x"])], {"x": rand(3, 6)}),
    Case("Gelu-opset20-tanh", 20, [op("Gelu", ["x"], approximate="tanh")], {"x": rand(3, 6)}))
for _opset in (7, 12, 13, 15):
    add(Case(f"Pow-opset{_opset}", _opset, [op("Pow", ["x", "e"])], {"x": positive(2, 3), "e": rand(3)}))
add(Case("Pow-opset15-int-exponent", 15, [op("Pow", ["x", "e"])], {"x": rand(2, 3)},
         {"e": np.array([2, 3, 0], np.int64)}))
for _opset in (6, 9, 13, 19, 21, 23, 24, 25, 28):
    add(Case(f"Cast-opset{_opset}-float-to-int64", _opset, [op("Cast", ["x"], to=onnx.TensorProto.INT64)],
             {"x": rand(3, 4) * 4}))
add(Case("Cast-opset13-int32-to-float", 13, [op("Cast", ["x"], to=onnx.TensorProto.FLOAT)],
         {"x": np.array([1, -2, 7], np.int32)}),
    Case("Cast-opset13-float-to-bool", 13, [op("Cast", ["x"], to=onnx.TensorProto.BOOL)],
         {"x": np.array([0.0, 2.5, -1.0], np.float32)}),
    Case("LayerNormalization-opset17-last", 17, [op("LayerNormalization", ["x", "g", "b"])], {"x": rand(2, 3, 8)},
         {"g": rand(8), "b": rand(8)}),
    Case("LayerNormalization-opset17-axis1-stats", 17,
         [op("LayerNormalization", ["x", "g"], ["y", "mean", "inv"], axis=1, epsilon=0.01)], {"x": rand(2, 3, 4)},
         {"g": rand(3, 4)}, outputs=("y", "mean", "inv")))

# Reductions: attribute axes, input axes, empty axes with and without noop_with_empty_axes.
_REDUCE = {"ReduceSum": ((1, 11), (13,)), "ReduceMean": ((1, 11, 13), (18,)), "ReduceProd": ((1, 11, 13), (18,)),
           "ReduceMax": ((1, 11, 12, 13), (18, 20)), "ReduceMin": ((1, 11, 12, 13), (18, 20)),
           "ReduceL1": ((1, 11, 13), (18,)), "ReduceL2": ((1, 11, 13), (18,)),
           "ReduceLogSum": ((1, 11, 13), (18, 28)), "ReduceLogSumExp": ((1, 11, 13), (18, 28)),
           "ReduceSumSquare": ((1, 11, 13), (18,))}
for _op, (_attr_versions, _input_versions) in _REDUCE.items():
    _x = positive(3, 4, 5) if _op in ("ReduceLogSum", "ReduceProd") else rand(3, 4, 5)
    for _opset in _attr_versions:
        add(Case(f"{_op}-opset{max(_opset, 7)}-axes-attr", max(_opset, 7), [op(_op, ["x"], axes=[0, -1], keepdims=0)],
                 {"x": _x}))
    for _opset in _input_versions:
        add(Case(f"{_op}-opset{_opset}-axes-input", _opset, [op(_op, ["x", "a"])], {"x": _x}, {"a": i64(1)}))
    add(Case(f"{_op}-opset{_input_versions[0]}-all-axes", _input_versions[0], [op(_op, ["x"], keepdims=0)], {"x": _x}))
    add(Case(f"{_op}-opset{_input_versions[0]}-noop", _input_versions[0], [op(_op, ["x"], noop_with_empty_axes=1)],
             {"x": _x}))
for _op in ("ArgMax", "ArgMin"):
    for _opset in (7, 11, 12, 13):
        add(Case(f"{_op}-opset{_opset}-axis1", _opset, [op(_op, ["x"], axis=1)], {"x": rand(3, 5, 2)}))
    add(Case(f"{_op}-opset13-last-index", 13, [op(_op, ["x"], axis=-1, keepdims=0, select_last_index=1)],
             {"x": _ints(4, 6)}))

# Slicing and friends.
add(Case("Slice-opset7-attrs", 7, [op("Slice", ["x"], starts=[1, -3], ends=[100, -1], axes=[0, 2])],
         {"x": rand(4, 3, 5)}))
for _opset in (10, 11, 13):
    add(Case(f"Slice-opset{_opset}-steps", _opset, [op("Slice", ["x", "s", "e", "a", "t"])], {"x": rand(5, 6)},
             {"s": i64(4, 1), "e": i64(-100, 6), "a": i64(0, 1), "t": i64(-2, 2)}))
add(Case("Slice-opset13-int64-max", 13, [op("Slice", ["x", "s", "e"])], {"x": rand(5, 6)},
         {"s": i64(1), "e": i64(np.iinfo(np.int64).max)}))
for _opset in (2, 11):
    add(Case(f"Split-opset{_opset}-attr", _opset, [op("Split", ["x"], ["y", "z"], axis=1, split=[1, 3])],
             {"x": rand(2, 4)}, outputs=("y", "z")))
add(Case("Split-opset13-input", 13, [op("Split", ["x", "s"], ["y", "z"])], {"x": rand(5, 2)}, {"s": i64(2, 3)},
         outputs=("y", "z")),
    Case("Split-opset13-equal", 13, [op("Split", ["x"], ["y", "z", "w"], axis=-1)], {"x": rand(2, 6)},
         outputs=("y", "z", "w")),
    Case("Split-opset18-num-outputs", 18, [op("Split", ["x"], ["y", "z", "w"], num_outputs=3)], {"x": rand(7, 2)},
         outputs=("y", "z", "w")))
for _opset in (8, 13):
    add(Case(f"Expand-opset{_opset}", _opset, [op("Expand", ["x", "s"])], {"x": rand(3, 1)}, {"s": i64(2, 1, 4)}))
for _opset in (6, 13):
    add(Case(f"Tile-opset{_opset}", _opset, [op("Tile", ["x", "r"])], {"x": rand(2, 3)}, {"r": i64(2, 2)}))
add(Case("MatMul-opset13-batched-broadcast", 13, [op("MatMul", ["a", "b"])], {"a": rand(2, 1, 3, 4), "b": rand(5, 4, 2)}))

# Resize and Upsample.
_SCALES = np.array([1, 1, 2, 1.5], np.float32)
_NO_ROI = np.zeros(0, np.float32)
for _opset in (7,):
    add(Case("Upsample-opset7-nearest", _opset, [op("Upsample", ["x"], scales=[1.0, 1.0, 2.0, 3.0])],
             {"x": rand(1, 2, 3, 2)}, peer=ORT))
add(Case("Upsample-opset9-linear", 9, [op("Upsample", ["x", "s"], mode="linear")], {"x": rand(1, 1, 3, 4)},
         {"s": np.array([1, 1, 2, 2], np.float32)}, peer=ORT),
    Case("Resize-opset10-nearest", 10, [op("Resize", ["x", "s"])], {"x": rand(1, 2, 3, 4)}, {"s": _SCALES}, peer=ORT))
for _opset in (11, 13, 18, 19):
    add(Case(f"Resize-opset{_opset}-linear-half-pixel", _opset, [op("Resize", ["x", "r", "s"], mode="linear")],
             {"x": rand(1, 2, 3, 4)}, {"s": _SCALES, "r": _NO_ROI}),
        Case(f"Resize-opset{_opset}-nearest-sizes", _opset, [op("Resize", ["x", "r", "e", "z"], nearest_mode="floor",
                                                                 coordinate_transformation_mode="asymmetric")],
             {"x": rand(1, 2, 3, 4)}, {"z": i64(1, 2, 5, 3), "r": _NO_ROI, "e": _NO_ROI}))
add(Case("Resize-opset13-cubic-align-corners", 13,
         [op("Resize", ["x", "", "s"], mode="cubic", coordinate_transformation_mode="align_corners")],
         {"x": rand(1, 1, 4, 4)}, {"s": np.array([1, 1, 0.75, 1.5], np.float32)}),
    Case("Resize-opset18-linear-antialias-axes", 18, [op("Resize", ["x", "", "s"], mode="linear", antialias=1,
                                                         axes=[2, 3])],
         {"x": rand(1, 1, 8, 8)}, {"s": np.array([0.5, 0.375], np.float32)}))


def _model(case: Case) -> onnx.ModelProto:
    return make_model(case.nodes, case.inputs, case.outputs, case.inits, case.opset, name=case.id)


def _peer(case: Case, model: onnx.ModelProto) -> list[np.ndarray]:
    if case.peer == "loops":  # ONNX's reference evaluator and onnxruntime both fail LRN with an even size
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in case.nodes[0].attribute}
        return [lrn_loops(case.inputs["x"], attrs["size"], attrs["alpha"], attrs["beta"], attrs["bias"])]
    if case.peer == "onnxruntime":
        import onnxruntime as ort  # a test dependency (pyproject's test extras), never optional
        from byoc_compiler.testing.quantize import weights_as_uint8  # exact on CPUs without VNNI too

        session = ort.InferenceSession(weights_as_uint8(model).SerializeToString(), providers=["CPUExecutionProvider"])
        return session.run(None, case.inputs)
    return reference_outputs(model, case.inputs)


def _ir_ops(mod) -> set[str]:
    from byoc_compiler.ir import Call, Op, post_order

    return {n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_matches_onnx_reference(case: Case):
    model = _model(case)
    mod = from_onnx(model)
    ours = run_reference(mod, case.inputs)
    theirs = _peer(case, model)
    assert len(ours) == len(theirs) == len(case.outputs)
    for got, want in zip(ours, theirs):
        want = np.asarray(want)
        assert got.shape == want.shape
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(got, want.astype(got.dtype))
    assert not _ir_ops(mod) & set(case.absent_ops)


def test_every_definition_is_covered():
    """Each (op, since_version) in the converter table is exercised by some case above."""
    covered = {(c.op_type, since_version(c.op_type, c.opset)) for c in CASES}
    missing = [f"{op_type}-{v}" for op_type, versions in supported_ops().items() for v in versions
               if (op_type, v) not in covered]
    assert not missing, f"definitions without a test case: {missing}"
