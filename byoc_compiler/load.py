"""Where models come from: `load_model(spec)` reads a zoo name, a text-IR file, an ONNX or a TFLite file.

The one entry every tool uses (CLI, SCons, the test matrix), so a model that loads in one loads in all. It
sits above both `frontend` (the importers) and `zoo` (which builds its real-size models through the ONNX
importer).
"""
from __future__ import annotations

from pathlib import Path

from . import zoo
from .errors import ByocError
from .frontend import from_onnx, from_tflite
from .text import parse

TEXT_SUFFIXES = (".txt", ".relay", ".ir")
ONNX_SUFFIXES = (".onnx",)
TFLITE_SUFFIXES = (".tflite",)


class ModelSpecError(ByocError):
    pass


def check_model_spec(spec: str) -> str | None:
    """None when `spec` names a model load_model can read, else one sentence saying what is wrong."""
    path = Path(spec)
    if path.suffix in TEXT_SUFFIXES + ONNX_SUFFIXES + TFLITE_SUFFIXES:
        return None if path.is_file() else f"model file {spec} does not exist"
    if spec in zoo.all_names():
        return None
    return (f"unknown model {spec!r}: give a zoo name ({', '.join(zoo.all_names())}) or a model file ending in "
            f"{', '.join(TEXT_SUFFIXES + ONNX_SUFFIXES + TFLITE_SUFFIXES)}")


def load_model(spec: str, shape=None):
    """An IRModule from a zoo name, a text-IR file (.txt/.relay/.ir), an ONNX file (.onnx) or a TFLite file
    (.tflite).

    shape -- ONNX only: input name -> static shape, for inputs with dynamic dimensions.
    """
    problem = check_model_spec(spec)
    if problem:
        raise ModelSpecError(problem)
    path = Path(spec)
    if shape and path.suffix not in ONNX_SUFFIXES:
        raise ModelSpecError(f"input shapes can only be given for ONNX models; {spec} has its shapes in it")
    if path.suffix in TEXT_SUFFIXES:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ModelSpecError(f"model file {spec} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                 "give a text-IR file, or an ONNX model with the suffix .onnx") from None
        # Large constants may be kept beside the text (model.txt -> model.txt.bin, as `export` writes).
        return parse(text, source_name=str(path), files=lambda name: (path.parent / name).read_bytes())
    if path.suffix in ONNX_SUFFIXES:
        return from_onnx(str(path), shape=shape)
    if path.suffix in TFLITE_SUFFIXES:
        return from_tflite(str(path))
    return zoo.get(spec)
