"""Every op's numpy reference against an independent computation (Python loops, hand-written
arrays), its type inference against bad inputs, and its attribute validation."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from byoc_compiler import op
from byoc_compiler.ir import Function, IRModule, TensorType, TupleGetItem, Var
from byoc_compiler.op.registry import OpError, all_ops
from byoc_compiler.testing import conv2d_loops, pool2d_loops, run_reference
from byoc_compiler.transform.infer_type import TypeInferenceError, infer_type

RNG = np.random.default_rng(1234)


def rand(*shape, dtype="float32"):
    if dtype == "int32":
        return RNG.integers(-9, 10, shape).astype(np.int32)
    return RNG.standard_normal(shape).astype(np.float32)


def evaluate(build, *arrays):
    """Run `build(*params)` through InferType and the reference interpreter."""
    params = [Var(f"p{i}", TensorType(a.shape, str(a.dtype))) for i, a in enumerate(arrays)]
    outs = run_reference(IRModule.from_expr(Function(params, build(*params))), list(arrays))
    return outs[0] if len(outs) == 1 else outs


def loop_map(fn, *arrays):
    """`fn` on Python scalars at every index of the broadcast shape, index mapping done by hand."""
    ndim = max(a.ndim for a in arrays)
    shape = [max((a.shape[a.ndim - ndim + i] if a.ndim - ndim + i >= 0 else 1) for a in arrays)
             for i in range(ndim)]
    out = np.zeros(shape)
    for index in itertools.product(*(range(d) for d in shape)):
        scalars = []
        for a in arrays:
            sub = index[ndim - a.ndim:]
            sub = tuple(0 if a.shape[i] == 1 else sub[i] for i in range(a.ndim))
            scalars.append(float(a[sub]))
        out[index] = fn(*scalars)
    return out


# ---- elementwise ----------------------------------------------------------------------------------

BINARY = [
    ("add", op.add, lambda a, b: a + b),
    ("subtract", op.subtract, lambda a, b: a - b),
    ("multiply", op.multiply, lambda a, b: a * b),
    ("divide", op.divide, lambda a, b: a / b),
    ("maximum", op.maximum, max),
    ("minimum", op.minimum, min),
]
SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((1,), (2, 2))]


@pytest.mark.parametrize("name,build,scalar", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("shapes", SHAPES, ids=["same", "row", "both-broadcast", "scalar-like"])
def test_binary_matches_loops(name, build, scalar, shapes):
    a, b = rand(*shapes[0]), rand(*shapes[1])
    if name == "divide":
        b = np.where(np.abs(b) < 0.1, 0.5, b).astype(np.float32)
    np.testing.assert_allclose(evaluate(build, a, b), loop_map(scalar, a, b), rtol=1e-6, atol=1e-6)


def test_int32_divide_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 0, 9], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3], np.int32)
    out = evaluate(op.divide, a, b)
    assert out.dtype == np.int32
    assert out.tolist() == [3, -3, -3, 3, 0, 3]


@pytest.mark.parametrize("name,build", [(b[0], b[1]) for b in BINARY], ids=[b[0] for b in BINARY])
def test_int32_binary_keeps_dtype(name, build):
    a, b = rand(3, dtype="int32"), np.array([1, 2, 3], np.int32)
    out = evaluate(build, a, b)
    assert out.dtype == np.int32


def _sigmoid(v):
    return 1 / (1 + math.exp(-v))


UNARY = [
    ("negative", op.negative, lambda v: -v, None),
    ("abs", op.abs, abs, None),
    ("exp", op.exp, math.exp, None),
    ("log", op.log, math.log, "positive"),
    ("sqrt", op.sqrt, math.sqrt, "positive"),
    ("tanh", op.tanh, math.tanh, None),
    ("sigmoid", op.sigmoid, _sigmoid, None),
    ("relu", op.nn.relu, lambda v: v if v > 0 else 0.0, None),
    ("leaky_relu", lambda x: op.nn.leaky_relu(x, alpha=0.2), lambda v: v if v > 0 else 0.2 * v, None),
    ("clip", lambda x: op.clip(x, -0.5, 0.75), lambda v: min(max(v, -0.5), 0.75), None),
]


@pytest.mark.parametrize("name,build,scalar,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_loops(name, build, scalar, domain):
    x = rand(3, 4)
    if domain == "positive":
        x = np.abs(x) + 0.1
    np.testing.assert_allclose(evaluate(build, x), loop_map(scalar, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,build,expected", [
    ("relu", op.nn.relu, [0, 0, 3]),
    ("negative", op.negative, [5, 0, -3]),
    ("abs", op.abs, [5, 0, 3]),
    ("clip", lambda x: op.clip(x, -1, 2), [-1, 0, 2]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_int32_unary(name, build, expected):
    out = evaluate(build, np.array([-5, 0, 3], np.int32))
    assert out.dtype == np.int32 and out.tolist() == expected


@pytest.mark.parametrize("src,dtype,expected", [
    ([1.7, -1.7, 0.2], "int32", [1, -1, 0]),
    ([3, -2], "float32", [3.0, -2.0]),
    ([0.0, 2.5], "bool", [False, True]),
], ids=["float-to-int-truncates", "int-to-float", "float-to-bool"])
def test_cast(src, dtype, expected):
    x = np.array(src, np.float32 if isinstance(src[0], float) else np.int32)
    out = evaluate(lambda v: op.cast(v, dtype), x)
    assert str(out.dtype) == dtype and out.tolist() == expected


# ---- dense / matmul / bias_add --------------------------------------------------------------------

def test_dense_matches_loops():
    x, w = rand(2, 3, 5), rand(4, 5)
    want = np.zeros((2, 3, 4))
    for i, j, n in itertools.product(range(2), range(3), range(4)):
        want[i, j, n] = sum(float(x[i, j, k]) * float(w[n, k]) for k in range(5))
    np.testing.assert_allclose(evaluate(lambda a, b: op.nn.dense(a, b, units=4), x, w), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["nn", "tn", "nt", "tt"])
def test_matmul_matches_loops(ta, tb):
    a = rand(*((4, 3) if ta else (3, 4)))
    b = rand(*((5, 4) if tb else (4, 5)))
    want = np.zeros((3, 5))
    for m, n in itertools.product(range(3), range(5)):
        want[m, n] = sum(float(a[k, m] if ta else a[m, k]) * float(b[n, k] if tb else b[k, n]) for k in range(4))
    out = evaluate(lambda x, y: op.nn.matmul(x, y, transpose_a=ta, transpose_b=tb), a, b)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [1, -1, 0], ids=["axis1", "axis-1", "axis0"])
def test_bias_add_matches_loops(axis):
    x = rand(2, 3, 4)
    bias = rand(x.shape[axis])
    want = np.zeros(x.shape)
    for idx in itertools.product(*(range(d) for d in x.shape)):
        want[idx] = float(x[idx]) + float(bias[idx[axis]])
    np.testing.assert_allclose(evaluate(lambda a, b: op.nn.bias_add(a, b, axis=axis), x, bias), want, rtol=1e-6)


# ---- conv2d ---------------------------------------------------------------------------------------

CONV_CASES = [
    ("plain", (1, 2, 5, 5), (3, 2, 3, 3), dict()),
    ("padding1", (1, 2, 5, 5), (3, 2, 3, 3), dict(padding=1)),
    ("asym-padding", (1, 2, 5, 6), (2, 2, 3, 2), dict(padding=(1, 0, 2, 1))),
    ("strides2", (2, 3, 7, 7), (4, 3, 3, 3), dict(strides=2, padding=(1, 1))),
    ("strides-2x1", (1, 1, 6, 5), (2, 1, 2, 2), dict(strides=(2, 1))),
    ("dilation2", (1, 2, 7, 7), (2, 2, 3, 3), dict(dilation=2, padding=2)),
    ("groups2", (1, 4, 5, 5), (6, 2, 3, 3), dict(groups=2, padding=1)),
    ("depthwise", (1, 3, 5, 5), (3, 1, 3, 3), dict(groups=3, padding=1)),
    ("depthwise-multiplier", (1, 2, 4, 4), (4, 1, 3, 3), dict(groups=2, strides=2, padding=1)),
    ("1x1", (1, 4, 3, 3), (2, 4, 1, 1), dict()),
]


@pytest.mark.parametrize("name,xshape,wshape,kwargs", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv2d_matches_loops(name, xshape, wshape, kwargs):
    x, w = rand(*xshape), rand(*wshape)
    call = op.nn.conv2d(Var("x"), Var("w"), **kwargs)
    a = call.attrs
    want = conv2d_loops(x, w, a.strides, a.padding, a.dilation, a.groups)
    out = evaluate(lambda p, q: op.nn.conv2d(p, q, **kwargs), x, w)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


# ---- pools ----------------------------------------------------------------------------------------

X44 = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
X55 = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)

POOL_HAND = [
    ("max-2x2-s2", op.nn.max_pool2d, X44, dict(pool_size=2, strides=2), [[5, 7], [13, 15]]),
    ("avg-2x2-s2", op.nn.avg_pool2d, X44, dict(pool_size=2, strides=2), [[2.5, 4.5], [10.5, 12.5]]),
    # 5x5 with 2x2 stride 2: floor drops the last row/col, ceil keeps partial windows.
    ("max-floor", op.nn.max_pool2d, X55, dict(pool_size=2, strides=2), [[6, 8], [16, 18]]),
    ("max-ceil", op.nn.max_pool2d, X55, dict(pool_size=2, strides=2, ceil_mode=True),
     [[6, 8, 9], [16, 18, 19], [21, 23, 24]]),
    ("avg-ceil", op.nn.avg_pool2d, X55, dict(pool_size=2, strides=2, ceil_mode=True),
     [[3, 5, 6.5], [13, 15, 16.5], [20.5, 22.5, 24]]),
    # padding 1 around a 4x4, 3x3 window stride 2 (outputs at rows/cols -1 and 1).
    ("avg-pad-exclude", op.nn.avg_pool2d, X44, dict(pool_size=3, strides=2, padding=1),
     [[(0 + 1 + 4 + 5) / 4, (1 + 2 + 3 + 5 + 6 + 7) / 6], [(4 + 5 + 8 + 9 + 12 + 13) / 6, 10]]),
    ("avg-pad-include", op.nn.avg_pool2d, X44, dict(pool_size=3, strides=2, padding=1, count_include_pad=True),
     [[10 / 9, 24 / 9], [51 / 9, 90 / 9]]),
    ("max-pad", op.nn.max_pool2d, -X44, dict(pool_size=3, strides=2, padding=1), [[0, -1], [-4, -5]]),
    # ceil mode with padding: a window hanging past the padding counts only padding it covers.
    ("avg-ceil-include", op.nn.avg_pool2d, X55,
     dict(pool_size=3, strides=2, padding=(0, 0, 1, 1), ceil_mode=True, count_include_pad=True),
     [[6, 8, 27 / 6], [16, 18, 57 / 6], [63 / 6, 69 / 6, 24 / 4]]),
    # the third window would start in the trailing padding: ceil mode drops it (ONNX, PyTorch)
    ("ceil-drops-window-in-padding", op.nn.avg_pool2d, X44,
     dict(pool_size=2, strides=2, padding=(0, 0, 1, 1), ceil_mode=True), [[2.5, 4.5], [10.5, 12.5]]),
    ("max-dilation", op.nn.max_pool2d, X55, dict(pool_size=2, dilation=2, strides=3), [[12, 15], [27, 30]]),
]


@pytest.mark.parametrize("name,build,x,kwargs,expected", POOL_HAND, ids=[p[0] for p in POOL_HAND])
def test_pool_hand_computed(name, build, x, kwargs, expected):
    if name == "max-dilation":  # 5x5 is too small for stride 3 + dilated 3-wide window twice; use 6x6
        x = np.arange(36, dtype=np.float32).reshape(1, 1, 6, 6)
        expected = [[14, 17], [32, 35]]
    out = evaluate(lambda v: build(v, **kwargs), x)
    np.testing.assert_allclose(out[0, 0], np.array(expected, np.float64), rtol=1e-6)


POOL_LOOP_CASES = [
    ("k3s2", dict(pool_size=(3, 3), strides=(2, 2))),
    ("k3s2-pad1-ceil", dict(pool_size=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1), ceil_mode=True)),
    ("k2s1-asym-pad", dict(pool_size=(2, 3), strides=(1, 2), padding=(1, 0, 0, 2))),
    ("k2-dil2-ceil", dict(pool_size=(2, 2), strides=(2, 2), dilation=(2, 2), ceil_mode=True)),
    ("k3s3-ceil-pad", dict(pool_size=(3, 3), strides=(3, 3), padding=(1, 1, 1, 1), ceil_mode=True)),
]


@pytest.mark.parametrize("kind", ["max", "avg", "avg-include-pad"])
@pytest.mark.parametrize("name,kwargs", POOL_LOOP_CASES, ids=[c[0] for c in POOL_LOOP_CASES])
def test_pool_matches_loops(kind, name, kwargs):
    x = rand(1, 2, 7, 8)
    full = dict(pool_size=(1, 1), strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), ceil_mode=False)
    full.update(kwargs)
    include = kind == "avg-include-pad"
    want = pool2d_loops(x, kind[:3], count_include_pad=include, **full)
    if kind == "max":
        out = evaluate(lambda v: op.nn.max_pool2d(v, **kwargs), x)
    else:
        out = evaluate(lambda v: op.nn.avg_pool2d(v, count_include_pad=include, **kwargs), x)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_global_avg_pool2d_matches_loops():
    x = rand(2, 3, 4, 5)
    want = np.zeros((2, 3, 1, 1))
    for n, c in itertools.product(range(2), range(3)):
        want[n, c, 0, 0] = sum(float(v) for v in x[n, c].ravel()) / 20
    np.testing.assert_allclose(evaluate(op.nn.global_avg_pool2d, x), want, rtol=1e-5, atol=1e-6)


# ---- batch_norm / softmax / lrn -------------------------------------------------------------------

@pytest.mark.parametrize("center,scale", [(True, True), (False, True), (True, False), (False, False)],
                         ids=["center-scale", "scale-only", "center-only", "neither"])
def test_batch_norm_matches_loops(center, scale):
    x = rand(2, 3, 2, 2)
    gamma, beta, mean = rand(3), rand(3), rand(3)
    var = np.abs(rand(3)) + 0.5
    eps = 1e-3

    def build(*p):
        bn = op.nn.batch_norm(*p, epsilon=eps, center=center, scale=scale)
        return TupleGetItem(bn, 0)

    want = np.zeros(x.shape)
    for idx in itertools.product(*(range(d) for d in x.shape)):
        c = idx[1]
        v = (float(x[idx]) - float(mean[c])) / math.sqrt(float(var[c]) + eps)
        if scale:
            v *= float(gamma[c])
        if center:
            v += float(beta[c])
        want[idx] = v
    np.testing.assert_allclose(evaluate(build, x, gamma, beta, mean, var), want, rtol=1e-5, atol=1e-6)


def test_batch_norm_returns_a_tuple_with_the_statistics():
    x, g, b, m, v = rand(1, 2, 3), rand(2), rand(2), rand(2), np.abs(rand(2)) + 1
    outs = evaluate(lambda *p: op.nn.batch_norm(*p, axis=1), x, g, b, m, v)
    assert len(outs) == 3 and outs[0].shape == (1, 2, 3)
    np.testing.assert_array_equal(outs[1], m)
    np.testing.assert_array_equal(outs[2], v)


@pytest.mark.parametrize("axis", [-1, 0, 1], ids=["last", "axis0", "axis1"])
def test_softmax_sums_to_one_and_matches_formula(axis):
    x = rand(3, 4) * 10
    x[0, 0] = 80.0  # exp(80) overflows float32: the reference must subtract the max
    out = evaluate(lambda v: op.nn.softmax(v, axis=axis), x)
    np.testing.assert_allclose(out.sum(axis=axis), 1.0, rtol=1e-6)
    want = np.zeros(x.shape)
    for idx in itertools.product(range(3), range(4)):
        line = [idx[:axis % 2] + (j,) + idx[axis % 2 + 1:] for j in range(x.shape[axis])]
        top = max(float(x[i]) for i in line)
        want[idx] = math.exp(float(x[idx]) - top) / sum(math.exp(float(x[i]) - top) for i in line)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("size", [1, 3, 5, 4], ids=["size1", "size3", "size5", "size4-even"])
def test_lrn_matches_loops(size):
    x = rand(1, 6, 2, 3)
    bias, alpha, beta = 1.5, 0.3, 0.6
    want = np.zeros(x.shape)
    for n, c, y, z in itertools.product(*(range(d) for d in x.shape)):
        lo, hi = max(0, c - (size - 1) // 2), min(5, c + size // 2)
        total = sum(float(x[n, j, y, z]) ** 2 for j in range(lo, hi + 1))
        want[n, c, y, z] = float(x[n, c, y, z]) / (bias + alpha / size * total) ** beta
    out = evaluate(lambda v: op.nn.lrn(v, size=size, bias=bias, alpha=alpha, beta=beta), x)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


# ---- pad / dropout --------------------------------------------------------------------------------

PAD_CASES = [
    ("constant", dict(pad_width=((1, 0), (0, 2)), pad_value=9.0),
     [[9, 9, 9, 9, 9], [1, 2, 3, 9, 9], [4, 5, 6, 9, 9]]),
    ("reflect", dict(pad_width=((1, 1), (2, 1)), pad_mode="reflect"),
     [[6, 5, 4, 5, 6, 5], [3, 2, 1, 2, 3, 2], [6, 5, 4, 5, 6, 5], [3, 2, 1, 2, 3, 2]]),
    ("edge", dict(pad_width=((0, 1), (1, 1)), pad_mode="edge"),
     [[1, 1, 2, 3, 3], [4, 4, 5, 6, 6], [4, 4, 5, 6, 6]]),
]


@pytest.mark.parametrize("name,kwargs,expected", PAD_CASES, ids=[p[0] for p in PAD_CASES])
def test_pad_hand_written(name, kwargs, expected):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_array_equal(evaluate(lambda v: op.nn.pad(v, **kwargs), x), np.array(expected, np.float32))


def test_dropout_is_identity():
    x = rand(2, 3)
    np.testing.assert_array_equal(evaluate(lambda v: op.nn.dropout(v, rate=0.3), x), x)


# ---- shape ops ------------------------------------------------------------------------------------

@pytest.mark.parametrize("newshape,want", [
    ((0, -1), (2, 12)), ((-1,), (24,)), ((4, 0, 2), (4, 3, 2)), ((2, 3, 2, 2), (2, 3, 2, 2)),
], ids=["copy-infer", "flat", "copy-middle", "explicit"])
def test_reshape(newshape, want):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = evaluate(lambda v: op.reshape(v, newshape), x)
    assert out.shape == want
    assert out.ravel().tolist() == list(range(24))


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, 1)], ids=["reverse", "swap01", "rot", "neg"])
def test_transpose_matches_loops(axes):
    x = rand(2, 3, 4)
    out = evaluate(lambda v: op.transpose(v, axes), x)
    perm = (2, 1, 0) if axes is None else tuple(a % 3 for a in axes)
    assert out.shape == tuple(x.shape[a] for a in perm)
    for idx in itertools.product(*(range(d) for d in out.shape)):
        src = [0, 0, 0]
        for pos, a in enumerate(perm):
            src[a] = idx[pos]
        assert out[idx] == x[tuple(src)]


def test_concatenate_hand_written():
    a = np.array([[1, 2]], np.float32)
    b = np.array([[3, 4], [5, 6]], np.float32)
    out = evaluate(lambda p, q: op.concatenate([p, q], axis=0), a, b)
    assert out.tolist() == [[1, 2], [3, 4], [5, 6]]
    out = evaluate(lambda p, q: op.concatenate([p, p, p], axis=-1), a, b)
    assert out.tolist() == [[1, 2, 1, 2, 1, 2]]


@pytest.mark.parametrize("sections,axis,want", [
    (2, 1, [[[0, 1], [4, 5]], [[2, 3], [6, 7]]]),
    ((1, 3), 1, [[[0], [4]], [[1, 2], [5, 6]], [[3], [7]]]),
    (2, 0, [[[0, 1, 2, 3]], [[4, 5, 6, 7]]]),
], ids=["sections-axis1", "indices-axis1", "sections-axis0"])
def test_split_hand_written(sections, axis, want):
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    outs = evaluate(lambda v: op.split(v, sections, axis=axis), x)
    assert [o.tolist() for o in outs] == want


def test_squeeze_and_expand_dims():
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 1, 3)
    assert evaluate(op.squeeze, x).shape == (2, 3)
    assert evaluate(lambda v: op.squeeze(v, axis=[2]), x).shape == (1, 2, 3)
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert evaluate(lambda v: op.expand_dims(v, 1, 2), y).shape == (2, 1, 1, 3)
    assert evaluate(lambda v: op.expand_dims(v, -1), y).shape == (2, 3, 1)
    assert evaluate(lambda v: op.expand_dims(v, 0), y)[0].tolist() == y.tolist()


def test_batch_flatten():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)
    out = evaluate(op.nn.batch_flatten, x)
    assert out.shape == (2, 12) and out[1].tolist() == list(range(12, 24))


@pytest.mark.parametrize("axis,mode,indices,want", [
    (None, "clip", [[0, 5], [9, -2]], [[10, 15], [15, 10]]),
    (0, "clip", [1, 7], [[13, 14, 15], [13, 14, 15]]),
    (1, "wrap", [-1, 3, 4], [[12, 10, 11], [15, 13, 14]]),
], ids=["flat-clip", "axis0-clip", "axis1-wrap"])
def test_take_hand_written(axis, mode, indices, want):
    x = np.arange(10, 16, dtype=np.float32).reshape(2, 3)
    idx = np.array(indices, np.int32)
    assert evaluate(lambda d, i: op.take(d, i, axis=axis, mode=mode), x, idx).tolist() == want


# ---- type inference rejects bad inputs ------------------------------------------------------------

def f32(*shape):
    return TensorType(shape, "float32")


def i32(*shape):
    return TensorType(shape, "int32")


def _q(name, *args, **attrs):
    from byoc_compiler.op.registry import make_call
    return make_call(name, *args, **attrs)


_I8 = TensorType((1, 2, 4, 4), "int8")
BAD_TYPES = [
    ("qnn.quantize-int", lambda a: _q("qnn.quantize", a, scale=[0.1]), [i32(2)], ["qnn.quantize", "float32", "int32"]),
    ("qnn.dequantize-float", lambda a: _q("qnn.dequantize", a, scale=[0.1]), [f32(2)],
     ["qnn.dequantize", "float32"]),
    ("qnn.requantize-channels", lambda a: _q("qnn.requantize", a, input_scale=[0.1, 0.2, 0.3], output_scale=[1.0]),
     [i32(2, 2)], ["qnn.requantize", "input_scale", "3 values"]),
    ("qnn.conv2d-float", lambda a, b: _q("qnn.conv2d", a, b), [f32(1, 2, 4, 4), f32(3, 2, 1, 1)],
     ["qnn.conv2d", "int8 or uint8", "float32"]),
    ("qnn.conv2d-16x8-uint8-weights", lambda a, b: _q("qnn.conv2d", a, b, out_dtype="int64"),
     [TensorType((1, 2, 4, 4), "int16"), TensorType((3, 2, 1, 1), "uint8")],
     ["qnn.conv2d", "int8 weights with int16 data", "uint8"]),
    ("qnn.dense-int64-sums-of-int8", lambda a, b: _q("qnn.dense", a, b, out_dtype="int64"),
     [TensorType((2, 4), "int8"), TensorType((3, 4), "int8")], ["qnn.dense", "out_dtype", "int64"]),
    ("qnn.requantize-int64-float32", lambda a: _q("qnn.requantize", a, input_scale=[0.1], output_scale=[1.0]),
     [TensorType((2,), "int64")], ["qnn.requantize", "'tflite' for int64 data", "'float32'"]),
    ("qnn.requantize-int64-large-factor",
     lambda a: _q("qnn.requantize", a, input_scale=[300.0], output_scale=[1.0], out_dtype="int16", rounding="tflite"),
     [TensorType((2,), "int64")], ["qnn.requantize", "below 2**7 for int64 data", "exponents [9]"]),
    ("qnn.dense-K", lambda a, b: _q("qnn.dense", a, b), [TensorType((2, 5), "int8"), TensorType((3, 4), "int8")],
     ["qnn.dense", "(3, 4)"]),
    ("qnn.matmul-K", lambda a, b: _q("qnn.matmul", a, b), [TensorType((2, 5), "int8"), TensorType((4, 3), "int8")],
     ["qnn.matmul", "(4, 3)"]),
    ("qnn.add-dtype", lambda a, b: _q("qnn.add", a, b, lhs_scale=[1.0], rhs_scale=[1.0], output_scale=[1.0]),
     [TensorType((2,), "int8"), TensorType((2,), "uint8")], ["qnn.add", "int8", "uint8"]),
    ("qnn.mul-float", lambda a, b: _q("qnn.mul", a, b, lhs_scale=[1.0], rhs_scale=[1.0], output_scale=[1.0]),
     [f32(2), f32(2)], ["qnn.mul", "float32"]),
    ("qnn.softmax-float", lambda a: _q("qnn.softmax", a, input_scale=0.1), [f32(2, 3)], ["qnn.softmax", "float32"]),
    ("qnn.mean-uint8", lambda a: _q("qnn.mean", a, input_scale=0.1, output_scale=0.1), [TensorType((2, 3), "uint8")],
     ["qnn.mean", "int8 or int16", "uint8"]),
    ("qnn.sum-empty", lambda a: _q("qnn.sum", a, axis=[1], input_scale=0.1, output_scale=0.1),
     [TensorType((2, 0), "int8")], ["qnn.sum", "non-empty reduced axes"]),
    ("qnn.l2_normalize-uint8", lambda a: _q("qnn.l2_normalize", a), [TensorType((2, 3), "uint8")],
     ["qnn.l2_normalize", "int8", "uint8"]),
    ("qnn.subtract-float", lambda a, b: _q("qnn.subtract", a, b, lhs_scale=[1.0], rhs_scale=[1.0], output_scale=[1.0]),
     [f32(2), f32(2)], ["qnn.subtract", "float32"]),
    ("qnn.concatenate-count", lambda a, b: _q("qnn.concatenate", [a, b], input_scales=[1.0], input_zero_points=[0],
                                               output_scale=1.0), [_I8, _I8], ["qnn.concatenate", "input_scales"]),
    ("qnn.avg_pool2d-float", lambda a: _q("qnn.avg_pool2d", a, input_scale=[1.0], output_scale=[1.0]),
     [f32(1, 2, 4, 4)], ["qnn.avg_pool2d", "int8 or uint8", "float32"]),
    ("add-broadcast", lambda a, b: op.add(a, b), [f32(2, 3), f32(4, 3)], ["add", "'rhs'", "(2, 3)", "(4, 3)"]),
    ("add-dtype", lambda a, b: op.add(a, b), [f32(2), i32(2)], ["add", "dtype float32", "int32"]),
    ("exp-int", lambda a: op.exp(a), [i32(2)], ["exp", "float32", "int32"]),
    ("sigmoid-int", lambda a: op.sigmoid(a), [i32(2)], ["sigmoid", "int32"]),
    ("dense-K", lambda a, b: op.nn.dense(a, b), [f32(2, 5), f32(3, 4)], ["nn.dense", "'weight'", "(N, 5)", "(3, 4)"]),
    ("dense-units", lambda a, b: op.nn.dense(a, b, units=7), [f32(2, 5), f32(3, 5)], ["units", "(3, 5)"]),
    ("matmul-K", lambda a, b: op.nn.matmul(a, b), [f32(2, 5), f32(4, 3)], ["nn.matmul", "tensor_b", "(5, 3)"]),
    ("conv-channels", lambda a, b: op.nn.conv2d(a, b), [f32(1, 3, 8, 8), f32(4, 2, 3, 3)],
     ["nn.conv2d", "'weight'", "3 input channels", "(4, 2, 3, 3)"]),
    ("conv-groups", lambda a, b: op.nn.conv2d(a, b, groups=2), [f32(1, 3, 8, 8), f32(4, 1, 3, 3)],
     ["nn.conv2d", "divisible by groups=2", "3 channels"]),
    ("conv-3d-data", lambda a, b: op.nn.conv2d(a, b), [f32(3, 8, 8), f32(4, 3, 3, 3)], ["4-D", "3-D"]),
    ("conv-too-small", lambda a, b: op.nn.conv2d(a, b), [f32(1, 3, 2, 2), f32(4, 3, 3, 3)], ["spatial size"]),
    ("conv-channels-attr", lambda a, b: op.nn.conv2d(a, b, channels=8), [f32(1, 3, 8, 8), f32(4, 3, 3, 3)],
     ["8 output channels"]),
    ("bias-length", lambda a, b: op.nn.bias_add(a, b), [f32(1, 4, 2, 2), f32(3)],
     ["nn.bias_add", "'bias'", "(4,)", "(3,)"]),
    ("bias-axis", lambda a, b: op.nn.bias_add(a, b, axis=3), [f32(1, 4), f32(4)], ["axis in [-2, 1]", "axis 3"]),
    ("bn-mean", lambda *p: op.nn.batch_norm(*p), [f32(1, 4, 2, 2), f32(4), f32(4), f32(5), f32(4)],
     ["nn.batch_norm", "'moving_mean'", "(4,)", "(5,)"]),
    ("softmax-axis", lambda a: op.nn.softmax(a, axis=2), [f32(2, 3)], ["nn.softmax", "axis 2"]),
    ("softmax-int", lambda a: op.nn.softmax(a), [i32(2, 3)], ["float32", "int32"]),
    ("lrn-int", lambda a: op.nn.lrn(a), [i32(1, 4, 2, 2)], ["nn.lrn", "int32"]),
    ("leaky-int", lambda a: op.nn.leaky_relu(a), [i32(3)], ["nn.leaky_relu", "int32"]),
    ("pool-3d", lambda a: op.nn.max_pool2d(a, pool_size=2), [f32(1, 4, 4)], ["nn.max_pool2d", "4-D"]),
    ("pool-too-small", lambda a: op.nn.avg_pool2d(a, pool_size=5), [f32(1, 1, 4, 4)], ["spatial size"]),
    ("pool-pad-too-big", lambda a: op.nn.max_pool2d(a, pool_size=2, padding=2), [f32(1, 1, 4, 4)],
     ["padding smaller than the pool window"]),
    ("global-pool-2d", lambda a: op.nn.global_avg_pool2d(a), [f32(4, 4)], ["4-D", "2-D"]),
    ("reshape-size", lambda a: op.reshape(a, (5, -1)), [f32(2, 3)], ["reshape", "newshape (5, -1)", "(2, 3)"]),
    ("reshape-two-unknown", lambda a: op.reshape(a, (-1, -1)), [f32(2, 3)], ["more than one -1"]),
    ("transpose-perm", lambda a: op.transpose(a, (0, 0, 1)), [f32(2, 3, 4)], ["permutation"]),
    ("transpose-rank", lambda a: op.transpose(a, (1, 0)), [f32(2, 3, 4)], ["2-D tensor for axes"]),
    ("concat-shape", lambda a, b: op.concatenate([a, b], axis=1), [f32(2, 3), f32(3, 3)],
     ["concatenate", "data[1]", "(2, *)", "(3, 3)"]),
    ("concat-dtype", lambda a, b: op.concatenate([a, b]), [f32(2), i32(2)], ["data[1]", "int32"]),
    ("concat-axis", lambda a, b: op.concatenate([a, b], axis=2), [f32(2, 3), f32(2, 3)], ["axis 2"]),
    ("squeeze-non1", lambda a: op.squeeze(a, axis=[1]), [f32(1, 3)], ["squeeze", "size 1", "(1, 3)"]),
    ("expand-axis", lambda a: op.expand_dims(a, 4), [f32(2, 3)], ["expand_dims", "[-3, 2]", "axis 4"]),
    ("split-uneven", lambda a: op.split(a, 3, axis=1), [f32(2, 4)], ["split", "3 equal sections", "(2, 4)"]),
    ("split-indices", lambda a: op.split(a, (3, 1), axis=1), [f32(2, 4)], ["ascending split indices"]),
    ("take-float-index", lambda a, b: op.take(a, b), [f32(4), f32(2)], ["take", "'indices'", "int32 or int64"]),
    ("take-axis", lambda a, b: op.take(a, b, axis=1), [f32(4), i32(2)], ["take", "axis 1"]),
    ("pad-rank", lambda a: op.nn.pad(a, ((1, 1),)), [f32(2, 3)], ["nn.pad", "1 pairs", "(2, 3)"]),
    ("pad-reflect", lambda a: op.nn.pad(a, ((0, 0), (3, 0)), pad_mode="reflect"), [f32(2, 3)], ["reflect"]),
    ("dropout-int", lambda a: op.nn.dropout(a), [i32(2)], ["nn.dropout", "int32"]),
    ("batch-flatten-scalar", lambda a: op.nn.batch_flatten(a), [f32()], ["batch dimension"]),
    ("relu-tuple", lambda a: op.nn.relu(op.split(a, 2)), [f32(4)], ["nn.relu", "a tensor", "tuple"]),
    ("cast-bad-input", lambda a: op.cast(op.split(a, 2), "int32"), [f32(4)], ["cast", "tuple"]),
    ("clip-bool", lambda a: op.clip(a, 0, 1), [TensorType((2,), "bool")], ["clip", "bool"]),
    ("abs-bool", lambda a: op.abs(a), [TensorType((2,), "bool")], ["abs", "bool"]),
    ("neg-bool", lambda a: op.negative(a), [TensorType((2,), "bool")], ["negative"]),
    ("log-int", lambda a: op.log(a), [i32(2)], ["log"]),
    ("sqrt-int", lambda a: op.sqrt(a), [i32(2)], ["sqrt"]),
    ("tanh-int", lambda a: op.tanh(a), [i32(2)], ["tanh"]),
    ("divide-shape", lambda a, b: op.divide(a, b), [f32(3), f32(2)], ["divide"]),
    ("subtract-shape", lambda a, b: op.subtract(a, b), [f32(3), f32(2)], ["subtract"]),
    ("multiply-dtype", lambda a, b: op.multiply(a, b), [i32(3), f32(3)], ["multiply"]),
    ("maximum-shape", lambda a, b: op.maximum(a, b), [f32(3), f32(2)], ["maximum"]),
    ("minimum-shape", lambda a, b: op.minimum(a, b), [f32(3), f32(2)], ["minimum"]),
    ("relu-bool", lambda a: op.nn.relu(a), [TensorType((2,), "bool")], ["nn.relu"]),
    ("power-int", lambda a, b: op.power(a, b), [i32(2), i32(2)], ["power", "int32"]),
    ("erf-int", lambda a: op.erf(a), [i32(2)], ["erf", "int32"]),
    ("hard-sigmoid-int", lambda a: op.nn.hard_sigmoid(a), [i32(2)], ["nn.hard_sigmoid", "int32"]),
    ("hard-swish-int", lambda a: op.nn.hard_swish(a), [i32(2)], ["nn.hard_swish", "int32"]),
    ("gelu-int", lambda a: op.nn.gelu(a), [i32(2)], ["nn.gelu", "int32"]),
    *[(f"{n}-dtypes", lambda a, b, n=n: getattr(op, n)(a, b), [f32(2), i32(2)], [n, "dtype float32"])
      for n in ("equal", "less", "greater", "less_equal", "greater_equal")],
    *[(f"{n}-float", lambda a, b, n=n: getattr(op, n)(a, b), [f32(2), f32(2)], [n, "bool tensor"])
      for n in ("logical_and", "logical_or", "logical_xor")],
    ("not-float", lambda a: op.logical_not(a), [f32(2)], ["logical_not", "bool"]),
    ("where-condition", lambda a, b, c: op.where(a, b, c), [f32(2), f32(2), f32(2)], ["where", "'condition'"]),
    ("where-shapes", lambda a, b, c: op.where(a, b, c), [TensorType((2,), "bool"), f32(3), f32(2)], ["where", "'x'"]),
    *[(f"{n}-axis", lambda a, n=n: getattr(op, n)(a, axis=(2,)), [f32(2, 3)], [n, "axis 2"])
      for n in ("sum", "mean", "max", "min", "prod")],
    ("sum-repeated-axis", lambda a: op.sum(a, axis=(0, -2)), [f32(2, 3)], ["distinct axes"]),
    ("argmax-scalar", lambda a: op.argmax(a), [f32()], ["argmax", "at least 1 dimension"]),
    ("argmin-empty", lambda a: op.argmin(a, axis=1), [f32(2, 0)], ["argmin", "non-empty axis 1"]),
    ("slice-rank", lambda a: op.strided_slice(a, (0,), (1,), (1,)), [f32(2, 3)], ["strided_slice", "rank 1"]),
    ("slice-zero-step", lambda a: op.strided_slice(a, (0,), (1,), (0,)), [f32(2)], ["non-zero strides"]),
    ("tile-reps", lambda a: op.tile(a, (2,)), [f32(2, 3)], ["tile", "2 non-negative repeats"]),
    ("broadcast-to", lambda a: op.broadcast_to(a, (3, 4)), [f32(2, 1)], ["broadcast_to", "(3, 4)"]),
    ("batch-matmul-k", lambda a, b: op.nn.batch_matmul(a, b), [f32(2, 3, 4), f32(2, 5, 6)],
     ["nn.batch_matmul", "inner dimensions"]),
    ("batch-matmul-batch", lambda a, b: op.nn.batch_matmul(a, b), [f32(2, 3, 4), f32(3, 4, 6)], ["do not broadcast"]),
    ("layer-norm-gamma", lambda a, b, c: op.nn.layer_norm(a, b, c), [f32(2, 4), f32(3), f32(4)],
     ["nn.layer_norm", "'gamma'", "(4,)"]),
    ("resize-rank", lambda a: op.resize(a, (2, 2), (1.0, 1.0)), [f32(2, 2, 2)], ["image.resize", "2-D tensor"]),
]


@pytest.mark.parametrize("name,build,types,fragments", BAD_TYPES, ids=[b[0] for b in BAD_TYPES])
def test_type_inference_rejects(name, build, types, fragments):
    params = [Var(f"p{i}", t) for i, t in enumerate(types)]
    mod = IRModule.from_expr(Function(params, build(*params)))
    with pytest.raises(TypeInferenceError) as info:
        infer_type(mod)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in: {message}"
    assert "expected" in message and "found" in message or "more than one" in message


def test_every_op_has_a_rejection_test():
    rejected = set()
    for _, build, types, _ in BAD_TYPES:
        params = [Var(f"p{i}", t) for i, t in enumerate(types)]
        from byoc_compiler.ir import op_counts
        rejected.update(op_counts(build(*params)))
    missing = set(all_ops()) - rejected
    assert not missing, f"ops without a type-rejection test: {sorted(missing)}"


# ---- attribute validation -------------------------------------------------------------------------

BAD_ATTRS = [
    ("conv-strides-zero", lambda x: op.nn.conv2d(x, x, strides=(0, 1)), "'strides': must be positive"),
    ("conv-padding-3", lambda x: op.nn.conv2d(x, x, padding=(1, 2, 3)), "1, 2 or 4 integers"),
    ("conv-padding-negative", lambda x: op.nn.conv2d(x, x, padding=-1), "must not be negative"),
    ("conv-layout", lambda x: op.nn.conv2d(x, x, data_layout="NHWC"), "'NCHW'"),
    ("conv-strides-float", lambda x: op.nn.conv2d(x, x, strides=1.5), "a list of integers"),
    ("pool-size-3", lambda x: op.nn.max_pool2d(x, pool_size=(1, 2, 3)), "1 or 2 integers"),
    ("pool-size-zero", lambda x: op.nn.avg_pool2d(x, pool_size=0), "must be positive"),
    ("cast-dtype", lambda x: op.cast(x, "bfloat16"), "must be one of float32"),
    ("clip-missing", lambda x: op.make_call("clip", x, a_min=0.0), "'a_max' is required"),
    ("take-mode", lambda x: op.take(x, x, mode="fast"), "'clip', 'wrap'"),
    ("pad-mode", lambda x: op.nn.pad(x, ((0, 0),), pad_mode="symmetric"), "'constant', 'reflect', 'edge', 'wrap'"),
    ("pad-width-shape", lambda x: op.nn.pad(x, (1, 2)), "(before, after) integer pairs"),
    ("pad-negative", lambda x: op.nn.pad(x, ((0, -1),)), "must not be negative"),
    ("dropout-rate", lambda x: op.nn.dropout(x, rate=1.0), "in [0, 1)"),
    ("split-float", lambda x: op.split(x, 1.5), "an integer or a list of integers"),
    ("lrn-size", lambda x: op.nn.lrn(x, size=0), "must be positive"),
    ("unknown-attr", lambda x: op.make_call("nn.relu", x, alpha=1.0), "unknown attribute 'alpha'"),
    ("arg-count", lambda x: op.make_call("add", x), "takes 2 arguments"),
    ("unknown-op", lambda x: op.make_call("nn.relu6", x), "Did you mean"),
]


@pytest.mark.parametrize("name,build,fragment", BAD_ATTRS, ids=[b[0] for b in BAD_ATTRS])
def test_attribute_validation(name, build, fragment):
    with pytest.raises(OpError) as info:
        build(Var("x", f32(1, 1, 4, 4)))
    assert fragment in str(info.value)


@pytest.mark.parametrize("given,want", [(1, (1, 1, 1, 1)), ((1, 2), (1, 2, 1, 2)), ((1, 2, 3, 4), (1, 2, 3, 4))],
                         ids=["one", "two", "four"])
def test_padding_normalized_to_four(given, want):
    assert op.nn.conv2d(Var("x"), Var("w"), padding=given).attrs.padding == want
    assert op.nn.max_pool2d(Var("x"), padding=given).attrs.padding == want


def test_calls_carry_every_attribute():
    for name, opdef in all_ops().items():
        required = {a.name: _sample(a) for a in opdef.attrs if a.default is op.registry.REQUIRED}
        args = [[Var("a"), Var("b")]] if opdef.tuple_input else [Var(n) for n in opdef.inputs]
        call = op.make_call(name, *args, **required)
        assert list(call.attrs) == [a.name for a in opdef.attrs], name


def _sample(attr):
    if attr.kind == "floats":   # the qnn ops' scales
        return (0.5,)
    if attr.kind == "ints":     # the qnn ops' zero points
        return (0,)
    return {"a_min": 0.0, "a_max": 1.0, "dtype": "int32", "newshape": (-1,), "axis": 0,
            "indices_or_sections": 2, "pad_width": ((0, 0),), "output_scale": 0.5, "input_scale": 0.5}[attr.name]


def test_python_scalars_become_constants():
    call = op.add(Var("x", f32(2)), 1.5)
    assert call.args[1].data.dtype == np.float32 and float(call.args[1].data) == 1.5


def test_describe_ops_lists_every_op_with_defaults():
    text = op.describe_ops()
    for name in all_ops():
        assert name in text
    assert "strides=(1, 1)" in text and "count_include_pad=False" in text and "a_min, a_max" in text


# ---- pools against onnxruntime (the de-facto ONNX semantics) --------------------------------------

ORT_POOL_CASES = [
    ("max-k3s2-ceil", "MaxPool", dict(pool_size=3, strides=2, ceil_mode=True)),
    ("max-k2s2-pad-ceil", "MaxPool", dict(pool_size=2, strides=2, padding=(1, 0, 1, 1), ceil_mode=True)),
    ("max-dilation2-ceil", "MaxPool", dict(pool_size=2, strides=2, dilation=2, ceil_mode=True)),
    ("avg-k3s3-ceil", "AveragePool", dict(pool_size=3, strides=3, ceil_mode=True)),
    ("avg-k3s2-pad-ceil-include", "AveragePool",
     dict(pool_size=3, strides=2, padding=(1, 1, 2, 0), ceil_mode=True, count_include_pad=True)),
    ("avg-k3s2-pad-ceil-exclude", "AveragePool", dict(pool_size=3, strides=2, padding=1, ceil_mode=True)),
]


@pytest.mark.parametrize("name,kind,kwargs", ORT_POOL_CASES, ids=[c[0] for c in ORT_POOL_CASES])
def test_pool_matches_onnxruntime(name, kind, kwargs):
    import onnxruntime as ort  # a test dependency (pyproject's test extras), never optional
    from onnx import TensorProto, helper

    x = rand(1, 2, 7, 8)
    build = op.nn.max_pool2d if kind == "MaxPool" else op.nn.avg_pool2d
    attrs = build(Var("x"), **kwargs).attrs
    onnx_attrs = dict(kernel_shape=list(attrs.pool_size), strides=list(attrs.strides), ceil_mode=int(attrs.ceil_mode),
                      pads=[attrs.padding[0], attrs.padding[1], attrs.padding[2], attrs.padding[3]])
    if kind == "MaxPool":
        onnx_attrs["dilations"] = list(attrs.dilation)
    else:
        onnx_attrs["count_include_pad"] = int(attrs.count_include_pad)
    graph = helper.make_graph([helper.make_node(kind, ["x"], ["y"], **onnx_attrs)], "pool",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    want = session.run(None, {"x": x})[0]
    out = evaluate(lambda v: build(v, **kwargs), x)
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
