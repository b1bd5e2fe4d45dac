"""Reading and validating an ONNX model: a path, bytes or a ModelProto in, a checked ModelProto out.

Every failure becomes one OnnxImportError that names the file: a missing
file, a truncated or non-ONNX file, a model that the ONNX checker rejects.
"""
from __future__ import annotations

import os
from pathlib import Path

import onnx
import onnx.defs

from .errors import OnnxImportError


def describe_source(source) -> str:
    """How messages name the model: its path, or its graph name for an in-memory model."""
    if isinstance(source, (str, os.PathLike)):
        return f"ONNX model {str(source)!r}"
    if isinstance(source, onnx.ModelProto):
        name = source.graph.name
        return f"ONNX model {name!r} (in memory)" if name else "ONNX model (in memory)"
    return "ONNX model (bytes)"


def load_model_proto(source) -> onnx.ModelProto:
    """The checked ModelProto of `source` (a path, bytes or a ModelProto)."""
    label = describe_source(source)
    if isinstance(source, onnx.ModelProto):
        model = source
    elif isinstance(source, (bytes, bytearray)):
        model = _parse(bytes(source), label)
    elif isinstance(source, (str, os.PathLike)):
        model = _read(Path(source), label)
    else:
        raise OnnxImportError(f"from_onnx() takes a path, bytes or an onnx.ModelProto, got {type(source).__name__}")
    _check(model, label)
    return model


def _read(path: Path, label: str) -> onnx.ModelProto:
    if not path.exists():
        raise OnnxImportError(f"{label} does not exist; check the path (relative paths start at {os.getcwd()})")
    if path.is_dir():
        raise OnnxImportError(f"{label} is a directory; pass the .onnx file inside it")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OnnxImportError(f"{label} cannot be read: {exc.strerror or exc}") from None
    model = _parse(data, label)
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer):
        try:
            onnx.load_external_data_for_model(model, str(path.parent))
        except Exception as exc:  # noqa: BLE001 - any failure is the same user error
            raise OnnxImportError(f"{label}: its external weight files cannot be read from {path.parent} ({exc})") \
                from None
    return model


def _parse(data: bytes, label: str) -> onnx.ModelProto:
    if not data:
        raise OnnxImportError(f"{label} is empty; export the model again")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and friends
        raise OnnxImportError(f"{label} is truncated or not an ONNX model (protobuf: {exc}); "
                              "export or download it again") from None
    if not model.HasField("graph") or not model.opset_import:
        # Protobuf accepts many byte strings (a text file, a cut at a field boundary) as an almost empty message.
        raise OnnxImportError(f"{label} is truncated or not an ONNX model (it has no graph or no opset); "
                              "export or download it again")
    return model


def check_opset_known(model: onnx.ModelProto, label: str) -> None:
    """A model whose ai.onnx opset is newer than the installed onnx knows cannot be looked up: say so."""
    opset, known = default_opset(model), onnx.defs.onnx_opset_version()
    if opset > known:
        raise OnnxImportError(f"{label} uses ai.onnx opset {opset}, but the installed onnx {onnx.__version__} "
                              f"knows opsets up to {known}; upgrade onnx (pip install -U onnx) or export the "
                              f"model with opset {known} or lower")


def _check(model: onnx.ModelProto, label: str) -> None:
    check_opset_known(model, label)
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # noqa: BLE001 - ValidationError, and C++ errors surfacing as others
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OnnxImportError(f"{label} is not a valid ONNX model: {first_line}. "
                              "If the file was cut short, export or download it again") from None


def default_opset(model: onnx.ModelProto) -> int:
    """The version of the default (ai.onnx) operator set the model imports."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise OnnxImportError("the ONNX model imports no version of the default operator set (ai.onnx); "
                          "add an opset_import entry with domain ''")
