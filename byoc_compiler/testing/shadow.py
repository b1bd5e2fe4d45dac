"""The magnitude shadow of a computation: per element, the size of the values it went through.

Beside every value r the error estimate (error_bound.py) carries m >= |r|: the same graph evaluated on
absolute values, so a sum of products gives sum |a_i| |b_i| where the value gives |sum a_i b_i|. A
correct float32 build's error at an element is a few roundings of m (first order: each op rounds at
most its own operands' sizes, and m bounds them all); where the products cancel, m stays as large as
the products and so does the error it admits. The check uses m twice (testing/tolerance.py): the floor
of an element is capped at u * m, so small elements are not judged by their large neighbours; and an
element whose sampled estimate is not finite (sqrt or log at 0, a division by ~0) is allowed a stated
SAFETY * sqrt(u) * m instead of anything.

Rules, by op:
* APPLY: the op itself on the operands' shadows — every op that moves data or that is a sum, product,
  average or maximum of its operands (monotone and positively homogeneous on non-negative inputs), and
  sqrt (sqrt(m) bounds sqrt of anything within m of 0: what an error near a root becomes);
* the operand's shadow unchanged (PASS) for elementwise ops whose slope is at most about 1 (relu,
  clip, negative, tanh, sigmoid, erf, gelu, ...): they carry an error at most its size;
* exp: |exp(x)| (1 + m_x), the slope of exp times the operand's shadow;
* RENAMED: the op with a sign flipped to its absolute form (subtract -> add, min -> max, ...);
* divide: (m_a + |a / b| m_b) / |b|; batch_norm: the normalization of m_x + |mean| with |gamma|, |beta|;
* any other op (log, power, softmax, layer_norm, lrn, resize, the qnn ops): |value| + the largest
  shadow among its operands, since an element may depend on every operand element.
Integer values are exact and their shadow is |value|.
"""
from __future__ import annotations

import numpy as np

from ..op.registry import get_op_def

APPLY = frozenset((
    "reshape", "transpose", "concatenate", "split", "squeeze", "expand_dims", "nn.batch_flatten", "take",
    "nn.pad", "nn.dropout", "broadcast_to", "tile", "strided_slice", "where",
    "add", "multiply", "nn.bias_add", "nn.dense", "nn.matmul", "nn.batch_matmul", "nn.conv2d",
    "sum", "mean", "prod", "max", "maximum", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
    "nn.relu", "sqrt",
))
PASS = frozenset(("negative", "abs", "clip", "nn.leaky_relu", "nn.gelu", "nn.hard_sigmoid", "nn.hard_swish",
                  "cast", "sigmoid", "tanh", "erf"))
RENAMED = {"subtract": "add", "min": "max", "minimum": "maximum"}


def absolute(value):
    """|value| in float64 (tuples element by element): the shadow of an exact input or constant."""
    if isinstance(value, tuple):
        return tuple(absolute(v) for v in value)
    value = np.asarray(value)
    return np.abs(value.astype(np.float64)) if value.dtype.kind in "fiub" else value


def _float_to(arg, shadow):
    if isinstance(arg, tuple):
        return tuple(_float_to(a, s) for a, s in zip(arg, shadow))
    return shadow if isinstance(arg, np.ndarray) and arg.dtype.kind == "f" else arg


def _floats_to(args, shadows):
    """The operands with every float value replaced by its shadow (integer operands keep their value)."""
    return [_float_to(a, s) for a, s in zip(args, shadows)]


def _at_least_value(shadow, value):
    if isinstance(value, tuple):
        return tuple(_at_least_value(s, v) for s, v in zip(shadow, value))
    return np.maximum(absolute(shadow), absolute(value))


def _largest(shadows) -> float:
    out = 0.0
    for s in shadows:
        if isinstance(s, tuple):
            out = max(out, _largest(s))
        elif np.size(s):
            out = max(out, float(np.max(s)))
    return out


def _other(value, shadows):
    if isinstance(value, tuple):
        return tuple(_other(v, shadows) for v in value)
    return absolute(value) + _largest(shadows)


def _divide(args, shadows, value):
    with np.errstate(all="ignore"):
        return (shadows[0] + np.abs(value) * shadows[1]) / np.abs(args[1])


def _batch_norm(ref, args, shadows, attrs):
    x, gamma, beta, mean, var = args
    out = ref([shadows[0], np.abs(gamma), np.abs(beta), -np.abs(mean), var], attrs)
    return (np.abs(out[0]), *out[1:])


def _apply(ref, args, shadows, attrs, value):
    return ref(_floats_to(args, shadows), attrs)


def _renamed(absolute_form: str):
    def rule(ref, args, shadows, attrs, value):
        return get_op_def(absolute_form).ref(_floats_to(args, shadows), attrs)
    return rule


def _pass(ref, args, shadows, attrs, value):
    return shadows[0]


def _exp(ref, args, shadows, attrs, value):
    return np.abs(value) * (1.0 + shadows[0])


def _divide_rule(ref, args, shadows, attrs, value):
    return _divide(args, shadows, value)


def _batch_norm_rule(ref, args, shadows, attrs, value):
    return _batch_norm(ref, args, shadows, attrs)


def _other_rule(ref, args, shadows, attrs, value):
    return _other(value, shadows)


_RULES = {**dict.fromkeys(APPLY, _apply), **{n: _renamed(to) for n, to in RENAMED.items()},
          **dict.fromkeys(PASS, _pass), "exp": _exp, "divide": _divide_rule, "nn.batch_norm": _batch_norm_rule}


def shadow_rule(name: str):
    """Op `name`'s rule (see above; any other op: |value| + the largest operand shadow), for its error model
    (error_bound.py registers the pair as the op's "error_model" attribute)."""
    return _RULES.get(name, _other_rule)


def magnitude(rule, ref, args: list, shadows: list, attrs, value):
    """The shadow of an op's result `value` from its operands `args` and their shadows, by the op's `rule`."""
    with np.errstate(all="ignore"):
        return _at_least_value(rule(ref, args, shadows, attrs, value), value)
