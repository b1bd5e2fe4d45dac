"""A fixed sample of the mutation campaign's mutants (bench/mutants.py, docs/testing.md), replayed: the
checks must keep killing them.

Each case copies ccompiler's kernel sources, applies one named mutant (a realistic bug: a window off by
one, a bias dropped on one channel, BatchNorm's epsilon dropped, softmax without max subtraction,
requantize rounding or arithmetic of the wrong form), builds the library (gcc -O0) and runs
the very test functions of tests/test_ccompiler_kernels.py (and _qnn.py) that cover the mutated code against it: they
must fail. The same tests pass against the real library in that file.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import needs
from shared_library import compile_objects_shared, kernel_units, object_command

import test_ccompiler_kernels as TK
import test_ccompiler_qnn as TQ
import test_runtime_c_api as TA
from byoc_compiler.contrib.ccompiler import kernels as K
from byoc_compiler.runtime import include_dir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import mutants  # noqa: E402 - bench/mutants.py: the named mutants, one table for the campaign and this replay

# named mutant -> the kernel tests (function, arguments after the library) that must fail against it; the
# int8 tests take the ctypes library itself
REPLAY = {
    "pool window off by one": [(TK.test_pool2d_random_geometries, (0,))],
    "pool window off by one (max pool folded down the window)": [(TK.test_pool2d_random_geometries, (0,))],
    "bias dropped on one channel (dense epilogue)": [(TK.test_dense_fused_epilogue, (17, 70, 300, "bias", True, 0))],
    "BatchNorm epsilon dropped": [(TK.test_batch_norm_inference, (1, 1))],
    "softmax without max subtraction": [(TK.test_softmax_rows_with_large_logits, ())],
    "requantize rounding half away from zero instead of to even (qadd, TFLite form)":
        [(TQ.test_qadd_fixed_point_rounds_ties_to_even, TQ.QADD_FIXED[0])],
    "requantize arithmetic swapped: onnxruntime's float form for TFLite's fixed point (qadd)":
        [(TQ.test_qadd_fixed_point_rounds_ties_to_even, TQ.QADD_FIXED[1])],
    "Winograd output transform: A^T's last row with a sign dropped (int8)":
        [(TQ.test_qconv2d_winograd_equals_numpy, (TQ.WINOGRAD[0],))],
    "Winograd input transform: the second channel of the last pair dropped (int8)":
        [(TQ.test_qconv2d_winograd_equals_numpy, (TQ.WINOGRAD[1],))],
}


@pytest.fixture(scope="module")
def kernel_objects() -> dict[str, Path]:
    """Every source of the library (the kernels, the runtime's pool and last error) compiled once (gcc -O0, the
    replay's level, as model builds compile them): a mutant's library recompiles only its own file."""
    needs.programs("gcc")
    units = kernel_units(K.SOURCES)
    objects, _ = compile_objects_shared("gcc", ["-O0"], units, "libck-replay.so")
    return {src.name: obj for (src, _), obj in zip(units, objects)}


def _mutant_library(name: str, tmp: Path, objects: dict[str, Path]) -> TK.CkLib:
    (mutant,) = [m for m in mutants.NAMED if m.name == name]
    src = tmp / "kernels"
    shutil.copytree(K.KERNEL_DIR, src)
    path = src / mutant.file
    text = path.read_text()
    assert text.count(mutant.original) == 1, f"{name}: the named mutant no longer applies; update bench/mutants.py"
    path.write_text(text.replace(mutant.original, mutant.mutated))
    obj = tmp / "mutant.o"
    proc = subprocess.run(object_command("gcc", ["-O0"], path, obj, [include_dir(), src]), capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    lib = tmp / "libck-mutant.so"
    linked = [str(obj if f == mutant.file else o) for f, o in objects.items()]
    proc = subprocess.run(["gcc", "-shared", *linked, "-o", str(lib), *K.LDFLAGS], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return TK.CkLib(lib)


@pytest.mark.parametrize("name", list(REPLAY))
def test_kernel_tests_kill_the_mutant(name, tmp_path, kernel_objects):
    ck = _mutant_library(name, tmp_path, kernel_objects)
    for test, args in REPLAY[name]:
        with pytest.raises(AssertionError):
            test(ck.lib if test.__module__ == TQ.__name__ else ck, *args)


# ---- the runtime and the host C writers ---------------------------------------------------------------
# byoc_compiler is copied and patched with the named mutant, and a child interpreter on that copy builds a
# small model host-only (gcc -O0: a mean over an axis plus a constant from the params blob) and runs its
# runner, so the Python that writes the C, the compiler and the runner all see the mutant. It prints
# "same" when the outputs equal the float64 reference's, "differs" or "raised ..." when not.
CHILD = r"""
import sys
import numpy as np
from byoc_compiler import op
from byoc_compiler.backend.build import build
from byoc_compiler.check import deterministic_inputs
from byoc_compiler.ir import Function, IRModule, Var, const
from byoc_compiler.ir.types import TensorType
from byoc_compiler.testing import run_reference

x = Var("x", TensorType((3, 5, 4), "float32"))
bias = const(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
mod = IRModule({"main": Function([x], op.add(op.mean(x, axis=[1]), bias))})
inputs = deterministic_inputs(mod)
want = run_reference(mod, inputs)
try:
    got = build(mod, toolchain="gcc", opt="-O0").run_runner(inputs)
except Exception as exc:
    print("raised", type(exc).__name__, " ".join(str(exc).split())[:300])
    sys.exit(1)
same = all(np.allclose(g, w, rtol=1e-5, atol=1e-6) for g, w in zip(got, want))
print("same" if same else "differs")
sys.exit(0 if same else 1)
"""

# named mutant (None: the unpatched copy) -> what the child must print
PACKAGE_REPLAY = {
    None: "same",
    "mean not divided by the count (host C writer)": "differs",
    "params blob: a tensor's shape read from its second dimension (runtime)": "raised",
}


def _patched_copy(name, tmp: Path) -> Path:
    import byoc_compiler

    package = Path(byoc_compiler.__file__).resolve().parent
    copy = tmp / "copy"
    shutil.copytree(package, copy / "byoc_compiler", ignore=shutil.ignore_patterns("__pycache__"))
    if name is not None:
        (mutant,) = [m for m in mutants.NAMED if m.name == name]
        directory = Path(mutants.GROUPS[mutant.group].directory).relative_to("byoc_compiler")
        path = copy / "byoc_compiler" / directory / mutant.file
        text = path.read_text()
        assert text.count(mutant.original) == 1, f"{name}: the named mutant no longer applies; update bench/mutants.py"
        path.write_text(text.replace(mutant.original, mutant.mutated))
    return copy


@pytest.mark.parametrize("name", list(PACKAGE_REPLAY), ids=lambda n: n or "unpatched")
def test_model_check_kills_the_package_mutant(name, tmp_path):
    needs.programs("gcc")
    copy = _patched_copy(name, tmp_path)
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.stdout.startswith(PACKAGE_REPLAY[name]), proc.stdout + proc.stderr[-2000:]
    assert proc.returncode == (0 if name is None else 1), proc.stdout + proc.stderr[-2000:]


# ---- sampled campaign mutants of the runtime C ------------------------------------------------------------
# The core (runtime.c with core.c, parallel.c) copied and patched with the mutant, built as a library, and the
# tests of tests/test_runtime_c_api.py written for it run against that library: they must fail.
def _every_task_once_on_3_threads(api, monkeypatch):
    assert api.byoc_set_num_threads(3) == 0
    TA.test_parallel_for_runs_every_task_once(api, 3, 7)


SAMPLED_REPLAY = {   # mutants.SAMPLED name -> the tests that must fail, as a call (library, monkeypatch)
    "core.c 33: a message vsnprintf cannot format keeps its prefix":
        lambda api, monkeypatch: TA.test_a_message_that_cannot_be_formatted_leaves_no_partial_text(api),
    "parallel.c 114: a pool thread claims every second task of its share": _every_task_once_on_3_threads,
    "parallel.c 231: BYOC_NUM_THREADS clamped to 255":
        lambda api, monkeypatch: TA.test_thread_count_from_the_environment_is_kept_and_clamped(api, monkeypatch,
                                                                                              "257", 256),
}


@pytest.mark.parametrize("name", list(SAMPLED_REPLAY), ids=lambda n: n.split(":")[0].replace(" ", "-"))
def test_runtime_api_tests_kill_the_sampled_mutant(name, tmp_path, monkeypatch):
    from byoc_compiler import runtime

    (mutant,) = [m for m in mutants.SAMPLED if m.name == name]
    src = tmp_path / "src"
    shutil.copytree(runtime.source_dir(), src)
    path = src / mutant.file
    text = path.read_text()
    assert text.count(mutant.original) == 1, f"{name}: the sampled mutant no longer applies; update bench/mutants.py"
    path.write_text(text.replace(mutant.original, mutant.mutated))
    api = TA.build_api([src / s.name for s in runtime.runtime_sources("aot")], tmp_path / "libmutant.so")
    with pytest.raises(AssertionError):
        SAMPLED_REPLAY[name](api, monkeypatch)


# ---- survivors judged equivalent ---------------------------------------------------------------------------------
# mutants.JUDGED_EQUIVALENT names each by its change (the line as the file has it, universalmutator's rewrite). Once
# that line changes the judgement is about code that no longer exists and matches nothing: judge it again or drop it.
def _judged_id(j) -> str:
    same_file = [k for k in mutants.JUDGED_EQUIVALENT if k.file == j.file]
    return f"{j.file}-{same_file.index(j)}"


@pytest.mark.parametrize("judgement", mutants.JUDGED_EQUIVALENT, ids=_judged_id)
def test_a_judged_equivalent_survivor_is_recognised_by_its_change(judgement):
    files = {f: g for g in mutants.GROUPS.values() for f in g.files}
    path = mutants.ROOT / files[judgement.file].directory / judgement.file
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.strip() == judgement.original]
    assert len(at) == 1, (f"{judgement.file} has {len(at)} lines {judgement.original!r}: judge that survivor again "
                          f"(or drop its entry) in bench/mutants.py's JUDGED_EQUIVALENT")
    indent = lines[at[0]][:len(lines[at[0]]) - len(lines[at[0]].lstrip())]
    mutated = "".join(lines[:at[0]] + [indent + judgement.mutated + "\n"] + lines[at[0] + 1:])
    before, after = mutants._change(text, mutated)
    survivor = mutants.Result("g", judgement.file, "m", "survived", before=before, after=after)
    (marked,) = mutants.judged([survivor])
    assert (marked.status, marked.by) == ("judged-equivalent", judgement.why)
    # the same line changed any other way is not covered by the judgement
    other = mutants.Result("g", judgement.file, "m", "survived", before=before, after=after + " ")
    assert mutants.judged([other])[0].status == "survived"
