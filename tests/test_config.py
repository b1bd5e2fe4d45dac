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
    # USE_DNNL is not set: the packaged default (on) holds
    assert config.backends == {"USE_CODEGENC": True, "USE_EXAMPLEJSON": False, "USE_DNNL": True}
    assert config.build.executor == "aot" and config.build.interface == "packed"
    assert config.toolchains["gcc"].cflags == ("-std=c99",)
    assert config.target_modules()["ccompiler"] == ("byoc_compiler.contrib.ccompiler", "USE_CODEGENC", True)
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
    ("missing", None, "not found; name an existing file"),
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


# ---- where settings come from: packaged defaults, then the user's file found from the working directory up ----
CARGO = '[build]\njobs = 4\ntarget = "x86_64-unknown-linux-gnu"\n'
BYOC_BUILD = '[build]\nexecutor = "aot"\n'
PYPROJECT = '[project]\nname = "app"\n\n[tool.byoc.build]\nexecutor = "aot"\n'

# (id, {relative path: text}, the file expected to be read (None: the packaged defaults alone))
DISCOVERY = [
    pytest.param({"byoc.toml": BYOC_BUILD}, "byoc.toml", id="byoc-toml"),
    pytest.param({"pyproject.toml": PYPROJECT}, "pyproject.toml", id="pyproject-tool-byoc"),
    pytest.param({"config.toml": BYOC_BUILD}, "config.toml", id="config-toml-of-byoc"),
    pytest.param({"config.toml": CARGO}, None, id="config-toml-of-cargo-is-not-ours"),
    pytest.param({"pyproject.toml": '[project]\nname = "app"\n'}, None, id="pyproject-without-tool-byoc"),
    pytest.param({"../byoc.toml": BYOC_BUILD}, "../byoc.toml", id="found-in-a-parent"),
    pytest.param({"byoc.toml": BYOC_BUILD, "config.toml": "[build]\nexecutor = 'graph'\n"}, "byoc.toml",
                 id="byoc-toml-before-config-toml"),
    pytest.param({"config.toml": CARGO, "../byoc.toml": BYOC_BUILD}, "../byoc.toml", id="skips-a-foreign-file"),
]


@pytest.mark.parametrize("files, expected", DISCOVERY)
def test_user_settings_are_found_from_the_working_directory_upward(tmp_path, monkeypatch, files, expected):
    from byoc_compiler.config import PACKAGED_DEFAULTS

    work = tmp_path / "project" / "sub"
    work.mkdir(parents=True)
    for rel, text in files.items():
        (work / rel).write_text(text)
    monkeypatch.chdir(work)
    monkeypatch.delenv("BYOC_CONFIG", raising=False)
    config = load_config()
    if expected is None:
        assert config.sources == (PACKAGED_DEFAULTS,) and config.build.executor == "graph"
    else:
        assert config.sources == (PACKAGED_DEFAULTS, (work / expected).resolve())
        assert config.build.executor == "aot"      # the user's setting, merged over the packaged "graph"


def test_byoc_config_environment_variable_overrides_discovery(tmp_path, monkeypatch):
    (tmp_path / "byoc.toml").write_text(BYOC_BUILD)
    other = tmp_path / "elsewhere.toml"
    other.write_text('[build]\ninterface = "unpacked"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BYOC_CONFIG", str(other))
    config = load_config()
    assert config.path == other
    assert config.build.interface == "unpacked" and config.build.executor == "graph"


def test_settings_merge_key_by_key_and_a_toolchain_table_whole(tmp_path):
    import tomllib

    from byoc_compiler.config import PACKAGED_DEFAULTS

    packaged = tomllib.loads(PACKAGED_DEFAULTS.read_text())
    path = write(tmp_path, '[backends]\nUSE_DNNL = false\n\n[toolchains.gcc]\ncc = "gcc-13"\narch = "x86_64"\n\n'
                           '[toolchains.mine]\ncc = "cc"\narch = "x86_64"\n')
    config = load_config(path)
    assert config.backends["USE_DNNL"] is False
    assert config.backends["USE_CODEGENC"] is packaged["backends"]["USE_CODEGENC"]
    assert config.toolchains["gcc"].cc == "gcc-13" and config.toolchains["gcc"].cflags == ()   # replaced whole
    assert config.toolchains["clang"].cflags == tuple(packaged["toolchains"]["clang"]["cflags"])
    assert "mine" in config.toolchains
    assert config.build.models == tuple(packaged["build"]["models"])


def test_pyproject_named_without_tool_byoc_says_so(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "app"\n')
    with pytest.raises(ConfigError, match=r"has no \[tool\.byoc\] table"):
        load_config(path)


def test_cli_config_prints_the_files_it_read(tmp_path):
    (tmp_path / "byoc.toml").write_text(BYOC_BUILD)
    proc = subprocess.run([sys.executable, "-m", "byoc_compiler", "config"], capture_output=True, text=True,
                          cwd=tmp_path, env={k: v for k, v in __import__("os").environ.items() if k != "BYOC_CONFIG"})
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"read packaged defaults .*byoc_compiler[/\\]defaults\.toml", proc.stdout)
    assert f"read settings          {tmp_path / 'byoc.toml'}" in proc.stdout
