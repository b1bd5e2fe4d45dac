"""FoldBatchNorm: batch norm and per-channel scale/shift after conv2d/dense fold into the weights.

Every case compares the folded module with the numpy reference of the ORIGINAL module, and says
which ops must be left afterwards (so a pass that folds too much, or nothing, fails).
"""
import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.ir import Constant, IRModule, TensorType, Tuple, Var, post_order
from byoc_compiler.ir.expr import Call, Op
from byoc_compiler.partition import partition_for
from byoc_compiler.testing.reference import run_reference
from byoc_compiler.transform import fold_batch_norm, infer_type


def _c(shape, seed, lo=None):
    data = np.random.default_rng(seed).standard_normal(shape).astype("float32")
    if lo is not None:  # variances: positive
        data = np.abs(data) + lo
    return Constant(data)


def _bn(x, c, seed, **kw):
    return op.nn.batch_norm(x, _c((c,), seed), _c((c,), seed + 1), _c((c,), seed + 2), _c((c,), seed + 3, 0.5),
                            **kw)[0]


def _conv(x, cin, cout, groups=1, seed=0, k=3):
    return op.nn.conv2d(x, _c((cout, cin // groups, k, k), seed), padding=(1, 1, 1, 1) if k == 3 else (0, 0, 0, 0),
                        groups=groups)


def _x(c=4):
    return Var("x", TensorType((1, c, 6, 6)))


def conv_bn():
    return _bn(_conv(_x(), 4, 8), 8, 10)


def conv_bias_bn_relu():
    return op.nn.relu(_bn(op.nn.bias_add(_conv(_x(), 4, 8), _c((8,), 5)), 8, 10))


def grouped_conv_bn():
    return _bn(_conv(_x(), 4, 6, groups=2), 6, 10)


def depthwise_conv_bn_clip():
    return op.clip(_bn(_conv(_x(), 4, 4, groups=4), 4, 10), 0.0, 6.0)


def bn_without_scale_and_center():
    return _bn(_conv(_x(), 4, 8, k=1), 8, 10, scale=False, center=False, epsilon=1e-3)


def conv_bn_scale_shift():
    y = _bn(_conv(_x(), 4, 8), 8, 10)
    y = op.multiply(_c((8, 1, 1), 20), y)                 # constant first: multiply commutes
    return op.subtract(op.add(y, _c((1, 8, 1, 1), 21)), _c((), 22))


def conv_times_scalar():
    return op.multiply(_conv(_x(), 4, 8), Constant(np.float32(0.5)))


def dense_bias_bn():
    x = Var("x", TensorType((3, 16)))
    return _bn(op.nn.bias_add(op.nn.dense(x, _c((8, 16), 1)), _c((8,), 2)), 8, 10)


def conv_output_used_twice():
    conv = _conv(_x(), 4, 8)
    return Tuple([_bn(conv, 8, 10), op.nn.relu(conv)])


def bn_output_1_used():
    bn = op.nn.batch_norm(_conv(_x(), 4, 8), _c((8,), 1), _c((8,), 2), _c((8,), 3), _c((8,), 4, 0.5))
    return Tuple([bn[0], op.add(bn[1], bn[2])])


def weight_not_constant():
    w = Var("w", TensorType((8, 4, 3, 3)))
    return _bn(op.nn.conv2d(_x(), w, padding=(1, 1, 1, 1)), 8, 10)


def bn_on_other_axis():
    x = Var("x", TensorType((1, 4, 8, 8)))
    return _bn(op.nn.conv2d(x, _c((8, 4, 1, 1), 1)), 8, 10, axis=2)


def multiply_not_per_channel():
    return op.multiply(_conv(_x(), 4, 8), _c((1, 8, 6, 6), 3))


def only_bias_add():
    return op.nn.bias_add(_conv(_x(), 4, 8), _c((8,), 3))


# (model, ops that must remain after the pass)
CASES = {
    "conv-bn": (conv_bn, {"nn.conv2d": 1, "nn.bias_add": 1}),
    "conv-bias-bn-relu": (conv_bias_bn_relu, {"nn.conv2d": 1, "nn.bias_add": 1, "nn.relu": 1}),
    "grouped-conv-bn": (grouped_conv_bn, {"nn.conv2d": 1, "nn.bias_add": 1}),
    "depthwise-conv-bn-clip": (depthwise_conv_bn_clip, {"nn.conv2d": 1, "nn.bias_add": 1, "clip": 1}),
    "bn-no-scale-no-center": (bn_without_scale_and_center, {"nn.conv2d": 1, "nn.bias_add": 1}),
    "conv-bn-multiply-add-subtract": (conv_bn_scale_shift, {"nn.conv2d": 1, "nn.bias_add": 1}),
    "conv-times-scalar": (conv_times_scalar, {"nn.conv2d": 1}),
    "dense-bias-bn": (dense_bias_bn, {"nn.dense": 1, "nn.bias_add": 1}),
    "conv-output-used-twice-no-fold": (conv_output_used_twice, {"nn.conv2d": 1, "nn.batch_norm": 1, "nn.relu": 1}),
    "bn-mean-output-used-no-fold": (bn_output_1_used, {"nn.conv2d": 1, "nn.batch_norm": 1, "add": 1}),
    "weight-not-constant-no-fold": (weight_not_constant, {"nn.conv2d": 1, "nn.batch_norm": 1}),
    "bn-other-axis-no-fold": (bn_on_other_axis, {"nn.conv2d": 1, "nn.batch_norm": 1}),
    "multiply-not-per-channel-no-fold": (multiply_not_per_channel, {"nn.conv2d": 1, "multiply": 1}),
    "only-bias-add-unchanged": (only_bias_add, {"nn.conv2d": 1, "nn.bias_add": 1}),
}


def _op_counts(mod):
    counts = {}
    for node in post_order(mod["main"].body):
        if isinstance(node, Call) and isinstance(node.op, Op):
            counts[node.op.name] = counts.get(node.op.name, 0) + 1
    return counts


def _inputs(mod, seed=7):
    rng = np.random.default_rng(seed)
    return {p.name_hint: rng.standard_normal(p.type_annotation.shape).astype("float32") for p in mod["main"].params}


@pytest.mark.parametrize("case", list(CASES))
def test_fold_batch_norm(case):
    build, remaining = CASES[case]
    mod = infer_type(IRModule.from_expr(build()))
    folded = fold_batch_norm(mod)
    assert _op_counts(folded) == remaining
    inputs = _inputs(mod)
    want = run_reference(mod, inputs)
    got = run_reference(folded, inputs)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_nothing_to_fold_returns_the_same_module():
    mod = infer_type(IRModule.from_expr(only_bias_add()))
    assert fold_batch_norm(mod) is mod


def test_folded_conv_is_one_fused_ccompiler_call():
    """After folding, conv + bn + relu is the target's conv2d_bias_relu composite (no batch_norm left)."""
    part = partition_for("ccompiler", IRModule.from_expr(conv_bias_bn_relu()))
    region = part["tvmgen_default_ccompiler_main_0"]
    assert region.body.op.attrs["Composite"] == "ccompiler.conv2d_bias_relu"
    assert "nn.batch_norm" not in _op_counts(part)
