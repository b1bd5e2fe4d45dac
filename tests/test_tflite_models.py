"""TFLite models built by byoc (host-only and through ccompiler; gcc and clang; graph and AOT) and run:
int8 outputs equal TensorFlow Lite Micro's on every element, float32 ones LiteRT's within tolerance.

Default run: two int8 builds and one float32 build of the small CNN; the rest behind the `tflite`
marker (docs/tflite.md).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tflite_models as tm
from byoc_compiler.backend.build import build
from byoc_compiler.frontend.tflite import from_tflite
from byoc_compiler.ir import Call, post_order
from byoc_compiler.partition import partition_for

TARGETS = ("host", "ccompiler")
BUILDS = list(itertools.product(TARGETS, ("gcc", "clang"), ("graph", "aot")))
DEFAULT = {("host", "gcc", "aot"), ("ccompiler", "clang", "graph")}


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
              "logistic": lambda: tm.activation(True, op="LOGISTIC")}


@pytest.mark.parametrize("case", sorted(HOST_CASES))
def test_tflite_arithmetic_host_kernels_equal_tflite_micro(case):
    """The host C of TFLite's ADD, MUL, average pool rounding, softmax and logistic (no target takes them)."""
    make = HOST_CASES[case]
    data = make()
    inputs = tm.random_inputs(data, 5)
    (got,) = _built_outputs(data, "host", "gcc", "aot", inputs)
    np.testing.assert_array_equal(got, tm.run_tflm(data, inputs)[0])


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
def test_partitioned_cnn_holds_no_more_transposes_than_inputs_and_outputs(target):
    mod = partition_for(target, from_tflite(tm.small_cnn(False)))
    assert _transposes(mod) <= 2      # one input, one output
