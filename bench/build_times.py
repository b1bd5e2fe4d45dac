"""SCons build times for the default models: full build, null build, rebuild after editing one target.

Runs in a temporary project (SConstruct, config.toml) with a copy of the checkout it builds with
(byoc_compiler/, targets/, pyproject.toml; on PYTHONPATH) so that editing the target's codegen leaves the
repository alone.
Peer: the same models built through the Python API (`build(...).export_runner`),
which compiles the same sources without dependency tracking, timed in the same run.

    python bench/build_times.py [--target ccompiler] [--toolchains gcc,clang] [--repeat 3] [-j 2]

With --model FILE (a real-size model, e.g. `python -m byoc_compiler zoo export resnet50 resnet50.onnx`):
`scons target=T toolchain=TOOLCHAINS model=FILE` as a user types it (default toolchains gcc,clang, like
config.toml): full build, then the check alone, null build, a weights-only edit (ONNX initializers
perturbed, same shapes), each with wall and CPU seconds and the peak memory of the largest process;
bytes of generated C, of the linked constants, of the first toolchain's build directory and of the whole
build root (like `du`: a file hard-linked from several directories, the store's constants.bin, counts
once) against the weights' bytes. Peer: the same model through the Python API (partition_for + build +
export_runner, first toolchain), timed in the same run.

    python bench/build_times.py --model resnet50.onnx [--toolchains gcc,clang] [--constants linked|params|auto]

It also lists the largest files of the build directory (where the copies of the weights are).
"""
from __future__ import annotations

import argparse
import os
import re
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
    for name in ("SConstruct", "config.toml", "pyproject.toml"):
        shutil.copy(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.o", "*.so")
    for name in ("byoc_compiler", "targets"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    return dest


def timed_scons(project: Path, args: list[str]) -> tuple[float, int]:
    """Wall time of one scons run and how many objects it compiled."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=project, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(project)})   # the copy's byoc
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


def _run_measured(project: Path, args: list[str]) -> dict:
    """One scons run in a fresh child: wall, CPU and peak RSS (a child of its own, so maxrss is its own)."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run([sys.executable, '-m', 'SCons', '-Q', *sys.argv[1:]], capture_output=True, text=True)\n"
            "w = time.perf_counter() - t\n"
            "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "sys.stdout.write(f'{p.returncode} {w} {ru.ru_utime + ru.ru_stime} {ru.ru_maxrss}\\n' + p.stdout)\n"
            "sys.stderr.write(p.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=project, capture_output=True, text=True)
    head, _, out = proc.stdout.partition("\n")
    rc, wall, cpu, rss = head.split()
    if rc != "0":
        sys.exit(f"scons {' '.join(args)} failed:\n{out[-3000:]}\n{proc.stderr[-3000:]}")
    compiled = sum(line.startswith(("compile ", "assemble ")) for line in out.splitlines())
    return {"wall": float(wall), "cpu": float(cpu), "rss": int(rss) * 1024, "compiled": compiled,
            "planned": "byoc plan" in out, "passed": re.search(r"\b[1-9]\d* passed, 0 failed", out) is not None or "check" not in args}


def _tree_bytes(path: Path, pattern: str = "*") -> int:
    return sum(p.stat().st_size for p in path.rglob(pattern) if p.is_file())


def _du_bytes(path: Path) -> tuple[int, int]:
    """(bytes of the files under path, each inode counted once as `du` does; the same summed per path)."""
    seen, unique, per_path = set(), 0, 0
    for p in path.rglob("*"):
        st = p.lstat()
        if not p.is_file() or p.is_symlink():
            continue
        per_path += st.st_size
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            unique += st.st_size
    return unique, per_path


def _perturbed_onnx(src: Path, dest: Path) -> int:
    """dest = src with every float initializer scaled by 1.01 (same shapes): a weights-only edit. Returns
    the weights' bytes."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(src))
    total = 0
    for i, init in enumerate(model.graph.initializer):
        arr = numpy_helper.to_array(init)
        total += arr.nbytes
        if arr.dtype == np.float32:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(arr * np.float32(1.01), init.name))
    onnx.save(model, str(dest))
    return total


def model_main(args) -> None:
    src = Path(args.model).resolve()
    toolchain = args.toolchains.split(",")[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="byoc-bench-model-") as tmp:
        project = copy_project(Path(tmp))
        model = project / src.name
        shutil.copy(src, model)
        common = [f"target={args.target}", f"toolchain={args.toolchains}", f"model={model.name}", f"-j{args.j}",
                  f"constants={args.constants}"]
        full = _run_measured(project, common)
        check = _run_measured(project, common + ["check"])          # the build is up to date: the check alone
        nulls = [_run_measured(project, common) for _ in range(args.repeat)]
        out = project / "build" / args.target / toolchain / model.stem
        weights = _perturbed_onnx(src, model) if src.suffix == ".onnx" else None
        gen_c = _tree_bytes(out / "src", "*.c") + _tree_bytes(out / "src", "*.h")
        linked = _tree_bytes(out / "src", "*.bin") + _tree_bytes(out, "constants.bin")
        build_dir = _tree_bytes(out)
        root_du, root_per_path = _du_bytes(project / "build")
        largest = sorted((p.stat().st_size, p.relative_to(out).as_posix()) for p in out.rglob("*") if p.is_file())[-6:]
        edit = _run_measured(project, common) if weights is not None else None
        edited_du = _du_bytes(project / "build")[0] if edit is not None else None
        store_entries = len(list((project / "build" / ".constants").glob("*.bin")))

        import byoc_compiler
        from byoc_compiler.load import load_model

        start = time.perf_counter()
        lib = byoc_compiler.build(byoc_compiler.partition_for(args.target, load_model(str(src))), toolchain=toolchain,
                                  constants=args.constants)
        lib.export_runner(Path(tmp) / "peer-runner")
        peer = time.perf_counter() - start
    med = statistics.median
    null_wall, null_cpu = med(n["wall"] for n in nulls), med(n["cpu"] for n in nulls)
    print(f"model {src.name}, target {args.target}, toolchain {args.toolchains}, constants={args.constants}, -j{args.j} "
          f"(load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs: wall times are inflated by other work)")
    rows.append(("scons full build", f"{full['wall']:.1f} s", f"{full['cpu']:.1f} s",
                 f"{full['rss'] / 2**20:.0f} MiB", f"{full['compiled']} objects"))
    rows.append(("scons check (after the build)", f"{check['wall']:.1f} s", f"{check['cpu']:.1f} s",
                 f"{check['rss'] / 2**20:.0f} MiB", f"{check['compiled']} objects, check "
                 + ("pass" if check["passed"] else "FAIL")))
    rows.append((f"scons null build (median of {len(nulls)})", f"{null_wall:.2f} s", f"{null_cpu:.2f} s",
                 f"{max(n['rss'] for n in nulls) / 2**20:.0f} MiB",
                 f"{max(n['compiled'] for n in nulls)} objects, plan "
                 + ("recomputed" if any(n["planned"] for n in nulls) else "cached")))
    if edit is not None:
        rows.append(("weights-only edit", f"{edit['wall']:.1f} s", f"{edit['cpu']:.1f} s",
                     f"{edit['rss'] / 2**20:.0f} MiB", f"{edit['compiled']} objects recompiled/assembled"))
    rows.append(("peer: Python API build + runner", f"{peer:.1f} s", "", "",
                 f"scons full / peer = {full['wall'] / peer:.2f}"))
    print(f"{'step':<34}{'wall':>9}{'cpu':>9}{'peak RSS':>10}  notes")
    for name, wall, cpu, rss, note in rows:
        print(f"{name:<34}{wall:>9}{cpu:>9}{rss:>10}  {note}")
    ratio = (lambda n: f" = {n / weights:.2f}x the weights" if weights else "")
    print(f"generated C ({toolchain}): {gen_c / 1e6:.2f} MB; large constants (.bin): {linked / 1e6:.1f} MB; "
          f"{toolchain}'s build directory: {build_dir / 1e6:.1f} MB{ratio(build_dir)}"
          + (f" ({weights / 1e6:.1f} MB)" if weights else ""))
    print(f"build root ({args.toolchains}), each inode once like du: {root_du / 1e6:.1f} MB{ratio(root_du)}; "
          f"summed per path: {root_per_path / 1e6:.1f} MB{ratio(root_per_path)}"
          + (f"; after the weights edit: {edited_du / 1e6:.1f} MB{ratio(edited_du)}, {store_entries} store "
             "entr" + ("y" if store_entries == 1 else "ies") if edited_du is not None else ""))
    print("largest files: " + ", ".join(f"{rel} {size / 1e6:.1f} MB" for size, rel in reversed(largest)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="ccompiler")
    parser.add_argument("--toolchains", default="gcc,clang")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-j", type=int, default=2, help="SCons parallel jobs")
    parser.add_argument("--model", help="a real-size model file: measure its build (see the module docstring)")
    parser.add_argument("--constants", default="auto", choices=("linked", "params", "auto"),
                        help="with --model: large constants linked into the binaries, loaded at init, or "
                             "auto (params from 64 MiB of them; config.toml's default)")
    args = parser.parse_args()
    if args.model:
        return model_main(args)

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
    if "--model" not in sys.argv:
        # (the small-model mode keeps the repository free of .pyc; --model measures what a user sees)
        os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    else:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    main()
