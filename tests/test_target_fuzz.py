"""Hardening of the targets' own runtimes: each target's fuzz harness (targets/<name>/fuzz/fuzz_parser.c:
create a module from arbitrary bytes and, when the graph is small, build and run it) under ASan/UBSan.

- test_regressions_and_seeds: every saved input (targets/<name>/fuzz/regressions/) and every seed runs clean
  through the harness built with gcc -fsanitize=address,undefined.
- test_bounded_fuzz_run (marked `fuzz`; 5 s each in the default run, with `-m fuzz` examplejson 20 s and dnnl
  15 s, BYOC_FUZZ_SECONDS if set: tests/conftest.py's fuzz_seconds): libFuzzer
  when clang's -fsanitize=fuzzer links here, else the deterministic mutation loop of byoc/fuzz_main.h under
  ASan/UBSan. A crash fails the test naming the saved input: copy it into fuzz/regressions/ once fixed.
"""
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import needs

ROOT = Path(__file__).resolve().parent.parent
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
# Target libraries (libdnnl) are not instrumented; leaks are still checked (LeakSanitizer sees every malloc).
ENV = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0", "UBSAN_OPTIONS": "print_stacktrace=1",
       "OMP_NUM_THREADS": "1", "BYOC_NUM_THREADS": "1"}


def _examplejson():
    from byoc_compiler.runtime import include_flags
    from byoc_compiler.contrib.examplejson.codegen import RUNTIME_DIR
    from byoc_compiler.contrib.examplejson.loader import runtime_sources

    # small tensors keep each execution fast; the size limit's own checks are exercised all the same
    return [f"-I{RUNTIME_DIR}", *include_flags(), "-DEJ_MAX_BYTES=((uint64_t)1<<24)"], runtime_sources(), []


def _examplejson_corpus(out: Path) -> list[Path]:
    from fuzz.corpus_examplejson import write_corpus

    return write_corpus(out)


def _dnnl():
    from byoc_compiler.contrib.dnnl.loader import include_flags, runtime_sources
    from byoc_compiler.vendor import runtime_source_dir

    # the module follows the runtime pool's thread count (byoc_get_num_threads): the harness links the pool
    return include_flags(), [*runtime_sources(), runtime_source_dir() / "parallel.c"], ["-ldnnl", "-lpthread"]


def _dnnl_missing():
    from byoc_compiler.target import get_target

    return get_target("dnnl").missing()


def _dnnl_corpus(out: Path) -> list[Path]:
    from fuzz.corpus_dnnl import write_corpus

    paths = write_corpus(out)
    # malformed variants of a real graph: truncations
    text = paths[-1].read_text()
    for k, cut in enumerate((1, len(text) // 3, len(text) // 2, len(text) - 2)):
        (out / f"cut{k}.json").write_text(text[:cut])
        paths.append(out / f"cut{k}.json")
    return paths


@dataclass(frozen=True)
class TargetFuzz:
    name: str
    build: Callable[[], tuple]              # () -> (compile flags, runtime sources, link flags)
    corpus: Callable[[Path], list[Path]]    # writes the seeds into a folder
    seconds: int                            # the bounded run's length with `-m fuzz` (default run: 5 s)
    seed: str                               # of the mutation loop
    libfuzzer_flags: tuple
    missing: Callable[[], "str | None"] = lambda: None   # a system library the target needs, absent here

    @property
    def fuzz_dir(self) -> Path:
        return ROOT / "targets" / self.name / "fuzz"


TARGETS = [
    TargetFuzz("examplejson", _examplejson, _examplejson_corpus, 20, "20261121",
               ("-timeout=10", "-rss_limit_mb=2048",
                f"-dict={ROOT / 'targets' / 'examplejson' / 'fuzz' / 'examplejson.dict'}")),
    # each execution may JIT oneDNN primitives: a shorter run
    TargetFuzz("dnnl", _dnnl, _dnnl_corpus, 15, "20261123", ("-timeout=20", "-rss_limit_mb=4096"), _dnnl_missing),
]


def _compile(target: TargetFuzz, cc: str, out: Path, extra) -> tuple[bool, str]:
    flags, sources, libs = target.build()
    argv = [cc, "-std=c99", "-g", "-O1", *extra, *flags, os.fspath(target.fuzz_dir / "fuzz_parser.c"),
            *map(os.fspath, sources), "-o", os.fspath(out), *libs, "-lm"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    return proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module", params=TARGETS, ids=lambda t: t.name)
def target(request):
    """oneDNN is a system library (scripts/setup.sh installs libdnnl-dev): missing, dnnl skips here and
    fails in CI."""
    problem = request.param.missing()
    if problem is not None:
        needs.missing(problem)
    return request.param


@pytest.fixture(scope="module")
def corpus(target, tmp_path_factory):
    return target.corpus(tmp_path_factory.mktemp(f"seeds_{target.name}"))


@pytest.fixture(scope="module")
def standalone(target, tmp_path_factory):
    exe = tmp_path_factory.mktemp(f"harness_{target.name}") / "fuzz_standalone"
    ok, err = _compile(target, "gcc", exe, ["-DBYOC_FUZZ_STANDALONE", "-Wall", "-Wextra", "-Werror", *SANITIZE])
    assert ok, err
    return exe


def test_regressions_and_seeds(target, standalone, corpus):
    regressions = target.fuzz_dir / "regressions"
    files = sorted(p for p in regressions.iterdir() if p.is_file() and p.name != "README.md") + list(corpus)
    proc = subprocess.run([standalone, *map(os.fspath, files)], capture_output=True, text=True, env=ENV, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert f"ran {len(files)} inputs" in proc.stdout


def _libfuzzer(target: TargetFuzz, tmp: Path):
    if shutil.which("clang") is None:
        return None
    exe = tmp / "fuzz_libfuzzer"
    ok, _ = _compile(target, "clang", exe, ["-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all"])
    return exe if ok else None


# The default run replays each target's regressions and seeds (above); exploring new inputs waits for `-m fuzz`.
@pytest.mark.fuzz
@pytest.mark.every_fuzz_target
def test_bounded_fuzz_run(target, tmp_path, corpus, fuzz_seconds, request):
    seconds = fuzz_seconds(target.seconds)
    work = tmp_path / "corpus"
    work.mkdir()
    for p in corpus:
        shutil.copy(p, work / p.name)
    exe = _libfuzzer(target, tmp_path)
    if exe is not None:
        argv = [exe, f"-max_total_time={seconds}", "-print_final_stats=1", *target.libfuzzer_flags,
                f"-artifact_prefix={tmp_path}/", os.fspath(work)]
        proc = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=seconds + 300)
        crashes = sorted(p.name for p in tmp_path.iterdir() if re.match(r"(crash|leak|timeout|oom)-", p.name))
        runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
        print(f"libFuzzer: {runs.group(1) if runs else '?'} executions in {seconds} s, crashes: {crashes or 'none'}")
    else:   # the sanitized standalone harness only where libFuzzer is missing (its build is seconds of CPU)
        standalone = request.getfixturevalue("standalone")
        argv = [standalone, "--mutate", str(seconds), target.seed, *map(os.fspath, corpus)]
        proc = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=seconds + 300)
        crashes = [] if proc.returncode == 0 else ["(rerun the same command: the loop is deterministic)"]
        print(f"mutation loop (no libFuzzer here): {proc.stdout.strip()}")
    assert proc.returncode == 0 and not crashes, (
        f"fuzzing found a crash: {crashes} in {tmp_path}; fix it and copy the input into "
        f"{target.fuzz_dir / 'regressions'}\n" + proc.stderr[-4000:])
