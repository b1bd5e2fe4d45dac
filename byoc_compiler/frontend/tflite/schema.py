"""Names of the TFLite schema, taken from the `tflite` package's generated code (never hand-copied).

TFLite stores an operator as a builtin code (an integer) and its options as a union member; the
reader and the writer both need the code <-> name and op -> options-table maps, and the enums
(padding, fused activation, tensor type) by name.
"""
from __future__ import annotations

import functools
import re

import tflite

# op name -> the options table of its BuiltinOptions union member (the schema pairs them by convention
# only; these are the pairs of the ops byoc reads or writes)
OPTIONS_TABLE = {
    "CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions", "FULLY_CONNECTED": "FullyConnectedOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions",
    "ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions",
    "SQUARED_DIFFERENCE": "SquaredDifferenceOptions", "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions",
    "RESHAPE": "ReshapeOptions", "SQUEEZE": "SqueezeOptions", "EXPAND_DIMS": "ExpandDimsOptions",
    "SOFTMAX": "SoftmaxOptions", "LOG_SOFTMAX": "LogSoftmaxOptions", "CONCATENATION": "ConcatenationOptions",
    "PACK": "PackOptions", "UNPACK": "UnpackOptions", "PAD": "PadOptions", "PADV2": "PadV2Options",
    "MIRROR_PAD": "MirrorPadOptions", "TRANSPOSE": "TransposeOptions", "STRIDED_SLICE": "StridedSliceOptions",
    "SLICE": "SliceOptions", "SPLIT": "SplitOptions", "SPLIT_V": "SplitVOptions", "GATHER": "GatherOptions",
    "BATCH_MATMUL": "BatchMatMulOptions", "LEAKY_RELU": "LeakyReluOptions", "HARD_SWISH": "HardSwishOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions", "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "L2_NORMALIZATION": "L2NormOptions", "GELU": "GeluOptions", "ARG_MAX": "ArgMaxOptions",
    "CAST": "CastOptions", "QUANTIZE": "QuantizeOptions", "DEQUANTIZE": "DequantizeOptions",
    "EXP": "ExpOptions",
}

# TensorType name -> numpy dtype name (None: a type byoc does not compute)
TENSOR_DTYPES = {
    "FLOAT32": "float32", "INT8": "int8", "UINT8": "uint8", "INT16": "int16", "INT32": "int32",
    "INT64": "int64", "BOOL": "bool", "FLOAT16": "float16", "FLOAT64": "float64", "UINT16": "uint16",
}


def _enum(cls) -> dict[str, int]:
    return {k: v for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


@functools.lru_cache(maxsize=None)
def builtin_codes() -> dict[str, int]:
    """BuiltinOperator name -> code, from the installed schema."""
    return _enum(tflite.BuiltinOperator)


@functools.lru_cache(maxsize=None)
def builtin_names() -> dict[int, str]:
    return {v: k for k, v in builtin_codes().items()}


@functools.lru_cache(maxsize=None)
def enum_values(enum: str) -> dict[str, int]:
    """An enum of the schema by name ("Padding", "ActivationFunctionType", "TensorType", ...)."""
    return _enum(getattr(tflite, enum))


@functools.lru_cache(maxsize=None)
def enum_names(enum: str) -> dict[int, str]:
    return {v: k for k, v in enum_values(enum).items()}


def union_code(table: str) -> int:
    """The BuiltinOptions union code of an options table."""
    return enum_values("BuiltinOptions")[table]


def camel(field: str) -> str:
    """A schema field name in snake_case -> the generated accessor's name (stride_w -> StrideW)."""
    return "".join(part[:1].upper() + part[1:] for part in field.split("_"))


def snake(accessor: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", accessor).lower()
