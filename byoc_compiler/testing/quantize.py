"""Quantized versions of the zoo's ONNX models, made the documented onnxruntime way (tests, benchmarks).

    path = quantized_zoo_model("resnet50", "qdq", per_channel=True, directory=tmp)

`onnxruntime.quantization.shape_inference.quant_pre_process` first (shape inference, batch norm folded
into the convolutions), then `quantize_static` calibrated on four seeded random batches; activations
uint8, weights int8 (U8S8, onnxruntime's recommendation for x86). Needs onnxruntime.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

FORMATS = ("qdq", "qop")


def quantized_zoo_model(name: str, fmt: str = "qdq", per_channel: bool = True, directory=".") -> Path:
    """Write the quantized model of zoo model `name` into `directory` (reused if there); its path."""
    import onnx
    from onnxruntime import quantization

    from .. import zoo

    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    dst = directory / f"{name}-int8-{fmt}-{'per_channel' if per_channel else 'per_tensor'}.onnx"
    if dst.exists():
        return dst
    model = zoo.onnx_model(name)
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(0)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    raw, pre = directory / f"{name}-raw.onnx", directory / f"{name}-pre.onnx"
    onnx.save(model, raw)
    quantization.shape_inference.quant_pre_process(str(raw), str(pre))
    quantization.quantize_static(
        str(pre), str(dst), Reader(), per_channel=per_channel,
        quant_format=quantization.QuantFormat.QDQ if fmt == "qdq" else quantization.QuantFormat.QOperator,
        activation_type=quantization.QuantType.QUInt8, weight_type=quantization.QuantType.QInt8)
    return dst


def sample_input(path) -> tuple[str, np.ndarray]:
    """(input name, a seeded standard-normal input) of a one-input model."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    return inp.name, np.random.default_rng(1).standard_normal(shape).astype(np.float32)
