"""Every zoo model, unpartitioned, for gcc and clang x graph and aot x packed and unpacked, matches the
numpy reference (byoc_compiler.testing.tolerance), loaded as a shared library and run as the standalone
runner. Everything is compiled with -Wall -Wextra -Werror."""
import numpy as np
import pytest

from byoc_compiler import zoo
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.testing.tolerance import assert_close, tolerance_for_module

from build_cache import built, matrix, model


def _expected(name):
    inputs = zoo.inputs(name)
    return inputs, run_reference(model(name), inputs)


def _check(name, outputs, expected):
    assert len(outputs) == len(expected)
    for k, (got, want) in enumerate(zip(outputs, expected)):
        rtol, atol = tolerance_for_module(model(name), want.dtype)
        assert_close(got, want, rtol, atol, what=f"{name} output {k}")


@pytest.mark.parametrize("name,toolchain,executor,interface", matrix())
def test_library_and_runner_match_reference(name, toolchain, executor, interface):
    # One test per combination so that a session builds each combination once, whichever worker runs it.
    lib = built(name, toolchain, executor, interface)
    inputs, expected = _expected(name)
    m = lib.load(werror=True)
    assert (m.executor, m.interface) == (executor, interface)
    assert m.workspace_bytes == lib.metadata["workspace_bytes"]
    for key, value in inputs.items():
        m.set_input(key, value)
    m.run()
    _check(name, [m.get_output(i) for i in range(m.get_num_outputs())], expected)
    _check(name, lib.run_runner(inputs, werror=True), expected)


# The default run sanitizes small_cnn's host build here (convolution, pooling, dense host kernels); the other
# zoo models wait for `every_toolchain`: the matrix's sanitizer lanes run every zoo model by default.
@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n == "small_cnn" else [pytest.mark.every_toolchain])
                                  for n in zoo.names()])
def test_sanitizers_gcc_asan_ubsan_runner(name):
    """One run of every model under -fsanitize=address,undefined (gcc-asan-ubsan of config.toml), AOT and
    graph executors alternating by model so both are covered without doubling the time."""
    names = zoo.names()
    executor = "aot" if names.index(name) % 2 else "graph"
    interface = "unpacked" if names.index(name) % 4 in (1, 2) else "packed"
    lib = built(name, "gcc-asan-ubsan", executor, interface)
    inputs, expected = _expected(name)
    _check(name, lib.run_runner(inputs, werror=True), expected)


def test_repeat_reports_median_time():
    lib = built("mlp", "gcc", "aot", "packed")
    inputs, expected = _expected("mlp")
    outputs = lib.run_runner(inputs, repeat=3, werror=True)
    _check("mlp", outputs, expected)
    assert lib.last_run_ms is not None and lib.last_run_ms >= 0.0


def test_runner_inputs_in_list_order_and_bad_count():
    from byoc_compiler.errors import ByocError

    lib = built("byoc_guide", "gcc", "graph", "packed")
    inputs, expected = _expected("byoc_guide")
    ordered = [inputs[i["name"]] for i in lib.metadata["inputs"]]
    _check("byoc_guide", lib.run_runner(ordered, werror=True), expected)
    with pytest.raises(ByocError, match="takes"):
        lib.run_runner(ordered[:-1], werror=True)


def test_runner_rejects_wrong_shape_with_message():
    from byoc_compiler.errors import ByocError

    lib = built("mlp", "gcc", "graph", "packed")
    inputs, _ = _expected("mlp")
    name = lib.metadata["inputs"][0]["name"]
    bad = dict(inputs)
    bad[name] = np.zeros((3, 3, 3), np.float32)
    with pytest.raises(ByocError, match=name):
        lib.run_runner(bad, werror=True)
