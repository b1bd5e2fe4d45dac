"""Read a .tflite file into plain, checked Python values (no flatbuffer access after this module).

Parsing uses the `tflite` package's generated accessors. Python's flatbuffers has no verifier, so a
corrupt file can point anywhere: every vector length is checked against the file's size before it is
iterated (a forged length of 2**31 must not become a 2**31-step loop or a huge allocation), buffer data
is checked against the tensor's shape and the file before numpy reads it, and any fault of the
accessors themselves (an offset past the end) becomes one TFLiteImportError naming the model.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import numpy as np
import tflite

from .errors import TFLiteImportError
from .schema import OPTIONS_TABLE, TENSOR_DTYPES, builtin_names, enum_names, snake

_ACCESSOR_FAULTS = (IndexError, struct.error, ValueError, TypeError, OverflowError, UnicodeDecodeError,
                    AttributeError, RecursionError, MemoryError)
_MAX_RANK = 8


@dataclass(frozen=True)
class Quant:
    """A tensor's quantization: per tensor (one scale) or per channel along `axis`."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int


@dataclass
class TensorInfo:
    index: int
    name: str
    shape: tuple[int, ...]
    type_name: str                    # the schema's TensorType name (INT8, FLOAT32, ...)
    quant: Quant | None
    data: np.ndarray | None           # constant data, or None for a run-time value
    sparse: bool = False

    @property
    def dtype(self) -> str | None:
        return TENSOR_DTYPES.get(self.type_name)


@dataclass
class OpInfo:
    index: int
    name: str                         # BuiltinOperator name, or "CUSTOM(<code>)"
    version: int
    inputs: list[int]
    outputs: list[int]
    options: dict = field(default_factory=dict)
    options_problem: str = ""         # options of another op's table, or unreadable


@dataclass
class ModelInfo:
    label: str
    tensors: list[TensorInfo]
    ops: list[OpInfo]
    inputs: list[int]
    outputs: list[int]


def read_model(data: bytes, label: str) -> ModelInfo:
    """The checked contents of subgraph 0 of a .tflite file's bytes."""
    if len(data) < 8:
        raise TFLiteImportError(f"{label}: {len(data)} bytes is too short for a TFLite flatbuffer")
    if data[4:8] != b"TFL3":
        raise TFLiteImportError(f"{label}: not a TFLite model (no 'TFL3' file identifier at byte 4); give a "
                                ".tflite file written by the TFLite converter or a flatbuffer writer")
    try:
        return _Reader(data, label).model()
    except TFLiteImportError:
        raise
    except _ACCESSOR_FAULTS as exc:
        raise TFLiteImportError(f"{label}: the flatbuffer is corrupt ({type(exc).__name__}: {exc}); write the "
                                "model again") from None


class _Reader:
    def __init__(self, data: bytes, label: str):
        self.data, self.label = data, label
        self.root = tflite.Model.GetRootAs(data, 0)

    def count(self, n: int, what: str, elem_size: int = 4) -> int:
        """A vector length, refused when the file cannot hold that many elements."""
        if n < 0 or n * elem_size > len(self.data):
            raise TFLiteImportError(f"{self.label}: {what} claims {n} elements, more than the file's "
                                    f"{len(self.data)} bytes can hold; the file is corrupt")
        return n

    def ints(self, obj, accessor: str, what: str, elem_size: int = 4) -> list[int]:
        n = self.count(getattr(obj, accessor + "Length")(), what, elem_size)
        get = getattr(obj, accessor)
        return [int(get(j)) for j in range(n)]

    def model(self) -> ModelInfo:
        m = self.root
        n_graphs = self.count(m.SubgraphsLength(), "the subgraph list")
        if n_graphs == 0:
            raise TFLiteImportError(f"{self.label}: the model has no subgraph")
        if n_graphs > 1:
            names = [(m.Subgraphs(i).Name() or b"").decode("utf-8", "replace") or f"#{i}" for i in range(n_graphs)]
            raise TFLiteImportError(f"{self.label}: the model has {n_graphs} subgraphs ({', '.join(names)}); byoc "
                                    "imports single-subgraph models only (control flow such as WHILE/IF and "
                                    "multi-signature models are not supported)")
        graph = m.Subgraphs(0)
        opcodes = self.opcodes()
        n_buffers = self.count(m.BuffersLength(), "the buffer list")
        n_tensors = self.count(graph.TensorsLength(), "the tensor list")
        tensors = [self.tensor(graph.Tensors(i), i, n_buffers) for i in range(n_tensors)]
        n_ops = self.count(graph.OperatorsLength(), "the operator list")
        ops = [self.operator(graph.Operators(i), i, opcodes, n_tensors) for i in range(n_ops)]
        inputs = self.tensor_refs(graph, "Inputs", "the subgraph inputs", n_tensors)
        outputs = self.tensor_refs(graph, "Outputs", "the subgraph outputs", n_tensors)
        return ModelInfo(self.label, tensors, ops, inputs, outputs)

    def tensor_refs(self, obj, accessor: str, what: str, n_tensors: int) -> list[int]:
        refs = self.ints(obj, accessor, what)
        bad = [r for r in refs if not -1 <= r < n_tensors]
        if bad:
            raise TFLiteImportError(f"{self.label}: {what} name tensor {bad[0]}, but the subgraph has "
                                    f"{n_tensors} tensors; the file is corrupt")
        return refs

    def opcodes(self) -> list[tuple[str, int]]:
        names = builtin_names()
        out = []
        for i in range(self.count(self.root.OperatorCodesLength(), "the operator code list")):
            oc = self.root.OperatorCodes(i)
            code = max(int(oc.BuiltinCode()), int(oc.DeprecatedBuiltinCode()))
            if code == names_code("CUSTOM"):
                custom = (oc.CustomCode() or b"").decode("utf-8", "replace")
                out.append((f"CUSTOM({custom})", int(oc.Version())))
            else:
                out.append((names.get(code, f"operator code {code} (unknown to the tflite schema package)"),
                            int(oc.Version())))
        return out

    def operator(self, op, index: int, opcodes, n_tensors: int) -> OpInfo:
        code_index = int(op.OpcodeIndex())
        if not 0 <= code_index < len(opcodes):
            raise TFLiteImportError(f"{self.label}: operator {index} uses operator code {code_index}, but the "
                                    f"model has {len(opcodes)}; the file is corrupt")
        name, version = opcodes[code_index]
        info = OpInfo(index, name, version, self.tensor_refs(op, "Inputs", f"operator {index}'s inputs", n_tensors),
                      self.tensor_refs(op, "Outputs", f"operator {index}'s outputs", n_tensors))
        info.options, info.options_problem = self.options(op, name)
        return info

    def options(self, op, name: str) -> tuple[dict, str]:
        table = OPTIONS_TABLE.get(name)
        kind = int(op.BuiltinOptionsType())
        if table is None or kind == 0:
            return {}, ""
        kind_name = enum_names("BuiltinOptions").get(kind, str(kind))
        if kind_name != table:
            return {}, f"its options are {kind_name}, not {table}"
        tab = op.BuiltinOptions()
        opts = getattr(tflite, table)()
        opts.Init(tab.Bytes, tab.Pos)
        return self.fields(opts), ""

    def fields(self, opts) -> dict:
        """Every field of an options table: scalars as ints/floats/bools, int vectors as lists."""
        out = {}
        methods = {m for m in dir(type(opts)) if m[:1].isupper()}
        skip = {"Init", "GetRootAs"}
        for m in sorted(methods):
            if m in skip or m.startswith("GetRootAs") or m.endswith(("Length", "IsNone", "AsNumpy",
                                                                        "BufferHasIdentifier")):
                continue
            if m + "Length" in methods:
                out[snake(m)] = self.ints(opts, m, f"option {snake(m)}")
            else:
                out[snake(m)] = getattr(opts, m)()
        return out

    def tensor(self, t, index: int, n_buffers: int) -> TensorInfo:
        name = (t.Name() or b"").decode("utf-8", "replace") or f"tensor {index}"
        type_name = enum_names("TensorType").get(int(t.Type()), f"type {int(t.Type())}")
        shape = tuple(self.ints(t, "Shape", f"the shape of tensor {name!r}"))
        if len(shape) > _MAX_RANK or any(d < 0 for d in shape):
            raise TFLiteImportError(f"{self.label}: tensor {name!r} has shape {list(shape)}; byoc needs static "
                                    f"shapes of rank <= {_MAX_RANK} with non-negative sizes")
        buffer = int(t.Buffer())
        if not 0 <= buffer < max(n_buffers, 1):
            raise TFLiteImportError(f"{self.label}: tensor {name!r} uses buffer {buffer}, but the model has "
                                    f"{n_buffers}; the file is corrupt")
        info = TensorInfo(index, name, shape, type_name, self.quant(t, name, shape), None,
                          t.Sparsity() is not None)
        if buffer > 0 and not info.sparse:
            info.data = self.buffer(buffer, info)
        return info

    def quant(self, t, name: str, shape) -> Quant | None:
        q = t.Quantization()
        if q is None:
            return None
        scales = [float(s) for s in self.ints_float(q, "Scale", f"the scales of tensor {name!r}")]
        zps = self.ints(q, "ZeroPoint", f"the zero points of tensor {name!r}", 8)
        if not scales:
            return None            # min/max only: the tensor is not quantized
        if not all(math.isfinite(v) and v > 0 for v in scales):
            if enum_names("TensorType").get(int(t.Type())) not in ("INT8", "UINT8", "INT16"):
                return None        # e.g. an int32 shape tensor with a meaningless scale
            raise TFLiteImportError(f"{self.label}: tensor {name!r} has scale {scales[:4]}; quantization scales must "
                                    "be positive and finite")
        if int(q.DetailsType()) != 0:
            raise TFLiteImportError(f"{self.label}: tensor {name!r} has custom quantization details; byoc "
                                    "computes affine (scale, zero point) quantization only")
        axis = int(q.QuantizedDimension())
        zps = zps or [0]
        if len(scales) > 1 and not (0 <= axis < len(shape) and shape[axis] == len(scales)) or \
                len(zps) not in (1, len(scales)):
            raise TFLiteImportError(f"{self.label}: tensor {name!r} has {len(scales)} scales and {len(zps)} zero "
                                    f"points along dimension {axis} of shape {list(shape)}; the file is corrupt")
        return Quant(tuple(scales), tuple(zps), axis)

    def ints_float(self, obj, accessor: str, what: str) -> list[float]:
        n = self.count(getattr(obj, accessor + "Length")(), what)
        get = getattr(obj, accessor)
        return [get(j) for j in range(n)]

    def buffer(self, index: int, info: TensorInfo) -> np.ndarray | None:
        buf = self.root.Buffers(index)
        offset, size = int(buf.Offset()), int(buf.Size())
        if offset > 1:   # data after the flatbuffer (models over 2 GB); 1 is the converter's placeholder
            if offset + size > len(self.data):
                raise TFLiteImportError(f"{self.label}: buffer {index} of tensor {info.name!r} lies at bytes "
                                        f"{offset}..{offset + size}, past the end of the {len(self.data)}-byte "
                                        "file; the file is truncated or corrupt")
            raw = memoryview(self.data)[offset:offset + size]
        else:
            n = self.count(buf.DataLength(), f"buffer {index}", 1)
            if n == 0:
                return None
            raw = buf.DataAsNumpy()
            if len(raw) != n:
                raise TFLiteImportError(f"{self.label}: buffer {index} is cut off by the end of the file")
        return self.constant(raw, info, index)

    def constant(self, raw, info: TensorInfo, index: int) -> np.ndarray | None:
        if len(raw) == 0:
            return None
        dtype = info.dtype
        if dtype is None:
            return None      # a type byoc does not compute (INT4, STRING, ...): refused where it is used
        expected = math.prod(info.shape) * np.dtype(dtype).itemsize
        if len(raw) != expected:
            raise TFLiteImportError(f"{self.label}: tensor {info.name!r} (shape {list(info.shape)}, {dtype}) needs "
                                    f"{expected} bytes of data, but buffer {index} holds {len(raw)}; the file is "
                                    "corrupt")
        return np.frombuffer(bytes(raw), dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(info.shape)


def names_code(name: str) -> int:
    return tflite.BuiltinOperator.__dict__[name]
