"""Median run time of every zoo model built for the host (graph vs AOT, packed vs unpacked), timed by the
standalone runner (--repeat), beside the numpy reference interpreter timed in this same run.

    python bench/build_executors.py [--toolchain gcc] [--opt -O2] [--repeat 200] [--models mlp small_cnn]

Prints one row per build: median ms, numpy median ms, ratio (numpy / generated: > 1 means faster than
numpy), and the workspace bytes of the build. The host kernels are the simple fallback, not a fast path.
"""
from __future__ import annotations

from byoc_compiler import zoo
from zoo_runs import numpy_median_ms, parse_args, runner_median_ms


def main() -> None:
    args = parse_args(__doc__, opt="-O2")
    print(f"{'model':<16}{'executor':<9}{'interface':<10}{'median_ms':>11}{'numpy_ms':>11}{'ratio':>8}"
          f"{'workspace':>11}")
    for name in args.models:
        mod = zoo.get(name)
        inputs = zoo.inputs(name)
        peer = numpy_median_ms(mod, inputs, max(5, args.repeat // 10))
        for executor in ("graph", "aot"):
            for interface in ("packed", "unpacked"):
                ms, lib = runner_median_ms(mod, inputs, args, executor, interface)
                print(f"{name:<16}{executor:<9}{interface:<10}{ms:>11.4f}{peer:>11.4f}{peer / ms:>8.1f}"
                      f"{lib.metadata['workspace_bytes']:>11}")


if __name__ == "__main__":
    main()
