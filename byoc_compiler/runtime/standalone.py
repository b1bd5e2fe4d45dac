"""A target's own C runtime compiled alone into a shared library, for the tests and tools that load it with
ctypes (the ExampleJSON and dnnl loaders), outside any model. The commands are the toolchain's own
(toolchain.compile_argv, link_shared_argv), as for a model's library."""
from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from ..config import ToolchainConfig, load_config
from ..errors import ByocError
from ..toolchain import WARNING_FLAGS, can_load_here, check_toolchain, compile_argv, link_shared_argv, run_command
from .sources import dlpack_include_dir, include_dir, source_dir


@functools.lru_cache(maxsize=None)
def _compiled(name: str, sources: tuple[str, ...], include_dirs: tuple[str, ...], libraries: tuple[str, ...],
              tc: ToolchainConfig) -> Path:
    check_toolchain(tc)
    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-rt-"))
    atexit.register(shutil.rmtree, workdir, True)
    objects = []
    units = [*sources, os.fspath(source_dir() / "runtime.c"), os.fspath(source_dir() / "parallel.c")]
    for i, src in enumerate(units):
        obj = workdir / f"{i}_{Path(src).stem}.o"
        argv = compile_argv(tc, src, obj, [*include_dirs, include_dir()], (), "-O1", ["-fPIC", *WARNING_FLAGS],
                            [dlpack_include_dir()])
        run_command(argv, f"compiling the {name} runtime ({Path(src).name}) with toolchain {tc.name!r}")
        objects.append(obj)
    out = workdir / f"lib{name}.so"
    run_command(link_shared_argv(tc, objects, out, libraries), f"linking the {name} runtime with toolchain {tc.name!r}")
    return out


def host_toolchain(toolchain: str | ToolchainConfig | None = None) -> ToolchainConfig:
    """The toolchain whose libraries this process loads: `toolchain` (a name of the settings, or one), else
    the first of the settings' [build] toolchains that can load here, else the settings' "gcc"."""
    if isinstance(toolchain, ToolchainConfig):
        tc = toolchain
    else:
        config = load_config()
        if toolchain is None:
            usable = [n for n in config.build.toolchains if n in config.toolchains
                      and can_load_here(config.toolchains[n])]
            toolchain = usable[0] if usable else "gcc"
        tc = config.toolchain(toolchain)
    if not can_load_here(tc):
        raise ByocError(f"standalone_library: toolchain {tc.name!r} builds for {tc.arch}"
                        f"{' under ' + tc.run[0] if tc.run else ''}{' with a sanitizer' if tc.sanitizer else ''}; "
                        "its libraries cannot be loaded into this process: give a host toolchain (e.g. 'gcc')")
    return tc


def standalone_library(name: str, sources: Sequence, include_dirs: Sequence = (), libraries: Sequence[str] = (),
                       cc: str | None = None, toolchain: str | ToolchainConfig | None = None) -> Path:
    """`sources` plus byoc's runtime core as lib<name>.so in a temporary directory (removed at exit),
    compiled once per process for each toolchain with its own commands; a compile error is one ByocError with
    the compiler's output. toolchain: a host toolchain of the settings by name (or its ToolchainConfig),
    default host_toolchain()'s; `cc` (before vendor API 1.7) names one the same way."""
    tc = host_toolchain(toolchain if toolchain is not None else cc)
    return _compiled(name, tuple(map(os.fspath, sources)), tuple(map(os.fspath, include_dirs)), tuple(libraries), tc)
