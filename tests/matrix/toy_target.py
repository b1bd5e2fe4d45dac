"""A tiny elementwise C target (add, multiply of same-shaped float32 tensors) that tests write to disk.

Used where a test needs a target of its own to edit or to break: the SCons tests edit its
codegen and count what rebuilds; the matrix and debug tests inject an off-by-one into its add loop
(write_slip_config + write_slip_target: the target as `slip`, enabled in a copy of config.toml).
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

INIT = """\
from byoc_compiler.vendor import Target

target = Target({name!r}, flag={flag!r}, description="elementwise add and multiply of same-shaped tensors")
target.supports("add", "multiply",
                predicate=lambda call: None if call.args[0].checked_type == call.args[1].checked_type
                else "operands must have the same type")

from .codegen import codegen  # noqa: E402

target.codegen = codegen
"""

# {add_end}: how far the add loop runs; `n` is right, `n - 1` an off-by-one.
# {add_expr}: the add's C expression of {{a}} and {{b}} (elements); "{{a}} + {{b}}" is right.
# {after_add}: C statements after the add loop, formatted with {{out}} (empty: none).
CODEGEN = """\
from byoc_compiler.vendor import Call, CSourceArtifact, entry_points, post_order

C_OPS = {{"add": "+", "multiply": "*"}}
VERSION = "v1"
ADD_EXPR = {add_expr!r}
AFTER_ADD = {after_add!r}


def codegen(func, symbol):
    names = {{id(p): f"in{{i}}" for i, p in enumerate(func.params)}}
    body = []
    for node in post_order(func.body):
        if isinstance(node, Call):
            a, b = (names[id(arg)] for arg in node.args)
            n = node.checked_type.size
            out = "out0" if node is func.body else f"t{{len(body)}}"
            if out != "out0":
                body.append(f"  static float {{out}}[{{n}}];")
            end = {add_end!r} if node.op.name == "add" else "n"
            # Cleared first, so that a skipped element is deterministically wrong (0), not stale memory.
            body.append(f"  for (int i = 0; i < {{n}}; ++i) {{out}}[i] = 0.0f;")
            expr = ADD_EXPR.format(a=f"{{a}}[i]", b=f"{{b}}[i]") if node.op.name == "add" else \\
                f"{{a}}[i] {{C_OPS[node.op.name]}} {{b}}[i]"
            body.append(f"  for (int i = 0; i < {{end.replace('n', str(n))}}; ++i) {{out}}[i] = {{expr}};")
            if node.op.name == "add" and AFTER_ADD:
                body.append(AFTER_ADD.format(out=out))
            names[id(node)] = out
    params = ", ".join([f"const float* in{{i}}" for i in range(len(func.params))] + ["float* out0"])
    in_types = [p.checked_type for p in func.params]
    code = (f"/* toy codegen {{VERSION}} */\\n#include <stdint.h>\\n"
            f"int32_t {{symbol}}_({{params}}) {{{{\\n" + "\\n".join(body) + "\\n  return 0;\\n}}\\n"
            + entry_points(symbol, symbol + "_", in_types, [func.body.checked_type]))
    return CSourceArtifact(symbol, {{symbol + ".c": code}})
"""


def write_package(package: Path, name: str, flag: str, add_end: str = "n", add_expr: str = "{a} + {b}",
                  after_add: str = "") -> Path:
    """The target's Python package at `package` (a directory named like the module)."""
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(INIT.format(name=name, flag=flag))
    (package / "codegen.py").write_text(CODEGEN.format(add_end=add_end, add_expr=add_expr, after_add=after_add))
    return package


def write_slip_config(directory: Path, extra_toolchains: str = "") -> Path:
    """The repository's config.toml plus the `slip` target (and extra toolchains), written in `directory`."""
    text = (ROOT / "config.toml").read_text()
    text = text.replace("[backends]", "[backends]\nUSE_SLIP = true", 1)
    text = text.replace("[targets]", '[targets]\nslip = { module = "slip_target", flag = "USE_SLIP" }', 1)
    path = directory / "config.toml"
    path.write_text(text + "\n" + extra_toolchains)
    return path


def write_slip_target(directory: Path, add_end: str = "n", **bug) -> dict:
    """The `slip` target package under `directory`/pkgs; the environment in which SCons and the CLI find it."""
    package = write_package(directory / "pkgs" / "slip_target", "slip", "USE_SLIP", add_end, **bug)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(package.parent), str(ROOT), env.get("PYTHONPATH", "")])
    return env
