"""Fixtures of the test matrix. Its options, markers and summary are in matrix_plugin.py (loaded by
tests/conftest.py so that they work wherever pytest starts)."""
from __future__ import annotations

from pathlib import Path

import pytest

import needs

import matrix_harness as h


@pytest.fixture(scope="session")
def matrix_config():
    return h.load_config()


@pytest.fixture(scope="session")
def matrix_cache(pytestconfig) -> Path | None:
    """The SCons CacheDir every case shares (SCons locks it: concurrent runs are safe)."""
    value = pytestconfig.getoption("matrix_cache")
    if value == "none":
        return None
    return Path(value).resolve() if value else h.ROOT / "build" / ".matrix-cache"


@pytest.fixture(scope="session")
def reproducer_dir(pytestconfig) -> Path:
    value = pytestconfig.getoption("reproducer_dir")
    return Path(value).resolve() if value else h.ROOT / "build" / "matrix-failures"


@pytest.fixture
def runnable(pytestconfig, matrix_config):
    """skip (or, with --require-toolchains, fail) a case that cannot build on this machine. A target
    switched off in config.toml is skipped everywhere; one that is enabled but cannot load (an import
    error, an unknown name, no codegen) fails where toolchains are required (CI), as a missing one does."""
    def check(case: h.Case) -> None:
        problem = h.target_problem(case.targets)
        if problem and " is disabled: " not in problem and pytestconfig.getoption("require_toolchains"):
            pytest.fail(f"{problem} (an enabled target must load where toolchains are required, as in CI)",
                        pytrace=False)
        if problem:
            pytest.skip(problem)
        problem = h.toolchain_problem(matrix_config, case.toolchain)
        if problem:
            needs.missing(problem, pytestconfig.getoption("require_toolchains"))
    return check
