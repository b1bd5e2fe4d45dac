"""ck_hard_sigmoid and ck_hard_swish (targets/ccompiler/kernels/ck_activation.c) through ctypes against
numpy in float64, special values included (NaN stays NaN, the clamp's corners, infinities), built with gcc
and clang at -O0 and -O3 and once under ASan + UBSan, on every instruction set this CPU runs and at 1 and 3
threads; and the EfficientNet-lite backbone they are for is one ccompiler region (tests/test_zoo_modern.py runs
it built, against onnxruntime)."""
from __future__ import annotations

import ctypes
import os
import subprocess

import numpy as np
import pytest

import needs

from byoc_compiler import partition_for, zoo
from byoc_compiler.ir import post_order

from byoc_compiler.contrib.ccompiler import kernels as K

SANITIZERS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
BUILDS = {f"{cc}{opt}": (cc, [opt]) for cc in ("gcc", "clang") for opt in ("-O0", "-O3")}
f32p = ctypes.POINTER(ctypes.c_float)
SPECIAL = np.array([np.nan, np.inf, -np.inf, -3.0, 3.0, -2.5, 2.5, 0.0, -0.0, 1e-30, -1e30, 1e30, 6.0, -6.0],
                   np.float32)


# the activations follow the gemm core's instruction set (ck_microkernel.c) and split on the pool (ck_parallel.c)
SOURCES = [str(K.KERNEL_DIR / name) for name in ("ck_activation.c", "ck_microkernel.c", "ck_parallel.c")]


def _compile(tmp_path, cc, flags):
    needs.programs(cc)
    out = tmp_path / f"libck-activation-{cc}.so"
    cmd = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", *flags, "-I", str(K.INCLUDE_DIR),
           *SOURCES, *K.standalone_args(), "-o", str(out), *K.LDFLAGS]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return out


@pytest.fixture(scope="module", params=list(BUILDS))
def lib(request, tmp_path_factory):
    so = ctypes.CDLL(str(_compile(tmp_path_factory.mktemp("ck"), *BUILDS[request.param])))
    so.ck_hard_sigmoid.argtypes = [ctypes.c_int64, f32p, f32p, ctypes.c_float, ctypes.c_float]
    so.ck_hard_swish.argtypes = [ctypes.c_int64, f32p, f32p]
    so.ck_gemm_kernel_name.restype = so.ck_gemm_kernel_at.restype = ctypes.c_char_p
    return so


def _inputs():
    rng = np.random.default_rng(15)
    return np.concatenate([SPECIAL, rng.uniform(-8, 8, 1000).astype(np.float32)])


def _expect(values, got, want):
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(got, want.astype(np.float32), rtol=5e-7, atol=1e-7, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want)), "NaN where the reference has none, or the other way"


@pytest.mark.parametrize("alpha,beta", [(0.2, 0.5), (1 / 6, 0.5), (-0.7, 0.1)], ids=["onnx-default", "mobilenetv3",
                                                                                       "negative-slope"])
def test_hard_sigmoid(lib, alpha, beta):
    x = _inputs()
    out = np.full_like(x, 7.0)
    assert lib.ck_hard_sigmoid(x.size, x.ctypes.data_as(f32p), out.ctypes.data_as(f32p), alpha, beta) == 0
    with np.errstate(invalid="ignore"):
        want = np.clip(np.float32(alpha) * x.astype(np.float64) + np.float32(beta), 0.0, 1.0)
    _expect(x, out, want)


def test_hard_swish_in_place(lib):
    x = _inputs()
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(np.float64) * np.clip(x.astype(np.float64) / 6.0 + 0.5, 0.0, 1.0)
    assert lib.ck_hard_swish(x.size, x.ctypes.data_as(f32p), x.ctypes.data_as(f32p)) == 0   # out aliases in
    _expect(x, x, want)


def _kernels(lib) -> list[bytes]:
    names, i = [], 0
    while lib.ck_gemm_kernel_at(i) is not None:
        names.append(lib.ck_gemm_kernel_at(i))
        i += 1
    return names


def test_every_instruction_set_and_thread_count(lib):
    """Three ranges of the pool and a ragged tail (40,000 elements), in place and not, on every kernel this CPU
    runs: against numpy, and 3 threads bit-equal to 1."""
    rng = np.random.default_rng(16)
    x = np.concatenate([np.tile(SPECIAL, 10), rng.uniform(-8, 8, 40_000 - 10 * SPECIAL.size).astype(np.float32)])
    with np.errstate(invalid="ignore", over="ignore"):
        swish = x.astype(np.float64) * np.clip(x.astype(np.float64) / 6.0 + 0.5, 0.0, 1.0)
        sigmoid = np.clip(np.float32(0.2) * x.astype(np.float64) + np.float32(0.5), 0.0, 1.0)
    default, ran = lib.ck_gemm_kernel_name(), []
    try:
        for name in _kernels(lib):
            if lib.ck_gemm_use_kernel(name) != 0:
                continue  # this CPU lacks it
            outs = []
            for threads in (1, 3):
                lib.byoc_set_num_threads(threads)
                y, z = np.full_like(x, 7.0), x.copy()
                assert lib.ck_hard_sigmoid(x.size, x.ctypes.data_as(f32p), y.ctypes.data_as(f32p), 0.2, 0.5) == 0
                assert lib.ck_hard_swish(z.size, z.ctypes.data_as(f32p), z.ctypes.data_as(f32p)) == 0
                _expect(x, y, sigmoid)
                _expect(x, z, swish)
                outs.append((y, z))
            assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(*outs)), name
            ran.append(name)
    finally:
        lib.byoc_set_num_threads(1)
        assert lib.ck_gemm_use_kernel(default) == 0
    assert ran and ran[-1].startswith(b"baseline-")


def test_rejects_bad_parameters(lib):
    x = np.ones(4, np.float32)
    p = x.ctypes.data_as(f32p)
    assert lib.ck_hard_swish(-1, p, p) != 0 and lib.ck_hard_swish(4, None, p) != 0
    assert lib.ck_hard_sigmoid(4, p, None, 0.2, 0.5) != 0


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_under_sanitizers(cc, tmp_path):
    """A sanitized build called from a C driver (no ASan runtime in Python needed): every special value."""
    needs.programs(cc)
    driver = tmp_path / "driver.c"
    driver.write_text("""#include <math.h>
#include <stdio.h>
#include "byoc_ck.h"
int main(void) {
  float x[] = {NAN, INFINITY, -INFINITY, -3.0f, 3.0f, 0.0f, -0.0f, 1e-30f, -1e30f, 1e30f, 6.0f, -6.0f, 0.5f};
  float y[sizeof x / sizeof x[0]];
  const int64_t n = (int64_t)(sizeof x / sizeof x[0]);
  if (ck_hard_swish(n, x, y) || ck_hard_sigmoid(n, x, y, 0.2f, 0.5f) || ck_hard_swish(n, y, y)) return 1;
  if (ck_hard_swish(-1, x, y) == 0) return 2;
  printf("ok %g\\n", (double)y[4]);
  return 0;
}
""")
    exe = tmp_path / "driver"
    cmd = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", *SANITIZERS, "-I", str(K.INCLUDE_DIR), str(driver),
           *SOURCES, *K.standalone_args(), "-o", str(exe), *K.LDFLAGS]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True,
                         env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1"))
    assert run.returncode == 0 and run.stdout.startswith("ok") and "runtime error" not in run.stderr, run.stderr


def test_efficientnet_lite_backbone_is_one_ccompiler_region():
    """HardSwish and the squeeze-excite HardSigmoid no longer split the backbone into host steps."""
    part = partition_for("ccompiler", zoo.get("efficientnet_lite_tiny"))
    regions = [f for f in part.functions.values() if f.attrs.get("Compiler") == "ccompiler"]
    host = [n.op.name for n in post_order(part["main"].body) if hasattr(getattr(n, "op", None), "name")]
    assert len(regions) == 1 and host == [], host
