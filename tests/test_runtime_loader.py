"""Python loader (byoc_compiler.runtime.load) on the fixture model libraries; params writer/reader;
the runtime source lists a build uses."""
import numpy as np
import pytest

from byoc_compiler import runtime
from runtime_fixtures import builder
from runtime_fixtures.fixtures import aot_lib, graph_lib, rt_dir  # noqa: F401

X = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.float32)
Y = np.full((2, 3), 0.25, dtype=np.float32)


@pytest.fixture
def graph_mod(graph_lib):
    m = runtime.load(graph_lib)
    yield m
    m.close()


@pytest.fixture
def aot_mod(aot_lib):
    m = runtime.load(aot_lib)
    yield m
    m.close()


def test_graph_model_by_name_and_index(graph_mod):
    graph_mod.set_input("x", X)
    graph_mod.set_input(1, Y)
    graph_mod.run()
    for i, want in enumerate(builder.graph_reference(X, Y)):
        np.testing.assert_array_equal(graph_mod.get_output(i), want)


def test_aot_model_int_and_float(aot_mod):
    a = np.array([0, 1, -5, 7], np.int32)
    b = np.arange(4, dtype=np.float32).reshape(2, 2)
    aot_mod.set_input("a", a)
    aot_mod.set_input("b", b)
    aot_mod.run()
    for i, want in enumerate(builder.aot_reference(a, b)):
        got = aot_mod.get_output(i)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_introspection(graph_mod):
    assert (graph_mod.get_num_inputs(), graph_mod.get_num_outputs()) == (2, 2)
    assert [(t.name, t.shape, str(t.dtype)) for t in graph_mod.input_info()] == [
        ("x", (2, 3), "float32"), ("y", (2, 3), "float32")]
    assert [t.shape for t in graph_mod.output_info()] == [(2, 3), (2, 3)]
    assert (graph_mod.executor, graph_mod.interface, graph_mod.workspace_bytes) == ("graph", "packed", 192)


def test_big_endian_and_non_contiguous_inputs_are_converted(graph_mod):
    graph_mod.set_input("x", X.astype(">f4"))
    graph_mod.set_input("y", np.asfortranarray(Y))
    graph_mod.run()
    np.testing.assert_array_equal(graph_mod.get_output(0), builder.graph_reference(X, Y)[0])


def test_get_output_is_a_copy(graph_mod):
    graph_mod.set_input("x", X)
    graph_mod.set_input("y", Y)
    graph_mod.run()
    out = graph_mod.get_output(0)
    out[:] = 42
    np.testing.assert_array_equal(graph_mod.get_output(0), builder.graph_reference(X, Y)[0])


BAD_INPUTS = [
    ("shape", "x", np.zeros((3, 2), np.float32), ValueError, ["'x'", "expected shape (2, 3)", "given (3, 2)"]),
    ("dtype", "y", np.zeros((2, 3), np.float64), ValueError, ["'y'", "expected dtype float32", "given float64"]),
    ("int-dtype", 0, np.zeros((2, 3), np.int32), ValueError, ["'x'", "given int32"]),
    ("name", "z", X, ValueError, ["no input 'z'", "'x', 'y'"]),
    ("index", 2, X, IndexError, ["input index 2 out of range"]),
    ("not-numbers", "x", "abc", ValueError, ["input 'x'", "expected an array of float32", "given str"]),
]


@pytest.mark.parametrize("key,value,exc,fragments", [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_is_rejected_naming_it(graph_mod, key, value, exc, fragments):
    with pytest.raises(exc) as info:
        graph_mod.set_input(key, value)
    for f in fragments:
        assert f in str(info.value)


def test_run_failure_carries_c_error(graph_mod):
    graph_mod.set_input("x", np.full((2, 3), np.nan, np.float32))
    graph_mod.set_input("y", Y)
    with pytest.raises(RuntimeError, match="run failed: node 5 .*k_relu: NaN at element 0"):
        graph_mod.run()


def test_run_without_inputs_is_an_error(graph_mod):
    graph_mod.set_input("x", X)
    with pytest.raises(RuntimeError, match="set_input was not called for 'y'"):
        graph_mod.run()


BAD_OUTPUT_KEYS = [
    ("out-of-range", 2, IndexError, "output index 2 out of range"),
    ("a-name", "x", TypeError, r"get_output takes an output index \(0 to 1\), given 'x'"),
]


@pytest.mark.parametrize("key,exc,message", [c[1:] for c in BAD_OUTPUT_KEYS], ids=[c[0] for c in BAD_OUTPUT_KEYS])
def test_output_index_checked(graph_mod, key, exc, message):
    with pytest.raises(exc, match=message):
        graph_mod.get_output(key)


def test_benchmark(graph_mod):
    graph_mod.set_input("x", X)
    graph_mod.set_input("y", Y)
    res = graph_mod.benchmark(repeat=5)
    assert len(res.times_ms) == 5 and min(res.times_ms) <= res.median_ms <= max(res.times_ms)


def test_two_loads_share_one_init(graph_lib):
    a, b = runtime.load(graph_lib), runtime.load(graph_lib)
    a.close()
    b.set_input("x", X)
    b.set_input("y", Y)
    b.run()  # still initialized: deinit waits for the last close
    np.testing.assert_array_equal(b.get_output(1), builder.graph_reference(X, Y)[1])
    b.close()
    with pytest.raises(RuntimeError, match="was closed"):
        b.run()


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        runtime.load(tmp_path / "missing.so")
    (tmp_path / "junk.so").write_bytes(b"not an ELF file")
    with pytest.raises(RuntimeError, match="cannot load model library"):
        runtime.load(tmp_path / "junk.so")


# ---- params blob (Python side)
PARAM_SETS = [
    ("float32-2d", {"p0": np.arange(6, dtype=np.float32).reshape(2, 3)}),
    ("big-endian-in", {"w": np.arange(4, dtype=">f4"), "b": np.array([1, -1], dtype=">i4")}),
    ("scalar-int64-bool", {"s": np.array(7, np.int64), "m": np.array([True, False, True])}),
    ("empty-tensor", {"e": np.zeros((0, 3), np.float32)}),
    ("none", {}),
]


@pytest.mark.parametrize("params", [c[1] for c in PARAM_SETS], ids=[c[0] for c in PARAM_SETS])
def test_params_round_trip(params):
    back = runtime.load_params(runtime.save_params(params))
    assert list(back) == list(params)
    for k, v in params.items():
        assert back[k].dtype == v.dtype.newbyteorder("=") and back[k].shape == v.shape
        np.testing.assert_array_equal(back[k], v)


def test_params_layout_is_little_endian():
    blob = runtime.save_params({"ab": np.array([1.0], np.float32)})
    assert blob == (b"BYOCPRM1" + (1).to_bytes(4, "little") + (2).to_bytes(4, "little") + b"ab"
                    + bytes([2, 32, 1, 0]) + (1).to_bytes(4, "little") + (1).to_bytes(8, "little")
                    + (4).to_bytes(8, "little") + bytes.fromhex("0000803f"))


@pytest.mark.parametrize("blob,match", [
    (b"XXXXXXXX\0\0\0\0", "bad magic"),
    (runtime.save_params({"p": np.zeros(3, np.float32)})[:-1], "truncated"),
    (runtime.save_params({"p": np.zeros(3, np.float32)}) + b"\0", "trailing"),
], ids=["magic", "truncated", "trailing"])
def test_load_params_errors(blob, match):
    with pytest.raises(ValueError, match=match):
        runtime.load_params(blob)


def test_save_params_rejects_unsupported():
    with pytest.raises(ValueError, match="complex64 has no runtime equivalent"):
        runtime.save_params({"c": np.zeros(2, np.complex64)})
    with pytest.raises(ValueError, match="non-empty string"):
        runtime.save_params({"": np.zeros(2, np.float32)})


# ---- source lists
def test_runtime_sources_per_executor():
    names = lambda *a, **k: [p.name for p in runtime.runtime_sources(*a, **k)]  # noqa: E731
    assert names("aot") == ["runtime.c", "parallel.c"]
    assert names("graph") == ["runtime.c", "parallel.c", "graph_executor.c", "json.c", "params.c"]
    assert names("aot", runner=True)[-2:] == ["npy.c", "runner.c"]
    assert all(p.is_file() for p in runtime.runtime_sources("graph", runner=True))
    assert (runtime.include_dir() / "byoc" / "runtime.h").is_file()
    assert (runtime.dlpack_include_dir() / "dlpack" / "dlpack.h").is_file()
    with pytest.raises(ValueError, match="choose one of graph, aot"):
        runtime.runtime_sources("vm")


def test_missing_dlpack_header_is_one_clear_error_when_building(monkeypatch, tmp_path):
    from byoc_compiler import build, zoo
    from byoc_compiler.errors import ByocError

    monkeypatch.setattr("byoc_compiler.runtime.sources._DLPACK_CANDIDATES", (tmp_path,))
    with pytest.raises(ByocError, match=r"dlpack/dlpack.h was not found in .*apt-get install libdlpack-dev"):
        build(zoo.get("mlp")).export_library(tmp_path / "m.so")
    assert not (tmp_path / "m.so").exists()


def test_import_is_light():
    import subprocess
    import sys
    code = ("import sys, byoc_compiler.runtime; "
            "print(any(m.startswith(('subprocess', 'byoc_compiler.backend')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
