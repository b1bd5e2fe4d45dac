"""Debug runs and per-step compare (docs/debugging.md).

- a dump (runner --dump, Module.run(dump=...)) holds every step's outputs, equal to the numpy
  reference of that step, for both executors and interfaces;
- with a bug injected into one op of the ccompiler target in a ResNet-style model, `compare` marks
  exactly the region and the node of that op first and says the region is wrong by itself; the same
  build without the bug passes;
- `scons ... check` of a model with a broken target names the first diverging region and op.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from byoc_compiler import build, partition_for, zoo
from byoc_compiler.check import default_tolerances, deterministic_inputs
from byoc_compiler.config import load_config
from byoc_compiler.debug.compare import compare_build
from byoc_compiler.runtime.dump import read_dump
from byoc_compiler.testing import run_reference
from byoc_compiler.toolchain import can_load_here

from debug_helpers import InjectedBug, conv_biases, resnet_style

ROOT = Path(__file__).resolve().parent.parent
COMBOS = [pytest.param(e, i, id=f"{e}-{i}") for e in ("graph", "aot") for i in ("packed", "unpacked")]


def _expected_step_values(lib, inputs):
    """Each step's value from the numpy reference interpreter run over the build's module (the oracle)."""
    from byoc_compiler.testing.reference import node_values

    _, env = node_values(lib.mod, inputs)
    out = []
    for step in lib.program.steps:
        value = env[id(step.call)]
        out.append(list(value) if isinstance(value, tuple) else [value])
    return out


@pytest.mark.parametrize("executor, interface", COMBOS)
def test_dump_holds_every_step(tmp_path, executor, interface):
    # multi_output on ccompiler: host kernels, regions, a split with two outputs, tuple model outputs.
    mod = zoo.get("multi_output")
    inputs = zoo.inputs("multi_output")
    lib = build(partition_for("ccompiler", mod), executor=executor, interface=interface)
    from byoc_compiler.runtime.runner import run_runner_proc

    dump = tmp_path / "dump"
    dump.mkdir()
    outputs, _ = run_runner_proc(lib.runner(werror=True), [], [inputs["data"]], tmp_path, extra_args=["--dump", dump])
    steps = read_dump(dump)
    assert [s.step for s in steps] == list(range(len(lib.program.steps)))
    assert [s.name for s in steps] == [s.symbol for s in lib.program.steps]
    reference = run_reference(mod, inputs)
    for got, want in zip(outputs, reference):
        np.testing.assert_allclose(got, want, *default_tolerances(want.dtype))
    for step, values in zip(steps, _expected_step_values(lib, inputs)):
        assert len(step.outputs) == len(values)
        for got, want in zip(step.outputs, values):
            rtol, atol = default_tolerances(want.dtype)
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    # the last step's outputs are model outputs: the dump shows what the runner returned
    assert any(np.array_equal(steps[-1].outputs[0], o) for o in outputs)
    if can_load_here(lib.toolchain):
        m = lib.load()
        m.set_input("data", inputs["data"])
        m.run(dump=tmp_path / "py")
        for a, b in zip(read_dump(tmp_path / "py"), steps):
            assert a.name == b.name
            for x, y in zip(a.outputs, b.outputs):
                np.testing.assert_array_equal(x, y)


def test_dump_index_escapes_node_names(tmp_path):
    # Node names come from graph.json (any text with runner --graph): index.json must stay valid JSON.
    import json

    from byoc_compiler.runtime.runner import run_runner_proc

    lib = build(zoo.get("byoc_guide"))
    graph = json.loads(lib.graph_json)
    odd = 'a "quoted"\\ name\nwith a newline'
    next(n for n in graph["nodes"] if n["op"] == "tvm_op")["name"] = odd
    (tmp_path / "graph.json").write_text(json.dumps(graph))
    (tmp_path / "dump").mkdir()
    arrays = list(zoo.inputs("byoc_guide").values())
    run_runner_proc(lib.runner(), [], arrays, tmp_path,
                    extra_args=["--graph", tmp_path / "graph.json", "--dump", tmp_path / "dump"])
    assert read_dump(tmp_path / "dump")[0].name == odd


def _unpartitioned_relu_nodes(mod) -> list[str]:
    """Names of the relus that follow an add (the residual relus), read from the model's text form."""
    text = mod.astext()
    adds = set(re.findall(r"(%\d+) = add\(", text))
    return [m.group(1) for m in re.finditer(r"(%\d+) = nn\.relu\((%\d+)\)", text) if m.group(2) in adds]


def _unpartitioned_conv_relus(mod) -> list[str]:
    """Names of the relus of conv2d + bias_add + relu chains, in order."""
    text = mod.astext()
    convs = set(re.findall(r"(%\d+) = nn\.conv2d\(", text))
    biased = {m.group(1) for m in re.finditer(r"(%\d+) = nn\.bias_add\((%\d+),", text) if m.group(2) in convs}
    return [m.group(1) for m in re.finditer(r"(%\d+) = nn\.relu\((%\d+)\)", text) if m.group(2) in biased]


def _inject(bug: str, mod, symbol=None):
    """relu_leak: every plain relu of the ccompiler regions; bias_drop: the second conv's bias (block 0)."""
    if bug == "relu_leak":
        return InjectedBug("relu_leak", symbol=symbol), _unpartitioned_relu_nodes(mod)[0]
    return InjectedBug("bias_drop", symbol=symbol, bias=conv_biases(mod)[1]), _unpartitioned_conv_relus(mod)[1]


# each bug on both executors and both interfaces
BUG_CASES = [pytest.param(b, e, i, id=f"{b}-{e}-{i}") for b, e, i in
             [("relu_leak", "graph", "packed"), ("bias_drop", "graph", "unpacked"),
              ("bias_drop", "aot", "packed"), ("relu_leak", "aot", "unpacked")]]


@pytest.mark.parametrize("bug, executor, interface", BUG_CASES)
def test_compare_names_the_broken_op(bug, executor, interface):
    mod = resnet_style()
    inputs = deterministic_inputs(mod)
    part = partition_for("ccompiler", mod)
    broken = "tvmgen_default_ccompiler_main_0"
    injected, expected_node = _inject(bug, mod)
    with injected:
        lib = build(part, executor=executor, interface=interface)
        report = compare_build(lib, mod, inputs, model="resnet_style", target="ccompiler")
    assert injected.patched, "the bug was not injected"
    row = report.first_row()
    assert row is not None and row.where == broken and row.target == "ccompiler", report.table()
    assert all(not r.error.beyond for r in report.rows[:report.first])
    d = report.diagnosis
    assert d is not None and d.by_itself is True, report.table()
    assert d.op_node == expected_node, report.table()
    assert d.op == ("nn.relu" if bug == "relu_leak" else
                    "ccompiler.conv2d_bias_relu(nn.conv2d+nn.bias_add+nn.relu)"), report.table()
    assert broken in report.summary() and expected_node in report.summary() and "wrong by itself" in report.summary()
    # control: the same build without the bug
    clean = compare_build(build(part, executor=executor, interface=interface), mod, inputs)
    assert clean.passed and clean.first is None, clean.table()


@pytest.mark.every_toolchain  # (the default run has the profiler under qemu, test_debug_profile.py)
def test_compare_on_qemu_aarch64():
    config = load_config()
    tc = config.toolchain("aarch64-gcc")
    import shutil

    if shutil.which(tc.cc) is None or shutil.which(tc.run[0]) is None:
        pytest.fail(f"toolchain aarch64-gcc is not installed ({tc.cc}, {tc.run[0]}); run scripts/setup.sh")
    mod = resnet_style()
    inputs = deterministic_inputs(mod)
    with InjectedBug("relu_leak", symbol="tvmgen_default_ccompiler_main_1"):
        lib = build(partition_for("ccompiler", mod), toolchain="aarch64-gcc", executor="aot", interface="unpacked")
        report = compare_build(lib, mod, inputs)
    assert report.first_row().where == "tvmgen_default_ccompiler_main_1", report.table()
    assert report.diagnosis.by_itself and report.diagnosis.op_node == _unpartitioned_relu_nodes(mod)[1], report.table()


def test_region_fed_wrong_inputs_is_not_wrong_by_itself():
    # Only region 0's relu is broken; region 1 receives its wrong values. Diagnosed on its own, region 1
    # is within tolerance on reference inputs: it inherited the error.
    from byoc_compiler.debug.compare import diagnose_region, run_dumped
    from byoc_compiler.debug.nodes import ModelNodes, step_inputs, step_references

    mod = resnet_style()
    inputs = deterministic_inputs(mod)
    with InjectedBug("relu_leak", symbol="tvmgen_default_ccompiler_main_0"):
        lib = build(partition_for("ccompiler", mod))
        _, dumped = run_dumped(lib, inputs)
        refs, env = step_references(lib, inputs)
        k = next(i for i, s in enumerate(lib.program.steps) if s.symbol == "tvmgen_default_ccompiler_main_1")
        from byoc_compiler.debug.error import worst_error

        assert worst_error(list(zip(dumped[k].outputs, refs[k]))).beyond      # wrong in the full run
        d = diagnose_region(lib, lib.program.steps[k], k, step_inputs(lib, env, lib.program.steps[k]), refs[k],
                            ModelNodes.of(mod, inputs))
    assert d.by_itself is False and "inherited" in d.sentence()


def test_cli_compare_exit_code(capsys):
    from byoc_compiler.__main__ import main

    assert main(["compare", "residual_block", "-t", "ccompiler", "--executor", "aot"]) == 0
    out = capsys.readouterr().out
    assert "every step is within tolerance" in out and "tvmgen_default_ccompiler_main_0" in out


def test_scons_check_names_the_first_diverging_region(tmp_path):
    # The matrix's toy target with its add loop one element short: byoc_guide is (a + b - c) * d.
    import toy_target

    config = toy_target.write_slip_config(tmp_path)
    env = toy_target.write_slip_target(tmp_path, "n - 1")
    argv = [sys.executable, "-m", "SCons", "-Q", "-C", str(ROOT), "target=slip", "model=byoc_guide",
            "toolchain=gcc", f"config={config}", f"build_root={tmp_path / 'build'}", "check"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    where = [line for line in out.splitlines() if line.strip().startswith("where:")]
    assert where, out
    assert "region tvmgen_default_slip_main_0 (slip)" in where[0] and "wrong by itself" in where[0], out
    assert "first op beyond tolerance inside it: add" in where[0], out
