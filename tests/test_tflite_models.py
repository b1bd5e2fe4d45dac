"""TFLite models built by byoc (host-only and through ccompiler; gcc and clang; graph and AOT) and run:
int8 outputs equal TensorFlow Lite Micro's on every element, float32 ones LiteRT's within tolerance.

Default run: the small int8 CNN host-only (gcc, AOT), one 16x8 conv (gcc, AOT), the host kernels of TFLite's
arithmetic and the partitions' transposes; the other builds (the zoo's MLPerf Tiny models among them) behind the `tflite`
marker (docs/tflite.md).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tflite_models as tm
from byoc_compiler import zoo
from byoc_compiler.backend.build import build
from byoc_compiler.frontend.tflite import from_tflite
from byoc_compiler.ir import Call, post_order
from byoc_compiler.partition import partition_for, summarize

TARGETS = ("host", "ccompiler")
BUILDS = list(itertools.product(TARGETS, ("gcc", "clang"), ("graph", "aot")))
DEFAULT = {("host", "gcc", "aot")}


def _params():
    for case in BUILDS:
        marks = [] if case in DEFAULT else [pytest.mark.tflite]
        yield pytest.param(*case, id="-".join(case), marks=marks)


def _built_outputs(data: bytes, target: str, toolchain: str, executor: str, inputs):
    mod = from_tflite(data)
    if target != "host":
        mod = partition_for(target, mod)
    return build(mod, toolchain=toolchain, executor=executor, interface="packed").run_runner(list(inputs.values()))


@pytest.mark.parametrize("target,toolchain,executor", _params())
def test_small_cnn_int8_build_equals_tflite_micro(target, toolchain, executor):
    data = tm.small_cnn(True)
    inputs = tm.random_inputs(data, 4)
    (got,) = _built_outputs(data, target, toolchain, executor, inputs)
    np.testing.assert_array_equal(got, tm.run_tflm(data, inputs)[0])


HOST_CASES = {"add": lambda: tm.binary(True, act="RELU", broadcast=True), "mul": lambda: tm.binary(True, op="MUL"),
              "average_pool_same": lambda: tm.pool(True), "conv_softmax": lambda: tm.conv_softmax(True),
              "logistic": lambda: tm.activation(True, op="LOGISTIC"),
              "mean_last_axis": lambda: tm.reduce(True, axes=(1,), shape=(16, 32)),
              "resize_bilinear_half_pixel": lambda: tm.resize(True, op="RESIZE_BILINEAR", size=(3, 11), half=True),
              "prelu": lambda: tm.prelu(True), "space_to_batch": lambda: tm.space_batch(True)}
# behind the marker: the ops made of existing ops, and MEAN and MUL (each op's C is checked against the
# reference in tests/test_host_kernels.py by default, the reference against TFLM in test_tflite_import.py)
MARKED_HOST_CASES = {"resize_bilinear_half_pixel", "prelu", "space_to_batch", "mean_last_axis", "mul"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=[pytest.mark.tflite] if c in MARKED_HOST_CASES else [])
                                  for c in sorted(HOST_CASES)])
def test_tflite_arithmetic_host_kernels_equal_tflite_micro(case):
    """The host C of TFLite's ADD, MUL, average pool rounding, softmax, logistic and MEAN (no target takes
    them), and of int8 RESIZE_BILINEAR, PRELU and SPACE_TO_BATCH_ND."""
    make = HOST_CASES[case]
    data = make()
    inputs = tm.random_inputs(data, 5)
    (got,) = _built_outputs(data, "host", "gcc", "aot", inputs)
    # TFLM's SPACE_TO_BATCH_ND pads with an unset value (tests/test_tflite_import.py): LiteRT is the oracle
    peer = tm.run_litert if case == "space_to_batch" else tm.run_tflm
    np.testing.assert_array_equal(got, peer(data, inputs)[0])


# 16x8 (int16 activations, int8 weights, int64 sums): one single-op model per layer kind on gcc and clang, graph
# and AOT, and the small CNN through every build; the default run builds the conv whose sums pass int32 (gcc, AOT)
SINGLE_16X8 = {"conv_bias_past_int32": lambda: tm.conv(True, act="NONE", int16=True, bias_bits=34, out_scale=0.2),
               "depthwise": lambda: tm.conv(True, depthwise=True, mult=2, stride=2, act="RELU6", int16=True),
               "fully_connected": lambda: tm.fully_connected(True, per_channel=True, act="RELU", int16=True),
               "add": lambda: tm.binary(True, act="RELU", broadcast=True, int16=True),
               "softmax": lambda: tm.activation(True, op="SOFTMAX", int16=True)}


@pytest.mark.tflite
@pytest.mark.parametrize("target,toolchain,executor", BUILDS)
def test_small_cnn_16x8_build_equals_tflite_micro(target, toolchain, executor):
    """Through ccompiler too: it takes no int16 op (the host computes them), the result is the same."""
    data = tm.small_cnn(True, int16=True)
    inputs = tm.random_inputs(data, 4)
    (got,) = _built_outputs(data, target, toolchain, executor, inputs)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, tm.run_tflm(data, inputs)[0])


def _16x8_params():
    for case, toolchain, executor in itertools.product(sorted(SINGLE_16X8), ("gcc", "clang"), ("graph", "aot")):
        default = (case, toolchain, executor) == ("conv_bias_past_int32", "gcc", "aot")
        yield pytest.param(case, toolchain, executor, id=f"{case}-{toolchain}-{executor}",
                           marks=[] if default else [pytest.mark.tflite])


@pytest.mark.parametrize("case,toolchain,executor", _16x8_params())
def test_16x8_layer_build_equals_tflite_micro(case, toolchain, executor):
    data = SINGLE_16X8[case]()
    inputs = tm.random_inputs(data, 9)
    (got,) = _built_outputs(data, "host", toolchain, executor, inputs)
    np.testing.assert_array_equal(got, tm.run_tflm(data, inputs)[0])


def test_ccompiler_leaves_16x8_on_the_host_saying_why():
    """ccompiler's kernels are int8: no region of the 16x8 CNN holds an int16 op, and the report says why."""
    mod = partition_for("ccompiler", from_tflite(tm.small_cnn(True, int16=True)))
    report = summarize(mod)
    assert all(not ({"qnn.conv2d", "qnn.dense", "qnn.requantize"} & set(r.ops)) for r in report.regions)
    why = {h.op: h.why for h in report.host}
    assert "TFLite's 16x8" in why["qnn.conv2d"] and "TFLite's 16x8" in why["qnn.dense"]


@pytest.mark.tflite
def test_small_cnn_float32_build_within_tolerance_of_litert():
    data = tm.small_cnn(False)
    inputs = tm.random_inputs(data, 6)
    (got,) = _built_outputs(data, "ccompiler", "gcc", "aot", inputs)
    np.testing.assert_allclose(got, tm.run_litert(data, inputs)[0], rtol=1e-4, atol=1e-5)


def _transposes(mod) -> int:
    count = 0
    for fn in mod.functions.values():
        count += sum(1 for e in post_order(fn.body) if isinstance(e, Call) and getattr(e.op, "name", "") == "transpose")
    return count


@pytest.mark.parametrize("target", ["ccompiler", "dnnl"])
@pytest.mark.parametrize("model", ["small_cnn", "resnet8", "mobilenet_v1_025", "ds_cnn"])
def test_partitioned_cnn_holds_no_more_transposes_than_inputs_and_outputs(model, target):
    """One transpose at the (NHWC) input; the classifier's output is 2-D, the flatten folded into its weights."""
    data = tm.small_cnn(False) if model == "small_cnn" else zoo.tflite_model(model)
    mod = partition_for(target, from_tflite(data))
    assert _transposes(mod) == 1


ZOO_INT8 = ("ds_cnn_int8", "resnet8_int8", "mobilenet_v1_025_int8", "fc_autoencoder_int8", "mobilenet_v2_035_int8",
            "micro_cnn_int8", "transformer_encoder_int8", "micro_cnn_16x8")
ZOO_DEFAULT: set = set()    # the zoo's builds take 15-60 s each: all behind the marker


def _zoo_params():
    for model in ZOO_INT8:
        for case in BUILDS:
            marks = [] if (model, *case) in ZOO_DEFAULT else [pytest.mark.tflite]
            yield pytest.param(model, *case, id="-".join((model, *case)), marks=marks)


def _zoo_inputs(data: bytes, seed: int):
    """The zoo's int8 models take int8 data over the whole range (their input scale covers the spec's data); the
    16x8 ones int16 data over an eighth of it (its whole range would saturate the logits)."""
    inputs = tm.random_inputs(data, seed)
    return {k: v // 8 if v.dtype == np.int16 else v for k, v in inputs.items()}


@pytest.mark.parametrize("model,target,toolchain,executor", _zoo_params())
def test_zoo_tflite_int8_build_equals_tflite_micro(model, target, toolchain, executor):
    """The zoo's int8 .tflite models (MLPerf Tiny's four, MobileNetV2 0.35, the micro CNN, the transformer encoder;
    zoo/tiny) and the micro CNN's 16x8 form built by byoc: every element equals TensorFlow Lite Micro's."""
    data = zoo.tflite_model(model)
    inputs = _zoo_inputs(data, 7)
    (got,) = _built_outputs(data, target, toolchain, executor, inputs)
    np.testing.assert_array_equal(got, tm.run_tflm(data, inputs)[0])


ZOO_FLOAT = ("ds_cnn", "resnet8", "mobilenet_v1_025", "fc_autoencoder", "mobilenet_v2_035", "micro_cnn",
             "transformer_encoder")


@pytest.mark.tflite
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", ZOO_FLOAT)
def test_zoo_tflite_float32_build_within_tolerance_of_litert(model, target):
    """The zoo's float32 .tflite models built by byoc (gcc, AOT) are within float32 rounding of LiteRT's
    reference kernels (relative 1e-4 of the output's largest magnitude)."""
    data = zoo.tflite_model(model)
    inputs = tm.random_inputs(data, 8)
    (got,) = _built_outputs(data, target, "gcc", "aot", inputs)
    (want,) = tm.run_litert(data, inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
