"""The import contracts of .importlinter hold, and the check can fail: a planted upward import breaks it.
Imports inside functions say why."""
import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()", "--config", str(root / ".importlinter"), "--no-cache"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_contracts_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def _copy_of_the_code(tmp_path: Path) -> Path:
    def ignore(folder, names):   # Python files only: the contracts are about imports
        return [n for n in names if n == "__pycache__" or (not n.endswith(".py") and not Path(folder, n).is_dir())]

    for package in ("byoc_compiler", "targets"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=ignore)
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


# file to append to, the import planted in it, the contract it breaks
PLANTED = [
    pytest.param("byoc_compiler/ir/analysis.py", "from ..transform import infer_type  # noqa\n",
                 "byoc_compiler.ir is not allowed to import byoc_compiler.transform", id="ir-imports-transform"),
    pytest.param("byoc_compiler/target/target.py", "from ..backend import build  # noqa\n",
                 "byoc_compiler.target is not allowed to import byoc_compiler.backend", id="target-imports-backend"),
    pytest.param("byoc_compiler/ctext/literals.py", "from ..ir import types  # noqa\n",
                 "byoc_compiler.ctext is not allowed to import byoc_compiler.ir", id="ctext-imports-ir"),
    pytest.param("targets/ccompiler/rules.py", "from byoc_compiler.ir.visitor import post_order  # noqa\n",
                 "targets is not allowed to import byoc_compiler.ir", id="target-imports-ir"),
]


@pytest.mark.parametrize("path, line, message", PLANTED)
def test_a_planted_violation_is_caught(tmp_path, path, line, message):
    root = _copy_of_the_code(tmp_path)
    with open(root / path, "a") as f:
        f.write(line)
    result = lint_imports(root)
    assert result.returncode != 0
    assert message in " ".join(result.stdout.split()), result.stdout


# ---- imports inside functions ------------------------------------------------------------------------
def local_imports_without_reason(package: Path) -> list[str]:
    """Imports inside a function with no reason: none on their line, on the line above (a comment, or an
    import of the same block that has one), nor a module note saying what it imports inside functions."""
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        if any(line.startswith("#") and "imported inside" in line for line in lines):
            continue
        explained: set[int] = set()

        def visit(node, in_function):
            for child in ast.iter_child_nodes(node):
                if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                    above = lines[child.lineno - 2].strip() if child.lineno > 1 else ""
                    if ("#" in lines[child.lineno - 1] or above.startswith("#")
                            or child.lineno - 1 in explained):
                        explained.update(range(child.lineno, child.end_lineno + 1))
                    else:
                        found.append(f"{path.relative_to(package.parent).as_posix()}:{child.lineno}: "
                                     f"{lines[child.lineno - 1].strip()}")
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

        visit(ast.parse(text), False)
    return found


def test_function_local_imports_say_why():
    """A module-level import unless a cycle or start-up time needs it inside a function, and then the
    comment says which (docs/architecture.md)."""
    missing = local_imports_without_reason(ROOT / "byoc_compiler")
    assert not missing, "imports inside functions without a reason (move them to the top, or say why):\n" + \
        "\n".join(missing)


def test_a_local_import_without_reason_is_caught(tmp_path):
    package = tmp_path / "byoc_compiler"
    package.mkdir()
    (package / "planted.py").write_text("def f():\n    import json   # start-up: only f needs it\n    import csv\n\n"
                                        "    return json, csv\n\n\ndef g():\n    import re\n    return re\n")
    assert local_imports_without_reason(package) == ["byoc_compiler/planted.py:9: import re"]
