"""SCons build times for the default models: full build, null build, rebuild after editing one target.

Runs in a temporary copy of the project (SConstruct, site_scons, config.toml,
targets/) so that editing the target's codegen leaves the repository alone.
Peer: the same models built through the Python API (`build(...).export_runner`),
which compiles the same sources without dependency tracking, timed in the same run.

    python bench/build_times.py [--target ccompiler] [--toolchains gcc,clang] [--repeat 3] [-j 2]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Appended to the target's package (where `target` is declared): wraps its codegen so every region source it returns gains a
# comment line, the smallest edit that changes generated code (and only that target's code).
EDIT = """

def _bench_wrap(codegen):
    import dataclasses

    def wrapped(func, symbol):
        artifact = codegen(func, symbol)
        sources = {{name: f"/* edited by bench/build_times.py ({i}) */\\n" + code
                   for name, code in artifact.sources.items()}}
        return dataclasses.replace(artifact, sources=sources)
    return wrapped


target.codegen = _bench_wrap(target.codegen)
"""


def copy_project(dest: Path) -> Path:
    for name in ("SConstruct", "config.toml"):
        shutil.copy(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.o", "*.so")
    shutil.copytree(ROOT / "site_scons", dest / "site_scons", ignore=ignore)
    shutil.copytree(ROOT / "targets", dest / "targets", ignore=ignore)
    return dest


def timed_scons(project: Path, args: list[str]) -> tuple[float, int]:
    """Wall time of one scons run and how many objects it compiled."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=project, capture_output=True,
                          text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"scons {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed, sum(line.startswith("compile ") for line in proc.stdout.splitlines())


def python_api_build(target: str, toolchains: list[str], models: list[str]) -> float:
    import byoc_compiler
    from byoc_compiler import zoo

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for tc in toolchains:
            for name in models:
                mod = byoc_compiler.partition_for(target, zoo.get(name))
                byoc_compiler.build(mod, toolchain=tc).export_runner(Path(tmp) / f"{tc}-{name}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="ccompiler")
    parser.add_argument("--toolchains", default="gcc,clang")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-j", type=int, default=2, help="SCons parallel jobs")
    args = parser.parse_args()

    from byoc_compiler.config import load_config

    models = list(load_config(ROOT / "config.toml").build.models)
    toolchains = args.toolchains.split(",")
    common = [f"target={args.target}", f"toolchain={args.toolchains}", f"-j{args.j}"]
    rel_codegen = (ROOT / "targets" / args.target / "__init__.py").relative_to(ROOT)

    full, null, edit, peer = [], [], [], []
    compiled = {}
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="byoc-bench-") as tmp:
            project = copy_project(Path(tmp))
            for times, step in ((full, "full"), (null, "null")):
                seconds, compiled[step] = timed_scons(project, common)
                times.append(seconds)
            # An edit that changes what the codegen writes: a comment line in every region source.
            edited = project / rel_codegen
            edited.write_text(edited.read_text() + EDIT.format(i=i))
            seconds, compiled["edit"] = timed_scons(project, common)
            edit.append(seconds)
        peer.append(python_api_build(args.target, toolchains, models))

    med = statistics.median
    print(f"models: {', '.join(models)}; toolchains: {args.toolchains}; target: {args.target}; "
          f"-j{args.j}; median of {args.repeat}")
    print(f"{'scons full build':<34}{med(full):8.2f} s   ({compiled['full']} objects compiled)")
    print(f"{'scons null build':<34}{med(null):8.2f} s   ({compiled['null']} objects compiled)")
    print(f"{'scons rebuild after editing ' + args.target:<34}{med(edit):8.2f} s   "
          f"({compiled['edit']} objects compiled: that target's region sources)")
    print(f"{'peer: Python API build, no SCons':<34}{med(peer):8.2f} s   "
          f"(scons full / peer = {med(full) / med(peer):.2f}, null / peer = {med(null) / med(peer):.3f})")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
