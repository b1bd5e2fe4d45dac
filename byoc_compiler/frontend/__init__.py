"""The importers: ONNX (frontend/onnx) and TFLite (frontend/tflite) models as IRModules.

`byoc_compiler.load_model(spec)` (byoc_compiler/load.py) picks one by the file's suffix.
"""
from __future__ import annotations


def from_onnx(model, shape=None, **kwargs):
    """Import an ONNX model (path, bytes or ModelProto) as an IRModule; see frontend/onnx."""
    from .onnx import from_onnx as _from_onnx   # loads the onnx package: only for ONNX models

    return _from_onnx(model, shape=shape, **kwargs)


def from_tflite(model):
    """Import a TFLite model (path or bytes) as an IRModule; see frontend/tflite."""
    from .tflite import from_tflite as _from_tflite   # loads the tflite schema package: only for TFLite models

    return _from_tflite(model)
