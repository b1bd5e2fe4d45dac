"""ccompiler's int8 conv (ck_qconv2d) with its im2col in chunks of output pixels against no bound (no im2col).

    python bench/qconv_chunks.py [--repeat 7] [--cc gcc] [--chunks 0,32,64,128,256,512]

ck_qconv2d_params.im2col_columns bounds the im2col scratch (0: no bound; a window wider than one pixel then
packs the GEMM's panels straight from a zero-point-bordered copy of the input, no im2col rows). Per layer and
chunk this prints the scratch the kernel asks (ck_qconv2d_workspace_bytes) and its time, the median of
--repeat rounds in CPU time of the calling thread, every chunk taking its turn in each round (so load on
the machine skews them alike; the library's thread pool held at one thread), and the ratio to 0 (no bound)
in the same run. Every chunk's output is checked equal to the unbounded one. The library is built with
-O3 -march=native.
What the codegen chooses from it (qkernels.im2col_columns): 0 on hosted toolchains, CK_QNR (32, the least
scratch) for boards whose workspace pools are bounded.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from byoc_compiler.contrib.ccompiler import kernels as K  # noqa: E402
from byoc_compiler.contrib.ccompiler import qkernels as Q  # noqa: E402

# (name, data NCHW, weight OIHW, stride, padding top/left/bottom/right)
LAYERS = [
    ("resnet8 3x3 16->16 32x32", (1, 16, 32, 32), (16, 16, 3, 3), (1, 1), (1, 1, 1, 1)),
    ("resnet8 3x3 32->32 16x16", (1, 32, 16, 16), (32, 32, 3, 3), (1, 1), (1, 1, 1, 1)),
    ("ds_cnn 10x4/2 1->64 49x10", (1, 1, 49, 10), (64, 1, 10, 4), (2, 2), (4, 1, 5, 1)),
    ("resnet50 3x3 64 56x56", (1, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1)),
    ("resnet50 3x3 256 14x14", (1, 256, 14, 14), (256, 256, 3, 3), (1, 1), (1, 1, 1, 1)),
    ("resnet50 stem 7x7/2 3->64", (1, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3, 3, 3)),
]


class _Conv(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in K.CONV2D_PARAM_FIELDS]


class _Q(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int32) for n in Q.QPARAM_FIELDS]


class _Params(ctypes.Structure):
    _fields_ = [("conv", _Conv), ("q", _Q), ("im2col_columns", ctypes.c_int64), ("winograd", ctypes.c_int32),
                ("pairs", ctypes.c_int32), ("channel_order", ctypes.POINTER(ctypes.c_int32))]


def _library(cc: str, out: Path) -> ctypes.CDLL:
    subprocess.run([cc, "-std=c99", "-O3", "-march=native", "-fPIC", "-shared", "-I", str(K.INCLUDE_DIR),
                    *map(str, K.SOURCES), *K.standalone_args(), "-o", str(out), *K.LDFLAGS, "-lpthread"], check=True)
    lib = ctypes.CDLL(str(out))
    lib.byoc_set_num_threads(1)   # one thread: the calling thread's CPU time is the whole cost
    lib.ck_qconv2d_workspace_bytes.restype = ctypes.c_size_t
    return lib


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


def _layer(lib, layer, chunks, repeat, rng) -> str:
    name, dshape, wshape, stride, pad = layer
    p = K.conv2d_params(dshape, wshape, stride, pad, (1, 1), 1)
    x = rng.integers(-128, 128, size=dshape).astype(np.int8)
    weight = Q.pack_weight(1, rng.integers(-128, 128, size=wshape).astype(np.int8))
    bias = rng.integers(-1000, 1000, size=wshape[0]).astype(np.int32)
    scale = rng.uniform(1e-4, 1e-3, size=wshape[0]).astype(np.float32)
    oh, ow = Q._output_hw(p)
    runs = {}
    for c in chunks:
        params = _Params(_Conv(**p), _Q(**Q.qparams("int8", "int8", 3, -5)), c)
        ws = np.zeros(lib.ck_qconv2d_workspace_bytes(ctypes.byref(params)), np.uint8)
        runs[c] = (params, ws, np.zeros((1, wshape[0], oh, ow), np.int8), [])
    inner = max(1, int(2e6 // (oh * ow * wshape[0] * p["channels"] * p["kernel_h"] * p["kernel_w"] / 64)))
    for _ in range(repeat + 1):          # the first round warms up and is dropped
        for params, ws, out, times in runs.values():
            t = time.thread_time()
            for _ in range(inner):
                lib.ck_qconv2d(ctypes.byref(params), _ptr(x), _ptr(weight), _ptr(bias), _ptr(scale), _ptr(out),
                               _ptr(ws))
            times.append((time.thread_time() - t) / inner * 1e6)
    whole = statistics.median(runs[chunks[0]][3][1:])
    cells = []
    for c, (_, ws, out, times) in runs.items():
        assert np.array_equal(out, runs[chunks[0]][2]), f"{name}: chunk {c} differs from no bound"
        t = statistics.median(times[1:])
        cells.append(f"{c or 'no bound'}: {ws.nbytes / 1024:.1f} KiB {t:.0f} us ({t / whole:.2f}x)")
    return f"{name:27s} " + " | ".join(cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--chunks", default="0,32,64,128,256,512")
    args = ap.parse_args()
    chunks = [int(c) for c in args.chunks.split(",")]
    if chunks[0] != 0:
        chunks.insert(0, 0)
    with tempfile.TemporaryDirectory() as tmp:
        lib = _library(args.cc, Path(tmp) / "libck.so")
        rng = np.random.default_rng(2026)
        print("layer                       chunk of output pixels: im2col scratch, CPU time (ratio to no bound)")
        for layer in LAYERS:
            print(_layer(lib, layer, chunks, args.repeat, rng), flush=True)


if __name__ == "__main__":
    main()
