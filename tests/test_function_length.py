"""No function in byoc_compiler/ (the SCons code included: byoc_compiler/scons/, and the SConstruct) nor in
targets/ is longer than about a screen (LIMIT lines, from `def` to its last line), except the few listed in
LONGER with a reason; and the check can fail (a planted long function).

A long function is where logic hides from review: split it into named steps. A declarative table written
as a function (one row a line) may stay long; list it with its reason."""
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 60

# (file, function) -> why it may be longer than LIMIT. Remove an entry once its function is short again:
# test_the_exceptions_are_current fails on an entry that no longer needs it.
LONGER: dict[tuple[str, str], str] = {}


# Every Python tree the rule covers: the package (its SCons tool and project code live in
# byoc_compiler/scons/), the built-in targets, and the repository's SConstruct (Python too).
COVERED = ("byoc_compiler", "targets", "SConstruct")


def long_functions(package: Path, limit: int = LIMIT) -> dict[tuple[str, str], int]:
    """(file relative to the package's parent, function name) -> lines, for every function over `limit`
    (`package`: a directory searched for *.py, or one Python file)."""
    found = {}
    for path in sorted(package.rglob("*.py")) if package.is_dir() else [package]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found[(path.relative_to(package.parent).as_posix(), node.name)] = lines
    return found


def _found() -> dict[tuple[str, str], int]:
    return {k: n for tree in COVERED for k, n in long_functions(ROOT / tree).items()}


def test_the_covered_trees_exist():
    assert all((ROOT / tree).exists() for tree in COVERED)
    assert any((ROOT / "byoc_compiler" / "scons").glob("*.py")), "the SCons code moved: cover its new home"


def test_no_function_is_longer_than_the_limit():
    over = {k: n for k, n in _found().items() if k not in LONGER}
    assert not over, (f"functions longer than {LIMIT} lines (split them into named steps, or list a declarative "
                      f"table in LONGER with its reason): "
                      + ", ".join(f"{path}:{name} ({n} lines)" for (path, name), n in sorted(over.items())))


def test_the_exceptions_are_current():
    found = _found()
    stale = sorted(k for k in LONGER if k not in found)
    assert not stale, f"no longer longer than {LIMIT} lines, remove from LONGER: {stale}"


def test_a_planted_long_function_is_caught(tmp_path):
    package = tmp_path / "byoc_compiler"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "planted.py").write_text(
        "def short():\n" + "    x = 1\n" * (LIMIT - 1)
        + "\n\nclass C:\n    def long(self):\n" + "        x = 1\n" * LIMIT)
    assert long_functions(package) == {("byoc_compiler/sub/planted.py", "long"): LIMIT + 1}


def test_a_planted_long_function_in_a_target_is_caught(tmp_path, monkeypatch):
    """The covered trees are what the real test reads: a long function planted under targets/ fails it."""
    (tmp_path / "byoc_compiler" / "scons").mkdir(parents=True)
    (tmp_path / "SConstruct").write_text("import os\n")
    (tmp_path / "targets" / "mynpu").mkdir(parents=True)
    (tmp_path / "targets" / "mynpu" / "codegen.py").write_text("def emit():\n" + "    x = 1\n" * LIMIT)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert _found() == {("targets/mynpu/codegen.py", "emit"): LIMIT + 1}
