"""Mutation campaign: how many plausible bugs in the C byoc ships the checks catch.

    python bench/mutants.py                          # 3 tested mutants per file of every group, seed 0
    nice -n 10 python bench/mutants.py --per-file 3 --seed 7 --json r.json   # docs/testing.md's run
    python bench/mutants.py --recheck r.json [--then COMMIT] --json r2.json  # its survivors, today's checks
    python bench/mutants.py --groups runtime writers --per-file 5 --seed 1
    python bench/mutants.py --per-file 6 --seed 1 --files ck_pool.c ck_dense.c
    python bench/mutants.py --named                  # only the named realistic mutants (NAMED below)

Three groups of files (GROUPS): ccompiler's kernel library (C), the C runtime (byoc_compiler/runtime/src:
core, graph executor, JSON, params, .npy, thread pool, runner) and the host C writers
(byoc_compiler/backend/host_kernels/*.py: the Python that writes the host's C kernels). Mutants come from
universalmutator (`mutate FILE c|python`; pip install '.[bench]'), which rewrites one expression or
statement per mutant by the language's rules. Per file, mutants are drawn at random (seeded) until
--per-file of them compile and differ from the original (stratified by file):

* one that does not compile (C: gcc -std=c99 -Wall -Wextra -Werror -O2 -c; Python: compile()) is left
  out of the count;
* one whose compiled form is identical to the original's is equivalent (trivial compiler equivalence:
  the C object file byte for byte; for Python the syntax tree without docstrings, annotations under
  PEP 563 and `pass` beside other statements, which is what the interpreter compiles) and left out of
  the kill rate; a survivor shown equivalent by reading the code is listed in JUDGED_EQUIVALENT with why.

Each remaining mutant is made from and written into a scratch copy of the repository (`git archive HEAD`,
so the tests, SCons, the C compiler and any subprocess see it through PYTHONPATH) and the checks covering
that file run there, in stages; a failing check (or a crash, or a timeout) kills it:

* kernels: the ctypes kernel tests of the file (COVERING, pytest -x);
* runtime: a batch of 111 ONNX conformance cases built host-only (gcc -O0), loaded with 2 threads and run
  as the runner program, compared with ONNX's outputs (bench/mutant_checks.py runtime);
* writers: every conformance batch's host C written again; the batches whose C changed are built, run and
  compared with ONNX's outputs (bench/mutant_checks.py writers; a batch whose C did not change cannot
  differ);
* runtime and writers, for a mutant the conformance check missed: the group's own tests (Group.tests).

The conformance cases are saved once per campaign from the unmutated copy (bench/mutant_checks.py save).
Printed: made, did not compile, equivalent, killed, survived (with the mutated line of each survivor), per
group and in all, and the kill rate with its 95% Wilson interval. NAMED are the realistic bug classes a
tool does not write by itself, as (file, original text, mutated text) patches; every one must be killed.
"""
from __future__ import annotations

import argparse
import ast
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
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = "targets/ccompiler/kernels"
_CK = ["tests/test_ccompiler_kernels.py", "-k", "gcc-O3 and not sanitizers and not warnings"]
_RR = ["tests/test_ccompiler_reduce_resize_kernels.py", "-k", "gcc-O3 and not sanitizers and not warnings"]
_QNN = ["tests/test_ccompiler_qnn.py"]
# kernel file -> the stages of checks that cover it (pytest arguments each; the fastest that call its functions
# first, a later stage only for a mutant the earlier ones missed)
COVERING = {
    **dict.fromkeys(("ck_microkernel.c", "ck_gemm.c", "ck_dense.c", "ck_conv2d.c", "ck_elementwise.c", "ck_pool.c",
                     "ck_shape.c", "ck_transformer.c", "ck_depthwise.c"), (_CK,)),
    # hard sigmoid / hard swish have their own file of ctypes tests (the one above does not call them)
    "ck_activation.c": (["tests/test_ccompiler_activation.py", "-k", "gcc-O3 or efficientnet"], _CK),
    **dict.fromkeys(("ck_reduce.c", "ck_resize.c"), (_RR,)),
    **dict.fromkeys(("ck_qgemm.c", "ck_qconv.c", "ck_qelementwise.c"), (_QNN,)),
    # the ctypes library runs on one thread: ranges cut for several threads need the built models' pool tests
    "ck_parallel.c": (_CK, ["tests/test_parallel_kernels.py"]),
}
TIMEOUT = 600
CHECK_TIMEOUT = 300         # the runtime and writer checks (a mutant that hangs a run is killed by it)
RUNTIME = "byoc_compiler/runtime/src"
# the host kernel tests a writer mutant runs (~35 s): every case built once with gcc (unpacked, -O1), the packed
# entry's refusals, the edge values, the pool tasks and the fused int8 chains; the clang and sanitizer
# repetitions of the same C are left to the default run
_HOST_FAST = ("not driver_batch and not each_kernel_alone and not (kernel_matches_reference and clang) "
              "and not (kernel_matches_reference and packed and not unpacked)")
WRITERS = "byoc_compiler/backend/host_kernels"


@dataclass(frozen=True)
class Group:
    name: str
    directory: str          # in the repository
    files: tuple[str, ...]
    language: str           # universalmutator's language: c or python
    tests: tuple[str, ...] = ()     # run only for a mutant the conformance check missed (the slower checks)


GROUPS = {g.name: g for g in (
    Group("kernels", KERNELS, tuple(COVERING), "c"),
    Group("runtime", RUNTIME, ("core.c", "graph_executor.c", "json.c", "npy.c", "params.c", "parallel.c",
                               "runtime.c", "runner.c"), "c",
          ("tests/test_runtime_c_api.py", "tests/test_runtime_graph.py", "tests/test_runtime_runner.py",
           "tests/test_runtime_loader.py",
           "tests/test_c_abi.py", "tests/test_parallel_kernels.py")),
    Group("writers", WRITERS, ("cwriter.py", "driver.py", "elementwise.py", "gemm.py", "image.py", "nn.py",
                               "qnn.py", "qnn_fused.py", "reduce.py", "shape.py", "slicing.py", "tflite_qnn.py"),
          "python", ("tests/test_host_kernels.py", "tests/test_host_fusion.py", "-k", _HOST_FAST)),
)}


@dataclass(frozen=True)
class Named:
    name: str
    file: str
    original: str        # must occur exactly once in the file
    mutated: str
    group: str = "kernels"


NAMED = [
    Named("pool window off by one", "ck_pool.c", "}\n      for (kh = 0; kh < p->pool_h; ++kh) {",
          "}\n      for (kh = 0; kh < p->pool_h - 1; ++kh) {"),
    Named("pool window off by one (max pool folded down the window)", "ck_pool.c",
          "-INFINITY;\n        for (kh = 0; kh < p->pool_h; ++kh) {",
          "-INFINITY;\n        for (kh = 0; kh < p->pool_h - 1; ++kh) {"),
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
    Named("Winograd output transform: A^T's last row with a sign dropped (int8)", "ck_qwinograd.c",
          "const uint32_t d0 = m0[4 * stride + k] - m0[8 * stride + k] - m0[12 * stride + k];",
          "const uint32_t d0 = m0[4 * stride + k] - m0[8 * stride + k] + m0[12 * stride + k];"),
    Named("Winograd input transform: the second channel of the last pair dropped (int8)", "ck_qwinograd.c",
          "if (2 * pair + 1 < c_n)", "if (2 * pair + 2 < c_n)"),
    Named("mean not divided by the count (host C writer)", "reduce.py",
          'value = f"({t})(acc / {double_literal(float(count))})" if name == "mean" else f"({t})acc"',
          'value = f"({t})acc"', "writers"),
    Named("params blob: a tensor's shape read from its second dimension (runtime)", "params.c",
          "for (k = 0; k < (uint32_t)t->ndim; ++k) {\n    t->shape[k]",
          "for (k = 1; k < (uint32_t)t->ndim; ++k) {\n    t->shape[k]", "runtime"),
]


# Mutants of the seeded campaign (docs/testing.md, session 7) that survived the checks of their day and are
# killed by the tests added for them; tests/test_mutants_replay.py replays them so those tests keep doing it.
# name: "<file> <line>" of the run, then what the mutant does.
SAMPLED = [
    Named("core.c 33: a message vsnprintf cannot format keeps its prefix", "core.c",
          "    g_last_error[0] = '\\0';\n  }\n  va_end", "    g_last_error[(0+1)] = '\\0';\n  }\n  va_end", "runtime"),
    Named("parallel.c 114: a pool thread claims every second task of its share", "parallel.c",
          "from_back ? now - ((uint64_t)1 << 32) : now + 1u",
          "from_back ? now - ((uint64_t)1 << 32) : now + 2u", "runtime"),
    Named("parallel.c 231: BYOC_NUM_THREADS clamped to 255", "parallel.c",
          "BYOC_POOL_MAX_WORKERS + 1 ? BYOC_POOL_MAX_WORKERS + 1 : (int32_t)v",
          "BYOC_POOL_MAX_WORKERS + 1 ? BYOC_POOL_MAX_WORKERS / 1 : (int32_t)v", "runtime"),
]

@dataclass(frozen=True)
class Judged:
    """A survivor shown equivalent by reading the code (what trivial compiler equivalence cannot see): no input,
    thread count or environment gives a different result. Named by its change, not by universalmutator's mutant
    number, which moves whenever anything earlier in the file changes: `original` is the line as the file has
    it and `mutated` universalmutator's rewrite of it (both without the indentation)."""
    file: str
    original: str
    mutated: str
    why: str


# Such a survivor leaves the kill rate's denominator as "equivalent (judged)" and the report prints the reason.
# When its line changes the entry matches nothing (tests/test_mutants_replay.py fails: judge it again or drop it).
JUDGED_EQUIVALENT = [
    Judged("parallel.c", "long long quota = -1, period = 0;", "long long quota = -0, period = 0;",
           "cgroup quota starts at 0 for -1: it is only compared `<= 0` where it was not overwritten, and both are"),
    Judged("runtime.c", "if (parse_small_uint(s, len, &i, 65535u, &lanes) != 0) return -1;",
           "if (parse_small_uint(s, len, &i, 65535u, &lanes) != 0) return -(1+1);",
           "byoc_dtype_parse returns -2 for -1 on a bad lane count: its contract is 0 on success, non-zero on "
           "failure, and its one caller tests `!= 0`"),
    Judged("cwriter.py", "prev_extent, prev = merged[-1]", "prev_extent, prev = merged[-0]",
           "coalesce() checks a dim against the first merged dim, not the last: with two or more merged dims the "
           "first's stride is at least the product of two later extents times the new stride, so the check never "
           "passes and the mutant only merges fewer loops (same elements, same order, same C results)"),
    Judged("elementwise.py", 'if dtype in ("int8", "int16"):', 'if dtype in  ( "int16","int8"):',
           "the tuple of a membership test (`dtype in (...)`) written in the other order: the same two strings"),
    Judged("gemm.py", "int64_t per_task = (INT64_C(1) << 20) / (panel_flops > 0 ? panel_flops : 1) + 1;",
           "int64_t per_task = (INT64_C(1) << 20) / (panel_flops > 0 ? panel_flops : 0) + 1;",
           "the GEMM's task size divides by 0 instead of 1 when a panel has no flops: every caller (dense, matmul, "
           "batch_matmul, conv2d in nn.py) returns before it when an extent is 0, so m >= 1 and panel_flops >= 2 NR"),
    Judged("image.py",
           "identity = index.shape[1] == 1 and (weight == 1).all() and (index[:, 0] == range(len(index))).all()",
           "identity = index.shape[1] <= 1 and (weight == 1).all() and (index[:, 0] == range(len(index))).all()",
           "an axis is the identity if it has `<= 1` taps for `== 1`: op/image.py's resize_taps gives every axis 1 "
           "(nearest, identity, empty), 2 (linear) or 4 (cubic) taps, never 0"),
    Judged("image.py",
           "identity = index.shape[1] == 1 and (weight == 1).all() and (index[:, 0] == range(len(index))).all()",
           "identity = index.shape[1] == (1-1) and (weight == 1).all() and (index[:, 0] == range(len(index))).all()",
           "no axis is taken as the identity: it then runs as one tap of weight 1.0 from an index table, "
           "acc += 1.0 * (double)x, exactly the value the direct index gives (resize's output is float32)"),
    Judged("shape.py",
           'at = " + ".join(f"s{a} * {L(own[a])}" if own[a] != 1 else f"s{a}" for a in range(axis + 1))',
           'at = " + ".join(f"s{a} * {L(own[a])}" if own[a] != 0 else f"s{a}" for a in range(axis + 1))',
           "pad's source offset writes `s * 1` where the input's stride is 1 (the same value) and `s` for `s * 0` "
           "where it is 0, which needs an empty later axis: every source index along it is padding, so that read "
           "is never evaluated"),
    Judged("shape.py", '_COPIES = ("reshape", "squeeze", "expand_dims", "nn.batch_flatten", "nn.dropout")',
           '_COPIES = ("reshape" , "expand_dims", "squeeze", "nn.batch_flatten", "nn.dropout")',
           "the copy ops' names in another order: RULES maps the same names to the same rule (looked up by name; "
           "the listing sorts them)"),
    Judged("shape.py",
           'return _row_copies(ctx, ctx.outputs[0], [f"in{i}" for i in range(len(ctx.inputs))], "out0", gather=True)',
           'return _row_copies(ctx, ctx.outputs[-1], [f"in{i}" for i in range(len(ctx.inputs))], "out0", gather=True)',
           "concatenate's output taken as outputs[-1] for outputs[0]: concatenate has exactly one output"),
    Judged("ck_dense.c", "if (rc != CK_OK) return rc;", "if (rc > CK_OK) return rc;",
           "batch_matmul_prepacked stops on `rc > CK_OK` for `rc != CK_OK`: ck_gemm_core returns CK_OK (0) or "
           "CK_EBADPARAM (1), never below 0"),
    Judged("ck_elementwise.c", "if (out_shape[d] == 1) continue;", "if (out_shape[d] <= 1) continue;",
           "a binary op skips dims of extent `<= 1` for `== 1`: a negative extent was refused and an extent 0 "
           "returned (nothing to compute) before this loop, so every extent here is at least 1"),
    Judged("ck_pool.c", "out = span < 0 ? -((-span) / stride) + 1 : (span + stride - 1) / stride + 1;",
           "out = span < 1 ? -((-span) / stride) + 1 : (span + stride - 1) / stride + 1;",
           "ceil-mode output size takes the negative-span form for `span < 1` for `span < 0`: at span 0 both forms "
           "give 1"),
    Judged("ck_pool.c", "const int64_t span = hi_w - 1 - p->dilation_w * (p->pool_w - 1) + p->pad_left;",
           "const int64_t span = hi_w % 1 - p->dilation_w * (p->pool_w - 1) + p->pad_left;",
           "average pool's whole-window columns end earlier (`hi_w % 1` is 0 for `hi_w - 1`): the columns it drops "
           "from the fast range get ck_avg_divisor, which counts rows * pool_w taps for a whole window, the same "
           "float (every window has a row inside: padding as large as the window is refused)"),
    Judged("ck_resize.c", "for (t0 = 0; t0 < job->width; t0 += CK_RESIZE_TILE) {",
           "for (t0 = 0; t0 <= job->width; t0 += CK_RESIZE_TILE) {",
           "the column tiles loop on `t0 <= width`: where the width is a multiple of the 256-column tile it adds a "
           "tile of 0 columns, whose rows compute their sources and write nothing (every column loop runs to n = 0)"),
    Judged("ck_activation.c",
           "int32_t ck_hard_swish(int64_t n, const float *in, float *out) { return ck_activation_any(1, n, in, out, "
           "0.0f, 0.0f); }",
           "int32_t ck_hard_swish(int64_t n, const float *in, float *out) { return ck_activation_any(1, n, in, out, "
           "0.1f, 0.0f); }",
           "ck_hard_swish passes alpha 0.1 for 0.0: the swish branch never reads alpha or beta (they are hard "
           "sigmoid's)"),
    Judged("ck_parallel.c", "if (grain < 1) grain = 1;", "if (grain < 1) grain = (1+1);",
           "a grain below 1 clamped to 2 for 1: no caller passes one (ck_grain and every caller's own expression give "
           "at least 1), so the clamp is never taken"),
]

@dataclass
class Result:
    group: str
    file: str
    mutant: str
    status: str          # killed, survived, equivalent, judged-equivalent, no-compile
    seconds: float = 0.0
    line: str = ""       # the mutated line
    by: str = ""         # which checks killed it
    before: str = ""     # the changed lines as the file has them, without indentation (_change)
    after: str = ""      # and as the mutant has them


def _object(source: Path, include: Path, out: Path, repo: Path) -> bytes | None:
    """The C file's object at -O2 (None: it does not compile). `include`: the directory of its own headers."""
    runtime = repo / "byoc_compiler" / "runtime"
    proc = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-c", "-I", str(include), "-I",
                           str(runtime / "include"), "-I", str(runtime / "src"), str(source), "-o", str(out)],
                          capture_output=True)
    return out.read_bytes() if proc.returncode == 0 else None


def _compiled(group: Group, source: Path, out: Path, repo: Path) -> bytes | None:
    """What the mutant compiles to (None: it does not compile): C's object file, Python's code object."""
    if group.language == "c":
        return _object(source, repo / group.directory, out, repo)
    try:
        tree = ast.parse(source.read_text())
        compile(tree, source.name, "exec")
    except (SyntaxError, ValueError):
        return None
    postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
                    any(a.name == "annotations" for a in n.names) for n in tree.body)
    for node in ast.walk(tree):         # docstrings are not code: a mutant of one is equivalent
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body = body[1:] or [ast.Pass()]
        if isinstance(body, list) and len(body) > 1:     # `pass` beside other statements compiles to nothing
            node.body = [b for b in body if not isinstance(b, ast.Pass)] or [ast.Pass()]
        if postponed and isinstance(node, (ast.arg, ast.FunctionDef)):   # PEP 563: never evaluated
            setattr(node, "annotation" if isinstance(node, ast.arg) else "returns", None)
    return ast.dump(tree).encode()


def _changed_line(original: str, mutated: str) -> str:
    """The mutated line, numbered (a removed line: '-' and the original text)."""
    a, b = original.splitlines(), mutated.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            return f"{i1 + 1}: " + (b[j1].strip() if j2 > j1 else "- " + a[i1].strip())
    return ""


def _change(original: str, mutated: str) -> tuple[str, str]:
    """The lines a mutant changes, as the file has them and as the mutant does (each without its indentation,
    joined by newlines): what JUDGED_EQUIVALENT names a mutant by."""
    a, b = original.splitlines(), mutated.splitlines()
    changes = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    return ("\n".join(x.strip() for op in changes for x in a[op[1]:op[2]]),
            "\n".join(x.strip() for op in changes for x in b[op[3]:op[4]]))


def _scratch(into: Path) -> Path:
    """The committed tree (HEAD) unpacked into `into`: the copy mutants are written into."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def _env(repo: Path) -> dict:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(repo), "HOME": str(repo),
            "PYTHONDONTWRITEBYTECODE": "1"}


def _pytest(repo: Path, args, what: str) -> tuple[bool, float]:
    # --basetemp of its own: the default base (/tmp/pytest-of-<user>) is shared with every concurrent session,
    # which prunes old directories in it; a survivor once "killed" here passed the same tests when run alone
    basetemp = repo.parent / "pytest-tmp"
    shutil.rmtree(basetemp, ignore_errors=True)
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist", "-p",
           "no:randomly", "-o", "addopts=", f"--basetemp={basetemp}", *args]
    start = time.time()
    try:
        proc = subprocess.run(cmd, cwd=repo, env=_env(repo), capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return True, time.time() - start
    if proc.returncode < 0:                    # the test process crashed on a signal (a mutant's segfault): caught
        return True, time.time() - start
    if proc.returncode not in (0, 1):          # 2-5: the run itself broke (collection, usage): not a kill
        raise RuntimeError(f"covering checks of {what} could not run:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.returncode == 1, time.time() - start


def _conformance(repo: Path, group: Group, file: str, data: Path) -> tuple[bool, float]:
    start = time.time()
    try:
        proc = subprocess.run([sys.executable, "bench/mutant_checks.py", group.name, str(data)], cwd=repo,
                              env=_env(repo), capture_output=True, text=True, timeout=CHECK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return True, time.time() - start
    if proc.returncode not in (0, 1) and proc.returncode > 0:   # < 0: the run crashed on a signal: caught
        raise RuntimeError(f"the conformance check of {file} could not run:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.returncode != 0, time.time() - start


def _run_checks(repo: Path, group: Group, file: str, data: Path | None) -> tuple[str, float]:
    """(what killed it, or "" if nothing did; seconds): the covering checks of `file` against the mutated copy.
    data None: the conformance check already ran (a recheck)."""
    if group.name == "kernels":
        seconds = 0.0
        for stage in COVERING[file]:
            killed, more = _pytest(repo, stage, file)
            seconds += more
            if killed:
                return "kernel tests" if stage is COVERING[file][0] else "later kernel checks", seconds
        return "", seconds
    killed, seconds = _conformance(repo, group, file, data) if data is not None else (False, 0.0)
    if killed or not group.tests:
        return ("conformance batches" if killed else ""), seconds
    killed, more = _pytest(repo, group.tests, file)
    return ("tests" if killed else ""), seconds + more


def _test(repo: Path, group: Group, file: str, text: str, data: Path | None = None) -> tuple[str, float]:
    path = repo / group.directory / file
    original = path.read_text()
    path.write_text(text)
    try:
        return _run_checks(repo, group, file, data)
    finally:
        path.write_text(original)


def _candidates(group: Group, file: str, work: Path, source: Path) -> list[Path]:
    """universalmutator's mutants of `file` as `source` has it: the scratch copy's (never the working tree's,
    which may change while a campaign runs), or an earlier commit's."""
    out = work / "generated" / source.parent.name / file
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mutate", str(source), group.language, "--noCheck",
                    "--mutantDir", str(out)], capture_output=True, check=True, cwd=work)
    suffix = Path(file).suffix
    return sorted(out.glob(f"*.mutant.*{suffix}"), key=lambda p: int(p.name.split(".")[-2]))


def _saved_cases(repo: Path, work: Path) -> Path:
    """The conformance batches and their unmutated host C, saved once (bench/mutant_checks.py save)."""
    data = work / "cases"
    if not (data / "batches.pkl").exists():
        subprocess.run([sys.executable, "bench/mutant_checks.py", "save", str(data)], cwd=repo, env=_env(repo),
                       check=True, capture_output=True)
    return data


def campaign(repo: Path, work: Path, group: Group, files: list[str], per_file: int, seed: int,
             results: list[Result], keep=lambda: None) -> list[Result]:
    """Appends to `results` (and calls `keep` after each tested mutant: a long campaign stopped early keeps
    what it measured)."""
    data = _saved_cases(repo, work) if group.name != "kernels" else None
    for file in files:
        original = (repo / group.directory / file).read_text()
        reference = _compiled(group, repo / group.directory / file, work / "original.o", repo)
        pool = _candidates(group, file, work, repo / group.directory / file)
        random.Random(f"{seed}:{file}").shuffle(pool)
        tested = 0
        for mutant in pool:
            if tested == per_file:
                break
            text = mutant.read_text()
            probe = work / "probe" / file
            probe.parent.mkdir(parents=True, exist_ok=True)
            probe.write_text(text)
            obj = _compiled(group, probe, work / "mutant.o", repo)
            line, (before, after) = _changed_line(original, text), _change(original, text)
            if obj is None or obj == reference:
                results.append(Result(group.name, file, mutant.name, "no-compile" if obj is None else "equivalent",
                                      line=line, before=before, after=after))
                continue
            by, seconds = _test(repo, group, file, text, data)
            tested += 1
            results.append(Result(group.name, file, mutant.name, "killed" if by else "survived", seconds, line, by,
                                  before, after))
            print(f"  {file} {mutant.name}: {results[-1].status} {by} ({seconds:.0f} s) {line}", flush=True)
            keep()
    return results


def _port(then: str, mutant: str, now: str) -> str | None:
    """The mutant of `then` (the campaign's source) applied to `now` (the file today): its changed lines
    replaced where they and two lines either side occur exactly once in `now`; None where they do not."""
    if then == now:
        return mutant
    a, b = then.splitlines(keepends=True), mutant.splitlines(keepends=True)
    changes = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(changes) != 1:
        return None
    _, i1, i2, j1, j2 = changes[0]
    lo, hi = max(0, i1 - 2), min(len(a), i2 + 2)
    old = "".join(a[lo:hi])
    new = "".join(a[lo:i1] + b[j1:j2] + a[i2:hi])
    return now.replace(old, new) if now.count(old) == 1 else None


def _survivor_text(repo: Path, work: Path, r: Result, then: str | None) -> str | None:
    """The survivor's mutated file for today's tree: made again (mutate is deterministic) from the campaign's
    source (`then`: its commit; None: today's file) and ported onto today's file."""
    group = GROUPS[r.group]
    now = (repo / group.directory / r.file).read_text()
    source = repo / group.directory / r.file
    if then is not None:
        source = work / "then" / r.file
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(subprocess.run(["git", "-C", str(ROOT), "show", f"{then}:{group.directory}/{r.file}"],
                                         capture_output=True, text=True, check=True).stdout)
    (mutant,) = [m for m in _candidates(group, r.file, work, source) if m.name == r.mutant]
    return _port(source.read_text(), mutant.read_text(), now)


def recheck(repo: Path, work: Path, results: list[Result], then: str | None = None) -> list[Result]:
    """The same results with every survivor tested again against today's checks; `then`: the commit the
    campaign ran on (its survivors are ported onto files changed since, or reported as not ported)."""
    out = []
    for r in results:
        if r.status == "survived":
            group = GROUPS[r.group]
            text = _survivor_text(repo, work, r, then)
            if text is None:
                print(f"  {r.file} {r.mutant}: not ported ({r.file} changed around line {r.line})", flush=True)
                out.append(r)
                continue
            before, after = _change((repo / group.directory / r.file).read_text(), text)
            reference = _compiled(group, repo / group.directory / r.file, work / "original.o", repo)
            probe = work / "probe" / r.file      # the same name as the original: it is in the object file
            probe.parent.mkdir(parents=True, exist_ok=True)
            probe.write_text(text)
            if _compiled(group, probe, work / "mutant.o", repo) == reference:    # by a rule added since
                out.append(Result(r.group, r.file, r.mutant, "equivalent", line=r.line, before=before, after=after))
                continue
            if _judgement(r.file, before, after) is not None:     # judged since the campaign: no need to test
                out.append(replace(r, before=before, after=after))
                continue
            by, seconds = _test(repo, group, r.file, text)
            r = Result(r.group, r.file, r.mutant, "killed" if by else "survived", seconds, r.line, by, before, after)
            print(f"  {r.file} {r.mutant}: {r.status} {by} ({seconds:.0f} s) {r.line}", flush=True)
        out.append(r)
    return out


def named(repo: Path) -> list[Result]:
    results = []
    work = repo.parent
    for m in NAMED:
        group = GROUPS[m.group]
        text = (repo / group.directory / m.file).read_text()
        if text.count(m.original) != 1:
            raise SystemExit(f"named mutant {m.name!r}: {m.original!r} occurs {text.count(m.original)} times in "
                             f"{m.file}; update NAMED in bench/mutants.py")
        mutated = text.replace(m.original, m.mutated)
        probe = work / "probe" / m.file
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text(mutated)
        if _compiled(group, probe, work / "named.o", repo) is None:
            raise SystemExit(f"named mutant {m.name!r} does not compile; update NAMED in bench/mutants.py")
        data = _saved_cases(repo, work) if group.name != "kernels" else None
        by, seconds = _test(repo, group, m.file, mutated, data)
        results.append(Result(m.group, m.file, m.name, "killed" if by else "survived", seconds, m.mutated, by))
        print(f"  {m.name}: {results[-1].status} {by} ({seconds:.0f} s)", flush=True)
    return results


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _judgement(file: str, before: str, after: str) -> str | None:
    """The reason JUDGED_EQUIVALENT gives for this change of `file` (None: not judged)."""
    for j in JUDGED_EQUIVALENT:
        if (j.file, j.original, j.mutated) == (file, before, after):
            return j.why
    return None


def judged(results: list[Result]) -> list[Result]:
    """Survivors listed in JUDGED_EQUIVALENT marked judged-equivalent (the reason goes in `by`). A result without
    its change (a campaign's JSON from before `before`/`after` were kept) matches only once --recheck made it."""
    out = []
    for r in results:
        why = _judgement(r.file, r.before, r.after) if r.before or r.after else None
        out.append(replace(r, status="judged-equivalent", by=why) if r.status == "survived" and why else r)
    return out


def stale_judgements(repo: Path = ROOT) -> list[Judged]:
    """JUDGED_EQUIVALENT entries whose line is no longer exactly once in its file (nothing can match them)."""
    files = {f: g for g in GROUPS.values() for f in g.files}
    stale = []
    for j in JUDGED_EQUIVALENT:
        path = repo / files[j.file].directory / j.file if j.file in files else None
        lines = [x.strip() for x in path.read_text().splitlines()] if path is not None and path.exists() else []
        if lines.count(j.original) != 1:
            stale.append(j)
    return stale


def _tally(results: list[Result]) -> str:
    count = {s: sum(r.status == s for r in results)
             for s in ("no-compile", "equivalent", "judged-equivalent", "killed", "survived")}
    n = count["killed"] + count["survived"]
    low, high = wilson(count["killed"], n)
    return (f"made {len(results)}: did not compile {count['no-compile']}, equivalent {count['equivalent']} "
            f"(+ {count['judged-equivalent']} judged), "
            f"killed {count['killed']}, survived {count['survived']}; kill rate {count['killed']}/{n} = "
            f"{count['killed'] / max(n, 1):.1%} (95% Wilson interval {low:.1%} - {high:.1%})")


def report(results: list[Result]) -> str:
    groups = sorted({r.group for r in results})
    lines = [f"{g}: {_tally([r for r in results if r.group == g])}" for g in groups] if len(groups) > 1 else []
    lines.append(f"all: {_tally(results)}")
    lines += [f"  survived: {r.group} {r.file} {r.mutant}: {r.line}" for r in results if r.status == "survived"]
    lines += [f"  judged equivalent: {r.group} {r.file} {r.mutant}: {r.line} ({r.by})" for r in results
              if r.status == "judged-equivalent"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", nargs="*", default=list(GROUPS), choices=list(GROUPS),
                        help="kernels, runtime, writers (default: all)")
    parser.add_argument("--files", nargs="*", help="only these files of the groups")
    parser.add_argument("--per-file", type=int, default=3, help="tested (compiling, non-equivalent) mutants per file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--named", action="store_true", help="only the named realistic mutants")
    parser.add_argument("--json", help="write every result here")
    parser.add_argument("--recheck", help="a campaign's --json: run its survivors' checks again (e.g. after "
                        "strengthening a test, or with the slower tests a group added since)")
    parser.add_argument("--then", help="with --recheck: the commit the campaign ran on, where a mutated file has "
                        "changed since (its survivors are made from that commit's file and ported onto today's)")
    args = parser.parse_args(argv)
    if shutil.which("mutate") is None and not args.named:
        raise SystemExit("universalmutator is not installed: pip install '.[bench]'")
    with tempfile.TemporaryDirectory(prefix="byoc-mutants-") as tmp:
        work = Path(tmp)
        repo = _scratch(work / "repo")
        for j in stale_judgements(repo):
            print(f"warning: JUDGED_EQUIVALENT's {j.file} entry names a line the file no longer has "
                  f"({j.original!r}): judge that survivor again", flush=True)
        start = time.time()
        if args.named:
            results = named(repo)
        elif args.recheck:
            results = recheck(repo, work, judged([Result(**r) for r in json.loads(Path(args.recheck).read_text())]),
                              args.then)
        else:
            results = []

            def keep():
                if args.json:
                    Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
            for name in args.groups:
                group = GROUPS[name]
                files = [f for f in group.files if args.files is None or f in args.files]
                campaign(repo, work, group, files, args.per_file, args.seed, results, keep)
        results = judged(results)
        print(report(results))
        print(f"{time.time() - start:.0f} s")
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0 if all(r.status != "survived" for r in results) or not args.named else 1


if __name__ == "__main__":
    sys.exit(main())
