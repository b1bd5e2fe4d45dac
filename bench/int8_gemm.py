"""One large int8 GEMM: onnxruntime's MatMulInteger against the kernel library's ck_qdense, one thread.

    python bench/int8_gemm.py [--size 1024] [--repeat 15] [--ghz 2.1]

Answers "which int8 units does onnxruntime use on this CPU": a uint8 x int8 -> int32 product of size^3
multiply-adds, timed in thread CPU time (medians of --repeat runs, the sides taking turns), printed as
GOP/s and as int8 operations per cycle at --ghz (the nominal clock; turbo makes the true figure lower).
AVX512-VNNI peaks at 256 ops per cycle (two 512-bit vpdpbusd per cycle, 64 multiply-adds each); AMX's
tdpbusd at 2,048 (1,024 multiply-adds per cycle). On Linux it also prints whether the process holds AMX's
tile state (arch_prctl ARCH_GET_XCOMP_PERM, bit 18: XTILEDATA) before and after onnxruntime is imported:
MLAS asks for it when it will use AMX. The library runs every int8 kernel this CPU offers (ck_qdense
on batch = units = depth = size, requantized to int8), each in the same turns; the ratio is to onnxruntime.
"""
from __future__ import annotations

import argparse
import ctypes
import platform
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

KERNELS = ("amx-int8-32x32", "avx512vnni-8x32", "avx2-8x32", "portable-8x32")


def tile_permission() -> str:
    """'granted' / 'not granted' for AMX's tile data (Linux x86-64), else 'n/a'."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return "n/a"
    libc, bits = ctypes.CDLL(None), ctypes.c_uint64(0)
    if libc.syscall(158, 0x1022, ctypes.byref(bits)) != 0:   # SYS_arch_prctl, ARCH_GET_XCOMP_PERM
        return "n/a"
    return "granted" if bits.value & (1 << 18) else "not granted"


class QParams(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32) for name in Q.QPARAM_FIELDS]


class QDenseParams(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("units", ctypes.c_int64), ("depth", ctypes.c_int64), ("q", QParams),
                ("direct_rows", ctypes.c_int64)]


def library(tmp: Path):
    out = tmp / "libck.so"
    subprocess.run(["gcc", "-std=c99", "-O3", "-fPIC", "-shared", "-I", str(K.INCLUDE_DIR), *map(str, K.SOURCES),
                    *K.standalone_args(), "-o", str(out), *K.LDFLAGS], check=True)
    lib = ctypes.CDLL(str(out))
    lib.byoc_set_num_threads(1)
    return lib


def ort_session(b: np.ndarray):
    import onnx  # noqa: PLC0415  (imported after the permission is read: onnxruntime asks for it at import)
    import onnxruntime as ort  # noqa: PLC0415
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415
    n = b.shape[0]
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["A", "B"], ["Y"])], "g",
                              [helper.make_tensor_value_info("A", TensorProto.UINT8, [n, n])],
                              [helper.make_tensor_value_info("Y", TensorProto.INT32, [n, n])],
                              [numpy_helper.from_array(b, "B")])
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--ghz", type=float, default=2.1, help="the clock the ops-per-cycle column assumes")
    args = ap.parse_args()
    n, rng = args.size, np.random.default_rng(0)
    a = rng.integers(0, 256, (n, n), dtype=np.uint8)
    b = rng.integers(-128, 128, (n, n), dtype=np.int8)
    before = tile_permission()
    session = ort_session(b)
    print(f"AMX tile state: {before} before importing onnxruntime, {tile_permission()} after")
    with tempfile.TemporaryDirectory() as tmp:
        lib = library(Path(tmp))
        params = QDenseParams(n, n, n, QParams(**Q.qparams("uint8", "int8", 0, 0)), 0)
        packed = np.ascontiguousarray(Q.pack_weight(1, b.T.copy()))   # weight [units, depth] = B^T
        bias, scale = np.zeros(n, np.int32), np.full(n, 1e-4, np.float32)
        ws, out = np.zeros(Q.qdense_workspace_bytes(n, n), np.uint8), np.zeros((n, n), np.int8)
        ptr = lambda x: x.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
        kernels = [k for k in KERNELS if lib.ck_qgemm_use_kernel(k.encode()) == 0]

        def run_library(kernel: str) -> None:
            lib.ck_qgemm_use_kernel(kernel.encode())
            lib.ck_qdense(ctypes.byref(params), ptr(a), ptr(packed), ptr(bias), ptr(scale), ptr(out), ptr(ws))

        sides = {"onnxruntime MatMulInteger": lambda: session.run(None, {"A": a})}
        sides.update({f"ck_qdense {k}": (lambda k=k: run_library(k)) for k in kernels})
        times: dict[str, list[float]] = {name: [] for name in sides}
        for _ in range(args.repeat + 1):   # the first turn warms up
            for name, fn in sides.items():
                t = time.thread_time()
                fn()
                times[name].append(time.thread_time() - t)
    ort_ms = float(np.median(times["onnxruntime MatMulInteger"][1:])) * 1e3
    print(f"{n}^3 int8 multiply-adds, 1 thread, thread CPU time, medians of {args.repeat}; "
          f"ops/cycle at {args.ghz} GHz (VNNI peak 256, AMX 2048)")
    print("| side | ms | GOP/s | ops/cycle | / onnxruntime |\n| --- | --- | --- | --- | --- |")
    for name, ts in times.items():
        ms = float(np.median(ts[1:])) * 1e3
        gops = 2 * n ** 3 / ms / 1e6
        print(f"| {name} | {ms:.2f} | {gops:.0f} | {gops / args.ghz:.0f} | {ms / ort_ms:.2f} |")


if __name__ == "__main__":
    main()
