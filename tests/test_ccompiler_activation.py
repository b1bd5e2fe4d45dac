"""ck_hard_sigmoid and ck_hard_swish (targets/ccompiler/kernels/ck_activation.c) through ctypes against
numpy in float64, special values included (NaN stays NaN, the clamp's corners, infinities), built with gcc
and clang at -O0 and -O3 and under ASan + UBSan (the portable loops; every instruction set and thread counts:
tests/test_ccompiler_kernels.py); and the EfficientNet-lite backbone they are for is one ccompiler region
(tests/test_zoo_modern.py runs it built, against onnxruntime)."""
from __future__ import annotations

import ctypes
import os
import subprocess

import numpy as np
import pytest

import needs
from sanitizer_rerun import DEFAULT_BUILDS
from shared_library import compile_shared

from byoc_compiler import partition_for, zoo
from byoc_compiler.ir import post_order

from byoc_compiler.contrib.ccompiler import kernels as K

SANITIZERS = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
BUILDS = {f"{cc}{opt}": (cc, [opt]) for cc in ("gcc", "clang") for opt in ("-O0", "-O3")}
f32p = ctypes.POINTER(ctypes.c_float)
SPECIAL = np.array([np.nan, np.inf, -np.inf, -3.0, 3.0, -2.5, 2.5, 0.0, -0.0, 1e-30, -1e30, 1e30, 6.0, -6.0],
                   np.float32)


# the activations follow the gemm core's instruction set (ck_microkernel.c) and split on the pool (ck_parallel.c);
# here the portable loops alone (CK_NO_DISPATCH keeps these six builds cheap): the AVX2/AVX-512 builds and the
# thread counts are tested on the whole library in tests/test_ccompiler_kernels.py
SOURCES = ["-DCK_NO_DISPATCH", *(str(K.KERNEL_DIR / name) for name in ("ck_activation.c", "ck_microkernel.c",
                                                                       "ck_parallel.c"))]


def _compile(cc, flags):
    needs.programs(cc)
    return compile_shared([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", *flags, "-I",
                           str(K.INCLUDE_DIR), *SOURCES, *K.standalone_args(), *K.LDFLAGS], f"libck-activation-{cc}.so")


# the default run: gcc -O3 and clang -O0, as the kernel suite (sanitizer_rerun.DEFAULT_BUILDS); the other two
# and clang's sanitizers with `every_toolchain`
@pytest.fixture(scope="module", params=[
    pytest.param(b, marks=[] if b in DEFAULT_BUILDS else [pytest.mark.every_toolchain]) for b in BUILDS])
def lib(request):
    so = ctypes.CDLL(str(_compile(*BUILDS[request.param])))
    so.ck_hard_sigmoid.argtypes = [ctypes.c_int64, f32p, f32p, ctypes.c_float, ctypes.c_float]
    so.ck_hard_swish.argtypes = [ctypes.c_int64, f32p, f32p]
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


@pytest.mark.parametrize("input_first", [True, False], ids=["input-below-output", "input-above-output"])
def test_separate_buffers_in_either_order(lib, input_first):
    """Input and output side by side in one allocation, either one first: only the same address is in place."""
    x = _inputs()
    both = np.full(2 * x.size, 7.0, np.float32)
    src, dst = (both[:x.size], both[x.size:]) if input_first else (both[x.size:], both[:x.size])
    src[:] = x
    with np.errstate(invalid="ignore", over="ignore"):
        want = x.astype(np.float64) * np.clip(x.astype(np.float64) / 6.0 + 0.5, 0.0, 1.0)
    assert lib.ck_hard_swish(x.size, src.ctypes.data_as(f32p), dst.ctypes.data_as(f32p)) == 0
    _expect(x, dst, want)
    np.testing.assert_array_equal(src, x)


def test_rejects_bad_parameters(lib):
    x = np.ones(4, np.float32)
    p = x.ctypes.data_as(f32p)
    assert lib.ck_hard_swish(-1, p, p) != 0 and lib.ck_hard_swish(4, None, p) != 0
    assert lib.ck_hard_sigmoid(4, p, None, 0.2, 0.5) != 0


@pytest.mark.parametrize("cc", ["gcc", pytest.param("clang", marks=pytest.mark.every_toolchain)])
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
