"""Quantized zoo models (onnxruntime.quantization.quantize_static, QDQ and QOperator, per-tensor and
per-channel) imported and run by byoc, compared with onnxruntime's integer session (1 thread,
session.qdqisint8allowed=1: testing.quantize.integer_session) on the same input.

Acceptance: >= 99.9% of the output elements equal and at most 1 LSB (one output scale step) apart.
By default: the reference for every format x granularity of the tiny models, one host build of each
tiny model and of the tiny CNN. Behind the `int8` marker: every format x granularity x executor x
interface on the tiny models; with `realsize` too, ResNet-50 and MobileNetV2 at full size, host-only,
on gcc and clang, graph and AOT, packed and unpacked (docs/matrix.md). The quantized models are made
once and cached by content (byoc_compiler.testing.quantize).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest


from byoc_compiler.backend.build import build  # noqa: E402
from byoc_compiler.frontend import from_onnx  # noqa: E402
from byoc_compiler.ir import Call, Op, post_order  # noqa: E402
from byoc_compiler.testing.quantize import (int8_agreement, integer_session, output_step, quantized_zoo_model,
                                            sample_input)
from byoc_compiler.testing.reference import run_reference  # noqa: E402


@functools.lru_cache(maxsize=4)
def quantized(name: str, fmt: str, per_channel: bool):
    """(path, input name, input, onnxruntime's output at 1 thread, one output LSB) of a quantized model."""
    path = str(quantized_zoo_model(name, fmt, per_channel))
    inp, x = sample_input(path)
    want = integer_session(path).run(None, {inp: x})[0]
    return path, inp, x, want, output_step(path)


def assert_int8_equal(got: np.ndarray, want: np.ndarray, lsb: float, record=None) -> None:
    assert lsb > 0
    equal, worst = int8_agreement(got, want, lsb)
    if record is not None:                  # into --junitxml: the measured agreement, not just pass/fail
        record("equal_fraction", equal)
        record("max_lsb", worst)
    assert equal >= 0.999, f"only {equal:.4%} of the elements equal onnxruntime's"
    assert worst <= 1.0001, f"max difference {worst:.3f} LSB (one LSB is {lsb})"


def test_agreement_measure_fails_on_a_two_step_difference():
    want = np.arange(2000, dtype=np.float32) * np.float32(0.5)
    got = want.copy()
    got[7] += 0.5                                   # one element one step off: 99.95% equal, 1 LSB
    assert int8_agreement(got, want, 0.5) == (0.9995, 1.0)
    got[8] += 1.0                                   # another two steps off
    with pytest.raises(AssertionError, match="max difference 2.000 LSB"):
        assert_int8_equal(got, want, 0.5)
    with pytest.raises(AssertionError, match="only 99.8"):
        assert_int8_equal(want + np.float32(0.5) * (np.arange(2000) % 500 == 0), want, 0.5)


def test_quantized_models_are_reproducible_and_cached_by_content(tmp_path):
    """Two quantizations of the same model are the same bytes (so a cache by content is sound); a second
    request is the cached file, not a new quantization; another form is another file."""
    first = quantized_zoo_model("tiny_cnn", "qdq", True, tmp_path / "a")
    again = quantized_zoo_model("tiny_cnn", "qdq", True, tmp_path / "b")
    assert first.name == again.name and first.read_bytes() == again.read_bytes()
    stamp = first.stat().st_mtime_ns
    assert quantized_zoo_model("tiny_cnn", "qdq", True, tmp_path / "a") == first
    assert first.stat().st_mtime_ns == stamp
    other = quantized_zoo_model("tiny_cnn", "qdq", False, tmp_path / "a")
    assert other != first and sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted([first.name, other.name])


COMBOS = [(fmt, pc) for fmt in ("qdq", "qop") for pc in (True, False)]
TINY = ["resnet50_tiny", "mobilenetv2_tiny"]


def _case_id(name, fmt, pc):
    return f"{name}-{fmt}-{'per_channel' if pc else 'per_tensor'}"


@pytest.mark.parametrize("name,fmt,pc", [(n, f, p) for n in TINY for f, p in COMBOS],
                         ids=[_case_id(n, f, p) for n in TINY for f, p in COMBOS])
def test_reference_matches_onnxruntime(name, fmt, pc):
    path, inp, x, want, lsb = quantized(name, fmt, pc)
    mod = from_onnx(path)
    ops = {n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)}
    assert {"qnn.conv2d", "qnn.requantize"} <= ops        # integer convolutions, not the float fallback
    assert "nn.conv2d" not in ops
    assert_int8_equal(run_reference(mod, {inp: x})[0], want, lsb)


# (model, format, per-channel, toolchain, executor, interface): the default run builds three, `int8`
# the rest of the tiny models' product.
BUILDS = [(n, f, p, "gcc" if k % 2 == 0 else "clang", ex, itf)
          for k, (n, (f, p), ex, itf) in enumerate((n, c, ex, itf) for n in TINY for c in COMBOS
                                                   for ex in ("graph", "aot") for itf in ("packed", "unpacked"))]
DEFAULT_BUILDS = {("resnet50_tiny", "qdq", True, "gcc", "graph", "packed"),
                  ("mobilenetv2_tiny", "qop", False, "clang", "aot", "unpacked")}


def _build_id(case):
    name, fmt, pc, tc, ex, itf = case
    return f"{_case_id(name, fmt, pc)}-{tc}-{ex}-{itf}"


def _param(case, *marks):
    return pytest.param(*case, id=_build_id(case), marks=list(marks))


def _check_build(name, fmt, pc, toolchain, executor, interface, record=None):
    path, inp, x, want, lsb = quantized(name, fmt, pc)
    (got,) = build(from_onnx(path), toolchain=toolchain, executor=executor,
                   interface=interface).run_runner([x])
    assert_int8_equal(got, want, lsb, record)


@pytest.mark.parametrize("name,fmt,pc,toolchain,executor,interface",
                         [_param(c) if c in DEFAULT_BUILDS else _param(c, pytest.mark.int8) for c in BUILDS])
def test_host_build_matches_onnxruntime(name, fmt, pc, toolchain, executor, interface, record_property):
    _check_build(name, fmt, pc, toolchain, executor, interface, record_property)


@pytest.mark.parametrize("fmt,pc", COMBOS, ids=[_case_id("tiny_cnn", f, p) for f, p in COMBOS])
def test_tiny_cnn_matches_onnxruntime(fmt, pc):
    """The matrix's small quantized CNN (conv, depthwise, relu6, max pool, residual add, GAP, Gemm): its
    reference in every form, one build."""
    path, inp, x, want, lsb = quantized("tiny_cnn", fmt, pc)
    mod = from_onnx(path)
    assert_int8_equal(run_reference(mod, {inp: x})[0], want, lsb)
    if (fmt, pc) == ("qdq", True):
        (got,) = build(mod, toolchain="clang", executor="aot", interface="packed").run_runner([x])
        assert_int8_equal(got, want, lsb)


@pytest.mark.parametrize("fmt,pc", COMBOS, ids=[_case_id("concat_cnn", f, p) for f, p in COMBOS])
def test_concat_heavy_cnn_matches_onnxruntime(fmt, pc):
    """The zoo's concat_cnn (Inception/DenseNet blocks: branches concatenated with their own scales, a 2x2
    average pool transition, softmax) in every form, on eight inputs: every element equal. Before byoc
    followed onnxruntime's QLinearAveragePool (float32 average) and QLinearSoftmax (step 1/floor(1/scale)),
    the QDQ form equalled it on 84-91% of the elements (tests/test_onnx_qoperator.py)."""
    path = str(quantized_zoo_model("concat_cnn", fmt, pc))
    inp, _ = sample_input(path)
    mod = from_onnx(path)
    ops = {n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)}
    assert {"qnn.concatenate", "qnn.avg_pool2d"} <= ops
    session = integer_session(path)
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(8)]
    got = np.concatenate([run_reference(mod, {inp: x})[0] for x in xs])
    want = np.concatenate([session.run(None, {inp: x})[0] for x in xs])
    assert_int8_equal(got, want, output_step(path))
    np.testing.assert_array_equal(got, want)


# Real size: QDQ per-channel (the acceptance's models) on every compiler x executor x interface, and
# the other three forms on one gcc and one clang build each.
REALSIZE = ["resnet50", "mobilenetv2"]
REALSIZE_BUILDS = [(n, "qdq", True, tc, ex, itf) for n in REALSIZE for tc in ("gcc", "clang")
                   for ex in ("graph", "aot") for itf in ("packed", "unpacked")] + \
                  [(n, f, p, tc, ex, itf) for n in REALSIZE for f, p in COMBOS[1:]
                   for tc, ex, itf in (("gcc", "aot", "unpacked"), ("clang", "graph", "packed"))]


@pytest.mark.int8
@pytest.mark.realsize
@pytest.mark.parametrize("name,fmt,pc", [(n, f, p) for n in REALSIZE for f, p in COMBOS],
                         ids=[_case_id(n, f, p) for n in REALSIZE for f, p in COMBOS])
def test_realsize_reference_matches_onnxruntime(name, fmt, pc, record_property):
    path, inp, x, want, lsb = quantized(name, fmt, pc)
    assert_int8_equal(run_reference(from_onnx(path), {inp: x})[0], want, lsb, record_property)


@pytest.mark.int8
@pytest.mark.realsize
@pytest.mark.parametrize("name,fmt,pc,toolchain,executor,interface", [_param(c) for c in REALSIZE_BUILDS])
def test_realsize_host_build_matches_onnxruntime(name, fmt, pc, toolchain, executor, interface, record_property):
    _check_build(name, fmt, pc, toolchain, executor, interface, record_property)
