"""The PyTorch exporter's test models shipped in the onnx wheel (onnx/backend/test/data/pytorch-converted
and pytorch-operator): each a model.onnx with test_data_set_*/input_*.pb and output_*.pb.

Most are opset 6 or older, below the oldest definitions byoc implements: from_onnx upgrades them
with onnx.version_converter. A model is in scope when every op type of the upgraded model is one
byoc imports (`supported_ops()`).
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from byoc_compiler.frontend.onnx import supported_ops

DATA = Path(onnx.__file__).resolve().parent / "backend" / "test" / "data"
SUITES = ("pytorch-converted", "pytorch-operator")


@functools.lru_cache(maxsize=None)
def model_dirs() -> tuple[Path, ...]:
    return tuple(sorted(d for suite in SUITES if (DATA / suite).is_dir() for d in (DATA / suite).iterdir()
                        if (d / "model.onnx").is_file()))


def in_scope(directory: Path) -> bool:
    ops = supported_ops()
    model = onnx.load(str(directory / "model.onnx"))
    return all(n.op_type in ops and n.domain in ("", "ai.onnx") for n in model.graph.node)


def _read(path: Path) -> np.ndarray:
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def data_sets(directory: Path):
    """[(inputs, outputs)] of every test_data_set_* of the model, in file order."""
    out = []
    for data_dir in sorted(directory.glob("test_data_set_*")):
        inputs = [_read(p) for p in sorted(data_dir.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))]
        outputs = [_read(p) for p in sorted(data_dir.glob("output_*.pb"), key=lambda p: int(p.stem.split("_")[1]))]
        out.append((inputs, outputs))
    return out
