"""print -> parse -> print is stable on every zoo model and on models using every op with
non-default attributes; the parsed model computes bit-identical results."""
from __future__ import annotations

import numpy as np
import pytest

from byoc_compiler import op, zoo
from byoc_compiler.ir import Function, IRModule, TensorType, Tuple, TupleGetItem, Var, astext, const, op_counts
from byoc_compiler.text import parse
from byoc_compiler.op.registry import all_ops
from byoc_compiler.testing import run_reference
from byoc_compiler.transform.infer_type import TypeInferenceError, infer_type

RNG = np.random.default_rng(7)


def w(*shape):
    return const(RNG.standard_normal(shape).astype(np.float32))


def _x(shape=(1, 4, 6, 6), dtype="float32"):
    return Var("x", TensorType(shape, dtype))


def _single(build, shape=(1, 4, 6, 6), dtype="float32"):
    x = _x(shape, dtype)
    return Function([x], build(x))


# One model per op (with attributes away from their defaults where the op has any).
OP_MODELS = {
    "add": lambda: _single(lambda x: op.add(x, w(6))),
    "subtract": lambda: _single(lambda x: op.subtract(w(4, 1, 1), x)),
    "multiply": lambda: _single(lambda x: op.multiply(x, const(np.float32(0.5)))),
    "divide": lambda: _single(lambda x: op.divide(x, const(np.array([2, -3], np.int32))), (3, 2), "int32"),
    "maximum": lambda: _single(lambda x: op.maximum(x, w(1, 4, 1, 1))),
    "minimum": lambda: _single(lambda x: op.minimum(x, const(np.float32(0.25)))),
    "negative": lambda: _single(op.negative),
    "abs": lambda: _single(op.abs),
    "exp": lambda: _single(op.exp),
    "log": lambda: _single(lambda x: op.log(op.abs(x))),
    "sqrt": lambda: _single(lambda x: op.sqrt(op.abs(x))),
    "tanh": lambda: _single(op.tanh),
    "sigmoid": lambda: _single(op.sigmoid),
    "nn.relu": lambda: _single(op.nn.relu),
    "clip": lambda: _single(lambda x: op.clip(x, -0.5, 1.25)),
    "nn.leaky_relu": lambda: _single(lambda x: op.nn.leaky_relu(x, alpha=0.125)),
    "cast": lambda: _single(lambda x: op.cast(x, "int32")),
    "nn.conv2d": lambda: _single(lambda x: op.nn.conv2d(x, w(6, 2, 3, 3), strides=(2, 1), padding=(1, 0, 2, 1),
                                                        dilation=(1, 2), groups=2, channels=6, kernel_size=(3, 3))),
    "nn.max_pool2d": lambda: _single(lambda x: op.nn.max_pool2d(x, pool_size=(3, 2), strides=2, padding=1,
                                                                ceil_mode=True)),
    "nn.avg_pool2d": lambda: _single(lambda x: op.nn.avg_pool2d(x, pool_size=3, strides=(2, 1), padding=(1, 1, 0, 0),
                                                                count_include_pad=True, dilation=(1, 2))),
    "nn.global_avg_pool2d": lambda: _single(op.nn.global_avg_pool2d),
    "reshape": lambda: _single(lambda x: op.reshape(x, (0, -1, 9))),
    "transpose": lambda: _single(lambda x: op.transpose(x, (0, 2, 3, 1))),
    "concatenate": lambda: _single(lambda x: op.concatenate([x, op.nn.relu(x)], axis=-3)),
    "split": lambda: _single(lambda x: TupleGetItem(op.split(x, (1, 3), axis=2), 1)),
    "squeeze": lambda: _single(lambda x: op.squeeze(x, axis=[0])),
    "expand_dims": lambda: _single(lambda x: op.expand_dims(x, -2, 2)),
    "nn.batch_flatten": lambda: _single(op.nn.batch_flatten),
    "take": lambda: _single(lambda x: op.take(x, const(np.array([[0, 5], [2, 9]], np.int32)), axis=3, mode="wrap")),
    "nn.pad": lambda: _single(lambda x: op.nn.pad(x, ((0, 0), (0, 0), (1, 2), (2, 1)), pad_mode="reflect")),
    "nn.dropout": lambda: _single(lambda x: op.nn.dropout(x, rate=0.25)),
    "nn.dense": lambda: _single(lambda x: op.nn.dense(x, w(3, 5), units=3), (2, 5)),
    "nn.matmul": lambda: _single(lambda x: op.nn.matmul(x, w(3, 5), transpose_a=True, transpose_b=True), (5, 2)),
    "nn.bias_add": lambda: _single(lambda x: op.nn.bias_add(x, w(6), axis=-1)),
    "nn.batch_norm": lambda: _single(lambda x: Tuple(list(op.nn.batch_norm(
        x, w(6), w(6), w(6), const(np.abs(RNG.standard_normal(6)).astype(np.float32) + 0.5), axis=3, epsilon=1e-3,
        center=False)[i] for i in range(3)))),
    "nn.softmax": lambda: _single(lambda x: op.nn.softmax(x, axis=1)),
    "nn.lrn": lambda: _single(lambda x: op.nn.lrn(x, size=3, bias=1.0, alpha=0.5, beta=0.5)),
    "power": lambda: _single(lambda x: op.power(op.abs(x), w(6))),
    "erf": lambda: _single(op.erf),
    "nn.hard_sigmoid": lambda: _single(lambda x: op.nn.hard_sigmoid(x, alpha=0.25, beta=0.375)),
    "nn.hard_swish": lambda: _single(op.nn.hard_swish),
    "nn.gelu": lambda: _single(lambda x: op.nn.gelu(x, approximate="tanh")),
    **{name: (lambda name=name: _single(lambda x: op.cast(getattr(op, name)(x, w(6)), "float32")))
       for name in ("equal", "less", "greater", "less_equal", "greater_equal")},
    **{name: (lambda name=name: _single(lambda x: op.cast(getattr(op, name)(
        op.greater(x, w(6)), op.less(x, w(1, 1, 1))), "float32")))
       for name in ("logical_and", "logical_or", "logical_xor")},
    "logical_not": lambda: _single(lambda x: op.cast(op.logical_not(op.greater(x, w(6))), "float32")),
    "where": lambda: _single(lambda x: op.where(op.greater(x, w(6)), x, w(1, 6))),
    **{name: (lambda name=name: _single(lambda x: getattr(op, name)(x, axis=(1, -1), keepdims=True)))
       for name in ("sum", "mean", "max", "min", "prod")},
    "argmax": lambda: _single(lambda x: op.argmax(x, axis=2, keepdims=False, select_last_index=True)),
    "argmin": lambda: _single(lambda x: op.argmin(x, axis=-1)),
    "strided_slice": lambda: _single(lambda x: op.strided_slice(x, (0, 1, 5, -1), (1, 4, 0, -100), (1, 2, -2, -1))),
    "tile": lambda: _single(lambda x: op.tile(x, (1, 2, 1, 3))),
    "broadcast_to": lambda: _single(lambda x: op.broadcast_to(x, (2, 4, 6, 6))),
    "nn.batch_matmul": lambda: _single(lambda x: op.nn.batch_matmul(x, w(4, 6, 5), transpose_a=True)),
    "nn.layer_norm": lambda: _single(lambda x: op.nn.layer_norm(x, w(6, 6), w(6), axis=2, epsilon=1e-3)),
    "image.resize": lambda: _single(lambda x: op.resize(x, (1, 4, 9, 4), (1.0, 1.0, 1.5, 0.75), method="cubic",
                                                        coordinate_transformation_mode="align_corners",
                                                        cubic_coeff_a=-0.5, exclude_outside=True)),
}


def _q(name, *args, **attrs):
    from byoc_compiler.op.registry import make_call
    return make_call(name, *args, **attrs)


def _i8(*shape):
    return const(RNG.integers(-128, 128, shape).astype(np.int8))


def _quant(x):
    return _q("qnn.quantize", x, scale=[0.05, 0.1, 0.02, 0.07], zero_point=[1, -2, 0, 3], axis=1)


OP_MODELS.update({
    "qnn.quantize": lambda: _single(lambda x: _q("qnn.quantize", x, scale=[0.1], zero_point=[128], out_dtype="uint8")),
    "qnn.dequantize": lambda: _single(lambda x: _q("qnn.dequantize", _quant(x), scale=[0.5], zero_point=[-3])),
    "qnn.requantize": lambda: _single(lambda x: _q("qnn.requantize", _quant(x), input_scale=[0.05], input_zero_point=[1],
                                                   output_scale=[0.2], output_zero_point=[4], out_dtype="uint8")),
    "qnn.conv2d": lambda: _single(lambda x: _q("qnn.conv2d", _quant(x), _i8(6, 2, 3, 3), strides=(2, 1), padding=1,
                                               groups=2, input_zero_point=3, kernel_zero_point=[0, 1, 2, 3, 4, 5])),
    "qnn.dense": lambda: _single(lambda x: _q("qnn.dense", _q("qnn.quantize", x, scale=[0.1]), _i8(3, 5),
                                              input_zero_point=-1, kernel_zero_point=[2]), (2, 5)),
    "qnn.matmul": lambda: _single(lambda x: _q("qnn.matmul", _q("qnn.quantize", x, scale=[0.1]), _i8(5, 3),
                                               a_zero_point=7, b_zero_point=[0, 1, 2]), (2, 5)),
    "qnn.add": lambda: _single(lambda x: _q("qnn.add", _quant(x), _quant(x), lhs_scale=[0.1], lhs_zero_point=1,
                                            rhs_scale=[0.2], rhs_zero_point=-1, output_scale=[0.3],
                                            output_zero_point=2)),
    "qnn.mul": lambda: _single(lambda x: _q("qnn.mul", _quant(x), _quant(x), lhs_scale=[0.1], lhs_zero_point=1,
                                            rhs_scale=[0.2], rhs_zero_point=-1, output_scale=[0.3])),
    "qnn.concatenate": lambda: _single(lambda x: _q("qnn.concatenate", [_quant(x), _quant(x)], input_scales=[0.1, 0.2],
                                                    input_zero_points=[0, 5], output_scale=0.25, axis=1)),
    "qnn.avg_pool2d": lambda: _single(lambda x: _q("qnn.avg_pool2d", _quant(x), pool_size=2, strides=1, padding=1,
                                                   input_scale=[0.1], input_zero_point=1, output_scale=[0.07])),
    "qnn.softmax": lambda: _single(lambda x: _q("qnn.softmax", _q("qnn.quantize", x, scale=[0.1]), input_scale=0.1,
                                                beta=0.5, axis=1)),
    "qnn.subtract": lambda: _single(lambda x: _q("qnn.subtract", _quant(x), _quant(x), lhs_scale=[0.1],
                                                 lhs_zero_point=1, rhs_scale=[0.2], rhs_zero_point=-1,
                                                 output_scale=[0.3])),
    "qnn.mean": lambda: _single(lambda x: _q("qnn.mean", _quant(x), axis=[1], keepdims=True, input_scale=0.1,
                                             input_zero_point=1, output_scale=0.07, output_zero_point=-3)),
    "qnn.sum": lambda: _single(lambda x: _q("qnn.sum", _quant(x), axis=[0], input_scale=0.1, output_scale=0.9)),
    "qnn.l2_normalize": lambda: _single(lambda x: _q("qnn.l2_normalize", _quant(x), input_zero_point=2, axis=1)),
})


def test_every_op_has_a_roundtrip_model():
    assert set(OP_MODELS) == set(all_ops())


def _input_for(func: Function) -> list[np.ndarray]:
    out = []
    for p in func.params:
        ty = p.type_annotation
        data = RNG.standard_normal(ty.shape) * 3
        if ty.dtype == "int32":
            data = np.where(np.abs(data) < 1, 2, data)  # no division by zero
        out.append(data.astype(ty.dtype))
    return out


def _roundtrip(mod: IRModule):
    text = astext(mod)
    parsed = parse(text, "roundtrip.txt")
    assert astext(parsed) == text
    inputs = _input_for(mod["main"])
    for a, b in zip(run_reference(mod, inputs), run_reference(parsed, inputs)):
        np.testing.assert_array_equal(a, b)
    return parsed


@pytest.mark.parametrize("name", list(OP_MODELS))
def test_op_model_roundtrips(name):
    mod = infer_type(IRModule({"main": OP_MODELS[name]()}))
    parsed = _roundtrip(mod)
    assert op_counts(parsed["main"].body)[name] >= 1


@pytest.mark.parametrize("name", zoo.names())
def test_zoo_model_roundtrips(name):
    _roundtrip(zoo.get(name))


def test_untyped_module_roundtrips_too():
    _roundtrip(IRModule({"main": OP_MODELS["nn.conv2d"]()}))


def test_type_error_in_parsed_text_points_at_the_source():
    text = """def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 2, 3, 3), float32]) {
  %0 = nn.relu(%x);
  nn.conv2d(%0, %w, padding=[1, 1])
}
"""
    with pytest.raises(TypeInferenceError) as info:
        infer_type(parse(text, "model.relay"))
    message = str(info.value)
    assert "model.relay:3:" in message and "nn.conv2d" in message and "(4, 2, 3, 3)" in message
