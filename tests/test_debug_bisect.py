"""Bisection (byoc bisect): a failing ResNet-style build shrinks to a reproducer of a few nodes that fails
alone and passes once the bug is removed; the reproducer is a text-IR model `scons model=` takes."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from byoc_compiler import build, partition_for
from byoc_compiler.check import deterministic_inputs
from byoc_compiler.debug.bisect import bisect_failure, recipe_of
from byoc_compiler.load import load_model
from byoc_compiler.testing import run_reference
from byoc_compiler.testing.tolerance import assert_close

from debug_helpers import InjectedBug, conv_biases, resnet_style

ROOT = Path(__file__).resolve().parent.parent
OPTIONS = dict(toolchain="gcc", executor="graph", interface="packed", opt="-O2")


def test_recipe_of_a_model_computes_the_model():
    mod = resnet_style()
    recipe, _, _ = recipe_of(mod)
    inputs = deterministic_inputs(mod)
    np.testing.assert_array_equal(run_reference(recipe.to_module(), inputs)[0], run_reference(mod, inputs)[0])


def _outputs_ok(path: Path, inputs_dir: Path, options=OPTIONS) -> bool:
    mod = load_model(str(path))
    inputs = {p.name_hint: np.load(inputs_dir / f"{p.name_hint}.npy") for p in mod["main"].params}
    got = build(partition_for("ccompiler", mod), **options).run_runner(inputs)
    try:
        for g, w in zip(got, run_reference(mod, inputs)):
            assert_close(g, w, 1e-4, 1e-5)
        return True
    except AssertionError:
        return False


QEMU = dict(toolchain="aarch64-gcc", executor="aot", interface="unpacked", opt="-O2")


# the cross toolchain's repetition waits for `every_toolchain` (the bisection is the same code on every toolchain)
@pytest.mark.parametrize("bug, options", [("relu_leak", OPTIONS), ("bias_drop", OPTIONS),
                                          pytest.param("relu_leak", QEMU, marks=pytest.mark.every_toolchain)],
                         ids=["relu_leak", "bias_drop", "relu_leak-aarch64-aot-unpacked"])
def test_bisect_writes_a_small_reproducer(tmp_path, bug, options):
    import shutil

    from byoc_compiler.config import load_config

    tc = load_config().toolchain(options["toolchain"])
    if shutil.which(tc.cc) is None or (tc.run and shutil.which(tc.run[0]) is None):
        pytest.fail(f"toolchain {tc.name} is not installed; run scripts/setup.sh")
    mod = resnet_style()
    injected = InjectedBug(bug, bias=conv_biases(mod)[1] if bug == "bias_drop" else None)
    with injected:
        result = bisect_failure(mod, ["ccompiler"], options, deterministic_inputs(mod), tmp_path, "repro")
        assert result.op_count <= 3, result.model_path.read_text()
        fails_with_bug = not _outputs_ok(result.model_path, result.inputs_dir, options)
    assert fails_with_bug, result.log
    assert _outputs_ok(result.model_path, result.inputs_dir, options), "the reproducer fails without the bug"
    text = result.model_path.read_text()
    assert ("nn.relu" in text) if bug == "relu_leak" else ("nn.conv2d" in text and "nn.bias_add" in text)
    assert sorted(p.name for p in result.inputs_dir.iterdir()) == \
        sorted(f"{p.name_hint}.npy" for p in load_model(str(result.model_path))["main"].params)


def test_bisect_cli_and_scons_reproduce(tmp_path):
    # The matrix's toy target with its add loop one element short, through the command line; the
    # reproducer then fails `scons model=... check` with the bug and passes with the fix.
    import toy_target

    config = toy_target.write_slip_config(tmp_path)
    broken = toy_target.write_slip_target(tmp_path / "broken", "n - 1")
    fixed = toy_target.write_slip_target(tmp_path / "fixed", "n")
    out = tmp_path / "repro"
    proc = subprocess.run([sys.executable, "-m", "byoc_compiler", "bisect", "byoc_guide", "-t", "slip",
                           "--config", str(config), "--out", str(out)], capture_output=True, text=True,
                          env=broken, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "smallest failing subgraph: 1 op(s)" in proc.stdout, proc.stdout
    assert "add(" in (out / "repro.txt").read_text()

    def scons(env):
        return subprocess.run([sys.executable, "-m", "SCons", "-Q", "-C", str(ROOT), "target=slip",
                               f"model={out / 'repro.txt'}", f"config={config}",
                               f"build_root={tmp_path / 'build'}", "check"],
                              capture_output=True, text=True, env=env, timeout=600)

    bad = scons(broken)
    assert bad.returncode != 0 and "FAIL" in bad.stdout + bad.stderr, bad.stdout + bad.stderr
    good = scons(fixed)
    assert good.returncode == 0, good.stdout + good.stderr
