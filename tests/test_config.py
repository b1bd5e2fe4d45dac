"""config.toml: every mistake a person makes by hand gets one message naming the file, the key and the fix."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from byoc_compiler.config import ConfigError, load_config

GOOD = textwrap.dedent("""\
    [backends]
    USE_CODEGENC = true
    USE_EXAMPLEJSON = false

    [build]
    toolchains = ["gcc"]
    executor = "aot"
    models = ["mlp"]

    [toolchains.gcc]
    cc = "gcc"
    arch = "x86_64"
    cflags = ["-std=c99"]
""")


def write(tmp_path, text):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_good_config_reads_flags_defaults_and_toolchains(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert config.backends == {"USE_CODEGENC": True, "USE_EXAMPLEJSON": False, "USE_DNNL": False}
    assert config.build.executor == "aot" and config.build.interface == "packed"
    assert config.toolchains["gcc"].cflags == ("-std=c99",)
    assert config.target_modules()["ccompiler"] == ("targets.ccompiler", "USE_CODEGENC", True)
    assert config.target_modules()["examplejson"][2] is False


def test_extra_target_by_module_path(tmp_path):
    text = GOOD + '\n[targets]\nmynpu = { module = "vendor.mynpu", flag = "USE_MYNPU" }\n'
    text = text.replace("USE_EXAMPLEJSON = false", "USE_EXAMPLEJSON = false\nUSE_MYNPU = true")
    config = load_config(write(tmp_path, text))
    assert config.target_modules()["mynpu"] == ("vendor.mynpu", "USE_MYNPU", True)


BAD = [
    pytest.param(("USE_CODEGENC = true", "USE_CODEGEN = true"),
                 "unknown key backends.'USE_CODEGEN' (did you mean 'USE_CODEGENC'?)", id="flag-typo"),
    pytest.param(("USE_CODEGENC = true", 'USE_CODEGENC = "yes"'),
                 "backends.USE_CODEGENC must be true or false", id="flag-wrong-type"),
    pytest.param(('executor = "aot"', 'executor = "jit"'),
                 "build.executor = 'jit' is not allowed; use one of: graph, aot", id="bad-executor"),
    pytest.param(('executor = "aot"', 'executor = "aot"\nopt = "-O2 -g"'),
                 "build.opt = '-O2 -g' is not allowed; use one of: -O0, -O1, -O2", id="bad-opt"),
    pytest.param(('toolchains = ["gcc"]', 'toolchains = ["gcc", "clnag"]'),
                 "build.toolchains names 'clnag'", id="unknown-toolchain"),
    pytest.param(('cc = "gcc"', 'cc = "gcc"\nccflags = []'),
                 "unknown key toolchains.gcc.'ccflags' (did you mean 'cflags'?)", id="toolchain-key-typo"),
    pytest.param(('cflags = ["-std=c99"]', 'cflags = "-std=c99"'),
                 "toolchains.gcc.cflags must be a list of strings", id="toolchain-wrong-type"),
    pytest.param(('arch = "x86_64"\n', ''), '[toolchains.gcc] needs `arch = "..."`', id="toolchain-missing-arch"),
    pytest.param(("[build]", "[biuld]"), "unknown key 'biuld' (did you mean 'build'?)", id="section-typo"),
    pytest.param(("[backends]", "[backends"), "not valid TOML", id="not-toml"),
]


@pytest.mark.parametrize("edit, message", BAD)
def test_bad_config_names_file_key_and_fix(tmp_path, edit, message):
    path = write(tmp_path, GOOD.replace(*edit, 1))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


# (id, what is at the path, what the one error says)
UNREADABLE = [
    ("missing", None, "not found; copy the repository's config.toml or set BYOC_CONFIG"),
    ("directory", "dir", "is a directory; name the config.toml file in it"),
    ("not-utf8", b"\xff\xfe\x00", "not valid TOML"),
]


@pytest.mark.parametrize("content,message", [c[1:] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE])
def test_unreadable_config_file(tmp_path, content, message):
    path = tmp_path / "config.toml"
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(path)


def test_cli_config_command_reports_error_without_traceback(tmp_path):
    path = write(tmp_path, GOOD.replace("USE_CODEGENC", "USE_CODEGEN"))
    proc = subprocess.run([sys.executable, "-m", "byoc_compiler", "config", str(path)], capture_output=True,
                          text=True)
    assert proc.returncode == 2
    assert "did you mean 'USE_CODEGENC'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_config_command_lists_toolchains(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "byoc_compiler", "config", str(write(tmp_path, GOOD))],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "toolchain gcc" in proc.stdout and "target ccompiler" in proc.stdout
