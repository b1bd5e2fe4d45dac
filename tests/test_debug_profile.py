"""Per-step profiles (runner --profile, byoc profile) and their Chrome trace (docs/debugging.md).

Times are never asserted on; what is asserted: the steps' medians add up to the whole run within 10%
(in thread CPU time, which the machine's other processes do not disturb), FLOP counts match the
conv/dense formulas, every step lands in exactly one side-by-side segment, and the trace loads back
with the fields the trace-event format requires and one lane per target.
"""
from __future__ import annotations

import json

import pytest

import needs

from byoc_compiler import build, partition_for
from byoc_compiler.check import deterministic_inputs
from byoc_compiler.config import load_config
from byoc_compiler.debug.profile import parse_runner_profile, profile_build, side_by_side, step_flops
from byoc_compiler.debug.trace import validate_trace, write_trace

from debug_helpers import resnet_style

COMBOS = [pytest.param(e, i, id=f"{e}-{i}") for e in ("graph", "aot") for i in ("packed", "unpacked")]


def _model():
    return resnet_style(channels=16, size=24)


@pytest.mark.parametrize("executor, interface", COMBOS)
def test_steps_add_up_to_the_run(executor, interface):
    mod = _model()
    lib = build(partition_for("ccompiler", mod), executor=executor, interface=interface)
    prof = profile_build(lib, deterministic_inputs(mod), repeat=15, clock="cpu")
    assert len(prof.steps) == len(lib.program.steps)
    assert {s.target for s in prof.steps} == {"host", "ccompiler"}
    assert 0.9 <= prof.steps_ms / prof.run_ms <= 1.1, prof.table()


def test_host_build_steps_add_up():
    # Twice the channels: the graph executor's own work between host steps (packed arguments, about 5 us a
    # step) was 10.6% of the 16-channel model's 1.1 ms run on a loaded machine; 4x the conv work keeps it small.
    mod = resnet_style(channels=32, size=24)
    lib = build(mod, executor="graph", interface="packed")
    prof = profile_build(lib, deterministic_inputs(mod), repeat=7, clock="cpu")
    assert len(prof.steps) > 15
    assert 0.9 <= prof.steps_ms / prof.run_ms <= 1.1, prof.table()


def _qemu_profile():
    tc = load_config().toolchain("aarch64-gcc")
    needs.toolchain(tc)
    mod = _model()
    lib = build(partition_for("ccompiler", mod), toolchain="aarch64-gcc", executor="aot", interface="unpacked")
    return lib, profile_build(lib, deterministic_inputs(mod), repeat=5, clock="cpu")


@pytest.mark.every_toolchain  # (the matrix runs every foreign CPU's runner under qemu in the default run)
def test_profile_under_qemu_aarch64():
    """Every step is timed under qemu-user. How the times add up is asserted only with -m timing
    (test_qemu_steps_add_up_to_the_run): under qemu-user a thread's CPU time includes the emulator's own
    work (translating code, its helpers), which the steps' and the whole run's clocks share unevenly."""
    lib, prof = _qemu_profile()
    assert len(prof.steps) == len(lib.program.steps)
    assert {s.target for s in prof.steps} == {"host", "ccompiler"}
    assert all(s.ms >= 0 for s in prof.steps) and prof.run_ms > 0, prof.table()


@pytest.mark.timing
def test_qemu_steps_add_up_to_the_run():
    _, prof = _qemu_profile()
    assert 0.9 <= prof.steps_ms / prof.run_ms <= 1.1, prof.table()


def test_flops_follow_the_formulas():
    mod = _model()
    lib = build(mod)
    convs = [s for s in lib.program.steps if s.op_name == "nn.conv2d"]
    dense = [s for s in lib.program.steps if s.op_name == "nn.dense"]
    # stem: 3 -> 16 channels, 3x3, 24x24 output; blocks: 16 -> 16; dense 16 -> 10
    assert step_flops(lib, convs[0]) == 2 * 16 * 24 * 24 * 3 * 3 * 3
    assert step_flops(lib, convs[1]) == 2 * 16 * 24 * 24 * 16 * 3 * 3
    assert step_flops(lib, dense[0]) == 2 * 10 * 16
    part = build(partition_for("ccompiler", mod))
    region = next(s for s in part.program.steps if s.kind == "region")
    # the first region holds the stem and the first block: three convolutions
    assert step_flops(part, region) == 2 * 16 * 24 * 24 * 9 * (3 + 16 + 16)


def test_parse_rejects_output_without_times():
    from byoc_compiler.errors import ByocError

    with pytest.raises(ByocError, match="no median time"):
        parse_runner_profile("step 0 1 2 3 f\n")
    assert parse_runner_profile("median_ms=2.5\nmedian_cpu_ms=2.0\nstep 0 1.5 0.1 1.25 f\n", "cpu") == \
        (2.0, [(0, 1.25, 0.1, "f")])


def test_side_by_side_and_trace(tmp_path):
    mod = _model()
    inputs = deterministic_inputs(mod)
    profiles = [profile_build(build(partition_for("ccompiler", mod)), inputs, repeat=3),
                profile_build(build(mod), inputs, repeat=3)]
    sbs = side_by_side(profiles, mod, inputs)
    for k, prof in enumerate(profiles):
        # every step's time is in exactly one segment
        assert sum(seg.ms[k] for seg in sbs.segments) == pytest.approx(prof.steps_ms)
        assert sum(seg.steps[k] for seg in sbs.segments) == len(prof.steps)
    # the host build's 3 convolutions of the first block sit in the segment of the first region
    first = next(seg for seg in sbs.segments if seg.steps[0] == 1 and seg.steps[1] > 1)
    assert first.steps[1] >= 9 and "nodes" not in first.ops
    path = write_trace(tmp_path / "trace.json", profiles)
    data = json.loads(path.read_text())
    assert validate_trace(data) == []
    for pid, prof in enumerate(profiles, start=1):
        lanes = {e["args"]["name"]: e["tid"] for e in data["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid and e["tid"] != 0}
        steps = [e for e in data["traceEvents"] if e["ph"] == "X" and e["pid"] == pid and e["tid"] != 0]
        assert set(lanes) == {s.target for s in prof.steps}
        assert len(steps) == len(prof.steps)
        for e, s in zip(steps, prof.steps):
            assert e["tid"] == lanes[s.target] and e["dur"] == pytest.approx(s.ms * 1e3, abs=1e-3)


def test_cli_profile_writes_a_trace(tmp_path, capsys):
    from byoc_compiler.__main__ import main

    trace = tmp_path / "t.json"
    assert main(["profile", "small_cnn", "-t", "ccompiler", "--vs", "host", "--repeat", "3", "--trace",
                 str(trace)]) == 0
    out = capsys.readouterr().out
    assert "GFLOP/s" in out and "whole run" in out and "host speed-up" in out
    assert validate_trace(json.loads(trace.read_text())) == []
