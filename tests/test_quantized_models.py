"""Quantized zoo models (onnxruntime.quantization.quantize_static, QDQ and QOperator, per-tensor and
per-channel) imported and run by byoc, compared with onnxruntime (1 thread) on the same input.

Acceptance: >= 99.9% of the output elements equal and at most 1 LSB (one output scale step) apart.
The tiny variants run by default (reference for every combination, one host build); the other
builds and the real-size models are behind the `int8` marker (docs/matrix.md)."""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnxruntime as ort  # noqa: E402 - a test dependency (pyproject's test extras), never optional
import onnxruntime.quantization as quantization  # noqa: E402

from byoc_compiler.backend.build import build  # noqa: E402
from byoc_compiler.frontend import from_onnx  # noqa: E402
from byoc_compiler.ir import Call, Op, post_order  # noqa: E402
from byoc_compiler.testing.quantize import quantized_zoo_model, sample_input  # noqa: E402
from byoc_compiler.testing.reference import run_reference  # noqa: E402


def _quantized(name: str, fmt: str, per_channel: bool, directory) -> tuple[str, str, np.ndarray]:
    path = quantized_zoo_model(name, fmt, per_channel, directory)
    inp, x = sample_input(path)
    return str(path), inp, x


def _onnxruntime(path: str, name: str, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, {name: x})[0]


def _output_step(path: str) -> float:
    """The scale of the last DequantizeLinear feeding the output: one LSB of the int8 result."""
    model = onnx.load(path)
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in reversed(model.graph.node):
        if node.op_type == "DequantizeLinear":
            return float(inits[node.input[1]].reshape(-1)[0])
    return 0.0


def assert_int8_equal(got: np.ndarray, want: np.ndarray, lsb: float) -> None:
    equal = np.mean(got == want)
    worst = float(np.abs(got.astype(np.float64) - want).max())
    assert equal >= 0.999, f"only {equal:.4%} of the elements equal onnxruntime's"
    assert worst <= lsb * 1.0001 + 1e-7, f"max difference {worst} is more than 1 LSB ({lsb})"


COMBOS = [(fmt, pc) for fmt in ("qdq", "qop") for pc in (True, False)]
TINY = ["resnet50_tiny", "mobilenetv2_tiny"]


def _case_id(name, fmt, pc):
    return f"{name}-{fmt}-{'per_channel' if pc else 'per_tensor'}"


@pytest.mark.parametrize("name,fmt,pc", [(n, f, p) for n in TINY for f, p in COMBOS],
                         ids=[_case_id(n, f, p) for n in TINY for f, p in COMBOS])
def test_reference_matches_onnxruntime(name, fmt, pc, tmp_path):
    path, inp, x = _quantized(name, fmt, pc, tmp_path)
    mod = from_onnx(path)
    ops = {n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)}
    assert {"qnn.conv2d", "qnn.requantize"} <= ops        # integer convolutions, not the float fallback
    assert "nn.conv2d" not in ops
    assert_int8_equal(run_reference(mod, {inp: x})[0], _onnxruntime(path, inp, x), _output_step(path))


HOST = [("resnet50_tiny", "qdq", True, "graph")] + [
    pytest.param(n, f, p, ex, marks=pytest.mark.int8) for n in TINY for f, p in COMBOS
    for ex in ("graph", "aot") if (n, f, p, ex) != ("resnet50_tiny", "qdq", True, "graph")]


@pytest.mark.parametrize("name,fmt,pc,executor", HOST,
                         ids=lambda v: v if isinstance(v, str) else ("per_channel" if v else "per_tensor"))
def test_host_build_matches_onnxruntime(name, fmt, pc, executor, tmp_path):
    path, inp, x = _quantized(name, fmt, pc, tmp_path)
    (got,) = build(from_onnx(path), executor=executor).run_runner([x])
    assert_int8_equal(got, _onnxruntime(path, inp, x), _output_step(path))


@pytest.mark.int8
@pytest.mark.realsize
@pytest.mark.parametrize("name", ["resnet50", "mobilenetv2"])
@pytest.mark.parametrize("toolchain", ["gcc", "clang"])
def test_realsize_qdq_per_channel_matches_onnxruntime(name, toolchain, tmp_path):
    path, inp, x = _quantized(name, "qdq", True, tmp_path)
    mod = from_onnx(path)
    want = _onnxruntime(path, inp, x)
    lsb = _output_step(path)
    assert_int8_equal(run_reference(mod, {inp: x})[0], want, lsb)
    for executor in ("graph", "aot"):
        (got,) = build(mod, toolchain=toolchain, executor=executor).run_runner([x])
        assert_int8_equal(got, want, lsb)
