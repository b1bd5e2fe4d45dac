"""Hardening of the dnnl runtime module: its fuzz target (create, and for small graphs bind + build + run)
under ASan/UBSan.

- test_regressions_and_seeds: every saved input (targets/dnnl/fuzz/regressions/), the zoo's dnnl graphs
  and malformed variants of them run clean through the harness built with gcc -fsanitize=address,undefined.
- test_bounded_fuzz_run (marked `fuzz`, 15 s in the default run, BYOC_FUZZ_SECONDS to change): libFuzzer when clang's
  -fsanitize=fuzzer links here, else the harness's own deterministic mutation loop under ASan/UBSan.
"""
import os
import re
import shutil
import subprocess

import pytest

import needs

from byoc_compiler.backend.target import get_target
from targets.dnnl.loader import include_flags, runtime_sources

DNNL = get_target("dnnl")


@pytest.fixture(autouse=True)
def _onednn_installed():
    """oneDNN is a system library (scripts/setup.sh installs libdnnl-dev): missing, it skips here and fails in CI."""
    if DNNL.missing() is not None:
        needs.missing(DNNL.missing())


FUZZ_DIR = runtime_sources()[0].parent.parent / "fuzz"
HARNESS = FUZZ_DIR / "fuzz_parser.c"
REGRESSIONS = FUZZ_DIR / "regressions"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
# libdnnl is not instrumented; leaks are still checked (LeakSanitizer sees every malloc), none suppressed.
ENV = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0", "UBSAN_OPTIONS": "print_stacktrace=1",
       "OMP_NUM_THREADS": "1"}


def _compile(cc, out, extra):
    argv = [cc, "-std=c99", "-g", "-O1", *extra, *include_flags(), os.fspath(HARNESS),
            *map(os.fspath, runtime_sources()), "-o", os.fspath(out), "-ldnnl", "-lm"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    return proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from targets.dnnl.fuzz.make_corpus import write_corpus

    out = tmp_path_factory.mktemp("seeds")
    paths = write_corpus(out)
    # malformed variants of a real graph: truncations, and every kernel's shape off by one
    text = paths[-1].read_text()
    for k, cut in enumerate((1, len(text) // 3, len(text) // 2, len(text) - 2)):
        (out / f"cut{k}.json").write_text(text[:cut])
        paths.append(out / f"cut{k}.json")
    return paths


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    exe = tmp_path_factory.mktemp("harness") / "fuzz_standalone"
    ok, err = _compile("gcc", exe, ["-DBD_FUZZ_STANDALONE", "-Wall", "-Wextra", "-Werror", *SANITIZE])
    assert ok, err
    return exe


def test_regressions_and_seeds(standalone, corpus):
    files = sorted(p for p in REGRESSIONS.iterdir() if p.is_file() and p.name != "README.md") + list(corpus)
    proc = subprocess.run([standalone, *map(os.fspath, files)], capture_output=True, text=True, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"ran {len(files)} inputs" in proc.stdout


def _libfuzzer(tmp):
    if shutil.which("clang") is None:
        return None
    exe = tmp / "fuzz_libfuzzer"
    ok, _ = _compile("clang", exe, ["-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all"])
    return exe if ok else None


@pytest.mark.fuzz
def test_bounded_fuzz_run(tmp_path, corpus, standalone):
    seconds = int(os.environ.get("BYOC_FUZZ_SECONDS", "15"))   # each execution may JIT primitives: a short CI run
    work = tmp_path / "corpus"
    work.mkdir()
    for p in corpus:
        shutil.copy(p, work / p.name)
    exe = _libfuzzer(tmp_path)
    if exe is not None:
        argv = [exe, f"-max_total_time={seconds}", "-print_final_stats=1", "-timeout=20", "-rss_limit_mb=4096",
                f"-artifact_prefix={tmp_path}/", os.fspath(work)]
        proc = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=seconds + 300)
        crashes = sorted(p.name for p in tmp_path.iterdir() if re.match(r"(crash|leak|timeout|oom)-", p.name))
        runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
        print(f"libFuzzer: {runs.group(1) if runs else '?'} executions in {seconds} s, crashes: {crashes or 'none'}")
    else:
        argv = [standalone, "--mutate", str(seconds), "20261123", *map(os.fspath, corpus)]
        proc = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=seconds + 300)
        crashes = [] if proc.returncode == 0 else ["(rerun the same command: the loop is deterministic)"]
        print(f"mutation loop (no libFuzzer here): {proc.stdout.strip()}")
    assert proc.returncode == 0 and not crashes, (
        f"fuzzing found a crash: {crashes} in {tmp_path}; fix it and copy the input into {REGRESSIONS}\n"
        + proc.stderr[-4000:])
