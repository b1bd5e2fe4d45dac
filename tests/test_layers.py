"""The import contracts of .importlinter hold (every module of byoc_compiler in a layer, no cycle inside any
package, targets import only byoc_compiler.vendor), and each can fail: planted violations break them.
Imports inside functions say why (byoc_compiler/ and targets/)."""
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
                           "lint_imports_command()", str(root / ".importlinter"), "--no-cache"],
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


# file to append to (created if missing), the import planted in it, what the report says. One copy of the
# code holds them all and import-linter runs once: each line below must be reported by its own contract.
PLANTED = [
    # layers: an upward import, between core packages and between the formerly unlayered modules
    ("byoc_compiler/ir/analysis.py", "from ..transform import infer_type  # noqa\n",
     "byoc_compiler.ir is not allowed to import byoc_compiler.transform"),
    ("byoc_compiler/target/target.py", "from ..backend import build  # noqa\n",
     "byoc_compiler.target is not allowed to import byoc_compiler.backend"),
    ("byoc_compiler/ctext/literals.py", "from ..ir import types  # noqa\n",
     "byoc_compiler.ctext is not allowed to import byoc_compiler.ir"),
    ("byoc_compiler/toolchain.py", "from .runtime import dlpack_include_dir  # noqa\n",
     "byoc_compiler.toolchain is not allowed to import byoc_compiler.runtime"),
    ("byoc_compiler/backend/aot.py", "from ..check import deterministic_inputs  # noqa\n",
     "byoc_compiler.backend is not allowed to import byoc_compiler.check"),
    ("byoc_compiler/frontend/graph_context.py", "from .. import zoo  # noqa\n",
     "byoc_compiler.frontend is not allowed to import byoc_compiler.zoo"),
    # layers, independent siblings (a | b): backend and frontend know nothing of each other
    ("byoc_compiler/backend/program.py", "from ..frontend import from_onnx  # noqa\n",
     "byoc_compiler.backend is not allowed to import byoc_compiler.frontend"),
    # layers, exhaustive: a new module of byoc_compiler that no layer lists
    ("byoc_compiler/planted_module.py", "X = 1\n",
     "The following modules are not listed as layers: - byoc_compiler.planted_module"),
    # acyclic siblings: a cycle inside a package (pattern's and ir's, as they were before #28)
    ("byoc_compiler/pattern/patterns.py", "from . import matcher  # noqa\n",
     "No cycles are allowed in byoc_compiler.pattern. It could be made acyclic by removing 1 dependency: - "
     ".patterns -> .matcher"),
    ("byoc_compiler/ir/expr.py", "from . import printer  # noqa\n", "No cycles are allowed in byoc_compiler.ir."),
    # vendor: a target imports byoc beyond byoc_compiler.vendor, an existing module or a new subpackage
    ("targets/ccompiler/rules.py", "from byoc_compiler.ir.visitor import post_order  # noqa\n",
     "targets.ccompiler.rules -> byoc_compiler.ir.visitor"),
    ("byoc_compiler/planted_package/__init__.py", "Y = 2\n", None),
    ("targets/dnnl/ops.py", "import byoc_compiler.planted_package  # noqa\n",
     "targets.dnnl.ops -> byoc_compiler.planted_package"),
    ("targets/examplejson/codegen.py", "import byoc_compiler  # noqa\n", "targets.examplejson.codegen -> byoc_compiler "),
]


def test_each_planted_violation_is_caught(tmp_path):
    root = _copy_of_the_code(tmp_path)
    for path, line, _ in PLANTED:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        with open(root / path, "a") as f:
            f.write(line)
    result = lint_imports(root)
    assert result.returncode != 0
    report = " ".join(result.stdout.split()) + " "
    missed = [f"{path}: {line.strip()} (expected: {message})" for path, line, message in PLANTED
              if message is not None and message not in report]
    assert not missed, "not reported:\n" + "\n".join(missed) + "\n" + result.stdout
    assert "Contracts: 0 kept, 3 broken." in report, result.stdout


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
    missing = [where for package in ("byoc_compiler", "targets") for where in local_imports_without_reason(ROOT / package)]
    assert not missing, "imports inside functions without a reason (move them to the top, or say why):\n" + \
        "\n".join(missing)


def test_a_local_import_without_reason_is_caught(tmp_path):
    package = tmp_path / "byoc_compiler"
    package.mkdir()
    (package / "planted.py").write_text("def f():\n    import json   # start-up: only f needs it\n    import csv\n\n"
                                        "    return json, csv\n\n\ndef g():\n    import re\n    return re\n")
    assert local_imports_without_reason(package) == ["byoc_compiler/planted.py:9: import re"]
