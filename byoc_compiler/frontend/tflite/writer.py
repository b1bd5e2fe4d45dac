"""Write .tflite files from numpy arrays: the zoo's TFLite models and the tests' single-op models.

Built on the `tflite` package's generated builder functions (no TensorFlow):

    w = TFLiteWriter()
    x = w.tensor("x", (1, 8, 8, 3), "int8", scale=0.05, zero_point=-3)
    k = w.tensor("k", (4, 3, 3, 3), "int8", data=weights, scale=[...], zero_point=0, quantized_dimension=0)
    y = w.tensor("y", (1, 8, 8, 4), "int8", scale=0.1, zero_point=2)
    w.op("CONV_2D", [x, k, b], [y], padding="SAME", stride_w=1, stride_h=1, fused_activation_function="RELU")
    data = w.finish(inputs=[x], outputs=[y])

Options are the schema's field names in snake_case; enum fields take the enum's member name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import flatbuffers
import numpy as np
import tflite

from .schema import OPTIONS_TABLE, builtin_codes, camel, enum_values, union_code

# option field -> the schema enum its values come from
_ENUM_FIELDS = {"padding": "Padding", "fused_activation_function": "ActivationFunctionType",
                "mode": "MirrorPadMode", "in_data_type": "TensorType", "out_data_type": "TensorType",
                "output_type": "TensorType", "quantized_bias_type": "TensorType"}
_DTYPE_NAMES = {"float32": "FLOAT32", "int8": "INT8", "uint8": "UINT8", "int16": "INT16", "int32": "INT32",
                "int64": "INT64", "bool": "BOOL", "float16": "FLOAT16"}
_ALIGN = 16   # buffer data alignment: int32/float arrays are read in place by the interpreters


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str
    buffer: int
    scale: list[float] | None = None
    zero_point: list[int] | None = None
    quantized_dimension: int = 0
    sparse: bool = False


@dataclass
class _Op:
    name: str
    inputs: list[int]
    outputs: list[int]
    options: dict = field(default_factory=dict)
    version: int = 1


class TFLiteWriter:
    """Collects tensors and operators of one subgraph; `finish` serializes the model."""

    def __init__(self):
        self.tensors: list[_Tensor] = []
        self.ops: list[_Op] = []
        self.buffers: list[bytes] = [b""]      # buffer 0: the empty buffer, by convention

    def tensor(self, name: str, shape: Sequence[int], dtype: str, data=None, scale=None, zero_point=None,
               quantized_dimension: int = 0, sparse: bool = False) -> int:
        """Add a tensor (a constant when `data` is given); its index."""
        buffer = 0
        if data is not None:
            arr = np.ascontiguousarray(np.asarray(data, dtype=dtype).reshape(shape))
            self.buffers.append(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
            buffer = len(self.buffers) - 1
        scales = None if scale is None else [float(s) for s in np.atleast_1d(scale)]
        zps = None
        if scales is not None:
            zps = [int(z) for z in np.atleast_1d(0 if zero_point is None else zero_point)]
            zps = zps * len(scales) if len(zps) == 1 and len(scales) > 1 else zps
        self.tensors.append(_Tensor(name, tuple(int(d) for d in shape), dtype, buffer, scales, zps,
                                    quantized_dimension, sparse))
        return len(self.tensors) - 1

    def op(self, name: str, inputs: Sequence[int], outputs: Sequence[int], version: int = 1, **options) -> None:
        """Add an operator by its BuiltinOperator name; -1 in inputs is an omitted optional input."""
        self.ops.append(_Op(name, list(inputs), list(outputs), options, version))

    def finish(self, inputs: Sequence[int], outputs: Sequence[int], *, extra_subgraphs: int = 0,
               external_buffers: bool = False) -> bytes:
        """The .tflite bytes. external_buffers: constant data after the flatbuffer (Buffer.offset/size), the
        layout TFLite uses for models over 2 GB; extra_subgraphs: empty subgraphs after the first."""
        if external_buffers:
            return self._finish_external(inputs, outputs, extra_subgraphs)
        return self._serialize(inputs, outputs, extra_subgraphs, None)

    def _finish_external(self, inputs, outputs, extra_subgraphs) -> bytes:
        # The flatbuffer's length does not depend on the offset values (fixed-width fields): write it once
        # with placeholders to learn where the data goes, then with the real offsets.
        placeholder = [(1, 1) if data else None for data in self.buffers]
        flat = self._serialize(inputs, outputs, extra_subgraphs, placeholder)
        out, places = bytearray(), []
        end = len(flat)
        for data in self.buffers:
            if not data:
                places.append(None)
                continue
            end += -end % _ALIGN
            places.append((end, len(data)))
            end += len(data)
        flat = self._serialize(inputs, outputs, extra_subgraphs, places)
        out += flat
        for data, place in zip(self.buffers, places):
            if place:
                out += b"\0" * (place[0] - len(out))
                out += data
        return bytes(out)

    def _serialize(self, inputs, outputs, extra_subgraphs, external) -> bytes:
        b = flatbuffers.Builder(1024)
        codes = sorted({(o.name, o.version) for o in self.ops}, key=lambda c: (builtin_codes()[c[0]], c[1]))
        code_index = {c: i for i, c in enumerate(codes)}
        subgraphs = [_subgraph(b, self, code_index, inputs, outputs)]
        subgraphs += [_subgraph(b, TFLiteWriter(), {}, [], []) for _ in range(extra_subgraphs)]
        opcodes = [_opcode(b, name, version) for name, version in codes]
        if external is None:
            buffers = [_buffer(b, p, None) for p in self.buffers]
        else:
            buffers = [_buffer(b, b"", place) for place in external]
        model = _model(b, opcodes, subgraphs, buffers)
        b.Finish(model, file_identifier=b"TFL3")
        return bytes(b.Output())


def _vector(b, start, items, prepend) -> int:
    start(b, len(items))
    for item in reversed(items):
        prepend(item)
    return b.EndVector()


def _offsets(b, start, offsets) -> int:
    return _vector(b, start, offsets, b.PrependUOffsetTRelative)


def _int32s(b, start, values) -> int:
    return _vector(b, start, [int(v) for v in values], b.PrependInt32)


def _bytes(b, data: bytes) -> int:
    b.StartVector(1, len(data), _ALIGN)
    b.head = b.head - len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


def _buffer(b, data: bytes, place) -> int:
    vec = _bytes(b, data) if data else None
    tflite.BufferStart(b)
    if vec is not None:
        tflite.BufferAddData(b, vec)
    if place is not None:
        tflite.BufferAddOffset(b, place[0])
        tflite.BufferAddSize(b, place[1])
    return tflite.BufferEnd(b)


def _opcode(b, name: str, version: int) -> int:
    code = builtin_codes()[name]
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))   # 127: PLACEHOLDER_FOR_GREATER_OP_CODES
    tflite.OperatorCodeAddBuiltinCode(b, code)
    tflite.OperatorCodeAddVersion(b, version)
    return tflite.OperatorCodeEnd(b)


def _quantization(b, t: _Tensor) -> int:
    scale = _vector(b, tflite.QuantizationParametersStartScaleVector, t.scale, b.PrependFloat32)
    zps = _vector(b, tflite.QuantizationParametersStartZeroPointVector, t.zero_point, b.PrependInt64)
    tflite.QuantizationParametersStart(b)
    tflite.QuantizationParametersAddScale(b, scale)
    tflite.QuantizationParametersAddZeroPoint(b, zps)
    tflite.QuantizationParametersAddQuantizedDimension(b, t.quantized_dimension)
    return tflite.QuantizationParametersEnd(b)


def _tensor(b, t: _Tensor) -> int:
    name = b.CreateString(t.name)
    shape = _int32s(b, tflite.TensorStartShapeVector, t.shape)
    quant = _quantization(b, t) if t.scale is not None else None
    sparsity = None
    if t.sparse:
        tflite.SparsityParametersStart(b)
        sparsity = tflite.SparsityParametersEnd(b)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, enum_values("TensorType")[_DTYPE_NAMES[t.dtype]])
    tflite.TensorAddBuffer(b, t.buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    if sparsity is not None:
        tflite.TensorAddSparsity(b, sparsity)
    return tflite.TensorEnd(b)


def _options(b, op: _Op) -> tuple[int, int | None]:
    """(union code, options table offset) of an operator; (0, None) for an op without options."""
    table = OPTIONS_TABLE.get(op.name)
    if table is None:
        if op.options:
            raise ValueError(f"{op.name} has no options table in byoc's schema map; options {sorted(op.options)}")
        return 0, None
    vectors = {k: _int32s(b, getattr(tflite, f"{table}Start{camel(k)}Vector"), v)
               for k, v in op.options.items() if isinstance(v, (list, tuple))}
    getattr(tflite, f"{table}Start")(b)
    for key, value in op.options.items():
        add = getattr(tflite, f"{table}Add{camel(key)}")
        if key in vectors:
            add(b, vectors[key])
        elif isinstance(value, str):
            add(b, enum_values(_ENUM_FIELDS[key])[value])
        else:
            add(b, value)
    return union_code(table), getattr(tflite, f"{table}End")(b)


def _operator(b, op: _Op, code_index) -> int:
    inputs = _int32s(b, tflite.OperatorStartInputsVector, op.inputs)
    outputs = _int32s(b, tflite.OperatorStartOutputsVector, op.outputs)
    kind, options = _options(b, op)
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, code_index[(op.name, op.version)])
    tflite.OperatorAddInputs(b, inputs)
    tflite.OperatorAddOutputs(b, outputs)
    if options is not None:
        tflite.OperatorAddBuiltinOptionsType(b, kind)
        tflite.OperatorAddBuiltinOptions(b, options)
    return tflite.OperatorEnd(b)


def _subgraph(b, w: TFLiteWriter, code_index, inputs, outputs) -> int:
    tensors = _offsets(b, tflite.SubGraphStartTensorsVector, [_tensor(b, t) for t in w.tensors])
    ops = _offsets(b, tflite.SubGraphStartOperatorsVector, [_operator(b, o, code_index) for o in w.ops])
    ins = _int32s(b, tflite.SubGraphStartInputsVector, inputs)
    outs = _int32s(b, tflite.SubGraphStartOutputsVector, outputs)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors)
    tflite.SubGraphAddInputs(b, ins)
    tflite.SubGraphAddOutputs(b, outs)
    tflite.SubGraphAddOperators(b, ops)
    return tflite.SubGraphEnd(b)


def _model(b, opcodes, subgraphs, buffers) -> int:
    codes = _offsets(b, tflite.ModelStartOperatorCodesVector, opcodes)
    graphs = _offsets(b, tflite.ModelStartSubgraphsVector, subgraphs)
    bufs = _offsets(b, tflite.ModelStartBuffersVector, buffers)
    description = b.CreateString("byoc")
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes)
    tflite.ModelAddSubgraphs(b, graphs)
    tflite.ModelAddDescription(b, description)
    tflite.ModelAddBuffers(b, bufs)
    return tflite.ModelEnd(b)

