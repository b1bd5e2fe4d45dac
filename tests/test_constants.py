"""Large constants leave the C text: raw bytes in byoc_constants.bin, linked by byoc_constants.S (.incbin).

Checked against numpy (testing.run_reference of the unpartitioned model) on every configured
toolchain, big-endian s390x included (the byte-order path), for every place a model keeps
constants: ccompiler region weights, host constants (AOT arrays, the graph executor's params blob)
and an ExampleJSON blob.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

import needs

from byoc_compiler import build, op, partition_for, testing
from byoc_compiler.backend import constants as constmod
from byoc_compiler.backend.artifact import CSourceArtifact
from byoc_compiler.config import load_config
from byoc_compiler.errors import ByocError
from byoc_compiler.ir import Function, IRModule, Var, const
from byoc_compiler.ir.types import TensorType


def _model(rows: int = 2):
    """dense(x, W) + b, then multiply by a large constant vector: 4 KiB and 8 KiB weights, a small bias.
    With more than one row ccompiler links the dense weights packed (targets/ccompiler/prepack.py), with one
    as the IR has them."""
    rng = np.random.default_rng(7)
    x = Var("x", TensorType((rows, 64), "float32"))
    w = rng.standard_normal((32, 64)).astype(np.float32)
    w[0, :4] = [-0.0, np.finfo(np.float32).tiny, 1e-45, np.finfo(np.float32).max / 1e6]
    b = rng.standard_normal(32).astype(np.float32)
    scale = rng.standard_normal((2, 32)).astype(np.float32) * 0 + rng.standard_normal(32).astype(np.float32)
    y = op.nn.bias_add(op.nn.dense(x, const(w)), const(b))
    y = op.multiply(y, const(np.tile(scale, (16, 1))[:rows]))
    z = op.add(op.nn.dense(y, const(rng.standard_normal((64, 32)).astype(np.float32))), const(np.float32(0.5)))
    return IRModule.from_expr(Function([x], z))


X = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)


def _toolchain_or_skip(name):
    tc = load_config().toolchains[name]
    needs.toolchain(tc)
    return tc


def _check(lib, mod):
    got = lib.run_runner({"x": X}, werror=True)
    want = testing.run_reference(mod, {"x": X})
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)


# Every place a model keeps constants, each executor and interface at least once.
CASES = [("ccompiler", "graph", "packed"), ("ccompiler", "aot", "unpacked"), ("ccompiler", "aot", "packed"),
         ("ccompiler", "graph", "unpacked"), ("host", "graph", "packed"), ("host", "aot", "unpacked"),
         ("examplejson", "aot", "packed"), ("examplejson", "graph", "unpacked")]


@pytest.mark.parametrize("target,executor,interface", CASES, ids=["-".join(c) for c in CASES])
def test_linked_constants_run_right_on_gcc(target, executor, interface):
    mod = _model()
    part = mod if target == "host" else partition_for(target, mod)
    lib = build(part, toolchain="gcc", executor=executor, interface=interface)
    files = lib.constant_files()
    assert set(files) == {constmod.ASM_FILE, constmod.BIN_FILE}
    assert lib.metadata["large_constants"]["count"] >= 1
    # No weight reached the C text: every source is small.
    assert max(len(t) for t in lib.sources().values()) < 40_000
    _check(lib, mod)


# Bare-metal toolchains build one form (AOT + unpacked): their linked constants run in tests/test_baremetal.py.
CROSS = [name for name, tc in load_config().toolchains.items() if name != "gcc" and not tc.freestanding]
# The default run: clang and big-endian s390x; the others wait for `every_toolchain`.
DEFAULT_LANES = ("clang", "s390x-gcc")


@pytest.mark.parametrize("toolchain", [
    pytest.param(name, marks=[] if name in DEFAULT_LANES else [pytest.mark.every_toolchain]) for name in CROSS])
def test_linked_constants_on_every_toolchain(toolchain):
    """s390x is big-endian: its .bin holds big-endian floats, and the runner still gets numpy's result."""
    tc = _toolchain_or_skip(toolchain)
    mod = _model()
    for target, executor in (("ccompiler", "aot"), ("host", "graph")):
        part = mod if target == "host" else partition_for(target, mod)
        lib = build(part, toolchain=toolchain, executor=executor, interface="packed")
        _check(lib, mod)
        order = constmod.byte_order(tc.arch)
        assert lib.metadata["large_constants"]["byte_order"] == ("big" if order == ">" else "little")


def test_s390x_bin_is_big_endian_and_aligned():
    mod = _model()
    lib = build(partition_for("ccompiler", mod), toolchain="s390x-gcc", executor="aot")
    blob = lib.constant_files()[constmod.BIN_FILE]
    (region,) = lib.artifacts.values()
    for entry in lib.constants.entries:
        assert entry.offset % constmod.ALIGNMENT == 0
        if entry.symbol in region.constants:
            want = region.constants[entry.symbol].astype(">f4").tobytes()
            assert blob[entry.offset:entry.offset + len(want)] == want
    asm = lib.constant_files()[constmod.ASM_FILE]
    assert asm.count(".incbin") == len(lib.constants.entries) >= 2
    assert "/" not in asm.split('.incbin "')[1].split('"')[0]      # a bare file name: the export can move


def test_small_constants_stay_literals_and_threshold_is_an_option():
    mod = _model()
    part = partition_for("ccompiler", mod)
    lib = build(part, executor="aot", large_constant_bytes=None)
    assert lib.constant_files() == {}
    assert "extern const float" not in lib.get_source("ccompiler")
    _check(lib, mod)
    lib = build(part, executor="aot", large_constant_bytes=1 << 20)    # nothing is that large
    assert lib.constant_files() == {}
    src = build(part, executor="aot").get_source("ccompiler")
    assert "static const float c" in src          # the 32-float bias is a literal a person can read


@pytest.mark.parametrize("bad", [0, -1, "4k", True, 1.5])
def test_bad_threshold_is_one_clear_error(bad):
    with pytest.raises(ByocError, match="large_constant_bytes must be a positive number of bytes or None"):
        build(_model(), large_constant_bytes=bad)


def test_export_directory_moves(tmp_path):
    """The .S names its .bin without a path: an exported directory compiles wherever it is copied."""
    mod = _model()
    lib = build(partition_for("ccompiler", mod), executor="graph")
    lib.export(tmp_path / "a")
    shutil.move(str(tmp_path / "a"), str(tmp_path / "b"))
    assert (tmp_path / "b" / constmod.BIN_FILE).read_bytes() == lib.constant_files()[constmod.BIN_FILE]
    import subprocess

    obj = tmp_path / "c.o"
    subprocess.run(["gcc", "-c", f"-Wa,-I{tmp_path / 'b' / 'src'}", str(tmp_path / "b" / constmod.ASM_FILE),
                    "-o", str(obj)], check=True, cwd=tmp_path)
    assert obj.stat().st_size > lib.metadata["large_constants"]["bytes"]


def _bad_name_codegen(func, symbol):
    return CSourceArtifact(symbol, {f"{symbol}.c": "int x;\n"},
                           constants={"weights": np.zeros(1024, np.float32)})


def test_region_constant_names_must_start_with_the_symbol():
    pool = constmod.ConstantPool()
    from byoc_compiler.backend.region_codegen import pool_region_constants as _pool_region_constants

    with pytest.raises(ByocError, match="must start with the region's symbol"):
        _pool_region_constants(pool, "mynpu", _bad_name_codegen(None, "region_0"))


# ---- constants="params": the same bytes, loaded at init from constants.bin (TVM's params vs link-params) ----

PARAM_CASES = [("ccompiler", "graph", "packed"), ("ccompiler", "aot", "unpacked"), ("host", "aot", "packed"),
               ("examplejson", "graph", "unpacked")]


@pytest.mark.parametrize("target,executor,interface", PARAM_CASES, ids=["-".join(c) for c in PARAM_CASES])
def test_params_mode_runs_right_and_keeps_weights_out_of_the_binary(target, executor, interface):
    mod = _model()
    part = mod if target == "host" else partition_for(target, mod)
    lib = build(part, executor=executor, interface=interface, constants="params")
    files = lib.constant_files()
    assert set(files) == {constmod.ASM_FILE, constmod.PARAMS_FILE}
    assert ".incbin" not in files[constmod.ASM_FILE] and ".skip" in files[constmod.ASM_FILE]
    assert lib.metadata["large_constants"]["mode"] == "params"
    _check(lib, mod)                                  # the runner gets --constants
    m = lib.load()                                    # runtime.load(..., constants=...)
    m.set_input("x", X)
    m.run()
    np.testing.assert_allclose(m.get_output(0), testing.run_reference(mod, {"x": X})[0], rtol=1e-5, atol=1e-5)
    # The weights are not in the runner: it is smaller than them, and the bytes of the largest are not in
    # it (linked, they are). File sizes alone move with page padding.
    assert lib.runner().stat().st_size < lib.constants.total_bytes + 200_000
    weight = max((e.data for e in lib.constants.entries), key=len)
    linked = build(part, executor=executor, interface=interface)
    assert weight not in lib.runner().read_bytes() and weight in linked.runner().read_bytes()


def test_params_mode_on_s390x_big_endian():
    _toolchain_or_skip("s390x-gcc")
    mod = _model()
    lib = build(partition_for("ccompiler", mod), toolchain="s390x-gcc", executor="aot", constants="params")
    assert lib.metadata["large_constants"]["byte_order"] == "big"
    _check(lib, mod)


def test_params_mode_without_or_with_wrong_constants_is_one_clear_error(tmp_path):
    import subprocess

    lib = build(partition_for("ccompiler", _model()), executor="graph", constants="params")
    np.save(tmp_path / "x.npy", X)
    n = lib.constants.total_bytes
    runs = {
        "missing": [],
        "wrong": ["--constants", str(tmp_path / "zeros.bin")],
        "short": ["--constants", str(tmp_path / "short.bin")],
    }
    (tmp_path / "zeros.bin").write_bytes(bytes(n))
    (tmp_path / "short.bin").write_bytes(lib.constants.binary()[:-4])
    want = {"missing": f'built with constants="params": give it its constants.bin ({n} bytes) before init',
            "wrong": f"are not the constants.bin of this build ({n} bytes, checksum differs)",
            "short": f"the constants given ({n - 4} bytes) are not the constants.bin of this build"}
    for case, args in runs.items():
        proc = subprocess.run([str(lib.runner()), str(tmp_path / "x.npy"), "--out", str(tmp_path), *args],
                              capture_output=True, text=True)
        assert proc.returncode != 0 and want[case] in proc.stderr, (case, proc.stderr)
    from byoc_compiler import runtime

    with pytest.raises(Exception, match="give it its constants.bin"):
        runtime.load(lib.library())


def test_bad_constants_mode_is_one_clear_error():
    with pytest.raises(ByocError, match="constants must be one of 'linked', 'params'"):
        build(_model(), constants="embedded")


def test_params_mode_export_refers_model_text_to_constants_bin(tmp_path):
    """model.txt of a params build refers to constants.bin for the weights: no second copy of them (one row:
    the region links the IR's dense weights as they are)."""
    from byoc_compiler.load import load_model

    for toolchain in ("gcc", "s390x-gcc"):
        lib = build(partition_for("ccompiler", _model(rows=1)), toolchain=toolchain, executor="aot",
                    constants="params")
        out = lib.export(tmp_path / toolchain)
        assert not (out / "model.txt.bin").exists()
        assert '"file": "constants.bin"' in (out / "model.txt").read_text()
        assert load_model(str(out / "model.txt")).astext() == lib.model_text()     # bit-exact, both byte orders


def test_auto_mode_keeps_a_big_models_weights_beside_it(tmp_path, monkeypatch):
    """constants="auto": linked below AUTO_PARAMS_BYTES, params from it (here lowered to 1 KiB so a small
    model counts as big); the runner finds constants.bin beside itself, model.txt of SCons's "auto" is not
    another copy of the weights."""
    from byoc_compiler.backend import result as resmod
    from byoc_compiler.testing.reference import run_reference

    mod = partition_for("ccompiler", _model(rows=1))
    assert build(mod, constants="auto").metadata["large_constants"]["mode"] == "linked"
    monkeypatch.setattr(constmod, "AUTO_PARAMS_BYTES", 1024)
    monkeypatch.setattr(resmod, "AUTO_PARAMS_BYTES", 1024)
    lib = build(mod, constants="auto")
    assert lib.metadata["large_constants"]["mode"] == "params"
    files = lib.files("auto")      # ccompiler's dense weights are the IR's: model.txt refers to constants.bin
    assert "constants.bin" in files and "model.txt" in files and "model.txt.bin" not in files
    # the host's graph params travel as one blob in constants.bin: model.txt would need its own copy
    host = build(_model(), executor="graph", constants="auto")
    meta = json.loads(host.files("auto")["metadata.json"])
    assert "model.txt" not in host.files("auto") and "not written" in meta["model_text"]
    assert {"model.txt", "model.txt.bin"} <= set(host.files("sidecar"))
    out = lib.export(tmp_path / "out")
    runner = lib.export_runner(out / "runner")
    x = np.random.default_rng(0).standard_normal(lib.metadata["inputs"][0]["shape"]).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([str(runner), str(tmp_path / "x.npy"), "--out", str(tmp_path)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    want = run_reference(_model(rows=1), [x])[0]
    np.testing.assert_allclose(np.load(tmp_path / "out0.npy"), want, rtol=1e-4, atol=1e-4)


# ---- huge pages for the constants copied in at init (byoc_advise_huge_pages, docs/runtime-abi.md) ----------------
THP_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"


def _huge_kb_of_bss(library) -> int:
    """AnonHugePages of `library`'s .bss in this process: the anonymous mapping that starts where its last
    file-backed mapping ends."""
    entries, current = [], None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                start, end = (int(a, 16) for a in head[0].split("-"))
                current = {"start": start, "end": end, "path": head[5] if len(head) > 5 else "", "huge": 0}
                entries.append(current)
            elif head[0] == "AnonHugePages:":
                current["huge"] = int(head[1])
    path = str(library.resolve())
    last = max(i for i, e in enumerate(entries) if e["path"] == path)
    bss = [e for e in entries[last + 1:last + 2] if e["start"] == entries[last]["end"] and e["path"] == ""]
    assert bss, f"no anonymous mapping after {path}'s (its .bss) in /proc/self/smaps"
    return bss[0]["huge"]


def test_params_mode_constants_land_on_huge_pages_where_the_os_gives_them():
    """Where the kernel gives none on request (THP "never", or no THP), the advice changes nothing: the model still
    loads and runs right."""
    try:
        setting = open(THP_SETTING).read()
    except OSError:
        setting = ""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4096, 1024)).astype(np.float32)       # 16 MiB: at least six whole 2 MiB pages
    x = Var("x", TensorType((1, 1024), "float32"))
    lib = build(IRModule.from_expr(Function([x], op.nn.dense(x, const(w)))), executor="aot", constants="params")
    m = lib.load()
    value = rng.standard_normal((1, 1024)).astype(np.float32)
    m.set_input("x", value)
    m.run()
    np.testing.assert_allclose(m.get_output(0), value.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-4, atol=1e-3)
    if "[madvise]" in setting or "[always]" in setting:
        assert _huge_kb_of_bss(lib.library()) >= 6 * 2048
