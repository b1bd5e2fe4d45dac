"""Convolution and pooling written as their definitions, one output element at a time.

An oracle independent of the op registry's numpy references (which vectorize) and of every C
kernel: tests compare both against these. Python loops, so tiny shapes only. Layout NCHW,
`padding` is (top, left, bottom, right) like the ops' attributes.
"""
from __future__ import annotations

import itertools
import math

import numpy as np


def conv2d_loops(x, w, strides, padding, dilation, groups) -> np.ndarray:
    """nn.conv2d (OIHW weights, grouped) in float64."""
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = padding
    oh = (h + pt + pb - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pl + pr - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    per_group = o // groups
    out = np.zeros((n, o, oh, ow))
    for b, oc, y, z in itertools.product(range(n), range(o), range(oh), range(ow)):
        g = oc // per_group
        total = 0.0
        for ic, ky, kx in itertools.product(range(cg), range(kh), range(kw)):
            row = y * strides[0] - pt + ky * dilation[0]
            col = z * strides[1] - pl + kx * dilation[1]
            if 0 <= row < h and 0 <= col < wd:
                total += float(x[b, g * cg + ic, row, col]) * float(w[oc, ic, ky, kx])
        out[b, oc, y, z] = total
    return out


def pool_out_size(size, before, after, k, s, d, ceil_mode) -> int:
    """Output length of one pooled axis; in ceil mode a last window starting in the trailing
    padding is dropped (ONNX, PyTorch)."""
    span = size + before + after - d * (k - 1) - 1
    out = (math.ceil(span / s) if ceil_mode else span // s) + 1
    return out - 1 if ceil_mode and (out - 1) * s >= size + before else out


def pool2d_loops(x, kind, pool_size, strides, padding, dilation, ceil_mode, count_include_pad) -> np.ndarray:
    """nn.max_pool2d (kind "max") or nn.avg_pool2d (kind "avg") in float64: per output window,
    its positions inside the input; an average divides by those, or with count_include_pad by
    the positions inside the padded input."""
    n, c, h, w = x.shape
    pt, pl, pb, pr = padding
    oh = pool_out_size(h, pt, pb, pool_size[0], strides[0], dilation[0], ceil_mode)
    ow = pool_out_size(w, pl, pr, pool_size[1], strides[1], dilation[1], ceil_mode)
    out = np.zeros((n, c, oh, ow))
    for b, ch, y, z in itertools.product(range(n), range(c), range(oh), range(ow)):
        values, padded = [], 0
        for ky, kx in itertools.product(range(pool_size[0]), range(pool_size[1])):
            row = y * strides[0] - pt + ky * dilation[0]
            col = z * strides[1] - pl + kx * dilation[1]
            if -pt <= row < h + pb and -pl <= col < w + pr:
                padded += 1
            if 0 <= row < h and 0 <= col < w:
                values.append(float(x[b, ch, row, col]))
        if kind == "max":
            out[b, ch, y, z] = max(values)
        else:
            out[b, ch, y, z] = sum(values) / (padded if count_include_pad else len(values))
    return out
