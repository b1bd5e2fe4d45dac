"""ccompiler's int8 side (targets/ccompiler/rules_qnn.py, kernels/ck_q*.c) against independent results.

- The kernel library through ctypes: the codegen's numpy mirrors (packed weight layout, scratch sizes)
  equal the C's; ck_qconv2d / ck_qdense with every int8 GEMM kernel this CPU runs (AMX, AVX512-VNNI and
  the portable one) equal a numpy computation written here (int64 sums, float32 requantization); the bounded
  scratch path (im2col in chunks of output pixels) equals it and the whole-image path on shapes with
  padding, strides, dilation and groups.
- Small quantized graphs built for ccompiler (every op in a ccompiler region) equal byoc's integer
  reference exactly: conv2d geometries (1x1, padded, strided, grouped, depthwise, int8 data),
  dense, qnn.add, int8 max pool, quantize/dequantize per channel.
- The tiny quantized zoo models (onnxruntime.quantization, QDQ and QOperator) wholly in ccompiler
  regions: equal to the reference, and >= 99.9% equal / at most 1 LSB from onnxruntime. One case by
  default; every format, toolchain and executor behind the `int8` marker (docs/matrix.md).
"""
from __future__ import annotations

import ctypes
import itertools
import platform
from pathlib import Path

import numpy as np
import pytest

import needs
from conv_geometries import conv_geometries
from shared_library import kernel_library

import byoc_compiler as byoc
from byoc_compiler.ir import Constant, Function, IRModule, Var
from byoc_compiler.op import tflite_math
from byoc_compiler.ir.types import TensorType
from byoc_compiler.op.registry import make_call
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.transform import InferType

from byoc_compiler.contrib.ccompiler import kernels as K
from byoc_compiler.contrib.ccompiler import pair_order
from byoc_compiler.contrib.ccompiler import qkernels as Q

ROOT = Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(2026)


# ---- the kernel library through ctypes --------------------------------------------------------------

class ConvParams(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in K.CONV2D_PARAM_FIELDS]


class QParams(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32) for name in Q.QPARAM_FIELDS]


class QConvParams(ctypes.Structure):
    _fields_ = [("conv", ConvParams), ("q", QParams), ("im2col_columns", ctypes.c_int64), ("winograd", ctypes.c_int32),
                ("pairs", ctypes.c_int32), ("channel_order", ctypes.POINTER(ctypes.c_int32)),
                ("channels_last", ctypes.c_int32)]


class QDenseParams(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("units", ctypes.c_int64), ("depth", ctypes.c_int64), ("q", QParams),
                ("direct_rows", ctypes.c_int64)]


@pytest.fixture(scope="module", params=["gcc-O3", pytest.param("clang-O0", marks=pytest.mark.int8)])
def ck(request):
    cc, opt = request.param.split("-")
    needs.programs(cc)
    # the kernel suite's command (tests/test_ccompiler_kernels.py): one library for both files
    out = kernel_library(cc, [f"-{opt}"], K.SOURCES, f"libck-{request.param}.so")
    lib = ctypes.CDLL(str(out))
    lib.ck_qgemm_kernel_name.restype = ctypes.c_char_p
    for name in ("ck_qconv2d_workspace_bytes", "ck_qconv2d_packed_weight_bytes", "ck_qdense_workspace_bytes"):
        getattr(lib, name).restype = ctypes.c_size_t
    return lib


def _kernels(lib) -> list[str]:
    return [k for k in ("amx-int8-32x32", "avx512vnni-8x32", "avx2-8x32", "portable-8x32") if lib.ck_qgemm_use_kernel(k.encode()) == 0]


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f if line.startswith("flags")), set())
    except OSError:
        return set()


def test_amx_kernel_runs_where_the_cpu_has_it(ck):
    """On an x86-64 Linux CPU with AMX-INT8 the library gets the tile state and offers the AMX kernel (so the
    tests above run it); elsewhere it refuses it."""
    has_amx = platform.system() == "Linux" and platform.machine() == "x86_64" and \
        {"amx_tile", "amx_int8", "avx512_vnni"} <= _cpu_flags()
    assert ("amx-int8-32x32" in _kernels(ck)) == has_amx


def _requant(acc: np.ndarray, scale: np.ndarray, q: dict, axis: int) -> np.ndarray:
    """float32(acc) * scale rounded to float32, ties to even, + zero point, clamped (written out here)."""
    shape = [1] * acc.ndim
    shape[axis] = -1
    p = acc.astype(np.float32) * scale.astype(np.float32).reshape(shape)
    v = np.rint(p.astype(np.float64)) + q["output_zero_point"]
    return np.clip(v, q["out_min"], q["out_max"])


def _conv_int64(x, w, p):
    """Direct int64 convolution (x already minus its zero point), NCHW/OIHW, groups."""
    n, c, h, wd = x.shape
    o = w.shape[0]
    oh, ow = Q._output_hw(p)
    xp = np.zeros((n, c, h + p["pad_top"] + p["pad_bottom"], wd + p["pad_left"] + p["pad_right"]), np.int64)
    xp[:, :, p["pad_top"]:p["pad_top"] + h, p["pad_left"]:p["pad_left"] + wd] = x
    cg, og = c // p["groups"], o // p["groups"]
    out = np.zeros((n, o, oh, ow), np.int64)
    for i in range(p["kernel_h"]):
        for j in range(p["kernel_w"]):
            rows = xp[:, :, i * p["dilation_h"]::p["stride_h"], j * p["dilation_w"]::p["stride_w"]][:, :, :oh, :ow]
            for g in range(p["groups"]):
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", rows[:, g * cg:(g + 1) * cg],
                                                         w[g * og:(g + 1) * og, :, i, j].astype(np.int64))
    return out


# (id, data shape, weight shape, strides, padding, groups, input dtype[, dilation])
CONVS = [
    ("1x1", (1, 16, 5, 7), (24, 16, 1, 1), (1, 1), (0, 0, 0, 0), 1, "uint8"),
    ("3x3-pad-odd-sizes", (2, 5, 9, 11), (13, 5, 3, 3), (1, 1), (1, 1, 1, 1), 1, "uint8"),
    ("3x3-stride2-int8", (1, 8, 10, 10), (16, 8, 3, 3), (2, 2), (1, 0, 1, 1), 1, "int8"),
    ("1x1-stride2-k-tail", (1, 6, 8, 8), (9, 6, 1, 1), (2, 2), (0, 0, 0, 0), 1, "uint8"),
    # 75 output columns a row: the stride-2 gather in a 64-byte step and a masked one
    ("1x1-stride2-wide", (1, 5, 4, 150), (8, 5, 1, 1), (2, 2), (0, 0, 0, 0), 1, "int8"),
    # 49 and 1 output pixels: a panel's single last column (ck_qcolumn_pairs_avx2), its k in one block of steps
    # and a tail (40), in two blocks (3x3 of 64 channels: 144 steps)
    ("1x1-7x7-last-column", (1, 40, 7, 7), (16, 40, 1, 1), (1, 1), (0, 0, 0, 0), 1, "uint8"),
    ("3x3-7x7-deep-int8", (1, 64, 7, 7), (8, 64, 3, 3), (1, 1), (1, 1, 1, 1), 1, "int8"),
    ("1x1-one-pixel", (1, 20, 1, 1), (10, 20, 1, 1), (1, 1), (0, 0, 0, 0), 1, "uint8"),
    ("grouped", (1, 8, 6, 6), (12, 4, 3, 3), (1, 1), (1, 1, 1, 1), 2, "int8"),
    ("depthwise-3x3", (1, 6, 9, 9), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), 6, "uint8"),
    ("depthwise-stride2-int8", (1, 5, 8, 8), (5, 1, 3, 3), (2, 2), (1, 1, 1, 1), 5, "int8"),
    ("depthwise-7x7-plane", (1, 4, 7, 7), (4, 1, 7, 7), (1, 1), (0, 0, 0, 0), 4, "uint8"),
    # a window over the whole (non-square) plane: one dot product per plane, two images of int8 planes
    ("depthwise-whole-plane-int8", (2, 5, 3, 6), (5, 1, 3, 6), (1, 1), (0, 0, 0, 0), 5, "int8"),
    # rows of 16 output columns and a tail: the vector depthwise row (stride 1 and 2)
    ("depthwise-wide-rows", (1, 3, 5, 40), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), 3, "uint8"),
    ("depthwise-wide-stride2-int8", (2, 3, 6, 71), (3, 1, 3, 3), (2, 2), (1, 1, 1, 1), 3, "int8"),
    # 16 outputs' taps span 15 * 4 + 5 = 65 bytes: one past a 64-byte load, so not the VBMI plane kernel
    ("depthwise-stride4-5x5-int8", (1, 3, 9, 70), (3, 1, 5, 5), (4, 4), (0, 0, 0, 0), 3, "int8"),
    # MobileNetV2's small planes: the AVX2 plane kernel's flat pass (14x14, 7x7) and its rows at stride 2 ending
    # in a partial vector; dilated windows on both
    ("depthwise-14x14-flat-int8", (1, 5, 14, 14), (5, 1, 3, 3), (1, 1), (1, 1, 1, 1), 5, "int8"),
    ("depthwise-7x7-stride2", (1, 4, 7, 7), (4, 1, 3, 3), (2, 2), (1, 1, 1, 1), 4, "uint8"),
    # rows of 3 and 5 bytes: the bordered copy's byte and overlapping 4-byte paths (ck_qcopy_row)
    ("depthwise-rows-of-3", (1, 3, 6, 3), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), 3, "uint8"),
    ("depthwise-rows-of-5-int8", (1, 2, 5, 5), (2, 1, 3, 3), (1, 1), (1, 1, 1, 1), 2, "int8"),
    ("depthwise-dilated-flat", (1, 4, 9, 10), (4, 1, 3, 3), (1, 1), (2, 2, 2, 2), 4, "int8", (2, 2)),
    ("depthwise-dilated-stride2-rows", (1, 3, 12, 37), (3, 1, 3, 3), (2, 2), (2, 2, 2, 2), 3, "uint8", (2, 2)),
    ("7x7-stride2-wide", (1, 3, 40, 40), (8, 3, 7, 7), (2, 2), (3, 3, 3, 3), 1, "uint8"),
    # 576 output pixels: nine column chunks of two panels and an im2col of three channel tasks on the thread pool
    ("3x3-parallel", (1, 12, 24, 24), (20, 12, 3, 3), (1, 1), (1, 1, 1, 1), 1, "uint8"),
    # 40 bordered planes of 42x42: the input copy in five ranges of planes on the pool
    ("3x3-bordered-copy-split", (1, 40, 40, 40), (8, 40, 3, 3), (1, 1), (1, 1, 1, 1), 1, "int8"),
    # bordered rows of 72 bytes: two 64-byte steps of the AVX-512 row copy, the second ending in the right border
    ("3x3-bordered-wide-rows", (1, 3, 5, 70), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), 1, "int8"),
    # AMX's 32 x 32 blocks: 72 channels = two blocks + an 8-row tile, K 180 = two 64-byte k-blocks + a tail
    # read past the row, 81 pixels = two panels + 17 columns; grouped: the last block reads into the next group
    ("amx-blocks-k-tail", (1, 20, 9, 9), (72, 20, 3, 3), (1, 1), (1, 1, 1, 1), 1, "int8"),
    ("amx-grouped-1x1", (1, 18, 5, 9), (96, 9, 1, 1), (1, 1), (0, 0, 0, 0), 2, "uint8"),
    # 196 pixels = 7 panels, all in the planned scratch: packed first, then tasks of 32 rows over all of them
    # (72 channels: two tasks of a block, one of an 8-row tile)
    ("rows-over-all-panels", (1, 40, 14, 14), (72, 40, 1, 1), (1, 1), (0, 0, 0, 0), 1, "int8"),
    # a panel's last columns as an 8-column eighth of the AVX2 tile: 49 pixels = 32 + 16 + 1 with 150 k-steps (two
    # k-blocks: the eighth's sums carried from the first), 56 = 32 + 16 + 8
    ("1x1-7x7-deep-k", (1, 600, 7, 7), (16, 600, 1, 1), (1, 1), (0, 0, 0, 0), 1, "uint8"),
    ("1x1-tail-of-24", (1, 24, 7, 8), (12, 24, 1, 1), (1, 1), (0, 0, 0, 0), 1, "int8"),
    # 2,304 pixels: the GEMM's tasks are 128 columns wide from 2,048 on (32 below: the cases above)
    ("3x3-wide-chunks", (1, 4, 48, 48), (40, 4, 3, 3), (1, 1), (1, 1, 1, 1), 1, "uint8"),
]
THREADS = (1, 2, 3, 8)   # every count computes the same bytes (the split depends on the shape alone)


def _draw(shape, dtype):
    lo, hi = Q.TYPE_RANGE[dtype]
    return RNG.integers(lo, hi + 1, size=shape).astype(dtype)


def _conv_case(case, w):
    """(data, bias, scale, input zero point, geometry, ck_qconv2d_params, the output numpy computes) of a CONVS case
    with weight w: uint8 out, float32 rounding, per-channel scales."""
    _, dshape, wshape, strides, padding, groups, in_dtype, *dilation = case
    x = _draw(dshape, in_dtype)
    bias = RNG.integers(-3000, 3000, size=wshape[0]).astype(np.int32)
    scale = RNG.uniform(1e-4, 2e-3, size=wshape[0]).astype(np.float32)
    xz = int(_draw((), in_dtype))
    p = K.conv2d_params(dshape, wshape, strides, padding, dilation[0] if dilation else (1, 1), groups)
    q = Q.qparams(in_dtype, "uint8", xz, 77, out_min=10)
    want = _requant(_conv_int64(x.astype(np.int64) - xz, w, p) + bias.reshape(1, -1, 1, 1), scale, q, 1)
    return x, bias, scale, xz, p, QConvParams(ConvParams(**p), QParams(**q)), want


@pytest.mark.parametrize("case", CONVS, ids=[c[0] for c in CONVS])
def test_qconv2d_kernels_equal_numpy(ck, case):
    _, _, wshape, _, _, groups, in_dtype, *_ = case
    w = _draw(wshape, "int8")
    x, bias, scale, xz, p, params, want = _conv_case(case, w)
    depthwise = Q.is_depthwise(p)
    assert ck.ck_qconv2d_packed_weight_bytes(ctypes.byref(params)) == (0 if depthwise else Q.pack_weight(groups, w).size)
    assert ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)) == Q.qconv2d_workspace_bytes(p)
    if depthwise:
        weight = w
    else:
        weight = np.zeros(Q.pack_weight(groups, w).size, np.int8)
        assert ck.ck_qconv2d_pack_weight(ctypes.byref(params), _ptr(w), _ptr(weight)) == 0
        np.testing.assert_array_equal(weight, Q.pack_weight(groups, w))
    offset = 128 if in_dtype == "int8" and not depthwise else 0
    folded = Q.fold_bias(w, bias, xz + offset, np.zeros(wshape[0], np.int64))
    _every_kernel_and_thread_count(ck, params, x, weight, folded, scale, want)


def _every_kernel_and_thread_count(ck, params, x, weight, folded, scale, want):
    """ck_qconv2d with every GEMM kernel this CPU runs at every THREADS count equals `want` (uint8 out)."""
    ws = np.zeros(ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)) + 1, np.uint8)[1:]   # one byte off alignment
    try:
        for kernel, threads in itertools.product(_kernels(ck), THREADS):
            assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0 and ck.byoc_set_num_threads(threads) == 0
            out = np.zeros(want.shape, np.uint8)
            assert ck.ck_qconv2d(ctypes.byref(params), _ptr(x), _ptr(weight), _ptr(folded), _ptr(scale),
                                 _ptr(out), _ptr(ws)) == 0
            np.testing.assert_array_equal(out, want, err_msg=f"{kernel}, {threads} threads")
    finally:
        ck.byoc_set_num_threads(0)


# (id, weight values): uniform int8 (a quarter of pairs share a sign, many of those sum past +-128) and only the
# extremes (every same-sign pair passes: a correction entry on nearly every row and k-step, the bound's size)
PAIR_WEIGHTS = [
    ("uniform", lambda shape: _draw(shape, "int8")),
    ("extremes", lambda shape: RNG.choice(np.array([-128, -127, 127], np.int8), size=shape)),
]
PAIR_CASES = [(c, w) for c in CONVS if not Q.is_depthwise(K.conv2d_params(*c[1:3], *c[3:5], (1, 1), c[5]))
              for w in PAIR_WEIGHTS]


@pytest.mark.parametrize("case,weights", PAIR_CASES, ids=[f"{c[0]}-{w[0]}" for c, w in PAIR_CASES])
def test_qconv2d_pair_safe_weight_equals_numpy(ck, case, weights):
    """.pairs = 1: the C pack equals qkernels.pack_weight_pairs (within the bound both give), every pair of its rows
    sums to at most 128 in magnitude, and every kernel at every thread count computes the plain convolution."""
    _, _, wshape, _, _, groups, in_dtype, *_ = case
    w = weights[1](wshape)
    x, bias, scale, xz, p, params, want = _conv_case(case, w)
    params.pairs = 1
    want_packed = Q.pack_weight_pairs(groups, w)
    bound = ck.ck_qconv2d_packed_weight_bytes(ctypes.byref(params))
    assert bound == Q.pairs_packed_weight_bytes(p) >= want_packed.size
    packed = np.zeros(bound, np.int8)
    assert ck.ck_qconv2d_pack_weight(ctypes.byref(params), _ptr(w), _ptr(packed)) == 0
    np.testing.assert_array_equal(packed[:want_packed.size], want_packed)
    plain = Q.pack_weight(groups, w)
    safe = packed[:plain.size - Q.QKB].astype(np.int64).reshape(-1, 2)
    same_sign = (np.sign(safe[:, 0]) == np.sign(safe[:, 1]))
    assert np.abs(safe.sum(1))[same_sign].max(initial=0) <= 128
    folded = Q.fold_bias(w, bias, xz + (128 if in_dtype == "int8" else 0), np.zeros(wshape[0], np.int64))
    _every_kernel_and_thread_count(ck, params, x, packed, folded, scale, want)


# ungrouped 1x1 convolutions of CONVS (pointwise, strided, one pixel, a 7x7 plane) x (id, order of the input channels
# from the weight): reversed, a seeded shuffle, and pair_order's greedy pairs
ORDERED_CASES = [(c, o) for c in CONVS if c[2][2:] == (1, 1) and c[5] == 1
                 for o in [("reversed", lambda w: np.arange(w.shape[1] - 1, -1, -1, dtype=np.int32)),
                           ("shuffled", lambda w: np.random.default_rng(3).permutation(w.shape[1]).astype(np.int32)),
                           ("paired", pair_order.channel_order)]]


@pytest.mark.parametrize("case,order", ORDERED_CASES, ids=[f"{c[0]}-{o[0]}" for c, o in ORDERED_CASES])
def test_qconv2d_channel_order_equals_numpy(ck, case, order):
    """.pairs = 1 with .channel_order: the C pack equals qkernels.pack_weight_pairs with the order, and every kernel
    at every thread count, reading the input channels in that order, computes the plain convolution."""
    _, _, wshape, _, _, groups, in_dtype, *_ = case
    w = RNG.choice(np.array([-128, -127, -70, 3, 66, 127], np.int8), size=wshape)   # many same-sign pairs past 128
    x, bias, scale, xz, p, params, want = _conv_case(case, w)
    channel_order = np.ascontiguousarray(order[1](w), np.int32)
    params.pairs = 1
    params.channel_order = channel_order.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
    want_packed = Q.pack_weight_pairs(groups, w, channel_order)
    packed = np.zeros(ck.ck_qconv2d_packed_weight_bytes(ctypes.byref(params)), np.int8)
    assert ck.ck_qconv2d_pack_weight(ctypes.byref(params), _ptr(w), _ptr(packed)) == 0
    np.testing.assert_array_equal(packed[:want_packed.size], want_packed)
    folded = Q.fold_bias(w, bias, xz + (128 if in_dtype == "int8" else 0), np.zeros(wshape[0], np.int64))
    _every_kernel_and_thread_count(ck, params, x, packed, folded, scale, want)


# (id, conv case, params change, order): what ck_qconv2d_params.channel_order is refused with
BAD_ORDERS = [
    ("repeated-channel", "1x1", {"pairs": 1}, [0, 1, 2, 2] + list(range(4, 16))),
    ("channel-past-the-end", "1x1", {"pairs": 1}, list(range(15)) + [16]),
    ("negative-channel", "1x1", {"pairs": 1}, [-1] + list(range(1, 16))),
    ("without-pairs", "1x1", {"pairs": 0}, list(range(16))),
    ("3x3-kernel", "3x3-pad-odd-sizes", {"pairs": 1}, list(range(5))),
]


@pytest.mark.parametrize("case_id,change,order", [b[1:] for b in BAD_ORDERS], ids=[b[0] for b in BAD_ORDERS])
def test_qconv2d_refuses_a_bad_channel_order(ck, case_id, change, order):
    """An order that is not a permutation of the input channels fails the pack; one beside a plain weight or a
    kernel larger than 1x1 (whose depth is not the channels) makes the parameters invalid: no size, no run."""
    case = next(c for c in CONVS if c[0] == case_id)
    w = _draw(case[2], "int8")
    x, bias, scale, xz, p, params, want = _conv_case(case, w)
    channel_order = np.asarray(order, np.int32)
    for field, value in change.items():
        setattr(params, field, value)
    params.channel_order = channel_order.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
    packed = np.zeros(max(ck.ck_qconv2d_packed_weight_bytes(ctypes.byref(params)), 1), np.int8)
    assert ck.ck_qconv2d_pack_weight(ctypes.byref(params), _ptr(w), _ptr(packed)) != 0
    if not (change["pairs"] == 1 and case_id == "1x1"):   # the invalid parameters: no workspace, no run
        assert ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)) == 0
        out = np.zeros(want.shape, np.uint8)
        ws = np.zeros(1 << 16, np.uint8)
        assert ck.ck_qconv2d(ctypes.byref(params), _ptr(x), _ptr(packed), _ptr(bias), _ptr(scale), _ptr(out),
                             _ptr(ws)) != 0


# (id, [out][in] weight, entry share in the identity order, after pair_order): same-sign weights past 128 together
# in the given order, and partners to spare
PAIR_ORDER_CASES = [
    ("swap-partners", [[100, 90, -100, -90]], 1.0 / 8, 0.0),      # one row of 8 (padded): its one k-step
    ("two-rows", [[127, 127, -2, -2, 0, 0, 0, 0], [-127, -127, 5, 5, 0, 0, 0, 0]], 2.0 / 16, 0.0),
    ("odd-channels", [[127, 127, 127, -127, 1]], 1.0 / 16, 0.0),
]


@pytest.mark.parametrize("weight,identity,paired", [c[1:] for c in PAIR_ORDER_CASES],
                         ids=[c[0] for c in PAIR_ORDER_CASES])
def test_pair_order_leaves_fewer_corrections(weight, identity, paired):
    """pair_order.channel_order is a permutation of the input channels, the same on every call, and in its order
    the weight's correction entries (qkernels.pair_entry_share, an independent count) fall as worked out by hand."""
    w = np.asarray(weight, np.int8)[:, :, None, None]
    order = pair_order.channel_order(w)
    assert sorted(order.tolist()) == list(range(w.shape[1]))
    np.testing.assert_array_equal(order, pair_order.channel_order(w))
    assert Q.pair_entry_share(1, w) == pytest.approx(identity)
    assert Q.pair_entry_share(1, w[:, order]) == pytest.approx(paired)


# (id, data shape, weight shape, strides, padding, dilation, groups, input dtype): chunks that start and end
# mid-row, rows shorter and longer than a chunk, padding on every side, strides, dilation, groups
BOUNDED = [
    ("3x3-pad-32x32", (1, 16, 32, 32), (16, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "int8"),
    ("3x3-odd-rows-mid-chunk", (2, 5, 9, 11), (13, 5, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "uint8"),
    ("stride2-asym-pad", (1, 8, 13, 10), (16, 8, 3, 3), (2, 2), (1, 0, 2, 1), (1, 1), 1, "int8"),
    ("dilated-3x3", (1, 6, 12, 15), (7, 6, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1, "uint8"),
    ("dilated-stride-mixed", (1, 4, 17, 9), (9, 4, 3, 2), (2, 1), (1, 0, 0, 1), (2, 3), 1, "int8"),
    ("grouped", (1, 8, 10, 10), (12, 4, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, "int8"),
    ("grouped-stride2-dilated", (2, 12, 11, 11), (6, 4, 3, 3), (2, 2), (2, 2, 2, 2), (2, 2), 3, "uint8"),
    ("ds_cnn-10x4-stride2", (1, 1, 49, 10), (64, 1, 10, 4), (2, 2), (4, 1, 5, 1), (1, 1), 1, "int8"),
    ("1x1-stride2", (1, 6, 8, 8), (9, 6, 1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, "uint8"),
    ("wide-row-longer-than-chunks", (1, 3, 4, 75), (5, 3, 1, 5), (1, 1), (0, 2, 0, 2), (1, 1), 1, "int8"),
    ("1x1-pointwise", (1, 16, 5, 7), (24, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "int8"),
]


@pytest.mark.parametrize("case", BOUNDED, ids=[c[0] for c in BOUNDED])
def test_qconv2d_bounded_scratch_equals_whole_image(ck, case):
    """im2col in chunks of output pixels (params.im2col_columns) gives the whole-image im2col's bytes and
    the integer reference's; the scratch it asks is k * chunk, which the codegen's mirror plans."""
    _, dshape, wshape, strides, padding, dilation, groups, in_dtype = case
    x, w = _draw(dshape, in_dtype), _draw(wshape, "int8")
    bias = RNG.integers(-3000, 3000, size=wshape[0]).astype(np.int32)
    scale = RNG.uniform(1e-4, 2e-3, size=wshape[0]).astype(np.float32)
    xz = int(_draw((), in_dtype))
    p = K.conv2d_params(dshape, wshape, strides, padding, dilation, groups)
    q = Q.qparams(in_dtype, "int8", xz, -9, out_min=-100)
    weight = Q.pack_weight(groups, w)
    folded = Q.fold_bias(w, bias, xz + (128 if in_dtype == "int8" else 0), np.zeros(wshape[0], np.int64))
    want = _requant(_conv_int64(x.astype(np.int64) - xz, w, p) + bias.reshape(1, -1, 1, 1), scale, q, 1)
    for columns in (0, 1, 32, 40, 64, 100000):
        params = QConvParams(ConvParams(**p), QParams(**q), columns)
        nbytes = ck.ck_qconv2d_workspace_bytes(ctypes.byref(params))
        assert nbytes == Q.qconv2d_workspace_bytes(p, columns)
        ws = np.zeros(nbytes + 1, np.uint8)[1:]
        for kernel in _kernels(ck):
            assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0
            out = np.zeros(want.shape, np.int8)
            assert ck.ck_qconv2d(ctypes.byref(params), _ptr(x), _ptr(weight), _ptr(folded), _ptr(scale),
                                 _ptr(out), _ptr(ws)) == 0
            np.testing.assert_array_equal(out, want, err_msg=f"{kernel}, {columns} columns")


def test_qconv2d_and_qdense_workspace_formulas_agree_with_c(ck):
    """On 1,000 random geometries x im2col chunks, and a grid of dense batches, depths and direct rows."""
    wrong = []
    for p in conv_geometries(1000, seed=1):
        for columns in (0, 1, 32, 40, 100000):
            params = QConvParams(ConvParams(**p), QParams(**Q.qparams("int8", "int8", 0, 0)), columns)
            if ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)) != Q.qconv2d_workspace_bytes(p, columns):
                wrong.append((p, columns))
    for batch, depth, direct in itertools.product((1, 7, 8, 9, 127, 128, 129, 1000), (1, 3, 4, 5, 64, 257), (0, 8)):
        params = QDenseParams(batch, 10, depth, QParams(**Q.qparams("uint8", "int8", 0, 0)), direct)
        if ck.ck_qdense_workspace_bytes(ctypes.byref(params)) != Q.qdense_workspace_bytes(depth, batch, direct):
            wrong.append((batch, depth, direct))
    assert wrong == []


# (batch, units, depth, input dtype): a classifier's batch of one over tasks of 64 units and 32-k steps with a tail
@pytest.mark.parametrize("batch,units,depth,in_dtype", [(1, 10, 37, "uint8"), (3, 17, 64, "uint8"),
                                                        (40, 9, 5, "uint8"), (37, 70, 131, "uint8"),
                                                        (1, 150, 2050, "int8")])
@pytest.mark.parametrize("direct_rows", [0, 64], ids=["gemm", "direct"])
def test_qdense_kernels_equal_numpy(ck, batch, units, depth, in_dtype, direct_rows):
    """The GEMM core and (batch <= direct_rows) one dot product per output with no workspace, at every thread
    count."""
    x, w = _draw((batch, depth), in_dtype), _draw((units, depth), "int8")
    bias = RNG.integers(-3000, 3000, size=units).astype(np.int32)
    scale = RNG.uniform(1e-4, 1e-3, size=units).astype(np.float32)
    q = Q.qparams(in_dtype, "int8", 131 if in_dtype == "uint8" else -7, -5)
    params = QDenseParams(batch, units, depth, QParams(**q), direct_rows)
    packed = np.zeros(Q.pack_weight(1, w).size, np.int8)
    assert ck.ck_qdense_pack_weight(ctypes.byref(params), _ptr(w), _ptr(packed)) == 0
    np.testing.assert_array_equal(packed, Q.pack_weight(1, w))
    nbytes = Q.qdense_workspace_bytes(depth, batch, direct_rows)
    assert ck.ck_qdense_workspace_bytes(ctypes.byref(params)) == nbytes and (nbytes == 0) == (batch <= direct_rows)
    zero_point = q["input_zero_point"]
    folded = Q.fold_bias(w, bias, zero_point + (128 if in_dtype == "int8" else 0), np.zeros(units, np.int64))
    want = _requant((x.astype(np.int64) - zero_point) @ w.T.astype(np.int64) + bias, scale, q, 1)
    ws = np.zeros(nbytes, np.uint8)
    try:
        for kernel, threads in itertools.product(_kernels(ck), THREADS):
            assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0 and ck.byoc_set_num_threads(threads) == 0
            out = np.zeros((batch, units), np.int8)
            assert ck.ck_qdense(ctypes.byref(params), _ptr(x), _ptr(packed), _ptr(folded), _ptr(scale), _ptr(out),
                                _ptr(ws) if nbytes else None) == 0
            np.testing.assert_array_equal(out, want, err_msg=f"{kernel}, {threads} threads")
    finally:
        ck.byoc_set_num_threads(0)


class QAddParams(ctypes.Structure):
    _fields_ = [("is_signed", ctypes.c_int32), ("rounding", ctypes.c_int32), ("ratio_a", ctypes.c_float),
                ("ratio_b", ctypes.c_float), ("fixed", ctypes.c_float), ("lhs_zero_point", ctypes.c_int32),
                ("rhs_zero_point", ctypes.c_int32), ("output_zero_point", ctypes.c_int32), ("mult_a", ctypes.c_int64),
                ("mult_b", ctypes.c_int64), ("shift", ctypes.c_int32), ("left_shift", ctypes.c_int32),
                ("tfl_mult", ctypes.c_int32 * 3), ("tfl_exp", ctypes.c_int32 * 3)]


# (zero points a, b, out; multipliers a, b; shift): small ones where half the sums are ties, and
# TFLite-sized ones (31-bit multipliers, shift 38)
QADD_FIXED = [((3, -5, 7), (3, 5), 2), ((-1, 2, -4), (1518500250, 1073741824), 38)]


@pytest.mark.parametrize("zps,mults,shift", QADD_FIXED, ids=["ties", "tflite-sized"])
def test_qadd_fixed_point_rounds_ties_to_even(ck, zps, mults, shift):
    """ck_qadd's fixed-point form (rounding 1, TFLite's arithmetic) on every int8 a against 64 b, against
    qnn_math.round_shift: ties to even, the output zero point added, saturated. The float-form fields
    are left 0, so running the other arithmetic cannot pass."""
    from byoc_compiler.op.qnn_math import round_shift   # the reference's own rounding, nothing else here

    a = np.repeat(np.arange(-128, 128, dtype=np.int8), 64)
    b = np.tile(np.linspace(-128, 127, 64).astype(np.int8), 256)
    p = QAddParams(1, 1, 0.0, 0.0, 0.0, *zps, *mults, shift)
    out = np.zeros_like(a)
    assert ck.ck_qadd(ctypes.byref(p), ctypes.c_int64(a.size), _ptr(a), _ptr(b), _ptr(out)) == 0
    total = (a.astype(np.int64) - zps[0]) * mults[0] + (b.astype(np.int64) - zps[1]) * mults[1]
    ties = (np.abs(total) & ((1 << shift) - 1)) == (1 << (shift - 1))
    assert ties.any() or shift > 2
    want = np.clip(round_shift(total, shift) + zps[2], -128, 127)
    np.testing.assert_array_equal(out, want)


# ---- a residual add in the convolution's tasks (ck_qconv2d_add) --------------------------------------------

# (conv case of CONVS, im2col_columns, add form, conv output the add's rhs[, pair-safe weight, output dtype]): the
# pointwise, bordered (two images), im2col, grouped, rows-over-panels and wide-chunk GEMM paths, the bounded-scratch
# panel path and depthwise (added after the planes), each form once with the conv on either side; pair-safe weights
# (their corrections added before the requantization the add reads), int8 outputs
QCONV_ADDS = [("1x1", 0, "float32", False), ("3x3-pad-odd-sizes", 0, "tflite", True),
              ("7x7-stride2-wide", 0, "float32", True), ("grouped", 0, "tflite", False),
              ("rows-over-all-panels", 0, "float32", False), ("3x3-wide-chunks", 0, "tflite", True),
              ("3x3-pad-odd-sizes", 32, "float32", True), ("depthwise-3x3", 0, "float32", False),
              ("1x1", 0, "float32", False, True), ("rows-over-all-panels", 0, "float32", True, True),
              ("3x3-wide-chunks", 0, "float32", False, True, "int8"),
              ("1x1-7x7-last-column", 0, "float32", True, True, "int8"), ("1x1-stride2-wide", 0, "tflite", False, True)]


def _qadd_case(form: str, dtype: str):
    """(ck_qadd_params, the add as numpy: (lhs, rhs) -> out) of scales 0.05, 0.06 -> 0.09 and zero points 131, 121 ->
    133, from the reference's own parameter functions (qnn.add_float32_params, tflite_math.add_params)."""
    from types import SimpleNamespace   # the attributes add_float32_params reads, nothing else

    from byoc_compiler.op.qnn import add_float32_params, fma32   # the reference's float32 steps
    zps = (131, 121, 133)
    if form == "tflite":
        t = tflite_math.add_params(0.05, 0.06, 0.09, dtype)
        p = QAddParams(int(dtype == "int8"), 2, 0.0, 0.0, 0.0, *zps, 0, 0, 0, t["left_shift"],
                       (ctypes.c_int32 * 3)(t["m1"], t["m2"], t["mo"]), (ctypes.c_int32 * 3)(t["e1"], t["e2"], t["eo"]))
        return p, lambda a, b: tflite_math.add(a, b, *zps, t, dtype)
    ra, rb, fixed = (np.float32(v) for v in add_float32_params(SimpleNamespace(
        lhs_scale=[0.05], rhs_scale=[0.06], output_scale=[0.09], lhs_zero_point=zps[0], rhs_zero_point=zps[1],
        output_zero_point=zps[2])))
    p = QAddParams(int(dtype == "int8"), 0, ra, rb, fixed, *zps, 0, 0, 0)
    lo, hi = Q.TYPE_RANGE[dtype]
    return p, lambda a, b: np.clip(np.rint(fma32(a.astype(np.float32), ra, fma32(b.astype(np.float32), rb, fixed))),
                                   lo, hi)


@pytest.mark.parametrize("conv_id,columns,form,conv_is_rhs,pairs,out_dtype",
                         [c + (False, "uint8")[len(c) - 4:] for c in QCONV_ADDS],
                         ids=[f"{c[0]}-{c[1]}-{c[2]}{'-rhs' if c[3] else ''}{'-pairs' if c[4:5] == (True,) else ''}"
                              f"{'-' + c[5] if len(c) > 5 else ''}" for c in QCONV_ADDS])
def test_qconv2d_add_equals_conv_then_add(ck, conv_id, columns, form, conv_is_rhs, pairs, out_dtype):
    """ck_qconv2d_add = the numpy convolution, requantized, then qnn.add with the residual (its float32 or TFLite
    form, from the reference's functions), on every int8 kernel and 1, 2, 3 and 8 threads."""
    _, dshape, wshape, strides, padding, groups, in_dtype = next(c for c in CONVS if c[0] == conv_id)
    x = _draw(dshape, in_dtype)
    w = RNG.choice(np.array([-128, -127, -70, 3, 66, 127], np.int8), size=wshape) if pairs else _draw(wshape, "int8")
    bias = RNG.integers(-3000, 3000, size=wshape[0]).astype(np.int32)
    scale = RNG.uniform(1e-4, 2e-3, size=wshape[0]).astype(np.float32)
    p = K.conv2d_params(dshape, wshape, strides, padding, (1, 1), groups)
    q = Q.qparams(in_dtype, out_dtype, 3, 77, out_min=10)
    params = QConvParams(ConvParams(**p), QParams(**q), columns, 0, int(pairs))
    depthwise = Q.is_depthwise(p)
    weight = w if depthwise else Q.pack_weight_pairs(groups, w) if pairs else Q.pack_weight(groups, w)
    folded = Q.fold_bias(w, bias, 3 + (128 if in_dtype == "int8" and not depthwise else 0), np.zeros(wshape[0], np.int64))
    conv = _requant(_conv_int64(x.astype(np.int64) - 3, w, p) + bias.reshape(1, -1, 1, 1), scale, q, 1)
    residual = _draw(conv.shape, out_dtype)
    add, add_numpy = _qadd_case(form, out_dtype)
    want = (add_numpy(residual, conv) if conv_is_rhs else add_numpy(conv, residual)).astype(out_dtype)
    ws = np.zeros(ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)), np.uint8)
    try:
        for kernel, threads in itertools.product(_kernels(ck), THREADS):
            assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0 and ck.byoc_set_num_threads(threads) == 0
            out = np.zeros(conv.shape, out_dtype)
            assert ck.ck_qconv2d_add(ctypes.byref(params), ctypes.byref(add), int(conv_is_rhs), _ptr(x), _ptr(weight),
                                     _ptr(folded), _ptr(scale), _ptr(residual), _ptr(out), _ptr(ws)) == 0
            np.testing.assert_array_equal(out, want, err_msg=f"{kernel}, {threads} threads")
        assert ck.ck_qconv2d_add(ctypes.byref(params), ctypes.byref(add), 0, _ptr(x), _ptr(weight), _ptr(folded),
                                 _ptr(scale), _ptr(out), _ptr(out), _ptr(ws)) != 0   # the residual as the output
    finally:
        ck.byoc_set_num_threads(0)


# ---- the channels-last direct convolution (ck_qdirect.c, ck_qconv2d_params.channels_last) ---------------------

# every one-group case above, and: 130 output channels (two 64-channel blocks and one of 2), 400 output pixels (five
# bands of 80), 7x7 and 14x14 outputs (one band of 54, three of 66, 66, 64: a last tile of repeated pixels), 20 input
# channels (a 16-channel block of the copy's transposition and 4 more), 6 (padded to 8 in the copy), dilation,
# 2 images
CHANNELS_LAST = [c for c in CONVS
                 if c[5] == 1 and not Q.is_depthwise(K.conv2d_params(*c[1:3], *c[3:5], (1, 1), c[5]))] + [
    ("cl-three-channel-blocks", (1, 20, 9, 9), (130, 20, 3, 3), (1, 1), (1, 1, 1, 1), 1, "int8"),
    ("cl-five-bands", (1, 16, 20, 20), (16, 16, 3, 3), (1, 1), (1, 1, 1, 1), 1, "uint8"),
    ("cl-7x7-one-band", (1, 32, 7, 7), (70, 32, 3, 3), (1, 1), (1, 1, 1, 1), 1, "int8"),
    ("cl-14x14-stride2-three-bands", (2, 24, 28, 27), (64, 24, 1, 1), (2, 2), (0, 0, 0, 0), 1, "uint8"),
    ("cl-six-channels-dilated", (1, 6, 12, 13), (10, 6, 3, 3), (1, 1), (2, 1, 2, 3), 1, "int8", (2, 2)),
]


def _nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


# ck_qconv2d_params.channels_last: the path alone (NCHW in and out), and with its layout bits: input channels-last
# (2: copied into the bordered copy, or read in place when unpadded uint8 in whole 4-channel steps), output (4)
CL_LAYOUTS = {"nchw": 1, "nhwc-in": 3, "nhwc-out": 5, "nhwc": 7}


@pytest.mark.parametrize("layout", list(CL_LAYOUTS))
@pytest.mark.parametrize("case", CHANNELS_LAST, ids=[c[0] for c in CHANNELS_LAST])
def test_qconv2d_channels_last_equals_numpy(ck, case, layout):
    """.channels_last = 1 (+ layout bits): the C pack, its size and the scratch equal the codegen's mirrors; the bytes
    equal the numpy convolution on every int8 kernel (the VNNI tiles, or portable C under the others) and 1, 2, 3
    and 8 threads, in either layout of the input and the output."""
    w = _draw(case[2], "int8")
    x, bias, scale, xz, p, params, want = _conv_case(case, w)
    params.channels_last = CL_LAYOUTS[layout]
    if CL_LAYOUTS[layout] & 2:
        x = _nhwc(x)
    if CL_LAYOUTS[layout] & 4:
        want = _nhwc(want)
    packed = Q.channels_last_pack_weight(w)
    assert Q.channels_last_takes(p, 0, 0, False, False)
    assert ck.ck_qconv2d_packed_weight_bytes(ctypes.byref(params)) == packed.size
    assert ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)) == Q.qconv2d_workspace_bytes(p, channels_last=True)
    weight = np.zeros(packed.size, np.int8)
    assert ck.ck_qconv2d_pack_weight(ctypes.byref(params), _ptr(w), _ptr(weight)) == 0
    np.testing.assert_array_equal(weight, packed)
    folded = Q.fold_bias(w, bias, xz + (128 if case[6] == "int8" else 0), np.zeros(case[2][0], np.int64))
    _every_kernel_and_thread_count(ck, params, x, weight, folded, scale, want)


@pytest.mark.parametrize("case", [c for c in CONVS if c[0].startswith("depthwise-whole-plane")] +
                         [("global-pool-7x7", (2, 70, 7, 7), (70, 1, 7, 7), (1, 1), (0, 0, 0, 0), 70, "uint8")],
                         ids=lambda c: c[0])
def test_qconv2d_whole_plane_depthwise_reads_channels_last(ck, case):
    """.channels_last = 2 on a depthwise window over the whole plane (the global average pool): the input
    channels-last, the same bytes as numpy's NCHW convolution (one value per channel either way), every kernel and
    thread count; refused on a depthwise convolution over part of the plane."""
    w = _draw(case[2], "int8")
    x, bias, scale, xz, p, params, want = _conv_case(case, w)
    assert Q.whole_plane_depthwise(p, 0)
    params.channels_last = 2
    assert ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)) == Q.qconv2d_workspace_bytes(p, channels_last=True)
    folded = Q.fold_bias(w, bias, xz, np.zeros(case[2][0], np.int64))
    _every_kernel_and_thread_count(ck, params, _nhwc(x), w, folded, scale, want)
    part = next(c for c in CONVS if c[0] == "depthwise-3x3")
    params = _conv_case(part, _draw(part[2], "int8"))[5]
    params.channels_last = 2
    assert ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)) == 0


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("conv_id,form,conv_is_rhs,out_dtype", [
    ("cl-three-channel-blocks", "float32", False, "uint8"), ("cl-7x7-one-band", "tflite", True, "uint8"),
    ("1x1", "float32", True, "uint8"), ("cl-7x7-one-band", "float32", False, "int8"),
    ("cl-7x7-one-band", None, False, "int8")],
                         ids=["lhs-float32", "rhs-tflite", "1x1-rhs", "int8-out", "int8-out-no-add"])
def test_qconv2d_channels_last_add_equals_conv_then_add(ck, conv_id, form, conv_is_rhs, out_dtype, layout):
    """ck_qconv2d_add on .channels_last = 1 (NCHW) or 7 (input, output and residual channels-last): each task's
    residual add after its part, the bytes of the numpy convolution then qnn.add, on every int8 kernel and thread
    count (form None: ck_qconv2d alone, int8 out)."""
    _, dshape, wshape, strides, padding, groups, in_dtype = next(c for c in CHANNELS_LAST if c[0] == conv_id)
    x, w = _draw(dshape, in_dtype), _draw(wshape, "int8")
    bias = RNG.integers(-3000, 3000, size=wshape[0]).astype(np.int32)
    scale = RNG.uniform(1e-4, 2e-3, size=wshape[0]).astype(np.float32)
    p = K.conv2d_params(dshape, wshape, strides, padding, (1, 1), groups)
    q = Q.qparams(in_dtype, out_dtype, 3, 7, out_min=-100 if out_dtype == "int8" else 10)
    params = QConvParams(ConvParams(**p), QParams(**q), 0)
    params.channels_last = CL_LAYOUTS[layout]
    weight = Q.channels_last_pack_weight(w)
    folded = Q.fold_bias(w, bias, 3 + (128 if in_dtype == "int8" else 0), np.zeros(wshape[0], np.int64))
    conv = _requant(_conv_int64(x.astype(np.int64) - 3, w, p) + bias.reshape(1, -1, 1, 1), scale, q, 1)
    residual = _draw(conv.shape, out_dtype)
    add, add_numpy = _qadd_case(form or "float32", out_dtype)
    want = conv.astype(out_dtype) if form is None else \
        (add_numpy(residual, conv) if conv_is_rhs else add_numpy(conv, residual)).astype(out_dtype)
    if layout == "nhwc":
        x, residual, want = _nhwc(x), _nhwc(residual), _nhwc(want)
    ws = np.zeros(ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)), np.uint8)
    _conv_or_add_on_every_kernel(ck, params, None if form is None else (add, conv_is_rhs, residual), x, weight,
                                 folded, scale, want, ws)


def _conv_or_add_on_every_kernel(ck, params, add, x, weight, folded, scale, want, ws):
    """ck_qconv2d, or (add = (ck_qadd_params, conv_is_rhs, residual)) ck_qconv2d_add, with every GEMM kernel this CPU
    runs at every THREADS count equals `want`."""
    try:
        for kernel, threads in itertools.product(_kernels(ck), THREADS):
            assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0 and ck.byoc_set_num_threads(threads) == 0
            out = np.zeros(want.shape, want.dtype)
            if add is None:
                assert ck.ck_qconv2d(ctypes.byref(params), _ptr(x), _ptr(weight), _ptr(folded), _ptr(scale),
                                     _ptr(out), _ptr(ws)) == 0
            else:
                assert ck.ck_qconv2d_add(ctypes.byref(params), ctypes.byref(add[0]), int(add[1]), _ptr(x),
                                         _ptr(weight), _ptr(folded), _ptr(scale), _ptr(add[2]), _ptr(out),
                                         _ptr(ws)) == 0
            np.testing.assert_array_equal(out, want, err_msg=f"{kernel}, {threads} threads")
    finally:
        ck.byoc_set_num_threads(0)


# ---- Winograd F(2x2, 3x3) (ck_qwinograd.c, ck_qconv2d_params.winograd) ---------------------------------------

# (id, data shape, weight shape, padding, input dtype, output dtype, rounding, residual add form or None): odd and
# even output planes (a last tile half outside), padding on no side, one side and every side, odd input channels (a
# zero channel pairs the last), out channels past a 4-row tile and a 16-row task, two images, rows of more than 64
# tiles (two segments), int8 and uint8 in and out, both requantizations, a residual on either side
WINOGRAD = [
    ("odd-plane-odd-channels", (1, 5, 9, 11), (13, 5, 3, 3), (1, 1, 1, 1), "uint8", "uint8", "float32", None),
    ("even-plane-int8", (2, 8, 8, 8), (16, 8, 3, 3), (1, 1, 1, 1), "int8", "int8", "float32", None),
    ("valid-no-padding", (1, 6, 10, 7), (5, 6, 3, 3), (0, 0, 0, 0), "int8", "uint8", "tflite", None),
    ("asymmetric-padding", (1, 3, 7, 12), (20, 3, 3, 3), (2, 0, 1, 2), "uint8", "int8", "tflite", None),
    ("wide-rows-two-segments", (1, 4, 5, 140), (6, 4, 3, 3), (1, 1, 1, 1), "int8", "uint8", "float32", None),
    ("bands-odd-last-row", (1, 3, 23, 100), (4, 3, 3, 3), (1, 1, 1, 1), "uint8", "uint8", "float32", "float32"),
    ("one-channel", (1, 1, 6, 6), (3, 1, 3, 3), (1, 1, 1, 1), "uint8", "uint8", "float32", None),
    ("residual-lhs", (1, 7, 14, 14), (9, 7, 3, 3), (1, 1, 1, 1), "uint8", "uint8", "float32", "float32"),
    ("residual-rhs-tflite", (2, 4, 7, 7), (6, 4, 3, 3), (1, 1, 1, 1), "int8", "uint8", "tflite", "tflite"),
]


def _winograd_case(case):
    _, dshape, wshape, padding, in_dtype, out_dtype, rounding, add_form = case
    x, w = _draw(dshape, in_dtype), _draw(wshape, "int8")
    bias = RNG.integers(-3000, 3000, size=wshape[0]).astype(np.int32)
    xz = int(_draw((), in_dtype))
    p = K.conv2d_params(dshape, wshape, (1, 1), padding, (1, 1), 1)
    q = Q.qparams(in_dtype, out_dtype, xz, 5, rounding=rounding)
    acc = _conv_int64(x.astype(np.int64) - xz, w, p) + bias.reshape(1, -1, 1, 1)
    if rounding == "tflite":
        ms, es = tflite_math.multipliers(_tflite_reals(wshape[0]))
        scale = _tflite_pairs(ms, es)
        want = _tflite_want(acc, ms, es, q, 1)
    else:
        scale = RNG.uniform(1e-4, 2e-3, size=wshape[0]).astype(np.float32)
        want = _requant(acc, scale, q, 1)
    folded = Q.fold_bias(w, bias, xz + (128 if in_dtype == "int8" else 0), np.zeros(wshape[0], np.int64))
    return x, w, folded, scale, p, q, want.astype(out_dtype), add_form


@pytest.mark.parametrize("case", WINOGRAD, ids=[c[0] for c in WINOGRAD])
def test_qconv2d_winograd_equals_numpy(ck, case):
    """Winograd F(2x2, 3x3) gives the direct convolution's bytes (an explicit int64 loop, requantized here), on
    every int8 kernel (AVX2's vpmaddwd products or portable C: the portable kernel keeps portable products) and
    1, 2, 3 and 8 threads; its weight packing, weight size and scratch equal the codegen's mirrors."""
    x, w, folded, scale, p, q, want, add_form = _winograd_case(case)
    params = QConvParams(ConvParams(**p), QParams(**q), 0, 1)
    packed = Q.winograd_pack_weight(w)
    assert Q.winograd_takes(p)
    assert ck.ck_qconv2d_packed_weight_bytes(ctypes.byref(params)) == packed.nbytes
    assert ck.ck_qconv2d_workspace_bytes(ctypes.byref(params)) == Q.qconv2d_workspace_bytes(p, 0, winograd=True)
    weight = np.zeros(packed.size, np.int16)
    assert ck.ck_qconv2d_pack_weight(ctypes.byref(params), _ptr(w), _ptr(weight)) == 0
    np.testing.assert_array_equal(weight, packed)
    residual = _draw(want.shape, q_dtype := str(want.dtype))
    if add_form is not None:
        add, add_numpy = _qadd_case(add_form, q_dtype)
        conv_is_rhs = add_form == "tflite"
        want = (add_numpy(residual, want) if conv_is_rhs else add_numpy(want, residual)).astype(q_dtype)
    ws = np.zeros(Q.qconv2d_workspace_bytes(p, 0, winograd=True), np.uint8)
    _conv_or_add_on_every_kernel(ck, params, None if add_form is None else (add, conv_is_rhs, residual), x, weight,
                                 folded, scale, want, ws)


def test_qconv2d_winograd_sums_stay_exact_at_the_channel_limit(ck):
    """1024 input channels of the extreme values (uint8 255 against weights of -128 and 127 alike, so the
    transformed products are the largest either sign allows): the 4x sums wrap inside int32 but come out exact;
    1025 channels are refused."""
    c = Q.WG_MAX_CHANNELS
    x = np.full((1, c, 4, 4), 255, np.uint8)
    x[:, :, ::2, 1::2] = 0
    w = np.where(RNG.integers(0, 2, size=(4, c, 3, 3)) == 1, 127, -128).astype(np.int8)
    w[0] = -128
    w[1] = 127
    p = K.conv2d_params(x.shape, w.shape, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    q = Q.qparams("uint8", "int8", 0, 0)
    scale = np.full(4, 1e-7, np.float32)
    want = _requant(_conv_int64(x.astype(np.int64), w, p), scale, q, 1).astype(np.int8)
    params = QConvParams(ConvParams(**p), QParams(**q), 0, 1)
    packed = Q.winograd_pack_weight(w)
    ws = np.zeros(Q.qconv2d_workspace_bytes(p, 0, winograd=True), np.uint8)
    for kernel in _kernels(ck):
        assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0
        out = np.zeros(want.shape, np.int8)
        assert ck.ck_qconv2d(ctypes.byref(params), _ptr(x), _ptr(packed), _ptr(np.zeros(4, np.int32)), _ptr(scale),
                             _ptr(out), _ptr(ws)) == 0
        np.testing.assert_array_equal(out, want, err_msg=kernel)
    wide = K.conv2d_params((1, c + 1, 4, 4), (4, c + 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    assert not Q.winograd_takes(wide)
    refused = QConvParams(ConvParams(**wide), QParams(**q), 0, 1)
    assert ck.ck_qconv2d_workspace_bytes(ctypes.byref(refused)) == 0
    assert ck.ck_qconv2d(ctypes.byref(refused), _ptr(x), _ptr(packed), _ptr(packed), _ptr(scale), _ptr(ws),
                         _ptr(ws)) != 0


# (id, conv geometry's weight shape and groups, field changes): a pair-safe weight only where the GEMM takes it
PAIRS_REFUSED = [("pairs-2", (4, 4, 1, 1), 1, {"pairs": 2}),
                 ("pairs-with-winograd", (4, 4, 3, 3), 1, {"pairs": 1, "winograd": 1}),
                 ("pairs-with-bounded-im2col", (4, 4, 3, 3), 1, {"pairs": 1, "im2col_columns": 32}),
                 ("pairs-depthwise", (4, 1, 3, 3), 4, {"pairs": 1})]


def test_bad_parameters_are_refused(ck):
    params = QConvParams(ConvParams(**K.conv2d_params((1, 4, 4, 4), (4, 4, 1, 1), (1, 1), (0,) * 4, (1, 1), 1)),
                         QParams(**Q.qparams("uint8", "uint8", 0, 0)))
    params.q.out_max = 300                         # outside uint8
    buf = np.zeros(4096, np.uint8)
    assert ck.ck_qconv2d(ctypes.byref(params), _ptr(buf), _ptr(buf), _ptr(buf), _ptr(buf), _ptr(buf), _ptr(buf)) != 0
    assert ck.ck_qgemm_use_kernel(b"no-such-kernel") != 0
    for name, wshape, groups, fields in PAIRS_REFUSED:
        params = QConvParams(ConvParams(**K.conv2d_params((1, 4, 6, 6), wshape, (1, 1), (1,) * 4, (1, 1), groups)),
                             QParams(**Q.qparams("uint8", "uint8", 0, 0)))
        for field, value in fields.items():
            setattr(params, field, value)
        assert ck.ck_qconv2d_packed_weight_bytes(ctypes.byref(params)) == 0, name
        assert ck.ck_qconv2d(ctypes.byref(params), _ptr(buf), _ptr(buf), _ptr(buf), _ptr(buf), _ptr(buf),
                             _ptr(buf)) != 0, name


# ---- small quantized graphs through the codegen ----------------------------------------------------

def _var(name, shape, dtype):
    return Var(name, TensorType(shape, dtype))


def _chain(x, wshape, in_zp, out_dtype="uint8", bias=True, weight=None, **conv):
    """qnn.conv2d (+ bias) + requantize with per-channel scales, on `x` (weight: uniform int8 unless given)."""
    w = Constant(_draw(wshape, "int8") if weight is None else weight)
    acc = make_call("qnn.conv2d", x, w, input_zero_point=in_zp, kernel_zero_point=[0] * wshape[0], **conv)
    if bias:
        acc = make_call("add", acc, Constant(RNG.integers(-2000, 2000, size=(wshape[0], 1, 1)).astype(np.int32)))
    return make_call("qnn.requantize", acc, input_scale=[float(s) for s in RNG.uniform(1e-4, 3e-4, wshape[0])],
                     output_scale=[0.02], output_zero_point=[7 if out_dtype == "uint8" else -3], out_dtype=out_dtype)


def _cnn():
    data = _var("data", (1, 3, 12, 12), "float32")
    x = make_call("qnn.quantize", data, scale=[0.03], zero_point=[120], out_dtype="uint8")
    a = _chain(x, (8, 3, 3, 3), 120, strides=(2, 2), padding=(1, 1, 1, 1))
    b = _chain(a, (8, 1, 3, 3), 7, padding=(1, 1, 1, 1), groups=8)
    c = make_call("qnn.add", a, b, lhs_scale=[0.02], lhs_zero_point=7, rhs_scale=[0.02], rhs_zero_point=7,
                  output_scale=[0.03], output_zero_point=5)
    d = make_call("nn.max_pool2d", c, pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    e = _chain(d, (4, 8, 1, 1), 5, bias=False)
    return Function([data], make_call("qnn.dequantize", e, scale=[0.02], zero_point=[7]))


def _int8_dense():
    data = _var("data", (2, 5, 40), "float32")
    x = make_call("qnn.quantize", data, scale=[0.01, 0.02, 0.03, 0.04, 0.05], zero_point=[0, 1, -2, 3, 0], axis=1,
                  out_dtype="int8")
    acc = make_call("qnn.dense", make_call("reshape", x, newshape=(10, 40)), Constant(_draw((6, 40), "int8")),
                    input_zero_point=-2, kernel_zero_point=[0] * 6)
    acc = make_call("add", acc, Constant(RNG.integers(-500, 500, size=(6,)).astype(np.int32)))
    y = make_call("qnn.requantize", acc, input_scale=[3e-4], output_scale=[0.05], output_zero_point=[2],
                  out_dtype="int8")
    z = make_call("qnn.add", y, y, lhs_scale=[0.05], lhs_zero_point=2, rhs_scale=[0.05], rhs_zero_point=2,
                  output_scale=[0.07], output_zero_point=-1, rounding="fixed_point")
    return Function([data], make_call("qnn.dequantize", z, scale=[0.07], zero_point=[-1]))


def _activations():
    """relu / clip fused after a requantize (composites) and on their own, int8."""
    data = _var("data", (1, 4, 8, 8), "float32")
    x = make_call("qnn.quantize", data, scale=[0.02], zero_point=[-3], out_dtype="int8")
    a = make_call("nn.relu", _chain(x, (8, 4, 3, 3), -3, out_dtype="int8", padding=(1, 1, 1, 1)))
    b = make_call("clip", _chain(a, (8, 8, 1, 1), -3, out_dtype="int8", bias=False), a_min=-20.5, a_max=90.7)
    c = make_call("qnn.add", a, b, lhs_scale=[0.02], lhs_zero_point=-3, rhs_scale=[0.02], rhs_zero_point=-3,
                  output_scale=[0.03], output_zero_point=4)
    d = make_call("clip", make_call("nn.relu", c), a_min=-7.9, a_max=60.2)
    return Function([data], make_call("qnn.dequantize", d, scale=[0.03], zero_point=[4]))


GRAPHS = [("cnn-uint8", _cnn, (1, 3, 12, 12)), ("dense-int8", _int8_dense, (2, 5, 40)),
          ("relu-clip-int8", _activations, (1, 4, 8, 8))]


# every graph on gcc/graph, the first one on clang/aot too; the rest of clang/aot behind `int8`
GRAPH_CASES = [pytest.param(*g, tc, ex, id=f"{tc}-{ex}-{g[0]}",
                            marks=[pytest.mark.int8] if tc == "clang" and g is not GRAPHS[0] else [])
               for tc, ex in (("gcc", "graph"), ("clang", "aot")) for g in GRAPHS]


@pytest.mark.parametrize("name,make,shape,toolchain,executor", GRAPH_CASES)
def test_small_graphs_equal_reference(name, make, shape, toolchain, executor):
    mod = InferType()(IRModule({"main": make()}))
    part = byoc.partition_for("ccompiler", mod)
    summary = byoc.partition.summarize(part)
    assert summary.host_op_count == 0, summary.table()
    x = RNG.standard_normal(shape).astype(np.float32) * 2
    want = run_reference(mod, {"data": x})[0]
    (got,) = byoc.build(part, toolchain=toolchain, executor=executor).run_runner([x])
    np.testing.assert_array_equal(got, want)


def _winograd_graph():
    """Two 3x3 convs on a 16x16 plane (Winograd's geometry), the second with a residual qnn.add fused into it."""
    data = _var("data", (1, 5, 16, 16), "float32")
    x = make_call("qnn.quantize", data, scale=[0.03], zero_point=[120], out_dtype="uint8")
    a = _chain(x, (6, 5, 3, 3), 120, padding=(1, 1, 1, 1))
    b = _chain(a, (6, 6, 3, 3), 7, padding=(1, 1, 1, 1))
    c = make_call("qnn.add", b, a, lhs_scale=[0.02], lhs_zero_point=7, rhs_scale=[0.02], rhs_zero_point=7,
                  output_scale=[0.03], output_zero_point=5)
    return Function([data], make_call("qnn.dequantize", c, scale=[0.03], zero_point=[5]))


def _build_declared(func, features, tmp_path, **options):
    """(module, AOT build wholly in ccompiler) of `func` for an x86-64 gcc toolchain declaring `features`."""
    config = tmp_path / "config.toml"
    config.write_text((ROOT / "config.toml").read_text() + '\n[toolchains.gcc-declared]\ncc = "gcc"\n'
                      'arch = "x86_64"\ncflags = ["-std=c99", "-fPIC"]\nldflags = ["-lm"]\n'
                      f"cpu_features = {features!r}\n".replace("'", '"'))
    mod = InferType()(IRModule({"main": func}))
    part = byoc.partition_for("ccompiler", mod)
    assert byoc.partition.summarize(part).host_op_count == 0
    return mod, byoc.build(part, toolchain="gcc-declared", executor="aot", config=str(config), **options)


# (id, the toolchain's cpu_features, max_threads, Winograd convs expected)
WINOGRAD_CHOICES = [("avx2", ["avx2", "fma"], 8, 2), ("avx512-vnni", ["avx2", "avx512f", "avx512_vnni"], 8, 0),
                    ("avx-vnni", ["avx2", "avx_vnni"], 8, 0), ("one-thread-plan", ["avx2"], 1, 0)]


@pytest.mark.parametrize("features,max_threads,expected", [c[1:] for c in WINOGRAD_CHOICES],
                         ids=[c[0] for c in WINOGRAD_CHOICES])
def test_codegen_asks_winograd_where_the_toolchains_cpu_has_no_int8_dot_product(features, max_threads, expected,
                                                                               tmp_path):
    """The codegen's choice (qkernels.winograd) follows the CPU the toolchain declares (cpu_features), not the
    machine building: Winograd without an int8 dot product where the build plans threads' scratch (hosted); the
    direct convolution otherwise. Either way the runner gives the reference's bytes (the one-thread plan is only
    generated: compiling every kernel again for -DBYOC_MAX_THREADS=1 took 10 s, and the direct convolution's
    bytes are the VNNI cases')."""
    mod, lib = _build_declared(_winograd_graph(), features, tmp_path, max_threads=max_threads)
    source = lib.get_source("ccompiler")
    assert source.count(".winograd = 1") == expected
    assert ("ck_qconv2d_add(" in source) and source.count("(const int8_t *)(const void *)") == expected
    if max_threads == 1 or (expected == 0 and features != WINOGRAD_CHOICES[1][1]):
        return
    x = RNG.standard_normal((1, 5, 16, 16)).astype(np.float32) * 2
    (got,) = lib.run_runner([x])
    np.testing.assert_array_equal(got, run_reference(mod, {"data": x})[0])


def _trained_like(shape):
    """Most weights small, a few large (most pairs safe: corrections on a few k-steps), every row's largest 127 as
    per-channel scales make it."""
    w = np.clip(np.rint(RNG.laplace(0, 12, size=shape)), -128, 127).astype(np.int8)
    w.reshape(shape[0], -1)[:, 0] = 127
    return w


def _pairs_graph():
    """Two 1x1 convs over 96 channels at 9x9, the first's weight trained-like, the second's uniform (a quarter of
    its pairs pass +-128: too many corrections); then a trained-like 3x3 conv onto 7x7."""
    data = _var("data", (1, 96, 9, 9), "float32")
    x = make_call("qnn.quantize", data, scale=[0.03], zero_point=[120], out_dtype="uint8")
    a = _chain(x, (96, 96, 1, 1), 120, weight=_trained_like((96, 96, 1, 1)))
    b = _chain(a, (24, 96, 1, 1), 7)
    c = _chain(b, (16, 24, 3, 3), 7, weight=_trained_like((16, 24, 3, 3)))
    return Function([data], make_call("qnn.dequantize", c, scale=[0.02], zero_point=[7]))


# (id, the toolchain's cpu_features, pair-safe convs expected, Winograd convs expected)
PAIRS_CHOICES = [("avx2", ["avx2", "fma"], 2, 0), ("avx512-vnni", ["avx2", "avx512f", "avx512_vnni"], 0, 0),
                 ("sse2-only", ["sse2"], 0, 1)]


@pytest.mark.parametrize("features,expected,winograd", [c[1:] for c in PAIRS_CHOICES],
                         ids=[c[0] for c in PAIRS_CHOICES])
def test_codegen_asks_pair_safe_weights_where_the_toolchains_cpu_has_avx2_and_no_int8_dot_product(
        features, expected, winograd, tmp_path):
    """qkernels.pairs follows the declared CPU and the weight: a pair-safe weight (vpmaddubsw's tile) for AVX2
    without an int8 dot product and only where its corrections are few (the trained-like weights, not the uniform
    one); the plain one elsewhere. A 3x3 conv onto 7x7 takes it instead of Winograd where it can (Winograd
    where the CPU has neither AVX2 nor an int8 dot product). The runner gives the reference's bytes either way."""
    mod, lib = _build_declared(_pairs_graph(), features, tmp_path)
    assert lib.get_source("ccompiler").count(".pairs = 1") == expected
    assert lib.get_source("ccompiler").count(".winograd = 1") == winograd
    x = RNG.standard_normal((1, 96, 9, 9)).astype(np.float32) * 2
    (got,) = lib.run_runner([x])
    np.testing.assert_array_equal(got, run_reference(mod, {"data": x})[0])


# ---- the tiny quantized zoo models, wholly in ccompiler --------------------------------------------

def _onnxruntime(path, name, x):
    from byoc_compiler.testing.quantize import integer_session   # needs onnxruntime: only these tests load it
    return integer_session(path).run(None, {name: x})[0]


def _lsb(path) -> float:
    """One output step: the scale of the last DequantizeLinear (the model's float output)."""
    import onnx
    model = onnx.load(str(path))
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    node = [n for n in model.graph.node if n.op_type == "DequantizeLinear"][-1]
    return float(inits[node.input[1]].reshape(-1)[0])


def _check_quantized_model(name, fmt, per_channel, toolchain, executor, directory):
    from byoc_compiler.config import load_config
    from byoc_compiler.frontend import from_onnx
    needs.toolchain(load_config().toolchains[toolchain])
    from byoc_compiler.testing.quantize import quantized_zoo_model, sample_input
    path = quantized_zoo_model(name, fmt, per_channel, directory)
    inp, x = sample_input(path)
    mod = from_onnx(str(path))
    part = byoc.partition_for("ccompiler", mod)
    summary = byoc.partition.summarize(part)
    assert summary.host_op_count == 0, summary.table()
    (got,) = byoc.build(part, toolchain=toolchain, executor=executor).run_runner([x])
    np.testing.assert_array_equal(got, run_reference(mod, {inp: x})[0])
    peer = _onnxruntime(path, inp, x)
    assert np.mean(got == peer) >= 0.999
    assert np.abs(got.astype(np.float64) - peer).max() <= _lsb(path) * 1.0001


TINY_CASES = [pytest.param("resnet50_tiny", "qdq", True, "gcc", "graph", id="resnet50_tiny-qdq-per_channel-gcc-graph")]
TINY_CASES += [pytest.param(n, f, pc, tc, ex, marks=pytest.mark.int8,
                            id=f"{n}-{f}-{'per_channel' if pc else 'per_tensor'}-{tc}-{ex}")
               for n in ("resnet50_tiny", "mobilenetv2_tiny") for f in ("qdq", "qop") for pc in (True, False)
               for tc, ex in (("gcc", "graph"), ("clang", "aot"))
               if (n, f, pc, tc, ex) != ("resnet50_tiny", "qdq", True, "gcc", "graph")]
# foreign CPUs under qemu-user: the portable int8 kernel, big-endian s390x included
TINY_CASES += [pytest.param(n, "qdq", True, tc, ex, marks=pytest.mark.int8, id=f"{n}-qdq-per_channel-{tc}-{ex}")
               for n, tc, ex in (("resnet50_tiny", "aarch64-gcc", "graph"), ("mobilenetv2_tiny", "armhf-gcc", "aot"),
                                 ("mobilenetv2_tiny", "riscv64-gcc", "graph"), ("resnet50_tiny", "s390x-gcc", "aot"))]


@pytest.mark.parametrize("name,fmt,per_channel,toolchain,executor", TINY_CASES)
def test_tiny_quantized_models_in_ccompiler(name, fmt, per_channel, toolchain, executor, tmp_path):
    _check_quantized_model(name, fmt, per_channel, toolchain, executor, tmp_path)


@pytest.mark.int8
@pytest.mark.realsize
@pytest.mark.parametrize("name", ["resnet50", "mobilenetv2"])
@pytest.mark.parametrize("toolchain,executor", [("gcc", "graph"), ("gcc", "aot"), ("clang", "graph"),
                                                ("clang", "aot")])
def test_realsize_quantized_models_in_ccompiler(name, toolchain, executor, tmp_path_factory):
    _check_quantized_model(name, "qdq", True, toolchain, executor, tmp_path_factory.getbasetemp() / "int8-models")


@pytest.mark.parametrize("out_dtype", ["uint8", "int8"])
def test_quantize_kernels_equal_numpy(ck, out_dtype):
    """Ties, NaN, infinities and out-of-range values, per channel, on every int8 kernel."""
    x = np.concatenate([np.arange(-300, 300, 0.5, dtype=np.float32), [np.nan, np.inf, -np.inf, 1e30, -0.0]])
    x = np.tile(x.astype(np.float32), 2).reshape(1, 2, -1)
    scale = np.asarray([0.5, 2.0], np.float32)
    zp = np.asarray([3, -1] if out_dtype == "int8" else [3, 200], np.int32)
    lo, hi = Q.TYPE_RANGE[out_dtype]
    with np.errstate(invalid="ignore"):
        v = np.rint(x / scale.reshape(1, 2, 1)) + zp.reshape(1, 2, 1).astype(np.float32)
    want = np.where(np.isnan(v), 0, np.clip(v, lo, hi)).astype(out_dtype)
    for kernel in _kernels(ck):
        assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0
        out = np.zeros(x.shape, out_dtype)
        assert ck.ck_quantize(ctypes.c_int64(1), ctypes.c_int64(2), ctypes.c_int64(x.shape[2]), _ptr(x), _ptr(scale),
                              _ptr(zp), ctypes.c_int32(out_dtype == "int8"), _ptr(out)) == 0
        np.testing.assert_array_equal(out, want, err_msg=kernel)


class PoolParams(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32 if name in K.POOL2D_INT32_FIELDS else ctypes.c_int64)
                for name in K.POOL2D_PARAM_FIELDS]


# (id, shape, pool, strides, padding, dilation): rows up to 256 wide folded down the window first (ck_qelementwise.c)
POOLS = [("3x3-s2-pad", (1, 2, 9, 70), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
         ("2x2-s1", (2, 3, 5, 41), (2, 2), (1, 1), (0,) * 4, (1, 1)),
         ("3x3-s3-ragged", (1, 1, 7, 52), (3, 3), (3, 3), (1, 0, 0, 1), (1, 1)),
         # 102 output columns: a row in two 64-column vectors (AVX-512), the last tap of the odd width masked
         ("3x3-s2-wide", (1, 2, 7, 203), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),
         ("3x3-s2-narrow", (1, 3, 9, 21), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),   # 11 columns: the low 64 bytes only
         ("3x3-s2-row-of-257", (1, 1, 5, 257), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),    # too wide to fold: tap by tap
         ("3x3-s2-row-of-256", (1, 1, 5, 256), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1)),    # the widest folded row
         ("1x18-one-row", (1, 2, 3, 40), (1, 18), (1, 1), (0, 0, 0, 0), (1, 1)),         # no fold, ranges per row
         ("3x17-s2-padded", (1, 2, 6, 50), (3, 17), (1, 2), (1, 8, 1, 8), (1, 1)),       # folded, ranges per row
         ("3x3-dilated-2", (1, 2, 11, 30), (3, 3), (1, 1), (2, 2, 2, 2), (2, 2)),
         ("4x2-window-past-the-rows", (1, 1, 3, 9), (4, 2), (2, 2), (2, 0, 2, 1), (1, 1))]


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("name,shape,pool,strides,padding,dilation", POOLS, ids=[p[0] for p in POOLS])
def test_qmax_pool2d_equals_loops(ck, dtype, name, shape, pool, strides, padding, dilation):
    from byoc_compiler.testing.loops import pool2d_loops
    x = _draw(shape, dtype)
    want = pool2d_loops(x.astype(np.float64), "max", pool, strides, padding, dilation, False, False).astype(dtype)
    p = PoolParams(**K.pool2d_params(shape, pool, strides, padding, dilation, False, False))
    out = np.zeros(want.shape, dtype)
    assert ck.ck_qmax_pool2d(ctypes.byref(p), ctypes.c_int32(dtype == "int8"), _ptr(x), _ptr(out)) == 0
    np.testing.assert_array_equal(out, want)


# ---- TFLite's requantization (ck_qparams.rounding 1) ------------------------------------------------

def _tflite_pairs(ms, es) -> np.ndarray:
    """The kernels' `scale` argument with rounding 1: int32 (multiplier, exponent) per output channel."""
    return np.ascontiguousarray(np.stack([np.asarray(ms, np.int64), np.asarray(es, np.int64)], 1).astype(np.int32))


def _tflite_want(acc: np.ndarray, ms, es, q: dict, axis: int) -> np.ndarray:
    """tflite_math's MultiplyByQuantizedMultiplier per channel (the op reference's), + zero point, clamped."""
    shape = [1] * acc.ndim
    shape[axis] = -1
    scaled = tflite_math.multiply_by_quantized_multiplier(acc, np.reshape(ms, shape), np.reshape(es, shape))
    return np.clip(scaled + q["output_zero_point"], q["out_min"], q["out_max"])


def _tflite_reals(n: int) -> np.ndarray:
    """Factors 2**-24 .. 2**3 per channel: exponents right (-23) through left (+4) of the binary point, the
    first channel's shift right, the last one's left."""
    reals = np.exp2(RNG.uniform(-24.0, 3.0, size=n))
    reals[0], reals[-1] = 3e-6, 5.7
    return reals


@pytest.mark.parametrize("case", CONVS, ids=[c[0] for c in CONVS])
def test_qconv2d_tflite_rounding_equals_tflite_math(ck, case):
    """conv (grouped, depthwise, 1x1, strided) + bias with TFLite's per-channel multipliers and shifts
    (from tflite_math.quantize_multiplier, the function the reference uses), every kernel this CPU runs, plain and
    pair-safe weights."""
    _, dshape, wshape, strides, padding, groups, in_dtype, *dilation = case
    x, w = _draw(dshape, in_dtype), _draw(wshape, "int8")
    bias = RNG.integers(-3000, 3000, size=wshape[0]).astype(np.int32)
    ms, es = tflite_math.multipliers(_tflite_reals(wshape[0]))
    assert min(es) < 0 < max(es)
    xz = int(_draw((), in_dtype))
    p = K.conv2d_params(dshape, wshape, strides, padding, dilation[0] if dilation else (1, 1), groups)
    q = Q.qparams(in_dtype, "int8", xz, -7, out_min=-120, rounding="tflite")
    depthwise = Q.is_depthwise(p)
    weight = w if depthwise else Q.pack_weight(groups, w)
    folded = Q.fold_bias(w, bias, xz + (0 if depthwise or in_dtype == "uint8" else 128), np.zeros(wshape[0], np.int64))
    want = _tflite_want(_conv_int64(x.astype(np.int64) - xz, w, p) + bias.reshape(1, -1, 1, 1), ms, es, q, 1)
    pairs = _tflite_pairs(ms, es)
    # QNR: a board's im2col into the panel; "pair-safe": the whole image on a pair-safe weight (hosted only)
    forms = [(0, weight, 0), (Q.QNR, weight, 0)] + ([] if depthwise else [(0, Q.pack_weight_pairs(groups, w), 1)])
    for kernel, (columns, packed, pair_safe) in itertools.product(_kernels(ck), forms):
        params = QConvParams(ConvParams(**p), QParams(**q), columns, 0, pair_safe)
        ws = np.zeros(Q.qconv2d_workspace_bytes(p, columns) + 1, np.uint8)[1:]
        assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0
        out = np.zeros(want.shape, np.int8)
        assert ck.ck_qconv2d(ctypes.byref(params), _ptr(x), _ptr(packed), _ptr(folded), _ptr(pairs), _ptr(out),
                             _ptr(ws)) == 0
        np.testing.assert_array_equal(out, want, err_msg=f"{kernel}, {columns} columns, pair-safe {pair_safe}")


# (id, multiplier, exponent): ties of the doubling high multiply (M = 2**30 halves odd values), ties of the
# rounding right shift, the largest multiplier, left shifts that wrap int32, a zero factor
EPILOGUES = [("half-multiplier", 1 << 30, 0), ("half-right-3", 1 << 30, -3), ("max-right-1", 2 ** 31 - 1, -1),
             ("max-left-4", 2 ** 31 - 1, 4), ("left-30", 1 << 30, 30), ("right-31", 1518500250, -31),
             ("odd-right-9", 1234567891, -9), ("zero", 0, 0)]


def test_qdense_tflite_epilogue_on_edge_values(ck):
    """qdense with depth 1 and weight 1 turns the bias into the accumulator: every channel a directed (M, e),
    accumulators from INT32_MIN to INT32_MAX and around ties; the strided (out_col = units) store path."""
    units, batch = len(EPILOGUES), 53
    ms = [m for _, m, _ in EPILOGUES]
    es = [e for _, _, e in EPILOGUES]
    x = np.arange(batch, dtype=np.uint8).reshape(batch, 1)
    w = np.ones((units, 1), np.int8)
    bias = np.asarray([-(2 ** 31), 2 ** 31 - batch, -7, 7, -1001, 1 << 20, -(1 << 24), 12345][:units], np.int64)
    q = Q.qparams("uint8", "int8", 0, 3, rounding="tflite")
    packed = Q.pack_weight(1, w)
    folded = Q.fold_bias(w, bias, 0, np.zeros(units, np.int64))
    acc = Q.fold_bias(w, bias, 0, np.zeros(units, np.int64)).astype(np.int64).reshape(1, -1) + x.astype(np.int64)
    want = _tflite_want(tflite_math.wrap32(acc), ms, es, q, 1)
    ws = np.zeros(Q.qdense_workspace_bytes(1, batch), np.uint8)
    pairs = _tflite_pairs(ms, es)
    for kernel, direct_rows in itertools.product(_kernels(ck), (0, 64)):   # the GEMM core, a board's dot products
        params = QDenseParams(batch, units, 1, QParams(**q), direct_rows)
        assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0
        out = np.zeros((batch, units), np.int8)
        assert ck.ck_qdense(ctypes.byref(params), _ptr(x), _ptr(packed), _ptr(folded), _ptr(pairs), _ptr(out),
                            _ptr(ws)) == 0
        np.testing.assert_array_equal(out, want, err_msg=f"{kernel}, direct_rows {direct_rows}")


# (scales lhs, rhs, out; zero points lhs, rhs, out): inputs near the output scale, one input far below it,
# the output scale finer than both (a left shift in the output rescale)
QADD_TFLITE = [((0.05, 0.06, 0.09), (3, -7, 5)), ((0.1, 0.003, 0.08), (-128, 0, -20)),
               ((0.02, 0.03, 0.007), (10, 10, 0))]


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("scales,zps", QADD_TFLITE, ids=["near", "far-apart", "fine-output"])
def test_qadd_tflite_equals_tflite_math(ck, scales, zps, dtype):
    """ck_qadd rounding 2 (TFLite's ADD) on every pair of 8-bit values against tflite_math.add, the parameters
    from tflite_math.add_params (the reference's), on every int8 kernel (AVX-512 lanes and portable C)."""
    t = tflite_math.add_params(*scales, dtype)
    lo, hi = Q.TYPE_RANGE[dtype]
    zps = tuple(z + 128 for z in zps) if dtype == "uint8" else zps   # the same points, offset into uint8
    a = np.repeat(np.arange(lo, hi + 1), 256).astype(dtype)
    b = np.tile(np.arange(lo, hi + 1), 256).astype(dtype)
    p = QAddParams(int(dtype == "int8"), 2, 0.0, 0.0, 0.0, *zps, 0, 0, 0, t["left_shift"],
                   (ctypes.c_int32 * 3)(t["m1"], t["m2"], t["mo"]), (ctypes.c_int32 * 3)(t["e1"], t["e2"], t["eo"]))
    for kernel in _kernels(ck):
        assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0
        out = np.zeros_like(a)
        assert ck.ck_qadd(ctypes.byref(p), ctypes.c_int64(a.size), _ptr(a), _ptr(b), _ptr(out)) == 0
        np.testing.assert_array_equal(out, tflite_math.add(a, b, zps[0], zps[1], zps[2], t, dtype), err_msg=kernel)


# ---- the elementwise int8 kernels on the thread pool --------------------------------------------------

class QdqAddParams(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int32) for n in ("lhs_signed", "rhs_signed", "out_signed", "relu")] + \
               [(n, ctypes.c_float) for n in ("lhs_scale", "rhs_scale", "out_scale")] + \
               [(n, ctypes.c_int32) for n in ("lhs_zero_point", "rhs_zero_point", "out_zero_point")]


def _elementwise_runs(ck, a, b, x, planes):
    """Each parallel int8 elementwise kernel on inputs of three and a bit ranges (65,536 elements a range) and
    its independent result: name -> (run(out), out dtype and shape, numpy/tflite_math result)."""
    t = tflite_math.add_params(0.05, 0.06, 0.09, "int8")
    add = QAddParams(1, 2, 0.0, 0.0, 0.0, 3, -7, 5, 0, 0, 0, t["left_shift"],
                     (ctypes.c_int32 * 3)(t["m1"], t["m2"], t["mo"]), (ctypes.c_int32 * 3)(t["e1"], t["e2"], t["eo"]))
    qdq = QdqAddParams(1, 1, 1, 1, 0.05, 0.06, 0.09, 3, -7, 5)
    fa, fb = (a.astype(np.float32) - 3) * np.float32(0.05), (b.astype(np.float32) - -7) * np.float32(0.06)
    qdq_want = np.clip(np.rint(np.maximum(fa + fb, 0) / np.float32(0.09)) + 5, -128, 127).astype(np.int8)
    scale, zp = np.asarray([0.5], np.float32), np.asarray([3], np.int32)
    pool = PoolParams(**K.pool2d_params(planes.shape, (2, 2), (2, 2), (0,) * 4, (1, 1), False, False))
    n, c64 = ctypes.c_int64(a.size), ctypes.c_int64
    return {
        "qadd-tflite": (lambda o: ck.ck_qadd(ctypes.byref(add), n, _ptr(a), _ptr(b), _ptr(o)), a,
                        tflite_math.add(a, b, 3, -7, 5, t, "int8")),
        "qdq_add-relu": (lambda o: ck.ck_qdq_add(ctypes.byref(qdq), n, _ptr(a), _ptr(b), _ptr(o)), a, qdq_want),
        "qclamp": (lambda o: ck.ck_qclamp(n, 1, _ptr(a), _ptr(o), -5, 90), a, np.clip(a, -5, 90)),
        "quantize": (lambda o: ck.ck_quantize(c64(1), c64(1), c64(x.size), _ptr(x), _ptr(scale), _ptr(zp), 1, _ptr(o)),
                     a, np.clip(np.rint(x / scale[0]) + 3, -128, 127).astype(np.int8)),
        "dequantize": (lambda o: ck.ck_dequantize(c64(1), c64(1), n, _ptr(a), 1, _ptr(scale), _ptr(zp), _ptr(o)), x,
                       (a.astype(np.float32) - 3) * scale[0]),
        "qmax_pool2d": (lambda o: ck.ck_qmax_pool2d(ctypes.byref(pool), 1, _ptr(planes), _ptr(o)),
                        np.zeros((planes.shape[0], planes.shape[1], 20, 20), np.int8),
                        planes.reshape(2, 80, 20, 2, 20, 2).max(axis=(3, 5))),
    }


def test_elementwise_kernels_are_bit_identical_for_every_thread_count(ck):
    """qnn.add (TFLite's), the fused QDQ add, clamp, quantize, dequantize and int8 max pool split into ranges
    fixed by the size (65,536 elements; max pool: planes), never by the thread count: 1, 2, 3 and 8 threads
    give the same bytes, each equal to its independent result."""
    a, b = _draw((3 * 65536 + 77,), "int8"), _draw((3 * 65536 + 77,), "int8")
    x = RNG.uniform(-80, 80, size=a.size).astype(np.float32)
    planes = _draw((2, 80, 40, 40), "int8")          # 128,000 input bytes a batch: ranges of 40 planes
    try:
        for name, (run, like, want) in _elementwise_runs(ck, a, b, x, planes).items():
            for kernel, threads in itertools.product(_kernels(ck), THREADS):
                assert ck.ck_qgemm_use_kernel(kernel.encode()) == 0 and ck.byoc_set_num_threads(threads) == 0
                out = np.zeros_like(like)
                assert run(out) == 0
                np.testing.assert_array_equal(out, want, err_msg=f"{name}, {kernel}, {threads} threads")
    finally:
        ck.byoc_set_num_threads(0)
