"""The CPU features a build is for (backend/cpu_features.py): declared by the toolchain, else the building
machine's for a native toolchain, else none; and config.toml's checks of the key."""
from __future__ import annotations

import dataclasses

import pytest

from byoc_compiler.backend import cpu_features as cf
from byoc_compiler.config import ConfigError, ToolchainConfig, load_config

NATIVE = ToolchainConfig(name="gcc", cc="gcc", arch="x86_64")

# (id, toolchain, host architecture, expected: a frozenset, or "machine" for this machine's flags)
CASES = [
    ("declared-wins-on-a-native-toolchain", dataclasses.replace(NATIVE, cpu_features=("avx2", "fma")), "x86_64",
     frozenset({"avx2", "fma"})),
    ("declared-empty-means-none", dataclasses.replace(NATIVE, cpu_features=()), "x86_64", frozenset()),
    ("native-toolchain-reads-the-machine", NATIVE, "x86_64", "machine"),
    ("cross-toolchain-under-qemu", dataclasses.replace(NATIVE, name="aarch64-gcc", arch="aarch64",
                                                       run=("qemu-aarch64",)), "x86_64", frozenset()),
    ("other-architecture", NATIVE, "aarch64", frozenset()),
    ("run-prefix-on-this-architecture", dataclasses.replace(NATIVE, run=("qemu-x86_64",)), "x86_64", frozenset()),
    ("bare-metal", dataclasses.replace(NATIVE, arch="cortex-m55", profile="freestanding"), "cortex-m55",
     frozenset()),
    ("declared-on-a-cross-toolchain", dataclasses.replace(NATIVE, arch="aarch64", run=("qemu-aarch64",),
                                                          cpu_features=("asimd", "asimddp")), "x86_64",
     frozenset({"asimd", "asimddp"})),
]


@pytest.mark.parametrize("tc,host,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_features_of_a_toolchain(tc, host, expected, monkeypatch):
    monkeypatch.setattr(cf, "machine_features", lambda: frozenset({"sse2", "avx512_vnni"}))
    want = frozenset({"sse2", "avx512_vnni"}) if expected == "machine" else expected
    assert cf.of_toolchain(tc, host) == want


# (id, /proc/cpuinfo text, flags read)
CPUINFO = [
    ("x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 fma\nbugs\t\t: spectre_v1\n"
            "processor\t: 1\nflags\t\t: fpu\n", {"fpu", "sse2", "avx2", "fma"}),
    ("arm", "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd asimddp\nCPU implementer\t: 0x41\n",
     {"fp", "asimd", "asimddp"}),
    ("no-flags-line", "processor\t: 0\nhart\t\t: 0\nisa\t\t: rv64imafdc\n", set()),
]


@pytest.mark.parametrize("text,flags", [c[1:] for c in CPUINFO], ids=[c[0] for c in CPUINFO])
def test_machine_features_reads_the_first_flags_line(text, flags, tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    assert cf.machine_features(str(path)) == frozenset(flags)


def test_an_unreadable_cpuinfo_gives_none(tmp_path):
    assert cf.machine_features(str(tmp_path / "missing")) == frozenset()


def test_build_cpu_features_is_set_only_inside_the_block():
    with cf.declared(frozenset({"avx2"})):
        assert cf.build_cpu_features() == frozenset({"avx2"})
    assert cf.build_cpu_features() == frozenset()


@pytest.mark.parametrize("value,message", [
    ('"avx2"', "toolchains.gcc-x.cpu_features must be a list of strings, got 'avx2'"),
    ("[1, 2]", "toolchains.gcc-x.cpu_features must be a list of strings, got [1, 2]"),
], ids=["a-string", "numbers"])
def test_config_refuses_a_cpu_features_that_is_not_a_list_of_names(value, message, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(f'[toolchains.gcc-x]\ncc = "gcc"\narch = "x86_64"\ncpu_features = {value}\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert message in str(err.value)


def test_config_reads_cpu_features_and_leaves_other_toolchains_undeclared(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[toolchains.gcc-x]\ncc = "gcc"\narch = "x86_64"\ncpu_features = ["avx2", "fma"]\n')
    config = load_config(path)
    assert config.toolchain("gcc-x").cpu_features == ("avx2", "fma")
    assert config.toolchain("gcc").cpu_features is None
