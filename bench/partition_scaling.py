"""How partitioning scales: random network-shaped graphs of 1k, 10k and 100k nodes.

Each graph is a chain of ops over [1, 16] tensors with local fan-in (an op reads
one of the last few values, a binary op also one a little further back, like
residual connections), a mix of ops ccompiler takes and ops it leaves to
examplejson or the host, plus dense+bias+relu runs for the composite patterns.
For each size the full `partition_for(["ccompiler", "examplejson"], mod)` is
timed (median CPU time of several runs, each on a new graph; `--clock wall` for wall time), with the peer
measured in the same run:
a plain topological sort (`post_order`) of the same graph. Printed: time per node and
the growth ratio between sizes next to n log n's.

    python bench/partition_scaling.py [--sizes 1000 10000 100000] [--repeat 3] [--clock cpu|wall]

With `--vs TREE` (another checkout of byoc, e.g. `git worktree add /tmp/before <commit>`) it compares
this tree's partition_for with that tree's instead, on the same graphs: each round runs one child
process per tree (alternating which goes first), each timing the median time of `--repeat` runs;
printed are both medians over `--rounds` rounds, their ratio and the load average before and after.

    python bench/partition_scaling.py --vs /tmp/before --sizes 10000 100000 --rounds 5
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = str(Path(__file__).resolve().parent.parent)
# A child of --vs imports byoc from the tree it was given (--tree), not from this script's checkout.
sys.path.insert(0, sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv else HERE)

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


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCKS["cpu"]      # set by --clock


def median_time(fn, repeat: int, fresh=None) -> float:
    """Median seconds of `fn` (CPU time by default, not wall time: the machine is shared with other jobs,
    and CPU time is far less sensitive to that; --clock wall for wall time); with
    `fresh`, each run is `fn(fresh())`, fresh() made outside the timing (a new graph: partition_for
    leaves types on the nodes it was given, and a second run on them would skip typing)."""
    times = []
    for _ in range(repeat):
        arg = fresh() if fresh is not None else None
        gc.collect()
        gc.disable()  # partition_for pauses the cycle collector itself; give the peer the same footing
        try:
            start = clock()
            fn() if fresh is None else fn(arg)
            times.append(clock() - start)
        finally:
            gc.enable()
    return statistics.median(times)


def child(size: int, repeat: int) -> None:
    """One tree's measurement for --vs: median seconds of partition_for, and where byoc came from."""
    import byoc_compiler

    seconds = median_time(lambda mod: partition_for(["ccompiler", "examplejson"], mod), repeat,
                          lambda: random_graph(size))
    print(json.dumps({"seconds": seconds, "byoc": byoc_compiler.__file__}))


def versus(peer: str, sizes: list[int], repeat: int, rounds: int, clock_name: str) -> None:
    """This tree against `peer`, alternated round by round in child processes (module docstring)."""
    def run(tree: str, size: int) -> dict:
        argv = [sys.executable, __file__, "--child", str(size), "--repeat", str(repeat), "--tree", tree,
                "--clock", clock_name]
        out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=tree)
        return json.loads(out.stdout.splitlines()[-1])

    trees = {"this tree": HERE, "peer": str(Path(peer).resolve())}
    print(f"CPU: {_cpu_model()}; {clock_name} time; load average before: {_load()}")
    for size in sizes:
        times: dict[str, list[float]] = {name: [] for name in trees}
        for r in range(rounds):
            for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                got = run(trees[name], size)
                times[name].append(got["seconds"])
                if r == 0:
                    print(f"  {name}: byoc from {got['byoc']}")
        ours, theirs = (statistics.median(times[n]) for n in trees)
        print(f"{size:>8} ops: this tree {ours:.3f} s, peer {theirs:.3f} s (medians of {rounds} rounds x median of "
              f"{repeat}): peer / this = {theirs / ours:.2f}x; rounds: this {_fmt(times['this tree'])}, "
              f"peer {_fmt(times['peer'])}")
    print(f"load average after: {_load()}")


def _fmt(values: list[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


def _load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} x {os.cpu_count()}"
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--vs", metavar="TREE", help="compare with the byoc checkout at TREE, alternated")
    parser.add_argument("--rounds", type=int, default=5, help="with --vs: rounds of one child per tree")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: process CPU time (default, far less sensitive to load); wall: elapsed time")
    parser.add_argument("--child", type=int, metavar="SIZE", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.setrecursionlimit(10000)  # nothing should recurse on depth; keep the default-ish limit to prove it
    global clock
    clock = CLOCKS[args.clock]
    if args.child:
        return child(args.child, args.repeat)
    if args.vs:
        return versus(args.vs, args.sizes, args.repeat, args.rounds, args.clock)

    rows = []
    for size in args.sizes:
        mod = random_graph(size)
        n = len(post_order(mod["main"].body))
        repeat = args.repeat if size <= 10000 else max(1, args.repeat // 2)
        t_part = median_time(lambda m: partition_for(["ccompiler", "examplejson"], m), repeat,
                             lambda: random_graph(size))
        t_sort = median_time(lambda: post_order(mod["main"].body), repeat)
        report = summarize(partition_for(["ccompiler", "examplejson"], mod))
        regions = len(report.regions)
        rows.append((size, n, t_part, t_sort, regions, report.host_op_count))

    print(f"{args.clock} time; CPU: {_cpu_model()}; load average: {_load()}")
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
