"""The clean-virtualenv smoke set of CI (.ci/venv_smoke.sh runs it with the virtualenv's python, in an
empty directory outside the repository, with no PYTHONPATH and no BYOC_CONFIG).

    python venv_smoke.py REPO WHEEL

Each step asserts what a user of the installed wheel would see; the first failure ends the run with
one message and a non-zero exit. REPO is read only for the test and example files it copies.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

REPO, WHEEL = Path(sys.argv[1]), Path(sys.argv[2])
BIN = Path(sys.executable).parent
HERE = Path.cwd()


def run(*argv, cwd: Path = HERE, expect: int = 0, env: dict | None = None) -> str:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != expect:
        sys.exit(f"venv smoke: `{' '.join(map(str, argv))}` in {cwd} exited {proc.returncode}, expected "
                 f"{expect}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc.stdout + proc.stderr


def check(condition: bool, message: str) -> None:
    if not condition:
        sys.exit(f"venv smoke: {message}")


# What the wheel must carry of the repository's package and target sources (package data included).
SHIPPED = (".py", ".c", ".h", ".S", ".ld", ".toml", ".json", ".md")


def the_wheel_is_byoc_compiler_only():
    names = set(zipfile.ZipFile(WHEEL).namelist())
    tops = {name.split("/")[0] for name in names}
    check({t for t in tops if not t.endswith(".dist-info")} == {"byoc_compiler"}, f"wheel's top level: {tops}")
    tracked = run("git", "-C", REPO, "ls-files", "byoc_compiler", "targets").split()
    wanted = {("byoc_compiler/contrib/" + p[len("targets/"):]) if p.startswith("targets/") else p
              for p in tracked if p.endswith(SHIPPED) and p != "targets/__init__.py"}
    check(not wanted - names, f"files missing from the wheel: {sorted(wanted - names)[:20]}")
    import byoc_compiler

    where = Path(byoc_compiler.__file__).resolve()
    check(Path(sys.prefix).resolve() in where.parents, f"byoc_compiler imported from {where}, not the venv")
    check(byoc_compiler.__version__ == WHEEL.name.split("-")[1], f"__version__ {byoc_compiler.__version__}")


def byoc_targets_lists_the_builtin_targets():
    out = run(BIN / "byoc", "targets")
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for name in ("ccompiler", "examplejson", "dnnl"):
        check(name in rows and f"byoc_compiler.contrib.{name}" in rows[name], f"`byoc targets`:\n{out}")
    out = run(BIN / "byoc", "config")
    check("read packaged defaults" in out and "read settings" not in out, f"`byoc config` here:\n{out}")


def small_cnn_builds_and_runs_through_ccompiler():
    import numpy as np

    import byoc_compiler as byoc
    from byoc_compiler import runtime, testing, zoo

    mod = zoo.get("small_cnn")
    lib = byoc.build(byoc.partition_for("ccompiler", mod), toolchain="gcc")
    lib.export_library(HERE / "small_cnn.so")
    m = runtime.load(str(HERE / "small_cnn.so"))
    inputs = zoo.inputs("small_cnn")
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    want = testing.run_reference(mod, inputs)[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-5)


def a_quantized_model_test_passes():
    """onnxruntime's quantizer needs sympy: the test extra must bring it (a fresh cache: it really runs)."""
    tests = HERE.parent / "quantized-test"
    tests.mkdir()
    shutil.copy(REPO / "tests" / "test_quantized_models.py", tests)
    env = {**__import__("os").environ, "BYOC_QUANTIZED_CACHE": str(tests / "cache")}
    case = "test_quantized_models.py::test_host_build_matches_onnxruntime[resnet50_tiny-qdq-per_channel-gcc-graph-packed]"
    out = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
              "ignore::pytest.PytestUnknownMarkWarning", case, cwd=tests, env=env)
    check("1 passed" in out and "failed" not in out, out)


def user_project(name: str, settings: str) -> Path:
    project = HERE / name
    project.mkdir()
    (project / "SConstruct").write_text("import byoc_compiler.scons; byoc_compiler.scons.main()\n")
    (project / "config.toml").write_text(settings)
    return project


def a_user_project_passes_scons_check():
    project = user_project("project", '[backends]\nUSE_DNNL = false\n\n[build]\ntoolchains = ["gcc"]\n'
                                      'models = ["small_cnn", "mlp"]\n')
    out = run(BIN / "scons", "target=ccompiler", "check", cwd=project)
    check("2 passed, 0 failed" in out, out)


def vendor_wheel(version: str, vendor_api: str) -> Path:
    """byoc-mynpu (docs/examples: the guide's package and its pyproject.toml) built at this version."""
    src = HERE / f"byoc-mynpu-{version}"
    (src / "byoc_mynpu").mkdir(parents=True)
    for name in ("__init__.py", "codegen.py"):
        shutil.copy(REPO / "docs" / "examples" / "mynpu" / name, src / "byoc_mynpu" / name)
    init = src / "byoc_mynpu" / "__init__.py"
    init.write_text(init.read_text().replace("vendor_api=(1, 3)", f"vendor_api={vendor_api}"))
    pyproject = (REPO / "docs" / "examples" / "byoc-mynpu" / "pyproject.toml").read_text()
    (src / "pyproject.toml").write_text(pyproject.replace('version = "0.1.0"', f'version = "{version}"'))
    run(BIN / "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps", "--no-build-isolation",
        "-w", HERE / "dist", src)
    return HERE / "dist" / f"byoc_mynpu-{version}-py3-none-any.whl"


def a_vendor_wheel_is_listed_and_passes_scons_check():
    run(BIN / "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", vendor_wheel("0.1.0", "(1, 3)"))
    out = run(BIN / "byoc", "targets")
    check(any(line.startswith("mynpu ") and "byoc-mynpu 0.1.0" in line for line in out.splitlines()), out)
    project = user_project("vendor-project", '[build]\ntoolchains = ["gcc"]\n')
    out = run(BIN / "scons", "target=mynpu", "model=byoc_guide", "check", cwd=project)
    check("1 passed, 0 failed" in out, out)


def a_vendor_wheel_of_another_major_api_is_refused():
    from byoc_compiler.vendor import API_VERSION

    run(BIN / "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", vendor_wheel("0.2.0", "(2, 0)"))
    out = run(BIN / "byoc", "targets", expect=1)
    have = ".".join(map(str, API_VERSION))
    check(f"target 'mynpu' (byoc-mynpu 0.2.0) was written for byoc's vendor API 2.0, and this byoc provides "
          f"vendor API {have}" in out, out)
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    check("ready" in rows["ccompiler"], out)


STEPS = [the_wheel_is_byoc_compiler_only, byoc_targets_lists_the_builtin_targets,
         small_cnn_builds_and_runs_through_ccompiler, a_quantized_model_test_passes,
         a_user_project_passes_scons_check, a_vendor_wheel_is_listed_and_passes_scons_check,
         a_vendor_wheel_of_another_major_api_is_refused]

if __name__ == "__main__":
    check(not any(HERE.glob("*")), f"{HERE} is not empty")
    for step in STEPS:
        start = time.perf_counter()
        step()
        print(f"venv smoke: {step.__name__.replace('_', ' ')}: ok ({time.perf_counter() - start:.1f} s)",
              flush=True)
