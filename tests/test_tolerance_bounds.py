"""The whole-model check's tolerance: correct float32 computations of deep models pass, injected bugs fail.

The correct side: the float32 numpy reference and onnxruntime (1 and 2 threads), independent
implementations, on the zoo's ResNet-50 and MobileNetV2 architectures. The bugs are what a kernel
with that defect computes, injected into one op of the float32 reference (run_reference overrides):
a bias 1e-3 off (relative), two output channels swapped, one accumulation in float16
(testing/injected.py), and BatchNorm without its epsilon in an 8-layer conv + BatchNorm net.
The full-size models are behind the realsize marker.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from byoc_compiler import zoo
from byoc_compiler.check import CheckResult, deterministic_inputs, format_table
from byoc_compiler.testing import run_reference
from byoc_compiler.testing.error_bound import reference_with_errors
from byoc_compiler.testing.injected import BUGS, calls, conv_bn_net, without_epsilon
from byoc_compiler.testing.tolerance import SAFETY, compare_with_bounds

import onnxruntime  # noqa: E402 - a test dependency (pyproject's test extras), never optional

DEEP = ["resnet50_tiny", "mobilenetv2_tiny"]


@functools.lru_cache(maxsize=2)
def _bounded(name):
    mod = zoo.get(name)
    inputs = deterministic_inputs(mod)
    return mod, inputs, reference_with_errors(mod, inputs)


def _onnxruntime(name, inputs, threads):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(zoo.onnx_model(name).SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


@pytest.mark.parametrize("name", [*DEEP, *(pytest.param(n, marks=pytest.mark.realsize) for n in zoo.FULL_SIZE)])
def test_correct_float32_computations_pass(name):
    mod, inputs, expected = _bounded(name)
    peers = {"numpy float32 reference": run_reference(mod, inputs),
             "onnxruntime 1 thread": _onnxruntime(name, inputs, 1),
             "onnxruntime 2 threads": _onnxruntime(name, inputs, 2)}
    for peer, outputs in peers.items():
        result = compare_with_bounds(outputs, expected)
        assert result.passed, (peer, result.detail)
        assert 0 < result.margin <= 1 and result.max_abs > 0, (peer, result)


def test_estimate_is_of_the_size_of_real_float32_errors():
    """Not a loose bound: onnxruntime's errors are between 1/8 and 4 times the estimated spread (measured:
    0.30 on ResNet-50, 0.26 on MobileNetV2, tiny: the estimate models one-by-one summation, onnxruntime
    sums in blocks)."""
    _, inputs, (expected,) = _bounded("resnet50_tiny")
    (peer,) = _onnxruntime("resnet50_tiny", inputs, 1)
    rms_err = np.sqrt(np.mean((peer.astype(np.float64) - expected.value) ** 2))
    rms_sigma = np.sqrt(np.mean(expected.error ** 2))
    assert rms_sigma / 8 < rms_err < 4 * rms_sigma, (rms_err, rms_sigma)


# ---- injected bugs ------------------------------------------------------------------------------

@pytest.mark.parametrize("bug", list(BUGS))
@pytest.mark.parametrize("name", DEEP)
def test_injected_bug_fails(name, bug):
    mod, inputs, expected = _bounded(name)
    op_name, index, fn = BUGS[bug]
    wrong = run_reference(mod, inputs, overrides={calls(mod, op_name)[index]: fn})
    result = compare_with_bounds(wrong, expected)
    assert not result.passed
    # Not by a hair: the weakest bug is still far beyond the allowance.
    assert result.margin > 5, result.margin
    assert f"{SAFETY:g} x the float32 error estimate" in result.detail


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_norm_without_epsilon_fails(seed):
    """8 x (conv, BatchNorm with running variances from [0.5, 2], ReLU): dropping epsilon (a relative
    change of 2.5e-6 to 1e-5 per layer) fails the check, while the correct float32 computation passes."""
    mod = conv_bn_net(seed=seed)
    inputs = deterministic_inputs(mod)
    expected = reference_with_errors(mod, inputs)
    assert compare_with_bounds(run_reference(mod, inputs), expected).passed
    result = compare_with_bounds(run_reference(mod, inputs, overrides=without_epsilon(mod)), expected)
    assert not result.passed and result.margin > 2, result


# ---- exactness, NaN ----------------------------------------------------------------------------

def test_data_movement_and_integers_are_compared_exactly():
    from byoc_compiler import op
    from byoc_compiler.ir import Function, TensorType, Tuple, Var

    x = Var("x", TensorType((2, 3, 4), "float32"))
    i = Var("i", TensorType((5,), "int32"))
    body = Tuple([op.transpose(op.reshape(x, (6, 4)), (1, 0)), op.add(i, i)])
    inputs = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7, "i": np.arange(5, dtype=np.int32)}
    expected = reference_with_errors(Function([x, i], body), inputs)
    assert all(not e.error.any() for e in expected)
    got = run_reference(Function([x, i], body), inputs)
    assert compare_with_bounds(got, expected).passed
    nudged = [got[0].copy(), got[1]]
    nudged[0][0, 0] = np.nextafter(nudged[0][0, 0], np.float32(1))
    assert not compare_with_bounds(nudged, expected).passed
    off = [got[0], got[1] + np.int32(1) * (np.arange(5) == 4)]
    assert not compare_with_bounds(off, expected).passed


def test_nan_output_never_reads_as_zero_error():
    _, inputs, expected = _bounded("mobilenetv2_tiny")
    got = [np.array(expected[0].value, np.float32)]
    got[0][0, 3] = np.nan
    result = compare_with_bounds(got, expected)
    assert not result.passed and result.max_abs == np.inf and result.margin == np.inf
    table = format_table([CheckResult("m", "gcc", "graph", "packed", "ccompiler", result.passed, result.max_abs,
                                      result.max_rel, result.detail, margin=result.margin)])
    assert "inf" in table and "FAIL" in table and "margin" in table


def test_estimate_is_deterministic():
    mod = zoo.get("resnet50_tiny")
    inputs = deterministic_inputs(mod)
    (a,), (b,) = reference_with_errors(mod, inputs), reference_with_errors(mod, inputs)
    np.testing.assert_array_equal(a.error, b.error)
    np.testing.assert_array_equal(a.value, b.value)
    assert a.value.dtype == np.float64


def test_models_that_round_to_integers_keep_the_float32_reference():
    """int(10 * 0.7f) is 6 in float64 (6.99999988) and 7 in float32 (the product rounds to 7.0): the
    float32 reference decides, as before, so a correct float32 build still compares exactly."""
    from byoc_compiler import op
    from byoc_compiler.ir import Function, TensorType, Var

    from byoc_compiler.ir.expr import const

    x = Var("x", TensorType((3,), "float32"))
    func = Function([x], op.cast(op.multiply(x, const(np.array(0.7, np.float32))), "int32"))
    inputs = {"x": np.array([10.0, 7.0, -33.0], np.float32)}
    (expected,) = reference_with_errors(func, inputs)
    np.testing.assert_array_equal(expected.value, run_reference(func, inputs)[0])
    assert expected.value[0] == 7
    assert compare_with_bounds(run_reference(func, inputs), [expected]).passed
