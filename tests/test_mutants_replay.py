"""A fixed sample of the mutation campaign's mutants (bench/mutants.py, docs/testing.md), replayed: the
kernel tests must keep killing them.

Each case copies ccompiler's kernel sources, applies one named mutant (a realistic bug: a window off by
one, a bias dropped on one channel, BatchNorm's epsilon dropped, softmax without max subtraction,
requantize rounding or arithmetic of the wrong form), builds the library (gcc -O0) and runs
the very test functions of tests/test_ccompiler_kernels.py (and _qnn.py) that cover the mutated code against it: they
must fail. The same tests pass against the real library in that file.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import needs

import test_ccompiler_kernels as TK
import test_ccompiler_qnn as TQ
from byoc_compiler.contrib.ccompiler import kernels as K

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import mutants  # noqa: E402 - bench/mutants.py: the named mutants, one table for the campaign and this replay

# named mutant -> the kernel tests (function, arguments after the library) that must fail against it; the
# int8 tests take the ctypes library itself
REPLAY = {
    "pool window off by one": [(TK.test_pool2d_random_geometries, (0,))],
    "bias dropped on one channel (dense epilogue)": [(TK.test_dense_fused_epilogue, (17, 70, 300, "bias", True, 0))],
    "BatchNorm epsilon dropped": [(TK.test_batch_norm_inference, (1, 1))],
    "softmax without max subtraction": [(TK.test_softmax_rows_with_large_logits, ())],
    "requantize rounding half away from zero instead of to even (qadd, TFLite form)":
        [(TQ.test_qadd_fixed_point_rounds_ties_to_even, TQ.QADD_FIXED[0])],
    "requantize arithmetic swapped: onnxruntime's float form for TFLite's fixed point (qadd)":
        [(TQ.test_qadd_fixed_point_rounds_ties_to_even, TQ.QADD_FIXED[1])],
}


def _mutant_library(name: str, tmp: Path) -> TK.CkLib:
    needs.programs("gcc")
    (mutant,) = [m for m in mutants.NAMED if m.name == name]
    src = tmp / "kernels"
    shutil.copytree(K.KERNEL_DIR, src)
    path = src / mutant.file
    text = path.read_text()
    assert text.count(mutant.original) == 1, f"{name}: the named mutant no longer applies; update bench/mutants.py"
    path.write_text(text.replace(mutant.original, mutant.mutated))
    lib = tmp / "libck-mutant.so"
    cmd = ["gcc", *TK.WARNINGS, "-O0", "-I", str(src), *(str(src / s.name) for s in K.SOURCES),
           *K.standalone_args(), "-o", str(lib), *K.LDFLAGS]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return TK.CkLib(lib)


@pytest.mark.parametrize("name", list(REPLAY))
def test_kernel_tests_kill_the_mutant(name, tmp_path):
    ck = _mutant_library(name, tmp_path)
    for test, args in REPLAY[name]:
        with pytest.raises(AssertionError):
            test(ck.lib if test.__module__ == TQ.__name__ else ck, *args)
