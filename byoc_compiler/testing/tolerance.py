"""How close a built model's output must be to the numpy reference: the tolerance policy.

An element passes when |actual - expected| <= atol + rtol * |expected| (numpy.isclose).

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

from typing import Iterable

import numpy as np

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
    from ..ir.analysis import op_counts
    from ..op.registry import get_op_def

    families: set[str] = set()
    for func in mod.functions.values():
        for name in op_counts(func):
            families.add(get_op_def(name).family)
    return families


def tolerance_for_module(mod, dtype) -> tuple[float, float]:
    """(rtol, atol) for an output of `dtype` of module `mod`: the loosest family it uses."""
    return tolerance(dtype, sorted(op_families(mod)))


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
