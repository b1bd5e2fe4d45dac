"""How far a result is from its reference: the error statistics of debug compare, bisect and profile."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..check import default_tolerances
from ..testing.tolerance import element_shares


@dataclass(frozen=True)
class Error:
    max_abs: float
    max_rel: float
    margin: float                  # share of the tolerance used by the worst element (> 1: beyond)
    worst: tuple = ()              # index of that element
    got: float = 0.0
    want: float = 0.0
    note: str = ""                 # a shape/dtype mismatch or a missing value

    @property
    def beyond(self) -> bool:
        return not self.margin <= 1.0


def error_of(got: np.ndarray, want: np.ndarray, tolerances=None, allowed=None) -> Error:
    """How far `got` is from `want`: with `allowed` (per element, e.g. testing.tolerance.allowed_error of the
    float64 reference's error estimate, as `scons check` judges outputs), margin = |got - want| / allowed;
    otherwise under per-dtype rtol/atol (check.default_tolerances)."""
    got = np.asarray(got)
    got = got.astype(got.dtype.newbyteorder("="), copy=False)
    want = np.asarray(want)
    if got.shape != want.shape or (allowed is None and got.dtype != want.dtype):
        return Error(math.inf, math.inf, math.inf,
                     note=f"got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
    if want.size == 0:
        return Error(0.0, 0.0, 0.0)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if allowed is None:
        rtol, atol = (tolerances or default_tolerances)(want.dtype)
        allowed = atol + rtol * np.abs(w)
    diff, share, rel = element_shares(g, w, np.asarray(allowed, np.float64))
    idx = np.unravel_index(int(np.argmax(share)), want.shape)
    return Error(float(diff.max()), float(rel.max()), float(share[idx]), tuple(int(i) for i in idx),
                 float(g[idx]), float(w[idx]))


def worst_error(pairs, tolerances=None) -> Error:
    """The error of the worst (largest margin) of several (got, want) pairs."""
    return worst([error_of(g, w, tolerances) for g, w in pairs])


def worst(errors) -> Error:
    """The error with the largest margin (none: zero)."""
    return max(errors, key=lambda e: e.margin) if errors else Error(0.0, 0.0, 0.0)
