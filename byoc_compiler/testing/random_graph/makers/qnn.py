"""Random-graph makers of the quantized ops: int8/uint8 values come from qnn.quantize of a float value."""
from __future__ import annotations

import numpy as np

from ..builder import broadcast_partner
from .nn import nchw, window_attrs


def scale_for(b, x) -> float:
    """A quantization scale mapping x's bound to about 100 steps (a power-of-two fraction keeps it exact)."""
    return float(np.float32(max(b.bound(x), 1e-3) / 100.0))


def quantize(b, x):
    if b.dtype(x) != "float32":
        return None
    dtype = b.choice(("int8", "uint8"))
    zp = int(b.rng.integers(-10, 11)) + (128 if dtype == "uint8" else 0)
    return b.step("qnn.quantize", [x], 255.0, scale=[scale_for(b, x)], zero_point=[zp], out_dtype=dtype)


def q8(b, x) -> int | None:
    """x as an int8/uint8 value: itself, or quantized."""
    return x if b.dtype(x) in ("int8", "uint8") else quantize(b, x)


def dequantize(b, x):
    x = q8(b, x)
    if x is None:
        return None
    return b.step("qnn.dequantize", [x], 256 * 0.05, scale=[0.05], zero_point=[int(b.rng.integers(-3, 4))])


def requantize(b, x):
    if b.dtype(x) not in ("int8", "uint8", "int32"):
        x = q8(b, x)
        if x is None:
            return None
    return b.step("qnn.requantize", [x], 255.0, input_scale=[0.02], output_scale=[b.choice((0.05, 0.3, 7.0))],
                  output_zero_point=[int(b.rng.integers(-5, 6))], out_dtype="int8")


def q8_nchw(b, x) -> int | None:
    """x as a 4-D int8/uint8 value: itself, or a float value made 4-D and quantized."""
    if b.dtype(x) in ("int8", "uint8"):
        return x if len(b.shape(x)) == 4 else None
    x = nchw(b, x)
    return None if x is None else quantize(b, x)


def qconv2d(b, x):
    x = q8_nchw(b, x)
    if x is None:
        return None
    _, c, h, w = b.shape(x)
    kh, kw = b.choice((1, 3)), b.choice((1, 2))
    groups = b.choice((1, c))
    out_c = c if groups == c else b.choice((1, 2, 5))
    wt = b.const((out_c, c // groups, kh, kw), b.dtype(x), 0 if b.dtype(x) == "uint8" else -127, 127)
    zp = 128 if b.dtype(x) == "uint8" else 0
    return b.step("qnn.conv2d", [x, wt], 255.0 * 255.0 * (c // groups) * kh * kw, padding=int(b.rng.integers(0, 2)),
                  groups=groups, input_zero_point=zp, kernel_zero_point=[zp])


def qdense(b, x):
    x = q8(b, x)
    if x is None or not b.shape(x):
        return None
    k = b.shape(x)[-1]
    wt = b.const((b.choice((1, 3, 7)), k), b.dtype(x), 0 if b.dtype(x) == "uint8" else -127, 127)
    return b.step("qnn.dense", [x, wt], 255.0 * 255.0 * k, input_zero_point=int(b.rng.integers(-3, 4)),
                  kernel_zero_point=[int(b.rng.integers(0, 3))])


def qmatmul(b, x):
    x = q8(b, x)
    if x is not None and b.shape(x) and len(b.shape(x)) != 2:   # as a matrix: (rows, last dim)
        x = b.step("reshape", [x], b.bound(x), newshape=(-1, b.shape(x)[-1]))
    if x is None or len(b.shape(x)) != 2:
        return None
    k = b.shape(x)[1]
    wt = b.const((k, b.choice((1, 4))), b.dtype(x), 0 if b.dtype(x) == "uint8" else -127, 127)
    return b.step("qnn.matmul", [x, wt], 255.0 * 255.0 * k, a_zero_point=int(b.rng.integers(-3, 4)))


def qbinary(op):
    def make(b, x):
        x = q8(b, x)
        if x is None:
            return None
        lo, hi = (0, 255) if b.dtype(x) == "uint8" else (-128, 127)
        other = b.const(broadcast_partner(b, x), b.dtype(x), lo, hi)
        zp = 128 if b.dtype(x) == "uint8" else 0
        extra = {"rounding": b.choice(("float32", "fixed_point"))} if op == "qnn.add" else {}
        return b.step(op, [x, other], 255.0, lhs_scale=[0.05], lhs_zero_point=zp, rhs_scale=[0.03],
                      rhs_zero_point=zp + 1, output_scale=[b.choice((0.04, 0.2))], output_zero_point=zp - 2, **extra)
    return make


def qconcatenate(b, x):
    x = q8(b, x)
    if x is None or not b.shape(x):
        return None
    zp = 128 if b.dtype(x) == "uint8" else 0
    return b.step("qnn.concatenate", [x, x], 255.0, input_scales=[0.05, 0.1], input_zero_points=[zp, zp + 3],
                  output_scale=0.07, output_zero_point=zp, axis=int(b.rng.integers(0, len(b.shape(x)))))


def qavg_pool(b, x):
    x = q8_nchw(b, x)
    if x is None:
        return None
    zp = 128 if b.dtype(x) == "uint8" else 0
    return b.step("qnn.avg_pool2d", [x], 255.0, input_scale=[0.05], input_zero_point=zp + 2,
                  output_scale=[b.choice((0.04, 0.2))], output_zero_point=zp - 1, **window_attrs(b, True))


def qsoftmax(b, x):
    x = q8(b, x)
    if x is None or not b.shape(x) or b.dtype(x) != "int8":
        return None
    return b.step("qnn.softmax", [x], 128.0, input_scale=b.choice((0.05, 0.3)),
                  axis=int(b.rng.integers(0, len(b.shape(x)))))


def qreduce(op):
    def make(b, x):
        x = q8(b, x)
        if x is None or not b.shape(x) or b.dtype(x) != "int8":
            return None
        axes = sorted({int(a) for a in b.rng.integers(0, len(b.shape(x)), size=int(b.rng.integers(1, 3)))})
        return b.step(op, [x], 128.0, axis=axes, keepdims=bool(b.rng.random() < 0.5), input_scale=0.05,
                      input_zero_point=int(b.rng.integers(-3, 4)), output_scale=b.choice((0.03, 0.5)),
                      output_zero_point=int(b.rng.integers(-5, 6)))
    return make


def ql2_normalize(b, x):
    x = q8(b, x)
    if x is None or not b.shape(x) or b.dtype(x) != "int8":
        return None
    return b.step("qnn.l2_normalize", [x], 128.0, input_zero_point=int(b.rng.integers(-3, 4)),
                  axis=int(b.rng.integers(0, len(b.shape(x)))))
