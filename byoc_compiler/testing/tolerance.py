"""How close a built model's output must be to the reference: the tolerance policy.

Whole models (`scons check`, the test matrix) are compared with `compare_with_bounds`: the reference
runs in float64 beside simulated float32 computations (testing/error_bound.py), which give each
output element sigma, the spread of correct float32 results. An element passes when

    |got - ref64| <= SAFETY * max(sigma, min(FLOOR * rms(sigma over the output), u * m))

SAFETY = 9.2, chosen from a measured curve (bench/tolerance_curve.py; docs/matrix.md "The allowance
factor"): twice the largest factor any of 10,056 correct float32 results needed (4.58: 10,000 random
graphs by the float32 reference, ResNet-50 and MobileNetV2 full-size and tiny by the float32
reference and onnxruntime at 1 and 2 threads (<= 1.33), 44 builds through C (<= 4.58)). Injected
bugs need far more (testing/injected.py: a bias 1e-3 off >500; one accumulation in float16 >150;
two channels swapped >40000; BatchNorm without epsilon in an 8-layer conv net >49). FLOOR = 0.5 keeps an element whose few samples happened to agree (or a ReLU output
that the samples all left at 0) from demanding exactness; m, the element's magnitude shadow
(testing/shadow.py: the graph on absolute values, sum |a_i| |b_i| for a sum of products), caps that
floor at one rounding of the magnitudes the element's own computation went through, so large
elements elsewhere in the output lend a small one nothing. sigma is 0 where the value is exact
(integers; data movement of inputs and constants): there the comparison is exact. Where sigma is
not finite but the reference is (a singularity the simulated roundings ran into: sqrt or log at 0,
a division by ~0) the allowance is SAFETY * FALLBACK * m, FALLBACK = sqrt(u): half of float32's
digits. A NaN or infinite reference is matched exactly. The check table prints the margin: the
largest |got - ref| / allowed over the outputs (pass: <= 1).

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


SAFETY = 9.2
FLOOR = 0.5
U = 2.0 ** -24                  # float32's unit roundoff
FALLBACK = 2.0 ** -12           # sqrt(U): where the estimate is not finite, half of float32's digits of m


@dataclass
class Comparison:
    passed: bool
    max_abs: float          # max |got - ref| (inf when a NaN or an infinity appears where ref has none)
    max_rel: float
    margin: float           # max |got - ref| / allowed (pass: <= 1); inf when the allowance is 0 and missed
    detail: str = ""        # the worst element of the first failing output


def allowed_error(error: np.ndarray, magnitude: np.ndarray | None = None,
                  value: np.ndarray | None = None) -> np.ndarray:
    """Per element: how far a build may be from the float64 reference, given error_bound's estimate
    `error` and the magnitude shadow m (testing/shadow.py; None: not known).

    SAFETY * max(error, floor), floor = min(FLOOR * rms(finite error over the output), u * m): the
    output-wide floor keeps an element whose few samples happened to agree from demanding exactness,
    and u * m (one rounding of the magnitudes the element went through) keeps large neighbours from
    lending a small element their allowance (where m is not finite, the first term alone). Where the
    estimate is not finite (a singularity: sqrt or log at 0, a division by ~0) the element gets
    SAFETY * FALLBACK * m (m: |value| where m is not finite either), never an unbounded allowance."""
    error = np.asarray(error, np.float64)
    if error.size == 0:
        return error
    mag = np.full(error.shape, np.inf) if magnitude is None else np.asarray(magnitude, np.float64)
    finite = np.isfinite(error)
    with np.errstate(over="ignore", invalid="ignore"):
        rms = float(np.sqrt(np.mean(np.square(error[finite])))) if finite.any() else 0.0
        known = np.isfinite(mag)
        # A shadow that overflowed (inf, or NaN from inf * 0 downstream: efficientnet_lite's 16 gated
        # blocks multiply shadows) bounds nothing, so the output-wide floor applies alone there.
        floor = np.where(known, np.minimum(FLOOR * rms, U * np.where(known, mag, 0.0)), FLOOR * rms)
        scale = np.where(known, mag, 0.0 if value is None else np.abs(np.asarray(value, np.float64)))
        return SAFETY * np.where(finite, np.maximum(error, floor), FALLBACK * np.nan_to_num(scale, posinf=0.0))


def element_shares(g, r, allowed):
    """|g - r| and its share of `allowed`; a NaN or infinite reference is matched exactly (share 0 or inf)."""
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        special = ~np.isfinite(r)
        same_special = (np.isnan(g) & np.isnan(r)) | (np.isinf(r) & (g == r))
        diff = np.where(same_special, 0.0, np.abs(g - r))
        diff = np.where(np.isnan(diff) | (special & ~same_special), np.inf, diff)   # a NaN where a number is due
        share = np.where(diff == 0, 0.0, diff / allowed)
        share = np.where(np.isnan(share) | (special & ~same_special), np.inf, share)
        rel = np.where(diff == 0, 0.0, diff / np.maximum(np.abs(r), np.finfo(np.float32).tiny))
    return diff, share, np.where(np.isnan(rel), np.inf, rel)


def _detail(i, idx, got, r, allowed, share, want) -> str:
    finite = np.isfinite(want.error[idx])
    how = (f"{SAFETY:g} x the float32 error estimate" if finite else
           f"the estimate is not finite: {SAFETY:g} x {FALLBACK:.3g} x the magnitude shadow")
    return (f"output {i}[{', '.join(map(str, idx))}]: got {got[idx]!r}, expected {float(r[idx])!r} "
            f"(allowed error {float(allowed[idx]):.3g} = {how}; {float(share[idx]):.3g} x allowed)")


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
        allowed = (allowed_error(want.error, want.magnitude, r) if got.dtype.kind == "f"
                   else np.zeros(got.shape))
        diff, share, rel = element_shares(g, r, allowed)
        max_abs, max_rel = max(max_abs, float(diff.max())), max(max_rel, float(rel.max()))
        idx = np.unravel_index(int(np.argmax(share)), share.shape)
        margin = max(margin, float(share[idx]))
        if share[idx] > 1.0 and passed:
            passed = False
            detail = _detail(i, idx, got, r, allowed, share, want)
    return Comparison(passed, max_abs, max_rel, margin, detail)


def depth_scale(atol: float, reductions: int) -> float:
    return atol * max(1.0, reductions / 4.0)


def assert_close(actual, expected, rtol: float, atol: float, what: str = "output") -> None:
    """Raise AssertionError naming the worst element when `actual` is not within tolerance of `expected`.
    Infinities and NaN are matched exactly (rtol * inf would let any value, or the other infinity, pass)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        raise AssertionError(f"{what}: got {actual.dtype}{list(actual.shape)}, "
                             f"expected {expected.dtype}{list(expected.shape)}")
    a64, e64 = actual.astype(np.float64), expected.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        special = ~np.isfinite(a64) | ~np.isfinite(e64)
        same = (a64 == e64) | (np.isnan(a64) & np.isnan(e64))
        bad = np.where(special, ~same, ~(np.abs(a64 - e64) <= atol + rtol * np.abs(e64)))
    if bad.any():
        diff = np.where(bad, np.abs(a64 - e64), -1.0)
        idx = np.unravel_index(int(np.nanargmax(np.nan_to_num(diff, nan=np.inf))), expected.shape)
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} elements differ; worst at {list(idx)}: "
                             f"got {actual[idx]!r}, expected {expected[idx]!r} (rtol={rtol}, atol={atol})")
