"""The ops of today's models (comparisons, logic, reductions, slicing, batched matmul, layer norm,
gelu & co., resize) against explicit Python loops and hand-written arrays."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from byoc_compiler import op
from test_ops import evaluate, loop_map, rand

RNG = np.random.default_rng(99)


def _gelu(v):
    return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))


UNARY = [
    ("erf", op.erf, math.erf),
    ("gelu", op.nn.gelu, _gelu),
    ("gelu-tanh", lambda x: op.nn.gelu(x, "tanh"),
     lambda v: 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))),
    ("hard_sigmoid", lambda x: op.nn.hard_sigmoid(x, 0.3, 0.4), lambda v: min(1.0, max(0.0, 0.3 * v + 0.4))),
    ("hard_swish", op.nn.hard_swish, lambda v: v * min(1.0, max(0.0, v / 6 + 0.5))),
]


@pytest.mark.parametrize("name,build,scalar", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_loops(name, build, scalar):
    x = rand(3, 7) * 4
    np.testing.assert_allclose(evaluate(build, x), loop_map(scalar, x), rtol=1e-6, atol=1e-7)


def test_power_matches_loops():
    a, b = np.abs(rand(2, 3)) + 0.1, rand(3)
    np.testing.assert_allclose(evaluate(op.power, a, b), loop_map(math.pow, a, b), rtol=1e-6)


COMPARE = [("equal", op.equal, lambda a, b: a == b), ("less", op.less, lambda a, b: a < b),
           ("greater", op.greater, lambda a, b: a > b), ("less_equal", op.less_equal, lambda a, b: a <= b),
           ("greater_equal", op.greater_equal, lambda a, b: a >= b)]


@pytest.mark.parametrize("name,build,scalar", COMPARE, ids=[c[0] for c in COMPARE])
def test_comparisons_match_loops(name, build, scalar):
    a = RNG.integers(-2, 3, (4, 1, 3)).astype(np.float32)
    b = RNG.integers(-2, 3, (2, 3)).astype(np.float32)
    out = evaluate(build, a, b)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, loop_map(lambda x, y: float(scalar(x, y)), a, b).astype(bool))


def test_logic_and_where_hand_computed():
    t, f = True, False
    a = np.array([[t, t, f, f]])
    b = np.array([[t], [f]])
    assert evaluate(op.logical_and, a, b).tolist() == [[t, t, f, f], [f, f, f, f]]
    assert evaluate(op.logical_or, a, b).tolist() == [[t, t, t, t], [t, t, f, f]]
    assert evaluate(op.logical_xor, a, b).tolist() == [[f, f, t, t], [t, t, f, f]]
    assert evaluate(op.logical_not, a).tolist() == [[f, f, t, t]]
    x = np.array([1, 2, 3, 4], np.int64)
    y = np.array([[10], [20]], np.int64)
    assert evaluate(op.where, a, x, y).tolist() == [[1, 2, 10, 10], [1, 2, 20, 20]]


REDUCE = [("sum", sum), ("mean", lambda v: sum(v) / len(v)), ("max", max), ("min", min), ("prod", math.prod)]


@pytest.mark.parametrize("keepdims", [False, True], ids=["drop", "keep"])
@pytest.mark.parametrize("axes", [(1,), (0, 2), None], ids=["axis1", "axes02", "all"])
@pytest.mark.parametrize("name,fold", REDUCE, ids=[r[0] for r in REDUCE])
def test_reductions_match_loops(name, fold, axes, keepdims):
    x = rand(2, 3, 4)
    out = evaluate(lambda v: getattr(op, name)(v, axis=axes, keepdims=keepdims), x)
    reduced = range(3) if axes is None else axes
    kept = [a for a in range(3) if a not in reduced]
    want = np.zeros([1 if a in reduced else x.shape[a] for a in range(3)])
    for index in itertools.product(*(range(x.shape[a]) for a in kept)):
        values = []
        for inner in itertools.product(*(range(x.shape[a]) for a in reduced)):
            full = [0] * 3
            for a, i in zip(kept, index):
                full[a] = i
            for a, i in zip(reduced, inner):
                full[a] = i
            values.append(float(x[tuple(full)]))
        at = [0] * 3
        for a, i in zip(kept, index):
            at[a] = i
        want[tuple(at)] = fold(values)
    if not keepdims:
        want = want.reshape([x.shape[a] for a in kept])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_empty_reductions_give_the_identity():
    x = np.zeros((2, 0), np.float32)
    assert evaluate(lambda v: op.sum(v, axis=(1,)), x).tolist() == [0, 0]
    assert evaluate(lambda v: op.prod(v, axis=(1,)), x).tolist() == [1, 1]
    assert evaluate(lambda v: op.max(v, axis=(1,)), x).tolist() == [-math.inf, -math.inf]


def test_argmax_argmin_hand_computed():
    x = np.array([[3, 1, 3, 0], [2, 5, 5, -1]], np.float32)
    assert evaluate(lambda v: op.argmax(v, axis=1, keepdims=False), x).tolist() == [0, 1]
    assert evaluate(lambda v: op.argmax(v, axis=1, keepdims=False, select_last_index=True), x).tolist() == [2, 2]
    assert evaluate(lambda v: op.argmin(v, axis=0), x).tolist() == [[1, 0, 0, 1]]
    assert evaluate(lambda v: op.argmin(v, axis=0), x).dtype == np.int64


SLICES = [
    ("forward", (1, 0), (3, 100), (1, 2), [[4, 6], [8, 10]]),
    ("negative-start", (-1, -3), (100, 100), (1, 1), [[9, 10, 11]]),
    ("backward-to-front", (2, 3), (-100, 0), (-1, -2), [[11, 9], [7, 5], [3, 1]]),
    ("empty", (2, 0), (1, 4), (1, 1), np.zeros((0, 4))),
]


@pytest.mark.parametrize("name,begin,end,strides,expected", SLICES, ids=[s[0] for s in SLICES])
def test_strided_slice_hand_computed(name, begin, end, strides, expected):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    out = evaluate(lambda v: op.strided_slice(v, begin, end, strides), x)
    np.testing.assert_array_equal(out, np.array(expected, np.float32).reshape(out.shape))
    assert out.shape == np.array(expected).shape


def test_tile_and_broadcast_to_hand_computed():
    x = np.array([[1, 2]], np.float32)
    assert evaluate(lambda v: op.tile(v, (2, 2)), x).tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]
    assert evaluate(lambda v: op.broadcast_to(v, (2, 3, 2)), x).tolist() == [[[1, 2]] * 3] * 2


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)], ids=["nn", "tn", "nt"])
def test_batch_matmul_matches_loops(ta, tb):
    a = rand(2, 1, *((4, 3) if ta else (3, 4)))
    b = rand(3, *((5, 4) if tb else (4, 5)))
    out = evaluate(lambda x, y: op.nn.batch_matmul(x, y, ta, tb), a, b)
    assert out.shape == (2, 3, 3, 5)
    want = np.zeros(out.shape)
    for i, j, m, n in itertools.product(range(2), range(3), range(3), range(5)):
        want[i, j, m, n] = sum(float(a[i, 0, k, m] if ta else a[i, 0, m, k]) * float(b[j, n, k] if tb else b[j, k, n])
                               for k in range(4))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [-1, 1], ids=["last", "axis1"])
def test_layer_norm_matches_loops(axis):
    x = rand(2, 3, 4)
    normalized = x.shape[axis % 3:]
    gamma, beta = rand(*normalized), rand(*normalized)
    out = evaluate(lambda v, g, b: op.nn.layer_norm(v, g, b, axis=axis, epsilon=1e-3), x, gamma, beta)
    want = np.zeros(x.shape)
    for lead in itertools.product(*(range(d) for d in x.shape[:axis % 3])):
        block = [float(v) for v in x[lead].ravel()]
        mean = sum(block) / len(block)
        var = sum((v - mean) ** 2 for v in block) / len(block)
        for flat, index in enumerate(itertools.product(*(range(d) for d in normalized))):
            want[lead + index] = (block[flat] - mean) / math.sqrt(var + 1e-3) * gamma[index] + beta[index]
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


RESIZE = [
    # 2x nearest (asymmetric, floor): every element twice.
    ("nearest-2x", dict(method="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
     [1, 2, 3], 6, [1, 1, 2, 2, 3, 3]),
    # linear, align_corners, 3 -> 5: the midpoints in between.
    ("linear-align-corners", dict(method="linear", coordinate_transformation_mode="align_corners"),
     [0, 2, 6], 5, [0, 1, 2, 4, 6]),
    # linear, half_pixel, 2 -> 4: x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped at the edges.
    ("linear-half-pixel", dict(method="linear"), [0, 4], 4, [0, 1, 3, 4]),
    # tf_crop_and_resize with a roi past the input: extrapolation_value outside.
    ("crop-extrapolate", dict(method="linear", coordinate_transformation_mode="tf_crop_and_resize",
                              roi=(0.5, 1.5), extrapolation_value=-1.0), [0, 10, 20], 3, [10, 20, -1]),
]


@pytest.mark.parametrize("name,attrs,data,size,expected", RESIZE, ids=[r[0] for r in RESIZE])
def test_resize_hand_computed(name, attrs, data, size, expected):
    x = np.array(data, np.float32)
    out = evaluate(lambda v: op.resize(v, (size,), (size / len(data),), **attrs), x)
    np.testing.assert_allclose(out, np.array(expected, np.float32), rtol=1e-6, atol=1e-6)
