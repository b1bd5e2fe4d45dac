"""The object cache of sources that are not generated (backend/compile_link.py): one compile per command,
shared between processes through BYOC_OBJECT_CACHE, and never reused after the source or a header changes."""
import os
import shutil
from pathlib import Path

import pytest

import needs
from byoc_compiler import toolchain as tcmod
from byoc_compiler.backend import compile_link


@pytest.fixture
def library(tmp_path):
    """A one-file 'kernel library' with a header in its include directory."""
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "lib.h").write_text("#define LIB_SCALE 3\n")
    src = tmp_path / "lib.c"
    src.write_text('#include "lib.h"\nint lib_scale(int x) { return LIB_SCALE * x; }\n')
    return src, inc


def _argv(src, inc, obj):
    return ["gcc", "-std=c99", "-O2", f"-I{inc}", "-c", str(src), "-o", str(obj)]


def _bump(path: Path, text: str):
    st = path.stat()
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


@pytest.mark.parametrize("edit", ["nothing", "header", "source", "flags"])
def test_key_changes_exactly_when_the_compile_would(library, tmp_path, edit):
    src, inc = library
    before = compile_link._object_key(_argv(src, inc, tmp_path / "a.o"), src, tmp_path / "a.o")
    argv = _argv(src, inc, tmp_path / "b.o")      # another object path: the same key
    if edit == "header":
        _bump(inc / "lib.h", "#define LIB_SCALE 4\n")
    elif edit == "source":
        src.write_text(src.read_text() + "/* edited */\n")
    elif edit == "flags":
        argv.insert(3, "-DEXTRA")
    after = compile_link._object_key(argv, src, tmp_path / "b.o")
    assert (after == before) == (edit == "nothing")


def test_another_process_reuses_the_object_and_an_edited_header_compiles_again(library, tmp_path, monkeypatch):
    needs.programs("gcc")
    src, inc = library
    shared = tmp_path / "shared"
    monkeypatch.setenv("BYOC_OBJECT_CACHE", str(shared))

    def fresh_process():     # what another worker starts with: no objects of its own, the shared directory
        monkeypatch.setattr(compile_link, "_OBJECT_CACHE", {})
        monkeypatch.setattr(compile_link, "_OBJECT_CACHE_DIR", None)

    fresh_process()
    first = tmp_path / "first.o"
    compile_link._compile_cached(_argv(src, inc, first), src, first, False, "compiling lib.c")
    assert [p.suffix for p in shared.iterdir()] == [".o"]

    fresh_process()
    compiles = []
    real_run = tcmod.run_command
    monkeypatch.setattr(tcmod, "run_command", lambda argv, what: (compiles.append(argv), real_run(argv, what)))
    second = tmp_path / "second.o"
    compile_link._compile_cached(_argv(src, inc, second), src, second, False, "compiling lib.c")
    assert compiles == [] and second.read_bytes() == first.read_bytes()

    _bump(inc / "lib.h", "#define LIB_SCALE 4\n")
    third = tmp_path / "third.o"
    compile_link._compile_cached(_argv(src, inc, third), src, third, False, "compiling lib.c")
    assert len(compiles) == 1 and third.read_bytes() != first.read_bytes()
    assert sorted(p.suffix for p in shared.iterdir()) == [".o", ".o"]    # no partial file left behind
    shutil.rmtree(shared)


def _strict(argv):
    return [*argv[:3], *tcmod.WARNING_FLAGS, *argv[3:]]


# (id, source text, the object's commands in order: "strict" = with -Wall -Wextra -Werror, "plain" = without,
#  the compiles each runs)
WARNING_FLAG_CASES = [
    ("clean-plain-after-strict", "int f(int x) { return 2 * x; }\n", [("strict", 1), ("plain", 0)]),
    ("clean-strict-after-plain", "int f(int x) { return 2 * x; }\n", [("plain", 1), ("strict", 0)]),
    ("warning-plain-compiles-as-asked", "int f(int x) { int unused; return 2 * x; }\n", [("plain", 2), ("plain", 0)]),
]


@pytest.mark.parametrize("text, steps", [c[1:] for c in WARNING_FLAG_CASES], ids=[c[0] for c in WARNING_FLAG_CASES])
def test_warning_flags_share_one_object(tmp_path, monkeypatch, text, steps):
    """A library built with and without -Werror (a runner and a shared library of one model) compiles each clean
    source once: the warning flags change no code. A source they reject still compiles without them."""
    needs.programs("gcc")
    monkeypatch.setenv("BYOC_OBJECT_CACHE", str(tmp_path / "shared"))
    monkeypatch.setattr(compile_link, "_OBJECT_CACHE", {})
    monkeypatch.setattr(compile_link, "_OBJECT_CACHE_DIR", None)
    src = tmp_path / "lib.c"
    src.write_text(text)
    real_run = tcmod.run_command
    for n, (kind, compiles) in enumerate(steps):
        obj = tmp_path / f"{n}.o"
        plain = ["gcc", "-std=c99", "-O2", "-c", str(src), "-o", str(obj)]
        calls = []
        monkeypatch.setattr(tcmod, "run_command", lambda argv, what: (calls.append(argv), real_run(argv, what)))
        if kind == "strict":
            compile_link._compile_cached(_strict(plain), src, obj, False, "compiling lib.c", _strict(plain))
        else:
            compile_link._compile_cached(plain, src, obj, False, "compiling lib.c", _strict(plain))
        assert len(calls) == compiles and obj.exists()
    if "unused" in text:
        with pytest.raises(tcmod.ToolchainError):
            compile_link._compile_cached(_strict(plain), src, obj, False, "compiling lib.c", _strict(plain))
