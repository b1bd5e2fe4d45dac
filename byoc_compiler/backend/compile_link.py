"""Compiling and linking a build: what to compile (shared with the SCons plan, so both compile the same
sources with the same include directories and defines), objects compiled with the toolchain's commands
(byoc_compiler/toolchain.py), sources that are not generated compiled once per process, and links whose
undefined region symbols are explained.

Every function takes the BuildResult (backend/result.py) it compiles; BuildResult's methods delegate here.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import runtime, toolchain as tcmod
from ..errors import ByocError
from ..linker_script import LINKER_SCRIPT
from . import threads as threadsmod
from .artifact import BlobArtifact
from .kernel_sources import used_sources

Unit = tuple[Path, list, list]     # (source, include dirs, defines)


def _write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)


def compile_units(result, srcdir: Path, runner: bool = False) -> list[Unit]:
    """Write the generated sources under srcdir; (source, include dirs, defines) for everything to compile."""
    base_includes = [runtime.include_dir()]
    threads = [threadsmod.define(result.max_threads)]    # every unit: the C size formulas agree with codegen's
    defines = (["BYOC_UNPACKED_API"] if result.interface == "unpacked" else []) + threads
    units: list[Unit] = []
    for rel, (text, symbol) in result._sources_with_owner().items():
        _write(srcdir / rel, text)
        extra = []
        if symbol is not None:
            extra = list(result.artifacts[symbol].include_dirs) + list(result.region_targets[symbol].include_dirs)
        units.append((srcdir / rel, base_includes + extra, defines))
    for rel, text in result.firmware_files().items():     # the header host.c includes; link.ld
        _write(srcdir / rel, text)
    for rel, data in result.constant_files().items():
        _write(srcdir / rel, data)
        if not isinstance(data, bytes):
            units.append((srcdir / rel, [], []))     # the .S finds its .bin next to it (-Xassembler -I, toolchain.py)
    seen: set[str] = set()
    for f in runtime.runtime_sources(result.executor, runner=runner, profile=result.toolchain.profile):
        seen.add(os.path.realpath(f))
        units.append((Path(f), base_includes, threads))
    for f, incs in library_sources(result):
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            units.append((Path(f), base_includes + incs, threads))
    return units


def runner_only_sources(executor: str, profile: str) -> set[str]:
    """Real paths of the runtime sources only the runner links (main, .npy I/O; startup code on boards)."""
    return ({os.path.realpath(f) for f in runtime.runtime_sources(executor, True, profile)}
            - {os.path.realpath(f) for f in runtime.runtime_sources(executor, False, profile)})


def library_sources(result) -> list[tuple[Path, list]]:
    """(source, include dirs) of the targets' runtime and kernel libraries a build compiles: the files its
    generated code references (kernel_sources.py)."""
    out = []
    for symbol, artifact in result.artifacts.items():
        target = result.region_targets[symbol]
        files = list(target.runtime_sources)
        if isinstance(artifact, BlobArtifact):
            files += list(artifact.runtime_sources)
        incs = list(target.include_dirs) + list(artifact.include_dirs)
        out += [(Path(f), incs) for f in files]
    if out:
        roots = list(result.sources().values())
        keep = set(used_sources(roots, list(dict.fromkeys(f for f, _ in out))))
        out = [(f, incs) for f, incs in out if f in keep]
    return out


def link_libraries(region_targets) -> tuple[list[str], list[str]]:
    """(libraries, library dirs) the region targets link, e.g. (["dnnl"], [])."""
    libs: list[str] = []
    dirs: list[str] = []
    for target in region_targets.values():
        libs += [lib for lib in target.libraries if lib not in libs]
        dirs += [os.fspath(d) for d in target.library_dirs if os.fspath(d) not in dirs]
    return libs, dirs


def check_targets_here(result) -> None:
    """One sentence, before any compiler runs, if a region's target cannot build with this toolchain."""
    for target in dict.fromkeys(result.region_targets.values()):
        problem = target.problem(result.toolchain)
        if problem:
            raise ByocError(problem)


def compile_objects(result, werror: bool, workdir: Path) -> tuple[list[Path], list[Path], Path]:
    """Objects of the model (+ runtime, target runtimes) and of the runner's extra sources, compiled in a
    new directory under `workdir`; returns (model objects, runner objects, the written linker script path)."""
    tc = result.toolchain
    tcmod.check_toolchain(tc)
    check_targets_here(result)
    outdir = Path(tempfile.mkdtemp(prefix=f"objects{werror:d}-", dir=workdir))
    units = compile_units(result, outdir / "gen", runner=True)
    runner_only = runner_only_sources(result.executor, tc.profile)
    extra = list(tcmod.WARNING_FLAGS) if werror else []
    after = [runtime.dlpack_include_dir()]
    jobs = []
    names: set[str] = set()
    for src, incs, defs in units:
        stem, n = src.stem, 0
        while stem in names:
            n += 1
            stem = f"{src.stem}_{n}"
        names.add(stem)
        obj = outdir / "obj" / f"{stem}.o"
        obj.parent.mkdir(parents=True, exist_ok=True)
        strict = tcmod.compile_argv(tc, src, obj, incs, defs, result.opt, tcmod.WARNING_FLAGS, after)
        jobs.append((tcmod.compile_argv(tc, src, obj, incs, defs, result.opt, extra, after), strict, src, obj))
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(_compile_cached, argv, src, obj, src.is_relative_to(outdir),
                               f"compiling {src.name} with toolchain {tc.name!r}", strict)
                   for argv, strict, src, obj in jobs]
        try:
            for f in futures:
                f.result()
        except tcmod.ToolchainError as exc:
            raise _keep_sources(exc, outdir / "gen") from None
    model = [obj for _, _, src, obj in jobs if os.path.realpath(src) not in runner_only]
    runner = [obj for _, _, src, obj in jobs if os.path.realpath(src) in runner_only]
    return model, runner, outdir / "gen" / LINKER_SCRIPT


def link(result, path: Path, argv_for, workdir: Path) -> Path:
    """Link in `workdir`, then move to `path`: a failed link leaves nothing at `path`."""
    out = Path(tempfile.mkdtemp(prefix="link-", dir=workdir)) / path.name
    try:
        tcmod.run_command(argv_for(out), f"linking {path.name} with toolchain {result.toolchain.name!r}")
    except tcmod.ToolchainError as exc:
        fix = undefined_symbol_fix(result, str(exc))
        if fix is None:
            raise
        raise tcmod.ToolchainError(f"{fix}\n{exc}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(out), str(path))
    return path


def undefined_symbol_fix(result, log: str) -> str | None:
    """What to do about the linker's undefined references, when they name a region's entry point."""
    names = re.findall(r"undefined (?:reference to|symbol:?) [`'\"]?([A-Za-z_][A-Za-z0-9_]*)", log)
    for name in dict.fromkeys(names):
        if name in result.artifacts:
            target = result.region_targets[name].name
            return (f"linking failed: region {name} (target {target!r}) is not defined by the C its codegen "
                    f"returned; define {name} in those sources (byoc_compiler.ctext.entry_points, vendor.entry_points "
                    "writes the entry point)")
    return None


# Objects of sources that are not generated (the runtime, target runtimes, kernel libraries) are the same for
# every model built with the same command: compile them once. Keyed by the command with the object path left
# out, the source text, the compiler executable and the headers its include directories hold (path, size,
# mtime: an edited header is a new key). Per process by default; `BYOC_OBJECT_CACHE=<dir>` shares the objects
# between processes (the test suite's workers, tests/conftest.py), written by atomic rename.
_OBJECT_CACHE: dict[str, Path] = {}
_OBJECT_CACHE_DIR: Path | None = None
_SYSTEM_DIRS = ("/usr/", "/opt/")     # installed headers (dlpack, a cross compiler's libc): never edited in a run


def _object_cache_dir() -> Path:
    global _OBJECT_CACHE_DIR
    if _OBJECT_CACHE_DIR is None:
        shared = os.environ.get("BYOC_OBJECT_CACHE")
        if shared:
            _OBJECT_CACHE_DIR = Path(shared)
            _OBJECT_CACHE_DIR.mkdir(parents=True, exist_ok=True)
        else:
            _OBJECT_CACHE_DIR = Path(tempfile.mkdtemp(prefix="byoc-objects-"))
            atexit.register(shutil.rmtree, _OBJECT_CACHE_DIR, True)
    return _OBJECT_CACHE_DIR


def _stamp(path) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path}\0missing"
    return f"{path}\0{st.st_size}\0{st.st_mtime_ns}"


def _object_key(argv: list[str], src: Path, obj: Path) -> str:
    key_argv = [a for a in argv if a != os.fspath(obj)]
    dirs = [a[2:] for a in argv if a.startswith("-I")] + [os.fspath(Path(src).parent)]
    stamps = [_stamp(shutil.which(argv[0]) or argv[0])]
    for d in dict.fromkeys(dirs):
        if not d.startswith(_SYSTEM_DIRS):
            stamps += [_stamp(h) for h in sorted(Path(d).rglob("*.h"))]
    text = "\0".join(key_argv) + "\0" + "\n".join(stamps) + "\0"
    return hashlib.sha256(text.encode() + Path(src).read_bytes()).hexdigest()


def _cached_object(argv: list[str], src: Path, obj: Path) -> tuple[str, Path]:
    key = _object_key(argv, src, obj)
    return key, _OBJECT_CACHE.get(key) or _object_cache_dir() / f"{key}.o"


def _compile_cached(argv: list[str], src: Path, obj: Path, generated: bool, what: str,
                    strict: list[str] | None = None) -> None:
    """Compile `src` (argv writes `obj`), through the object cache unless it is generated. `strict` is the same
    command with the warning flags: they change no code, so a library built both ways (a test's runner with
    -Werror, its shared library without) compiles once, with the warnings checked; a source they reject is then
    compiled as asked."""
    if generated:
        tcmod.run_command(argv, what)
        return
    commands = [strict, argv] if strict is not None and strict != argv else [argv]
    for command in commands:
        key, cached = _cached_object(command, src, obj)
        if cached.exists():
            shutil.copyfile(cached, obj)
            return
    for n, command in enumerate(commands):
        try:
            tcmod.run_command(command, what)
            break
        except tcmod.ToolchainError:
            if n == len(commands) - 1:
                raise
    key, cached = _cached_object(command, src, obj)
    partial = cached.with_name(f"{key}.{os.getpid()}.{threading.get_ident()}.part")
    shutil.copyfile(obj, partial)
    os.replace(partial, cached)     # another process may be writing the same object: both are whole
    _OBJECT_CACHE[key] = cached


def _keep_sources(exc, gen: Path):
    """A compile error of generated code: copy the generated sources out of the build's temporary directory
    (deleted with the result) and point the message at the copy."""
    kept = Path(tempfile.mkdtemp(prefix="byoc-failed-sources-"))
    shutil.copytree(gen, kept, dirs_exist_ok=True)
    text = str(exc).replace(os.fspath(gen), os.fspath(kept))
    return tcmod.ToolchainError(f"{text}\nthe generated sources are kept in {kept} (delete it when done)")
