"""Toolchain commands come from one place (byoc_compiler.toolchain); missing tools and compiler errors
give one clear message; cross toolchains build the runner and run it under qemu-user."""
import dataclasses

import pytest

import needs

from byoc_compiler import runtime
from byoc_compiler import toolchain as tcm
from byoc_compiler import zoo
from byoc_compiler.backend.build import build
from byoc_compiler.config import load_config
from byoc_compiler.errors import ByocError
from byoc_compiler.runtime.standalone import standalone_library
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.testing.tolerance import assert_close, tolerance_for_module

CONFIG = load_config()


def tc(name):
    return CONFIG.toolchains[name]


def test_compile_argv_order():
    argv = tcm.compile_argv(tc("gcc"), "a.c", "a.o", include_dirs=["inc"], defines=["BYOC_UNPACKED_API"],
                            opt="-O3", extra_cflags=["-Wall"])
    assert argv == ["gcc", "-std=c99", "-fPIC", "-O3", "-Wall", "-DBYOC_UNPACKED_API", "-Iinc", "-c", "a.c",
                    "-o", "a.o"]


@pytest.mark.parametrize("name", ["gcc", "clang", "aarch64-gcc", "gcc-asan-ubsan"])
def test_link_argv_puts_libraries_last(name):
    t = tc(name)
    exe = tcm.link_exe_argv(t, ["a.o", "b.o"], "prog")
    assert exe[0] == t.cc and exe[1:5] == ["a.o", "b.o", "-o", "prog"] and exe[5:] == list(t.ldflags)
    so = tcm.link_shared_argv(t, ["a.o"], "lib.so")
    assert so[:2] == [t.cc, "-shared"] and "-static" not in so


@pytest.mark.parametrize("name,prefix", [("gcc", []), ("aarch64-gcc", ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"])],
                         ids=["native", "qemu"])
def test_run_argv_uses_run_prefix(name, prefix):
    assert tcm.run_argv(tc(name), "/x/runner", ["--repeat", 3]) == prefix + ["/x/runner", "--repeat", "3"]


def test_missing_compiler_message():
    ghost = dataclasses.replace(tc("clang"), name="clang", cc="byoc-no-such-clang", apt=("clang",))
    with pytest.raises(ByocError) as info:
        tcm.check_toolchain(ghost)
    assert str(info.value) == ("toolchain 'clang': compiler 'byoc-no-such-clang' not found; "
                               "install it with `apt-get install -y clang`")


# ---- runtime.standalone: a target's C runtime alone, built with a host toolchain's own commands
STANDALONE = [  # toolchain given, the message
    pytest.param(lambda: dataclasses.replace(tc("gcc"), name="ghost", cc="byoc-no-such-cc"),
                 "toolchain 'ghost': compiler 'byoc-no-such-cc' not found", id="its-compiler-not-gcc"),
    pytest.param(lambda: "aarch64-gcc", "toolchain 'aarch64-gcc' builds for aarch64 under qemu-aarch64; its "
                 "libraries cannot be loaded into this process", id="not-loadable-here"),
    pytest.param(lambda: "no-such-toolchain", "unknown toolchain 'no-such-toolchain'", id="unknown-name"),
]


@pytest.mark.parametrize("toolchain, message", STANDALONE)
def test_standalone_library_uses_the_toolchain_given(toolchain, message, tmp_path):
    src = tmp_path / "empty.c"
    src.write_text("int byoc_standalone_probe(void) { return 1; }\n")
    with pytest.raises(ByocError) as info:
        standalone_library("probe", [src], toolchain=toolchain())
    assert message in str(info.value)


def test_missing_run_program_message():
    ghost = dataclasses.replace(tc("aarch64-gcc"), cc="gcc", run=("byoc-no-such-qemu",))
    with pytest.raises(ByocError, match=r"'byoc-no-such-qemu', which runs its programs, not found; install it with "
                                        r"`apt-get install -y gcc-aarch64-linux-gnu qemu-user`"):
        tcm.check_toolchain(ghost)


def test_compiler_error_carries_command_and_stderr(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int f(void) { return undeclared_thing; }\n")
    argv = tcm.compile_argv(tc("gcc"), src, tmp_path / "bad.o")
    with pytest.raises(ByocError) as info:
        tcm.run_command(argv, "compiling bad.c")
    message = str(info.value)
    assert "compiling bad.c failed" in message and "undeclared_thing" in message and "gcc -std=c99" in message


def test_export_library_refuses_cross_toolchain(tmp_path):
    lib = build(zoo.get("byoc_guide"), toolchain="aarch64-gcc")
    with pytest.raises(ByocError, match="use export_runner"):
        lib.export_library(tmp_path / "m.so")


CROSS = [("aarch64-gcc", "aot", "unpacked"), ("s390x-gcc", "graph", "packed")]


@pytest.mark.parametrize("name,executor,interface", CROSS, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CROSS])
def test_cross_runner_under_qemu(name, executor, interface):
    needs.toolchain(tc(name))
    mod = zoo.get("mlp")
    lib = build(mod, toolchain=name, executor=executor, interface=interface)
    inputs = zoo.inputs("mlp")
    expected = run_reference(mod, inputs)
    got = lib.run_runner(inputs, werror=True)
    for g, e in zip(got, expected):
        rtol, atol = tolerance_for_module(mod, e.dtype)
        assert_close(g.astype(g.dtype.newbyteorder("=")), e, rtol, atol)


def test_scons_flags_match_compile_argv():
    t = tc("aarch64-gcc")
    includes, after = [str(runtime.include_dir())], [str(runtime.dlpack_include_dir())]
    flags = tcm.scons_flags(t, opt="-O2", werror=True, after_dirs=after)
    argv = tcm.compile_argv(t, "a.c", "a.o", includes, [], "-O2", list(tcm.WARNING_FLAGS), after)
    assert all(f in argv for f in flags["CCFLAGS"])
    assert flags["LIBS"] == ["m"] and flags["LINKFLAGS"] == ["-static"]
    # the host's /usr/include (DLPack) is only ever searched after the cross compiler's own headers
    assert "-I/usr/include" not in argv and argv[argv.index("-idirafter") + 1] == after[0]
