"""The ccompiler kernel library (targets/ccompiler/kernels) against independent numpy computations.

The library is compiled once per session per build (gcc and clang, -O0 and -O3, warnings as
errors) and called through ctypes. References are written here, not taken from the op registry:
explicit loops on tiny sizes, numpy einsum over strided views / float64 matmul on medium ones.
Every workspace is allocated at exactly the size the library reports, one byte off alignment.
test_whole_suite_under_sanitizers reruns this file against ASan+UBSan builds (gcc and clang).
"""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

import needs
import sanitizer_rerun
from shared_library import kernel_library
from conv_geometries import conv_geometries
from sanitizer_rerun import BUILDS, RERUN_COMPILERS, SANITIZE, build_params

from byoc_compiler.testing.loops import conv2d_loops, pool2d_loops, pool_out_size

from byoc_compiler.contrib.ccompiler import kernels as K
from byoc_compiler.contrib.ccompiler import winograd as WG


f32p = ctypes.POINTER(ctypes.c_float)
i64 = ctypes.c_int64
i32 = ctypes.c_int32


class ConvParams(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in K.CONV2D_PARAM_FIELDS]


class PoolParams(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32 if name in K.POOL2D_INT32_FIELDS else ctypes.c_int64)
                for name in K.POOL2D_PARAM_FIELDS]


class Epilogue(ctypes.Structure):
    _fields_ = [("bias", f32p), ("bias_per_row", ctypes.c_int32), ("activation", ctypes.c_int32)]


def fptr(a):
    return None if a is None else a.ctypes.data_as(f32p)


def i64_array(values):
    return (ctypes.c_int64 * max(1, len(values)))(*values)


def workspace(nbytes: int):
    """Exactly nbytes, deliberately misaligned by one byte, every byte 0xff (NaN floats: a kernel that reads
    scratch it did not write shows); keep the owner alive with the pointer."""
    owner = np.full(nbytes + 1, 0xFF, np.uint8)
    return owner, ctypes.c_void_p(owner.ctypes.data + 1)


class CkLib:
    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        for name in ("ck_gemm_workspace_bytes", "ck_dense_workspace_bytes", "ck_matmul_workspace_bytes"):
            getattr(self.lib, name).restype = ctypes.c_size_t
            getattr(self.lib, name).argtypes = [i64, i64, i64]
        for name in ("ck_gemm_prepacked_workspace_bytes",):
            getattr(self.lib, name).restype = ctypes.c_size_t
            getattr(self.lib, name).argtypes = [i64, i64, i64]
        self.lib.ck_gemm_packed_b_bytes.restype = ctypes.c_size_t
        self.lib.ck_gemm_packed_b_bytes.argtypes = [i64, i64]
        for name in ("ck_conv2d_workspace_bytes", "ck_conv2d_packed_weight_bytes"):
            getattr(self.lib, name).restype = ctypes.c_size_t
            getattr(self.lib, name).argtypes = [ctypes.POINTER(ConvParams)]
        self.lib.ck_unary.argtypes = [i32, i64, f32p, f32p, ctypes.c_float, ctypes.c_float]
        for name in ("ck_gemm_kernel_name", "ck_gemm_kernel_at"):
            getattr(self.lib, name).restype = ctypes.c_char_p
        self.lib.ck_batch_norm.argtypes = [i64, i64, i64, f32p, f32p, f32p, f32p, f32p, ctypes.c_float, i32, i32,
                                           f32p]

    def __getattr__(self, name):
        return getattr(self.lib, name)

    # -- matrix multiply ----------------------------------------------------------------------
    def dense(self, x, w, bias=None, act=0):
        m, k = x.shape
        n = w.shape[0]
        out = np.full((m, n), np.nan, np.float32)
        owner, ws = workspace(self.lib.ck_dense_workspace_bytes(m, n, k))
        assert self.lib.ck_dense(i64(m), i64(n), i64(k), fptr(x), fptr(w), fptr(bias), i32(act), fptr(out), ws) == 0
        return out

    def matmul(self, a, b, ta, tb):
        m, k = a.shape[::-1] if ta else a.shape
        n = b.shape[0] if tb else b.shape[1]
        out = np.full((m, n), np.nan, np.float32)
        owner, ws = workspace(self.lib.ck_matmul_workspace_bytes(m, n, k))
        assert self.lib.ck_matmul(i64(m), i64(n), i64(k), fptr(a), i32(ta), fptr(b), i32(tb), fptr(out), ws) == 0
        return out

    # -- on a B packed ahead (the codegen's numpy packer, pack_gemm_b) ---------------------------
    def packed_b(self, b):
        """K.pack_gemm_b(b) for B [k, n], its size checked against the C's formula."""
        k, n = b.shape
        packed = K.pack_gemm_b(b)
        assert self.lib.ck_gemm_packed_b_bytes(n, k) == 4 * packed.size == 4 * K.gemm_packed_b_floats(n, k)
        return packed

    def prepacked_workspace(self, m, n, k):
        nbytes = self.lib.ck_gemm_prepacked_workspace_bytes(m, n, k)
        assert nbytes == K.gemm_prepacked_workspace_bytes(m, n, k), "Python mirror of the workspace size"
        return workspace(nbytes)

    def dense_prepacked(self, x, w, bias=None, act=0):
        m, k = x.shape
        n = w.shape[0]
        packed = self.packed_b(w.T)
        out = np.full((m, n), np.nan, np.float32)
        owner, ws = self.prepacked_workspace(m, n, k)
        assert self.lib.ck_dense_prepacked(i64(m), i64(n), i64(k), fptr(x), fptr(packed), fptr(bias), i32(act),
                                           fptr(out), ws) == 0
        return out

    def matmul_prepacked(self, a, b, ta, tb):
        m, k = a.shape[::-1] if ta else a.shape
        n = b.shape[0] if tb else b.shape[1]
        packed = self.packed_b(b.T if tb else b)
        out = np.full((m, n), np.nan, np.float32)
        owner, ws = self.prepacked_workspace(m, n, k)
        assert self.lib.ck_matmul_prepacked(i64(m), i64(n), i64(k), fptr(a), i32(ta), fptr(packed), fptr(out),
                                            ws) == 0
        return out

    # -- conv2d ----------------------------------------------------------------------------------
    def conv2d(self, x, w, strides, padding, dilation, groups, bias=None, act=0):
        values = K.conv2d_params(x.shape, w.shape, strides, padding, dilation, groups)
        p = ConvParams(**values)
        oh, ow = i64(), i64()
        assert self.lib.ck_conv2d_output_hw(ctypes.byref(p), ctypes.byref(oh), ctypes.byref(ow)) == 0
        assert (oh.value, ow.value) == K.conv2d_output_hw(values)
        nbytes = self.lib.ck_conv2d_workspace_bytes(ctypes.byref(p))
        assert nbytes == K.conv2d_workspace_bytes(values), "Python mirror of the workspace size"
        out = np.full((x.shape[0], w.shape[0], oh.value, ow.value), np.nan, np.float32)
        owner, ws = workspace(nbytes)
        assert self.lib.ck_conv2d(ctypes.byref(p), fptr(x), fptr(w), fptr(bias), i32(act), fptr(out), ws) == 0
        packed = self.pack_conv2d_weight(values, w)
        if packed is not None:  # the same call on the weight packed ahead must give the same bits
            again = np.full_like(out, np.nan)
            assert self.lib.ck_conv2d_prepacked(ctypes.byref(p), fptr(x), fptr(packed), fptr(bias), i32(act),
                                                fptr(again), ws) == 0
            np.testing.assert_array_equal(again, out, err_msg="ck_conv2d_prepacked differs from ck_conv2d")
        return out

    def pack_conv2d_weight(self, values, w):
        """ck_conv2d_pack_weight's result (None when the geometry is not packed), checked against the
        codegen's numpy mirror bit for bit."""
        p = ConvParams(**values)
        nbytes = self.lib.ck_conv2d_packed_weight_bytes(ctypes.byref(p))
        assert nbytes == K.conv2d_packed_weight_bytes(values), "Python mirror of the packed size"
        if nbytes == 0:
            assert self.lib.ck_conv2d_pack_weight(ctypes.byref(p), fptr(w), None) != 0
            return None
        packed = np.full(nbytes // 4, np.nan, np.float32)
        assert self.lib.ck_conv2d_pack_weight(ctypes.byref(p), fptr(w), fptr(packed)) == 0
        np.testing.assert_array_equal(packed, K.pack_conv2d_weight(values, w), err_msg="pack_conv2d_weight mirror")
        return packed

    # -- pools -----------------------------------------------------------------------------------
    def pool(self, kind, x, pool_size, strides, padding, dilation, ceil_mode, count_include_pad=False):
        p = PoolParams(**K.pool2d_params(x.shape, pool_size, strides, padding, dilation, ceil_mode,
                                         count_include_pad))
        oh, ow = i64(), i64()
        assert self.lib.ck_pool2d_output_hw(ctypes.byref(p), ctypes.byref(oh), ctypes.byref(ow)) == 0
        out = np.full(x.shape[:2] + (oh.value, ow.value), np.nan, np.float32)
        fn = self.lib.ck_max_pool2d if kind == "max" else self.lib.ck_avg_pool2d
        assert fn(ctypes.byref(p), fptr(x), fptr(out)) == 0
        return out

    # -- elementwise -----------------------------------------------------------------------------
    def binary(self, op, a, b):
        out_shape = np.broadcast_shapes(a.shape, b.shape)
        out = np.full(out_shape, np.nan, np.float32)
        code = K.ENUM_VALUES[K.BINARY_OPS[op]]
        assert self.lib.ck_binary(i32(code), fptr(a), i32(a.ndim), i64_array(a.shape), fptr(b), i32(b.ndim),
                                  i64_array(b.shape), fptr(out), i32(out.ndim), i64_array(out_shape)) == 0
        return out


def _compile(cc: str, flags: list[str], name: str) -> Path:
    needs.programs(cc)
    return kernel_library(cc, flags, K.SOURCES, name)


@pytest.fixture(scope="session", params=build_params())
def ck(request) -> CkLib:
    cc, flags = BUILDS[request.param]
    return CkLib(_compile(cc, flags, f"libck-{request.param}.so"))


RNG = np.random.default_rng(1234)


def rand(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape).astype(np.float32)


def close(got, want, rtol=1e-4, atol=1e-4, err_msg=""):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=err_msg)


# ---- dense / matmul -------------------------------------------------------------------------------
# sizes straddle the micro-tile (<= 8x32), the cache blocks (MC 96, KC 256, NC 1024) and 1
DENSE = [(1, 1, 1), (1, 7, 13), (1, 1000, 300), (2, 3, 5), (5, 17, 33), (13, 31, 7), (6, 16, 256),
         (97, 41, 259), (3, 1031, 17), (40, 33, 1)]


@pytest.mark.parametrize("m,n,k", DENSE, ids=[f"m{m}-n{n}-k{k}" for m, n, k in DENSE])
def test_dense(ck, m, n, k):
    x, w = rand(m, k), rand(n, k)
    close(ck.dense(x, w), x.astype(np.float64) @ w.astype(np.float64).T, atol=1e-4 * max(1, k) ** 0.5)


EPILOGUES = [("bias", True, 0), ("relu", False, 1), ("bias-relu", True, 1), ("relu6", False, 2),
             ("bias-relu6", True, 2)]


def activate(want, act):
    """numpy's ck_activation: 1 relu, 2 relu6 = clip(x, 0, 6)."""
    return {0: want, 1: np.maximum(want, 0), 2: np.clip(want, 0, 6)}[act]


@pytest.mark.parametrize("m,n,k", [(1, 9, 20), (2, 37, 45), (7, 45, 300), (17, 70, 300)],
                         ids=["gemv", "gemv-two-rows", "edge-tiles", "full-tiles"])
@pytest.mark.parametrize("name,with_bias,act", EPILOGUES, ids=[e[0] for e in EPILOGUES])
def test_dense_fused_epilogue(ck, m, n, k, name, with_bias, act):
    x, w, b = rand(m, k), rand(n, k), rand(n)
    want = activate(x.astype(np.float64) @ w.astype(np.float64).T + (b if with_bias else 0), act)
    close(ck.dense(x, w, b if with_bias else None, act), want)


MATMUL = [(m, n, k, ta, tb) for (m, n, k) in [(1, 5, 3), (2, 37, 45), (9, 1, 40), (33, 70, 19)] for ta in (0, 1)
          for tb in (0, 1)]


# ck_matmul packs B per call; ck_matmul_prepacked reads B packed ahead by the codegen's mirror.
MATMUL_ENTRIES = ("matmul", "matmul_prepacked")


@pytest.mark.parametrize("entry", MATMUL_ENTRIES)
@pytest.mark.parametrize("m,n,k,ta,tb", MATMUL, ids=[f"m{m}-n{n}-k{k}-ta{ta}-tb{tb}" for m, n, k, ta, tb in MATMUL])
def test_matmul_transpose_flags(ck, entry, m, n, k, ta, tb):
    a = rand(k, m) if ta else rand(m, k)
    b = rand(n, k) if tb else rand(k, n)
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    close(getattr(ck, entry)(a, b, ta, tb), want)


# Weights packed ahead (ck_dense_prepacked & co., packed by the codegen's numpy mirror): batch 1, 2, 7, 64 rows
# against N below a sliver (5), odd N and K (13 x 37), N ending in a narrow sliver (45: the half-width
# kernel reads part of a packed row) over two K blocks (259), N across the NC block (1031).
PREPACKED_NK = [(13, 37), (5, 300), (45, 259), (1031, 17)]
PREPACKED = [(m, n, k) for m in (1, 2, 7, 64) for n, k in PREPACKED_NK]
PREPACKED_EPILOGUES = [("plain", False, 0), ("bias", True, 0), ("bias-relu", True, 1), ("relu6", False, 2)]


@pytest.mark.parametrize("m,n,k", PREPACKED, ids=[f"m{m}-n{n}-k{k}" for m, n, k in PREPACKED])
@pytest.mark.parametrize("name,with_bias,act", PREPACKED_EPILOGUES, ids=[e[0] for e in PREPACKED_EPILOGUES])
def test_dense_prepacked(ck, m, n, k, name, with_bias, act):
    x, w, b = rand(m, k), rand(n, k), rand(n)
    want = activate(x.astype(np.float64) @ w.astype(np.float64).T + (b if with_bias else 0), act)
    close(ck.dense_prepacked(x, w, b if with_bias else None, act), want, atol=1e-4 * max(1, k) ** 0.5)


@pytest.mark.parametrize("n,k", PREPACKED_NK, ids=[f"n{n}-k{k}" for n, k in PREPACKED_NK])
def test_gemm_pack_b_in_c_lays_out_as_the_mirror(ck, n, k):
    """ck_gemm_pack_b (for callers without the codegen) writes the layout the kernels read, bit for bit
    the codegen's (whose layout test_dense_prepacked checks by results)."""
    w = rand(n, k)
    packed = np.full(ck.ck_gemm_packed_b_bytes(n, k) // 4, np.nan, np.float32)
    assert ck.ck_gemm_pack_b(i64(n), i64(k), fptr(w), i64(1), i64(k), fptr(packed)) == 0
    np.testing.assert_array_equal(packed, K.pack_gemm_b(w.T))
    assert ck.ck_gemm_pack_b(i64(n), i64(k), fptr(w), i64(1), i64(k), None) != 0


@pytest.mark.parametrize("ta", (0, 1), ids=["a", "a-transposed"])
def test_batch_matmul_prepacked_broadcast_offsets(ck, ta):
    """Four products over a [2, 2] batch: A per element, B's two packed matrices broadcast along the first
    batch axis (offsets in packed floats)."""
    m, n, k = 7, 45, 37
    a = rand(4, k, m) if ta else rand(4, m, k)
    b = rand(2, k, n)
    packed = np.concatenate([ck.packed_b(b[j]) for j in range(2)])
    step = K.gemm_packed_b_floats(n, k)
    a_offsets, b_offsets = [i * m * k for i in range(4)], [0, step, 0, step]
    out = np.full((4, m, n), np.nan, np.float32)
    owner, ws = ck.prepacked_workspace(m, n, k)
    assert ck.ck_batch_matmul_prepacked(i64(4), i64(m), i64(n), i64(k), fptr(a), i64_array(a_offsets), i32(ta),
                                        fptr(packed), i64_array(b_offsets), fptr(out), ws) == 0
    ops = a.transpose(0, 2, 1) if ta else a
    want = np.stack([ops[i].astype(np.float64) @ b[i % 2].astype(np.float64) for i in range(4)])
    close(out, want)


def test_prepacked_rejects_bad_params(ck):
    x, packed = rand(4, 4), K.pack_gemm_b(rand(4, 4))
    out = np.zeros((4, 4), np.float32)
    owner, ws = ck.prepacked_workspace(4, 4, 4)
    args = (i64(4), i64(4), i64(4), fptr(x))
    assert ck.ck_dense_prepacked(*args, None, None, i32(0), fptr(out), ws) != 0, "no weight"
    assert ck.ck_dense_prepacked(*args, fptr(packed), None, i32(9), fptr(out), ws) != 0, "activation 9"
    assert ck.ck_dense_prepacked(*args, fptr(packed), None, i32(0), fptr(out), None) != 0, "no workspace"
    assert ck.ck_matmul_prepacked(*args, i32(0), fptr(packed), None, ws) != 0, "no output"
    assert ck.ck_batch_matmul_prepacked(i64(1), *args, None, i32(0), fptr(packed), None, fptr(out), ws) != 0


def test_gemm_strided_operands_with_ldc(ck):
    """The core itself: A and B read through arbitrary element strides, C with a row pitch."""
    a_store, b_store = rand(30, 50), rand(60, 40)
    a, b = a_store[::2, 1:38:3], b_store[1:38:3, ::3]      # [15, 13] and [13, 14] views
    m, k = a.shape
    n = b.shape[1]
    c = np.full((m, n + 5), 7.0, np.float32)
    owner, ws = workspace(ck.ck_gemm_workspace_bytes(m, n, k))
    item = 4
    status = ck.ck_gemm(i64(m), i64(n), i64(k), a.ctypes.data_as(f32p),
                        i64(a.strides[0] // item), i64(a.strides[1] // item), b.ctypes.data_as(f32p),
                        i64(b.strides[0] // item), i64(b.strides[1] // item), fptr(c), i64(n + 5), None, ws)
    assert status == 0
    close(c[:, :n], a.astype(np.float64) @ b.astype(np.float64))
    assert np.all(c[:, n:] == 7.0), "columns past n in the row pitch must stay untouched"


@pytest.mark.parametrize("m,n,k", [(0, 3, 4), (1, 0, 4), (3, 4, 0)], ids=["m0", "n0", "k0"])
def test_gemm_degenerate_sizes(ck, m, n, k):
    x, w, b = rand(max(m, 1), max(k, 1))[:m, :k].copy(), rand(max(n, 1), max(k, 1))[:n, :k].copy(), rand(max(n, 1))
    got = ck.dense(x, w, b[:n].copy(), 0) if m and n else ck.dense(x, w)
    want = x.astype(np.float64) @ w.astype(np.float64).T + (b[:n] if m and n else 0)
    close(got, want)


def test_gemm_rejects_bad_params(ck):
    x = rand(4, 4)
    out = np.zeros((4, 4), np.float32)
    assert ck.ck_dense(i64(4), i64(4), i64(4), fptr(x), fptr(x), None, i32(7), fptr(out), None) != 0, "activation 7"
    assert ck.ck_dense(i64(4), i64(4), i64(4), fptr(x), fptr(x), None, i32(0), fptr(out), None) != 0, "no workspace"
    assert ck.ck_dense(i64(-1), i64(4), i64(4), fptr(x), fptr(x), None, i32(0), fptr(out), None) != 0


def kernel_names(ck) -> list[str]:
    names = []
    while (name := ck.ck_gemm_kernel_at(len(names))) is not None:
        names.append(name.decode())
    return names


def test_every_micro_kernel_that_runs_here(ck):
    """Each register-tile kernel compiled in (AVX-512, AVX2, baseline) on odd gemm and conv sizes."""
    default = ck.ck_gemm_kernel_name()
    names = kernel_names(ck)
    assert default.decode() in names and names[-1].startswith("baseline-")
    assert ck.ck_gemm_use_kernel(b"no-such-kernel") != 0
    x, w = rand(13, 300), rand(37, 300)
    x1 = rand(1, 77)  # batch 1: the dot-product kernel of the same vector width
    cx, cw, cb = 3 * rand(1, 5, 9, 11), rand(17, 5, 3, 3), rand(17)  # full tiles: bias + relu6 in registers
    want_dense = x.astype(np.float64) @ w.astype(np.float64).T
    want_gemv = x1.astype(np.float64) @ w[:, :77].astype(np.float64).T
    want_conv = np.clip(conv2d_einsum(cx, cw, (1, 2), (1, 0, 2, 1), (1, 1), 1) + cb[None, :, None, None], 0, 6)
    rx, rw, rb = rand(1, 6, 8, 8), rand(24, 6, 3, 3), rand(24)  # 24 x 64: full tiles of every kernel
    rr = rand(1, 24, 8, 8)
    want_residual = np.maximum(conv2d_einsum(rx, rw, (1, 1), (1, 1, 1, 1), (1, 1), 1) + rb[None, :, None, None] + rr, 0)
    # few input channels at stride 2 (ck_stem.c's tile of the same instruction set): 37-pixel rows, full and tail
    # tiles, 11 channels (a partial last tile of rows)
    sx, sw_, sb = 3 * rand(1, 3, 15, 74), rand(11, 3, 3, 3), rand(11)
    want_stem = np.clip(conv2d_einsum(sx, sw_, (2, 2), (1, 1, 1, 1), (1, 1), 1) + sb[None, :, None, None], 0, 6)
    ran = []
    try:
        for name in names:
            if ck.ck_gemm_use_kernel(name.encode()) != 0:
                continue  # this CPU lacks it
            assert ck.ck_gemm_kernel_name().decode() == name
            close(ck.dense(x, w), want_dense)
            close(ck.dense(x1, np.ascontiguousarray(w[:, :77])), want_gemv)
            close(ck.dense_prepacked(x, w), want_dense)  # 32-column packed rows read 8, 16 or 32 at a time
            x37, w37 = np.ascontiguousarray(x[:, :37]), np.ascontiguousarray(w[:5, :37])
            close(ck.dense_prepacked(x37, w37),  # 5 columns: the half-width kernel
                  x37.astype(np.float64) @ w37.astype(np.float64).T)
            close(ck.conv2d(cx, cw, (1, 2), (1, 0, 2, 1), (1, 1), 1, cb, 2), want_conv)
            close(conv2d_add(ck, rx, rw, rb, rr, 1), want_residual)  # residual in the full tiles' registers
            close(ck.conv2d(sx, sw_, (2, 2), (1, 1, 1, 1), (1, 1), 1, sb, 2), want_stem, err_msg=name)
            ran.append(name)
    finally:
        assert ck.ck_gemm_use_kernel(default) == 0
    assert names[-1] in ran, "the baseline kernel always runs"


def test_hard_swish_and_sigmoid_on_every_kernel_and_thread_count(ck):
    """ck_activation.c's loops follow the gemm core's instruction set: each one this CPU runs, over three pool
    ranges and a tail (40,000 elements, NaN and infinities among them), in place and not, against numpy in
    float64, 3 threads bit-equal to 1."""
    x = rand(40_000, low=-8, high=8)
    x[::997] = np.resize(np.array([np.nan, np.inf, -np.inf, -3.0, 3.0, 0.0, -0.0, 6.0, -6.0, 1e30, -1e30],
                                  np.float32), x[::997].size)
    with np.errstate(invalid="ignore", over="ignore"):
        want = {"swish": x.astype(np.float64) * np.clip(x.astype(np.float64) / 6.0 + 0.5, 0.0, 1.0),
                "sigmoid": np.clip(np.float32(0.2) * x.astype(np.float64) + np.float32(0.5), 0.0, 1.0)}
    default, ran = ck.ck_gemm_kernel_name(), []
    ck.ck_hard_sigmoid.argtypes = [i64, f32p, f32p, ctypes.c_float, ctypes.c_float]
    try:
        for name in kernel_names(ck):
            if ck.ck_gemm_use_kernel(name.encode()) != 0:
                continue  # this CPU lacks it
            outs = []
            for threads in (1, 3):
                ck.byoc_set_num_threads(threads)
                got = {"sigmoid": np.full_like(x, 7.0), "swish": x.copy()}
                assert ck.ck_hard_sigmoid(x.size, fptr(x), fptr(got["sigmoid"]), 0.2, 0.5) == 0
                assert ck.ck_hard_swish(i64(x.size), fptr(got["swish"]), fptr(got["swish"])) == 0  # in place
                for key in want:
                    with np.errstate(invalid="ignore"):
                        np.testing.assert_allclose(got[key], want[key].astype(np.float32), rtol=5e-7, atol=1e-7,
                                                   equal_nan=True, err_msg=f"{name} {key} {threads} threads")
                    assert np.array_equal(np.isnan(got[key]), np.isnan(want[key])), (name, key)
                outs.append(got)
            assert all(np.array_equal(outs[0][k], outs[1][k], equal_nan=True) for k in want), name
            ran.append(name)
    finally:
        ck.byoc_set_num_threads(1)
        assert ck.ck_gemm_use_kernel(default) == 0
    assert ran and ran[-1].startswith("baseline-")


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (5, 7, 3), (24, 32, 256), (25, 33, 257), (1000, 5000, 3000)],
                         ids=lambda v: str(v))
def test_gemm_workspace_mirror(ck, m, n, k):
    assert ck.ck_gemm_workspace_bytes(m, n, k) == K.gemm_workspace_bytes(m, n, k)
    assert ck.ck_gemm_prepacked_workspace_bytes(m, n, k) == K.gemm_prepacked_workspace_bytes(m, n, k)
    assert ck.ck_gemm_packed_b_bytes(n, k) == 4 * K.gemm_packed_b_floats(n, k)


# Sizes on both sides of every threshold of the formulas (tile quanta, MC/KC blocks, 1024-column chunks, the
# 8-task split, pixel-major planes up to 1024 pixels).
GRID = (1, 2, 7, 8, 23, 24, 25, 31, 32, 33, 95, 96, 97, 255, 256, 257, 1023, 1024, 1025, 4096, 8193)


def test_gemm_size_formulas_agree_with_c_on_a_grid(ck):
    wrong = [(m, n, k) for m in GRID for n in GRID for k in (1, 3, 256, 257, 4000)
             if (ck.ck_gemm_workspace_bytes(m, n, k), ck.ck_gemm_prepacked_workspace_bytes(m, n, k),
                 ck.ck_gemm_packed_b_bytes(n, k))
             != (K.gemm_workspace_bytes(m, n, k), K.gemm_prepacked_workspace_bytes(m, n, k),
                 4 * K.gemm_packed_b_floats(n, k))]
    assert wrong == []


def test_conv2d_size_formulas_agree_with_c_on_random_geometries(ck):
    wrong = []
    for values in conv_geometries(1500):
        p = ConvParams(**values)
        got = (ck.ck_conv2d_workspace_bytes(ctypes.byref(p)), ck.ck_conv2d_packed_weight_bytes(ctypes.byref(p)))
        if got != (K.conv2d_workspace_bytes(values), K.conv2d_packed_weight_bytes(values)):
            wrong.append((values, got))
    assert wrong == []


# ---- conv2d -----------------------------------------------------------------------------------------

def conv2d_einsum(x, w, strides, padding, dilation, groups):
    """im2col as a strided view of the zero-padded input, contracted per group with einsum."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = padding
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    sn, sc, sh, sw = xp.strides
    cols = np.lib.stride_tricks.as_strided(
        xp, shape=(n, c, kh, kw, oh, ow),
        strides=(sn, sc, sh * dilation[0], sw * dilation[1], sh * strides[0], sw * strides[1]))
    og = o // groups
    # (optimize: contracted through BLAS, 2-3x faster on the larger cases; float64 either way)
    parts = [np.einsum("ncijyz,ocij->noyz", cols[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og].astype(np.float64),
                       optimize=True)
             for g in range(groups)]
    return np.concatenate(parts, axis=1)


# (name, data shape, weight shape, strides, padding, dilation, groups)
CONV_TINY = [
    ("plain-3x3", (1, 2, 5, 6), (3, 2, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ("pad1", (1, 3, 5, 5), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ("stride2", (2, 2, 7, 7), (3, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    ("dilation2", (1, 2, 7, 6), (2, 2, 3, 2), (1, 1), (2, 1, 2, 1), (2, 2), 1),
    ("asymmetric-pad", (1, 2, 5, 4), (3, 2, 3, 3), (1, 2), (0, 2, 1, 0), (1, 1), 1),
    ("groups2", (1, 4, 5, 5), (6, 2, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    ("depthwise", (1, 3, 6, 5), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),
    ("depthwise-mult2-stride2", (1, 2, 7, 7), (4, 1, 3, 3), (2, 2), (1, 0, 1, 2), (1, 1), 2),
    ("depthwise-dilated", (1, 2, 7, 7), (2, 1, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 2),
    ("1x1", (2, 3, 4, 5), (5, 3, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ("1x1-stride2", (1, 3, 5, 5), (2, 3, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    ("1x1-padded", (1, 3, 3, 3), (2, 3, 1, 1), (1, 1), (1, 0, 0, 1), (1, 1), 1),
    ("single-input-channel", (1, 1, 5, 5), (3, 1, 2, 2), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ("kernel-equals-input", (1, 2, 3, 3), (2, 2, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ("1x1-spatial", (1, 4, 1, 1), (3, 4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    # out_w 11: a packed sliver (8, 16 or 32 pixels) starts at pixel 32, the last column of a line,
    # whose taps lie beyond the right edge of the image (padding 3)
    ("sliver-starts-in-right-padding", (1, 2, 6, 10), (3, 2, 3, 3), (1, 1), (0, 0, 0, 3), (1, 1), 1),
    # (windows wider than a pixel read a zero-bordered copy; a 1x1 window reads the image itself:) out_w 11,
    # a full sliver starts at pixel 32, the last column of a line, one column past the edge (x = width + 1)
    # with 32 real pixels after it: its run has no column inside the image and writes none outside itself
    ("1x1-full-sliver-starts-in-right-padding", (1, 3, 6, 9), (4, 3, 1, 1), (1, 1), (0, 0, 0, 2), (1, 1), 1),
]


@pytest.mark.parametrize("case", CONV_TINY, ids=[c[0] for c in CONV_TINY])
def test_conv2d_tiny_against_loops(ck, case):
    _, xs, ws, strides, padding, dilation, groups = case
    x, w = rand(*xs), rand(*ws)
    close(ck.conv2d(x, w, strides, padding, dilation, groups), conv2d_loops(x, w, strides, padding, dilation, groups))


CONV_MEDIUM = [
    ("3x3-c16-o40-odd", (1, 16, 17, 19), (40, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ("3x3-stride2-k>KC", (1, 37, 23, 21), (13, 37, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),  # K = 333
    ("7x7-stride2-stem", (1, 3, 41, 37), (8, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1),
    ("1x1-o>MC", (2, 9, 11, 13), (101, 9, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ("groups4-dilation2", (1, 12, 13, 14), (8, 3, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 4),
    ("depthwise-32", (1, 32, 15, 16), (32, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 32),
    ("pixels>NC", (1, 4, 40, 30), (6, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # 1200 output pixels
    ("wide-padding-out-w-11", (1, 5, 12, 7), (9, 5, 3, 3), (1, 1), (3, 4, 2, 4), (2, 2), 1),
    ("wide-padding-stride2", (1, 5, 12, 15), (9, 5, 3, 3), (2, 2), (3, 5, 2, 6), (1, 1), 1),
    # small output planes: the prepacked call runs 7-pixel x 24-channel tiles (AVX-512), transposed out
    ("pixel-major-7x7-k>KC-o47", (1, 40, 7, 7), (47, 40, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # K = 360
    ("pixel-major-1x1-7x7-k300", (2, 300, 7, 7), (24, 300, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
    ("pixel-major-1x1-stride2", (1, 20, 13, 13), (48, 20, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    # 1x1 stride 2 on 32-pixel slivers: whole slivers gathered through per-sliver offsets (the second
    # K block starting at channel 256), a 26-pixel tail sliver through the general packing
    ("1x1-stride2-gather-k>KC", (1, 300, 17, 19), (30, 300, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1),
    # padding rows at the top and bottom: the slivers touching them are packed the general way, the
    # ones in between gathered
    ("1x1-stride2-padded-rows", (1, 6, 20, 21), (10, 6, 1, 1), (2, 2), (1, 0, 2, 0), (1, 1), 1),
    ("pixel-major-5x5-not-7s", (1, 8, 5, 5), (24, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # 25 pixels
    ("pixel-major-groups2", (1, 16, 7, 7), (48, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),
    # rows of whole 7-pixel slivers at stride_w 1: the tiles read the zero-bordered input in place through
    # one offset per tap (no im2col packing): 14x14 output with stride_h 2 and K = 270 (two K blocks),
    # and a dilated window over 11x14
    ("pixel-major-by-offsets-stride-h2-k>KC", (1, 30, 27, 14), (24, 30, 3, 3), (2, 1), (1, 1, 1, 1), (1, 1), 1),
    ("pixel-major-by-offsets-dilated", (1, 6, 11, 14), (48, 6, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),
    # a share's last real channels on the 16- and 32-channel tiles (AVX-512): 16 alone (40: the 48-channel
    # one); 128 = two 48-channel pairs + 32 over two K blocks; 64 = a pair + 16 on a 56x56 plane (more than
    # 1024 pixels: in place only)
    ("pixel-major-by-offsets-16-channels", (1, 12, 7, 7), (16, 12, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ("pixel-major-by-offsets-40-channels", (1, 12, 7, 7), (40, 12, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ("pixel-major-by-offsets-128-k>KC", (1, 30, 14, 14), (128, 30, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ("pixel-major-by-offsets-64-56x56", (1, 4, 56, 56), (64, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    # stride_w 2 over rows of whole 7-pixel slivers: the tiles read a bordered copy whose rows hold their even
    # columns, then their odd ones (AVX-512; elsewhere the im2col packs it): two K blocks; a dilated window
    # (taps 0, 2, 4: all in the even half) with uneven padding; odd padded widths (the halves differ in length)
    ("pixel-major-stride2-split-k>KC", (1, 30, 27, 28), (48, 30, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),
    ("pixel-major-stride2-split-dilated", (1, 9, 17, 28), (48, 9, 3, 3), (2, 2), (0, 1, 2, 2), (1, 2), 1),
    ("pixel-major-stride2-split-odd-width", (1, 8, 15, 13), (16, 8, 5, 5), (1, 2), (2, 2, 2, 2), (1, 1), 1),
    # few input channels at stride_w 2 (ck_stem.c): 35-pixel rows (a 3-pixel tail tile), 13 output channels
    # (a last tile of 5 or 1 rows), dilation, stride_h 3, batch 2, 4 channels x 7x7 taps (K = 196)
    ("stem-3x3-tf-same-tail", (1, 3, 40, 70), (32, 3, 3, 3), (2, 2), (0, 0, 1, 1), (1, 1), 1),
    ("stem-o13-dilated-stride-h3", (2, 2, 23, 50), (13, 2, 5, 3), (3, 2), (2, 1, 1, 2), (2, 2), 1),
    ("stem-4-channels-7x7", (1, 4, 19, 64), (20, 4, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1),
]


@pytest.mark.parametrize("case", CONV_MEDIUM, ids=[c[0] for c in CONV_MEDIUM])
def test_conv2d_medium_against_einsum(ck, case):
    _, xs, ws, strides, padding, dilation, groups = case
    x, w = rand(*xs), rand(*ws)
    want = conv2d_einsum(x, w, strides, padding, dilation, groups)
    close(ck.conv2d(x, w, strides, padding, dilation, groups), want, atol=2e-4)


# Convolutions whose work splits on the pool: the zero-bordered input copy in several ranges of planes, the gemm's
# row groups with their column chunks cut again, the pixel-major tiles' shares (2 threads: channel slivers, 3:
# pixel slivers) running every K block in one region.
# (name, data shape, weight shape)
CONV_ON_THE_POOL = [
    ("gemm-row-groups-bordered-ranges", (1, 44, 20, 20), (112, 44, 3, 3)),   # 2 ranges of planes, 5x4 tasks
    ("pixel-major-by-offsets-shares", (1, 140, 14, 14), (96, 140, 3, 3)),    # 3 ranges, 5 K blocks
    ("one-row-block-narrow-chunks", (1, 40, 18, 12), (40, 40, 1, 1)),         # 20x14: 280 columns, 5 chunks of 64
    # channel shares ending on a 24-channel sliver, a 16- or a 32-channel tile (1, 2, 3 threads)
    ("pixel-major-by-offsets-part-shares", (1, 20, 7, 7), (224, 20, 3, 3)),
    # 11 channel units: each share's first units in one task and its last ones in tasks of one unit (2 threads: 2
    # of 5 and 6; 3 threads: 1 of 3, 4 and 4), which the other threads take from its back
    ("pixel-major-by-offsets-single-unit-tasks", (1, 16, 7, 7), (512, 16, 3, 3)),
]


# Stride 2 on the pool: pixel-major tiles on the split copy (channel and pixel shares) and ck_stem.c's bands of
# output rows (56 rows of 52 pixels: 14 tasks of 4, each ending a plane's band on a cache line).
# (name, data shape, weight shape, strides, padding)
CONV_STRIDE2_ON_THE_POOL = [
    ("pixel-major-stride2-split", (1, 20, 28, 28), (96, 20, 3, 3), (2, 2), (1, 1, 1, 1)),
    ("stem-7x7-bands", (1, 3, 112, 104), (24, 3, 7, 7), (2, 2), (3, 3, 3, 3)),
]
# 1x1 convolutions that reduce channels on planes of whole 7-pixel slivers up to 14x14: pixel-major tiles reading the
# input in place (ck_pm_takes), 64 -> 28 channels (a pair, a 16-channel tile) over 10x14 pixels (20 slivers); 8 -> 4
# channels on 14x14, where their scratch outgrows the gemm's (the size mirror must follow).
POINTWISE_ON_THE_POOL = [
    ("pointwise-reducing-pixel-major", (1, 64, 10, 14), (28, 64, 1, 1), (1, 1), (0, 0, 0, 0)),
    ("pointwise-reducing-scratch", (1, 8, 14, 14), (4, 8, 1, 1), (1, 1), (0, 0, 0, 0)),
    # the gemm's tall tiles on a weight packed ahead (12 x 32, 24 x 16 on the 16-column tail of 1040 pixels), two K
    # blocks, 56 rows: two whole slivers and 8 rows on the 8 x 32 tiles
    ("pointwise-tall-tiles", (1, 260, 40, 26), (56, 260, 1, 1), (1, 1), (0, 0, 0, 0)),
    # two row blocks (120 rows) over 600 pixels: about 16 column chunks (10 of 64, the last 24 wide), no row groups
    ("pointwise-two-row-blocks-column-chunks", (1, 40, 20, 30), (120, 40, 1, 1), (1, 1), (0, 0, 0, 0)),
    # read in place on 7x7 with channel shares: first units in one task, the last ones in tasks of one unit
    ("pointwise-pixel-major-single-unit-tasks", (1, 1100, 7, 7), (512, 1100, 1, 1), (1, 1), (0, 0, 0, 0)),
]


@pytest.mark.parametrize("case", CONV_STRIDE2_ON_THE_POOL + POINTWISE_ON_THE_POOL,
                         ids=[c[0] for c in CONV_STRIDE2_ON_THE_POOL + POINTWISE_ON_THE_POOL])
def test_conv2d_stride2_is_the_same_at_every_thread_count(ck, case):
    """ck_conv2d and ck_conv2d_prepacked at 1, 2, 3 and 8 threads, bias and relu: the einsum's result, the same
    bits at every count."""
    _, xs, ws, strides, padding = case
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    want = np.maximum(conv2d_einsum(x, w, strides, padding, (1, 1), 1) + b[None, :, None, None], 0)
    outs = []
    try:
        for threads in (1, 2, 3, 8):
            ck.byoc_set_num_threads(threads)
            outs.append(ck.conv2d(x, w, strides, padding, (1, 1), 1, b, 1))
    finally:
        ck.byoc_set_num_threads(1)
    close(outs[0], want, rtol=1e-4, atol=5e-4)
    for threads, out in zip((2, 3, 8), outs[1:]):
        np.testing.assert_array_equal(out, outs[0], err_msg=f"{threads} threads differ from 1")


@pytest.mark.parametrize("case", CONV_ON_THE_POOL, ids=[c[0] for c in CONV_ON_THE_POOL])
def test_conv2d_on_the_pool_is_the_same_at_every_thread_count(ck, case):
    """ck_conv2d and ck_conv2d_prepacked (pixel-major where it pays) at 1, 2 and 3 threads: the einsum's
    result, the same bits at every count."""
    _, xs, ws = case
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    want = conv2d_einsum(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1) + b[None, :, None, None]
    outs = []
    try:
        for threads in (1, 2, 3):
            ck.byoc_set_num_threads(threads)
            outs.append(ck.conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1, b))
    finally:
        ck.byoc_set_num_threads(1)
    close(outs[0], want, rtol=1e-4, atol=5e-4)
    for threads, out in zip((2, 3), outs[1:]):
        np.testing.assert_array_equal(out, outs[0], err_msg=f"{threads} threads differ from 1")


def random_conv_geometry(rng):
    """A valid conv2d geometry with every knob turned: groups, strides, dilation, uneven padding."""
    while True:
        groups = int(rng.choice([1, 1, 2, 3]))
        cg, og = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        dh, dw = int(rng.integers(1, 3)), int(rng.integers(1, 3))
        pads = tuple(int(v) for v in rng.integers(0, 4, size=4))
        strides = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        h, w = int(rng.integers(1, 16)), int(rng.integers(1, 40))
        if h + pads[0] + pads[2] >= dh * (kh - 1) + 1 and w + pads[1] + pads[3] >= dw * (kw - 1) + 1:
            return (int(rng.integers(1, 3)), groups * cg, h, w), (groups * og, cg, kh, kw), strides, pads, (dh, dw), groups


@pytest.mark.parametrize("seed", range(4))
def test_conv2d_random_geometries(ck, seed):
    """Seeded random geometries (10 per seed), each against the einsum reference."""
    rng = np.random.default_rng(seed)
    for _ in range(10):
        xs, ws, strides, pads, dilation, groups = random_conv_geometry(rng)
        x, w, b = rand(*xs), rand(*ws), rand(ws[0])
        want = np.maximum(conv2d_einsum(x, w, strides, pads, dilation, groups) + b[None, :, None, None], 0)
        close(ck.conv2d(x, w, strides, pads, dilation, groups, b, 1), want,
              err_msg=f"data {xs} weight {ws} strides {strides} padding {pads} dilation {dilation} groups {groups}")


def conv2d_add(ck, x, w, b, residual, act, strides=(1, 1), padding=(1, 1, 1, 1), groups=1):
    """ck_conv2d_prepacked_add on the weight packed ahead (checked against the numpy mirror)."""
    values = K.conv2d_params(x.shape, w.shape, strides, padding, (1, 1), groups)
    p = ConvParams(**values)
    packed = ck.pack_conv2d_weight(values, w)
    out = np.full(residual.shape, np.nan, np.float32)
    owner, ws_ptr = workspace(ck.ck_conv2d_workspace_bytes(ctypes.byref(p)))
    assert ck.ck_conv2d_prepacked_add(ctypes.byref(p), fptr(x), fptr(packed), fptr(b), fptr(residual), i32(act),
                                      fptr(out), ws_ptr) == 0
    return out


# ck_conv2d_prepacked_add: a residual add (and activation) in the epilogue of full tiles (in registers),
# edge tiles, the pixel-major path, a reduction over several K blocks (partial sums in out first), groups.
RESIDUAL_CONVS = [
    ("edge-tiles", (1, 4, 9, 11), (6, 4, 3, 3), (1, 1), (1, 1, 1, 1), 1),
    ("full-tiles-k>KC", (1, 30, 10, 16), (17, 30, 3, 3), (1, 1), (1, 1, 1, 1), 1),  # K = 270
    ("1x1-pointwise", (2, 8, 8, 8), (24, 8, 1, 1), (1, 1), (0, 0, 0, 0), 1),
    ("1x1-reducing-pixel-major", (1, 96, 7, 14), (40, 96, 1, 1), (1, 1), (0, 0, 0, 0), 1),
    ("1x1-tall-tiles-k>KC", (1, 270, 40, 26), (48, 270, 1, 1), (1, 1), (0, 0, 0, 0), 1),  # 1040 = 32 x 32 + 16
    ("pixel-major-7x7-k>KC", (1, 40, 7, 7), (47, 40, 3, 3), (1, 1), (1, 1, 1, 1), 1),
    ("groups2-stride2", (1, 8, 11, 13), (12, 4, 3, 3), (2, 2), (1, 1, 1, 1), 2),
    ("pixel-major-stride2-split", (1, 16, 28, 28), (48, 16, 3, 3), (2, 2), (1, 1, 1, 1), 1),
    ("stem-stride2-tail-tile", (1, 3, 20, 40), (9, 3, 7, 7), (2, 2), (3, 3, 3, 3), 1),  # 20-pixel rows
    ("stem-stride2-half-tile", (1, 3, 9, 76), (9, 3, 7, 7), (2, 2), (3, 3, 3, 3), 1),  # 38: a full tile, a half
]


@pytest.mark.parametrize("case", RESIDUAL_CONVS, ids=[c[0] for c in RESIDUAL_CONVS])
@pytest.mark.parametrize("name,with_bias,act", EPILOGUES, ids=[e[0] for e in EPILOGUES])
def test_conv2d_prepacked_add_residual(ck, case, name, with_bias, act):
    _, xs, ws, strides, padding, groups = case
    x, w, b = 4 * rand(*xs), rand(*ws), rand(ws[0])
    conv = conv2d_einsum(x, w, strides, padding, (1, 1), groups) + (b[None, :, None, None] if with_bias else 0)
    residual = 3 * rand(*conv.shape)
    values = K.conv2d_params(x.shape, w.shape, strides, padding, (1, 1), groups)
    p = ConvParams(**values)
    packed = ck.pack_conv2d_weight(values, w)
    out = np.full(conv.shape, np.nan, np.float32)
    owner, ws_ptr = workspace(ck.ck_conv2d_workspace_bytes(ctypes.byref(p)))
    bias = b if with_bias else None
    assert ck.ck_conv2d_prepacked_add(ctypes.byref(p), fptr(x), fptr(packed), fptr(bias), fptr(residual), i32(act),
                                      fptr(out), ws_ptr) == 0
    close(out, activate(conv + residual, act))
    # the same bits as the unfused calls: conv2d (+ bias), then add, then the activation
    plain = np.full(conv.shape, np.nan, np.float32)
    assert ck.ck_conv2d_prepacked(ctypes.byref(p), fptr(x), fptr(packed), fptr(bias), i32(0), fptr(plain),
                                  ws_ptr) == 0
    np.testing.assert_array_equal(out, activate(plain + residual, act))
    assert ck.ck_conv2d_prepacked_add(ctypes.byref(p), fptr(x), fptr(packed), fptr(bias), None, i32(act),
                                      fptr(out), ws_ptr) != 0, "a NULL residual is refused"


@pytest.mark.parametrize("groups,ws", [(1, (6, 4, 3, 3)), (1, (17, 4, 3, 3)), (4, (8, 1, 3, 3))],
                         ids=["gemm-edge-tiles", "gemm-full-tiles", "depthwise"])
@pytest.mark.parametrize("name,with_bias,act", EPILOGUES, ids=[e[0] for e in EPILOGUES])
def test_conv2d_fused_bias_relu(ck, groups, ws, name, with_bias, act):
    x, w, b = 4 * rand(1, 4, 9, 11), rand(*ws), rand(ws[0])  # x 4: relu6's upper bound is reached too
    want = conv2d_einsum(x, w, (1, 1), (1, 1, 1, 1), (1, 1), groups) + (b[None, :, None, None] if with_bias else 0)
    close(ck.conv2d(x, w, (1, 1), (1, 1, 1, 1), (1, 1), groups, b if with_bias else None, act), activate(want, act))


# 3x3 depthwise: the one-pass row kernel over a zero-bordered copy of each input plane (workspace).
# (name, data shape, channel multiplier, strides, padding)
DEPTHWISE_3X3 = [
    ("s1-pad1", (1, 4, 9, 21), 1, (1, 1), (1, 1, 1, 1)),
    ("s2-pad1", (1, 4, 10, 23), 1, (2, 2), (1, 1, 1, 1)),
    ("s2-pad-tf-same", (1, 3, 8, 16), 1, (2, 2), (0, 0, 1, 1)),
    ("s1-no-pad", (1, 3, 5, 40), 1, (1, 1), (0, 0, 0, 0)),
    ("s1-pad2-asymmetric", (2, 3, 6, 13), 1, (1, 1), (2, 0, 1, 2)),
    ("stride-h1-w2", (1, 2, 7, 17), 1, (1, 2), (1, 1, 1, 1)),
    ("stride-h3-w1", (1, 2, 11, 9), 1, (3, 1), (1, 1, 1, 1)),
    ("multiplier-3", (1, 2, 6, 19), 3, (1, 1), (1, 1, 1, 1)),
    ("width-1", (1, 2, 5, 1), 1, (1, 1), (1, 1, 1, 1)),
    ("width-2-s2", (1, 2, 5, 2), 1, (2, 2), (1, 1, 1, 1)),
    ("wide-2100", (1, 2, 3, 2100), 1, (1, 1), (1, 1, 1, 1)),
    ("pad-3-wider-than-kernel", (1, 2, 4, 5), 1, (2, 2), (3, 3, 3, 3)),
    ("7x7-planes-tasks-of-16", (1, 37, 7, 7), 1, (1, 1), (1, 1, 1, 1)),   # 49-float planes: 16, 16, 5 groups
    # padding 1, stride 1 rows narrower than 32 or stride 2 rows narrower than 64 of even planes: whole
    # planes as one flat pass, read in place (ck_dw3x3_flat_groups)
    ("flat-s1-14x14-multiplier-2", (1, 3, 14, 14), 2, (1, 1), (1, 1, 1, 1)),
    ("flat-s1-4x4-one-block", (2, 3, 4, 4), 1, (1, 1), (1, 1, 1, 1)),
    ("flat-s1-3x5-below-a-block", (1, 2, 3, 5), 1, (1, 1), (1, 1, 1, 1)),
    ("flat-s2-14x14", (1, 5, 14, 14), 1, (2, 2), (1, 1, 1, 1)),
    ("flat-s2-16x6-multiplier-2", (2, 3, 16, 6), 2, (2, 2), (1, 1, 1, 1)),
    ("flat-s2-62-wide", (1, 2, 6, 62), 1, (2, 2), (1, 1, 1, 1)),
]


@pytest.mark.parametrize("case", DEPTHWISE_3X3, ids=[c[0] for c in DEPTHWISE_3X3])
def test_depthwise_3x3_on_every_kernel(ck, case):
    """Every instruction set's row kernel against loops, with bias and relu6."""
    _, xs, mult, strides, padding = case
    depthwise_on_every_kernel(ck, xs, (3, 3), mult, strides, padding)


# (name, data shape, strides, window): planes the flat passes take (3x3: ck_depthwise.c, 5x5 and 7x7:
# ck_dw_flat.c); the stride-2 ones in their four quarters
DEPTHWISE_FLAT_EDGES = [("s1-7x7", (1, 19, 7, 7), (1, 1), 3), ("s1-9x20", (1, 3, 9, 20), (1, 1), 3),
                        ("s2-14x14", (1, 19, 14, 14), (2, 2), 3), ("s2-10x24", (1, 3, 10, 24), (2, 2), 3),
                        ("5x5-s1-7x7", (1, 19, 7, 7), (1, 1), 5), ("5x5-s2-14x14", (1, 19, 14, 14), (2, 2), 5),
                        ("7x7-s2-12x20", (1, 3, 12, 20), (2, 2), 7)]


@pytest.mark.parametrize("case", DEPTHWISE_FLAT_EDGES, ids=[c[0] for c in DEPTHWISE_FLAT_EDGES])
@pytest.mark.parametrize("name,with_bias,act", EPILOGUES, ids=[e[0] for e in EPILOGUES])
def test_depthwise_flat_edges_and_thread_counts(ck, case, name, with_bias, act):
    """The flat passes read a row's neighbours in memory for the taps off its left and right ends: an inf in
    every row's first and last column must reach only the outputs whose window covers it (a lane masked by a
    product would make NaN of it), with each activation; 1, 2 and 3 threads give the same bits."""
    _, xs, strides, k = case
    c, pad = xs[1], ((k - 1) // 2,) * 4
    x, w, b = 3 * rand(*xs), rand(c, 1, k, k, low=0.1, high=1.0), rand(c)
    x[:, :, ::2, 0] = np.inf
    x[:, :, 1::2, -1] = np.inf
    conv = conv2d_loops(x.astype(np.float64), w, strides, pad, (1, 1), c)
    want = activate(conv + (b[None, :, None, None] if with_bias else 0), act)
    outs = []
    try:
        for threads in (1, 2, 3):
            ck.byoc_set_num_threads(threads)
            outs.append(ck.conv2d(x, w, strides, pad, (1, 1), c, b if with_bias else None, act))
    finally:
        ck.byoc_set_num_threads(1)
    assert np.isinf(want).any() or act == 2, "the case covers inputs at the row ends"
    close(outs[0], want)
    for threads, out in zip((2, 3), outs[1:]):
        np.testing.assert_array_equal(out, outs[0], err_msg=f"{threads} threads differ from 1")


def depthwise_on_every_kernel(ck, xs, window, mult, strides, padding):
    """A depthwise conv (bias, relu6) with each instruction set's kernel this CPU runs, against loops."""
    c = xs[1]
    x, w, b = 3 * rand(*xs), rand(c * mult, 1, *window), rand(c * mult)
    want = np.clip(conv2d_loops(x, w, strides, padding, (1, 1), c) + b[None, :, None, None], 0, 6)
    default = ck.ck_gemm_kernel_name()
    try:
        for name in kernel_names(ck):
            if ck.ck_gemm_use_kernel(name.encode()) == 0:
                close(ck.conv2d(x, w, strides, padding, (1, 1), c, b, 2), want, err_msg=name)
    finally:
        assert ck.ck_gemm_use_kernel(default) == 0


# Other depthwise windows (up to 64 taps, no dilation, stride_w 1 or 2): ck_depthwise.c, 16 outputs at a
# time over the zero-bordered plane; narrow rows as one flat pass over the plane.
# (name, data shape, weight (kh, kw), channel multiplier, strides, padding)
DEPTHWISE_ANY = [
    ("5x5-s1-narrow-flat", (1, 3, 14, 14), (5, 5), 1, (1, 1), (2, 2, 2, 2)),
    ("5x5-s1-wide-rows", (1, 2, 6, 45), (5, 5), 1, (1, 1), (2, 2, 2, 2)),
    ("5x5-s2-narrow-flat", (1, 3, 14, 14), (5, 5), 1, (2, 2), (2, 2, 2, 2)),
    ("5x5-s2-rows", (1, 2, 9, 56), (5, 5), 1, (2, 2), (1, 2, 2, 1)),
    ("5x5-width-1", (1, 2, 6, 1), (5, 5), 1, (1, 1), (2, 2, 2, 2)),
    ("7x7-s1-multiplier-2", (2, 2, 9, 11), (7, 7), 2, (1, 1), (3, 3, 3, 3)),
    ("3x5-stride-h3", (1, 2, 13, 20), (3, 5), 1, (3, 1), (1, 2, 1, 2)),
    ("1x1-depthwise", (1, 3, 4, 17), (1, 1), 1, (1, 1), (0, 0, 0, 0)),
    ("8x8-64-taps-s2", (1, 2, 19, 21), (8, 8), 1, (2, 2), (3, 4, 4, 3)),
    ("9x9-beyond-64-taps-direct", (1, 2, 11, 12), (9, 9), 1, (1, 1), (4, 4, 4, 4)),
    # "same" padding, stride 1 rows narrower than 16 or stride 2 even planes with rows narrower than 64: whole
    # planes as one flat pass read in place (ck_dw_flat.c)
    ("5x5-s1-flat-7x7-multiplier-2", (1, 3, 7, 7), (5, 5), 2, (1, 1), (2, 2, 2, 2)),
    ("5x5-s2-flat-62-wide", (2, 2, 8, 62), (5, 5), 1, (2, 2), (2, 2, 2, 2)),
    ("7x7-s1-flat-9x9", (1, 2, 9, 9), (7, 7), 1, (1, 1), (3, 3, 3, 3)),
    ("7x7-s2-flat-multiplier-3", (1, 2, 16, 12), (7, 7), 3, (2, 2), (3, 3, 3, 3)),
]


@pytest.mark.parametrize("case", DEPTHWISE_ANY, ids=[c[0] for c in DEPTHWISE_ANY])
def test_depthwise_any_window_on_every_kernel(ck, case):
    """Every instruction set's ck_depthwise.c loop against loops, with bias and relu6; the scratch it asks
    for matches the Python mirror (the workspace helper allocates exactly that)."""
    _, xs, window, mult, strides, padding = case
    depthwise_on_every_kernel(ck, xs, window, mult, strides, padding)


BAD_CONV = [("groups-not-dividing", dict(groups=3)), ("zero-stride", dict(stride_h=0)),
            ("negative-pad", dict(pad_left=-1)), ("kernel-larger-than-input", dict(kernel_h=9))]


@pytest.mark.parametrize("name,change", BAD_CONV, ids=[b[0] for b in BAD_CONV])
def test_conv2d_rejects_bad_params(ck, name, change):
    values = K.conv2d_params((1, 4, 5, 5), (4, 2, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 2)
    values.update(change)
    p = ConvParams(**values)
    x, w, out = rand(1, 4, 5, 5), rand(4, 2, 3, 3), np.zeros(400, np.float32)
    owner, ws = workspace(1 << 16)
    assert ck.ck_conv2d(ctypes.byref(p), fptr(x), fptr(w), None, i32(0), fptr(out), ws) != 0
    assert ck.ck_conv2d_workspace_bytes(ctypes.byref(p)) == 0


# ---- pools ----------------------------------------------------------------------------------------

# (name, shape, pool, strides, padding, dilation, ceil_mode, count_include_pad)
POOLS = [
    ("2x2-s2", (1, 2, 6, 6), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, False),
    ("3x3-s2-pad1", (2, 2, 7, 8), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False, False),
    ("3x3-s2-pad1-include-pad", (1, 2, 7, 8), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False, True),
    ("ceil-mode", (1, 2, 6, 7), (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True, False),
    ("ceil-mode-pad-include-pad", (1, 1, 6, 7), (3, 2), (2, 2), (1, 1, 1, 0), (1, 1), True, True),
    ("ceil-mode-drops-window-in-padding", (1, 1, 5, 5), (2, 2), (2, 2), (1, 1, 1, 1), (1, 1), True, True),
    ("dilation2", (1, 2, 9, 8), (2, 3), (1, 2), (1, 2, 0, 1), (2, 2), False, False),
    ("dilation2-ceil", (1, 1, 9, 10), (3, 2), (2, 3), (2, 1, 1, 1), (2, 3), True, True),
    ("asymmetric-strides", (1, 3, 5, 9), (2, 3), (1, 3), (1, 0, 0, 2), (1, 1), False, True),
    ("global-window", (1, 2, 4, 5), (4, 5), (1, 1), (0, 0, 0, 0), (1, 1), False, False),
]


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("case", POOLS, ids=[p[0] for p in POOLS])
def test_pool2d_against_loops(ck, kind, case):
    _, shape, pool, strides, padding, dilation, ceil_mode, include = case
    x = rand(*shape)
    if kind == "max":
        x = -np.abs(x) - 1  # all negative: a padded zero winning would show
    want = pool2d_loops(x, kind, pool, strides, padding, dilation, ceil_mode, include)
    close(ck.pool(kind, x, pool, strides, padding, dilation, ceil_mode, include), want, atol=1e-6, rtol=1e-6)


# Max pool on every instruction set's tap loop (ck_pool.c): rows wide enough for the vector loops at stride 1, 2
# and 3 (ResNet-50's 3x3/2 after conv1), and a window wider than the per-call table of tap ranges (17 columns).
# (name, shape, pool, strides, padding)
MAX_POOLS_WIDE = [
    ("3x3-s2-pad1-wide", (1, 3, 9, 75), (3, 3), (2, 2), (1, 1, 1, 1)),
    ("3x3-s1-pad1-wide", (1, 2, 5, 70), (3, 3), (1, 1), (1, 1, 1, 1)),
    ("2x3-s3-wide", (1, 2, 6, 80), (2, 3), (2, 3), (0, 1, 0, 2)),
    ("window-17-wide", (1, 2, 4, 60), (2, 17), (1, 2), (0, 8, 1, 8)),
    # rows past ck_pool.c's CK_POOL_ROW (256) take the window tap by tap; those up to it fold down it first
    ("3x3-s2-pad1-row-256", (1, 2, 7, 256), (3, 3), (2, 2), (1, 1, 1, 1)),
    ("3x3-s2-pad1-row-257", (1, 2, 7, 257), (3, 3), (2, 2), (1, 1, 1, 1)),
]


@pytest.mark.parametrize("case", MAX_POOLS_WIDE, ids=[c[0] for c in MAX_POOLS_WIDE])
def test_max_pool2d_wide_rows_on_every_kernel(ck, case):
    _, shape, pool, strides, padding = case
    x = -np.abs(rand(*shape)) - 1  # all negative: a padded zero winning would show
    want = pool2d_loops(x, "max", pool, strides, padding, (1, 1), False, False)
    default = ck.ck_gemm_kernel_name()
    try:
        for name in kernel_names(ck):
            if ck.ck_gemm_use_kernel(name.encode()) == 0:
                np.testing.assert_array_equal(ck.pool("max", x, pool, strides, padding, (1, 1), False), want,
                                              err_msg=name)
    finally:
        assert ck.ck_gemm_use_kernel(default) == 0


@pytest.mark.parametrize("width", [40, 300], ids=["folded-rows", "tap-by-tap"])
def test_max_pool2d_skips_nan_and_keeps_infinities(ck, width):
    """`v > o ? v : o` from -inf: a NaN is never taken (a window of NaN only gives -inf), +inf wins, whichever
    way the window is folded."""
    x = -np.abs(rand(1, 2, 6, width)) - 1
    x[0, 0, 1, 3] = np.nan
    x[0, 0, 2:4, 10:13] = np.nan              # one output's whole 3x3 window at stride 1 (rows 2..4: not all)
    x[0, 1, 0:3, 20:23] = np.nan              # rows 0..2, columns 20..22: the whole window of output (0, 20)
    x[0, 1, 4, 7] = np.inf
    got = ck.pool("max", x, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), False)
    clean = np.where(np.isnan(x), -np.inf, x)
    want = pool2d_loops(clean, "max", (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), False, False)
    np.testing.assert_array_equal(got, want)
    assert got[0, 1, 0, 20] == -np.inf and got[0, 1, 2, 7] == np.inf


@pytest.mark.parametrize("seed", range(2))
def test_pool2d_random_geometries(ck, seed):
    """Seeded random pools (8 per seed, max and avg): padding up to the window, ceil mode, dilation."""
    rng = np.random.default_rng(200 + seed)
    done = 0
    while done < 8:
        pool = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        dilation = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
        pads = tuple(int(rng.integers(0, dilation[i % 2] * (pool[i % 2] - 1) + 1)) for i in range(4))
        strides = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
        shape = (1, 2, int(rng.integers(1, 10)), int(rng.integers(1, 13)))
        ceil_mode, include = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
        sizes = [pool_out_size(shape[2 + i], pads[i], pads[i + 2], pool[i], strides[i], dilation[i], ceil_mode)
                 for i in (0, 1)]
        if min(sizes) < 1:
            continue
        x = rand(*shape)
        for kind in ("max", "avg"):
            want = pool2d_loops(x, kind, pool, strides, pads, dilation, ceil_mode, include)
            close(ck.pool(kind, x, pool, strides, pads, dilation, ceil_mode, include), want, atol=1e-6, rtol=1e-6,
                  err_msg=f"{kind} {shape} pool {pool} strides {strides} pads {pads} dilation {dilation} "
                          f"ceil {ceil_mode} include_pad {include}")
        done += 1


def test_pool2d_rejects_padding_as_large_as_window(ck):
    p = PoolParams(**K.pool2d_params((1, 1, 4, 4), (2, 2), (1, 1), (2, 0, 0, 0), (1, 1), False))
    oh, ow = i64(), i64()
    assert ck.ck_pool2d_output_hw(ctypes.byref(p), ctypes.byref(oh), ctypes.byref(ow)) != 0


@pytest.mark.parametrize("shape", [(1, 3, 1, 1), (2, 5, 7, 9), (1, 4, 56, 56)], ids=["1x1", "odd", "56x56"])
def test_global_avg_pool(ck, shape):
    x = rand(*shape)
    out = np.full(shape[:2], np.nan, np.float32)
    assert ck.ck_global_avg_pool2d(i64(shape[0] * shape[1]), i64(shape[2] * shape[3]), fptr(x), fptr(out)) == 0
    close(out, x.astype(np.float64).mean(axis=(2, 3)), atol=1e-6)


# ---- elementwise ----------------------------------------------------------------------------------
NUMPY_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
                "maximum": np.maximum, "minimum": np.minimum}
BROADCASTS = [
    ("same-shape-1d", (37,), (37,)),
    ("same-shape-4d", (2, 3, 4, 5), (2, 3, 4, 5)),
    ("scalar-rhs", (3, 7), ()),
    ("scalar-lhs", (), (4, 5)),
    ("row", (6, 9), (9,)),
    ("column", (6, 9), (6, 1)),
    ("channel-nchw", (2, 8, 5, 5), (8, 1, 1)),
    ("both-broadcast", (4, 1, 6), (1, 5, 1)),
    ("rank-mismatch-5d", (2, 1, 3, 1, 4), (3, 5, 1)),
    ("ones-everywhere", (1, 1, 1), (1,)),
    ("outer-product", (7, 1), (1, 11)),
    ("rank-8", (2, 1, 2, 1, 2, 1, 2, 3), (1, 2, 1, 2, 1, 2, 1, 3)),
    ("zero-size", (0, 3), (3,)),
    # broadcast in the middle where the operand's outer stride (3) equals the broadcast extent (3): the two
    # dims must stay two loops (merged, the operand would be read as if not broadcast)
    ("middle-broadcast-stride-equals-extent", (2, 3, 3), (2, 1, 3)),
]


@pytest.mark.parametrize("name,sa,sb", BROADCASTS, ids=[b[0] for b in BROADCASTS])
def test_binary_broadcasting(ck, name, sa, sb):
    a = rand(*sa)
    b = np.asarray(rand(*sb, low=0.5, high=2.0) * np.sign(rand(*sb)), dtype=np.float32)  # |b| >= 0.5: tame divide
    for op, reference in NUMPY_BINARY.items():
        want = reference(a.astype(np.float64), b.astype(np.float64))
        np.testing.assert_allclose(ck.binary(op, a, b), want, rtol=1e-6, atol=1e-7, err_msg=op)


@pytest.mark.parametrize("seed", range(2))
def test_binary_random_broadcasts(ck, seed):
    """Seeded random shape pairs up to rank 6: each dim of each side kept, set to 1, or dropped."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(25):
        out = [int(v) for v in rng.integers(1, 5, size=int(rng.integers(0, 7)))]
        sides = []
        for _side in range(2):
            shape = [d if rng.random() < 0.6 else 1 for d in out]
            sides.append(tuple(shape[int(rng.integers(0, len(shape) + 1)):]))
        a, b = rand(*sides[0]), rand(*sides[1], low=0.5, high=2.0)
        for op, reference in NUMPY_BINARY.items():
            want = reference(a.astype(np.float64), b.astype(np.float64))
            np.testing.assert_allclose(ck.binary(op, a, b), want, rtol=1e-6, atol=1e-7,
                                       err_msg=f"{op} {sides[0]} {sides[1]}")


def test_binary_output_may_alias_input(ck):
    a, b = rand(5, 8), rand(8)
    want = a + b
    shape = i64_array(a.shape)
    assert ck.ck_binary(i32(0), fptr(a), i32(2), shape, fptr(b), i32(1), i64_array(b.shape), fptr(a), i32(2),
                        shape) == 0
    close(a, want, atol=0, rtol=0)


BAD_BINARY = [("incompatible", (3, 4), (5,), (3, 4)), ("input-rank-above-output", (2, 3, 4), (4,), (3, 4)),
              ("rank-9", (1,) * 9, (1,), (1,) * 9), ("bad-op", (2,), (2,), (2,))]


@pytest.mark.parametrize("name,sa,sb,so", BAD_BINARY, ids=[b[0] for b in BAD_BINARY])
def test_binary_rejects_bad_shapes(ck, name, sa, sb, so):
    a, b, out = rand(*sa), rand(*sb), np.zeros(so, np.float32)
    op = 99 if name == "bad-op" else 0
    assert ck.ck_binary(i32(op), fptr(a), i32(len(sa)), i64_array(sa), fptr(b), i32(len(sb)), i64_array(sb),
                        fptr(out), i32(len(so)), i64_array(so)) != 0


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# (op, numpy, p0, p1, input range)
UNARY = [
    ("negative", np.negative, 0, 0, (-3, 3)), ("abs", np.abs, 0, 0, (-3, 3)), ("exp", np.exp, 0, 0, (-10, 10)),
    ("log", np.log, 0, 0, (1e-3, 100)), ("sqrt", np.sqrt, 0, 0, (0, 100)), ("tanh", np.tanh, 0, 0, (-8, 8)),
    ("sigmoid", _sigmoid, 0, 0, (-30, 30)), ("nn.relu", lambda x: np.maximum(x, 0), 0, 0, (-3, 3)),
    ("clip", lambda x: np.clip(x, -0.5, 1.25), -0.5, 1.25, (-3, 3)),
    ("nn.leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x), 0.2, 0, (-3, 3)),
]


@pytest.mark.parametrize("op,fn,p0,p1,span", UNARY, ids=[u[0] for u in UNARY])
def test_unary(ck, op, fn, p0, p1, span):
    x = rand(1003, low=span[0], high=span[1])
    out = np.full_like(x, np.nan)
    assert ck.ck_unary(i32(K.ENUM_VALUES[K.UNARY_OPS[op]]), i64(x.size), fptr(x), fptr(out), p0, p1) == 0
    close(out, fn(x.astype(np.float64)), rtol=2e-6, atol=1e-6)


def test_unary_rejects_inverted_clip_and_unknown_op(ck):
    x = rand(4)
    assert ck.ck_unary(i32(K.ENUM_VALUES["CK_CLIP"]), i64(4), fptr(x), fptr(x), 1.0, -1.0) != 0
    assert ck.ck_unary(i32(42), i64(4), fptr(x), fptr(x), 0.0, 0.0) != 0


BIAS_AXES = [("nchw-axis1", (2, 5, 3, 4), 1), ("dense-last-axis", (7, 9), 1), ("axis-minus1-4d", (2, 3, 4, 6), 3),
             ("axis0", (5, 2, 3), 0)]


@pytest.mark.parametrize("name,shape,axis", BIAS_AXES, ids=[b[0] for b in BIAS_AXES])
def test_bias_add_any_axis(ck, name, shape, axis):
    x, b = rand(*shape), rand(shape[axis])
    outer, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis + 1:]))
    out = np.full_like(x, np.nan)
    assert ck.ck_bias_add(i64(outer), i64(shape[axis]), i64(inner), fptr(x), fptr(b), fptr(out)) == 0
    view = [1] * len(shape)
    view[axis] = shape[axis]
    close(out, x + b.reshape(view), atol=0, rtol=1e-6)


@pytest.mark.parametrize("center,scale", [(1, 1), (0, 1), (1, 0), (0, 0)], ids=["center-scale", "scale-only",
                                                                                  "center-only", "neither"])
def test_batch_norm_inference(ck, center, scale):
    x = rand(2, 6, 5, 3)
    gamma, beta, mean = rand(6), rand(6), rand(6)
    var = rand(6, low=0.1, high=2.0)
    out = np.full_like(x, np.nan)
    assert ck.ck_batch_norm(i64(2), i64(6), i64(15), fptr(x), fptr(gamma), fptr(beta), fptr(mean), fptr(var),
                            1e-3, i32(center), i32(scale), fptr(out)) == 0
    v = lambda a: a.astype(np.float64)[None, :, None, None]  # noqa: E731
    want = (x - v(mean)) / np.sqrt(v(var) + 1e-3) * (v(gamma) if scale else 1) + (v(beta) if center else 0)
    close(out, want, atol=1e-5)


# ---- shape ops ------------------------------------------------------------------------------------
TRANSPOSES = [("2d", (5, 7), (1, 0)), ("nchw-to-nhwc", (2, 3, 4, 5), (0, 2, 3, 1)), ("reverse-5d", (2, 3, 1, 4, 5),
              (4, 3, 2, 1, 0)), ("identity", (3, 4), (0, 1)), ("swap-inner-blocks", (2, 3, 4, 5), (0, 1, 3, 2)),
              ("rank-8", (2, 1, 3, 2, 1, 2, 3, 2), (7, 0, 5, 2, 6, 1, 4, 3)), ("rank-0", (), ())]


@pytest.mark.parametrize("name,shape,axes", TRANSPOSES, ids=[t[0] for t in TRANSPOSES])
def test_transpose(ck, name, shape, axes):
    x = rand(*shape)
    want = np.transpose(x, axes)
    out = np.full(want.shape, np.nan, np.float32)
    assert ck.ck_transpose(i32(len(shape)), i64_array(shape), (ctypes.c_int32 * max(1, len(axes)))(*axes),
                           fptr(x), fptr(out)) == 0
    np.testing.assert_array_equal(out, want)


def test_transpose_rejects_repeated_axis(ck):
    x = rand(2, 3)
    assert ck.ck_transpose(i32(2), i64_array((2, 3)), (ctypes.c_int32 * 2)(0, 0), fptr(x), fptr(x)) != 0


CONCATS = [("axis0", [(2, 3), (4, 3), (1, 3)], 0), ("axis1-nchw", [(2, 3, 4, 5), (2, 1, 4, 5)], 1),
           ("last-axis", [(3, 2), (3, 5), (3, 1)], 1), ("single", [(2, 2)], 0), ("empty-part", [(2, 0), (2, 3)], 1)]


@pytest.mark.parametrize("name,shapes,axis", CONCATS, ids=[c[0] for c in CONCATS])
def test_concatenate(ck, name, shapes, axis):
    parts = [rand(*s) for s in shapes]
    want = np.concatenate(parts, axis=axis)
    out = np.full(want.shape, np.nan, np.float32)
    ptrs = (f32p * len(parts))(*[fptr(p) for p in parts])
    sizes = i64_array([s[axis] for s in shapes])
    outer, inner = int(np.prod(want.shape[:axis])), int(np.prod(want.shape[axis + 1:]))
    assert ck.ck_concatenate(i32(len(parts)), ptrs, sizes, i64(outer), i64(inner), fptr(out)) == 0
    np.testing.assert_array_equal(out, want)


def test_copy(ck):
    x = rand(3, 17)
    out = np.full_like(x, np.nan)
    assert ck.ck_copy(i64(x.size), fptr(x), fptr(out)) == 0
    np.testing.assert_array_equal(out, x)


# ---- transformer rows: softmax, layer norm, gelu (ck_transformer.c) ---------------------------------
# n straddles the 8 and 4 lanes of the row loops; in place is how the codegen calls them.
ROW_SHAPES = [(1, 1), (3, 7), (2, 8), (5, 13), (4, 128), (2, 301)]


def _softmax64(x):
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("in_place", [False, True], ids=["out", "in-place"])
@pytest.mark.parametrize("rows,n", ROW_SHAPES, ids=[f"{r}x{n}" for r, n in ROW_SHAPES])
def test_softmax_layer_norm_gelu_rows(ck, rows, n, in_place):
    x = 4 * rand(rows, n)
    gamma, beta = rand(n), rand(n)
    cases = [
        ("softmax", lambda src, dst: ck.ck_softmax_rows(i64(rows), i64(n), fptr(src), fptr(dst)), _softmax64(x)),
        ("layer_norm", lambda src, dst: ck.ck_layer_norm_rows(i64(rows), i64(n), fptr(src), fptr(gamma), fptr(beta),
                                                             ctypes.c_float(1e-5), fptr(dst)),
         (x - x.astype(np.float64).mean(-1, keepdims=True)) / np.sqrt(x.astype(np.float64).var(-1, keepdims=True)
                                                                      + 1e-5) * gamma + beta),
        ("gelu", lambda src, dst: ck.ck_gelu(i64(x.size), fptr(src), fptr(dst), i32(0)),
         np.array([0.5 * v * (1 + __import__("math").erf(v / 2 ** 0.5)) for v in x.astype(np.float64).ravel()]
                  ).reshape(x.shape)),
    ]
    for name, call, want in cases:
        src = x.copy()
        dst = src if in_place else np.full_like(x, np.nan)
        assert call(src, dst) == 0, name
        close(dst, want, rtol=2e-5, atol=2e-6, err_msg=name)


@pytest.mark.parametrize("in_place", [False, True], ids=["out", "in-place"])
def test_gelu_negative_tail_keeps_its_relative_accuracy(ck, in_place):
    """Below x = -2, 1 + erf(x / sqrt 2) cancels: the results are tiny and must still be right relative to
    themselves (the 1,000-graph tolerance curve caught 4% off at -5 and 0 at -6 and below)."""
    import math

    x = np.concatenate([np.linspace(-12, -1.5, 157), [-2.0, np.nextafter(np.float32(-2), np.float32(0))]]
                       ).astype(np.float32)
    want = np.array([0.5 * v * math.erfc(-v / 2 ** 0.5) for v in x.astype(np.float64)])
    src = x.copy()
    dst = src if in_place else np.full_like(x, np.nan)
    assert ck.ck_gelu(i64(x.size), fptr(src), fptr(dst), i32(0)) == 0
    close(dst, want, rtol=1e-5, atol=0)


def test_gelu_on_every_kernel_and_thread_count(ck):
    """ck_gelu's erf loop follows the gemm core's instruction set (AVX-512, AVX2, the baseline): each one this CPU
    runs, over several pool ranges and a tail (40,001 elements in [-12, 12], the cancelling negative tail among
    them), in place and not, against float64; 3 threads bit-equal to 1."""
    import math

    x = rand(40_001, low=-12, high=12)
    want = np.array([0.5 * v * math.erfc(-v / 2 ** 0.5) for v in x.astype(np.float64)])
    default, ran = ck.ck_gemm_kernel_name(), []
    try:
        for name in kernel_names(ck):
            if ck.ck_gemm_use_kernel(name.encode()) != 0:
                continue  # this CPU lacks it
            outs = []
            for threads, in_place in ((1, False), (3, True)):
                ck.byoc_set_num_threads(threads)
                src = x.copy()
                dst = src if in_place else np.full_like(x, np.nan)
                assert ck.ck_gelu(i64(x.size), fptr(src), fptr(dst), i32(0)) == 0
                close(dst, want, rtol=1e-5, atol=1e-7, err_msg=f"{name}, {threads} threads")
                outs.append(dst)
            np.testing.assert_array_equal(outs[0], outs[1], err_msg=name)
            ran.append(name)
    finally:
        ck.byoc_set_num_threads(1)
        assert ck.ck_gemm_use_kernel(default) == 0
    assert ran and ran[-1].startswith("baseline-")


def test_softmax_and_layer_norm_rows_on_every_kernel_and_thread_count(ck):
    """bert_tiny's 128-wide rows, 100 of them: ranges of 32 rows (a row weighs four floats of a copy), three and a
    short one; the row loops follow the gemm core's instruction set (AVX-512, AVX2, the baseline): each one this
    CPU runs, against float64, 3 threads bit-equal to 1."""
    x = 4 * rand(100, 128)
    gamma, beta = rand(128), rand(128)
    x64 = x.astype(np.float64)
    want = {"softmax": _softmax64(x),
            "layer_norm": (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * gamma + beta}
    default, ran = ck.ck_gemm_kernel_name(), []
    try:
        for name in kernel_names(ck):
            if ck.ck_gemm_use_kernel(name.encode()) != 0:
                continue  # this CPU lacks it
            outs = {}
            for threads in (1, 3):
                ck.byoc_set_num_threads(threads)
                got = {k: np.full_like(x, np.nan) for k in want}
                assert ck.ck_softmax_rows(i64(100), i64(128), fptr(x), fptr(got["softmax"])) == 0
                assert ck.ck_layer_norm_rows(i64(100), i64(128), fptr(x), fptr(gamma), fptr(beta),
                                             ctypes.c_float(1e-5), fptr(got["layer_norm"])) == 0
                for k in want:
                    close(got[k], want[k], rtol=2e-5, atol=2e-6, err_msg=f"{name} {k}, {threads} threads")
                outs[threads] = got
            for k in want:
                np.testing.assert_array_equal(outs[3][k], outs[1][k], err_msg=f"{name} {k}")
            ran.append(name)
    finally:
        ck.byoc_set_num_threads(1)
        assert ck.ck_gemm_use_kernel(default) == 0
    assert ran and ran[-1].startswith("baseline-")


def test_softmax_rows_with_large_logits(ck):
    """Rows far from 0 (logits of 100 and more, of -300): exp overflows or underflows unless the row's
    maximum is subtracted first (the mutation campaign's 'softmax without max subtraction' passed the
    other softmax tests, whose logits stay within 4)."""
    x = (40 * rand(3, 17) + np.array([[120.0], [-300.0], [0.0]])).astype(np.float32)
    out = np.full_like(x, np.nan)
    assert ck.ck_softmax_rows(i64(3), i64(17), fptr(x), fptr(out)) == 0
    close(out, _softmax64(x), rtol=2e-5, atol=2e-6)


def test_softmax_rows_with_nan_and_infinity(ck):
    """As numpy: a NaN anywhere makes its row NaN, and so does +inf (inf - inf is NaN); -inf entries give 0;
    the other rows are untouched by them."""
    x = np.array([[1.0, np.nan, 2.0, 0.5, 0.1, 0.2, 0.3, 0.4, 0.9],
                  [1.0, np.inf, 2.0, 0.5, 0.1, 0.2, 0.3, 0.4, 0.9],
                  [1.0, -np.inf, 2.0, 0.5, 0.1, 0.2, 0.3, 0.4, np.nan],
                  [1.0, -np.inf, 2.0, 0.5, 0.1, 0.2, 0.3, 0.4, 0.9]], np.float32)
    out = np.zeros_like(x)
    assert ck.ck_softmax_rows(i64(4), i64(9), fptr(x), fptr(out)) == 0
    want = _softmax64(x)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    close(np.nan_to_num(out), np.nan_to_num(want), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("in_place", [False, True], ids=["out", "in-place"])
def test_softmax_rows_masked_attention_gives_exact_zeros(ck, in_place):
    """Attention scores with a causal mask (-inf above the diagonal) and padding masked by -1e9: as numpy
    float64, every masked position is exactly 0 (not exp(-87) ~ 1e-38), the rest close; a row masked
    entirely is NaN as in numpy (-inf - -inf)."""
    rows, n = 37, 37                      # 37: the 8-lane loop and its tail
    x = 4 * rand(rows, n)
    x[np.triu_indices(rows, 1)] = -np.inf
    x[:, 30:] = -1e9
    x[-1] = -np.inf
    want = _softmax64(x)
    src = x.copy()
    out = src if in_place else np.full_like(x, np.nan)
    assert ck.ck_softmax_rows(i64(rows), i64(n), fptr(src), fptr(out)) == 0
    masked = np.isneginf(x[:-1]) | (x[:-1] == -1e9)
    assert (want[:-1][masked] == 0).all()   # the reference's zeros are exact too
    assert (out[:-1][masked] == 0).all(), out[:-1][masked].max()
    close(out[:-1], want[:-1], rtol=2e-5, atol=2e-6)
    assert np.isnan(out[-1]).all() and np.isnan(want[-1]).all()


# ---- the description module ------------------------------------------------------------------------

def test_every_op_function_is_described():
    """(That the descriptions agree with the C is tests/test_ccompiler_kernel_check.py's, by the compiler.)"""
    assert set(K.OP_FUNCTIONS.values()) <= set(K.FUNCTIONS)


WORKSPACE_CALLS = [
    ("conv2d-3x3", "nn.conv2d", [(1, 64, 56, 56), (64, 64, 3, 3)],
     dict(strides=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1)),
    ("conv2d-depthwise", "nn.conv2d", [(1, 32, 7, 7), (32, 1, 3, 3)],
     dict(strides=(2, 2), padding=(1, 1, 1, 1), dilation=(1, 1), groups=32)),
    ("conv2d-groups2-dilated", "nn.conv2d", [(2, 6, 9, 9), (4, 3, 3, 3)],
     dict(strides=(1, 1), padding=(0, 0, 0, 0), dilation=(2, 2), groups=2)),
    ("conv2d-pixel-major-7x7", "nn.conv2d", [(1, 512, 7, 7), (2048, 512, 1, 1)],
     dict(strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1)),
    ("conv2d-pixel-major-3x3-7x7", "nn.conv2d", [(1, 512, 7, 7), (512, 512, 3, 3)],
     dict(strides=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1)),
    ("dense-3d-data", "nn.dense", [(2, 5, 300), (7, 300)], dict(units=None)),
    ("matmul-transposed", "nn.matmul", [(300, 9), (33, 300)], dict(transpose_a=True, transpose_b=True)),
    ("relu-needs-none", "nn.relu", [(4, 4)], {}),
]


@pytest.mark.parametrize("name,op,shapes,attrs", WORKSPACE_CALLS, ids=[w[0] for w in WORKSPACE_CALLS])
def test_workspace_bytes_per_call_matches_c(ck, name, op, shapes, attrs):
    got = K.workspace_bytes(op, shapes, attrs)
    if op == "nn.conv2d":
        p = ConvParams(**K.conv2d_params(shapes[0], shapes[1], attrs["strides"], attrs["padding"], attrs["dilation"],
                                         attrs["groups"]))
        assert got == ck.ck_conv2d_workspace_bytes(ctypes.byref(p))
    elif op == "nn.dense":
        assert got == ck.ck_dense_workspace_bytes(int(np.prod(shapes[0][:-1])), shapes[1][0], shapes[0][-1]) > 0
    elif op == "nn.matmul":
        assert got == ck.ck_matmul_workspace_bytes(9, 33, 300) > 0
    else:
        assert got == 0


def test_struct_initializer_names_every_field():
    text = K.c_struct_initializer(K.CONV2D_PARAM_FIELDS, K.conv2d_params((1, 2, 3, 4), (5, 2, 1, 1), (1, 1),
                                                                          (0, 0, 0, 0), (1, 1), 1))
    assert text.startswith("{.batch = 1, .channels = 2, .height = 3, .width = 4, .out_channels = 5")
    with pytest.raises(ValueError, match="groups"):
        K.c_struct_initializer(K.CONV2D_PARAM_FIELDS, {f: 1 for f in K.CONV2D_PARAM_FIELDS[:-1]})


# ---- warnings on every compiler and optimization level -------------------------------------------
# Optimization levels change which warnings fire (maybe-uninitialized needs -O1+); foreign
# compilers have other vector widths and excess precision (s390x evaluates float as double).
# gcc -O3 and clang -O0 compile the library with -Werror for the tests above, and every matrix lane compiles the
# kernels its model uses with -Werror (gcc and clang at -O0 and -O3, and armhf at -O3: ccompiler's float and int8
# kernels there by default); these whole-library builds wait for `every_toolchain` (32-bit armhf at -O2 left the
# default run in session 16: 15-17 s on a slower CPU).
WARNING_BUILDS = [("gcc", "-O1", True), ("gcc", "-O2", True), ("clang", "-O2", True),
                  ("gcc", "-O2 -march=native", True), ("aarch64-linux-gnu-gcc", "-O2", True),
                  ("arm-linux-gnueabihf-gcc", "-O2", True), ("riscv64-linux-gnu-gcc", "-O2", True),
                  ("s390x-linux-gnu-gcc", "-O2", True)]


@pytest.mark.skipif(bool(SANITIZE), reason="compile-only, once")
@pytest.mark.parametrize("cc,opt", [
    pytest.param(cc, opt, id=f"{cc}{opt.replace(' ', '')}", marks=[pytest.mark.every_toolchain] if beyond else [])
    for cc, opt, beyond in WARNING_BUILDS])
def test_compiles_without_warnings(cc, opt, tmp_path):
    needs.programs(cc)
    for source in K.SOURCES:
        cmd = [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", *opt.split(), "-I", str(K.INCLUDE_DIR),
               *K.standalone_args()[:3], "-c", str(source), "-o", str(tmp_path / (source.stem + ".o"))]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"


# ---- Winograd F(m x m, 3 x 3) (ck_winograd.c) ---------------------------------------------------------

def test_winograd_matrices_compute_a_correlation():
    """winograd.py's G, B^T and A^T (the layout the C transforms follow) give an explicit 3x3 correlation."""
    rng = np.random.default_rng(5)
    for m in (2, 4):
        d, g = rng.standard_normal((m + 2, m + 2)), rng.standard_normal((3, 3))
        y = WG.AT[m] @ ((WG.G[m] @ g @ WG.G[m].T) * (WG.BT[m] @ d @ WG.BT[m].T)) @ WG.AT[m].T
        want = [[np.sum(g * d[i:i + 3, j:j + 3]) for j in range(m)] for i in range(m)]
        np.testing.assert_allclose(y, want, rtol=0, atol=1e-12)


def winograd(ck, m, x, w, padding, bias=None, residual=None, act=0, packed=None):
    """ck_conv2d_winograd on the codegen's packed weight (winograd.pack_weight), sizes checked against the mirror."""
    values = K.conv2d_params(x.shape, w.shape, (1, 1), padding, (1, 1), 1)
    p = ConvParams(**values)
    for name in ("ck_conv2d_winograd_workspace_bytes", "ck_conv2d_winograd_weight_bytes"):
        getattr(ck.lib, name).restype = ctypes.c_size_t
    nbytes = ck.ck_conv2d_winograd_workspace_bytes(ctypes.byref(p), i32(m))
    assert nbytes == WG.workspace_bytes(values, m), "Python mirror of the workspace size"
    packed = WG.pack_weight(values, m, w) if packed is None else packed
    assert ck.ck_conv2d_winograd_weight_bytes(ctypes.byref(p), i32(m)) == 4 * packed.size
    oh, ow = K.conv2d_output_hw(values)
    out = np.full((x.shape[0], w.shape[0], oh, ow), np.nan, np.float32)
    owner, ws = workspace(nbytes)
    assert ck.ck_conv2d_winograd(ctypes.byref(p), i32(m), fptr(x), fptr(packed), fptr(bias), fptr(residual), i32(act),
                                 fptr(out), ws) == 0
    return out


def winograd_bound(x, w, padding, m):
    """An error bound per output: the float64 sum of |w| |x| over the window times F(m)'s unit roundoffs (F(2x2)
    rounds each transformed operand and product a few times, F(4x4) scales by up to 8 on the way)."""
    return (2.0 ** -21 if m == 2 else 2.0 ** -17) * conv2d_einsum(np.abs(x), np.abs(w), (1, 1), padding, (1, 1), 1)


# (name, data shape, out channels, padding): tiles that overhang odd planes (7x7, 9x13), uneven and no padding,
# more tiles than a few blocks (tasks of 32-tile blocks) and few (every tile at once, products by position), two K blocks
WINOGRAD_CASES = [
    ("7x7-overhang", (1, 16, 7, 7), 24, (1, 1, 1, 1)),
    ("9x13-uneven-pads-batch2", (2, 5, 9, 13), 7, (1, 0, 2, 1)),
    ("no-padding", (1, 8, 10, 10), 9, (0, 0, 0, 0)),
    ("blocked-two-k-blocks", (1, 260, 14, 20), 80, (1, 1, 1, 1)),     # 70 tiles: 3 blocks; 80 channels: 2 passes
    ("shared-few-tiles", (1, 40, 12, 11), 50, (1, 1, 1, 1)),
]
WINOGRAD_EPILOGUES = [("plain", False, False, 0), ("bias-relu", True, False, 1),
                      ("bias-residual-relu6", True, True, 2), ("residual-relu", False, True, 1)]
# each case with each m once, the epilogues taken in turn (every epilogue meets both m and both modes)
WINOGRAD_RUNS = [pytest.param(m, case, *WINOGRAD_EPILOGUES[(2 * i + j) % len(WINOGRAD_EPILOGUES)],
                              id=f"{case[0]}-F{m}-{WINOGRAD_EPILOGUES[(2 * i + j) % len(WINOGRAD_EPILOGUES)][0]}")
                 for i, case in enumerate(WINOGRAD_CASES) for j, m in enumerate((2, 4))]


@pytest.mark.parametrize("m,case,name,with_bias,with_residual,act", WINOGRAD_RUNS)
def test_winograd_against_float64(ck, m, case, name, with_bias, with_residual, act):
    _, xs, o, padding = case
    x, w, b = 4 * rand(*xs), rand(o, xs[1], 3, 3), rand(o)
    conv = conv2d_einsum(x, w, (1, 1), padding, (1, 1), 1) + (b[None, :, None, None] if with_bias else 0)
    residual = 3 * rand(*conv.shape) if with_residual else None
    got = winograd(ck, m, x, w, padding, b if with_bias else None, residual, act)
    want = activate(conv + (residual if with_residual else 0), act)
    err, bound = np.abs(got - want), winograd_bound(x, w, padding, m) + 1e-6
    assert np.all(err <= bound), f"worst error {err.max():.3g} at bound {bound.ravel()[np.argmax(err)]:.3g}"


def test_winograd_planted_wrong_coefficient_fails(ck, monkeypatch):
    """The check above catches a transform off by one coefficient (G's 1/2 as 0.49 in one place)."""
    x, w = 4 * rand(1, 16, 7, 7), rand(24, 16, 3, 3)
    values = K.conv2d_params(x.shape, w.shape, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    wrong = WG.G[2].copy()
    wrong[1, 1] = 0.49
    monkeypatch.setitem(WG.G, 2, wrong)
    got = winograd(ck, 2, x, w, (1, 1, 1, 1), packed=WG.pack_weight(values, 2, w))
    err = np.abs(got - conv2d_einsum(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1))
    assert not np.all(err <= winograd_bound(x, w, (1, 1, 1, 1), 2) + 1e-6)


@pytest.mark.parametrize("m", [2, 4], ids=["F2", "F4"])
@pytest.mark.parametrize("xs,o", [((1, 24, 22, 22), 80), ((1, 30, 9, 9), 100)], ids=["blocked", "shared"])
def test_winograd_same_bits_at_every_thread_count(ck, m, xs, o):
    x, w, b = rand(*xs), rand(o, xs[1], 3, 3), rand(o)
    residual = rand(xs[0], o, xs[2], xs[3])
    outs = []
    try:
        for threads in (1, 2, 3, 8):
            ck.byoc_set_num_threads(threads)
            outs.append(winograd(ck, m, x, w, (1, 1, 1, 1), b, residual, 1))
    finally:
        ck.byoc_set_num_threads(1)
    for threads, out in zip((2, 3, 8), outs[1:]):
        np.testing.assert_array_equal(out, outs[0], err_msg=f"{threads} threads differ from 1")


def test_winograd_on_every_micro_kernel_that_runs_here(ck):
    """The products on each register-tile kernel (AVX-512's tall tiles on whole weight slivers, AVX2's and the
    baseline's mr-row tiles): a blocked plane in two passes of output channels (80: 72 + 8) and a few-tile one."""
    default = ck.ck_gemm_kernel_name()
    cases = [((1, 20, 18, 18), 80), ((1, 30, 9, 9), 50)]
    data = [(4 * rand(*xs), rand(o, xs[1], 3, 3), rand(o)) for xs, o in cases]
    want = [np.maximum(conv2d_einsum(x, w, (1, 1), (1, 1, 1, 1), (1, 1), 1) + b[None, :, None, None], 0)
            for x, w, b in data]
    ran = []
    try:
        for name in kernel_names(ck):
            if ck.ck_gemm_use_kernel(name.encode()) != 0:
                continue  # this CPU lacks it
            for (x, w, b), expect in zip(data, want):
                err = np.abs(winograd(ck, 2, x, w, (1, 1, 1, 1), b, None, 1) - expect)
                assert np.all(err <= winograd_bound(x, w, (1, 1, 1, 1), 2) + 1e-6), (name, x.shape, err.max())
            ran.append(name)
    finally:
        assert ck.ck_gemm_use_kernel(default) == 0
    assert any(n.startswith("baseline-") for n in ran), ran


def test_winograd_sizes_agree_with_c_and_refuse_other_geometries(ck):
    rng = np.random.default_rng(9)
    for name in ("ck_conv2d_winograd_workspace_bytes", "ck_conv2d_winograd_weight_bytes"):
        getattr(ck.lib, name).restype = ctypes.c_size_t
    for _ in range(30):
        c, o = int(rng.integers(1, 300)), int(rng.integers(1, 300))
        h, wd = int(rng.integers(1, 60)), int(rng.integers(1, 60))
        values = K.conv2d_params((1, c, h + 2, wd + 2), (o, c, 3, 3), (1, 1), (int(rng.integers(0, 3)),) * 4, (1, 1), 1)
        p = ConvParams(**values)
        for m in (2, 4):
            assert ck.ck_conv2d_winograd_workspace_bytes(ctypes.byref(p), i32(m)) == WG.workspace_bytes(values, m)
            assert ck.ck_conv2d_winograd_weight_bytes(ctypes.byref(p), i32(m)) == WG.weight_bytes(values, m)
    base = K.conv2d_params((1, 4, 8, 8), (4, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    for change, m in [(dict(stride_w=2), 2), (dict(dilation_h=2), 2), (dict(kernel_w=5), 2), (dict(groups=2), 2),
                      ({}, 3), ({}, 0)]:
        p = ConvParams(**{**base, **change})
        assert ck.ck_conv2d_winograd_workspace_bytes(ctypes.byref(p), i32(m)) == 0, (change, m)
        assert ck.ck_conv2d_winograd(ctypes.byref(p), i32(m), None, None, None, None, i32(0), None, None) != 0


# ---- sanitizers ---------------------------------------------------------------------------------

@pytest.mark.skipif(bool(SANITIZE), reason="this is the run under sanitizers")
@pytest.mark.parametrize("cc", RERUN_COMPILERS)
def test_whole_suite_under_sanitizers(cc):
    """This file again, against a -fsanitize=address,undefined build (the ASan runtime preloaded into
    Python); any finding aborts the run."""
    sanitizer_rerun.rerun(cc, __file__, prebuild=lambda cc, flags: _compile(cc, flags, f"libck-{cc}-asan-ubsan.so"))
