"""Real-size models built, run and checked: the zoo's MobileNetV2 and ResNet-50 at 224x224, EfficientNet-lite
and BERT-tiny.

Each case builds the partitioned model (Python API, the runner), runs it on the check's deterministic
inputs and compares with the float64 reference of the unpartitioned model, as `scons check` does
(testing/tolerance.compare_with_bounds). The default run builds MobileNetV2 (3.5 M weights) once
for each target (ccompiler, examplejson, dnnl) on gcc: a full ResNet-50 build takes minutes. Every
other configuration is marked `realsize` (`pytest --realsize`, docs/matrix.md).
"""
from __future__ import annotations

import functools

import pytest

from byoc_compiler import build, partition_for, zoo
from byoc_compiler.check import deterministic_inputs, expected_outputs
from byoc_compiler.testing.tolerance import compare_with_bounds

# (model, targets, toolchain, executor, interface); the first is the default run's case.
CASES = [
    ("mobilenetv2", "ccompiler", "gcc", "aot", "unpacked"),
    ("resnet50", "ccompiler", "gcc", "aot", "unpacked"),
    ("resnet50", "ccompiler", "gcc", "graph", "packed"),
    ("resnet50", "ccompiler", "clang", "aot", "packed"),
    ("resnet50", "ccompiler", "clang", "graph", "unpacked"),
    ("mobilenetv2", "ccompiler", "clang", "graph", "packed"),
    ("mobilenetv2", "examplejson", "gcc", "graph", "packed"),
    ("mobilenetv2", "host", "gcc", "aot", "unpacked"),
    ("mobilenetv2", "dnnl", "gcc", "aot", "unpacked"),
    ("resnet50", "dnnl", "gcc", "graph", "packed"),
    ("resnet50", "dnnl,ccompiler", "clang", "aot", "unpacked"),
    # efficientnet_lite's gates once overflowed the check's magnitude shadow (allowed error NaN)
    ("efficientnet_lite", "ccompiler", "gcc", "aot", "unpacked"),
    ("bert_tiny", "ccompiler", "gcc", "aot", "unpacked"),
]
# The default run: one real-size case per target that has one here (the rest: pytest --realsize).
DEFAULT = {CASES[0], ("mobilenetv2", "examplejson", "gcc", "graph", "packed"),
           ("mobilenetv2", "dnnl", "gcc", "aot", "unpacked")}


def _id(case) -> str:
    return "-".join(case)


PARAMS = [pytest.param(c, id=_id(c), marks=[] if c in DEFAULT else [pytest.mark.realsize]) for c in CASES]


@functools.lru_cache(maxsize=1)
def _reference(name):
    mod = zoo.get(name)
    inputs = deterministic_inputs(mod)
    return mod, inputs, expected_outputs(mod, inputs)


@pytest.mark.parametrize("case", PARAMS)
def test_realsize_model_builds_runs_and_passes_the_check(case):
    name, targets, toolchain, executor, interface = case
    if "dnnl" in targets.split(","):
        from byoc_compiler.target import get_target

        if get_target("dnnl").missing():      # oneDNN: a system library scripts/setup.sh installs
            import needs

            needs.missing(get_target("dnnl").missing())
    mod, inputs, expected = _reference(name)
    part = mod if targets == "host" else partition_for(targets.split(","), zoo.get(name))
    lib = build(part, toolchain=toolchain, executor=executor, interface=interface, opt="-O3")
    outputs = lib.run_runner(inputs)
    result = compare_with_bounds(outputs, expected)
    assert result.passed, result.detail
    assert result.margin < 0.5, result.margin       # not near the edge: correct builds sit far inside
    assert outputs[0].shape == expected[0].value.shape == ((1, 128, 128) if name == "bert_tiny" else (1, 1000))
