"""End-to-end tests of the SCons integration, in a temporary copy of a project.

The project has the repository's SConstruct (one line: byoc's SCons build is in the package), its own config.toml,
a model file, and a small target of its own (`mini`, two elementwise ops) so
that the test can edit a target's codegen and count what SCons rebuilds.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import toy_target

ROOT = Path(__file__).resolve().parent.parent

MODEL = """\
def @main(%a: Tensor[(4, 5), float32], %b: Tensor[(4, 5), float32]) {
  %0 = add(%a, %b);
  %1 = nn.relu(%0);
  multiply(%1, %b)
}
"""

CONFIG = """\
[backends]
USE_CODEGENC = true
USE_EXAMPLEJSON = false
USE_MINI = {mini}

[targets]
mini = {{ module = "mini_target", flag = "USE_MINI" }}

[build]
toolchains = ["gcc"]
executor = "graph"
interface = "packed"
models = ["model.txt"]

[toolchains.gcc]
cc = "gcc"
arch = "x86_64"
cflags = ["-std=c99", "-fPIC"]
ldflags = ["-lm"]

[toolchains.clang]
cc = "clang"
arch = "x86_64"
cflags = ["-std=c99", "-fPIC"]
ldflags = ["-lm"]
"""


def make_project(path: Path, mini_enabled: bool = True) -> Path:
    shutil.copy(ROOT / "SConstruct", path / "SConstruct")
    (path / "config.toml").write_text(CONFIG.format(mini="true" if mini_enabled else "false"))
    (path / "model.txt").write_text(MODEL)
    toy_target.write_package(path / "mini_target", "mini", "USE_MINI")
    return path


def scons(project: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=project, capture_output=True,
                          text=True, timeout=600, env=env)


def compiled_objects(output: str) -> list[str]:
    """The object files a SCons run compiled or assembled, from its progress lines (`compile  [gcc] x.o`)."""
    return sorted(re.findall(r"^(?:compile|assemble)\s+\[\S+\] (\S+\.o)$", output, flags=re.M))


@pytest.fixture(scope="module")
def built_project(tmp_path_factory):
    project = make_project(tmp_path_factory.mktemp("sconsproj"))
    first = scons(project, "target=mini", "check")
    return project, first


def test_build_and_check_pass(built_project):
    project, first = built_project
    assert first.returncode == 0, first.stdout + first.stderr
    assert "1 passed, 0 failed" in first.stdout
    out = project / "build" / "mini" / "gcc" / "model"
    # The layout of BuildResult.export plus the binaries.
    for rel in ("src/host.c", "graph.json", "params.bin", "metadata.json", "model.txt", "runner", "libmodel.so"):
        assert (out / rel).exists(), rel
    regions = sorted(p.name for p in (out / "src" / "mini").iterdir())
    assert regions == ["tvmgen_default_mini_main_0.c", "tvmgen_default_mini_main_1.c"]


def test_null_build_rebuilds_nothing(built_project):
    project, _ = built_project
    again = scons(project, "target=mini")
    assert again.returncode == 0, again.stderr
    assert compiled_objects(again.stdout) == []
    assert "byoc codegen" not in again.stdout
    assert "byoc plan" not in again.stdout      # reading the build used the cached plan: no partition, no codegen


def test_help_plans_nothing(tmp_path):
    project = make_project(tmp_path)
    result = scons(project, "target=mini", "-h")
    assert result.returncode == 0, result.stderr
    assert "byoc plan" not in result.stdout and not (project / "build").exists()


def _weights_model(seed: int) -> str:
    """dense(x, W) + b with a 8 KiB W (a linked constant, as the IR has it: one row, so ccompiler does not pack
    it, targets/ccompiler/prepack.py) and a small b, as all-in-one model text."""
    import numpy as np

    from byoc_compiler import op
    from byoc_compiler.ir import Function, IRModule, Var, astext, const
    from byoc_compiler.ir.types import TensorType

    rng = np.random.default_rng(seed)
    x = Var("x", TensorType((1, 64), "float32"))
    w = const(rng.standard_normal((32, 64)).astype(np.float32))
    b = const(np.linspace(-1, 1, 32).astype(np.float32))         # the same in every version
    return astext(IRModule.from_expr(Function([x], op.nn.relu(op.nn.bias_add(op.nn.dense(x, w), b)))))


def test_weights_only_edit_reassembles_only_the_constants(tmp_path):
    project = make_project(tmp_path)
    (project / "model.txt").write_text(_weights_model(1))
    first = scons(project, "target=ccompiler", "check")
    assert first.returncode == 0, first.stdout + first.stderr
    out = project / "build" / "ccompiler" / "gcc" / "model"
    assert (out / "src" / "byoc_constants.S").exists() and (out / "src" / "byoc_constants.bin").stat().st_size >= 8192
    (project / "model.txt").write_text(_weights_model(2))
    edited = scons(project, "target=ccompiler", "check")
    assert edited.returncode == 0, edited.stdout + edited.stderr
    assert compiled_objects(edited.stdout) == ["build/ccompiler/gcc/model/obj/src/byoc_constants.o"], edited.stdout
    # the runner links the model's shared library, which holds the constants (SCons may relink the runner
    # against it too; "1 passed" below proves the runner runs the new weights either way)
    assert "link     [gcc] build/ccompiler/gcc/model/libmodel.so" in edited.stdout, edited.stdout
    assert "1 passed, 0 failed" in edited.stdout          # the new weights are the ones that run


def test_editing_a_target_codegen_rebuilds_only_its_objects(built_project):
    project, _ = built_project
    codegen = project / "mini_target" / "codegen.py"
    codegen.write_text(codegen.read_text().replace('VERSION = "v1"', 'VERSION = "v2"'))
    rebuilt = scons(project, "target=mini", "check")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    objects = compiled_objects(rebuilt.stdout)
    assert objects == ["build/mini/gcc/model/obj/src/mini/tvmgen_default_mini_main_0.o",
                       "build/mini/gcc/model/obj/src/mini/tvmgen_default_mini_main_1.o"], rebuilt.stdout
    assert "1 passed, 0 failed" in rebuilt.stdout


def test_a_same_size_same_second_generator_edit_regenerates(tmp_path):
    """An edit that keeps the file's size and timestamp (an undo and a quick re-edit in the same second)
    still regenerates: the Python generator sources are compared by content (byoc_compiler/scons/decider.py)."""
    project = make_project(tmp_path)
    assert scons(project, "target=mini").returncode == 0
    codegen = project / "mini_target" / "codegen.py"
    before = codegen.stat()
    codegen.write_text(codegen.read_text().replace('VERSION = "v1"', 'VERSION = "v3"'))
    os.utime(codegen, ns=(before.st_atime_ns, before.st_mtime_ns))     # what the last build saw
    assert codegen.stat().st_size == before.st_size
    rebuilt = scons(project, "target=mini")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "byoc codegen" in rebuilt.stdout, rebuilt.stdout
    assert "v3" in (project / "build" / "mini" / "gcc" / "model" / "src" / "mini"
                    / "tvmgen_default_mini_main_0.c").read_text()


def test_editing_the_model_file_rebuilds_it(tmp_path):
    project = make_project(tmp_path)
    assert scons(project, "target=mini").returncode == 0
    (project / "model.txt").write_text(MODEL.replace("nn.relu", "nn.sigmoid" if False else "abs"))
    rebuilt = scons(project, "target=mini", "check")
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "build/mini/gcc/model/obj/src/host.o" in compiled_objects(rebuilt.stdout)


BAD_COMMAND_LINES = [
    pytest.param(["targte=mini"], "unknown variable targte=mini (did you mean target=?)", id="typo-in-variable"),
    pytest.param(["target=minni"], "unknown target 'minni' (did you mean mini?)", id="unknown-target"),
    pytest.param(["target=examplejson"], "target 'examplejson' is disabled: set USE_EXAMPLEJSON = true",
                 id="disabled-target"),
    pytest.param(["target=mini", "model=nosuchmodel"], "unknown model 'nosuchmodel'", id="unknown-model"),
    pytest.param([], "say which target to build", id="no-target"),
    pytest.param(["target=mini", "executor=jit"], "Invalid value for enum variable 'executor'", id="bad-executor"),
]


@pytest.mark.parametrize("args, message", BAD_COMMAND_LINES)
def test_bad_command_lines_fail_with_one_clear_message(tmp_path, args, message):
    project = make_project(tmp_path)
    result = scons(project, *args)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (project / "build").exists()


def test_help_lists_variables_with_configured_defaults(tmp_path):
    result = scons(make_project(tmp_path), "-h")
    assert result.returncode == 0
    for text in ("target:", "toolchain:", "model:", "executor:", "interface:", "default: model.txt"):
        assert text in result.stdout, text


def test_a_failing_model_fails_the_check(tmp_path):
    project = make_project(tmp_path)
    codegen = project / "mini_target" / "codegen.py"
    # An injected bug: multiply computes a sum. The check must say FAIL and exit non-zero.
    codegen.write_text(codegen.read_text().replace('"multiply": "*"', '"multiply": "+"'))
    result = scons(project, "target=mini", "check")
    assert result.returncode != 0
    assert "FAIL" in result.stdout and "0 passed, 1 failed" in result.stdout


def test_params_mode_builds_and_checks_without_weights_in_the_binaries(tmp_path):
    project = make_project(tmp_path)
    (project / "model.txt").write_text(_weights_model(3))
    result = scons(project, "target=ccompiler", "constants=params", "check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 0 failed" in result.stdout        # the check gave the runner --constants
    out = project / "build" / "ccompiler" / "gcc" / "model"
    weights = (out / "constants.bin").stat().st_size
    assert weights >= 8192 and not (out / "model.txt.bin").exists()    # model.txt refers to constants.bin
    assert (out / "runner").stat().st_size < weights + 200_000


def test_editing_a_kernel_c_file_recompiles_only_its_object(tmp_path):
    """A target's C kernel library is SCons's business: its edit recompiles that object and relinks,
    without re-planning (no partition, no codegen) and without touching the generated sources."""
    project = make_project(tmp_path)
    # a checkout of byoc of its own (the built-in targets are byoc_compiler.contrib.*, from targets/ of it)
    checkout = tmp_path / "checkout"
    for part in ("byoc_compiler", "targets"):
        shutil.copytree(ROOT / part, checkout / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    (project / "model.txt").write_text(_weights_model(4))
    first = scons(project, "target=ccompiler", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    kernel = checkout / "targets" / "ccompiler" / "kernels" / "ck_elementwise.c"
    kernel.write_text(kernel.read_text() + "\n/* edited by a test */\n")
    edited = scons(project, "target=ccompiler", "check", env=env)
    assert edited.returncode == 0, edited.stdout + edited.stderr
    assert compiled_objects(edited.stdout) == ["build/_runtime/gcc/-O2-8threads/ccompiler-kernels/ck_elementwise.o"], \
        edited.stdout
    assert "byoc plan" not in edited.stdout and "byoc codegen" not in edited.stdout
    assert "1 passed, 0 failed" in edited.stdout


def test_toolchains_share_one_constants_file_and_clean_removes_it(tmp_path):
    """gcc's and clang's constants.bin are one file of the build root's store (byoc_compiler/scons/store.py): one
    inode, the weights' bytes; a weights edit makes a new entry (the old one goes) and checks; `scons -c`
    leaves no store."""
    import numpy as np

    project = make_project(tmp_path)
    args = ["target=host", "executor=aot", "constants=params", "toolchain=gcc,clang"]
    built = {}
    for seed in (5, 6):
        (project / "model.txt").write_text(_weights_model(seed))
        result = scons(project, *args, "check")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "2 passed, 0 failed" in result.stdout
        files = [project / "build" / "host" / tc / "model" / "constants.bin" for tc in ("gcc", "clang")]
        assert os.stat(files[0]).st_ino == os.stat(files[1]).st_ino and os.stat(files[0]).st_nlink == 3
        [entry] = (project / "build" / ".constants").iterdir()
        w = np.random.default_rng(seed).standard_normal((32, 64)).astype(np.float32)    # _weights_model's W
        assert entry.read_bytes() == w.astype("<f4").tobytes()
        built[seed] = entry.name
    assert built[5] != built[6]
    again = scons(project, *args)
    assert again.returncode == 0 and "byoc codegen" not in again.stdout and compiled_objects(again.stdout) == []
    cleaned = scons(project, *args, "-c")
    assert cleaned.returncode == 0, cleaned.stderr
    assert not (project / "build" / ".constants").exists() and not list((project / "build").rglob("*.bin"))
