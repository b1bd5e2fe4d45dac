"""How close a built model's output must be to the reference: the tolerance policy.

Whole models (`scons check`, the test matrix) are compared with `compare_with_bounds`: the reference
runs in float64 beside simulated float32 computations (testing/error_bound.py), which give each
output element sigma, the spread of correct float32 results. An element passes when

    |got - ref64| <= SAFETY * max(sigma, FLOOR * rms(sigma over the output))

SAFETY = 16. Correct builds measured so far use at most ~2 sigma (onnxruntime, 1 and 2 threads, on
MobileNetV2 224x224; ccompiler and the host builds less), so 16 leaves a factor 8; injected bugs use
hundreds to millions (a bias 1e-3 off: >500; one accumulation in float16: >9000; two channels
swapped: >50000). FLOOR = 0.5 keeps an element whose few samples happened to agree (or a ReLU output
that the samples all left at 0) from demanding exactness. sigma is 0 where the value is exact
(integers; data movement of inputs and constants): there the comparison is exact. The check table
prints the margin: the largest |got - ref| / allowed over the outputs (pass: <= 1).

Single ops and small graphs in unit tests use per-family rtol/atol (below): an element passes when |actual - expected| <= atol + rtol * |expected| (numpy.isclose).

Per dtype and op family (the `family` of each op in the registry):

    dtype     family        rtol    atol    why
    float32   shape         0       0       data movement only (reshape, transpose, pad, take, ...): bit-exact
    float32   elementwise   1e-5    1e-6    one rounding per op; libm exp/log/tanh within a few ulp of numpy
    float32   nn            1e-4    1e-5    sums (dense, conv2d, pools, softmax, batch_norm, lrn) accumulate in
                                            another order than numpy's pairwise/BLAS sums, and compilers may
                                            contract a*b+c into an FMA
    int32/int64/bool  any   0       0       integer arithmetic is exact (int32 divide truncates like C)

A model is checked with the loosest tolerance of the families its ops belong to; when
nothing is known about the ops, float32 gets the `nn` row (rtol=1e-4, atol=1e-5), the
project-wide default. Errors compound along a chain of reductions, so these values
hold for the zoo's depths (a handful of reductions); deeper random graphs scale atol
with `depth_scale` (atol * max(1, reductions / 4)).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ..ir.analysis import op_counts
from ..op.registry import get_op_def

DEFAULT_FLOAT32 = (1e-4, 1e-5)
EXACT = (0.0, 0.0)

TOLERANCES: dict[tuple[str, str], tuple[float, float]] = {
    ("float32", "shape"): EXACT,
    ("float32", "elementwise"): (1e-5, 1e-6),
    ("float32", "nn"): DEFAULT_FLOAT32,
}


def tolerance(dtype, families: Iterable[str] | None = None) -> tuple[float, float]:
    """(rtol, atol) for outputs of `dtype` computed by ops of `families` (None: not known)."""
    name = np.dtype(dtype).name
    if name != "float32":
        if np.dtype(dtype).kind == "f":       # other float widths: scale the float32 policy by epsilon
            scale = float(np.finfo(np.dtype(dtype)).eps / np.finfo(np.float32).eps)
            rtol, atol = tolerance("float32", families)
            return rtol * scale, atol * scale
        return EXACT
    if families is None:
        return DEFAULT_FLOAT32
    rows = [TOLERANCES.get(("float32", f), DEFAULT_FLOAT32) for f in families]
    if not rows:
        return EXACT
    return max(r for r, _ in rows), max(a for _, a in rows)


def tolerance_for_dtype(dtype) -> tuple[float, float]:
    """The model-level default for `dtype` when the ops are not known."""
    return tolerance(dtype, None)


def op_families(mod) -> set[str]:
    """The op families used anywhere in a module (every function, composite bodies included)."""
    families: set[str] = set()
    for func in mod.functions.values():
        for name in op_counts(func):
            families.add(get_op_def(name).family)
    return families


def tolerance_for_module(mod, dtype) -> tuple[float, float]:
    """(rtol, atol) for an output of `dtype` of module `mod`: the loosest family it uses."""
    return tolerance(dtype, sorted(op_families(mod)))


SAFETY = 16.0
FLOOR = 0.5


@dataclass
class Comparison:
    passed: bool
    max_abs: float          # max |got - ref| (inf when a NaN or an infinity appears where ref has none)
    max_rel: float
    margin: float           # max |got - ref| / allowed (pass: <= 1); inf when the allowance is 0 and missed
    detail: str = ""        # the worst element of the first failing output


def allowed_error(error: np.ndarray) -> np.ndarray:
    """Per element: how far a build may be from the float64 reference, given error_bound's estimate."""
    error = np.asarray(error, np.float64)
    if error.size == 0:
        return error
    with np.errstate(over="ignore", invalid="ignore"):
        rms = float(np.sqrt(np.mean(np.square(np.nan_to_num(error, nan=0.0, posinf=0.0)))))
    return SAFETY * np.maximum(np.nan_to_num(error, nan=np.inf), FLOOR * rms)


def compare_with_bounds(actual, expected) -> Comparison:
    """Compare built outputs with `error_bound.reference_with_errors` results (Bounded), element by element."""
    if len(actual) != len(expected):
        return Comparison(False, np.inf, np.inf, np.inf, f"{len(actual)} outputs, expected {len(expected)}")
    passed, max_abs, max_rel, margin, detail = True, 0.0, 0.0, 0.0, ""
    for i, (got, want) in enumerate(zip(actual, expected)):
        got = np.asarray(got)
        got = got.astype(got.dtype.newbyteorder("="), copy=False)   # .npy from a big-endian CPU
        if got.shape != want.value.shape or got.dtype != want.dtype:
            return Comparison(False, np.inf, np.inf, np.inf, f"output {i}: got {got.dtype}{list(got.shape)}, "
                              f"expected {want.dtype}{list(want.value.shape)}")
        if got.size == 0:
            continue
        g, r = got.astype(np.float64), want.value.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            same_special = (np.isnan(g) & np.isnan(r)) | (np.isinf(r) & (g == r))
            diff = np.where(same_special, 0.0, np.abs(g - r))
            diff = np.where(np.isnan(diff), np.inf, diff)          # a NaN where a number is due: infinitely off
            allowed = allowed_error(want.error) if got.dtype.kind == "f" else np.zeros(got.shape)
            share = np.where(diff == 0, 0.0, diff / allowed)
            share = np.where(np.isnan(share), np.inf, share)       # off by inf where any error is allowed
            rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(r), np.finfo(np.float32).tiny))
        max_abs, max_rel = max(max_abs, float(diff.max())), max(max_rel, float(rel.max()))
        idx = np.unravel_index(int(np.argmax(share)), share.shape)
        margin = max(margin, float(share[idx]))
        if share[idx] > 1.0 and passed:
            passed = False
            detail = (f"output {i}[{', '.join(map(str, idx))}]: got {got[idx]!r}, expected {float(r[idx])!r} "
                      f"(allowed error {float(allowed[idx]):.3g} = {SAFETY:g} x the float32 error estimate; "
                      f"{float(share[idx]):.3g} x allowed)")
    return Comparison(passed, max_abs, max_rel, margin, detail)


def depth_scale(atol: float, reductions: int) -> float:
    return atol * max(1.0, reductions / 4.0)


def assert_close(actual, expected, rtol: float, atol: float, what: str = "output") -> None:
    """Raise AssertionError naming the worst element when `actual` is not within tolerance of `expected`."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        raise AssertionError(f"{what}: got {actual.dtype}{list(actual.shape)}, "
                             f"expected {expected.dtype}{list(expected.shape)}")
    a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
    bad = ~(np.abs(a64 - e64) <= atol + rtol * np.abs(e64))
    bad &= ~(np.isnan(a64) & np.isnan(e64))
    if bad.any():
        diff = np.where(bad, np.abs(a64 - e64), -1.0)
        idx = np.unravel_index(int(np.nanargmax(np.nan_to_num(diff, nan=np.inf))), expected.shape)
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements differ; worst at {list(idx)}: "
                             f"got {actual[idx]!r}, expected {expected[idx]!r} (rtol={rtol}, atol={atol})")
