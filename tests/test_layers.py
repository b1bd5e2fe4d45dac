"""The import contracts of .importlinter hold, and the check can fail: a planted upward import breaks it."""
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
    pytest.param("byoc_compiler/spec/target.py", "from ..backend import build  # noqa\n",
                 "byoc_compiler.spec is not allowed to import byoc_compiler.backend", id="spec-imports-backend"),
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
