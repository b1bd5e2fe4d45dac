"""How partitioning scales: random network-shaped graphs of 1k, 10k and 100k nodes.

Each graph is a chain of ops over [1, 16] tensors with local fan-in (an op reads
one of the last few values, a binary op also one a little further back, like
residual connections), a mix of ops ccompiler takes and ops it leaves to
examplejson or the host, plus dense+bias+relu runs for the composite patterns.
For each size the full `partition_for(["ccompiler", "examplejson"], mod)` is
timed (median CPU time of several runs), with the peer measured in the same run:
a plain topological sort (`post_order`) of the same graph. Printed: time per node and
the growth ratio between sizes next to n log n's.

    python bench/partition_scaling.py [--sizes 1000 10000 100000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import gc
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from byoc_compiler import op  # noqa: E402
from byoc_compiler.ir import IRModule, TensorType, Var, const, post_order  # noqa: E402
from byoc_compiler.partition import partition_for, summarize  # noqa: E402

WIDTH = 16


def random_graph(nodes: int, seed: int = 0) -> IRModule:
    rng = random.Random(seed)
    w = const(np.random.default_rng(seed).standard_normal((WIDTH, WIDTH)).astype("float32") * 0.1)
    b = const(np.zeros(WIDTH, "float32"))
    values = [Var("x", TensorType((1, WIDTH)))]
    count = 0
    while count < nodes:
        last = values[-1]   # every op reads the latest value, so the whole graph is reachable
        kind = rng.random()
        if kind < 0.05:      # dense + bias (+ relu): composite pattern material
            v = op.nn.bias_add(op.nn.dense(last, w), b)
            count += 2
            if rng.random() < 0.5:
                v, count = op.nn.relu(v), count + 1
        elif kind < 0.45:    # unary: mostly ccompiler; softmax goes to examplejson
            name = rng.choice(["tanh", "sigmoid", "nn.relu", "negative", "nn.softmax", "abs"])
            fn = getattr(op.nn, name[3:]) if name.startswith("nn.") else getattr(op, name)
            v, count = fn(last), count + 1
        elif kind < 0.5:     # host-only ops (no target takes expand_dims/squeeze)
            v = op.squeeze(op.expand_dims(last, 0), axis=[0])
            count += 2
        else:                # binary with a skip connection up to 24 values back
            far = values[max(0, len(values) - 1 - rng.randint(1, 24))]
            v = getattr(op, rng.choice(["add", "multiply", "subtract", "maximum"]))(last, far)
            count += 1
        values.append(v)
    return IRModule.from_expr(values[-1])


def median_time(fn, repeat: int) -> float:
    """Median CPU seconds of `fn` (CPU time, not wall time: the machine is shared with other jobs)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()  # partition_for pauses the cycle collector itself; give the peer the same footing
        try:
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        finally:
            gc.enable()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.setrecursionlimit(10000)  # nothing should recurse on depth; keep the default-ish limit to prove it

    rows = []
    for size in args.sizes:
        mod = random_graph(size)
        n = len(post_order(mod["main"].body))
        repeat = args.repeat if size <= 10000 else max(1, args.repeat // 2)
        t_part = median_time(lambda: partition_for(["ccompiler", "examplejson"], mod), repeat)
        t_sort = median_time(lambda: post_order(mod["main"].body), repeat)
        report = summarize(partition_for(["ccompiler", "examplejson"], mod))
        regions = len(report.regions)
        rows.append((size, n, t_part, t_sort, regions, report.host_op_count))

    print(f"{'ops':>8} {'nodes':>8} {'partition_for':>14} {'us/node':>8} {'topo sort':>10} {'us/node':>8} "
          f"{'ratio':>6} {'regions':>8} {'host ops':>8}")
    for size, n, tp, ts, regions, host in rows:
        print(f"{size:>8} {n:>8} {tp:>13.3f}s {tp / n * 1e6:>8.1f} {ts:>9.4f}s {ts / n * 1e6:>8.2f} "
              f"{tp / ts:>6.0f} {regions:>8} {host:>8}")
    print()
    for (s1, n1, t1, p1, *_), (s2, n2, t2, p2, *_) in zip(rows, rows[1:]):
        nlogn = (n2 * math.log(n2)) / (n1 * math.log(n1))
        print(f"{n1} -> {n2} nodes: partition_for grew x{t2 / t1:.1f}, topological sort x{p2 / p1:.1f}, "
              f"n log n x{nlogn:.1f}, n x{n2 / n1:.1f}")


if __name__ == "__main__":
    main()
