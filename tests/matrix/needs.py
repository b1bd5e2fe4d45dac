"""One rule for a test that needs a program this machine may lack (a compiler, qemu, Graphviz): a skip on a
developer's machine, a failure where BYOC_REQUIRE_TOOLCHAINS is set. .ci/run sets it, because
scripts/setup.sh installs every program config.toml and the tests use: there a missing one is a defect.

    import needs
    needs.programs("dot")                 # Graphviz
    needs.toolchain(config.toolchain(name))

Skip for nothing else: a test whose subject is absent for a specific, expected reason says so itself.
"""
from __future__ import annotations

import os
import shutil

import pytest

from byoc_compiler.config import load_config

ENV = "BYOC_REQUIRE_TOOLCHAINS"


def required() -> bool:
    return os.environ.get(ENV, "") not in ("", "0")


def in_ci() -> bool:
    """CI=true (.ci/run sets it, as CI services do): hypothesis runs derandomized, skips must be reviewed."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(problem: str, required_here: bool | None = None):
    """Stop the test: it cannot run without what `problem` names. Never returns."""
    if required() if required_here is None else required_here:
        pytest.fail(f"{problem} ({ENV} is set: every toolchain must be installed; bash scripts/setup.sh)",
                    pytrace=False)
    pytest.skip(problem)


def compilers() -> list[str]:
    """The host compilers of config.toml's [build] toolchains (gcc, clang), whether installed or not: a
    test parametrized with them calls programs(cc), so a missing one is a visible skip, or a failure
    under BYOC_REQUIRE_TOOLCHAINS, never a case silently left out of the list."""
    config = load_config()
    return [config.toolchain(name).cc for name in config.build.toolchains]


def programs(*names: str, hint: str = "bash scripts/setup.sh installs it") -> None:
    absent = [n for n in names if shutil.which(n) is None]
    if absent:
        missing(f"{', '.join(absent)} not installed; {hint}")


def toolchain(tc) -> None:
    """The toolchain's compiler and, for foreign CPUs, the program that runs its binaries."""
    from byoc_compiler.errors import ByocError
    from byoc_compiler.toolchain import check_toolchain

    try:
        check_toolchain(tc)
    except ByocError as exc:
        missing(str(exc))
