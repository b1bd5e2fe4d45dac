"""The model zoo: small models built in the IR, and real-size models built as ONNX graphs.

`get(name)` returns a fresh, type-checked IRModule (weights are Constants, inputs are
parameters of main); `inputs(name, seed)` gives deterministic inputs.

Two kinds of models, both with fixed-seed float32 weights (nothing is downloaded):
- `names()`: small models written in the IR below, cheap enough that the test suite builds
  every one in every configuration;
- `onnx_names()`: real-size architectures (and width/resolution-reduced variants of them for
  qemu lanes) written as ONNX graphs in this package (resnet.py, mobilenet.py, built with
  onnx_graph.GraphBuilder). `onnx_model(name)` is the onnx.ModelProto, the very model
  onnxruntime runs as the peer; `get(name)` imports it. `python -m byoc_compiler zoo export
  NAME OUT.onnx` writes it. They need the `onnx` package. Add an architecture as a module
  here and a row in ONNX_MODELS.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

import numpy as np

from .. import op
from ..errors import ByocError
from ..frontend import from_onnx
from ..ir.expr import Constant, Expr, Function, Tuple, TupleGetItem, Var
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..transform.infer_type import infer_type
from .bert import bert_tiny
from .efficientnet import efficientnet_lite
from .mobilenet import mobilenetv2
from .resnet import resnet50
from .shufflenet import shufflenet
from .tiny import MODELS as _TINY_MODELS, TFLITE as _TFLITE_MODELS, TFLITE_16X8 as _TFLITE_16X8, \
    tflite_model as _tiny_tflite, zoo_rows as _tiny_rows


class _Weights:
    """Deterministic float32 constants, drawn in the order a model asks for them."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def normal(self, shape, scale: float = 1.0) -> Constant:
        return Constant((self.rng.standard_normal(shape) * scale).astype(np.float32))

    def uniform(self, shape, low: float, high: float) -> Constant:
        return Constant(self.rng.uniform(low, high, shape).astype(np.float32))

    def conv(self, out_channels: int, in_channels: int, k: int) -> Constant:
        return self.normal((out_channels, in_channels, k, k), 1.0 / np.sqrt(in_channels * k * k))

    def dense(self, units: int, k: int) -> Constant:
        return self.normal((units, k), 1.0 / np.sqrt(k))

    def batch_norm(self, x: Expr, channels: int) -> Expr:
        bn = op.nn.batch_norm(x, self.uniform((channels,), 0.5, 1.5), self.normal((channels,), 0.1),
                              self.normal((channels,), 0.1), self.uniform((channels,), 0.5, 1.5))
        return TupleGetItem(bn, 0)


def _var(name: str, shape) -> Var:
    return Var(name, TensorType(tuple(shape), "float32"))


def byoc_guide() -> Function:
    """The TVM BYOC guide's example: (a + b - c) * d on four 10x10 inputs."""
    a, b, c, d = (_var(n, (10, 10)) for n in "abcd")
    return Function([a, b, c, d], op.multiply(op.subtract(op.add(a, b), c), d))


def mlp() -> Function:
    """Dense + bias + relu layers 32 -> 64 -> 32 -> 10 and a softmax."""
    w = _Weights(1)
    x = _var("x", (1, 32))
    h = x
    sizes = [32, 64, 32, 10]
    for i, (k, units) in enumerate(zip(sizes, sizes[1:])):
        h = op.nn.bias_add(op.nn.dense(h, w.dense(units, k)), w.normal((units,), 0.1))
        h = op.nn.relu(h) if i < len(sizes) - 2 else op.nn.softmax(h)
    return Function([x], h)


def _conv_bn_relu(w: _Weights, x: Expr, in_channels: int, out_channels: int) -> Expr:
    y = op.nn.conv2d(x, w.conv(out_channels, in_channels, 3), padding=(1, 1), channels=out_channels,
                     kernel_size=(3, 3))
    return op.nn.relu(w.batch_norm(y, out_channels))


def small_cnn() -> Function:
    """Two conv3x3 + batch_norm + relu + max pool stages on 16x16x3, dense to 10 classes, softmax."""
    w = _Weights(2)
    x = _var("data", (1, 3, 16, 16))
    h = op.nn.max_pool2d(_conv_bn_relu(w, x, 3, 8), pool_size=(2, 2), strides=(2, 2))
    h = op.nn.max_pool2d(_conv_bn_relu(w, h, 8, 16), pool_size=(2, 2), strides=(2, 2))
    h = op.nn.batch_flatten(h)
    h = op.nn.bias_add(op.nn.dense(h, w.dense(10, 16 * 4 * 4)), w.normal((10,), 0.1))
    return Function([x], op.nn.softmax(h))


def residual_block() -> Function:
    """One ResNet basic block (conv + batch_norm + relu twice, identity shortcut) on 8x8x8."""
    w = _Weights(3)
    x = _var("data", (1, 8, 8, 8))
    h = _conv_bn_relu(w, x, 8, 8)
    h = w.batch_norm(op.nn.conv2d(h, w.conv(8, 8, 3), padding=(1, 1)), 8)
    return Function([x], op.nn.relu(op.add(h, x)))


def multi_output() -> Function:
    """One input feeding three branches; lrn, concatenate and split exercise the host fallback."""
    w = _Weights(4)
    x = _var("data", (1, 4, 8, 8))
    conv = op.nn.relu(op.nn.conv2d(x, w.conv(4, 4, 3), padding=(1, 1)))
    norm = op.nn.lrn(x, size=3)
    halves = op.split(op.concatenate([conv, norm], axis=1), 2, axis=1)
    mixed = op.add(TupleGetItem(halves, 0), TupleGetItem(halves, 1))
    pooled = op.nn.max_pool2d(conv, pool_size=(2, 2), strides=(2, 2))
    return Function([x], Tuple([pooled, op.tanh(norm), mixed]))


_MODELS: dict[str, Callable[[], Function]] = {
    "byoc_guide": byoc_guide,
    "mlp": mlp,
    "small_cnn": small_cnn,
    "residual_block": residual_block,
    "multi_output": multi_output,
}


# name -> (builder of the onnx.ModelProto, one line for `zoo list`). The full-size models are the
# papers' ImageNet configurations; the _tiny variants keep every layer of the architecture at 1/8
# (ResNet) or 1/4 (MobileNetV2) of the width and 64x64 input, small enough for qemu-user lanes.
ONNX_MODELS: dict[str, tuple[Callable[[], object], str]] = {
    "resnet50": (resnet50, "ResNet-50 v1, 224x224, 1000 classes, 25.6 M weights"),
    "mobilenetv2": (mobilenetv2, "MobileNetV2 1.0, 224x224, 1000 classes, 3.5 M weights"),
    "resnet50_tiny": (functools.partial(resnet50, width=8, resolution=64, classes=100),
                      "ResNet-50 v1 at 1/8 width, 64x64, 100 classes, 0.4 M weights"),
    "mobilenetv2_tiny": (functools.partial(mobilenetv2, width=0.25, resolution=64, classes=100,
                                           last_channels=320),
                         "MobileNetV2 0.25, 64x64, 100 classes, last conv 320 wide, 0.2 M weights"),
    "efficientnet_lite": (efficientnet_lite, "EfficientNet-lite-style CNN (HardSwish, squeeze-excite gates), "
                                              "224x224, 1000 classes"),
    "efficientnet_lite_tiny": (functools.partial(efficientnet_lite, width=0.25, resolution=64, classes=100,
                                                 head=320),
                               "EfficientNet-lite-style at 0.25 width, 64x64, 100 classes"),
    "bert_tiny": (bert_tiny, "BERT-tiny-like encoder: 2 layers, hidden 128, 2 heads, sequence 128"),
    "shufflenet": (shufflenet, "ShuffleNet v1, groups 3, 224x224, 1000 classes: 16 channel shuffles "
                               "(Reshape-Transpose-Reshape) between group convolutions"),
    "shufflenet_tiny": (functools.partial(shufflenet, width=0.5, resolution=64, classes=100),
                        "ShuffleNet v1 at 0.5 width, 64x64, 100 classes"),
    # microcontroller models (tiny/): MLPerf Tiny's shapes, float32 and int8 QDQ from one generator
    **_tiny_rows(),
}

# The real-size models at full size (benchmarks, the realsize test marker).
FULL_SIZE = ("resnet50", "mobilenetv2")


def names() -> list[str]:
    """The small IR-built models (every test configuration builds all of them)."""
    return list(_MODELS)


def onnx_names() -> list[str]:
    """The real-size architectures built as ONNX graphs, full size and reduced."""
    return list(ONNX_MODELS)


def all_names() -> list[str]:
    return names() + onnx_names()


def describe(name: str) -> str:
    """One line about model `name`."""
    if name in ONNX_MODELS:
        return ONNX_MODELS[name][1]
    if name in tflite_names():       # a 16x8 form (.tflite only)
        return f"{_TINY_MODELS[name.removesuffix('_16x8')][1]}; 16x8: int16 activations, int8 weights, .tflite only"
    doc = (_builder(name).__doc__ or "").strip().splitlines()
    return doc[0] if doc else ""


def _unknown(name: str) -> ValueError:
    return ValueError(f"unknown zoo model {name!r}; the zoo has: {', '.join(all_names())}")


def _builder(name: str) -> Callable[[], Function]:
    try:
        return _MODELS[name]
    except KeyError:
        raise _unknown(name) from None


@functools.lru_cache(maxsize=2)
def _onnx_model_bytes(name: str) -> bytes:
    return ONNX_MODELS[name][0]().SerializeToString()


def onnx_model(name: str):
    """The onnx.ModelProto of an ONNX-built zoo model (a fresh copy)."""
    if name not in ONNX_MODELS:
        raise _unknown(name) if name not in _MODELS else ValueError(
            f"zoo model {name!r} is built in the IR, not as ONNX; ONNX-built models: {', '.join(ONNX_MODELS)}")
    try:
        import onnx   # optional: only the ONNX-built models need it
    except ImportError:
        raise ByocError(f"zoo model {name!r} is built as an ONNX graph and needs the onnx package: "
                        "pip install onnx") from None
    model = onnx.ModelProto()
    model.ParseFromString(_onnx_model_bytes(name))
    return model


def tflite_names() -> list[str]:
    """The zoo models that also have a .tflite form (the microcontroller models, int8 and float32), then the
    .tflite-only 16x8 forms (`<model>_16x8`: int16 activations, int8 weights)."""
    return [n for m in _TFLITE_MODELS for n in (f"{m}_int8", m)] + [f"{m}_16x8" for m in _TFLITE_16X8]


def tflite_model(name: str) -> bytes:
    """The .tflite bytes of zoo model `name` (`<model>_int8`: int8 in and out; `<model>`: float32), written
    from the same weights and quantization parameters as its ONNX form; `<model>_16x8`: from the same
    weights, int16 activations (no ONNX form)."""
    if name not in tflite_names():
        raise _unknown(name) if name not in all_names() else ValueError(
            f"zoo model {name!r} has no .tflite form; models with one: {', '.join(tflite_names())}")
    if name.endswith("_16x8"):
        return _tiny_tflite(name.removesuffix("_16x8"), False, True)
    return _tiny_tflite(name.removesuffix("_int8"), name.endswith("_int8"))


def export_tflite(name: str, path) -> None:
    """Write zoo model `name` as a .tflite file (what LiteRT, TensorFlow Lite Micro and `scons model=` read)."""
    Path(path).write_bytes(tflite_model(name))


def export_onnx(name: str, path) -> None:
    """Write zoo model `name` as an ONNX file (what onnxruntime and `scons model=PATH` read)."""
    Path(path).write_bytes(onnx_model(name).SerializeToString())


def get(name: str) -> IRModule:
    """A fresh, type-checked module of zoo model `name`."""
    if name in ONNX_MODELS:
        return infer_type(from_onnx(onnx_model(name)))
    return infer_type(IRModule({"main": _builder(name)()}))


def input_types(name: str) -> dict[str, TensorType]:
    """Input name -> TensorType of the model's main, without building the weights of an IR model."""
    if name in ONNX_MODELS:
        from onnx import helper   # optional: only the ONNX-built models need it

        graph = onnx_model(name).graph
        inits = {t.name for t in graph.initializer}
        return {v.name: TensorType(tuple(d.dim_value for d in v.type.tensor_type.shape.dim),
                                   np.dtype(helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type)).name)
                for v in graph.input if v.name not in inits}
    return {p.name_hint: p.type_annotation for p in _builder(name)().params}


def inputs(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic standard-normal inputs for every parameter of the model's main."""
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(ty.shape).astype(ty.dtype) for k, ty in input_types(name).items()}
