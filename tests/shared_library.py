"""Shared libraries the ctypes kernel tests compile, built once per run for all workers.

The kernel test files each compile a library per (compiler, flags) in a session fixture; under xdist every
worker runs that fixture, and two files compile the same library with the same command (the whole kernel
library at gcc -O3 is 12 s of CPU). `compile_shared(argv, name)` keys the command (without its output) and
the bytes of every source and header it reads, keeps the library in the run's object cache directory
(BYOC_OBJECT_CACHE, made by tests/conftest.py) and lets one worker compile while the other waits on a lock.
`kernel_library` links ccompiler's kernels from objects compiled with the model builds' own command through
their object cache instead, so the kernel suites and the run's model builds compile each source once.
"""
from __future__ import annotations

import atexit
import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


@functools.lru_cache(maxsize=None)
def _cache_dir() -> Path:
    """The run's object cache (tests/conftest.py sets BYOC_OBJECT_CACHE); outside a run, one folder per process."""
    shared = os.environ.get("BYOC_OBJECT_CACHE")
    if shared:
        return Path(shared)
    folder = tempfile.mkdtemp(prefix="byoc-test-libs-")
    atexit.register(shutil.rmtree, folder, True)
    return Path(folder)


def _key(argv: list[str]) -> str:
    digest = hashlib.sha256("\0".join(argv).encode())
    dirs = [a[2:] if a.startswith("-I") and len(a) > 2 else argv[i + 1]
            for i, a in enumerate(argv) if a.startswith("-I")]
    files = [Path(a) for a in argv if a.endswith((".c", ".h")) and Path(a).is_file()]
    dirs += [str(f.parent) for f in files]
    for d in dict.fromkeys(dirs):
        files += sorted(Path(d).glob("*.h"))
    for f in dict.fromkeys(files):
        digest.update(str(f).encode() + b"\0" + f.read_bytes())
    digest.update((shutil.which(argv[0]) or argv[0]).encode())
    return digest.hexdigest()[:32]


def compile_shared(argv: list[str], name: str) -> Path:
    """Compile `argv + ["-o", <library>]` once for the run; the library's path (named `name` in its own
    directory). A failed compile fails the caller's test with the command and the compiler's messages."""
    folder = _cache_dir() / "shared-libs" / _key(argv)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / name
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)    # the other worker waits here instead of compiling it again
        if not out.exists():
            partial = folder / f"{name}.part"
            proc = subprocess.run([*argv, "-o", str(partial)], capture_output=True, text=True)
            assert proc.returncode == 0, f"{' '.join(argv)}\n{proc.stderr}"
            os.replace(partial, out)
    return out


def shared_source(text: str, name: str) -> Path:
    """A generated C file at a path named by its content, so `compile_shared` finds the same library for the same
    text in every worker (a file under a worker's own tmp_path would be a new command each time)."""
    path = _cache_dir() / "shared-sources" / hashlib.sha256(text.encode()).hexdigest()[:32] / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{name}.{os.getpid()}.part")
        partial.write_text(text)
        os.replace(partial, path)
    return path


def _toolchain(cc: str, flags: list[str]):
    """The configured toolchain and level `cc` with `flags` names: a level, or sanitizer_rerun.SANITIZER_FLAGS
    (the `<cc>-asan-ubsan` toolchain at -O0)."""
    from byoc_compiler.config import load_config
    from sanitizer_rerun import SANITIZER_FLAGS

    toolchain, opt = (f"{cc}-asan-ubsan", "-O0") if list(flags) == SANITIZER_FLAGS else (cc, " ".join(flags))
    return load_config().toolchain(toolchain), opt


def object_command(cc: str, flags: list[str], src, obj, include_dirs) -> list[str]:
    """How a model build compiles a kernel library's source (toolchain.compile_argv: the toolchain's cflags, the
    level, the warning flags, -DBYOC_MAX_THREADS, the include directories, dlpack's directory after the
    system's)."""
    from byoc_compiler import toolchain as tcmod
    from byoc_compiler.backend import threads
    from byoc_compiler.runtime import dlpack_include_dir

    tc, opt = _toolchain(cc, flags)
    return tcmod.compile_argv(tc, src, obj, include_dirs, [threads.define(threads.DEFAULT_MAX_THREADS)], opt,
                              tcmod.WARNING_FLAGS, [dlpack_include_dir()])


def compile_objects_shared(cc: str, flags: list[str], units: list, name: str) -> tuple[list[Path], Path]:
    """The objects of `units` ((source, include directories) pairs), compiled with `object_command` through the
    builds' object cache, so the kernel suites and the run's in-process model builds compile each kernel source
    once per compiler and level between them (the whole library is 20 s of CPU at -O3 and again under the
    sanitizers), and a shared library `name` linked from them: (objects in the order of `units`, library)."""
    from byoc_compiler import toolchain as tcmod
    from byoc_compiler.backend import compile_link

    commands = [object_command(cc, flags, src, Path(src).stem + ".o", dirs) for src, dirs in units]
    folder = _cache_dir() / "shared-libs" / _key([a for argv in commands for a in argv])
    folder.mkdir(parents=True, exist_ok=True)
    objects = [folder / argv[-1] for argv in commands]
    out = folder / name
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)    # the other worker waits here instead of compiling them again
        if not out.exists():
            for argv, obj, (src, _) in zip(commands, objects, units):
                compile_link._compile_cached([*argv[:-1], str(obj)], Path(src), obj, False,
                                             f"compiling {Path(src).name}")
            partial = folder / f"{name}.part"
            tcmod.run_command(tcmod.link_shared_argv(_toolchain(cc, flags)[0], objects, partial), f"linking {name}")
            os.replace(partial, out)
    return objects, out


def kernel_units(sources) -> list:
    """ccompiler's kernel `sources` and the runtime sources they call (the thread pool, the last error), each
    with the include directories a model build gives it."""
    from byoc_compiler.contrib.ccompiler import kernels as K
    from byoc_compiler.runtime import include_dir, source_dir

    runtime = [(source_dir() / "parallel.c", [include_dir()]), (source_dir() / "runtime.c", [include_dir()])]
    return [*((Path(s), [include_dir(), K.INCLUDE_DIR]) for s in sources), *runtime]


def kernel_library(cc: str, flags: list[str], sources, name: str) -> Path:
    """`kernel_units(sources)` as one shared library for ctypes (compile_objects_shared)."""
    return compile_objects_shared(cc, flags, kernel_units(sources), name)[1]
