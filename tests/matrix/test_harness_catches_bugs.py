"""The harness fails when the code under test is wrong: injected bugs must end in FAIL.

Each bug lives inside this file: a small elementwise target (`slip`, registered through the
[targets] table of a temporary config.toml) whose add kernel can skip the last element,
and a run prefix that writes .npy outputs with the wrong byte order in their header.
The same builds without the bug pass, so a FAIL is the bug's doing.
"""
from __future__ import annotations

import os
import sys
import textwrap

import pytest

import needs

import matrix_harness as h
import toy_target

# Runs the runner, then flips the byte-order character of every output's header: the data
# stays in the CPU's order, the header claims the other one (a byte-order slip in .npy writing).
NPY_SLIP = """\
import pathlib, subprocess, sys

proc = subprocess.run(sys.argv[1:])
out = pathlib.Path(sys.argv[sys.argv.index("--out") + 1])
for path in out.glob("out*.npy"):
    data = path.read_bytes()
    if b"'descr': '<" in data[:128]:
        data = data.replace(b"'descr': '<", b"'descr': '>", 1)
    else:
        data = data.replace(b"'descr': '>", b"'descr': '<", 1)
    path.write_bytes(data)
sys.exit(proc.returncode)
"""


def run(tmp_path, case, config_path, env):
    config = h.load_config(config_path)
    problem = h.toolchain_problem(config, case.toolchain)
    if problem:
        needs.missing(problem)
    return h.run_case(case, tmp_path / "case", None, config, config_path=config_path, env=env)


@pytest.mark.parametrize("add_end, passes", [("n", True), ("n - 1", False)], ids=["correct", "add_off_by_one"])
def test_off_by_one_kernel_is_caught(tmp_path, add_end, passes):
    # byoc_guide is (a + b - c) * d on 10x10: the slip target takes add and multiply.
    case = h.Case("byoc_guide", "slip", "gcc", "graph", "packed", "-O0")
    config_path = toy_target.write_slip_config(tmp_path)
    outcome = run(tmp_path, case, config_path, toy_target.write_slip_target(tmp_path, add_end))
    assert outcome.passed is passes, outcome.message
    if not passes:
        # The skipped element is the last one: the report names it, both values and the build command.
        assert "output 0[9, 9]" in outcome.message
        assert "got " in outcome.message and "expected " in outcome.message
        assert "reproduce: scons" in outcome.message and "target=slip" in outcome.message


# Small numeric slips in the add kernel, each beyond what float32 rounding explains, yet far below
# what an off-by-one shows: the tolerance (float64 reference + float32 error estimate) must see them.
SMALL_BUGS = {
    "operand_1e-3_off": {"add_expr": "{a} + 1.001f * {b}"},             # a bias-style slip: one operand scaled
    "result_in_float16": {"add_expr": "(float)(_Float16)({a} + {b})"},   # the sum rounded to half precision
    "rows_swapped": {"after_add": "  for (int i = 0; i < 10; ++i) {{ float t = {out}[i]; "
                                  "{out}[i] = {out}[10 + i]; {out}[10 + i] = t; }}"},   # two channels swapped
}


@pytest.mark.parametrize("bug", list(SMALL_BUGS))
def test_small_numeric_slips_are_caught(tmp_path, bug):
    case = h.Case("byoc_guide", "slip", "gcc", "graph", "packed", "-O0")
    config_path = toy_target.write_slip_config(tmp_path)
    outcome = run(tmp_path, case, config_path, toy_target.write_slip_target(tmp_path, "n", **SMALL_BUGS[bug]))
    assert not outcome.passed, f"{bug} passed the check (margin {outcome.margin})"
    assert outcome.margin > 5, outcome.message       # not by a hair
    assert "margin" in outcome.message and "x the float32 error estimate" in outcome.message


SLIP_TOOLCHAINS = {
    "gcc": ("x86_64", "gcc", ["-std=c99", "-fPIC"], ["-lm"], []),
    "s390x-gcc": ("s390x", "s390x-linux-gnu-gcc", ["-std=c99"], ["-static", "-lm"],
                  ["qemu-s390x", "-L", "/usr/s390x-linux-gnu"]),
}


@pytest.mark.parametrize("base", list(SLIP_TOOLCHAINS), ids=["little_endian_gcc", "big_endian_s390x"])
@pytest.mark.parametrize("slip", [False, True], ids=["right_order", "byte_order_slip"])
def test_byte_order_slip_in_npy_is_caught(tmp_path, base, slip):
    arch, cc, cflags, ldflags, run_prefix = SLIP_TOOLCHAINS[base]
    script = tmp_path / "npy_slip.py"
    script.write_text(NPY_SLIP)
    prefix = ([sys.executable, str(script)] if slip else []) + run_prefix
    toolchain = textwrap.dedent(f"""\
        [toolchains.under-test]
        cc = "{cc}"
        arch = "{arch}"
        cflags = {cflags!r}
        ldflags = {ldflags!r}
        run = {prefix!r}
        """).replace("'", '"')
    config_path = toy_target.write_slip_config(tmp_path, toolchain)
    case = h.Case("byoc_guide", "host", "under-test", "aot", "unpacked", "-O0")
    outcome = run(tmp_path, case, config_path, dict(os.environ))
    assert outcome.passed is not slip, outcome.message
    if slip:
        assert "worst element: output 0[" in outcome.message


def test_missing_toolchain_is_skipped_with_how_to_install_it(tmp_path):
    config_path = toy_target.write_slip_config(tmp_path, textwrap.dedent("""\
        [toolchains.absent-gcc]
        cc = "byoc-no-such-gcc"
        arch = "mips"
        run = ["qemu-mips"]
        apt = ["gcc-mips-linux-gnu", "qemu-user"]
        """))
    problem = h.toolchain_problem(h.load_config(config_path), "absent-gcc")
    assert problem is not None
    assert "apt-get install -y gcc-mips-linux-gnu qemu-user" in problem


@pytest.mark.harness   # ~19 s of scons builds; the shrinker alone runs by default (test_random_graph.py)
def test_failing_random_graph_shrinks_to_a_small_reproducer(tmp_path):
    from byoc_compiler.testing.random_graph import Step, random_recipe, save_reproducer, shrink, value_types

    def adds_same_shapes(recipe):
        types = value_types(recipe)
        return sum(isinstance(v, Step) and v.op == "add" and types[v.args[0]] == types[v.args[1]]
                   for v in recipe.values)

    # Elementwise graphs whose same-shaped adds land on the broken `slip` target.
    recipe = next(r for r in (random_recipe(s, steps=10, ops=("add", "multiply", "nn.relu", "tanh", "negative"),
                                            int_inputs=False) for s in range(500))
                  if adds_same_shapes(r) >= 1 and r.op_steps >= 8)
    config_path = toy_target.write_slip_config(tmp_path)
    config = h.load_config(config_path)
    env = toy_target.write_slip_target(tmp_path, "n - 1")
    case = h.Case("random0", "slip", "gcc", "graph", "packed", "-O0")
    tries = iter(range(1000))

    def still_fails(r):
        return not h.run_case(case, tmp_path / f"try{next(tries)}", None, config, config_path=config_path,
                              env=env, recipe=r).passed

    assert still_fails(recipe)
    small = shrink(recipe, still_fails, max_tries=12)
    assert small.op_steps < recipe.op_steps
    assert still_fails(small)
    path = save_reproducer(small, tmp_path / "failures", case.id)
    assert "add(" in path.read_text()
