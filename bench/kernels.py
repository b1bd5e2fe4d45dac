"""Speed of the ccompiler kernel library's conv2d and dense against numpy float32 matmul and onnxruntime, one thread.

    python bench/kernels.py [--repeat 9] [--cc gcc] [--out bench/RESULTS-kernels.md] [--layers fc]

Layers are ResNet-50's (and bert_tiny's dense layers, mobilenetv2's stem); conv2d is timed as generated models call it, on
a weight packed ahead (ck_conv2d_prepacked), or for the stride-1 3x3 layers where the codegen's rule picks
Winograd (winograd.tile, as a default build planned for several threads) on the transformed weight
(ck_conv2d_winograd; the algorithm column names it), dense both ways (ck_dense, ck_dense_prepacked). The library is built twice with the flags a user gets: `-O3` (the
portable x86-64 baseline: SSE2) and `-O3 -march=native`. The peer is numpy's matmul
(OpenBLAS or whatever numpy links, pinned to one thread); for conv2d it is im2col + matmul in
numpy, timed both as the matmul alone and as the whole thing (im2col copy + matmul). Figures
are medians of --repeat runs after one warm-up, in CPU time of the calling thread (both the
library and single-threaded numpy compute there), with all columns of a row taking turns in
every repeat, so other load on the machine skews them less and alike; GFLOP/s count 2 flops per
multiply-add (a Winograd layer's GFLOP/s count the direct convolution's flops: the same work done faster).
Each conv layer is also run as a one-node ONNX model by onnxruntime with one intra-op thread
(it computes on the calling thread): its session.run timed the same way, in the same turns, and its own
profiler's kernel time of the Conv node (wall clock, so a loaded machine inflates that column alone).
The library's thread pool is held at one thread (byoc_set_num_threads(1)); the ISA path the library's
run-time dispatch picks on this CPU is printed (and names the first column).
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported: its BLAS reads these once

import argparse  # noqa: E402
import ctypes  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from byoc_compiler.contrib.ccompiler import kernels as K  # noqa: E402
from byoc_compiler.contrib.ccompiler import winograd as WG  # noqa: E402

f32p = ctypes.POINTER(ctypes.c_float)

# (name, data NCHW, out channels, kernel, stride, pad)
CONV_LAYERS = [
    ("conv1 7x7/2 3->64 @224", (1, 3, 224, 224), 64, 7, 2, 3),
    ("conv2 3x3 64->64 @56", (1, 64, 56, 56), 64, 3, 1, 1),
    ("conv2 1x1 64->256 @56", (1, 64, 56, 56), 256, 1, 1, 0),
    ("conv2 1x1 256->64 @56", (1, 256, 56, 56), 64, 1, 1, 0),        # each stage-2 block's first conv
    # (3x3/2: ResNet v1.5's, torchvision's ResNet-50; the zoo's resnet50 strides the first 1x1 of a stage instead)
    ("conv3 3x3/2 128->128 @56", (1, 128, 56, 56), 128, 3, 2, 1),
    ("conv4 3x3/2 256->256 @28", (1, 256, 28, 28), 256, 3, 2, 1),
    ("conv5 3x3/2 512->512 @14", (1, 512, 14, 14), 512, 3, 2, 1),
    ("conv3 3x3 128->128 @28", (1, 128, 28, 28), 128, 3, 1, 1),
    ("conv4 3x3 256->256 @14", (1, 256, 14, 14), 256, 3, 1, 1),
    ("conv3 1x1/2 256->128 @56", (1, 256, 56, 56), 128, 1, 2, 0),       # the zoo resnet50's strided convs
    ("conv4 1x1/2 512->1024 @28", (1, 512, 28, 28), 1024, 1, 2, 0),
    ("conv5 1x1/2 1024->2048 @14", (1, 1024, 14, 14), 2048, 1, 2, 0),
    ("conv5 3x3 512->512 @7", (1, 512, 7, 7), 512, 3, 1, 1),       # 7x7 planes: pixel-major tiles
    ("conv5 1x1 512->2048 @7", (1, 512, 7, 7), 2048, 1, 1, 0),
    # mobilenetv2's and efficientnet_lite's stem: few input channels at stride 2, as ResNet-50's conv1
    ("stem 3x3/2 3->32 @224", (1, 3, 224, 224), 32, 3, 2, 1),
]
# (name, batch, in features, out features, weight packed ahead): batch 1 reads the weight as it is (ck_dense,
# what the codegen emits); more rows run ck_dense_prepacked on a weight packed at codegen (prepack.py), each
# next to the same call packing the weight per call (ck_dense), and batch 1 on a packed weight too (why the
# codegen does not pack for one row). bert_tiny: 128 rows (sequence) through its projections and MLP.
DENSE_LAYERS = [
    ("fc 2048->1000 batch 1", 1, 2048, 1000, False),
    ("fc 2048->1000 batch 1, packed ahead", 1, 2048, 1000, True),
    ("fc 2048->1000 batch 32, packed per call", 32, 2048, 1000, False),
    ("fc 2048->1000 batch 32, packed ahead", 32, 2048, 1000, True),
    ("bert_tiny 128->128 x128 rows, packed per call", 128, 128, 128, False),
    ("bert_tiny 128->128 x128 rows, packed ahead", 128, 128, 128, True),
    ("bert_tiny 128->512 x128 rows, packed per call", 128, 128, 512, False),
    ("bert_tiny 128->512 x128 rows, packed ahead", 128, 128, 512, True),
    ("bert_tiny 512->128 x128 rows, packed per call", 128, 512, 128, False),
    ("bert_tiny 512->128 x128 rows, packed ahead", 128, 512, 128, True),
]


class ConvParams(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in K.CONV2D_PARAM_FIELDS]


class Variant:
    """One column: a build of the library with the gemm kernel it runs (its own choice, or forced)."""

    def __init__(self, lib: ctypes.CDLL, kernel: str | None = None):
        self.lib = lib
        self.kernel = (kernel or lib.ck_gemm_kernel_name().decode()).encode()
        if lib.ck_gemm_use_kernel(self.kernel) != 0:
            raise SystemExit(f"kernel {self.kernel.decode()} does not run on this CPU")

    def timed(self, call):
        """call, preceded by selecting this column's kernel (the build is shared between columns)."""
        def run():
            self.lib.ck_gemm_use_kernel(self.kernel)
            call()
        return run


def build(cc: str, flags: list[str], out: Path) -> ctypes.CDLL:
    cmd = [cc, "-std=c99", "-fPIC", "-shared", *flags, "-I", str(K.INCLUDE_DIR), *map(str, K.SOURCES),
           *K.standalone_args(), "-o", str(out), *K.LDFLAGS]
    subprocess.run(cmd, check=True)
    lib = ctypes.CDLL(str(out))
    lib.ck_conv2d_workspace_bytes.restype = ctypes.c_size_t
    lib.ck_conv2d_winograd_workspace_bytes.restype = ctypes.c_size_t
    for name in ("ck_dense_workspace_bytes", "ck_gemm_prepacked_workspace_bytes"):
        getattr(lib, name).restype = ctypes.c_size_t
        getattr(lib, name).argtypes = [ctypes.c_int64] * 3
    lib.ck_gemm_kernel_name.restype = ctypes.c_char_p
    lib.ck_gemm_kernel_at.restype = ctypes.c_char_p
    lib.byoc_set_num_threads(1)   # one thread: thread CPU time is the whole cost
    return lib


def ort_conv(x: np.ndarray, wt: np.ndarray, stride: int, pad: int, repeat: int):
    """(a call running the conv in onnxruntime with one thread, the median kernel seconds its profiler
    reports for the Conv node over `repeat` profiled runs)."""
    import json  # noqa: PLC0415  (the onnxruntime columns only)

    import onnx  # noqa: PLC0415
    import onnxruntime as ort  # noqa: PLC0415
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    o = wt.shape[0]
    oh, ow = (x.shape[2] + 2 * pad - wt.shape[2]) // stride + 1, (x.shape[3] + 2 * pad - wt.shape[3]) // stride + 1
    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[stride] * 2, pads=[pad] * 4, name="conv")
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (x.shape[0], o, oh, ow))],
                              [numpy_helper.from_array(wt, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    onnx.checker.check_model(onnx.load_from_string(model))

    def session(profile: bool):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.enable_profiling = profile
        if profile:
            opts.profile_file_prefix = str(Path(tempfile.gettempdir()) / "byoc-kernels-ort")
        return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])

    profiled = session(True)
    for _ in range(repeat + 1):
        profiled.run(None, {"x": x})
    trace = Path(profiled.end_profiling())
    events = json.loads(trace.read_text())
    trace.unlink()
    # per run: the kernels of every node of it (onnxruntime may rewrite the Conv into NCHWc reorders + conv)
    runs = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "Session" and e["name"] == "model_run"]
    kernels = [e for e in events if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time")]
    per_run = [sum(e["dur"] for e in kernels if lo <= e["ts"] <= hi) for lo, hi in runs]
    plain = session(False)
    return (lambda: plain.run(None, {"x": x})), float(np.median(per_run[1:] or per_run)) * 1e-6


def interleaved_medians(calls: dict, repeat: int) -> dict:
    """Median thread CPU seconds of each call; the calls take turns within every repeat, so a
    change of load on the machine hits every column alike."""
    times = {name: [] for name in calls}
    for fn in calls.values():
        fn()  # warm-up: caches, lazy kernel choice
    for _ in range(repeat):
        for name, fn in calls.items():
            start = time.thread_time()
            fn()
            times[name].append(time.thread_time() - start)
    return {name: float(np.median(t)) for name, t in times.items()}


def ptr(a):
    return a.ctypes.data_as(f32p)


def im2col(x_padded: np.ndarray, k: int, stride: int, oh: int, ow: int) -> np.ndarray:
    """[C*k*k, OH*OW] copy of the patches (one image)."""
    c = x_padded.shape[1]
    sc, sh, sw = x_padded.strides[1:]
    view = np.lib.stride_tricks.as_strided(x_padded[0], shape=(c, k, k, oh, ow),
                                           strides=(sc, sh, sw, sh * stride, sw * stride))
    return view.reshape(c * k * k, oh * ow)


def conv_row(libs, layer, repeat):
    name, (n, c, h, w), o, k, s, pad = layer
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    wt = rng.standard_normal((o, c, k, k), dtype=np.float32)
    values = K.conv2d_params(x.shape, wt.shape, (s, s), (pad,) * 4, (1, 1), 1)
    oh, ow = K.conv2d_output_hw(values)
    flops = 2.0 * n * o * c * k * k * oh * ow
    w2 = wt.reshape(o, -1)

    def numpy_whole():
        cols = im2col(np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))), k, s, oh, ow)
        return w2 @ cols

    cols = im2col(np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))), k, s, oh, ow)
    want = (w2 @ cols).reshape(1, o, oh, ow)
    params = ConvParams(**values)
    m = WG.tile(values)  # as the codegen does: Winograd F(m x m, 3 x 3) where its rule picks it, else
    # ck_conv2d_prepacked; the weight packed (transformed) ahead either way
    packed = WG.pack_weight(values, m, wt) if m else K.pack_conv2d_weight(values, wt)
    ort_run, ort_kernel_s = ort_conv(x, wt, s, pad, repeat)
    calls = {"numpy_matmul": lambda: w2 @ cols, "numpy_whole": numpy_whole, "ort": ort_run}
    outputs = {}
    for label, variant in libs.items():
        lib = variant.lib
        ws = np.empty((lib.ck_conv2d_winograd_workspace_bytes(ctypes.byref(params), m) if m else
                       lib.ck_conv2d_workspace_bytes(ctypes.byref(params))) + 64, np.uint8)
        out = outputs[label] = np.empty((n, o, oh, ow), np.float32)
        if m:
            call = (lambda lib=lib, ws=ws, out=out: lib.ck_conv2d_winograd(
                ctypes.byref(params), m, ptr(x), ptr(packed), None, None, 0, ptr(out), ctypes.c_void_p(ws.ctypes.data)))
        else:
            call = (lambda lib=lib, ws=ws, out=out: lib.ck_conv2d_prepacked(
                ctypes.byref(params), ptr(x), ptr(packed), None, 0, ptr(out), ctypes.c_void_p(ws.ctypes.data)))
        calls[label] = variant.timed(call)
    seconds = interleaved_medians(calls, repeat)
    for label, out in outputs.items():
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-2 * np.sqrt(c * k * k), err_msg=label)
    row = {"name": name, "shape": f"{c}x{h}x{w} -> {o}x{oh}x{ow}",
           "algorithm": f"winograd F({m}x{m},3x3)" if m else "direct (gemm tiles)"}
    row.update({key: flops / t / 1e9 for key, t in seconds.items()})
    row["ort_profiled"] = flops / ort_kernel_s / 1e9
    return row


def dense_row(libs, layer, repeat):
    name, m, kdim, n, ahead = layer
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, kdim), dtype=np.float32)
    wt = rng.standard_normal((n, kdim), dtype=np.float32)
    packed = K.pack_gemm_b(wt.T)  # as the codegen does for more than one row
    flops = 2.0 * m * n * kdim
    want = x @ wt.T
    calls = {"numpy_matmul": lambda: x @ wt.T}
    outputs = {}
    for label, variant in libs.items():
        lib = variant.lib
        fn, weight = (lib.ck_dense_prepacked, packed) if ahead else (lib.ck_dense, wt)
        size = lib.ck_gemm_prepacked_workspace_bytes if ahead else lib.ck_dense_workspace_bytes
        ws = np.empty(size(m, n, kdim) + 64, np.uint8)
        out = outputs[label] = np.empty((m, n), np.float32)
        calls[label] = variant.timed(
            lambda fn=fn, weight=weight, ws=ws, out=out: fn(ctypes.c_int64(m), ctypes.c_int64(n), ctypes.c_int64(kdim),
                                                            ptr(x), ptr(weight), None, 0, ptr(out),
                                                            ctypes.c_void_p(ws.ctypes.data)))
    seconds = interleaved_medians(calls, repeat)
    for label, out in outputs.items():
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-2 * np.sqrt(kdim), err_msg=label)
    row = {"name": name, "shape": f"[{m},{kdim}] x [{n},{kdim}]^T"}
    row.update({key: flops / t / 1e9 for key, t in seconds.items()})
    row["numpy_whole"] = row["numpy_matmul"]
    row["ort"] = row["ort_profiled"] = None     # (conv layers only)
    return row


def ort_version() -> str:
    import onnxruntime  # noqa: PLC0415  (only for the report)

    return onnxruntime.__version__


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_name() -> str:
    try:
        info = np.show_config(mode="dicts")
        blas = info["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # older numpy: no dict mode
        return "unknown BLAS"


def table(rows, labels) -> str:
    """GFLOP/s per column, then every ck column over numpy's matmul, the default build over numpy's whole
    im2col + matmul, and over onnxruntime (its session.run in CPU time; its profiler's kernel time)."""
    first = labels[0]
    head = ["layer", "shape", "algorithm", *(f"ck {lab}" for lab in labels), "numpy matmul", "numpy im2col+matmul",
            "ort run", "ort kernel (profiler)", *(f"{lab} / matmul" for lab in labels),
            f"{first} / im2col+matmul", f"{first} / ort run"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ort = r["ort"] is not None
        cells = [r["name"], r["shape"], r.get("algorithm", "gemm"), *(f"{r[lab]:.1f}" for lab in labels), f"{r['numpy_matmul']:.1f}",
                 f"{r['numpy_whole']:.1f}" if r["numpy_whole"] != r["numpy_matmul"] else "(same)",
                 f"{r['ort']:.1f}" if ort else "", f"{r['ort_profiled']:.1f}" if ort else "",
                 *(f"{r[lab] / r['numpy_matmul']:.2f}" for lab in labels),
                 f"{r[first] / r['numpy_whole']:.2f}", f"{r[first] / r['ort']:.2f}" if ort else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--cc", default="gcc")
    ap.add_argument("--out", type=Path, default=None,
                    help="the report's file (default: bench/RESULTS-kernels.md for a run of every layer; a --layers "
                         "run writes none unless asked, so that it never replaces the full table)")
    ap.add_argument("--layers", help="only the rows whose name contains this text (e.g. fc, bert_tiny, conv4)")
    args = ap.parse_args(argv)
    chosen = [layer for layer in CONV_LAYERS + DENSE_LAYERS if args.layers is None or args.layers in layer[0]]
    with tempfile.TemporaryDirectory() as tmp:
        plain = build(args.cc, ["-O3"], Path(tmp) / "libck-O3.so")
        native = build(args.cc, ["-O3", "-march=native"], Path(tmp) / "libck-native.so")
        kernels = []
        while (name := plain.ck_gemm_kernel_at(len(kernels))) is not None:
            kernels.append(name.decode())
        auto = plain.ck_gemm_kernel_name().decode()
        libs = {f"-O3 ({auto})": Variant(plain), "-O3 -march=native": Variant(native)}
        if kernels[-1] != auto:
            libs[f"-O3 forced {kernels[-1]}"] = Variant(plain, kernels[-1])
        rows = [conv_row(libs, layer, args.repeat) for layer in CONV_LAYERS if layer in chosen]
        rows += [dense_row(libs, layer, args.repeat) for layer in DENSE_LAYERS if layer in chosen]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    cc_version = subprocess.run([args.cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    text = "\n".join([
        "# ccompiler kernel library vs numpy and onnxruntime (GFLOP/s, single thread)",
        "",
        f"Command: `python bench/kernels.py --repeat {args.repeat} --cc {args.cc}"
        f"{f' --layers {args.layers}' if args.layers else ''}` — medians of {args.repeat} runs "
        "(thread CPU time, the columns of a row taking turns).",
        f"CPU: {cpu_model()} ({os.cpu_count()} cores, load average {load} at the end of the run); compiler:",
        f"{cc_version}; numpy {np.__version__} with {blas_name()}, one thread; onnxruntime {ort_version()}, one "
        f"thread. ISA path of the library's run-time dispatch on this CPU: {auto}.",
        "Columns: the library built with `-std=c99 -O3` (its gemm kernel picked from the CPU at run time, named",
        "in brackets), built with `-O3 -march=native`, and the `-O3` build forced onto the kernel the compiler",
        "flags alone allow (`baseline`, x86-64: SSE2) — what a build without run-time dispatch would get.",
        "numpy matmul times only `W[O, C*k*k] @ cols` on a precomputed im2col; numpy im2col+matmul times the",
        "patch copy too (for dense both are `x @ W.T`). Ratios above 1 mean the library is faster. Dense rows",
        "\"packed ahead\" call ck_dense_prepacked on a weight packed once (what generated models call for more than",
        "one row), \"packed per call\" ck_dense, which packs the weight on every call. ort run: onnxruntime's",
        "session.run of the one-conv model (thread CPU time, like the library's columns); ort kernel: its",
        "profiler's time of the Conv kernel (wall clock). The last column above 1: the library is faster.",
        "algorithm: what generated code calls for the layer (winograd.tile's rule, a build planned for several",
        "threads): `winograd F(2x2,3x3)` is ck_conv2d_winograd on the transformed weight, its GFLOP/s counting the",
        "direct convolution's flops; `direct (gemm tiles)` is ck_conv2d_prepacked.",
        "",
        table(rows, list(libs)),
        "",
    ])
    print(text)
    out = args.out or (ROOT / "bench" / "RESULTS-kernels.md" if args.layers is None else None)
    if out is not None:
        out.write_text(text)
        print(f"written {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
