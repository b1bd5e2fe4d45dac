"""The fuzz targets in one table, and how to build, seed and run each (bench/fuzz.py for campaigns,
tests/test_fuzz.py for the regressions and CI's short runs).

C targets are libFuzzer binaries (clang -fsanitize=fuzzer,address,undefined); Python targets are atheris
scripts. Both speak libFuzzer's flags and print its final stats, so one runner serves both.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
REGRESSIONS = HERE / "regressions"
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]
STRICT = ["-std=c99", "-g", "-O1", "-Wall", "-Wextra", "-Werror"]
ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0", "UBSAN_OPTIONS": "print_stacktrace=1"}


def _byoc_runtime():
    from byoc_compiler.runtime import include_flags, source_dir

    src = source_dir()
    return [f"-I{src}", *include_flags()], [src / n for n in ("runtime.c", "json.c", "params.c",
                                                               "graph_executor.c", "npy.c")]


def _examplejson_runtime():
    from byoc_compiler.contrib.examplejson.codegen import RUNTIME_DIR
    from byoc_compiler.contrib.examplejson.loader import runtime_sources
    from byoc_compiler.runtime import include_flags

    # small tensors keep each execution fast; the size limit's own checks are exercised all the same
    return [f"-I{RUNTIME_DIR}", *include_flags(), "-DEJ_MAX_BYTES=((uint64_t)1<<24)"], runtime_sources()


def _examplejson_seeds():
    from tests.fuzz.corpus_examplejson import texts

    return [t.encode() for t in texts()]


def _seeds(name):
    def make():
        from tests.fuzz import seeds

        return seeds.SEEDS[name]()
    return make


@dataclass(frozen=True)
class FuzzTarget:
    name: str
    what: str                       # the parser it covers, for docs/fuzzing.md
    seeds: Callable[[], list]       # bytes of the seed corpus
    harness: Path                   # .c (libFuzzer) or .py (atheris)
    runtime: Callable | None = None  # C only: () -> (compile flags, sources)
    flags: list = field(default_factory=list)   # extra libFuzzer flags (dictionary, max_len)
    regressions: Path | None = None

    @property
    def is_c(self) -> bool:
        return self.harness.suffix == ".c"

    def regression_inputs(self) -> list[Path]:
        d = self.regressions or REGRESSIONS / self.name
        return sorted(p for p in d.iterdir() if p.is_file() and p.name != "README.md") if d.is_dir() else []


EJ_FUZZ = ROOT / "targets" / "examplejson" / "fuzz"
TARGETS = [
    FuzzTarget("graph", "graph.json reader + params blob + storage plan, then one run (runtime/src/json.c, "
               "graph_executor.c)", _seeds("graph"), HERE / "fuzz_graph.c", _byoc_runtime, ["-max_len=32768"]),
    FuzzTarget("params", "params blob reader (runtime/src/params.c)", _seeds("params"), HERE / "fuzz_params.c",
               _byoc_runtime, ["-max_len=65536"]),
    FuzzTarget("npy", ".npy header reader (runtime/src/npy.c)", _seeds("npy"), HERE / "fuzz_npy.c", _byoc_runtime,
               ["-max_len=4096"]),
    FuzzTarget("examplejson", "ExampleJSON parser + small runs (targets/examplejson/runtime)", _examplejson_seeds,
               EJ_FUZZ / "fuzz_parser.c", _examplejson_runtime, [f"-dict={EJ_FUZZ / 'examplejson.dict'}"],
               regressions=EJ_FUZZ / "regressions"),
    FuzzTarget("text", "Relay text-format parser + type inference (text/parser.py)", _seeds("text"),
               HERE / "fuzz_text.py", flags=["-max_len=8192"]),
    FuzzTarget("onnx", "ONNX importer on raw bytes (frontend/onnx)", _seeds("onnx"), HERE / "fuzz_onnx.py",
               flags=["-max_len=32768"]),
    FuzzTarget("tflite", "TFLite importer on raw bytes (frontend/tflite)", _seeds("tflite"), HERE / "fuzz_tflite.py",
               flags=["-max_len=65536"]),
]
BY_NAME = {t.name: t for t in TARGETS}


class BuildError(RuntimeError):
    pass


def build(target: FuzzTarget, out: Path, libfuzzer: bool = True, cc: str | None = None) -> Path:
    """A C target's binary: libFuzzer (clang) or standalone (runs the files it is given; any compiler)."""
    flags, sources = target.runtime()
    cc = cc or ("clang" if libfuzzer else "gcc")
    mode = ["-fsanitize=fuzzer,address,undefined", "-fno-sanitize-recover=all"] if libfuzzer else \
        ["-DBYOC_FUZZ_STANDALONE", *SANITIZE]
    argv = [cc, *STRICT, *mode, *flags, os.fspath(target.harness), *map(os.fspath, sources), "-o",
            os.fspath(out), "-lm"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"building {target.name} failed:\n{' '.join(argv)}\n{proc.stderr[-4000:]}")
    return out


def write_seeds(target: FuzzTarget, directory: Path) -> int:
    import hashlib

    directory.mkdir(parents=True, exist_ok=True)
    data = list(dict.fromkeys(target.seeds())) + [p.read_bytes() for p in target.regression_inputs()]
    for d in data:
        (directory / hashlib.sha1(d).hexdigest()[:16]).write_bytes(d)
    return len(data)


@dataclass
class RunResult:
    target: str
    seconds: float
    executions: int
    corpus: int
    findings: list[Path]
    command: list[str]
    log: str
    failure: str = ""   # the fuzzer died without saving an input (a signal): reported, never ignored


def run(target: FuzzTarget, workdir: Path, seconds: float, binary: Path | None = None, jobs: int = 1) -> RunResult:
    """Fuzz for `seconds` from workdir/corpus (seeded on first use); crash/leak/timeout/oom inputs are
    saved in workdir/findings. With jobs > 1 libFuzzer's fork mode keeps going after a finding."""
    corpus = workdir / "corpus"
    findings = workdir / "findings"
    findings.mkdir(parents=True, exist_ok=True)
    if not corpus.is_dir() or not any(corpus.iterdir()):
        write_seeds(target, corpus)
    if target.is_c:
        if binary is None:
            binary = build(target, workdir / f"fuzz_{target.name}")
        head = [os.fspath(binary)]
    else:
        head = [sys.executable, os.fspath(target.harness)]
    argv = [*head, f"-max_total_time={int(seconds)}", "-print_final_stats=1", "-timeout=20",
            "-rss_limit_mb=2048", f"-artifact_prefix={findings}/", *target.flags]
    if jobs > 1:
        argv += [f"-fork={jobs}", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
    argv.append(os.fspath(corpus))
    env = {**os.environ, **ENV, "PYTHONPATH": os.pathsep.join([os.fspath(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=seconds * 2 + 600)
    log = proc.stderr
    # plain mode prints stat::number_of_executed_units; fork mode only its progress lines ("#N ...")
    stat = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
    progress = re.findall(r"^#(\d+)", log, re.M)
    executions = int(stat[-1]) if stat else int(progress[-1]) if progress else 0
    found = sorted(p for p in findings.iterdir() if re.match(r"(crash|leak|timeout|oom|slow-unit)-", p.name))
    failure = ""
    if proc.returncode != 0 and not found:
        # a death libFuzzer could not save an input for (a signal, a harness that did not start)
        failure = f"exited {proc.returncode} without saving an input"
    return RunResult(target.name, seconds, executions, sum(1 for _ in corpus.iterdir()), found, argv, log, failure)


def have_libfuzzer() -> bool:
    return shutil.which("clang") is not None
