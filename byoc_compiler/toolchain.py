"""Compile, link and run commands for a toolchain, from ONE place.

Every command the toolkit runs on a C compiler is built here as an argv list,
so `build().export_library`, the runner and the SCons tool agree on flags.
A toolchain is data (config.toml `[toolchains.X]`); these functions only
arrange its fields.
"""
from __future__ import annotations

import functools
import os
import platform
import shlex
import shutil
import subprocess
from typing import Sequence

from .errors import ByocError

# The warnings every generated source and the runtime must pass cleanly (tests turn them on).
WARNING_FLAGS = ("-Wall", "-Wextra", "-Werror")

# platform.machine() spellings of the architectures config.toml names.
_HOST_ARCH_ALIASES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64",
                      "armv7l": "armhf", "riscv64": "riscv64", "s390x": "s390x"}


class ToolchainError(ByocError):
    """A compiler that is missing or that rejected a command; the message holds the command and stderr."""


def host_arch() -> str:
    machine = platform.machine().lower()
    return _HOST_ARCH_ALIASES.get(machine, machine)


def can_load_here(tc) -> bool:
    """Its shared libraries can be loaded into this Python process (same CPU, no run prefix, no sanitizer)."""
    return not tc.run and not tc.sanitizer and tc.arch == host_arch()


def check_toolchain(tc) -> None:
    """Raise one clear ToolchainError if the compiler (or the program that runs its binaries) is missing."""
    hint = f"install it with `{tc.install_hint}`"
    if shutil.which(tc.cc) is None:
        raise ToolchainError(f"toolchain {tc.name!r}: compiler {tc.cc!r} not found; {hint}")
    if tc.run and shutil.which(tc.run[0]) is None:
        raise ToolchainError(f"toolchain {tc.name!r}: {tc.run[0]!r}, which runs its programs, not found; {hint}")
    for spec in _spec_files(tc):
        if not _compiler_has_file(tc.cc, spec):
            raise ToolchainError(f"toolchain {tc.name!r}: {tc.cc!r} has no {spec} (the C library its flags name); "
                                 f"{hint}")


def _spec_files(tc) -> list[str]:
    """The GCC spec files a toolchain's flags name (--specs=picolibc.specs: the bare-metal C library)."""
    return [f.split("=", 1)[1] for f in (*tc.cflags, *tc.ldflags) if f.startswith("--specs=")]


@functools.lru_cache(maxsize=None)
def _compiler_has_file(cc: str, name: str) -> bool:
    """gcc -print-file-name=NAME prints a path where it found NAME, else NAME itself."""
    try:
        out = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return os.path.isabs(out.strip())


def compile_argv(tc, src, obj, include_dirs: Sequence = (), defines: Sequence[str] = (), opt: str = "-O2",
                 extra_cflags: Sequence[str] = (), after_dirs: Sequence = ()) -> list[str]:
    """`cc <toolchain cflags> <opt> <extra> -D.. -I.. -idirafter .. -c src -o obj`.

    defines are "NAME" or "NAME=VALUE". `after_dirs` are searched after the compiler's own system
    directories (-idirafter): the host's /usr/include holding dlpack/dlpack.h must never shadow a cross
    compiler's libc headers.
    """
    argv = [tc.cc, *toolchain_cflags(tc)]
    if opt:
        argv.append(opt)
    argv += list(extra_cflags)
    argv += [f"-D{d}" for d in defines]
    argv += [f"-I{d}" for d in dict.fromkeys(map(os.fspath, include_dirs))]    # each once: one command per source
    argv += assembler_include_flags(src)
    for d in after_dirs:
        argv += ["-idirafter", os.fspath(d)]
    argv += ["-c", os.fspath(src), "-o", os.fspath(obj)]
    return argv


def toolchain_cflags(tc) -> list[str]:
    """The toolchain's cflags, and -DBYOC_FREESTANDING for a freestanding one (docs/bare-metal.md): every
    source built for it -- generated code, runtime core, kernels -- compiles its hosted-only parts out."""
    return [*tc.cflags, *(["-DBYOC_FREESTANDING"] if tc.freestanding else [])]


def semihosted(run_prefix: Sequence[str]) -> bool:
    """Programs run by this prefix are bare-metal images talking to the host over semihosting (qemu-system
    -semihosting-config): they read their inputs and write their outputs by fixed names, relative to the
    directory they are started in, take no arguments and report no time (runtime/runner.py)."""
    return any(str(a).startswith("-semihosting") for a in run_prefix)


def _with_libm(ldflags: Sequence[str]) -> list[str]:
    """The runtime and the kernels call libm (expf, tanhf, ...): byoc links it whatever the toolchain says,
    so a config.toml without -lm still links."""
    flags = list(ldflags)
    return flags if "-lm" in flags else flags + ["-lm"]


def assembler_include_flags(src) -> list[str]:
    """For an assembly source (.S): the assembler searches its own directory for `.incbin` files
    (backend/constants.py), so a generated .S names its .bin without a path. Nothing for C."""
    if os.fspath(src).endswith(".S"):
        # -Xassembler, not -Wa,: -Wa splits at commas, and build directories of several targets have one
        # (build/dnnl,ccompiler/...)
        return ["-Xassembler", f"-I{os.path.dirname(os.path.abspath(os.fspath(src)))}"]
    return []


def library_argv(libs: Sequence[str] = (), lib_dirs: Sequence = ()) -> list[str]:
    """-L<dir>... -l<lib>... for the system libraries targets link (e.g. oneDNN's -ldnnl)."""
    return [*(f"-L{os.fspath(d)}" for d in lib_dirs), *(f"-l{lib}" for lib in libs)]


def link_shared_argv(tc, objs: Sequence, out, libs: Sequence[str] = (), lib_dirs: Sequence = ()) -> list[str]:
    """A shared library (host toolchains): objects first, then targets' libraries, then the toolchain's
    ldflags (libraries last)."""
    ldflags = [f for f in tc.ldflags if f != "-static"]
    return [tc.cc, "-shared", *map(os.fspath, objs), "-o", os.fspath(out), *library_argv(libs, lib_dirs),
            *_with_libm(ldflags)]


def link_exe_argv(tc, objs: Sequence, out, libs: Sequence[str] = (), lib_dirs: Sequence = (),
                  linker_script=None) -> list[str]:
    """An executable; cross toolchains carry -static in their ldflags so qemu-user needs no sysroot. A bare-metal
    image is laid out by the linker script written from its board (linker_script.py)."""
    script = ["-T", os.fspath(linker_script)] if linker_script is not None else []
    return [tc.cc, *map(os.fspath, objs), "-o", os.fspath(out), *script, *library_argv(libs, lib_dirs),
            *_with_libm(tc.ldflags)]


def run_argv(tc, exe, args: Sequence[str] = ()) -> list[str]:
    """How to start a program the toolchain built: its `run` prefix (e.g. qemu-aarch64 -L ...) then the program."""
    return [*tc.run, os.fspath(exe), *map(str, args)]


def run_command(argv: Sequence[str], what: str, cwd=None, timeout: float | None = 600) -> subprocess.CompletedProcess:
    """Run argv; on failure raise ToolchainError naming `what`, the command and the program's stderr."""
    try:
        proc = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise ToolchainError(f"{what}: program {argv[0]!r} not found (command: {_quote(argv)})") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{what}: timed out after {timeout} s (command: {_quote(argv)})") from None
    if proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip() or "(no output)")
        raise ToolchainError(f"{what} failed (exit code {proc.returncode})\ncommand: {_quote(argv)}\n{detail}")
    return proc


def _quote(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(str(a)) for a in argv)


def scons_flags(tc, opt: str = "-O2", werror: bool = True, after_dirs: Sequence = ()) -> dict[str, list[str]]:
    """The same flags as compile_argv/link_*_argv, as SCons construction variables.

    `after_dirs` are searched after the compiler's own directories, as compile_argv's (the runtime's DLPack
    directory). Libraries (`-lm`) go to LIBS so SCons puts them after the objects, as static linking needs.
    """
    ccflags = [*toolchain_cflags(tc), *([opt] if opt else []), *(WARNING_FLAGS if werror else ())]
    for d in after_dirs:
        ccflags += ["-idirafter", os.fspath(d)]
    libs = [f[2:] for f in _with_libm(tc.ldflags) if f.startswith("-l")]
    linkflags = [f for f in tc.ldflags if not f.startswith("-l")]
    return {
        "CCFLAGS": ccflags, "SHCCFLAGS": ccflags,
        "LINKFLAGS": linkflags, "LIBS": libs,
        "SHLINKFLAGS": ["-shared", *[f for f in linkflags if f != "-static"]],
    }
