"""The 13 bad inputs of issue #17 ("reliability, round two"): each ends in one clear ByocError that names
the input and the fix, or in correct behaviour. Numbers in the test ids are the issue's."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from byoc_compiler import op
from byoc_compiler import ctext
from byoc_compiler.backend.artifact import CSourceArtifact
from byoc_compiler.backend.build import build
from byoc_compiler.target import Target, register_target, unregister_target
from byoc_compiler.check import compare_outputs, default_tolerances
from byoc_compiler.errors import ByocError
from byoc_compiler.frontend import from_onnx
from byoc_compiler.ir import Call, Function, GlobalVar, IRModule, Var
from byoc_compiler.text import parse
from byoc_compiler.ir.types import TensorType
from byoc_compiler.transform import fold_constant, infer_type

ROOT = Path(__file__).resolve().parent.parent
SHAPE = (2, 4)


def _typed(text: str):
    return infer_type(parse(text))


# ---- 1, 2: sizes and integers past int64 are refused where parsed or typed -----------------------------

SIZE_CASES = [
    pytest.param("def @main(%x: Tensor[(1, 1), float32]) {\n"
                 "  nn.pad(%x, pad_width=[[0, 2147483647], [0, 2147483647]])\n}",
                 r"nn\.pad at .*its result is too large: a float32 tensor of shape \(2147483648, 2147483648\) "
                 r"would take 16 EiB", id="1-pad-output-16EiB"),
    pytest.param("def @main(%x: Tensor[(4294967296, 4294967296), float32]) {\n  nn.relu(%x)\n}",
                 r"tensor type: a float32 tensor of shape \(4294967296, 4294967296\) would take 64 EiB",
                 id="2-shape-product-past-int64"),
    pytest.param("def @main(%x: Tensor[(99999999999999999999,), float32]) {\n  nn.relu(%x)\n}",
                 r"dimension 99999999999999999999 does not fit in int64", id="2-dimension-past-int64"),
    pytest.param("def @main(%x: Tensor[(1, 1, 8, 8), float32]) {\n"
                 "  nn.max_pool2d(%x, pool_size=[2, 2], strides=[99999999999999999999, 1])\n}",
                 r"2:48: integer 99999999999999999999 does not fit in int64", id="2-attribute-past-int64"),
    pytest.param("def @main(%x: Tensor[(2,), int32]) {\n  add(%x, 5000000000)\n}",
                 r"integer 5000000000 does not fit in int32 .*add the suffix i64", id="2-int32-literal-overflow"),
]


@pytest.mark.parametrize("text, message", SIZE_CASES)
def test_size_and_integer_limits(text, message):
    with pytest.raises(ByocError, match=message):
        _typed(text)


def test_attribute_past_int64_from_python():
    x = Var("x", TensorType((1, 1, 8, 8), "float32"))
    with pytest.raises(ByocError, match=r"nn\.max_pool2d: attribute 'strides': 1180591620717411303424 does not "
                                        r"fit in int64"):
        op.nn.max_pool2d(x, pool_size=(2, 2), strides=(2 ** 70, 1))


def test_large_constant_results_stay_calls(monkeypatch):
    """Folding a constant whose result is past MAX_FOLD_BYTES would allocate it in the compiler: it stays a call."""
    import importlib

    fc = importlib.import_module("byoc_compiler.transform.fold_constant")  # the package binds the function

    mod = _typed("def @main(%x: Tensor[(4, 4), float32]) {\n"
                 "  add(%x, nn.pad(meta[relay.Constant][0], pad_width=[[0, 3], [0, 0]]))\n}\n"
                 '#[metadata]\n{"relay.Constant": [{"dtype": "float32", "shape": [1, 4], "data": '
                 '"AACAPwAAAEAAAEBAAACAQA=="}]}')
    monkeypatch.setattr(fc, "MAX_FOLD_BYTES", 63)  # the padded constant is 64 bytes
    assert "nn.pad" in str(fold_constant(mod))
    monkeypatch.setattr(fc, "MAX_FOLD_BYTES", 64)
    assert "nn.pad" not in str(fold_constant(mod))


# ---- 3, 7: a target cannot silently replace a built-in; `byoc config` gates -----------------------------

def test_register_target_refuses_a_builtin_name():
    with pytest.raises(ByocError, match=r"register_target\(Target\('ccompiler'\)\) clashes with the target "
                                        r"'ccompiler' that byoc_compiler \S+ declares \(module "
                                        r"byoc_compiler\.contrib\.ccompiler, flag USE_CODEGENC\); give the new "
                                        r"target another name"):
        register_target(Target("ccompiler"))


GOOD_TOOLCHAIN = '[toolchains.gcc]\ncc = "gcc"\narch = "x86_64"\n'

CONFIG_CASES = [
    pytest.param("[backends]\nUSE_CODEGENC = false\nUSE_EXAMPLEJSON = false\nUSE_DNNL = false\n",
                 r"no target is enabled; set one of USE_CODEGENC.* = true in \[backends\]", id="7-every-target-off"),
    pytest.param('[backends]\nUSE_NOPE = true\n[targets]\nnope = { module = "no_such_pkg.nope", flag = "USE_NOPE" }\n'
                 + GOOD_TOOLCHAIN,
                 r"target 'nope' is enabled \(USE_NOPE = true\) but cannot be loaded: module no_such_pkg\.nope not "
                 r"found; create the package no_such_pkg\.nope, or set USE_NOPE = false", id="7-missing-module"),
    pytest.param('[backends]\nUSE_CODEGENC = true\n[targets]\nccompiler = { module = "vendor.cc" }\n'
                 + GOOD_TOOLCHAIN,
                 r"\[targets\] ccompiler = \{ module = 'vendor\.cc' \} has the name of the built-in target "
                 r"'ccompiler' \(USE_CODEGENC\); rename the \[targets\] entry",
                 id="3-7-targets-entry-shadows-builtin"),
    pytest.param('[build]\ntoolchains = ["cc1"]\n' + GOOD_TOOLCHAIN,
                 r"build\.toolchains names 'cc1' \(did you mean 'gcc'\?\), which is not defined; defined "
                 r"toolchains: gcc, clang",
                 id="7-build-toolchain-undefined"),
]


@pytest.mark.parametrize("text, message", CONFIG_CASES)
def test_config_command_refuses(tmp_path, capsys, text, message):
    from byoc_compiler.__main__ import main

    (tmp_path / "config.toml").write_text(text)
    assert main(["config", str(tmp_path / "config.toml")]) == 2
    out, err = capsys.readouterr()
    assert "ok" not in out
    assert err.count("\n") == 1 and err.startswith("byoc config: error: ")
    assert __import__("re").search(message, err), err


def test_config_command_accepts_the_repository_config(capsys):
    from byoc_compiler.__main__ import main

    assert main(["config", str(ROOT / "config.toml")]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("config.toml: ok")


# ---- 13: `byoc targets` fails when a target package fails to import ----------------------------------

def _byoc(args, env=None, **kw):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **(env or {})}
    return subprocess.run([sys.executable, "-m", "byoc_compiler", *args], env=env, capture_output=True, text=True,
                          timeout=120, **kw)


def test_targets_command_fails_on_a_broken_target(tmp_path):
    (tmp_path / "broken_target.py").write_text("raise RuntimeError('vendor SDK not found')\n")
    (tmp_path / "config.toml").write_text(
        (ROOT / "config.toml").read_text().replace(
            "[targets]", '[targets]\nbroken = { module = "broken_target", flag = "USE_BROKEN" }', 1))
    proc = _byoc(["targets"], env={"BYOC_CONFIG": str(tmp_path / "config.toml"),
                                   "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed to load: broken: importing broken_target failed: RuntimeError: vendor SDK not found" in proc.stderr


def test_targets_command_passes_on_the_repository_config():
    proc = _byoc(["targets"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("target ")


# ---- 9: a closed pipe ends the CLI quietly, like a Unix tool ----------------------------------------

@pytest.mark.parametrize("command", ["ops", "config", "targets"])
def test_cli_into_a_closed_pipe(command):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "byoc_compiler", command], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # no reader before the first write: the write fails with EPIPE every time
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""


# ---- 4: ONNX --shape sets dynamic dimensions only -----------------------------------------------------

def _onnx_relu(dims) -> bytes:
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, dims)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def test_onnx_shape_cannot_change_a_static_dimension():
    with pytest.raises(ByocError, match=r"shape=\{'x': \(3, 5\)\} sets dimension 1 to 5, but the model declares it "
                                        r"static \(4\) in 'x': \['N', 4\]; only dynamic dimensions can be set"):
        from_onnx(_onnx_relu(["N", 4]), shape={"x": (3, 5)})


def test_onnx_shape_sets_the_dynamic_dimension():
    mod = from_onnx(_onnx_relu(["N", 4]), shape={"x": (3, 4)})
    assert mod["main"].params[0].type_annotation == TensorType((3, 4), "float32")


def test_onnx_unknown_element_type_is_named():
    x = helper.make_tensor_value_info("x", 33, [2])  # no ONNX version defines element type 33
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ByocError, match="input 'x' has element type element type 33 .unknown to ONNX"):
        from_onnx(model.SerializeToString())


# ---- 5, 8: the loaded module -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def guide_library(tmp_path_factory):
    from byoc_compiler import zoo

    return build(zoo.get("byoc_guide"), toolchain="gcc").export_library(tmp_path_factory.mktemp("lib") / "m.so")


def test_get_output_before_run(guide_library):
    from byoc_compiler import runtime, zoo

    m = runtime.load(guide_library)
    with pytest.raises(ByocError, match=r"get_output\(0\) before run\(\); set the inputs and call run\(\) first"):
        m.get_output(0)
    for name, value in zoo.inputs("byoc_guide").items():
        m.set_input(name, value)
    m.run()
    assert m.get_output(0).shape == (10, 10)


def _fake_elf(path: Path, machine: int, big_endian: bool = False, kind: int = 3) -> Path:
    order = "big" if big_endian else "little"
    head = b"\x7fELF" + bytes([2, 2 if big_endian else 1, 1]) + bytes(9)
    head += kind.to_bytes(2, order) + machine.to_bytes(2, order)
    path.write_bytes(head + bytes(64))
    return path


LOAD_CASES = [
    pytest.param(lambda d: d, r"is a directory; load the \.so file that lib\.export_library\(path\) wrote",
                 id="8-directory"),
    pytest.param(lambda d: _fake_elf(d / "m.so", 183), r"it is an ELF file for aarch64, and this Python runs on "
                 r"x86_64; a model built with a cross toolchain runs through its runner: lib\.export_runner\(dir\)",
                 id="8-aarch64-library"),
    pytest.param(lambda d: _fake_elf(d / "m.so", 22, big_endian=True), r"ELF file for s390x", id="8-s390x-library"),
    pytest.param(lambda d: _fake_elf(d / "runner", 62, kind=2), r"an ELF executable, not a shared library",
                 id="8-runner-executable"),
    pytest.param(lambda d: (d / "model.txt").write_text("def @main") and d / "model.txt",
                 r"not a shared library \(no ELF header\)", id="8-text-file"),
    pytest.param(lambda d: d / "missing.so", r"does not exist; check the path", id="8-missing"),
]


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the fake libraries are foreign to an x86_64 host")
@pytest.mark.parametrize("make, message", LOAD_CASES)
def test_load_says_what_the_file_is(tmp_path, make, message):
    from byoc_compiler import runtime

    with pytest.raises(ByocError, match=message):
        runtime.load(make(tmp_path))


# ---- 10, 12: compile and link errors of generated code -----------------------------------------------

def _one_region_module(target: str) -> IRModule:
    x = Var("x", TensorType(SHAPE, "float32"))
    r = Var("r0", TensorType(SHAPE, "float32"))
    region = Function([r], op.nn.relu(r), attrs={"Compiler": target, "global_symbol": f"{target}_0",
                                                 "Primitive": 1, "Inline": 1})
    return IRModule({"main": Function([x], Call(GlobalVar(f"{target}_0"), [x])), f"{target}_0": region})


def _codegen(body: str):
    t = TensorType(SHAPE, "float32")

    def codegen(func, symbol):
        code = textwrap.dedent(f"""\
            #include <stdint.h>
            static int32_t {symbol}_(const float* in0, float* out0) {{
              {body}
              return 0;
            }}
            """) + ctext.entry_points(symbol, f"{symbol}_", [t], [t])
        return CSourceArtifact(symbol, {f"{symbol}.c": code})
    return codegen


@pytest.fixture
def fake_target():
    made = []

    def make(name, codegen):
        t = Target(name)
        t.codegen = codegen
        made.append(register_target(t))
        return t
    yield make
    for t in made:
        unregister_target(t.name)


def test_compile_error_keeps_the_generated_sources(fake_target, tmp_path):
    fake_target("fkbroken", _codegen("int i; for (i = 0; i < 8; ++i) out0[i] = in0[i] +;"))
    lib = build(_one_region_module("fkbroken"), toolchain="gcc")
    with pytest.raises(ByocError) as info:
        lib.export_library(tmp_path / "m.so")
    message = str(info.value)
    kept = Path(message.rsplit("the generated sources are kept in ", 1)[1].split(" ")[0])
    try:
        source, = kept.rglob("fkbroken_0.c")
        # the compiler's own file:line references point at the kept copy, which still exists
        assert f"{source}:3:" in message and "in0[i] +;" in source.read_text()
        assert not (tmp_path / "m.so").exists()
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_codegen_without_the_region_symbol(fake_target):
    fake_target("fknosym", lambda func, symbol: CSourceArtifact(symbol, {"x.c": "int unrelated(void) { return 0; }\n"}))
    with pytest.raises(ByocError, match=r"codegen of target 'fknosym' returned C for region fknosym_0 that never "
                                        r"mentions fknosym_0; its sources \(x\.c\) must define the region's entry "
                                        r"point fknosym_0"):
        build(_one_region_module("fknosym"), toolchain="gcc")


def test_link_error_names_the_region(fake_target, tmp_path):
    """The symbol is mentioned (declared) but never defined: the linker's undefined reference is named."""
    declared_only = ("#include <stdint.h>\n#include <byoc/runtime.h>\n"
                     "int32_t fkundef_0(const ByocValue* a, const int32_t* c, int32_t n, void* r);\n"
                     "int32_t fkundef_0_unpacked(const float* in0, float* out0);\n")
    fake_target("fkundef", lambda func, symbol: CSourceArtifact(symbol, {f"{symbol}.c": declared_only}))
    lib = build(_one_region_module("fkundef"), toolchain="gcc")
    with pytest.raises(ByocError, match=r"linking failed: region fkundef_0 \(target 'fkundef'\) is not defined by "
                                        r"the C its codegen returned"):
        lib.export_runner(tmp_path / "runner")


def test_toolchain_without_libm_still_links(tmp_path):
    """libm is linked whatever the toolchain's ldflags say: the kernels call expf (softmax, tanh)."""
    (tmp_path / "config.toml").write_text(
        (ROOT / "config.toml").read_text() + '\n[toolchains.gcc-nolm]\ncc = "gcc"\narch = "x86_64"\n'
        'cflags = ["-std=c99", "-fPIC"]\n')
    mod = _typed("def @main(%x: Tensor[(2, 4), float32]) {\n  nn.softmax(tanh(%x))\n}")
    lib = build(mod, toolchain="gcc-nolm", config=str(tmp_path / "config.toml"))
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(SHAPE)
    # the runner, not a library: a shared library's libm references resolve against the Python process
    got, = lib.run_runner([x])
    e = np.exp(np.tanh(x.astype(np.float64)))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


# ---- 6: two models with one file stem -----------------------------------------------------------------

def test_scons_models_with_the_same_stem(tmp_path):
    text = "def @main(%x: Tensor[(2,), float32]) {\n  nn.relu(%x)\n}\n"
    for d in ("d1", "d2"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "net.txt").write_text(text)
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", "-C", str(ROOT), "target=ccompiler",
                           f"model={tmp_path}/d1/net.txt,{tmp_path}/d2/net.txt", "toolchain=gcc",
                           f"build_root={tmp_path}/build"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (f"scons: byoc: model={tmp_path}/d1/net.txt and model={tmp_path}/d2/net.txt would both build into "
            f"{tmp_path}/build/ccompiler/gcc/net/") in proc.stderr
    assert "Multiple ways to build" not in proc.stderr


# ---- 11: NaN in the check table ----------------------------------------------------------------------

NAN_CASES = [
    pytest.param([np.nan, 1.0], [1.0, 1.0], False, np.inf, id="11-nan-against-a-number"),
    pytest.param([np.nan, 1.0], [np.nan, 1.0], True, 0.0, id="11-nan-where-the-reference-has-nan"),
    pytest.param([np.inf, 1.0], [np.inf, 1.0], True, 0.0, id="11-matching-infinities"),
    pytest.param([1.0, np.inf], [1.0, 2.0], False, np.inf, id="11-inf-against-a-number"),
]


@pytest.mark.parametrize("got, want, passed, max_abs", NAN_CASES)
def test_check_table_with_nan(got, want, passed, max_abs):
    ok, abs_err, _, detail = compare_outputs([np.array(got, np.float32)], [np.array(want, np.float32)],
                                             default_tolerances)
    assert (ok, abs_err) == (passed, max_abs)
    assert bool(detail) == (not passed)
