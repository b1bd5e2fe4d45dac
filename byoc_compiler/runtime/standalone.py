"""A target's own C runtime compiled alone into a shared library, for the tests and tools that load it with
ctypes (the ExampleJSON and dnnl loaders), outside any model."""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from ..toolchain import WARNING_FLAGS, run_command
from .sources import include_flags, source_dir


@functools.lru_cache(maxsize=None)
def _compiled(name: str, sources: tuple[str, ...], include_dirs: tuple[str, ...], libraries: tuple[str, ...],
              cc: str) -> Path:
    workdir = tempfile.mkdtemp(prefix=f"{name}-rt-")
    atexit.register(shutil.rmtree, workdir, True)
    out = Path(workdir) / f"lib{name}.so"
    argv = [cc, "-std=c99", "-O1", "-fPIC", "-shared", *WARNING_FLAGS, *(f"-I{d}" for d in include_dirs),
            *include_flags(), *sources, os.fspath(source_dir() / "runtime.c"),
            os.fspath(source_dir() / "parallel.c"), "-o", os.fspath(out),
            *(f"-l{lib}" for lib in libraries), "-lm"]
    run_command(argv, f"compiling the {name} runtime with {cc}")
    return out


def standalone_library(name: str, sources: Sequence, include_dirs: Sequence = (), libraries: Sequence[str] = (),
                       cc: str = "gcc") -> Path:
    """`sources` plus byoc's runtime core as lib<name>.so in a temporary directory (removed at exit),
    compiled once per process for each compiler; a compile error is one ByocError with the compiler's output."""
    return _compiled(name, tuple(map(os.fspath, sources)), tuple(map(os.fspath, include_dirs)), tuple(libraries), cc)
