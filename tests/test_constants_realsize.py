"""Real-size models with linked constants: the export directory builds and passes on gcc and clang in
every executor x interface, and the width-reduced architectures pass on every toolchain of config.toml
(s390x: the constants' byte order). Marked `realsize` (deselected unless asked: docs/matrix.md);
the default run covers the same code paths on a small model in tests/test_constants.py.

Each case compiles the files of `BuildResult.export` (the generated sources, byoc_constants.S/.bin)
in the export directory itself, links the runner there, and runs `check.check_runner`: the outputs
against the numpy reference of the unpartitioned model.
"""
from __future__ import annotations


import pytest

import needs

from byoc_compiler import build, partition_for, toolchain as tcmod, zoo
from byoc_compiler.backend import constants as constmod
from byoc_compiler.check import check_runner
from byoc_compiler.config import load_config
from byoc_compiler.runtime import dlpack_include_dir

pytestmark = pytest.mark.realsize


def _toolchain_or_skip(name):
    tc = load_config().toolchains[name]
    needs.toolchain(tc)
    return tc


def _runner_from_export(lib, directory):
    """Export, then compile every unit from the export directory (the .S finds its .bin there) and link."""
    lib.export(directory)
    tc = lib.toolchain
    objs = []
    # compile_units writes the same generated files into the directory (already there, same bytes) and
    # lists them with the runtime's sources.
    for k, (src, incs, defines) in enumerate(lib.compile_units(directory, runner=True)):
        obj = directory / "obj" / f"{k}_{src.stem}.o"
        obj.parent.mkdir(parents=True, exist_ok=True)
        tcmod.run_command(tcmod.compile_argv(tc, src, obj, incs, defines, lib.opt, tcmod.WARNING_FLAGS,
                                             [dlpack_include_dir()]), f"compiling {src.name}")
        objs.append(obj)
    runner = directory / "runner"
    tcmod.run_command(tcmod.link_exe_argv(tc, objs, runner), "linking the runner")
    return runner


@pytest.fixture(scope="module")
def resnet50():
    mod = zoo.get("resnet50")
    return mod, partition_for("ccompiler", mod)


@pytest.mark.parametrize("toolchain", ["gcc", "clang"])
@pytest.mark.parametrize("executor,interface", [("graph", "packed"), ("graph", "unpacked"), ("aot", "packed"),
                                                ("aot", "unpacked")])
def test_resnet50_export_directory_passes(resnet50, tmp_path, toolchain, executor, interface):
    mod, part = resnet50
    tc = _toolchain_or_skip(toolchain)
    lib = build(part, toolchain=toolchain, executor=executor, interface=interface)
    assert sum(len(t) for t in lib.sources().values()) < 2_000_000        # no weight in the C text
    assert lib.metadata["large_constants"]["bytes"] > 90_000_000
    runner = _runner_from_export(lib, tmp_path / "export")
    # (the .bin holds every constant plus the padding that aligns each to 64 bytes)
    assert (tmp_path / "export" / constmod.BIN_FILE).stat().st_size >= lib.metadata["large_constants"]["bytes"]
    result = check_runner(runner, list(tc.run), "resnet50", mod, toolchain=toolchain, executor=executor,
                          interface=interface, target="ccompiler")
    assert result.passed, result.detail


ALL_TOOLCHAINS = list(load_config().toolchains)


@pytest.mark.parametrize("toolchain", ALL_TOOLCHAINS)
@pytest.mark.parametrize("model", ["resnet50_tiny", "mobilenetv2_tiny"])
def test_width_reduced_architectures_on_every_toolchain(model, toolchain):
    tc = _toolchain_or_skip(toolchain)
    mod = zoo.get(model)
    interface = "unpacked" if tc.freestanding else "packed"     # bare metal builds AOT + unpacked only
    lib = build(partition_for("ccompiler", mod), toolchain=toolchain, executor="aot", interface=interface)
    assert lib.metadata["large_constants"]["byte_order"] == ("big" if tc.arch == "s390x" else "little")
    result = check_runner(lib.runner(werror=True), list(tc.run), model, mod, toolchain=toolchain,
                          executor="aot", interface=interface, target="ccompiler")
    assert result.passed, result.detail
