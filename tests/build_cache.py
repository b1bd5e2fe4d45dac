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
    """(model, toolchain, executor, interface), with a readable id: every zoo model in every executor x interface
    on gcc, and on clang in one of them, the models taking the four in turn (clang builds every model in every
    form in the test matrix too; the full product on both compilers was 40 builds of the default run)."""
    import itertools

    import pytest

    forms = list(itertools.product(EXECUTORS, INTERFACES))
    cases = [(m, "gcc", ex, itf) for m in zoo.names() for ex, itf in forms]
    cases += [(m, "clang", *forms[i % len(forms)]) for i, m in enumerate(zoo.names())]
    return [pytest.param(m, tc, ex, itf, id=f"{m}-{tc}-{ex}-{itf}") for m, tc, ex, itf in cases]
