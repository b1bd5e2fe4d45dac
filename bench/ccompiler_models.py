"""Median run time of every zoo model partitioned for ccompiler (regions through its C codegen and kernel
library), beside the same model built for the host only and the numpy reference interpreter, all timed in
this same run. The builds are timed by the standalone runner (--repeat), AOT + unpacked.

    python bench/ccompiler_models.py [--toolchain gcc] [--opt -O3] [--repeat 200] [--models small_cnn mlp]

Columns: median ms of the ccompiler build, of the host-only build and of numpy; host/ccompiler (> 1: the
kernel library is faster than the host's fallback kernels) and numpy/ccompiler; the workspace bytes of the
ccompiler regions' static workspaces (their sizes parsed from the generated C).
"""
from __future__ import annotations

import argparse
import re
import statistics
import time

from byoc_compiler import partition_for, zoo
from byoc_compiler.backend.build import build
from byoc_compiler.testing.reference import run_reference


def numpy_median_ms(mod, inputs, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run_reference(mod, inputs)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def runner_median_ms(mod, inputs, args) -> tuple[float, object]:
    lib = build(mod, toolchain=args.toolchain, executor="aot", interface="unpacked", opt=args.opt)
    lib.run_runner(inputs, repeat=args.repeat)
    return lib.last_run_ms, lib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolchain", default="gcc")
    parser.add_argument("--opt", default="-O3")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--models", nargs="*", default=zoo.names())
    args = parser.parse_args()
    print(f"{'model':<16}{'ccompiler_ms':>13}{'host_ms':>10}{'numpy_ms':>10}{'host/cc':>9}{'numpy/cc':>10}"
          f"{'cc_workspace':>14}")
    for name in args.models:
        inputs = zoo.inputs(name)
        cc_ms, lib = runner_median_ms(partition_for(["ccompiler"], zoo.get(name)), inputs, args)
        host_ms, _ = runner_median_ms(zoo.get(name), inputs, args)
        peer = numpy_median_ms(zoo.get(name), inputs, max(5, args.repeat // 10))
        sizes = re.findall(r"static float region_workspace\[(\d+)\] __attribute__", lib.get_source("ccompiler"))
        floats = sum(int(n) for n in sizes)
        print(f"{name:<16}{cc_ms:>13.4f}{host_ms:>10.4f}{peer:>10.3f}{host_ms / cc_ms:>9.2f}{peer / cc_ms:>10.1f}"
              f"{4 * floats:>14}", flush=True)


if __name__ == "__main__":
    main()
