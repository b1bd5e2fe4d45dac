"""Every zoo model partitioned for examplejson, and for examplejson + ccompiler in one model, builds
(-Wall -Wextra -Werror) and matches the numpy reference of the UNPARTITIONED model on gcc and clang,
graph and AOT executors, packed and unpacked interfaces; the generated text is the guide's."""
import functools

import pytest

import needs

import byoc_compiler
from byoc_compiler import zoo
from byoc_compiler.backend.build import build
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.testing.tolerance import assert_close, tolerance_for_module

TARGET_SETS = {"ej": ("examplejson",), "ej+cc": ("examplejson", "ccompiler")}
TOOLCHAINS = ("gcc", "clang")
COMBOS = [(e, i) for e in ("graph", "aot") for i in ("packed", "unpacked")]


@functools.lru_cache(maxsize=None)
def _partitioned(targets, name):
    return byoc_compiler.partition_for(list(targets), zoo.get(name))


@functools.lru_cache(maxsize=None)
def _expected(name):
    return run_reference(zoo.get(name), zoo.inputs(name))


def _zoo_cases():
    """Every zoo model x target set x toolchain x executor/interface; the default run takes two of the eight
    toolchain/executor/interface lanes per model and target set, in turn (every lane runs: the matrix's pairwise
    lanes cover examplejson too), the rest wait for `every_toolchain`."""
    lanes = [(tc, e, i) for tc in TOOLCHAINS for e, i in COMBOS]
    cases = []
    for k, (name, targets) in enumerate((n, t) for n in zoo.names() for t in TARGET_SETS):
        default = {lanes[k % len(lanes)], lanes[(k + 3) % len(lanes)]}
        cases += [pytest.param(name, targets, tc, e, i, id=f"{name}-{targets}-{tc}-{e}-{i}",
                               marks=[] if (tc, e, i) in default else [pytest.mark.every_toolchain])
                  for tc, e, i in lanes]
    return cases


@pytest.mark.parametrize("name,targets,toolchain,executor,interface", _zoo_cases())
def test_zoo_model_matches_reference(name, targets, toolchain, executor, interface):
    mod = _partitioned(TARGET_SETS[targets], name)
    lib = build(mod, toolchain=toolchain, executor=executor, interface=interface)
    assert "examplejson" in lib.metadata["targets"]
    if targets == "ej+cc" and name != "byoc_guide":
        assert lib.metadata["targets"] == ["ccompiler", "examplejson"]
    model = lib.load(werror=True)
    try:
        inputs = zoo.inputs(name)
        for key, x in (inputs.items() if isinstance(inputs, dict) else enumerate(inputs)):
            model.set_input(key, x)
        model.run()
        got = [model.get_output(k) for k in range(model.get_num_outputs())]
    finally:
        model.close()
    expected = _expected(name)
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected)):
        rtol, atol = tolerance_for_module(zoo.get(name), e.dtype)
        assert_close(g, e, rtol, atol, what=f"{name} [{targets}] output {k}")


def test_runner_executes_the_embedded_text():
    """The standalone runner (no Python) creates the module from the embedded text at init."""
    lib = build(_partitioned(("examplejson",), "small_cnn"), toolchain="gcc")
    got = lib.run_runner(zoo.inputs("small_cnn"), werror=True)
    (expected,) = _expected("small_cnn")
    rtol, atol = tolerance_for_module(zoo.get("small_cnn"), expected.dtype)
    assert_close(got[0], expected, rtol, atol, what="small_cnn via the runner")


def test_get_source_is_the_guides_text():
    lib = build(_partitioned(("examplejson",), "byoc_guide"))
    assert lib.get_source("examplejson") == (
        "tvmgen_default_examplejson_main_0\n"
        "  input 0 10 10\n"
        "  input 1 10 10\n"
        "  input 2 10 10\n"
        "  input 3 10 10\n"
        "  add 4 inputs: 0 1 shape: 10 10\n"
        "  subtract 5 inputs: 4 2 shape: 10 10\n"
        "  multiply 6 inputs: 5 3 shape: 10 10\n")
    blobs = lib.blobs()
    assert list(blobs) == ["src/examplejson/tvmgen_default_examplejson_main_0.examplejson"]
    assert blobs[next(iter(blobs))].decode() == lib.get_source("examplejson")
    assert b"tvmgen_default_examplejson_main_0\\n" not in lib.get_source().encode()  # embedded as bytes


@pytest.mark.parametrize("toolchain,name,executor,interface", [
    pytest.param("s390x-gcc", "mlp", "aot", "unpacked", id="s390x-mlp"),  # big-endian: constants byte-swapped at create
    # every zoo model runs through examplejson under a sanitizer in the matrix's default lanes
    pytest.param("gcc-asan-ubsan", "small_cnn", "graph", "packed", id="gcc-asan-small_cnn",
                 marks=pytest.mark.every_toolchain),
])
def test_other_toolchains(toolchain, name, executor, interface):
    from byoc_compiler.config import load_config

    needs.toolchain(load_config().toolchain(toolchain))
    lib = build(_partitioned(("examplejson",), name), toolchain=toolchain, executor=executor, interface=interface)
    got = lib.run_runner(zoo.inputs(name), werror=True)
    for k, (g, e) in enumerate(zip(got, _expected(name))):
        rtol, atol = tolerance_for_module(zoo.get(name), e.dtype)
        assert_close(g.astype(e.dtype), e, rtol, atol, what=f"{name} on {toolchain} output {k}")  # >f4 on s390x
