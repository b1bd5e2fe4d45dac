"""The whole-model check's tolerance: correct float32 computations of deep models pass, injected bugs fail.

The correct side: the float32 numpy reference and onnxruntime (1 and 2 threads), independent
implementations, on the zoo's ResNet-50 and MobileNetV2 architectures. The bugs are what a kernel
with that defect computes, injected into one op of the float32 reference (run_reference overrides):
a bias 1e-3 off (relative), two output channels swapped, one accumulation in float16.
The full-size models are behind the realsize marker.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from byoc_compiler import zoo
from byoc_compiler.check import CheckResult, deterministic_inputs, format_table
from byoc_compiler.ir import Call, post_order
from byoc_compiler.testing import run_reference
from byoc_compiler.testing.error_bound import reference_with_errors
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
    """Not a loose bound: onnxruntime's errors are between 1/50 and 4 times the estimated spread."""
    _, inputs, (expected,) = _bounded("resnet50_tiny")
    (peer,) = _onnxruntime("resnet50_tiny", inputs, 1)
    rms_err = np.sqrt(np.mean((peer.astype(np.float64) - expected.value) ** 2))
    rms_sigma = np.sqrt(np.mean(expected.error ** 2))
    assert rms_sigma / 50 < rms_err < 4 * rms_sigma, (rms_err, rms_sigma)


# ---- injected bugs ------------------------------------------------------------------------------

def _calls(mod, op_name):
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call) and getattr(n.op, "name", "") == op_name]


def bias_off(args, attrs, ref):
    """bias_add with the bias 1e-3 too large (relative)."""
    return ref([args[0], (args[1] * np.float32(1.001)).astype(np.float32)], attrs)


def channels_swapped(args, attrs, ref):
    out = np.array(ref(args, attrs))
    out[:, [0, 1]] = out[:, [1, 0]]
    return out


def dense_float16(args, attrs, ref):
    """x @ w.T accumulated in a float16 register (products rounded to float16, one by one)."""
    x, w = args[0], args[1]
    acc = np.zeros((x.shape[0], w.shape[0]), np.float16)
    for k in range(x.shape[1]):
        acc = (acc + (x[:, k:k + 1] * w[None, :, k]).astype(np.float16)).astype(np.float16)
    return acc.astype(np.float32)


def conv_float16(args, attrs, ref):
    """conv2d with every output's sum over (channel, ky, kx) accumulated in float16: the float32 result
    of each kernel tap, summed in float16."""
    x, w = args[0], args[1]
    acc = np.zeros(ref(args, attrs).shape, np.float16)
    for c in range(w.shape[1]):
        for ky in range(w.shape[2]):
            for kx in range(w.shape[3]):
                one = np.zeros_like(w)
                one[:, c, ky, kx] = w[:, c, ky, kx]
                acc = (acc + ref([x, one], attrs).astype(np.float16)).astype(np.float16)
    return acc.astype(np.float32)


BUGS = {
    "bias_1e-3_off_in_fc": ("nn.bias_add", -1, bias_off),
    "channels_swapped_early_conv": ("nn.conv2d", 2, channels_swapped),
    "channels_swapped_last_conv": ("nn.conv2d", -1, channels_swapped),
    "fc_accumulates_in_float16": ("nn.dense", -1, dense_float16),
    "conv_accumulates_in_float16": ("nn.conv2d", 1, conv_float16),
}


@pytest.mark.parametrize("bug", list(BUGS))
@pytest.mark.parametrize("name", DEEP)
def test_injected_bug_fails(name, bug):
    mod, inputs, expected = _bounded(name)
    op_name, index, fn = BUGS[bug]
    wrong = run_reference(mod, inputs, overrides={_calls(mod, op_name)[index]: fn})
    result = compare_with_bounds(wrong, expected)
    assert not result.passed
    # Not by a hair: the weakest bug is still far beyond the allowance.
    assert result.margin > 5, result.margin
    assert f"{SAFETY:g} x the float32 error estimate" in result.detail


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
