"""The graph walk: a .tflite file's subgraph 0 -> IRModule whose `main` takes the model's inputs.

Kinds of model byoc does not compute (dynamic-range quantized, float16 weights, sparse tensors, int4)
are refused once, for the whole model. Then operators convert in order; one that cannot is recorded
(operator, index, reason) and everything depending on it skipped, so that one error lists them all.
"""
from __future__ import annotations

import os
from pathlib import Path

from ...ir.expr import Function, Tuple, Var
from ...ir.module import IRModule
from ...ir.types import TensorType, shape_problem
from ..graph_context import NodeError
from .errors import OpProblem, TFLiteImportError, TFLiteUnsupportedError
from .reader import ModelInfo, read_model
from .converters import resolve
from .values import TO_NHWC, Converting, Value

MAX_FILE_BYTES = 2 ** 34
_WEIGHTED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "BATCH_MATMUL")


def from_tflite(model) -> IRModule:
    """Import a TFLite model (a path or the file's bytes) as an IRModule.

    main's parameters are subgraph 0's inputs (Var.name_hint = the tensor name), its result the
    outputs in order, in TFLite's own layouts (NHWC); attr `output_names` records their names.
    """
    data, label = _load(model)
    info = read_model(data, label)
    _refuse_model_kinds(info)
    return _Importer(info).run()


def _load(model) -> tuple[bytes, str]:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), "the TFLite model"
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise TFLiteImportError(f"{path}: {path.stat().st_size} bytes is larger than byoc imports")
            return path.read_bytes(), str(path)
        except OSError as exc:
            raise TFLiteImportError(f"{path}: cannot read the model ({exc.strerror or exc})") from None
    raise TFLiteImportError(f"from_tflite takes a path or the bytes of a .tflite file, not {type(model).__name__}")


def _refuse_model_kinds(info: ModelInfo) -> None:
    """One sentence for each kind of model byoc does not compute."""
    label, tensors = info.label, info.tensors
    sparse = [t.name for t in tensors if t.sparse]
    if sparse:
        raise TFLiteImportError(f"{label}: tensor {sparse[0]!r} is sparse (TFLite sparsity); byoc computes dense "
                                "tensors: convert the model without sparsification")
    int4 = [t.name for t in tensors if t.type_name == "INT4"]
    if int4:
        raise TFLiteImportError(f"{label}: tensor {int4[0]!r} is int4; byoc computes int8/uint8/int16 and float32 "
                                "models: convert with 8-bit weights")
    for op in info.ops:
        if op.name == "DEQUANTIZE" and op.inputs and tensors[op.inputs[0]].type_name == "FLOAT16":
            raise TFLiteImportError(f"{label}: float16 weights dequantized to float32 (operator {op.index}); byoc "
                                    "computes float32 or integer models: convert with float32 weights")
        if op.name in _WEIGHTED and len(op.inputs) > 1 and op.inputs[0] >= 0 and op.inputs[1] >= 0:
            x, w = tensors[op.inputs[0]], tensors[op.inputs[1]]
            if x.type_name == "FLOAT32" and w.type_name in ("INT8", "UINT8") or \
                    op.options.get("asymmetric_quantize_inputs"):
                raise TFLiteImportError(
                    f"{label}: a dynamic-range quantized model (operator {op.index}, {op.name}: float32 input, "
                    f"{w.type_name.lower()} weights); byoc computes float32 or fully integer models: convert with "
                    "full integer quantization (a representative dataset) or without quantization")


class _Importer:
    def __init__(self, info: ModelInfo):
        self.info = info
        self.cx = Converting(info)
        self.problems: list[OpProblem] = []

    def run(self) -> IRModule:
        params = self._bind_inputs()
        self._convert()
        missing = [o for o in self.info.outputs if o not in self.cx.values]
        if self.problems:
            raise TFLiteUnsupportedError(self.info.label, self.problems)
        if missing or not self.info.outputs:
            what = self.info.tensors[missing[0]].name if missing else "none"
            raise TFLiteImportError(f"{self.info.label}: model output {what!r} is not computed by any operator")
        outputs = [self.cx.plain(self.cx.values[o]) for o in self.info.outputs]
        body = outputs[0] if len(outputs) == 1 else Tuple(outputs)
        names = tuple(self.info.tensors[o].name for o in self.info.outputs)
        return IRModule({"main": Function(params, body, attrs={"output_names": names})})

    def _bind_inputs(self) -> list[Var]:
        params = []
        for index in self.info.inputs:
            t = self.info.tensors[index]
            problem = shape_problem(t.shape, t.dtype) if t.dtype else f"type {t.type_name} is not supported"
            if problem:
                raise TFLiteImportError(f"{self.info.label}: input {t.name!r}: {problem}")
            if t.data is not None or index in self.cx.values:
                raise TFLiteImportError(f"{self.info.label}: input {t.name!r} is listed twice or is a constant")
            var = Var(t.name, TensorType(t.shape, t.dtype))
            self.cx.values[index] = Value(var)
            params.append(var)
        return params

    def _convert(self) -> None:
        failed: set[int] = set()
        for op in self.info.ops:
            if any(i in failed for i in op.inputs):
                failed.update(op.outputs)
                continue
            reason = self._convert_one(op)
            if reason:
                self.problems.append(OpProblem(op.index, op.name, op.version, reason))
                failed.update(op.outputs)

    def _convert_one(self, op) -> str:
        conv = resolve(op.name)
        if conv is None:
            return f"operator {op.name} is not supported"
        if op.options_problem:
            return op.options_problem
        if not op.inputs or op.inputs[0] < 0 or not op.outputs:   # every operator byoc takes reads and writes
            return "its first input or its output is missing (the graph is corrupt)"
        written = [o for o in op.outputs if o < 0 or o in self.cx.values or self.info.tensors[o].data is not None]
        if written:
            return "an output is missing, a constant, a model input or written twice (the graph is corrupt)"
        try:
            results = conv.convert(op, self.cx)
            if len(results) < len(op.outputs):
                raise NodeError(f"{len(op.outputs)} outputs, of which byoc computes {len(results)}")
            for index, value in zip(op.outputs, results):
                self._check_shape(index, value)
                self.cx.values[index] = value
        except NodeError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - a converter bug still ends in the one error, named
            return f"the importer failed ({type(exc).__name__}: {exc}); this is a bug in byoc, please report it"
        return ""

    def _check_shape(self, index: int, value: Value) -> None:
        expected = tuple(self.info.tensors[index].shape)
        got = tuple(self.cx.shape(value.expr))
        if value.layout == "nchw":
            got = tuple(got[axis] for axis in TO_NHWC)
        if got != expected:
            raise NodeError(f"computes shape {list(got)} for output {self.info.tensors[index].name!r}, but the model "
                            f"says {list(expected)}")
