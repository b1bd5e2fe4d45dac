"""docs/writing-a-target.md is executed: every step, in order, in a temporary copy of a project.

The guide's fenced blocks carry what to do in their info string:

    ```python file=mynpu/__init__.py      write this file (mynpu/* must equal docs/examples/mynpu/*)
    ```diff file=config.toml              apply this edit ("+" added, "-" removed, " " context lines)
    ```diff file=mynpu/codegen.py undo    ... and undo it after the next console block
    ```console                            run each `$ command`; its output must match the lines below it
    ```console fails                      ... and the last command must fail (the others succeed)
    ```console fails=1,2                  ... commands 1 and 2 must fail (the others succeed)
    ```text norun                         an illustration, not executed

Expected output is compared like a doctest with ELLIPSIS: a line `...` stands for any number of lines,
`...` inside a line for any text. The project directory and the repository root both read `~/byoc`
(the guide works in a clone). Changing the API, a message or a command line without updating the
guide fails here, naming the guide's line.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import needs

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "writing-a-target.md"
EXAMPLE = ROOT / "docs" / "examples" / "mynpu"
SHOWN_ROOT = "~/byoc"
RUN_KINDS = ("file", "diff", "console")


# --- reading the guide ------------------------------------------------------------------------------------

@dataclass
class Block:
    line: int                 # line of the opening fence in the guide
    lang: str
    attrs: dict = field(default_factory=dict)
    text: str = ""

    @property
    def kind(self) -> str:
        if "norun" in self.attrs:
            return "norun"
        if self.lang == "console":
            return "console"
        if self.lang == "diff" and "file" in self.attrs:
            return "diff"
        if "file" in self.attrs:
            return "file"
        return "unmarked"

    def where(self) -> str:
        return f"{GUIDE.relative_to(ROOT)}:{self.line}"


def parse_blocks(markdown: str) -> list[Block]:
    """Every fenced block of `markdown`, with the key=value / flag words of its info string."""
    blocks, current = [], None
    for number, line in enumerate(markdown.splitlines(), 1):
        if current is None:
            m = re.match(r"^```(\S*)\s*(.*)$", line)
            if m:
                attrs = {}
                for word in m.group(2).split():
                    key, _, value = word.partition("=")
                    attrs[key] = value
                current = Block(number, m.group(1), attrs)
                lines = []
        elif line.startswith("```"):
            current.text = "\n".join(lines) + "\n"
            blocks.append(current)
            current = None
        else:
            lines.append(line)
    assert current is None, f"unclosed block at {GUIDE.name}:{current.line}"
    return blocks


def apply_diff(original: str, diff: str, where: str) -> str:
    """Apply one hunk: its context and "-" lines must appear, in order and adjacent, in `original`.

    A file line matches a hunk line when equal, or equal up to a trailing `# comment`, so that the
    guide's config.toml edits do not repeat the comments of the file.
    """
    hunk = [(line[:1], line[1:]) for line in diff.splitlines() if line]
    bad = [tag for tag, _ in hunk if tag not in " +-"]
    assert not bad, f"{where}: diff lines must start with ' ', '+' or '-'"
    old = [text for tag, text in hunk if tag in " -"]
    lines = original.splitlines()

    def same(file_line: str, text: str) -> bool:
        file_line = file_line.rstrip()
        return file_line == text.rstrip() or re.sub(r"\s+#.*$", "", file_line) == text.rstrip()

    for start in range(len(lines) - len(old) + 1):
        if all(same(lines[start + k], text) for k, text in enumerate(old)):
            break
    else:
        raise AssertionError(f"{where}: the diff's context does not match the file any more:\n{diff}")
    out, k = lines[:start], start
    for tag, text in hunk:
        if tag == "+":
            out.append(text)
        elif tag == " ":
            out.append(lines[k])
            k += 1
        else:
            k += 1
    return "\n".join(out + lines[k:]) + "\n"


def output_matches(expected: str, actual: str) -> bool:
    """Doctest-like comparison with ELLIPSIS (whole lines and inside lines), trailing spaces ignored."""
    pattern = []
    for line in expected.rstrip("\n").splitlines():
        line = line.rstrip()
        if line == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*".join(re.escape(part) for part in line.split("...")) + r"\n")
    text = "".join(line.rstrip() + "\n" for line in actual.rstrip("\n").splitlines()) if actual.strip() else ""
    return re.fullmatch("".join(pattern), text) is not None


def console_commands(block: Block) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block."""
    commands = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            commands.append([line[2:], []])
        else:
            assert commands, f"{block.where()}: a console block starts with `$ command`"
            commands[-1][1].append(line)
    return [(cmd, "\n".join(out)) for cmd, out in commands]


def failing_commands(block: Block, count: int) -> set[int]:
    """1-based numbers of the commands of a console block that must fail."""
    if "fails" not in block.attrs:
        return set()
    if not block.attrs["fails"]:
        return {count}
    return {int(n) for n in block.attrs["fails"].split(",")}


# --- a project like a clone of the repository --------------------------------------------------------------

def make_project(path: Path) -> Path:
    """SConstruct, config.toml and the matrix harness of the repository; no target of ours."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copy(ROOT / "SConstruct", path / "SConstruct")
    shutil.copy(ROOT / "config.toml", path / "config.toml")
    shutil.copy(ROOT / "pyproject.toml", path / "pyproject.toml")      # pytest's rootdir and options
    (path / "tests").mkdir()
    for name in ("conftest.py", "skip_policy.py", "skip_allowlist.toml"):     # conftest's plugins
        shutil.copy(ROOT / "tests" / name, path / "tests" / name)
    if (ROOT / "tests" / "matrix").is_dir():
        shutil.copytree(ROOT / "tests" / "matrix", path / "tests" / "matrix", ignore=ignore)
    return path


def tool_env(bindir: Path) -> dict:
    """`python` and `scons` as this interpreter runs them; unbuffered so stdout and stderr keep their order."""
    bindir.mkdir(exist_ok=True)
    (bindir / "python").symlink_to(sys.executable)
    scons = bindir / "scons"
    scons.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m SCons "$@"\n')
    scons.chmod(0o755)
    env = dict(os.environ)
    env.pop("BYOC_CONFIG", None)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["LC_ALL"] = "C"                 # compiler messages with plain quotes, as the guide shows them
    return env


def shown(text: str, project: Path) -> str:
    """Output as the guide shows it: paths of the project and of the repository read ~/byoc."""
    for path in sorted({str(project), str(project.resolve()), str(ROOT)}, key=len, reverse=True):
        text = text.replace(path, SHOWN_ROOT)
    return text


class Walkthrough:
    """Runs the guide's blocks in order in `project`, collecting what did not match."""

    def __init__(self, project: Path, env: dict):
        self.project = project
        self.env = env
        self.pending_undo: list[tuple[Path, str]] = []
        self.log: list[str] = []

    def run(self, block: Block) -> None:
        getattr(self, "_" + block.kind)(block)

    def _norun(self, block: Block) -> None:
        pass

    def _file(self, block: Block) -> None:
        path = self.project / block.attrs["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.text)

    def _diff(self, block: Block) -> None:
        path = self.project / block.attrs["file"]
        assert path.exists(), f"{block.where()}: the guide edits {block.attrs['file']}, which does not exist"
        before = path.read_text()
        path.write_text(apply_diff(before, block.text, block.where()))
        if "undo" in block.attrs:
            self.pending_undo.append((path, before))

    def _console(self, block: Block) -> None:
        commands = console_commands(block)
        for k, (command, expected) in enumerate(commands):
            proc = subprocess.run(["bash", "-c", command], cwd=self.project, env=self.env, timeout=600,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            output = shown(proc.stdout, self.project)
            self.log.append(f"{block.where()} $ {command}  (exit {proc.returncode})")
            should_fail = k + 1 in failing_commands(block, len(commands))
            assert (proc.returncode != 0) == should_fail, (
                f"{block.where()}: `{command}` exited {proc.returncode}, the guide says it "
                f"{'fails' if should_fail else 'succeeds'}; output:\n{output}")
            assert output_matches(expected, output), (
                f"{block.where()}: the output of `{command}` is not what the guide shows.\n"
                f"--- guide:\n{expected}\n--- actual:\n{output}")
        for path, text in reversed(self.pending_undo):
            path.write_text(text)
        self.pending_undo.clear()


# --- the tests ----------------------------------------------------------------------------------------------

BLOCKS = parse_blocks(GUIDE.read_text())


def test_every_block_of_the_guide_is_executed_or_marked_as_illustration():
    unmarked = [b.where() for b in BLOCKS if b.kind == "unmarked"]
    assert not unmarked, f"blocks without file=/console/diff file= or norun: {unmarked}"
    assert sum(b.kind == "norun" for b in BLOCKS) <= 3, "the guide is meant to be run, not just read"
    for kind in RUN_KINDS:
        assert any(b.kind == kind for b in BLOCKS), kind


def test_the_example_package_is_the_guides_code():
    written = {b.attrs["file"]: b.text for b in BLOCKS if b.kind == "file" and b.attrs["file"].startswith("mynpu/")}
    on_disk = {f"mynpu/{p.relative_to(EXAMPLE).as_posix()}": p.read_text() for p in sorted(EXAMPLE.rglob("*.py"))}
    # section 10's pyproject.toml (.ci/venv_smoke.py builds the vendor wheel from these files)
    packaged = [b.text for b in BLOCKS if b.kind == "file" and b.attrs["file"] == "byoc-mynpu/pyproject.toml"]
    assert packaged == [(EXAMPLE.parent / "byoc-mynpu" / "pyproject.toml").read_text()]
    assert sorted(written) == sorted(on_disk)
    for name, text in written.items():
        assert on_disk[name] == text, f"docs/examples/{name} differs from the guide's block"


# The walk builds models, runs the matrix and, in section 10, two wheels and a virtualenv: about 70 s of CPU.
# It is marked `package` and runs outside the default run: .ci/run runs it after the default run
# (`pytest -q -m package tests/test_guide.py`), and .ci/venv_smoke.py installs the same vendor package into a
# clean virtualenv.
@pytest.mark.package
def test_the_guide_end_to_end(tmp_path):
    needs.programs("gcc", "clang", hint="the guide builds with gcc and clang (config.toml's [build] toolchains)")
    (tmp_path / "byoc").mkdir()
    project = make_project(tmp_path / "byoc")
    walk = Walkthrough(project, tool_env(tmp_path / "bin"))
    for block in BLOCKS:
        walk.run(block)
    assert not walk.pending_undo, "an `undo` edit has no console block after it"


DIFFS = [
    pytest.param("a\nb\nc\n", " a\n-b\n+B\n c\n", "a\nB\nc\n", id="replace"),
    pytest.param("[x]   # note\ny = 1\n", " [x]\n+z = 2\n", "[x]   # note\nz = 2\ny = 1\n", id="context-with-comment"),
    pytest.param("a\nb\n", "-a\n", "b\n", id="delete-first"),
]


@pytest.mark.parametrize("original, diff, result", DIFFS)
def test_apply_diff(original, diff, result):
    assert apply_diff(original, diff, "here") == result


def test_apply_diff_refuses_a_stale_context():
    with pytest.raises(AssertionError, match="does not match"):
        apply_diff("a\nb\n", " a\n-c\n", "here")


MATCHES = [
    pytest.param("a\nb", "a\nb\n", True, id="equal"),
    pytest.param("a\n...\nd", "a\nb\nc\nd", True, id="line-ellipsis"),
    pytest.param("a\n...\nd", "a\nd", True, id="line-ellipsis-empty"),
    pytest.param("x = ... ok", "x = 0.25 ok", True, id="inline-ellipsis"),
    pytest.param("a\nb", "a\nc", False, id="different-line"),
    pytest.param("a", "a\nb", False, id="extra-line"),
    pytest.param("a\nb", "a", False, id="missing-line"),
    pytest.param("", "", True, id="no-output"),
    pytest.param("", "noise", False, id="unexpected-output"),
]


@pytest.mark.parametrize("expected, actual, ok", MATCHES)
def test_output_matches(expected, actual, ok):
    assert output_matches(expected, actual) is ok


# --- the README's FAQ and the documentation links ---------------------------------------------------------

DOCS_WITH_LINKS = ["README.md", "docs/writing-a-target.md", "docs/architecture.md", "docs/examples/mynpu/README.md"]


@pytest.mark.parametrize("page", DOCS_WITH_LINKS)
def test_relative_links_resolve(page):
    path = ROOT / page
    links = re.findall(r"\]\(([^)#\s]+)\)", path.read_text())
    local = [link for link in links if "://" not in link]
    assert local, f"{page} links nothing"
    missing = [link for link in local if not (path.parent / link).exists()]
    assert not missing, f"{page}: broken links {missing}"


def test_readme_has_documentation_and_faq_sections():
    text = (ROOT / "README.md").read_text()
    assert "## Documentation" in text and "## FAQ" in text
    faq = text.split("## FAQ", 1)[1]
    for topic in ("rebuild", "target name", "registered", "annotations", "without building", "side effects",
                  "unpacked API with the graph executor", "graph.json with AOT"):
        assert topic in faq, topic


NO_COMPILER_CONFIG = """\
[backends]
USE_CODEGENC = true
[toolchains.nocc]
cc = "no-such-compiler-byoc"
arch = "x86_64"
"""


def test_faq_get_source_compiles_nothing(tmp_path):
    """build + get_source + export work with a toolchain whose compiler does not exist."""
    import byoc_compiler as byoc
    from byoc_compiler import zoo

    config = tmp_path / "config.toml"
    config.write_text(NO_COMPILER_CONFIG)
    lib = byoc.build(byoc.partition_for("ccompiler", zoo.get("byoc_guide")), toolchain="nocc", config=config)
    assert "int32_t tvmgen_default_ccompiler_main_0(" in lib.get_source("ccompiler")
    out = lib.export(tmp_path / "out")
    assert (out / "src" / "ccompiler" / "tvmgen_default_ccompiler_main_0.c").is_file()


def test_faq_aot_build_has_graph_json(tmp_path):
    import json

    import byoc_compiler as byoc
    from byoc_compiler import zoo

    lib = byoc.build(byoc.partition_for("ccompiler", zoo.get("mlp")), executor="aot", interface="unpacked")
    graph = json.loads(lib.graph_json)
    names = [node["name"] for node in graph["nodes"] if node["op"] == "tvm_op"]
    assert "tvmgen_default_ccompiler_main_0" in names
    exported = json.loads((lib.export(tmp_path / "aot") / "graph.json").read_text())
    assert exported == graph


# --- the walkthrough runner itself notices drift ---------------------------------------------------------

MINI_GUIDE = """\
```text file=note.txt
one
```

```diff file=note.txt undo
-one
+two
```

```console
$ cat note.txt
two
```

```console fails=2
$ cat note.txt
one
$ cat missing.txt
cat: missing.txt: No such file or directory
```
"""


def run_mini_guide(tmp_path, text):
    walk = Walkthrough(tmp_path, tool_env(tmp_path / "bin"))
    for block in parse_blocks(text):
        walk.run(block)


def test_walkthrough_runs_files_diffs_undo_and_failing_commands(tmp_path):
    run_mini_guide(tmp_path, MINI_GUIDE)
    assert (tmp_path / "note.txt").read_text() == "one\n"


DRIFTS = [
    pytest.param("$ cat note.txt\ntwo\n", "one\n", "not what the guide shows", id="output-differs"),
    pytest.param("$ cat missing.txt\n", "", "exited 1, the guide says it succeeds", id="unexpected-failure"),
]


@pytest.mark.parametrize("console, content, message", DRIFTS)
def test_walkthrough_reports_drift(tmp_path, console, content, message):
    (tmp_path / "note.txt").write_text(content)
    with pytest.raises(AssertionError, match=message):
        run_mini_guide(tmp_path, f"```console\n{console}```\n")


def test_architecture_names_only_files_that_exist():
    """docs/architecture.md describes the layout: every file and folder it names is still there."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    names = set(re.findall(r"[\w./]*\w\.(?:py|toml|h)\b", text)) | set(re.findall(r"\b[\w/]+/(?=[\s`|,)])", text))
    tracked = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in ("build", ".git", "__pycache__") and not d.endswith(".egg-info")]
        rel = Path(folder).relative_to(ROOT).as_posix()
        tracked += [f"{rel}/{name}".lstrip("./") for name in dirs + files]
    missing = []
    for name in sorted(names):
        name = name.strip("./")
        if name.endswith("*") or not name:
            continue
        if not any(path == name or path.endswith("/" + name) for path in tracked):
            missing.append(name)
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
