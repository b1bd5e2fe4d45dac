"""Bare metal: models built for the freestanding toolchains (cortex-m55, cortex-m3) run under qemu-system-arm
and agree with the numpy reference; the firmware interface (<mod>.h, <mod>_run) rejects bad input with an
error code and a message, hosted under ASan/UBSan too; a hung or faulting image ends with a message naming
the model and the lane (docs/bare-metal.md)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import byoc_compiler as byoc
from byoc_compiler import toolchain as tcmod, zoo
from byoc_compiler.check import deterministic_inputs
from byoc_compiler.config import ConfigError, load_config
from byoc_compiler.errors import ByocError
from byoc_compiler.linker_script import linker_script
from byoc_compiler.runtime.sources import baremetal_dir, dlpack_include_dir, include_dir
from byoc_compiler.testing.error_bound import reference_with_errors
from byoc_compiler.testing.tolerance import compare_with_bounds

LANES = ("cortex-m55", "cortex-m3")

# Through the Python API (BuildResult.run_runner), float32 against the float64 reference's tolerance (libm
# differs between glibc and picolibc). The default run has one model per target on each lane through scons
# in the matrix (tests/matrix, -m baremetal) and small_cnn in the export's example; these and the int8 models
# below wait for `-m baremetal` (small_cnn's conv2d pulls most of the kernel library).
CASES = [pytest.param("cortex-m55", "ccompiler", "byoc_guide", marks=pytest.mark.baremetal),
         pytest.param("cortex-m3", "host", "mlp", marks=pytest.mark.baremetal),
         pytest.param("cortex-m55", "ccompiler", "small_cnn", marks=pytest.mark.baremetal),
         pytest.param("cortex-m3", "ccompiler", "residual_block", marks=pytest.mark.baremetal)]


def _case_id(case) -> str:
    lane, target, model = case.values if hasattr(case, "values") else case
    return f"{model}-{target}-{lane}"


def _build(model: str, target: str, toolchain: str, **kw):
    mod = zoo.get(model)
    part = mod if target == "host" else byoc.partition_for(target, mod)
    return mod, byoc.build(part, toolchain=toolchain, executor="aot", interface="unpacked", **kw)


@pytest.mark.parametrize("lane,target,model", CASES, ids=[_case_id(c) for c in CASES])
def test_model_runs_on_the_board(lane, target, model):
    mod, lib = _build(model, target, lane)
    inputs = deterministic_inputs(mod)
    got = lib.run_runner(inputs, werror=True)
    result = compare_with_bounds(got, reference_with_errors(mod, inputs))
    assert result.passed, result.detail
    assert lib.last_run_ms is None      # an emulator's wall time is never reported as the device's


def test_board_alignment_plans_the_arena():
    """The planner's alignment is the board's (16 on M-profile), the hosts' 64 elsewhere; the header says so."""
    _, m55 = _build("residual_block", "host", "cortex-m55")
    _, gcc = _build("residual_block", "host", "gcc")
    header = m55.firmware_files()["include/default.h"]
    assert "#define DEFAULT_WORKSPACE_ALIGNMENT 16u" in header
    assert "#define DEFAULT_WORKSPACE_ALIGNMENT 64u" in gcc.firmware_files()["include/default.h"]
    assert m55.workspace_bytes % 16 == 0 and m55.workspace_bytes <= gcc.workspace_bytes


REFUSED = [
    ("graph executor", dict(executor="graph", interface="unpacked"), "executor 'graph'"),
    ("packed interface", dict(executor="aot", interface="packed"), "interface 'packed'"),
    ("constants at init", dict(executor="aot", interface="unpacked", constants="params"), "constants 'params'"),
]


@pytest.mark.parametrize("what,kw,says", REFUSED, ids=[r[0] for r in REFUSED])
def test_freestanding_lane_refuses_hosted_forms(what, kw, says):
    with pytest.raises(ByocError, match=f"freestanding.*{says}"):
        byoc.build(zoo.get("mlp"), toolchain="cortex-m55", **kw)


# (a hosted-only target on a bare-metal toolchain: tests/test_target_profiles.py)
BAD_BOARDS = [
    ("unknown board", {"board": "mps9"}, "names 'mps9'"),
    ("alignment not a power of two", {"alignment": 24}, "power of two"),
    ("region named nowhere", {"data": "flash"}, "names no region"),
]


@pytest.mark.parametrize("what,change,says", BAD_BOARDS, ids=[b[0] for b in BAD_BOARDS])
def test_bad_board_config_is_one_message(tmp_path, what, change, says):
    board = {"board": '"b"', "alignment": "16", "data": '"ram"'}
    board.update({k: (v if v is None or k == "alignment" else f'"{v}"') for k, v in change.items()})
    lines = ['[toolchains.m]', 'cc = "arm-none-eabi-gcc"', 'arch = "cortex-m3"', 'profile = "freestanding"']
    if board["board"] is not None:
        lines.append(f"board = {board['board']}")
    lines += ['[boards.b]', f"alignment = {board['alignment']}",
              'regions = [{ name = "ram", origin = 0x20000000, length = 0x10000 }]',
              'code = "ram"', 'rodata = "ram"', f"data = {board['data']}", 'stack = "ram"', 'stack_size = 0x1000']
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=says):
        load_config(path)


# ---- int8 models: bit for bit the hosted gcc build -----------------------------------------------------------

# MLPerf Tiny's shapes (zoo/tiny: ONNX QDQ, per-channel int8 weights) and quantized MobileNetV2-tiny: through
# ccompiler's portable int8 kernels on cortex-m55, host-only on cortex-m3 (soft float), each equal on every
# bit to the same partition built by gcc and run on this machine. They wait for `-m baremetal`: the default
# run's bare-metal models are the matrix's board lanes (one small model per target and lane).
INT8_CASES = [
    pytest.param(model, target, lane, marks=pytest.mark.baremetal)
    for model, target, lane in (("ds_cnn_int8", "host", "cortex-m3"), ("ds_cnn_int8", "ccompiler", "cortex-m55"),
                                ("resnet8_int8", "ccompiler", "cortex-m55"),
                                ("mobilenet_v1_025_int8", "ccompiler", "cortex-m55"),
                                ("fc_autoencoder_int8", "ccompiler", "cortex-m55"),
                                ("mobilenetv2_tiny_int8", "ccompiler", "cortex-m55"),
                                ("fc_autoencoder_int8", "host", "cortex-m3"), ("resnet8_int8", "host", "cortex-m3"),
                                ("mobilenet_v1_025_int8", "host", "cortex-m3"),
                                ("mobilenetv2_tiny_int8", "host", "cortex-m3"))]


@pytest.mark.baremetal
def test_int8_model_through_ccompiler_on_the_board_matches_the_reference():
    mod = zoo.get("fc_autoencoder_int8")
    inputs = deterministic_inputs(mod)
    lib = byoc.build(byoc.partition_for("ccompiler", mod), toolchain="cortex-m55", executor="aot",
                     interface="unpacked")
    assert set(lib.metadata["targets"]) == {"ccompiler"}
    result = compare_with_bounds(lib.run_runner(inputs), reference_with_errors(mod, inputs))
    assert result.passed and result.margin == 0, result.detail


def _int8_model(name: str):
    if name == "mobilenetv2_tiny_int8":     # onnxruntime's quantize_static of the zoo model (cached by content)
        from byoc_compiler.load import load_model
        from byoc_compiler.testing.quantize import quantized_zoo_model

        return load_model(str(quantized_zoo_model("mobilenetv2_tiny", "qdq", per_channel=True)))
    return zoo.get(name)


@pytest.mark.parametrize("model,target,lane", INT8_CASES, ids=[_case_id(c) for c in INT8_CASES])
def test_int8_model_on_the_board_equals_the_hosted_build(model, target, lane):
    mod = _int8_model(model)
    part = mod if target == "host" else byoc.partition_for(target, mod)
    inputs = deterministic_inputs(mod)
    board = byoc.build(part, toolchain=lane, executor="aot", interface="unpacked").run_runner(inputs)
    hosted = byoc.build(part, toolchain="gcc", executor="aot", interface="unpacked").run_runner(inputs)
    assert len(board) == len(hosted)
    for got, want in zip(board, hosted):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


# ---- bad input to <mod>_run: error codes and messages, never a fault ------------------------------------

DRIVER = r"""
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include "default.h"

static _Alignas(64) uint8_t pool[DEFAULT_WORKSPACE_SIZE + 64];
static float in0[DEFAULT_INPUT_X_SIZE / sizeof(float)], out0[DEFAULT_OUTPUT_OUTPUT0_SIZE / sizeof(float)];

static int expect(const char* what, int32_t got, int32_t want, const char* says) {
  const char* msg = byoc_get_last_error();
  if (got != want || strstr(msg, says) == NULL) {
    printf("FAIL %s: code %d (want %d), message '%s' (want '%s')\n", what, (int)got, (int)want, msg, says);
    return 1;
  }
  return 0;
}

int main(void) {
  struct default_inputs in = {in0};
  struct default_outputs out = {out0};
  struct default_workspace_pools pools = {pool, sizeof(pool)};
  struct default_inputs null_in = {NULL};
  struct default_outputs null_out = {NULL};
  struct default_workspace_pools null_pool = {NULL, sizeof(pool)};
  struct default_workspace_pools misaligned = {pool + 4, sizeof(pool) - 4};
  struct default_workspace_pools short_pool = {pool, DEFAULT_WORKSPACE_SIZE - 1};
  int bad = 0;
  bad += expect("NULL inputs struct", default_run(NULL, &out, &pools), BYOC_ERROR_NULL, "inputs, outputs");
  bad += expect("NULL pools struct", default_run(&in, &out, NULL), BYOC_ERROR_NULL, "workspace_pools is NULL");
  bad += expect("NULL input member", default_run(&null_in, &out, &pools), BYOC_ERROR_NULL, "input x is NULL");
  bad += expect("NULL output member", default_run(&in, &null_out, &pools), BYOC_ERROR_NULL, "output output0 is NULL");
  bad += expect("NULL pool", default_run(&in, &out, &null_pool), BYOC_ERROR_NULL, "pool workspace is NULL");
  bad += expect("misaligned pool", default_run(&in, &out, &misaligned), BYOC_ERROR_ALIGNMENT, "not aligned");
  bad += expect("short pool", default_run(&in, &out, &short_pool), BYOC_ERROR_POOL_SIZE, "smaller than");
  bad += expect("good call", default_run(&in, &out, &pools), BYOC_OK, "");
  if (bad == 0) printf("all checked\n");
  return bad;
}
"""


def _run_driver(lib, tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    """The build's objects linked with a C11 driver calling <mod>_run, run on this machine."""
    tc = lib.toolchain
    objs = []
    for src, incs, defines in lib.compile_units(tmp_path / "gen"):
        obj = tmp_path / "obj" / f"{len(objs)}_{Path(src).stem}.o"
        obj.parent.mkdir(parents=True, exist_ok=True)
        tcmod.run_command(tcmod.compile_argv(tc, src, obj, incs, defines, "-O1", tcmod.WARNING_FLAGS,
                                             [dlpack_include_dir()]), f"compiling {src}")
        objs.append(obj)
    driver = tmp_path / "driver.c"
    driver.write_text(source)
    exe = tmp_path / "driver"
    tcmod.run_command([tc.cc, "-std=c11", *tc.cflags[1:], *tcmod.WARNING_FLAGS, f"-I{include_dir()}",
                       f"-I{tmp_path / 'gen' / 'include'}", str(driver), *map(str, objs), "-o", str(exe),
                       *tc.ldflags], "linking the driver")
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)


def test_bad_input_is_an_error_code_hosted_under_sanitizers(tmp_path):
    """The firmware entry of a hosted build (gcc with ASan+UBSan) takes every bad argument without a fault."""
    _, lib = _build("mlp", "host", "gcc-asan-ubsan")
    proc = _run_driver(lib, tmp_path, DRIVER)
    assert proc.returncode == 0 and "all checked" in proc.stdout, proc.stdout + proc.stderr


# A board with two workspace pools (a small fast one first) on the hosted gcc with ASan+UBSan: the header has
# a member and macros per pool, each pool is checked, and the model's outputs are the reference's.
SPLIT_BOARD = """
[toolchains.gcc-split]
cc = "gcc"
arch = "x86_64"
cflags = ["-std=c99", "-fPIC", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
ldflags = ["-fsanitize=address,undefined", "-lm"]
board = "split"

[boards.split]
alignment = 16
[[boards.split.pools]]
name = "dtcm"
size = 256
kinds = ["workspace"]
[[boards.split.pools]]
name = "sram"
size = 1048576
kinds = ["workspace", "io", "constants"]
"""

SPLIT_DRIVER = DRIVER.split("static _Alignas", 1)[0] + r"""
static _Alignas(64) uint8_t dtcm[DEFAULT_DTCM_SIZE + 64], sram[DEFAULT_SRAM_SIZE + 64];
static float in0[DEFAULT_INPUT_X_SIZE / sizeof(float)], out0[DEFAULT_OUTPUT_OUTPUT0_SIZE / sizeof(float)];
""" + "static int expect" + DRIVER.split("static int expect", 1)[1].split("int main(void)", 1)[0] + r"""
int main(void) {
  struct default_inputs in = {in0};
  struct default_outputs out = {out0};
  struct default_workspace_pools pools = {dtcm, sizeof(dtcm), sram, sizeof(sram)};
  struct default_workspace_pools bad;
  size_t i;
  int bad_calls = 0;
  bad = pools; bad.dtcm = NULL;
  bad_calls += expect("NULL dtcm", default_run(&in, &out, &bad), BYOC_ERROR_NULL, "pool dtcm is NULL");
  bad = pools; bad.sram = NULL;
  bad_calls += expect("NULL sram", default_run(&in, &out, &bad), BYOC_ERROR_NULL, "pool sram is NULL");
  bad = pools; bad.dtcm = dtcm + 4;
  bad_calls += expect("misaligned dtcm", default_run(&in, &out, &bad), BYOC_ERROR_ALIGNMENT, "dtcm is not aligned");
  bad = pools; bad.sram = sram + 8;
  bad_calls += expect("misaligned sram", default_run(&in, &out, &bad), BYOC_ERROR_ALIGNMENT, "sram is not aligned");
  bad = pools; bad.dtcm_size = DEFAULT_DTCM_SIZE - 1;
  bad_calls += expect("short dtcm", default_run(&in, &out, &bad), BYOC_ERROR_POOL_SIZE, "dtcm is smaller than");
  bad = pools; bad.sram_size = DEFAULT_SRAM_SIZE - 1;
  bad_calls += expect("short sram", default_run(&in, &out, &bad), BYOC_ERROR_POOL_SIZE, "sram is smaller than");
  for (i = 0; i < sizeof(in0) / sizeof(in0[0]); ++i) in0[i] = (float)((int)(i % 13u) - 6) / 4.0f;
  bad_calls += expect("good call", default_run(&in, &out, &pools), BYOC_OK, "");
  for (i = 0; i < sizeof(out0) / sizeof(out0[0]); ++i) printf("%.9g\n", (double)out0[i]);
  return bad_calls;
}
"""


def test_several_workspace_pools_are_members_of_the_header_each_checked(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text(SPLIT_BOARD)
    mod = zoo.get("mlp")
    lib = byoc.build(mod, toolchain="gcc-split", executor="aot", interface="unpacked", constants="linked", config=cfg)
    rows = {r["name"]: r["workspace_bytes"] for r in lib.metadata["pools"]}
    assert 0 < rows["dtcm"] <= 256 and rows["sram"] > 0       # mlp's 256-byte values need both
    header = lib.firmware_files()["include/default.h"]
    for pool in ("dtcm", "sram"):
        assert f"#define DEFAULT_{pool.upper()}_SIZE {rows[pool]}u" in header
        assert f"void* {pool};" in header and f"size_t {pool}_size;" in header
    proc = _run_driver(lib, tmp_path, SPLIT_DRIVER)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = np.array([float(v) for v in proc.stdout.split()], np.float32).reshape(1, 10)
    x = (((np.arange(32) % 13) - 6) / 4).astype(np.float32).reshape(1, 32)
    result = compare_with_bounds([got], reference_with_errors(mod, {"x": x}))
    assert result.passed, result.detail


# ---- images that hang, fault or fail ----------------------------------------------------------------------

def test_hung_image_ends_at_the_timeout_naming_model_and_lane():
    _, lib = _build("mlp", "host", "cortex-m3")
    with pytest.raises(ByocError, match=r"model 'default' with toolchain 'cortex-m3': timed out after 0.01 s"):
        lib.run_runner(deterministic_inputs(zoo.get("mlp")), timeout=0.01)


def test_wrong_input_is_the_images_message_and_exit_status():
    mod, lib = _build("mlp", "host", "cortex-m55")
    wrong = {k: v.astype(np.float64) for k, v in deterministic_inputs(mod).items()}
    with pytest.raises(ByocError, match=r"(?s)model 'default' with toolchain 'cortex-m55' failed \(exit code 1\)"
                                        r".*in0.npy: not a .npy file of this input's dtype and shape"):
        lib.run_runner(wrong)


def test_an_image_named_by_a_relative_path_runs(tmp_path, monkeypatch):
    """SCons's check names the image relative to the project's top; the image starts in a scratch directory."""
    from byoc_compiler.check import check_runner

    mod, lib = _build("mlp", "host", "cortex-m55")
    image = lib.runner()
    monkeypatch.chdir(image.parent)
    result = check_runner(Path(image.name), list(load_config().toolchain("cortex-m55").run), "mlp", mod,
                          toolchain="cortex-m55", executor="aot", interface="unpacked", target="host")
    assert result.passed, result


def test_missing_c_library_names_the_packages():
    import dataclasses

    tc = load_config().toolchain("cortex-m55")
    missing = dataclasses.replace(tc, cflags=(*tc.cflags, "--specs=no-such-libc.specs"))
    with pytest.raises(ByocError, match=r"has no no-such-libc.specs .*apt-get install -y gcc-arm-none-eabi "
                                        r"picolibc-arm-none-eabi qemu-system-arm"):
        tcmod.check_toolchain(missing)


def test_compare_reads_every_step_from_the_board():
    """compare on a board: the compare image writes each step's outputs over semihosting, and every one is
    within the reference's tolerance (compare's own check, one row per step of the build)."""
    from byoc_compiler.debug.compare import compare_build

    mod, lib = _build("mlp", "host", "cortex-m3")
    report = compare_build(lib, mod, deterministic_inputs(mod), diagnose=False)
    assert report.passed and len(report.rows) == len(lib.program.steps), report.summary()


def test_a_step_dump_of_another_build_is_refused():
    from byoc_compiler.debug.board_dump import split_dump

    _, lib = _build("mlp", "host", "cortex-m3")
    need = sum(lib.program.tensors[t].nbytes for s in lib.program.steps for t in s.outputs)
    assert len(split_dump(lib.program, bytes(need))) == len(lib.program.steps)
    for wrong, says in ((need - 4, "ends at byte"), (need + 4, "4 bytes beyond")):
        with pytest.raises(ByocError, match=says):
            split_dump(lib.program, bytes(wrong))


FAULT_MAIN = """
#include <stdint.h>
int main(void) { return (int)*(volatile uint32_t*)0xFFFFFFF0u; }  /* no memory there: a bus fault */
"""


@pytest.mark.parametrize("lane", LANES)
def test_faulting_image_reports_the_fault(tmp_path, lane):
    """The startup code's fault handler ends the run over semihosting with status 70 and says so."""
    config = load_config()
    tc = config.toolchain(lane)
    (tmp_path / "main.c").write_text(FAULT_MAIN)
    (tmp_path / "link.ld").write_text(linker_script(config.board_of(tc)))
    objs = []
    for src in (tmp_path / "main.c", baremetal_dir() / "startup.c", baremetal_dir() / "semihost.c"):
        objs.append(tmp_path / f"{src.stem}.o")
        tcmod.run_command(tcmod.compile_argv(tc, src, objs[-1], [include_dir()], (), "-Os", tcmod.WARNING_FLAGS),
                          f"compiling {src.name}")
    exe = tmp_path / "fault.elf"
    tcmod.run_command(tcmod.link_exe_argv(tc, objs, exe, linker_script=tmp_path / "link.ld"), "linking the image")
    proc = subprocess.run(tcmod.run_argv(tc, exe), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 70, proc.stdout + proc.stderr
    assert "the image faulted" in proc.stderr     # qemu writes semihosting console text to stderr


# ---- the firmware-ready export -----------------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[1] / "docs" / "bare-metal.md"
FORBIDDEN = ("malloc", "calloc", "realloc", "free", "aligned_alloc", "printf", "fprintf", "puts", "fopen", "abort",
             "__assert_func")
RUNTIME_CORE_TEXT_LIMIT = 4096      # bytes of .text of the runtime core on cortex-m55 at -Os (the bound)


def _doc_block(language: str, starts: str) -> str:
    import re

    for block in re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S):
        if block.startswith(starts):
            return block
    raise AssertionError(f"docs/bare-metal.md has no ```{language} block starting with {starts!r}")


def _undefined(nm: str, obj: Path) -> set[str]:
    out = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_exported_model_builds_with_the_docs_makefile_and_runs(tmp_path):
    """docs/bare-metal.md's Makefile and main.c, with nothing of byoc but the export, build for cortex-m55 and
    print the model's outputs under qemu; the export's objects call no allocator, stdio, abort or threads."""
    import tarfile

    mod, lib = _build("small_cnn", "ccompiler", "cortex-m55")
    tar = lib.export_model_library_format(tmp_path / "model.tar")
    with tarfile.open(tar) as t:
        t.extractall(tmp_path / "model")
    (tmp_path / "Makefile").write_text(_doc_block("make", "# Builds main.c"))
    (tmp_path / "main.c").write_text(_doc_block("c", "/* main.c"))
    subprocess.run(["make", "-s", "-j2", "-C", str(tmp_path), "model.elf"], check=True, capture_output=True, text=True)
    nm = load_config().toolchain("cortex-m55").cc.replace("gcc", "nm")
    objects = [o for o in (tmp_path / "model").rglob("*.o")]
    assert {o.name for o in objects} >= {"host.o", "core.o", "byoc_constants.o"}
    for obj in objects:
        bad = {s for s in _undefined(nm, obj) if s in FORBIDDEN or s.startswith("pthread_")}
        assert not bad, f"{obj.relative_to(tmp_path)} calls {sorted(bad)}"
    core = sorted((tmp_path / "model" / "runtime" / "src").glob("*.o"))     # core.o, parallel.o
    sizes = subprocess.run([nm.replace("nm", "size"), *map(str, core)], capture_output=True, text=True,
                           check=True).stdout.splitlines()[1:]
    assert len(core) == 2 and sum(int(line.split()[0]) for line in sizes) <= RUNTIME_CORE_TEXT_LIMIT
    proc = subprocess.run(["make", "-s", "-C", str(tmp_path), "run"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # qemu writes the semihosting console (the image's printf) to its stderr
    got = np.array([float(v) for v in (proc.stdout + proc.stderr).split()], np.float32).reshape(1, 10)
    x = ((np.arange(3 * 16 * 16) % 17).astype(np.int64) - 8).astype(np.float32) / np.float32(8)
    inputs = {"data": x.reshape(1, 3, 16, 16)}
    result = compare_with_bounds([got], reference_with_errors(mod, inputs))
    assert result.passed, result.detail


def test_export_needs_the_firmware_form(tmp_path):
    lib = byoc.build(zoo.get("mlp"), toolchain="gcc", executor="graph", interface="packed")
    with pytest.raises(ByocError, match="only AOT \\+ unpacked builds"):
        lib.export_model_library_format(tmp_path / "model.tar")
