"""onnxruntime's quantized contrib ops (com.microsoft, what its quantizer writes in QOperator form) against
onnxruntime itself, one op at a time, on every int8/uint8 input value or seeded random data:
QLinearConcat, QLinearWhere, QLinearAveragePool, QLinearLeakyRelu, QLinearSigmoid, QLinearSoftmax;
and the QDQ average pool onnxruntime fuses into QLinearAveragePool (the 1-LSB difference of
concat-heavy QDQ CNNs, whose transition layers are 2x2 average pools; op/qnn_pool.py).

The reference interpreter and one host build per op compare with onnxruntime (1 thread). Table ops
(Concat, Where, LeakyRelu, AveragePool) are equal on every element; Sigmoid and Softmax, which
onnxruntime computes from its own exp approximations, on >= 99.9% and by at most one step.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from byoc_compiler.backend.build import build
from byoc_compiler.frontend import from_onnx
from byoc_compiler.testing.quantize import integer_session
from byoc_compiler.testing.reference import run_reference

MS = "com.microsoft"
ELEM = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8}


def _model(nodes, inputs, output, inits, opset=13):
    graph = helper.make_graph(nodes, "g", inputs, [output], [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)])
    model.ir_version = 8
    return model


def _out(dtype: str, rank: int):
    """The output's value info: its dtype and rank (sizes left to the model)."""
    return helper.make_tensor_value_info("y", ELEM[dtype], [f"d{i}" for i in range(rank)])


def _params(prefix: str, scale: float, zp: int, dtype: str) -> dict:
    return {f"{prefix}_scale": np.array(scale, np.float32), f"{prefix}_zp": np.array(zp, dtype)}


def _ort(model, feeds):
    return integer_session(model).run(None, feeds)[0]


def _all_values(dtype: str, shape) -> np.ndarray:
    """Every value of the type, repeated and shuffled (seeded) to fill `shape`."""
    info = np.iinfo(dtype)
    values = np.resize(np.arange(info.min, info.max + 1), int(np.prod(shape)))
    return np.random.default_rng(5).permutation(values).reshape(shape).astype(dtype)


def _unary(op_type: str, dtype: str, shape, x_params, y_params, **attrs):
    inits = {**_params("x", *x_params, dtype), **_params("y", *y_params, dtype)}
    node = helper.make_node(op_type, ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"], domain=MS, **attrs)
    return _model([node], [helper.make_tensor_value_info("x", ELEM[dtype], shape)],
                  _out(dtype, len(shape)), inits)


def _concat(dtype: str, shape, params, y_params):
    inits = _params("y", *y_params, dtype)
    args = ["y_scale", "y_zp"]
    for i, p in enumerate(params):
        inits.update(_params(f"x{i}", *p, dtype))
        args += [f"x{i}", f"x{i}_scale", f"x{i}_zp"]
    node = helper.make_node("QLinearConcat", args, ["y"], domain=MS, axis=1)
    inputs = [helper.make_tensor_value_info(f"x{i}", ELEM[dtype], shape) for i in range(len(params))]
    return _model([node], inputs, _out(dtype, len(shape)), inits)


def _where(dtype: str, shape, x_params, y_params, z_params):
    inits = {**_params("a", *x_params, dtype), **_params("b", *y_params, dtype), **_params("z", *z_params, dtype)}
    node = helper.make_node("QLinearWhere", ["c", "a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "z_scale", "z_zp"],
                            ["y"], domain=MS)
    inputs = [helper.make_tensor_value_info("c", TensorProto.BOOL, shape)] + \
             [helper.make_tensor_value_info(n, ELEM[dtype], shape) for n in "ab"]
    return _model([node], inputs, _out(dtype, len(shape)), inits)


# (id, model builder, exact): scales chosen so that many values land near rounding boundaries
UNARY = [
    ("avg_pool-2x2-u8", lambda: _unary("QLinearAveragePool", "uint8", (1, 8, 16, 16), (0.05, 128), (0.05, 128),
                                        kernel_shape=[2, 2], strides=[2, 2]), True),
    ("avg_pool-3x3-pad-rescale-i8", lambda: _unary("QLinearAveragePool", "int8", (1, 4, 9, 9), (0.031, -3),
                                                   (0.047, 5), kernel_shape=[3, 3], strides=[1, 1],
                                                   pads=[1, 1, 1, 1]), True),
    ("avg_pool-3x3-incl-ceil-i8", lambda: _unary("QLinearAveragePool", "int8", (1, 4, 10, 10), (0.05, 0), (0.05, 0),
                                                 kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                                 count_include_pad=1, ceil_mode=1), True),
    ("avg_pool-global-u8", lambda: _unary("QLinearAveragePool", "uint8", (1, 8, 4, 4), (0.05, 100), (0.02, 3),
                                          kernel_shape=[4, 4]), True),
    ("leaky_relu-i8", lambda: _unary("QLinearLeakyRelu", "int8", (4, 64), (0.037, 10), (0.021, -20), alpha=0.1), True),
    ("leaky_relu-u8", lambda: _unary("QLinearLeakyRelu", "uint8", (4, 64), (0.05, 128), (0.03, 100), alpha=0.2), True),
    ("sigmoid-i8", lambda: _unary("QLinearSigmoid", "int8", (4, 64), (0.06, 0), (1 / 256, -128)), False),
    ("sigmoid-u8", lambda: _unary("QLinearSigmoid", "uint8", (4, 64), (0.05, 128), (1 / 256, 0)), False),
    ("softmax-u8", lambda: _unary("QLinearSoftmax", "uint8", (64, 10), (0.1, 128), (1 / 256, 0), axis=-1,
                                  opset=13), False),
    ("softmax-i8-opset11", lambda: _unary("QLinearSoftmax", "int8", (16, 4, 10), (0.08, 0), (1 / 256, -128),
                                          axis=1, opset=11), False),
]


def _compare(model, feeds, exact: bool, build_it: bool = False, want=None):
    want = _ort(model, feeds) if want is None else want
    mod = from_onnx(model)
    got = run_reference(mod, feeds)[0]
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        assert diff.max() <= 1 and np.mean(diff == 0) >= 0.999, (diff.max(), np.mean(diff == 0))
    if build_it:
        (built,) = build(mod, toolchain="gcc", executor="aot", interface="unpacked").run_runner(list(feeds.values()))
        np.testing.assert_array_equal(built, got)


@pytest.mark.parametrize("name,make,exact", UNARY, ids=[u[0] for u in UNARY])
def test_unary_contrib_ops_equal_onnxruntime(name, make, exact):
    model = make()
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    dtype = "int8" if model.graph.input[0].type.tensor_type.elem_type == TensorProto.INT8 else "uint8"
    _compare(model, {"x": _all_values(dtype, shape)}, exact, build_it=name == "avg_pool-3x3-pad-rescale-i8")


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_concat_equals_onnxruntime_on_every_value(dtype):
    """Three inputs: one with the output's parameters (copied), two rescaled (the 256-entry table)."""
    lo = int(np.iinfo(dtype).min)
    params = [(0.043, lo + 100), (0.0173, lo + 7), (0.0291, lo + 131)]
    model = _concat(dtype, (1, 256, 2), params, params[0])
    feeds = {f"x{i}": _all_values(dtype, (1, 256, 2)) for i in range(3)}
    _compare(model, feeds, exact=True, build_it=dtype == "int8")


def test_qdq_concat_rounding_is_onnxruntimes():
    """rounding='float32' (dequantize, quantize in float32) and 'fixed_point' differ on some values; only the
    first is onnxruntime's QLinearConcat: found by search over scales, then checked value by value."""
    from byoc_compiler.ir.attrs import Attrs
    from byoc_compiler.op.qnn import concat_table
    from byoc_compiler.op.qnn_math import requantize_array, scale_ratio
    rng = np.random.default_rng(1)
    for _ in range(5000):
        s_in, s_out, z_in = float(np.float32(rng.uniform(0.01, 0.1))), float(np.float32(rng.uniform(0.01, 0.1))), 3
        attrs = Attrs(dict(input_scales=[s_in], input_zero_points=[z_in], output_scale=s_out, output_zero_point=0))
        table = concat_table(attrs, 0, "int8")
        fixed = requantize_array(np.arange(-128, 128).astype(np.int8), [scale_ratio(s_in, s_out)], (z_in,), (0,), 0,
                                 "int8")
        if np.any(table != fixed):
            break
    else:
        pytest.fail("no scales where the two roundings differ")
    model = _concat("int8", (1, 256), [(s_in, z_in)], (s_out, 0))
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    want = _ort(model, {"x0": x}).reshape(-1)
    np.testing.assert_array_equal(table, want)
    assert np.any(fixed != want)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_qlinear_where_equals_onnxruntime(dtype):
    lo = int(np.iinfo(dtype).min)
    model = _where(dtype, (4, 256), (0.02, lo + 128), (0.05, lo + 20), (0.03, lo + 100))
    cond = np.random.default_rng(3).random((4, 256)) < 0.5
    _compare(model, {"c": cond, "a": _all_values(dtype, (4, 256)), "b": _all_values(dtype, (4, 256))[::-1].copy()},
             exact=True)


def test_qdq_average_pool_is_onnxruntimes_qlinear_average_pool():
    """A QDQ 2x2 average pool with the same parameters in and out: onnxruntime fuses it into
    QLinearAveragePool (float32 average); byoc's integer mean rounded half to even differed on ~3% of the
    outputs (every output whose mean is a tie goes one way or the other by float rounding)."""
    dtype, shape = "uint8", (1, 8, 16, 16)
    inits = _params("q", 0.05, 128, dtype)
    nodes = [helper.make_node("DequantizeLinear", ["x", "q_scale", "q_zp"], ["xf"]),
             helper.make_node("AveragePool", ["xf"], ["pf"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("QuantizeLinear", ["pf", "q_scale", "q_zp"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", ELEM[dtype], shape)],
                   _out(dtype, len(shape)), inits)
    x = _all_values(dtype, shape)
    ops = {n.op.name for n in __import__("byoc_compiler").ir.post_order(from_onnx(model)["main"].body)
           if hasattr(n, "op") and hasattr(n.op, "name")}
    assert "qnn.avg_pool2d" in ops
    _compare(model, {"x": x}, exact=True)
    ties = x.reshape(1, 8, 8, 2, 8, 2).astype(np.int64).sum(axis=(3, 5)) % 4 == 2
    assert ties.mean() > 0.2                   # the test data has the ties that used to differ


# ---- MatMul beyond 2-D, float16 scales ---------------------------------------------------------------

@pytest.mark.parametrize("fmt,pc", [("qdq", True), ("qop", True), ("qop", False)])
def test_attention_block_matmuls_equal_onnxruntime(fmt, pc):
    """Quantized by onnxruntime: MatMul of a 3-D input by 2-D weights and 4-D batched MatMul of two activations
    (QLinearMatMul in QOperator form, and what onnxruntime fuses the QDQ MatMuls into), Softmax,
    Reshape/Transpose of int8 data: every MatMul an integer qnn.matmul in both forms. Every element of four
    inputs equal."""
    from byoc_compiler.ir import Call, Op, post_order
    from byoc_compiler.testing.quantize import quantized_zoo_model
    path = str(quantized_zoo_model("attention_block", fmt, pc))
    mod = from_onnx(path)
    ops = [n.op.name for n in post_order(mod["main"].body) if isinstance(n, Call) and isinstance(n.op, Op)]
    assert ops.count("qnn.matmul") == 8 and not {"nn.dense", "nn.batch_matmul"} & set(ops)
    session = integer_session(path)
    for seed in range(4):
        x = {"x": np.random.default_rng(seed).standard_normal((1, 8, 16)).astype(np.float32)}
        np.testing.assert_array_equal(run_reference(mod, x)[0], session.run(None, x)[0])


@pytest.mark.parametrize("a_shape,b_shape", [((2, 5, 7), (7, 3)), ((2, 3, 4, 6), (2, 3, 6, 5)),
                                             ((3, 4, 6), (1, 6, 2)), ((4, 6), (2, 6, 3))],
                         ids=["3d-by-2d", "4d-batched", "broadcast-b", "broadcast-a"])
def test_matmul_integer_beyond_2d_equals_numpy_and_onnxruntime(a_shape, b_shape):
    """b is a graph input, so weights_as_uint8 cannot make onnxruntime's uint8 x int8 product exact on a CPU
    without VNNI: the equal result is numpy's int64 matmul of the zero-point-shifted operands (ONNX's
    definition), and onnxruntime is asked for the same where it computes exactly (an int8 b of uint8 values
    offset by 128, the same differences)."""
    inits = {"az": np.array(7, np.uint8), "bz": np.array(-3, np.int8)}
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    model = _model([node], [helper.make_tensor_value_info("a", TensorProto.UINT8, a_shape),
                            helper.make_tensor_value_info("b", TensorProto.INT8, b_shape)],
                   helper.make_tensor_value_info("y", TensorProto.INT32, [f"d{i}" for i in range(max(len(a_shape),
                                                                                                   len(b_shape)))]),
                   inits)
    rng = np.random.default_rng(4)
    feeds = {"a": rng.integers(0, 256, a_shape).astype(np.uint8), "b": rng.integers(-128, 128, b_shape).astype(np.int8)}
    want = np.matmul(feeds["a"].astype(np.int64) - 7, feeds["b"].astype(np.int64) + 3).astype(np.int32)
    _compare(model, feeds, exact=True, build_it=a_shape == (2, 3, 4, 6), want=want)
    as_uint8 = _model([node], [helper.make_tensor_value_info("a", TensorProto.UINT8, a_shape),
                               helper.make_tensor_value_info("b", TensorProto.UINT8, b_shape)],
                      helper.make_tensor_value_info("y", TensorProto.INT32, [f"d{i}" for i in range(len(want.shape))]),
                      {"az": inits["az"], "bz": np.array(125, np.uint8)})
    np.testing.assert_array_equal(
        _ort(as_uint8, {"a": feeds["a"], "b": (feeds["b"].astype(np.int16) + 128).astype(np.uint8)}), want)


def test_float16_scales_equal_onnxruntime():
    """QuantizeLinear of float16 data with a float16 scale and its DequantizeLinear (opset 21): onnxruntime
    divides and multiplies in float32 and rounds the result to float16; byoc the same, every element."""
    inits = {"s": np.array(0.05, np.float16), "z": np.array(3, np.int8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, (4, 64))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, (4, 64))],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    x = (np.random.default_rng(0).standard_normal((4, 64)) * 5).astype(np.float16)
    got = run_reference(from_onnx(model), {"x": x})[0]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, _ort(model, {"x": x}))


# ---- standard ops the QOperator quantizer leaves on 8-bit tensors ----------------------------------------

def _on_uint8(node, rank: int, inits=None, out_type=TensorProto.UINT8):
    x = _all_values("uint8", (1, 4, 8, 8))
    out = helper.make_tensor_value_info("y", out_type, [f"d{i}" for i in range(rank)])
    return _model([node], [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)], out, inits or {}), x


# onnxruntime's registry (QPad, QMaxPool, QArgMax, QSplit, Gather, Direct8BitOp) runs these standard ops on the
# quantized tensor itself
EIGHT_BIT = [
    ("pad-zero-point", lambda: _on_uint8(helper.make_node("Pad", ["x", "pads", "cv"], ["y"]), 4,
                                         {"pads": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64),
                                          "cv": np.array(128, np.uint8)})),
    ("argmax", lambda: _on_uint8(helper.make_node("ArgMax", ["x"], ["y"], axis=1), 4, out_type=TensorProto.INT64)),
    ("max_pool", lambda: _on_uint8(helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                                    pads=[1, 1, 1, 1]), 4)),
    ("gather", lambda: _on_uint8(helper.make_node("Gather", ["x", "i"], ["y"], axis=1), 4,
                                 {"i": np.array([3, 0, 2], np.int64)})),
    ("transpose", lambda: _on_uint8(helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1]), 4)),
]


@pytest.mark.parametrize("name,make", EIGHT_BIT, ids=[e[0] for e in EIGHT_BIT])
def test_eight_bit_standard_ops_equal_onnxruntime(name, make):
    model, x = make()
    _compare(model, {"x": x}, exact=True, build_it=name == "pad-zero-point")
