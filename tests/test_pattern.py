"""The dataflow pattern language: what matches, what a match binds."""
import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.ir import IRModule, TensorType, Tuple, TupleGetItem, Var, const
from byoc_compiler.op.registry import OpError
from byoc_compiler.pattern import (is_constant, is_expr, is_op, is_tuple, is_tuple_get_item, is_var, match,
                                   wildcard)
from byoc_compiler.transform import infer_type

X = Var("x", TensorType((1, 4, 8, 8)))
Y = Var("y", TensorType((1, 4, 8, 8), "int32"))
W = const(np.ones((4, 4, 3, 3), "float32"))
B = const(np.ones(4, "float32"))
CONV = op.nn.conv2d(X, W, padding=(1, 1))
BIAS = op.nn.bias_add(CONV, B)
RELU = op.nn.relu(BIAS)
ADD_XX = op.add(X, X)
BN = op.nn.batch_norm(X, B, B, B, B)
BN0 = TupleGetItem(BN, 0)
TUP = Tuple([X, RELU])
IADD = op.add(Y, Y)
infer_type(IRModule.from_expr(Tuple([RELU, ADD_XX, BN0, TUP, IADD])))


def conv_bias():
    return is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), is_constant())


def same_twice():
    x = wildcard()
    return is_op("add")(x, x)


CASES = [
    # id, pattern factory, expression, matches
    ("op-call", lambda: is_op("nn.relu")(wildcard()), RELU, True),
    ("op-call-wrong-op", lambda: is_op("nn.relu")(wildcard()), BIAS, False),
    ("chain", conv_bias, BIAS, True),
    ("chain-at-wrong-root", conv_bias, RELU, False),
    ("constant-required", lambda: is_op("nn.conv2d")(is_constant(), wildcard()), CONV, False),
    ("var", lambda: is_op("nn.conv2d")(is_var(), is_constant()), CONV, True),
    ("var-by-name", lambda: is_op("nn.conv2d")(is_var("x"), wildcard()), CONV, True),
    ("var-wrong-name", lambda: is_op("nn.conv2d")(is_var("z"), wildcard()), CONV, False),
    ("alternation-left", lambda: is_op("nn.relu")(wildcard()) | is_op("exp")(wildcard()), RELU, True),
    ("alternation-right", lambda: is_op("exp")(wildcard()) | is_op("nn.relu")(wildcard()), RELU, True),
    ("alternation-of-ops", lambda: (is_op("subtract") | is_op("add"))(wildcard(), wildcard()), ADD_XX, True),
    ("optional-present", lambda: conv_bias().optional(is_op("nn.relu")), RELU, True),
    ("optional-absent", lambda: conv_bias().optional(is_op("nn.relu")), BIAS, True),
    ("optional-callable", lambda: conv_bias().optional(lambda p: is_op("nn.relu")(p)), RELU, True),
    ("attr-equal", lambda: is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"padding": (1, 1, 1, 1)}), CONV, True),
    ("attr-different", lambda: is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"groups": 2}), CONV, False),
    ("attr-unknown", lambda: is_op("nn.conv2d")(wildcard(), wildcard()).has_attr({"nope": 1}), CONV, False),
    ("dtype", lambda: is_op("add")(wildcard(), wildcard()).has_dtype("float32"), ADD_XX, True),
    ("dtype-int32", lambda: is_op("add")(wildcard(), wildcard()).has_dtype("float32"), IADD, False),
    ("shape", lambda: wildcard().has_shape((1, 4, 8, 8)), RELU, True),
    ("shape-wrong", lambda: wildcard().has_shape((1, 4)), RELU, False),
    ("same-wildcard-twice", same_twice, ADD_XX, True),
    ("same-wildcard-differs", lambda: is_op("nn.bias_add")(wildcard(), wildcard()), BIAS, True),
    ("tuple-get-item", lambda: is_tuple_get_item(is_op("nn.batch_norm")(*[wildcard() for _ in range(5)]), 0), BN0, True),
    ("tuple-get-item-index", lambda: is_tuple_get_item(wildcard(), 1), BN0, False),
    ("tuple-get-item-any", lambda: is_tuple_get_item(wildcard()), BN0, True),
    ("tuple", lambda: is_tuple([is_var(), is_op("nn.relu")(wildcard())]), TUP, True),
    ("tuple-arity", lambda: is_tuple([wildcard()]), TUP, False),
    ("expr", lambda: is_op("add")(is_expr(X), is_expr(X)), ADD_XX, True),
    ("expr-other", lambda: is_op("nn.relu")(is_expr(X)), RELU, False),
    ("bare-op", lambda: is_op("nn.relu"), RELU, True),
]


@pytest.mark.parametrize("make,expr,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_match(make, expr, expected):
    assert make().match(expr) is expected


def test_same_wildcard_twice_rejects_different_inputs():
    assert not same_twice().match(op.add(X, op.nn.relu(X)))


def test_match_binds_nodes_and_inputs_in_pattern_order():
    m = conv_bias().optional(is_op("nn.relu")).find(RELU)
    assert [n for n in m.nodes] == [CONV, BIAS, RELU]
    assert m.op_names == ("nn.conv2d", "nn.bias_add", "nn.relu")
    assert m.inputs == (X, W, B)
    assert m.root is RELU


def test_input_used_twice_is_bound_once():
    m = same_twice().find(ADD_XX)
    assert m.inputs == (X,)


def test_match_function_form():
    assert match(conv_bias(), BIAS) is not None
    assert match(conv_bias(), X) is None


def test_unknown_op_is_named():
    with pytest.raises(OpError, match="nn.conv2"):
        is_op("nn.conv2")
