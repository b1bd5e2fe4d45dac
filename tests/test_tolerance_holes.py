"""The holes a skeptical reader found in the check (issue 29), each as a case that passed before the fix.

* A non-finite error estimate (sqrt(a - b) at a == b: the simulated samples go negative and sqrt makes NaN)
  became an infinite allowance: any output passed with margin 0.
* The floor was one RMS over a whole output: small elements sharing an output with 1000x larger ones got
  the large ones' allowance. The floor is now per element, bounded by the magnitudes the element's own
  computation went through (the absolute-value shadow, sum |a_i| |b_i| propagated through the graph).
* assert_close with rtol > 0 let +inf match -inf and 0 match inf, and failed inf against inf.
* A NaN or infinite reference is matched exactly (NaN for NaN, the same infinity).
"""
from __future__ import annotations

import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.ir import Function, TensorType, Var
from byoc_compiler.ir.expr import const
from byoc_compiler.testing import run_reference
from byoc_compiler.testing.error_bound import U, reference_with_errors
from byoc_compiler.testing.tolerance import SAFETY, assert_close, compare_with_bounds


def _sqrt_of_difference():
    a, b = Var("a", TensorType((3,), "float32")), Var("b", TensorType((3,), "float32"))
    v = np.array([4.0, 9.0, 2.5], np.float32)
    func = Function([a, b], op.sqrt(op.subtract(a, b)))
    return func, {"a": v, "b": v}


@pytest.mark.parametrize("wrong", [-5.0, 1e6, 123.0, 0.1], ids=["minus5", "1e6", "123", "0.1"])
def test_non_finite_estimate_is_not_an_infinite_allowance(wrong):
    func, inputs = _sqrt_of_difference()
    (expected,) = reference_with_errors(func, inputs)
    assert not np.isfinite(expected.error).all()            # the case: samples of sqrt(-tiny) are NaN
    result = compare_with_bounds([np.full(3, wrong, np.float32)], [expected])
    assert not result.passed and result.margin > 1, result


def test_non_finite_estimate_falls_back_to_a_stated_bound():
    """A correct float32 build may compute sqrt of a rounding error instead of sqrt(0): the fallback
    (SAFETY * sqrt(u) * the element's magnitude shadow) accepts that, and nothing 100x beyond."""
    func, inputs = _sqrt_of_difference()
    (expected,) = reference_with_errors(func, inputs)
    assert compare_with_bounds(run_reference(func, inputs), [expected]).passed
    plausible = np.sqrt(U * (inputs["a"] + inputs["b"])).astype(np.float32)   # sqrt of one rounding
    assert compare_with_bounds([plausible], [expected]).passed
    assert not compare_with_bounds([100 * plausible], [expected]).passed


def _dense_with_large_neighbours(large: bool):
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 64), "float32"))
    w = (rng.standard_normal((16, 64)) * 0.1).astype(np.float32)
    w[8:] *= 1000                                            # outputs 8.. are ~1000x outputs 0..7
    func = Function([x], op.nn.dense(x, const(w if large else w[:8])))
    return func, {"x": rng.standard_normal((1, 64)).astype(np.float32)}


@pytest.mark.parametrize("large", [False, True], ids=["alone", "beside_1000x_larger"])
def test_small_elements_are_judged_by_their_own_magnitudes(large):
    func, inputs = _dense_with_large_neighbours(large)
    (expected,) = reference_with_errors(func, inputs)
    got = run_reference(func, inputs)[0].copy()
    assert compare_with_bounds([got], [expected]).passed
    got[0, :8] += np.float32(1e-3)                          # elements of size ~0.1-2, shifted by 1e-3
    result = compare_with_bounds([got], [expected])
    assert not result.passed and result.margin > 20, result


def test_floor_stays_honest_where_sums_cancel():
    """An element that is ~0 because its products cancel went through large magnitudes: a correct
    float32 build's error there is of the size of the products' rounding, and the floor allows it."""
    x = Var("x", TensorType((1, 2), "float32"))
    w = np.array([[1.0, 1.0], [1.0, -1.0]], np.float32)
    func = Function([x], op.nn.dense(x, const(w)))
    inputs = {"x": np.array([[3.0e4, 3.0e4 + 0.0078125]], np.float32)}
    (expected,) = reference_with_errors(func, inputs)
    got = [expected.value.astype(np.float32)]
    got[0][0, 1] += np.float32(2 * U * 3e4)                 # one rounding of each product's size
    assert compare_with_bounds(got, [expected]).passed
    got[0][0, 1] += np.float32(1000 * U * 3e4)
    assert not compare_with_bounds(got, [expected]).passed


@pytest.mark.parametrize("ref,got,ok", [
    (np.nan, np.nan, True), (np.nan, 0.0, False), (np.nan, np.inf, False),
    (np.inf, np.inf, True), (np.inf, -np.inf, False), (np.inf, 1.5e38, False), (-np.inf, -np.inf, True),
    (1.0, np.inf, False), (1.0, np.nan, False),
], ids=["nan_nan", "nan_0", "nan_inf", "inf_inf", "inf_-inf", "inf_max", "-inf_-inf", "1_inf", "1_nan"])
def test_non_finite_reference_is_matched_exactly(ref, got, ok):
    x = Var("x", TensorType((2,), "float32"))
    func = Function([x], op.multiply(x, const(np.float32(2.0))))
    (expected,) = reference_with_errors(func, {"x": np.array([1.5, 0.5], np.float32)})
    expected.value[1] = 2 * ref
    expected.error[1] = np.inf if not np.isfinite(ref) else expected.error[1]   # what the samples give there
    out = np.array([3.0, 2 * got], np.float32)
    assert compare_with_bounds([out], [expected]).passed is ok


@pytest.mark.parametrize("got,want,ok", [
    (np.inf, -np.inf, False), (0.0, np.inf, False), (np.inf, 0.0, False), (np.inf, np.inf, True),
    (-np.inf, -np.inf, True), (np.nan, np.inf, False), (np.inf, np.nan, False), (np.nan, np.nan, True),
    (1e30, np.inf, False),
], ids=["inf_-inf", "0_inf", "inf_0", "inf_inf", "-inf_-inf", "nan_inf", "inf_nan", "nan_nan", "1e30_inf"])
@pytest.mark.parametrize("rtol", [0.0, 1e-4, 1.0])
def test_assert_close_treats_infinities_exactly(got, want, ok, rtol):
    actual, expected = np.array([1.0, got], np.float32), np.array([1.0, want], np.float32)
    if ok:
        assert_close(actual, expected, rtol, 1e-6)
    else:
        with pytest.raises(AssertionError, match="1 of 2 elements differ"):
            assert_close(actual, expected, rtol, 1e-6)


def test_fallback_is_stated_in_the_failure():
    func, inputs = _sqrt_of_difference()
    (expected,) = reference_with_errors(func, inputs)
    result = compare_with_bounds([np.full(3, 1.0, np.float32)], [expected])
    assert "estimate is not finite" in result.detail and f"{SAFETY:g}" in result.detail, result.detail


@pytest.mark.parametrize("got,want,beyond", [
    (np.inf, np.inf, False), (-np.inf, np.inf, True), (np.nan, np.nan, False), (1.0, np.inf, True),
], ids=["inf_inf", "-inf_inf", "nan_nan", "1_inf"])
def test_debug_compare_matches_infinities_exactly(got, want, beyond):
    """debug compare/bisect judge a step as the check judges an output: the same infinity is no error."""
    from byoc_compiler.debug.error import error_of

    result = error_of(np.array([got, 1.0], np.float32), np.array([want, 1.0], np.float32))
    assert result.beyond is beyond and not np.isnan(result.max_rel), result


def test_a_scalar_output_carries_its_rounding():
    """A 0-d result (a full reduction) once lost its ops' rounding (numpy returns scalars, not arrays,
    from arithmetic on 0-d arrays), so a correct float32 result was held to exactness: random graph 6."""
    x = Var("x", TensorType((13, 4), "float32"))
    func = Function([x], op.sigmoid(op.nn.hard_swish(op.max(x))))
    inputs = {"x": np.random.default_rng(6).standard_normal((13, 4)).astype(np.float32)}
    (expected,) = reference_with_errors(func, inputs)
    assert expected.error > 0
    assert compare_with_bounds(run_reference(func, inputs), [expected]).passed


def _gated_chain(blocks: int):
    """Squeeze-excite gates in a row (efficientnet_lite's shape): x * hard_sigmoid(dense(x)). The gate's
    value stays in [0, 1] but its magnitude shadow is the dense's, and each gate multiplies the shadows,
    so they grow doubly exponentially and overflow float64 after a few blocks (inf, then inf * 0 = NaN
    in the next dense), while values and error estimates stay small."""
    rng = np.random.default_rng(3)
    x = Var("x", TensorType((1, 16), "float32"))
    y = x
    for _ in range(blocks):
        w = (rng.standard_normal((16, 16)) * 8).astype(np.float32)
        w[:, 0] = 0.0                                          # 0 * an infinite shadow: NaN
        y = op.multiply(y, op.nn.hard_sigmoid(op.nn.dense(y, const(w))))
    return Function([x], y), {"x": rng.uniform(-1, 1, (1, 16)).astype(np.float32)}


@pytest.mark.parametrize("blocks", [2, 12], ids=["shadow_finite", "shadow_overflows"])
def test_an_overflowing_shadow_leaves_the_estimate_in_charge(blocks):
    """efficientnet_lite's check failed every correct build with "allowed error nan": the shadow of its
    16 gated blocks overflowed and the per-element floor min(FLOOR * rms, u * m) became NaN. A shadow
    that is not finite says nothing about the element: the output-wide floor applies alone."""
    func, inputs = _gated_chain(blocks)
    (expected,) = reference_with_errors(func, inputs)
    assert np.isfinite(expected.value).all() and np.isfinite(expected.error).all()
    assert compare_with_bounds(run_reference(func, inputs), [expected]).passed
    wrong = run_reference(func, inputs)[0] + np.float32(1e-2) * np.abs(expected.value).max().astype(np.float32)
    result = compare_with_bounds([wrong], [expected])
    assert not result.passed and np.isfinite(result.margin), result
