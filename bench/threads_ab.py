"""Two builds of one model compared at 1 and 2 threads in one process: the working tree against a git revision.

    python bench/threads_ab.py --model resnet50 --base HEAD~1 [--rounds 40] [--toolchain gcc]

On a VM whose speed moves from one process to the next (and for seconds within one), two builds timed in separate
processes differ by more than most changes to a kernel do. This script builds the model twice (`scons
target=ccompiler executor=aot interface=unpacked opt=-O3`): from this tree, and from `--base` checked out in a
scratch worktree (its own byoc_compiler on PYTHONPATH, so its codegen and kernels are the base's), loads both
libraries into this process and runs them round by round, every round each build at 1 and at 2 threads, the order
of the builds and of the thread counts swapped from one round to the next (whichever runs second in a pair reads
about 1-2% slower here). It prints each build's medians, its speedup from the second thread, and the median over
rounds of this tree's time divided by the base's at each thread count: that ratio compares runs taken within
milliseconds of each other.

Each library has its own thread pool, and a pool's workers sleep once its library has been idle for some 50-200
us, so every run here starts by waking the worker: the same for both builds, tens of microseconds against a
ResNet-50 run's tens of milliseconds. Kernels alone (tens of microseconds) are not worth comparing this way.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _build(tree: Path, project: Path, model: str, toolchain: str) -> Path:
    """The model's library built by `tree`'s byoc in `project`; one ByocError-like exit on a failed build."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "SConstruct").symlink_to(tree / "SConstruct")
    stem = Path(model).stem if model.endswith(".onnx") else model
    out = f"build/ccompiler/{toolchain}/{stem}"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(["scons", "-Q", "target=ccompiler", f"toolchain={toolchain}", f"model={model}",
                           "executor=aot", "interface=unpacked", "opt=-O3", f"config={tree / 'config.toml'}",
                           f"{out}/lib{stem}.so"], cwd=project, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"threads_ab: building {model} from {tree} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return project / out / f"lib{stem}.so"


def _worktree(base: str, where: Path) -> Path:
    proc = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), base],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"threads_ab: --base {base!r}: {proc.stderr.strip()} (give a commit, branch or tag of this repository)")
    return where


def _time_rounds(modules: list, rounds: int) -> dict:
    """{(build, threads): [ms per round]}: each round every build at 1 and 2 threads, orders swapped round by round."""
    from byoc_compiler.runtime.loader import set_num_threads

    times = {(b, t): [] for b in range(len(modules)) for t in (1, 2)}
    for r in range(rounds):
        builds = list(range(len(modules)))[:: 1 if r % 2 == 0 else -1]
        for b in builds:
            for t in ((1, 2) if (r // 2) % 2 == 0 else (2, 1)):
                set_num_threads(modules[b]._lib, t, "threads_ab")
                start = time.perf_counter()
                modules[b].run()
                times[(b, t)].append((time.perf_counter() - start) * 1e3)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50", help="a zoo name or an .onnx file")
    ap.add_argument("--base", default="HEAD", help="the git revision to compare the working tree against")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--toolchain", default="gcc")
    args = ap.parse_args()
    if args.rounds < 2:
        sys.exit("threads_ab: --rounds must be at least 2")
    from byoc_compiler.check import deterministic_inputs
    from byoc_compiler.load import load_model
    from byoc_compiler.runtime.loader import load

    model = str(Path(args.model).resolve()) if args.model.endswith(".onnx") else args.model
    inputs = deterministic_inputs(load_model(model))
    with tempfile.TemporaryDirectory(prefix="byoc-threads-ab-") as tmp:
        base_tree = _worktree(args.base, Path(tmp) / "base")
        try:
            libs = [_build(base_tree, Path(tmp) / "p-base", model, args.toolchain),
                    _build(ROOT, Path(tmp) / "p-tree", model, args.toolchain)]
            modules = [load(p) for p in libs]
            for m in modules:
                for name, value in inputs.items():
                    m.set_input(name, value)
                m.run()        # the first run faults pages in and starts the pool's worker
            times = _time_rounds(modules, args.rounds)
            for m in modules:
                m.close()
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)],
                           capture_output=True)
    med = statistics.median
    print(f"{args.model}, {args.rounds} rounds in one process, wall ms, load {os.getloadavg()[0]:.1f}")
    for b, label in enumerate((f"base {args.base}", "this tree")):
        one, two = med(times[(b, 1)]), med(times[(b, 2)])
        print(f"  {label:>20}: 1 thread {one:7.2f}  2 threads {two:7.2f}  speedup {one / two:.3f}")
    for t in (1, 2):
        ratios = [new / old for new, old in zip(times[(1, t)], times[(0, t)])]
        print(f"  this tree / base at {t} thread{'s' if t > 1 else ''}: {med(ratios):.3f} (median of per-round ratios)")


if __name__ == "__main__":
    main()
