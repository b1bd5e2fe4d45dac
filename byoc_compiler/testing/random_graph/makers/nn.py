"""Random-graph makers of the nn ops: dense, matmul, convolution, pools, normalizations, resize (4-D
operands come from `nchw`, a reshape of any float value)."""
from __future__ import annotations

import math

from ..builder import SMALL_DIMS, Builder


def dense(b, x):
    if b.dtype(x) != "float32" or not b.shape(x):
        return None
    k = b.shape(x)[-1]
    units = b.choice(SMALL_DIMS + (31,))
    w = b.const((units, k), "float32", -1 / math.sqrt(k), 1 / math.sqrt(k))
    return b.step("nn.dense", [x, w], b.bound(x) * math.sqrt(k), units=units if b.rng.random() < 0.5 else None)


def matmul(b, x):
    if b.dtype(x) != "float32" or len(b.shape(x)) != 2:
        return None
    ta, tb = bool(b.rng.random() < 0.3), bool(b.rng.random() < 0.5)
    m, k = b.shape(x)[::-1] if ta else b.shape(x)
    n = b.choice(SMALL_DIMS)
    w = b.const((n, k) if tb else (k, n), "float32", -1 / math.sqrt(k), 1 / math.sqrt(k))
    return b.step("nn.matmul", [x, w], b.bound(x) * math.sqrt(k), transpose_a=ta, transpose_b=tb)


def bias_add(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or not shape:
        return None
    axis = int(b.rng.integers(-len(shape), len(shape)))
    bias = b.const((shape[axis],), "float32")
    return b.step("nn.bias_add", [x, bias], b.bound(x) + 1, axis=axis)


def nchw(b: Builder, x: int) -> int | None:
    """x as a 4-D float tensor (reshaped when it has another rank)."""
    if b.dtype(x) != "float32":
        return None
    shape = b.shape(x)
    if len(shape) == 4:
        return x
    n = math.prod(shape)
    for c in (3, 2, 1):
        if n % c == 0:
            rest = n // c
            for h in range(int(math.isqrt(rest)), 0, -1):
                if rest % h == 0:
                    return b.step("reshape", [x], b.bound(x), newshape=(1, c, h, rest // h))
    return None


def conv2d(b, x):
    x = nchw(b, x)
    if x is None:
        return None
    _, c, h, w = b.shape(x)
    kh, kw = b.choice((1, 2, 3)), b.choice((1, 3))
    groups = b.choice((1, 1, c)) if c > 1 else 1
    out_c = c * b.choice((1, 2)) if groups == c else b.choice((1, 2, 3, 5))
    stride = (b.choice((1, 1, 2)), b.choice((1, 2)))
    dilation = (b.choice((1, 1, 2)), 1)
    pad = tuple(int(v) for v in b.rng.integers(0, 2, size=4))
    fan_in = (c // groups) * kh * kw
    wt = b.const((out_c, c // groups, kh, kw), "float32", -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
    return b.step("nn.conv2d", [x, wt], b.bound(x) * math.sqrt(fan_in), strides=stride, padding=pad,
                  dilation=dilation, groups=groups)


def window_attrs(b, average: bool) -> dict:
    size = (b.choice((1, 2, 3)), b.choice((1, 2, 3)))
    attrs = dict(pool_size=size, strides=(b.choice((1, 2)), b.choice((1, 2))),
                 padding=tuple(int(v) for v in b.rng.integers(0, 2, size=4)),
                 ceil_mode=bool(b.rng.random() < 0.3))
    if any(p >= s for p, s in zip(attrs["padding"], size + size)):
        attrs["padding"] = (0, 0, 0, 0)   # a window of padding only has no defined max/average
    if attrs["ceil_mode"]:
        attrs["padding"] = (0, 0, 0, 0)
    if average:
        attrs["count_include_pad"] = bool(b.rng.random() < 0.5)
    return attrs


def pool(op):
    def make(b, x):
        x = nchw(b, x)
        if x is None:
            return None
        return b.step(op, [x], b.bound(x), **window_attrs(b, op == "nn.avg_pool2d"))
    return make


def global_pool(b, x):
    x = nchw(b, x)
    return None if x is None else b.step("nn.global_avg_pool2d", [x], b.bound(x))


def batch_norm(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or len(shape) < 2:
        return None
    axis = int(b.rng.integers(1, len(shape)))
    c = shape[axis]
    args = [x, b.const((c,), "float32", 0.5, 1.5), b.const((c,), "float32", -0.1, 0.1),
            b.const((c,), "float32", -0.1, 0.1), b.const((c,), "float32", 0.5, 1.5)]
    return b.step("nn.batch_norm", args, b.bound(x) * 2 + 1, 0, axis=axis)


def softmax(b, x):
    if b.dtype(x) != "float32" or not b.shape(x):
        return None
    return b.step("nn.softmax", [x], 1.0, axis=int(b.rng.integers(-len(b.shape(x)), len(b.shape(x)))))


def lrn(b, x):
    x = nchw(b, x)
    if x is None:
        return None
    return b.step("nn.lrn", [x], b.bound(x) * 2, size=b.choice((1, 3, 5)), axis=1,
                  alpha=float(b.choice((1e-4, 0.1))))


def dropout(b, x):
    return b.step("nn.dropout", [x], b.bound(x), rate=0.5)


def batch_matmul(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or len(shape) < 3:
        return None
    k, n = shape[-1], b.choice(SMALL_DIMS)
    tb = bool(b.rng.random() < 0.5)
    w = b.const(shape[:-2][-1:] + ((n, k) if tb else (k, n)), "float32", -1 / math.sqrt(k), 1 / math.sqrt(k))
    return b.step("nn.batch_matmul", [x, w], b.bound(x) * math.sqrt(k), transpose_b=tb)


def layer_norm(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or not shape:
        return None
    axis = int(b.rng.integers(-len(shape), len(shape)))
    normalized = shape[axis % len(shape):]
    gamma, beta = b.const(normalized, "float32"), b.const(normalized[-1:], "float32")
    size = math.prod(normalized)
    return b.step("nn.layer_norm", [x, gamma, beta], math.sqrt(size) + 1, axis=axis,
                  epsilon=float(b.choice((1e-5, 1e-3))))


def resize(b, x):
    shape = b.shape(x)
    if b.dtype(x) != "float32" or not shape:
        return None
    method = b.choice(("nearest", "linear", "cubic"))
    scales = tuple(float(b.choice((1.0, 0.5, 2.0, 1.5))) if i >= len(shape) - 2 else 1.0 for i in range(len(shape)))
    size = tuple(max(1, int(d * s)) for d, s in zip(shape, scales))
    mode = b.choice(("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"))
    return b.step("image.resize", [x], b.bound(x) * (2.0 if method == "cubic" else 1.0), size=size,
                  scales=tuple(n / d for n, d in zip(size, shape)), method=method,
                  coordinate_transformation_mode=mode)
