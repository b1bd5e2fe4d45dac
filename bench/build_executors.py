"""Median run time of every zoo model built for the host (graph vs AOT, packed vs unpacked), timed by the
standalone runner (--repeat), beside the numpy reference interpreter timed in this same run.

    python bench/build_executors.py [--toolchain gcc] [--repeat 200] [--models mlp small_cnn]

Prints one row per build: median ms, numpy median ms, ratio (numpy / generated: > 1 means faster than
numpy), and the workspace bytes of the build. The host kernels are the simple fallback, not a fast path.
"""
from __future__ import annotations

import argparse
import statistics
import time

from byoc_compiler import zoo
from byoc_compiler.backend.build import build
from byoc_compiler.testing.reference import run_reference


def numpy_median_ms(mod, inputs, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run_reference(mod, inputs)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--toolchain", default="gcc")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--models", nargs="*", default=zoo.names())
    args = parser.parse_args()
    print(f"{'model':<16}{'executor':<9}{'interface':<10}{'median_ms':>11}{'numpy_ms':>11}{'ratio':>8}"
          f"{'workspace':>11}")
    for name in args.models:
        mod = zoo.get(name)
        inputs = zoo.inputs(name)
        peer = numpy_median_ms(mod, inputs, max(5, args.repeat // 10))
        for executor in ("graph", "aot"):
            for interface in ("packed", "unpacked"):
                lib = build(mod, toolchain=args.toolchain, executor=executor, interface=interface)
                lib.run_runner(inputs, repeat=args.repeat)
                ms = lib.last_run_ms
                print(f"{name:<16}{executor:<9}{interface:<10}{ms:>11.4f}{peer:>11.4f}{peer / ms:>8.1f}"
                      f"{lib.metadata['workspace_bytes']:>11}")


if __name__ == "__main__":
    main()
