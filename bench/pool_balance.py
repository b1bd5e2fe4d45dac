"""Where a model's threads wait and how much longer they work than one thread does: the pool's own accounting.

    python bench/pool_balance.py --model resnet50 [--threads 2] [--rounds 30] [--top 15]

Builds the model (`scons target=ccompiler executor=aot interface=unpacked opt=-O3`) with a toolchain that is gcc
plus -DBYOC_POOL_STATS, the runtime's profiling build (byoc/parallel.h): per parallel call, the caller's time in
tasks, its wait for the workers' last tasks after that, the workers' time in tasks and how late they joined, kept
per call of a run. It loads the library, runs it at 1 and at --threads threads alternately in this process (the
order swapped every round) and prints, per run:

- the wall time at 1 thread and at N, and the speedup;
- at N threads: the parallel calls, the time outside them, the caller's time in tasks, its wait, the workers' time
  in tasks, and all the threads' time in tasks over the 1-thread run's wall time (1.00 would be no thread working
  any slower or longer than one thread alone);
- the calls where the caller waited longest: their task function (from the library's symbols, by addr2line), tasks,
  the caller's and the workers' time in tasks. A call of two tasks can only be as fast as its slower share.

The figures are medians over rounds (runs at N threads; at 1 thread only the wall time is taken). On a VM whose
speed moves for seconds at a time, compare figures of one run of this script, not of two.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOOLCHAIN = "gcc-pool-stats"
# byoc/parallel.h's BYOC_POOL_STAT_* fields, in order
FIELDS = ("calls", "tasks", "caller_ns", "wait_ns", "worker_ns", "join_ns", "function")


def _config(project: Path) -> Path:
    """This repository's config.toml plus a toolchain that is gcc with the pool's accounting compiled in."""
    text = (ROOT / "config.toml").read_text()
    text += (f'\n[toolchains.{TOOLCHAIN}]\ncc = "gcc"\narch = "x86_64"\n'
             'cflags = ["-std=c99", "-fPIC", "-DBYOC_POOL_STATS"]\nldflags = ["-lm"]\n')
    path = project / "config.toml"
    path.write_text(text)
    return path


def _build(model: str, project: Path) -> Path:
    """The model's library built by this tree's byoc (its codegen and kernels, whatever byoc is installed: a script
    run from a scratch worktree measures that worktree)."""
    (project / "SConstruct").symlink_to(ROOT / "SConstruct")
    stem = Path(model).stem if model.endswith(".onnx") else model
    lib = f"build/ccompiler/{TOOLCHAIN}/{stem}/lib{stem}.so"
    proc = subprocess.run(["scons", "-Q", "target=ccompiler", f"toolchain={TOOLCHAIN}", f"model={model}",
                           "executor=aot", "interface=unpacked", "opt=-O3", f"config={_config(project)}", lib],
                          cwd=project, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"pool_balance: building {model} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return project / lib


def _names(lib: Path, addresses: set[int]) -> dict[int, str]:
    """Task function addresses in this process -> their names in the library (addr2line; '?' where unknown)."""
    base = None
    for line in Path("/proc/self/maps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6 and Path(parts[5]) == lib.resolve() and int(parts[2], 16) == 0:
            base = int(parts[0].split("-")[0], 16)
            break
    if base is None or not addresses:
        return {a: "?" for a in addresses}
    order = sorted(addresses)
    try:
        out = subprocess.run(["addr2line", "-f", "-e", str(lib), *[hex(a - base) for a in order]],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {a: "?" for a in addresses}
    return {a: out[2 * i] if 2 * i < len(out) else "?" for i, a in enumerate(order)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", help="a zoo name or an .onnx file")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--top", type=int, default=15, help="calls listed, by the caller's wait")
    args = ap.parse_args()
    if args.threads < 2 or args.rounds < 1:
        sys.exit("pool_balance: --threads must be at least 2 and --rounds at least 1")
    from byoc_compiler.check import deterministic_inputs
    from byoc_compiler.load import load_model
    from byoc_compiler.runtime.loader import load, set_num_threads

    model = str(Path(args.model).resolve()) if args.model.endswith(".onnx") else args.model
    inputs = deterministic_inputs(load_model(model))
    with tempfile.TemporaryDirectory(prefix="byoc-pool-balance-") as tmp:
        lib_path = _build(model, Path(tmp))
        module = load(lib_path)
        for name, value in inputs.items():
            module.set_input(name, value)
        lib = module._lib
        lib.byoc_pool_stats_read.restype = ctypes.c_int64
        lib.byoc_pool_stats_read.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_int64)]
        lib.byoc_pool_stats_reset.argtypes = [ctypes.c_int32]
        set_num_threads(lib, args.threads, "pool_balance")
        module.run()                                     # pages in, starts the workers
        lib.byoc_pool_stats_reset(1)
        module.run()
        per_run = int(lib.byoc_pool_stats_read(0, None))  # parallel calls in one run
        if per_run == 0:
            sys.exit(f"pool_balance: {args.model} makes no parallel call at {args.threads} threads")
        lib.byoc_pool_stats_reset(per_run)
        one, many, runs = [], [], []
        slot = (ctypes.c_int64 * len(FIELDS))()
        for r in range(args.rounds):
            for threads in ((1, args.threads) if r % 2 == 0 else (args.threads, 1)):
                set_num_threads(lib, threads, "pool_balance")
                before = [list(_read(lib, i, slot)) for i in range(per_run)] if threads > 1 else None
                start = time.perf_counter()
                module.run()
                wall = (time.perf_counter() - start) * 1e3
                if threads == 1:
                    one.append(wall)
                    continue
                after = [list(_read(lib, i, slot)) for i in range(per_run)]
                many.append(wall)
                runs.append([[a - b for a, b in zip(x, y)] for x, y in zip(after, before)])
        functions = [int(_read(lib, i, slot)[FIELDS.index("function")]) for i in range(per_run)]
        names = _names(lib_path, set(functions))
        module.close()
    _report(args, per_run, one, many, runs, [names[a] for a in functions])


def _read(lib, index: int, slot) -> tuple:
    lib.byoc_pool_stats_read(index, slot)
    return tuple(slot)


def _report(args, per_run: int, one: list, many: list, runs: list, function: list[str]) -> None:
    med = statistics.median
    ms = 1e-6

    def total(field: str) -> list[float]:
        f = FIELDS.index(field)
        return [sum(call[f] for call in run) * ms for run in runs]

    caller, wait, worker = total("caller_ns"), total("wait_ns"), total("worker_ns")
    inside = [c + w for c, w in zip(caller, wait)]
    work = [(c + w) / o for c, w, o in zip(caller, worker, one)]
    n = args.threads
    print(f"{args.model}, {args.rounds} rounds in one process (1 and {n} threads alternated), load "
          f"{os.getloadavg()[0]:.1f}; medians")
    print(f"  wall: 1 thread {med(one):.2f} ms, {n} threads {med(many):.2f} ms, speedup {med(one) / med(many):.3f}")
    print(f"  at {n} threads: {per_run} parallel calls; outside them {med([m - i for m, i in zip(many, inside)]):.2f}"
          f" ms; caller in tasks {med(caller):.2f} ms, waiting after them {med(wait):.2f} ms; workers in tasks "
          f"{med(worker):.2f} ms")
    print(f"  threads' time in tasks / 1-thread wall: {med(work):.3f}")
    f = {name: FIELDS.index(name) for name in FIELDS}
    rows = []
    for i in range(per_run):
        calls = [run[i] for run in runs]
        rows.append((med([c[f["wait_ns"]] for c in calls]) * 1e-3, i, calls[0][f["tasks"]],
                     med([c[f["caller_ns"]] for c in calls]) * 1e-3, med([c[f["worker_ns"]] for c in calls]) * 1e-3))
    rows.sort(reverse=True)
    print(f"  the {args.top} calls where the caller waited longest (us; workers: summed over workers):")
    print(f"  {'call':>5} {'task function':<28} {'tasks':>6} {'caller':>8} {'workers':>8} {'wait':>7}")
    for wait_us, i, tasks, caller_us, worker_us in rows[:args.top]:
        print(f"  {i:5d} {function[i]:<28} {tasks:6d} {caller_us:8.1f} {worker_us:8.1f} {wait_us:7.1f}")


if __name__ == "__main__":
    main()
