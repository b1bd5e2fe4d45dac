"""Rerunning a ctypes kernel test file against ASan+UBSan builds of its C sources.

A kernel test file compiles its C sources once per session for each entry of BUILDS and loads them with
ctypes. Its rerun test calls `rerun(cc, __file__)`: the same file again in a child pytest with
BYOC_CK_SANITIZE=cc (so BUILDS is the one sanitized build) and the compiler's ASan runtime preloaded into
Python (a sanitized shared library cannot be loaded into an unsanitized process otherwise). Any finding
aborts the child run and fails the rerun test with the tail of its output.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

import needs

SANITIZE = os.environ.get("BYOC_CK_SANITIZE", "")  # "gcc" or "clang": this run is the sanitizer rerun
# -O0: every access stays instrumented and the library compiles in 40% of -O1's time (the optimizer's warnings
# are the -O3 builds'); the tests are small, so the slower code costs nothing.
SANITIZER_FLAGS = ["-O0", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                   "-fno-omit-frame-pointer"]
# The builds a kernel test file runs against: gcc and clang at -O0 and -O3, or in the rerun the sanitized one.
BUILDS = {f"{SANITIZE}-asan-ubsan": (SANITIZE, SANITIZER_FLAGS)} if SANITIZE else {
    f"{cc}{opt}": (cc, [opt]) for cc in ("gcc", "clang") for opt in ("-O0", "-O3")}
# The default run tests gcc -O3 and clang -O0 (each compiler and each level once); the other two builds wait
# for `every_toolchain` (the matrix builds models with both compilers at both levels by default).
DEFAULT_BUILDS = ("gcc-O3", "clang-O0")


def build_params() -> list:
    """BUILDS as fixture params, the builds beyond the default run's marked `every_toolchain`."""
    return [pytest.param(name, marks=[] if SANITIZE or name in DEFAULT_BUILDS else [pytest.mark.every_toolchain])
            for name in BUILDS]
# The sanitizer runtime a compiler links into -fsanitize=address code, to preload into Python.
ASAN_RUNTIMES = {"gcc": "libasan.so", "clang": f"libclang_rt.asan-{platform.machine()}.so"}
# The rerun tests' compilers: the default run reruns under gcc's sanitizers, clang's wait for `every_toolchain`
# (the matrix's clang-asan-ubsan lanes run clang's sanitizers over whole models in the default run).
RERUN_COMPILERS = [cc if cc == "gcc" else pytest.param(cc, marks=pytest.mark.every_toolchain) for cc in ASAN_RUNTIMES]


def rerun(cc: str, test_file: str, prebuild=None) -> None:
    """Run `test_file` again under a `cc` ASan+UBSan build; fail with the output's tail on any finding.
    `prebuild(cc, SANITIZER_FLAGS)` compiles the sanitized library here first, into the run's cache where the
    child finds it: the child's compilers would run with the ASan runtime preloaded too (LD_PRELOAD reaches every
    process it starts), 1.6x slower (the kernel library's -O0 sanitized compile: 28 s there)."""
    needs.programs(cc)
    if prebuild is not None:
        prebuild(cc, SANITIZER_FLAGS)
    runtime = subprocess.run([cc, f"-print-file-name={ASAN_RUNTIMES[cc]}"], capture_output=True,
                             text=True).stdout.strip()
    if not os.path.isabs(runtime) or not os.path.exists(runtime):
        needs.missing(f"{cc} has no {ASAN_RUNTIMES[cc]}")
    env = dict(os.environ, BYOC_CK_SANITIZE=cc, LD_PRELOAD=runtime,
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=1", UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1",
               PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "no:benchmark", "-o", "addopts=", test_file], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parent.parent)
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, tail
    assert "passed" in proc.stdout and "ERROR: AddressSanitizer" not in tail and "runtime error" not in tail, tail
