"""Checking a built model against the numpy reference of the unpartitioned model.

Shared by `scons target=X check` and the differential test matrix, so that the
harness checks exactly what users run: the standalone runner, under the
toolchain's run prefix (qemu-user for foreign CPUs), fed with .npy files
(runtime/runner.py runs it).
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .columns import columns
from .errors import ByocError
from .runtime.runner import run_runner_timed
from .testing.error_bound import reference_with_errors
from .testing.tolerance import SAFETY, compare_with_bounds, tolerance_for_dtype


@dataclass
class CheckResult:
    model: str
    toolchain: str
    executor: str
    interface: str
    target: str
    passed: bool
    max_abs_err: float
    max_rel_err: float
    detail: str = ""
    where: str = ""          # a failed check: the first step beyond tolerance (debug.compare.explain_failure)
    margin: float = 0.0      # max |got - ref| / allowed error over the outputs (testing/tolerance.py); pass <= 1

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "CheckResult":
        return cls(**json.loads(text))


def deterministic_inputs(mod, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs for every parameter of main: floats in [-1, 1), ints in [0, 8), fixed by `seed`."""
    rng = np.random.default_rng(seed)
    out = {}
    for param in mod["main"].params:
        ty = param.type_annotation
        if ty.dtype.startswith("float"):
            out[param.name_hint] = rng.uniform(-1.0, 1.0, size=ty.shape).astype(ty.dtype)
        else:
            out[param.name_hint] = rng.integers(0, 8, size=ty.shape).astype(ty.dtype)
    return out


def compare_outputs(actual, expected, tolerances) -> tuple[bool, float, float, str]:
    """Compare lists of arrays; returns (passed, max abs error, max rel error, where the worst element is)."""
    if len(actual) != len(expected):
        return False, float("inf"), float("inf"), f"{len(actual)} outputs, expected {len(expected)}"
    passed, max_abs, max_rel, detail = True, 0.0, 0.0, ""
    for i, (got, want) in enumerate(zip(actual, expected)):
        # The runner writes .npy in its CPU's byte order (big-endian on s390x): compare values, not byte order.
        got = got.astype(got.dtype.newbyteorder("="), copy=False)
        if got.shape != want.shape or got.dtype != want.dtype:
            return False, float("inf"), float("inf"), (
                f"output {i}: got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
        rtol, atol = tolerances(want.dtype)
        got64, want64 = got.astype(np.float64), want.astype(np.float64)
        # NaN where the reference has NaN matches; a NaN (or inf) against a number is an infinite error,
        # so the table never shows "max abs err 0" next to FAIL
        same = (np.isnan(got64) & np.isnan(want64)) | (got64 == want64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.where(same, 0.0, np.abs(got64 - want64))
            diff = np.where(np.isnan(diff), np.inf, diff)
            rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(want64), np.finfo(np.float32).tiny))
            rel = np.where(np.isnan(rel), np.inf, rel)
            bad = ~same & ~(diff <= atol + rtol * np.abs(want64))
        if diff.size:
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float(rel.max()))
        if bad.any():
            idx = np.unravel_index(int(np.argmax(np.where(bad, diff, -1.0))), want.shape)
            passed = False
            detail = detail or (f"output {i}[{', '.join(map(str, idx))}]: got {got[idx]!r}, expected {want[idx]!r} "
                                f"(rtol={rtol}, atol={atol})")
    return passed, max_abs, max_rel, detail


def default_tolerances(dtype) -> tuple[float, float]:
    return tolerance_for_dtype(np.dtype(dtype))


_EXPECTED: dict = {}


def expected_outputs(mod, inputs, key=None):
    """The float64 reference of the unpartitioned `mod` with its error estimates (testing/error_bound.py);
    kept by `key` (one scons process checks each model on several configurations; outputs are small)."""
    if key is not None and key in _EXPECTED and _EXPECTED[key][0] is mod:
        return _EXPECTED[key][1]
    expected = reference_with_errors(mod, inputs)
    if key is not None:
        if len(_EXPECTED) >= 64:
            _EXPECTED.pop(next(iter(_EXPECTED)))
        _EXPECTED[key] = (mod, expected)
    return expected


def check_runner(runner: Path, run_prefix, model_name: str, mod, *, toolchain: str, executor: str,
                 interface: str, target: str, seed: int = 0, runner_args=(), timeout: float = 600.0) -> CheckResult:
    """Run `runner` on deterministic inputs and compare with the float64 reference of the unpartitioned
    `mod`, allowing per element a multiple of the float32 error estimate (testing/tolerance.py).
    `runner_args` go to the runner (`--constants FILE` for constants="params" builds); a failure or a run
    past `timeout` seconds (a hung bare-metal image) is a failed row naming the model and the toolchain."""
    inputs = deterministic_inputs(mod, seed)
    expected = expected_outputs(mod, inputs, key=(model_name, seed, id(mod)))
    order = [p.name_hint for p in mod["main"].params]
    with tempfile.TemporaryDirectory(prefix="byoc-check-") as tmp:
        try:
            actual, _ = run_runner_timed(runner, run_prefix, [inputs[name] for name in order], Path(tmp),
                                         timeout=timeout, what=f"running model {model_name!r} with toolchain "
                                         f"{toolchain!r}", extra_args=runner_args)
        except ByocError as exc:
            return CheckResult(model_name, toolchain, executor, interface, target, False,
                               float("inf"), float("inf"), str(exc))
    c = compare_with_bounds(actual, expected)
    return CheckResult(model_name, toolchain, executor, interface, target, c.passed, c.max_abs, c.max_rel,
                       c.detail, margin=c.margin)


def format_table(results: list[CheckResult]) -> str:
    header = ("model", "toolchain", "target", "executor", "interface", "max abs err", "max rel err", "margin",
              "result")
    rows = [header]
    for r in results:
        rows.append((r.model, r.toolchain, r.target, r.executor, r.interface, f"{r.max_abs_err:.3g}",
                     f"{r.max_rel_err:.3g}", f"{r.margin:.2g}", "pass" if r.passed else "FAIL"))
    lines = columns(rows).split("\n")
    for r in results:
        if not r.passed and r.detail:
            lines.append(f"FAIL {r.model}/{r.toolchain}: {r.detail}")
        if not r.passed and r.where:
            lines.append(f"  where: {r.where}")
    passed = sum(r.passed for r in results)
    lines.append(f"margin: the worst element's |got - ref| / allowed, allowed = {SAFETY:g} x the float32 error "
                 "estimate of the float64 reference (byoc_compiler/testing/tolerance.py); pass <= 1")
    lines.append(f"{passed} passed, {len(results) - passed} failed")
    return "\n".join(lines)
