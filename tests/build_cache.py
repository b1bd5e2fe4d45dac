"""Builds shared by the build/AOT tests: each (model, toolchain, executor, interface) is built once per
test session (per xdist worker) and its library/runner compiled once, with -Wall -Wextra -Werror."""
from __future__ import annotations

import functools

from byoc_compiler import zoo
from byoc_compiler.backend.build import build

TOOLCHAINS = ("gcc", "clang")
EXECUTORS = ("graph", "aot")
INTERFACES = ("packed", "unpacked")


@functools.lru_cache(maxsize=None)
def model(name: str):
    return zoo.get(name)


@functools.lru_cache(maxsize=None)
def built(name: str, toolchain: str = "gcc", executor: str = "graph", interface: str = "packed"):
    return build(model(name), toolchain=toolchain, executor=executor, interface=interface)


def matrix():
    """(model, toolchain, executor, interface) for every zoo model, with a readable id."""
    import pytest

    return [pytest.param(m, tc, ex, itf, id=f"{m}-{tc}-{ex}-{itf}")
            for m in zoo.names() for tc in TOOLCHAINS for ex in EXECUTORS for itf in INTERFACES]
