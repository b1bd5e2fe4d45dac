"""Mutation campaign: how many plausible bugs in ccompiler's kernel library the tests catch.

    python bench/mutants.py                          # 3 tested mutants per kernel file (~45), seed 0
    python bench/mutants.py --per-file 6 --seed 1 --files ck_pool.c ck_dense.c
    python bench/mutants.py --named                  # only the named realistic mutants (NAMED below)

Mutants come from universalmutator (`mutate FILE c`; pip install '.[bench]'), which rewrites one
expression or statement of a C file per mutant by its C rules. Per kernel file, mutants are drawn at
random (seeded) until --per-file of them compile and differ from the original (stratified by file):

* one that does not compile under the project's flags (gcc -std=c99 -Wall -Wextra -Werror -O2 -c) is left
  out of the count;
* one whose object file is byte-identical to the original's is equivalent (trivial compiler
  equivalence: the compiler proved the change has no effect) and left out of the kill rate.

Each remaining mutant is written into a scratch copy of the repository (`git archive HEAD`, so the
tests, SCons and any subprocess see it through PYTHONPATH) and the checks covering that file run
(COVERING: the ctypes kernel tests against the gcc -O3 build, -x). A nonzero exit (or a timeout)
kills it. Printed: made, did not compile, equivalent, killed, survived (with the mutated line of each
survivor), and the kill rate with its 95% Wilson interval. NAMED are the realistic bug classes a
tool does not write by itself, as (file, original text, mutated text) patches; every one must be killed.
"""
from __future__ import annotations

import argparse
import difflib
import io
import json
import math
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = "targets/ccompiler/kernels"
_CK = ["tests/test_ccompiler_kernels.py", "-k", "gcc-O3 and not sanitizers and not warnings"]
_RR = ["tests/test_ccompiler_reduce_resize_kernels.py", "-k", "gcc-O3 and not sanitizers and not warnings"]
_QNN = ["tests/test_ccompiler_qnn.py"]
# kernel file -> the pytest arguments of the checks that cover it (the fastest that call its functions)
COVERING = {
    **dict.fromkeys(("ck_microkernel.c", "ck_gemm.c", "ck_dense.c", "ck_conv2d.c", "ck_elementwise.c", "ck_pool.c",
                     "ck_shape.c", "ck_transformer.c", "ck_activation.c", "ck_depthwise.c"), _CK),
    **dict.fromkeys(("ck_reduce.c", "ck_resize.c"), _RR),
    **dict.fromkeys(("ck_qgemm.c", "ck_qconv.c", "ck_qelementwise.c"), _QNN),
}
TIMEOUT = 600


@dataclass(frozen=True)
class Named:
    name: str
    file: str
    original: str        # must occur exactly once in the file
    mutated: str


NAMED = [
    Named("pool window off by one", "ck_pool.c", "for (kh = 0; kh < p->pool_h; ++kh) {",
          "for (kh = 0; kh < p->pool_h - 1; ++kh) {"),
    Named("conv window off by one (one-channel direct kernel)", "ck_conv2d.c",
          "for (kh = 0; kh < p->kernel_h; ++kh) {", "for (kh = 0; kh < p->kernel_h - 1; ++kh) {"),
    Named("padding on the wrong side (pool)", "ck_pool.c", "const int64_t h0 = oh * p->stride_h - p->pad_top;",
          "const int64_t h0 = oh * p->stride_h - p->pad_bottom;"),
    Named("stride ignored on the last row (pool)", "ck_pool.c",
          "const int64_t h0 = oh * p->stride_h - p->pad_top;",
          "const int64_t h0 = (oh == oh_n - 1 ? oh : oh * p->stride_h) - p->pad_top;"),
    Named("bias dropped on one channel (dense epilogue)", "ck_gemm.c", "for (j = 0; j < nr; ++j) cr[j] += bias[j];",
          "for (j = 0; j < nr; ++j) cr[j] += col0 + j == 1 ? 0.0f : bias[j];"),
    Named("BatchNorm epsilon dropped", "ck_elementwise.c", "sqrtf(job->var[c] + job->epsilon)",
          "sqrtf(job->var[c] + 0.0f * job->epsilon)"),
    Named("one output element never written (batch_norm)", "ck_elementwise.c",
          "for (i = 0; i < inner; ++i) y[i] = x[i] * k + s;", "for (i = (r == 0); i < inner; ++i) y[i] = x[i] * k + s;"),
    Named("softmax without max subtraction", "ck_transformer.c", "ck_exp_shifted(x, y, n, top);",
          "ck_exp_shifted(x, y, n, 0.0f);"),
    Named("requantize rounding half away from zero instead of to even (qadd, TFLite form)", "ck_qelementwise.c",
          "q += (r > half) || (r == half && (q & 1u));", "q += (r >= half);"),
    Named("output zero point ignored (qadd, TFLite form)", "ck_qelementwise.c",
          "r = ck_round_shift(sum, p->shift) + p->output_zero_point;", "r = ck_round_shift(sum, p->shift);"),
    Named("requantize arithmetic swapped: onnxruntime's float form for TFLite's fixed point (qadd)",
          "ck_qelementwise.c", "if (p->rounding == 0) {\n      const float t", "if (p->rounding != 0) {\n      const float t"),
]


@dataclass
class Result:
    file: str
    mutant: str
    status: str          # killed, survived, equivalent, no-compile
    seconds: float = 0.0
    line: str = ""       # the mutated line


def _object(source: Path, include: Path, out: Path) -> bytes | None:
    runtime = include.parents[2] / "byoc_compiler" / "runtime" / "include"     # byoc/parallel.h
    proc = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-c", "-I", str(include), "-I",
                           str(runtime), str(source), "-o", str(out)], capture_output=True)
    return out.read_bytes() if proc.returncode == 0 else None


def _changed_line(original: str, mutated: str) -> str:
    """The mutated line, numbered (a removed line: '-' and the original text)."""
    a, b = original.splitlines(), mutated.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            return f"{i1 + 1}: " + (b[j1].strip() if j2 > j1 else "- " + a[i1].strip())
    return ""


def _scratch(into: Path) -> Path:
    """The committed tree (HEAD) unpacked into `into`: the copy mutants are written into."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def _run_checks(repo: Path, file: str) -> tuple[bool, float]:
    """(killed, seconds): the covering checks of `file` against the mutated copy."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(repo), "HOME": str(repo),
           "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly",
           "-o", "addopts=", *COVERING[file]]
    start = time.time()
    try:
        proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return True, time.time() - start
    if proc.returncode not in (0, 1):          # 2-5: the run itself broke (collection, usage): not a kill
        raise RuntimeError(f"covering checks of {file} could not run:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.returncode == 1, time.time() - start


def _test(repo: Path, file: str, text: str) -> tuple[bool, float]:
    path = repo / KERNELS / file
    original = path.read_text()
    path.write_text(text)
    try:
        return _run_checks(repo, file)
    finally:
        path.write_text(original)


def _candidates(file: str, work: Path) -> list[Path]:
    out = work / "generated" / file
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mutate", str(ROOT / KERNELS / file), "c", "--noCheck", "--mutantDir", str(out)],
                   capture_output=True, check=True, cwd=work)
    return sorted(out.glob("*.mutant.*.c"), key=lambda p: int(p.name.split(".")[-2]))


def campaign(repo: Path, work: Path, files: list[str], per_file: int, seed: int) -> list[Result]:
    results = []
    include = repo / KERNELS
    for file in files:
        original = (repo / KERNELS / file).read_text()
        reference = _object(repo / KERNELS / file, include, work / "original.o")
        pool = _candidates(file, work)
        random.Random(f"{seed}:{file}").shuffle(pool)
        tested = 0
        for mutant in pool:
            if tested == per_file:
                break
            text = mutant.read_text()
            probe = work / "probe" / file
            probe.parent.mkdir(parents=True, exist_ok=True)
            probe.write_text(text)
            obj = _object(probe, include, work / "mutant.o")
            line = _changed_line(original, text)
            if obj is None:
                results.append(Result(file, mutant.name, "no-compile", line=line))
                continue
            if obj == reference:
                results.append(Result(file, mutant.name, "equivalent", line=line))
                continue
            killed, seconds = _test(repo, file, text)
            tested += 1
            results.append(Result(file, mutant.name, "killed" if killed else "survived", seconds, line))
            print(f"  {file} {mutant.name}: {results[-1].status} ({seconds:.0f} s) {line}", flush=True)
    return results


def named(repo: Path) -> list[Result]:
    results = []
    for m in NAMED:
        path = repo / KERNELS / m.file
        text = path.read_text()
        if text.count(m.original) != 1:
            raise SystemExit(f"named mutant {m.name!r}: {m.original!r} occurs {text.count(m.original)} times in "
                             f"{m.file}; update NAMED in bench/mutants.py")
        mutated = text.replace(m.original, m.mutated)
        probe = repo.parent / "probe" / m.file
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text(mutated)
        if _object(probe, repo / KERNELS, repo.parent / "named.o") is None:
            raise SystemExit(f"named mutant {m.name!r} does not compile; update NAMED in bench/mutants.py")
        killed, seconds = _test(repo, m.file, mutated)
        results.append(Result(m.file, m.name, "killed" if killed else "survived", seconds, m.mutated))
        print(f"  {m.name}: {results[-1].status} ({seconds:.0f} s)", flush=True)
    return results


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def report(results: list[Result]) -> str:
    count = {s: sum(r.status == s for r in results) for s in ("no-compile", "equivalent", "killed", "survived")}
    n = count["killed"] + count["survived"]
    low, high = wilson(count["killed"], n)
    lines = [f"made {len(results)}: did not compile {count['no-compile']}, equivalent {count['equivalent']}, "
             f"killed {count['killed']}, survived {count['survived']}",
             f"kill rate {count['killed']}/{n} = {count['killed'] / max(n, 1):.1%} (95% Wilson interval "
             f"{low:.1%} - {high:.1%})"]
    lines += [f"  survived: {r.file} {r.mutant}: {r.line}" for r in results if r.status == "survived"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="*", default=list(COVERING), help="kernel files (default: all)")
    parser.add_argument("--per-file", type=int, default=3, help="tested (compiling, non-equivalent) mutants per file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--named", action="store_true", help="only the named realistic mutants")
    parser.add_argument("--json", help="write every result here")
    args = parser.parse_args(argv)
    if shutil.which("mutate") is None and not args.named:
        raise SystemExit("universalmutator is not installed: pip install '.[bench]'")
    with tempfile.TemporaryDirectory(prefix="byoc-mutants-") as tmp:
        work = Path(tmp)
        repo = _scratch(work / "repo")
        start = time.time()
        results = named(repo) if args.named else campaign(repo, work, args.files, args.per_file, args.seed)
        print(report(results))
        print(f"{time.time() - start:.0f} s")
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0 if all(r.status != "survived" for r in results) or not args.named else 1


if __name__ == "__main__":
    sys.exit(main())
