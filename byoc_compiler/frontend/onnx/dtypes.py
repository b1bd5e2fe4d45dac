"""ONNX element types and the IR dtypes they import as (model inputs, initializers, Cast)."""
from __future__ import annotations

import onnx

# ONNX element type -> IR dtype, for model inputs.
INPUT_DTYPES = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.DOUBLE: "float64",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.INT16: "int16",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.UINT16: "uint16",
    onnx.TensorProto.BOOL: "bool",
}


def onnx_dtype(elem_type) -> str | None:
    """The IR dtype of an ONNX element type (TensorProto.FLOAT -> "float32"), None if unsupported."""
    return INPUT_DTYPES.get(elem_type)


def onnx_type_name(elem: int) -> str:
    """ONNX's name of an element type; a number no ONNX version defines is named as a number."""
    try:
        return onnx.TensorProto.DataType.Name(elem)
    except (ValueError, TypeError):
        return f"element type {elem} (unknown to ONNX {onnx.__version__})"
