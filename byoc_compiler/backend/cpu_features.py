"""The CPU features a build's code may assume where it runs: TVM's -mattr, read by a codegen.

A target's codegen may choose between algorithms by what the CPU that will run the model offers (ccompiler
asks for its int8 Winograd only where there is no int8 dot product: AVX512-VNNI, AVX-VNNI, AMX). The
answer must not depend on where a build happens to run, or a build copied to another machine changes its
speed (the bytes out never change: every choice computes the same). So it comes from the toolchain:
`cpu_features = ["avx2", "fma"]` in its config.toml table names them (Linux's /proc/cpuinfo spellings);
a toolchain that declares none and builds for this very machine (hosted, its architecture, no run prefix)
gets this machine's flags, like -march=native; any other (a cross or bare-metal toolchain) gets none.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools

_FEATURES: contextvars.ContextVar[frozenset] = contextvars.ContextVar("byoc_cpu_features", default=frozenset())


def build_cpu_features() -> frozenset:
    """Inside a build's codegen: the CPU features (/proc/cpuinfo names, e.g. "avx2", "avx512_vnni", "asimddp")
    the code may assume where it runs (of_toolchain)."""
    return _FEATURES.get()


@contextlib.contextmanager
def declared(features: frozenset):
    """build_cpu_features() is `features` inside the block (build() sets it from the toolchain)."""
    token = _FEATURES.set(frozenset(features))
    try:
        yield
    finally:
        _FEATURES.reset(token)


@functools.lru_cache(maxsize=None)
def machine_features(cpuinfo: str = "/proc/cpuinfo") -> frozenset:
    """This machine's CPU flags: the first "flags" (x86) or "Features" (Arm) line; none where it cannot be read."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return frozenset()
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def of_toolchain(tc, host_arch: str) -> frozenset:
    """What `tc` declares (cpu_features), else this machine's flags where `tc` builds for it (hosted, on
    `host_arch`, no run prefix), else none."""
    if tc.cpu_features is not None:
        return frozenset(tc.cpu_features)
    if tc.profile == "hosted" and not tc.run and tc.arch == host_arch:
        return machine_features()
    return frozenset()
