"""The zoo's microcontroller models: one generator, one Spec per model, written as ONNX and .tflite.

Each model is a Spec (spec.py: layers in NHWC with seeded float weights, models.py: the
architectures) and its QuantizedSpec (quant.py: int8 activations, per-channel int8 weights, int32
biases, chosen once), written by onnx_form.py as a float32 ONNX model and an int8 QDQ ONNX model, and by
tflite_form.py as .tflite files, from the same numbers; so byoc, onnxruntime, LiteRT and TensorFlow
Lite Micro run the same model.

Zoo names: `<model>` is the float32 twin, `<model>_int8` the quantized model (zoo.ONNX_MODELS
lists them with the rest of the ONNX-built zoo).
"""
from __future__ import annotations

import functools
from typing import Callable

from . import models
from ...errors import ByocError
from .onnx_form import onnx_model as _write_onnx
from .quant import QuantizedSpec, quantize
from .quant16 import quantize16
from .spec import Spec

# name -> (spec builder, one line for `zoo list`)
MODELS: dict[str, tuple[Callable[[], Spec], str]] = {
    "ds_cnn": (models.ds_cnn, "MLPerf Tiny DS-CNN keyword spotting: 49x10 MFCC, 4 depthwise-separable blocks, "
                              "12 classes"),
    "resnet8": (models.resnet8, "MLPerf Tiny ResNet-8: 32x32x3, three residual stacks (16, 32, 64), 10 classes"),
    "mobilenet_v1_025": (functools.partial(models.mobilenet_v1, 0.25, 96, 2),
                         "MLPerf Tiny MobileNet v1 0.25 (visual wake words): 96x96x3, 2 classes"),
    "fc_autoencoder": (models.fc_autoencoder, "MLPerf Tiny FC autoencoder (anomaly detection): 640 -> 8 -> 640"),
    "mobilenet_v2_035": (models.mobilenet_v2, "MobileNetV2 0.35 at 96x96x3 (TFLite's microcontroller size), "
                                              "1000 classes"),
    "micro_cnn": (models.micro_cnn, "two conv + max pool stages on 32x32x3, 10 classes"),
    "transformer_encoder": (models.transformer_encoder, "2-layer transformer encoder (post-norm, 2 heads): "
                                                        "sequence 16, hidden 32, MLP 128"),
    "concat_cnn": (models.concat_cnn, "Inception/DenseNet-style CNN: branches concatenated with differing "
                                      "scales, 32x32x3, 10 classes"),
}


def _check(name: str) -> None:
    if name not in MODELS:
        raise ValueError(f"unknown microcontroller model {name!r}; known: {', '.join(MODELS)}")


@functools.lru_cache(maxsize=8)
def spec(name: str) -> Spec:
    _check(name)
    return MODELS[name][0]()


@functools.lru_cache(maxsize=8)
def quantized(name: str) -> QuantizedSpec:
    return quantize(spec(name))


def onnx_model(name: str, int8: bool):
    """The onnx.ModelProto of model `name`: the QDQ int8 model, or its float32 twin."""
    return _write_onnx(spec(name), quantized(name) if int8 else None)


# models TFLite can express as written (concat_cnn's concatenations rescale their inputs, which TensorFlow
# Lite Micro's int8 CONCATENATION does not)
TFLITE = ("ds_cnn", "resnet8", "mobilenet_v1_025", "fc_autoencoder", "mobilenet_v2_035", "micro_cnn",
          "transformer_encoder")


# models with a 16x8 .tflite form too (int16 activations, int8 weights: TFLite's
# EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8; quant16.py)
TFLITE_16X8 = ("micro_cnn",)


@functools.lru_cache(maxsize=16)
def tflite_model(name: str, int8: bool, int16: bool = False) -> bytes:
    """The .tflite bytes of model `name`: int8 (int8 input and output), 16x8 (`int16`: int16 input and output),
    or its float32 twin."""
    if name not in (TFLITE_16X8 if int16 else TFLITE):
        _check(name)
        models = TFLITE_16X8 if int16 else TFLITE
        raise ValueError(f"model {name!r} has no {'16x8 ' if int16 else ''}.tflite form; models with one: "
                         f"{', '.join(models)}")
    try:
        from .tflite_form import tflite_model as write   # the tflite schema package is an optional extra
    except ImportError as exc:
        raise ByocError(f"the .tflite form of zoo model {name!r} needs the tflite and flatbuffers packages "
                        f"({exc.name} is missing): pip install 'byoc_compiler[tflite]'") from None
    if int16:
        return write(spec(name), quantized16(name))
    return write(spec(name), quantized(name) if int8 else None)


@functools.lru_cache(maxsize=4)
def quantized16(name: str) -> QuantizedSpec:
    return quantize16(spec(name))


def zoo_rows() -> dict[str, tuple[Callable[[], object], str]]:
    """Rows for zoo.ONNX_MODELS: `<model>` (float32) and `<model>_int8` (QDQ) of every model."""
    rows = {}
    for name, (_, about) in MODELS.items():
        rows[name] = (functools.partial(onnx_model, name, False), f"{about}; float32")
        rows[f"{name}_int8"] = (functools.partial(onnx_model, name, True),
                                f"{about}; int8 QDQ, per-channel weights")
    return rows
