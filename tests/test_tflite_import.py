"""TFLite import checked against TFLite's own interpreters, operator by operator (docs/tflite.md).

int8 models: byoc's reference interpreter equals TensorFlow Lite Micro (the interpreter microcontrollers
run, reference kernels) on every element. float32 models: within 1e-5 of LiteRT's reference kernels.
Models are written by byoc's .tflite writer from seeded weights (tests/tflite_models.py).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import tflite_models as tm
from byoc_compiler.load import load_model
from byoc_compiler.frontend.tflite import from_tflite
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
}


@pytest.mark.parametrize("case", sorted(OPS))
def test_int8_equals_tflite_micro(case):
    data = OPS[case](True)
    mod = from_tflite(data)
    for seed in (0, 1):
        inputs = tm.random_inputs(data, seed)
        ours = run_reference(mod, inputs)
        want = tm.run_tflm(data, inputs)
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
