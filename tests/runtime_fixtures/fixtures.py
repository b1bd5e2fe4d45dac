"""Session-scoped pytest fixtures: every fixture model variant is compiled once per test session."""
import os
import subprocess

import pytest

import needs

from . import builder


def _require(cc):
    if not builder.have(cc):
        needs.missing(f"{cc} is not installed")


@pytest.fixture(scope="session")
def rt_dir(tmp_path_factory):
    """Shared by all xdist workers of a session (the parent of each worker's base temp)."""
    return tmp_path_factory.getbasetemp().parent / "byoc-runtime-build"


@pytest.fixture(scope="session", params=["gcc", "clang"])
def graph_runner_asan(request, rt_dir):
    """Graph fixture runner built with -fsanitize=address,undefined."""
    _require(request.param)
    return builder.build_model("graph", request.param, rt_dir / f"graph-asan-{request.param}", runner=True,
                               sanitize=True)


@pytest.fixture(scope="session", params=["gcc", "clang"])
def graph_check_asan(request, rt_dir):
    _require(request.param)
    return builder.build_graph_check(request.param, rt_dir / f"check-asan-{request.param}")


@pytest.fixture(scope="session")
def aot_runner(rt_dir):
    _require("gcc")
    return builder.build_model("aot", "gcc", rt_dir / "aot-asan-gcc", runner=True, sanitize=True)


@pytest.fixture(scope="session")
def graph_lib(rt_dir):
    _require("gcc")
    return builder.build_model("graph", "gcc", rt_dir / "graph-lib", runner=False)


@pytest.fixture(scope="session")
def aot_lib(rt_dir):
    _require("gcc")
    return builder.build_model("aot", "gcc", rt_dir / "aot-lib", runner=False)


def run(cmd, cwd=None, prefix=()):
    env = dict(os.environ, **builder.SAN_ENV)
    return subprocess.run([*prefix, *map(str, cmd)], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def assert_clean_failure(proc, *fragments):
    """A non-zero exit with our message: not a signal, not a sanitizer report."""
    err = proc.stderr
    assert proc.returncode > 0, f"exit {proc.returncode}\n{err}"
    assert proc.returncode not in (98, 99), f"sanitizer exit code\n{err}"
    assert "Sanitizer" not in err and "runtime error" not in err, err
    assert err.startswith("runner: "), err
    for f in fragments:
        assert f in err, f"{f!r} not in {err!r}"
