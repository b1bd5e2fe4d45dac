"""Median run time of zoo models partitioned for ccompiler (regions through its C codegen and kernel library),
beside peers timed in this same run. The builds are timed by the standalone runner (--repeat), AOT + unpacked.

    python bench/ccompiler_models.py [--toolchain gcc] [--opt -O3] [--repeat 200] [--models small_cnn mlp]
    python bench/ccompiler_models.py --models resnet50 mobilenetv2 --repeat 10 --rounds 7

Small zoo models (the default) are compared with the same model built for the host only and with the
numpy reference interpreter. Columns: median ms of the ccompiler build, of the host-only build and of
numpy; host/ccompiler (> 1: the kernel library is faster than the host's fallback kernels) and
numpy/ccompiler; the workspace bytes of the ccompiler regions' static workspaces (parsed from the C).

Real-size models (zoo.onnx_names(): ResNet-50, MobileNetV2 and their reduced variants) are compared with
onnxruntime on the very ONNX graph the zoo imports, with 1 and with 2 intra-op threads (ccompiler runs
single-threaded). The three take turns: every round runs the runner (--repeat runs, its median), then
each onnxruntime session --repeat times (its median); the figure is the median over --rounds rounds, so
other load on the machine skews them alike. Columns: median ms of ccompiler, onnxruntime 1 thread and 2
threads; ccompiler / ort-1 and ccompiler / ort-2 (< 1: ccompiler is faster); the 1-minute load average
after the model, so a reader can tell a busy machine.
"""
from __future__ import annotations

import os
import re
import statistics
import sys
import time

from byoc_compiler import partition_for, zoo
from zoo_runs import numpy_median_ms, parse_args, runner_median_ms


def _small(name: str, args) -> None:
    inputs = zoo.inputs(name)
    cc_ms, lib = runner_median_ms(partition_for(["ccompiler"], zoo.get(name)), inputs, args, "aot", "unpacked")
    host_ms, _ = runner_median_ms(zoo.get(name), inputs, args, "aot", "unpacked")
    peer = numpy_median_ms(zoo.get(name), inputs, max(5, args.repeat // 10))
    sizes = re.findall(r"static float region_workspace\[(\d+)\] __attribute__", lib.get_source("ccompiler"))
    floats = sum(int(n) for n in sizes)
    print(f"{name:<18}{cc_ms:>13.4f}{host_ms:>10.4f}{peer:>10.3f}{host_ms / cc_ms:>9.2f}{peer / cc_ms:>10.1f}"
          f"{4 * floats:>14}", flush=True)


def _ort_session(model_bytes: bytes, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])


def _ort_median_ms(session, feeds, repeat: int) -> float:
    session.run(None, feeds)  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _realsize(name: str, args) -> None:
    from byoc_compiler.backend.build import build

    inputs = zoo.inputs(name)
    lib = build(partition_for(["ccompiler"], zoo.get(name)), toolchain=args.toolchain, executor="aot",
                interface="unpacked", opt=args.opt)
    model_bytes = zoo.onnx_model(name).SerializeToString()
    sessions = {threads: _ort_session(model_bytes, threads) for threads in (1, 2)}
    times: dict[str, list[float]] = {"cc": [], 1: [], 2: []}
    for _ in range(args.rounds):
        lib.run_runner(inputs, repeat=args.repeat)
        times["cc"].append(lib.last_run_ms)
        for threads, session in sessions.items():
            times[threads].append(_ort_median_ms(session, inputs, args.repeat))
    cc, ort1, ort2 = (statistics.median(times[k]) for k in ("cc", 1, 2))
    print(f"{name:<18}{cc:>13.3f}{ort1:>10.3f}{ort2:>10.3f}{cc / ort1:>10.2f}{cc / ort2:>10.2f}"
          f"{os.getloadavg()[0]:>7.1f}", flush=True)


def main() -> None:
    args = parse_args(__doc__, opt="-O3", extra=lambda p: p.add_argument(
        "--rounds", type=int, default=5, help="alternating rounds for real-size models (median over them)"))
    unknown = [m for m in args.models if m not in zoo.all_names()]
    if unknown:
        sys.exit(f"unknown zoo model(s) {unknown}; zoo models: {', '.join(zoo.all_names())}")
    small = [m for m in args.models if m not in zoo.onnx_names()]
    real = [m for m in args.models if m in zoo.onnx_names()]
    if small:
        print(f"{'model':<18}{'ccompiler_ms':>13}{'host_ms':>10}{'numpy_ms':>10}{'host/cc':>9}{'numpy/cc':>10}"
              f"{'cc_workspace':>14}")
        for name in small:
            _small(name, args)
    if real:
        print(f"{'model':<18}{'ccompiler_ms':>13}{'ort1_ms':>10}{'ort2_ms':>10}{'cc/ort1':>10}{'cc/ort2':>10}"
              f"{'load':>7}")
        for name in real:
            _realsize(name, args)


if __name__ == "__main__":
    main()
