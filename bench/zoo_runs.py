"""What the zoo-model benchmarks share: their command line, the numpy peer, and a build timed by the runner."""
from __future__ import annotations

import argparse
import statistics
import time

from byoc_compiler import zoo
from byoc_compiler.backend.build import build
from byoc_compiler.testing.reference import run_reference


def parse_args(doc: str, opt: str, extra=None) -> argparse.Namespace:
    """--toolchain, --opt, --repeat (runs per build), --models (default: the small zoo models); `extra(parser)`
    adds a script's own options."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--toolchain", default="gcc")
    parser.add_argument("--opt", default=opt)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--models", nargs="*", default=zoo.names())
    if extra is not None:
        extra(parser)
    return parser.parse_args()


def numpy_median_ms(mod, inputs, repeat: int) -> float:
    """The peer: the numpy reference interpreter on the unpartitioned model."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run_reference(mod, inputs)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def runner_median_ms(mod, inputs, args, executor: str, interface: str):
    """(median ms of args.repeat runs timed inside the standalone runner, the BuildResult)."""
    lib = build(mod, toolchain=args.toolchain, executor=executor, interface=interface, opt=args.opt)
    lib.run_runner(inputs, repeat=args.repeat)
    return lib.last_run_ms, lib
