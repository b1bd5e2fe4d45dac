"""Median run time of every zoo model partitioned for ccompiler (regions through its C codegen and kernel
library), beside the same model built for the host only and the numpy reference interpreter, all timed in
this same run. The builds are timed by the standalone runner (--repeat), AOT + unpacked.

    python bench/ccompiler_models.py [--toolchain gcc] [--opt -O3] [--repeat 200] [--models small_cnn mlp]

Columns: median ms of the ccompiler build, of the host-only build and of numpy; host/ccompiler (> 1: the
kernel library is faster than the host's fallback kernels) and numpy/ccompiler; the workspace bytes of the
ccompiler regions' static workspaces (their sizes parsed from the generated C).
"""
from __future__ import annotations

import re

from byoc_compiler import partition_for, zoo
from zoo_runs import numpy_median_ms, parse_args, runner_median_ms


def main() -> None:
    args = parse_args(__doc__, opt="-O3")
    print(f"{'model':<16}{'ccompiler_ms':>13}{'host_ms':>10}{'numpy_ms':>10}{'host/cc':>9}{'numpy/cc':>10}"
          f"{'cc_workspace':>14}")
    for name in args.models:
        inputs = zoo.inputs(name)
        cc_ms, lib = runner_median_ms(partition_for(["ccompiler"], zoo.get(name)), inputs, args, "aot", "unpacked")
        host_ms, _ = runner_median_ms(zoo.get(name), inputs, args, "aot", "unpacked")
        peer = numpy_median_ms(zoo.get(name), inputs, max(5, args.repeat // 10))
        sizes = re.findall(r"static float region_workspace\[(\d+)\] __attribute__", lib.get_source("ccompiler"))
        floats = sum(int(n) for n in sizes)
        print(f"{name:<16}{cc_ms:>13.4f}{host_ms:>10.4f}{peer:>10.3f}{host_ms / cc_ms:>9.2f}{peer / cc_ms:>10.1f}"
              f"{4 * floats:>14}", flush=True)


if __name__ == "__main__":
    main()
