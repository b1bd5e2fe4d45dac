"""TFLite import checked against TFLite's own interpreters, operator by operator (docs/tflite.md).

int8 models: byoc's reference interpreter equals TensorFlow Lite Micro (the interpreter microcontrollers
run, reference kernels) on every element. float32 models: within 1e-5 of LiteRT's reference kernels.
Models are written by byoc's .tflite writer from seeded weights (tests/tflite_models.py).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import tflite_models as tm
from byoc_compiler.load import load_model
from byoc_compiler.frontend.tflite import TFLiteUnsupportedError, from_tflite
from byoc_compiler.ir import Call, post_order
from byoc_compiler.testing.reference import run_reference

P = functools.partial
# id -> model builder taking `quantized`
OPS = {
    "conv_same_relu": P(tm.conv, padding="SAME", act="RELU"),
    "conv_valid_stride2_relu6": P(tm.conv, padding="VALID", stride=2, act="RELU6"),
    "conv_same_stride2_even": P(tm.conv, padding="SAME", stride=2, act="NONE", shape=(1, 8, 10, 3)),
    "depthwise_same": P(tm.conv, depthwise=True),
    "depthwise_mult2_stride2": P(tm.conv, depthwise=True, mult=2, stride=2, act="RELU6"),
    "fully_connected": tm.fully_connected,
    "fully_connected_per_channel_relu": P(tm.fully_connected, per_channel=True, act="RELU"),
    "flatten_hwc_fully_connected": P(tm.fully_connected, flatten_from=(3, 4, 5)),
    "add": tm.binary,
    "add_broadcast_relu": P(tm.binary, act="RELU", broadcast=True),
    "mul": P(tm.binary, op="MUL"),
    "sub_broadcast_relu": P(tm.binary, op="SUB", act="RELU", broadcast=True),
    "mul_relu6": P(tm.binary, op="MUL", act="RELU6"),
    "average_pool_same": tm.pool,
    "average_pool_valid": P(tm.pool, padding="VALID", size=2),
    "max_pool_same": P(tm.pool, op="MAX_POOL_2D"),
    "max_pool_valid_relu": P(tm.pool, op="MAX_POOL_2D", padding="VALID", act="RELU"),
    "small_cnn": tm.small_cnn,
    "softmax": P(tm.activation, op="SOFTMAX"),
    "softmax_beta": P(tm.activation, op="SOFTMAX", shape=(3, 17), beta=0.5),
    "logistic": P(tm.activation, op="LOGISTIC"),
    "tanh": P(tm.activation, op="TANH", shape=(4, 64)),
    "conv_softmax_over_channels": tm.conv_softmax,
    "batch_matmul": tm.batch_matmul,
    "batch_matmul_adj_y": P(tm.batch_matmul, adj_y=True),
    "mean_hw_keep": tm.reduce,
    "mean_last_axis": P(tm.reduce, axes=(1,), shape=(16, 32)),
    "sum_axis1": P(tm.reduce, op="SUM", axes=(1,), keep=False, shape=(2, 9, 5)),
    "rsqrt": tm.rsqrt,
    "resize_nearest": tm.resize,
    "resize_nearest_align_corners": P(tm.resize, size=(9, 3), align=True),
    "resize_nearest_half_pixel": P(tm.resize, size=(3, 11), half=True),
    "resize_bilinear": P(tm.resize, op="RESIZE_BILINEAR"),
    "resize_bilinear_align_corners": P(tm.resize, op="RESIZE_BILINEAR", size=(9, 3), align=True),
    "resize_bilinear_half_pixel": P(tm.resize, op="RESIZE_BILINEAR", size=(3, 11), half=True),
    "space_to_batch": tm.space_batch,
    "batch_to_space": P(tm.space_batch, op="BATCH_TO_SPACE_ND", shape=(12, 3, 4, 2)),
    "arg_max": tm.arg_max,
    "arg_max_axis1": P(tm.arg_max, axis=1),
    "prelu": tm.prelu,
    "transpose_conv_same_stride2": tm.transpose_conv,
    "transpose_conv_valid_stride2": P(tm.transpose_conv, padding="VALID"),
    "transpose_conv_same_stride3_k2_no_bias": P(tm.transpose_conv, stride=3, kernel=2, bias=False),
    "transpose_conv_same_stride1_k5": P(tm.transpose_conv, stride=1, kernel=5, shape=(1, 6, 4, 2)),
    "l2_normalization": tm.l2_normalization,
    "l2_normalization_2d": P(tm.l2_normalization, shape=(5, 33)),
    "leaky_relu": tm.leaky_relu,
    "leaky_relu_negative_alpha": P(tm.leaky_relu, alpha=-0.3),
    "hard_swish": tm.hard_swish,
    "hard_swish_wide_input": P(tm.hard_swish, scales=(0.1, 0.03)),
    "hard_swish_narrow_input": P(tm.hard_swish, scales=(0.005, 0.02)),
}


# TensorFlow Lite Micro's SPACE_TO_BATCH_ND never sets its pad value (it pads with whatever its arena held):
# LiteRT's reference kernels are the oracle there
LITERT_ORACLE = {"space_to_batch"}


@pytest.mark.parametrize("case", sorted(OPS))
def test_int8_equals_tflite_micro(case):
    data = OPS[case](True)
    mod = from_tflite(data)
    for seed in (0, 1):
        inputs = tm.random_inputs(data, seed)
        ours = run_reference(mod, inputs)
        want = (tm.run_litert if case in LITERT_ORACLE else tm.run_tflm)(data, inputs)
        for got, peer in zip(ours, want):
            assert got.dtype == peer.dtype and got.shape == peer.shape
            np.testing.assert_array_equal(got, peer)


@pytest.mark.parametrize("case", sorted(OPS))
def test_float32_within_tolerance_of_litert(case):
    data = OPS[case](False)
    inputs = tm.random_inputs(data, 0)
    for got, peer in zip(run_reference(from_tflite(data), inputs), tm.run_litert(data, inputs)):
        np.testing.assert_allclose(got, peer, rtol=1e-5, atol=1e-5)


def test_sub_float_equals_litert():
    data = tm.binary(False, op="SUB")
    inputs = tm.random_inputs(data, 0)
    np.testing.assert_allclose(run_reference(from_tflite(data), inputs)[0], tm.run_litert(data, inputs)[0],
                               rtol=1e-6, atol=1e-6)


def test_buffers_after_the_flatbuffer_import_like_inline_ones():
    """Buffer.offset/size (models over 2 GB keep their weights after the flatbuffer)."""
    m = tm.Maker(True, seed=9)
    x = m.act("x", (1, 6))
    k = m.weight("k", (3, 6), per_channel=False)
    y = m.act("y", (1, 3))
    m.w.op("FULLY_CONNECTED", [x, k, -1], [y])
    inline = m.w.finish([x], [y])
    external = m.w.finish([x], [y], external_buffers=True)
    assert len(external) > len(inline)
    inputs = tm.random_inputs(inline, 3)
    np.testing.assert_array_equal(run_reference(from_tflite(external), inputs)[0], tm.run_tflm(inline, inputs)[0])


def _transposes(mod) -> int:
    return sum(1 for e in post_order(mod["main"].body) if isinstance(e, Call) and e.op.name == "transpose")


@pytest.mark.parametrize("quantized", [False, True], ids=["float32", "int8"])
def test_nhwc_model_holds_transposes_only_at_its_input_and_output(quantized):
    """The imported CNN keeps its activations NCHW between the input and the classifier: one transpose
    for the input, none at the output (the flatten before the classifier is folded into its weights)."""
    mod = from_tflite(tm.small_cnn(quantized))
    assert _transposes(mod) == 1


def test_load_model_reads_tflite_files(tmp_path):
    path = tmp_path / "cnn.tflite"
    path.write_bytes(tm.small_cnn(True))
    mod = load_model(str(path))
    assert [p.name_hint for p in mod["main"].params] == ["input"]
    assert mod["main"].attrs["output_names"] == ("logits",)


def test_space_to_batch_pads_with_the_zero_point_like_litert():
    """int8 SPACE_TO_BATCH_ND pads with the zero point (the real 0), as LiteRT does (TensorFlow Lite Micro's
    kernel never sets its pad value: it pads with what its arena held)."""
    m = tm.Maker(True, seed=13)
    x = m.act("x", (1, 3, 3, 2), scale=0.05, zp=7)
    tq = m.w.tensors[x]
    y = m.w.tensor("y", (4, 2, 2, 2), "int8", scale=tq.scale, zero_point=tq.zero_point)
    m.w.op("SPACE_TO_BATCH_ND", [x, m.ints("block", [2, 2]), m.ints("pads", [[1, 0], [1, 0]])], [y])
    data = m.finish([x], [y])
    inputs = tm.random_inputs(data, 0)
    got = run_reference(from_tflite(data), inputs)[0]
    np.testing.assert_array_equal(got, tm.run_litert(data, inputs)[0])
    assert (got[0] == 7).sum() == 6      # the padded row and column of the first block


@pytest.mark.parametrize("act", ["NONE", "RELU6"])
def test_int8_div_equals_tflite_micro_on_every_pair(act):
    """int8 DIV (a 256 x 256 table of TFLite's integer quotients, looked up): every pair of int8 inputs whose
    divisor is not its zero point (TFLite leaves division by zero undefined) equals TensorFlow Lite Micro,
    except where TFLM's last rescale shifts an int32 right by more than 31 (undefined in C++, a saturated
    output from its x86 build: a dividend within a few steps of its zero point over a large divisor); there
    byoc's output is the true quotient rounded (within half a step)."""
    m = tm.Maker(True, seed=18)
    n = 64 * 255            # a quarter of the dividends per run (TFLM's default arena)
    a, b = m.act("a", (n,), scale=0.05, zp=3), m.act("b", (n,), scale=0.02, zp=-7)
    y = m.act("y", (n,), scale=0.4, zp=-2)
    m.w.op("DIV", [a, b], [y], fused_activation_function=act)
    data = m.finish([a, b], [y])
    mod = from_tflite(data)
    values = np.arange(-128, 128)
    divisors = values[values != -7]
    undefined_pairs = 0
    for quarter in range(4):
        dividends = values[quarter * 64:(quarter + 1) * 64]
        inputs = {"a": np.repeat(dividends, 255).astype(np.int8), "b": np.tile(divisors, 64).astype(np.int8)}
        got, want = run_reference(mod, inputs)[0], tm.run_tflm(data, inputs, 1 << 18)[0]
        undefined = _div_shift(inputs["a"].astype(np.int64) - 3, inputs["b"].astype(np.int64) + 7) < -31
        undefined_pairs += undefined.sum()
        np.testing.assert_array_equal(got[~undefined], want[~undefined])
        exact = (inputs["a"][undefined] - 3.0) * 0.05 / ((inputs["b"][undefined] + 7.0) * 0.02) / 0.4 - 2
        assert not undefined.any() or np.abs(got[undefined] - exact).max() <= 0.5 + 1e-6
    assert 0 < undefined_pairs < 0.05 * 256 * 255


def _div_shift(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exponent of TFLite DIV's last rescale (its output multiplier's, less the reciprocal's bits over one
    and the dividend's headroom), computed independently of byoc's table with Python's integers."""
    e = math.frexp(float(np.float32(0.05)) / (float(np.float32(0.02)) * float(np.float32(0.4))))[1]
    out = []
    for x, y in zip(a.tolist(), b.tolist()):
        x, y = (-x, -y) if y < 0 else (x, y)
        headroom = 31 if x in (0, -1) else 32 - (x if x > 0 else ~x).bit_length() - 1
        out.append(e - (y.bit_length() - 1) - headroom)
    return np.asarray(out)


def test_float32_div_within_tolerance_of_litert():
    data = tm.binary(False, op="DIV")
    inputs = tm.random_inputs(data, 0)
    np.testing.assert_allclose(run_reference(from_tflite(data), inputs)[0], tm.run_litert(data, inputs)[0],
                               rtol=1e-5, atol=1e-5)


def test_int16_mean_equals_tflite_micro():
    """MEAN on int16 (zero point 0, as TFLite requires) is the same qnn.mean: equal to TFLM on every element."""
    m = tm.Maker(True, seed=10)
    x = m.w.tensor("x", (1, 5, 6, 7), "int16", scale=0.001, zero_point=0)
    y = m.w.tensor("y", (1, 1, 1, 7), "int16", scale=0.0007, zero_point=0)
    m.w.op("MEAN", [x, m.ints("axes", [1, 2])], [y], keep_dims=True)
    data = m.finish([x], [y])
    for seed in (0, 1):
        inputs = tm.random_inputs(data, seed)
        got = run_reference(from_tflite(data), inputs)[0]
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, tm.run_tflm(data, inputs)[0])


# 16x8 (int16 activations, zero point 0; int8 weights; int64 biases): id -> model builder taking `quantized`
OPS_16X8 = {
    "conv_same_relu": P(tm.conv, padding="SAME", act="RELU", int16=True),
    "conv_bias_past_int32": P(tm.conv, act="NONE", int16=True, bias_bits=34, out_scale=0.2),
    "depthwise_mult2_stride2_relu6": P(tm.conv, depthwise=True, mult=2, stride=2, act="RELU6", int16=True),
    "fully_connected": P(tm.fully_connected, int16=True),
    "fully_connected_per_channel_relu": P(tm.fully_connected, per_channel=True, act="RELU", int16=True),
    "flatten_hwc_fully_connected": P(tm.fully_connected, flatten_from=(3, 4, 5), int16=True),
    "add_broadcast_relu": P(tm.binary, act="RELU", broadcast=True, int16=True),
    "sub": P(tm.binary, op="SUB", int16=True),
    "mul": P(tm.binary, op="MUL", int16=True, out_scale=0.01),
    "average_pool_same": P(tm.pool, int16=True),
    "max_pool_valid": P(tm.pool, op="MAX_POOL_2D", padding="VALID", size=2, int16=True),
    "small_cnn": P(tm.small_cnn, int16=True),
}


def _no_bias_16x8(bias_dtype):
    """A 16x8 CONV_2D without a bias, or with an int32 one (TFLite then sums in int32 and rescales with its
    32-bit MultiplyByQuantizedMultiplier; without a bias, in int64 with the 64-bit one)."""
    m = tm.Maker(True, seed=21, int16=True)
    x = m.act("x", (1, 6, 6, 5))
    k = m.weight("k", (3, 3, 3, 5), axis=0)
    b = -1 if bias_dtype is None else m.w.tensor("b", (3,), "int32", data=m.rng.integers(-30000, 30000, 3),
                                                 scale=[1.0] * 3, zero_point=0)
    y = m.act("y", (1, 6, 6, 3), scale=0.0003)
    m.w.op("CONV_2D", [x, k, b], [y], padding="SAME", stride_w=1, stride_h=1)
    return m.finish([x], [y])


OPS_16X8["conv_no_bias"] = lambda quantized: _no_bias_16x8(None)
OPS_16X8["conv_int32_bias"] = lambda quantized: _no_bias_16x8("int32")


@pytest.mark.parametrize("case", sorted(OPS_16X8))
def test_16x8_equals_tflite_micro(case):
    """TFLite's 16x8 quantization: byoc's reference equals TensorFlow Lite Micro on every element, and the
    outputs are not mostly saturated (the case tests the rescale, not the clamp)."""
    data = OPS_16X8[case](True)
    mod = from_tflite(data)
    for seed in (0, 1):
        inputs = tm.random_inputs(data, seed)
        got, want = run_reference(mod, inputs)[0], tm.run_tflm(data, inputs)[0]
        assert got.dtype == want.dtype == np.int16
        np.testing.assert_array_equal(got, want)
        assert np.mean(np.abs(want.astype(np.int32)) >= 32767) < 0.05


def test_16x8_sums_in_int64_unless_the_bias_is_int32():
    """With an int64 bias (or none) the 16x8 layers sum into int64 (qnn.conv2d/qnn.dense out_dtype), which
    qnn.requantize rescales with TFLite's 64-bit MultiplyByQuantizedMultiplier; with an int32 bias, int32 and
    the 32-bit one (conv_no_bias and conv_int32_bias above equal TFLM only so)."""
    def accumulators(data):
        return {e.attrs["out_dtype"] for e in post_order(from_tflite(data)["main"].body)
                if isinstance(e, Call) and e.op.name in ("qnn.conv2d", "qnn.dense")}
    assert accumulators(OPS_16X8["conv_bias_past_int32"](True)) == {"int64"}
    assert accumulators(OPS_16X8["small_cnn"](True)) == {"int64"}
    assert accumulators(_no_bias_16x8(None)) == {"int64"}
    assert accumulators(_no_bias_16x8("int32")) == {"int32"}


def test_16x8_model_with_float_input_and_output_equals_tflite_micro():
    """QUANTIZE float32 -> int16, a 16x8 CONV_2D, DEQUANTIZE int16 -> float32 (a converted model that keeps
    float32 at its ends): equal to TFLM on every element."""
    m = tm.Maker(True, seed=24, int16=True)
    xf, yf = m.w.tensor("xf", (1, 6, 6, 3), "float32"), m.w.tensor("yf", (1, 6, 6, 4), "float32")
    x = m.act("x", (1, 6, 6, 3), scale=0.0002)
    k = m.weight("k", (4, 3, 3, 3), axis=0)
    b = m.bias("b", 4, m.scale(x), k)
    y = m.act("y", (1, 6, 6, 4), scale=0.0003)
    m.w.op("QUANTIZE", [xf], [x])
    m.w.op("CONV_2D", [x, k, b], [y], padding="SAME", stride_w=1, stride_h=1)
    m.w.op("DEQUANTIZE", [y], [yf])
    data = m.finish([xf], [yf])
    inputs = {"xf": (np.random.default_rng(0).standard_normal((1, 6, 6, 3)) * 2).astype(np.float32)}
    np.testing.assert_array_equal(run_reference(from_tflite(data), inputs)[0], tm.run_tflm(data, inputs)[0])


def _int16_model(op, zero_point=0, out_scale=None, **options):
    m = tm.Maker(True, seed=22, int16=True)
    x = m.w.tensor("x", (2, 8), "int16", scale=0.001, zero_point=zero_point)
    out_q = out_scale or {"SOFTMAX": 1 / 32768, "LOGISTIC": 1 / 32768, "TANH": 1 / 32768}.get(op, 0.001)
    y = m.w.tensor("y", (2, 8), "int16", scale=out_q, zero_point=0)
    inputs = [x, x] if op == "ADD" else [x]
    m.w.op(op, inputs, [y], **options)
    return m.finish([x], [y])


def _softmax_16x8(shape, scale, beta=1.0):
    m = tm.Maker(True, seed=23, int16=True)
    x = m.w.tensor("x", shape, "int16", scale=scale, zero_point=0)
    y = m.w.tensor("y", shape, "int16", scale=1 / 32768, zero_point=0)
    m.w.op("SOFTMAX", [x], [y], beta=beta)
    return m.finish([x], [y])


SOFTMAX_16X8 = {"rows": ((16, 33), 0.0003, 1.0), "beta": ((8, 5), 0.002, 0.7), "fine": ((8, 64), 0.00005, 1.0),
                "coarse": ((64, 40), 0.01, 1.0)}


@pytest.mark.parametrize("case", sorted(SOFTMAX_16X8))
def test_16x8_softmax_equals_tflite_micro(case):
    """int16 SOFTMAX (TFLite's interpolated exp and 1/(1+x) tables, op/tflite_softmax16.py): every element
    equals TensorFlow Lite Micro's, on full-range inputs and on inputs 64 times narrower."""
    data = _softmax_16x8(*SOFTMAX_16X8[case])
    mod = from_tflite(data)
    for seed in (0, 1):
        inputs = tm.random_inputs(data, seed)
        inputs["x"] = inputs["x"] // (64 if seed else 1)
        np.testing.assert_array_equal(run_reference(mod, inputs)[0], tm.run_tflm(data, inputs, 1 << 16)[0])


def test_16x8_softmax_takes_every_difference_like_tflite_micro():
    """Rows (32767, v) for every int16 v: every exp table entry and its interpolation, equal to TFLM."""
    data = _softmax_16x8((65536, 2), 0.0002)
    v = np.arange(-32768, 32768).astype(np.int16)
    inputs = {"x": np.stack([np.full_like(v, 32767), v], axis=1)}
    np.testing.assert_array_equal(run_reference(from_tflite(data), inputs)[0],
                                  tm.run_tflm(data, inputs, 1 << 20)[0])


INT16_REFUSALS = {
    "softmax_scale": (lambda: _int16_model("SOFTMAX", beta=1.0, out_scale=1 / 256),
                      "int16 SOFTMAX needs the output scale 3.0517578125e-05"),
    "logistic": (lambda: _int16_model("LOGISTIC"), "int16 LOGISTIC (16x8 quantization) is not supported"),
    "tanh": (lambda: _int16_model("TANH"), "int16 TANH (16x8 quantization) is not supported"),
    "asymmetric": (lambda: _int16_model("ADD", zero_point=5),
                   "int16 tensor 'x' has zero point [5]; TFLite's 16x8 quantization is symmetric"),
}


@pytest.mark.parametrize("case", sorted(INT16_REFUSALS))
def test_int16_operators_byoc_does_not_take_get_one_clear_refusal(case):
    make, words = INT16_REFUSALS[case]
    with pytest.raises(TFLiteUnsupportedError) as info:
        from_tflite(make())
    assert [words in p.reason for p in info.value.problems] == [True]
