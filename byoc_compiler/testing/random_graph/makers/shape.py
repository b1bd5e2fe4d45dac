"""Random-graph makers of the shape ops and reductions: views, copies, slices and reductions over random
axes."""
from __future__ import annotations

import math


def pad(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    mode = b.choice(("constant", "reflect", "edge"))
    widths = []
    for d in shape:
        hi = d - 1 if mode == "reflect" else 2
        widths.append((int(b.rng.integers(0, min(hi, 2) + 1)), int(b.rng.integers(0, min(hi, 2) + 1))))
    value = float(b.choice((0.0, 1.5))) if b.dtype(x) == "float32" else 0.0
    return b.step("nn.pad", [x], max(b.bound(x), abs(value)), pad_width=tuple(widths), pad_value=value,
                  pad_mode=mode)


def reshape(b, x):
    shape = b.shape(x)
    n = math.prod(shape)
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    first = b.choice(divisors)
    form = b.choice(("flat", "two", "zero"))
    if form == "flat":
        newshape = (-1,)
    elif form == "two" or not shape:
        newshape = (first, -1)
    else:
        newshape = (0, -1)
    return b.step("reshape", [x], b.bound(x), newshape=newshape)


def transpose(b, x):
    rank = len(b.shape(x))
    if rank < 2:
        return None
    axes = None if b.rng.random() < 0.3 else tuple(int(a) for a in b.rng.permutation(rank))
    return b.step("transpose", [x], b.bound(x), axes=axes)


def concatenate(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    axis = int(b.rng.integers(-len(shape), len(shape)))
    other = list(shape)
    other[axis] = b.choice((1, 2, 3))
    dt = b.dtype(x)
    c = b.const(tuple(other), dt, *((-1.0, 1.0) if dt == "float32" else (0, 7)))
    parts = [x, c, x] if b.rng.random() < 0.3 else [c, x]
    return b.step("concatenate", parts, max(b.bound(x), b.bound(c)), axis=axis)


def squeeze(b, x):
    shape = b.shape(x)
    ones = [i for i, d in enumerate(shape) if d == 1]
    if not ones:
        return None
    axis = None if b.rng.random() < 0.4 else (b.choice(ones),)
    return b.step("squeeze", [x], b.bound(x), axis=axis)


def expand_dims(b, x):
    rank = len(b.shape(x))
    if rank >= 4:
        return None
    return b.step("expand_dims", [x], b.bound(x), axis=int(b.rng.integers(-rank - 1, rank + 1)), num_newaxis=1)


def batch_flatten(b, x):
    return None if len(b.shape(x)) < 2 else b.step("nn.batch_flatten", [x], b.bound(x))


def split(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    axis = int(b.rng.integers(len(shape)))
    d = shape[axis]
    sections = [s for s in (2, 3) if d % s == 0]
    if sections and b.rng.random() < 0.5:
        spec, count = b.choice(sections), None
        count = spec
    else:
        cut = sorted({int(v) for v in b.rng.integers(1, d + 1, size=2)}) if d > 1 else [1]
        spec, count = tuple(cut), len(cut) + 1
    field_ = int(b.rng.integers(count))
    return b.step("split", [x], b.bound(x), field_, indices_or_sections=spec, axis=axis)


def take(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    mode = b.choice(("clip", "wrap"))
    axis = None if b.rng.random() < 0.3 else int(b.rng.integers(len(shape)))
    n = math.prod(shape) if axis is None else shape[axis]
    # Out-of-range and negative indices on purpose: that is what the mode is for.
    idx = b.const((b.choice((1, 3, 5)),), "int32", -n - 2, n + 2)
    return b.step("take", [x, idx], b.bound(x), axis=axis, mode=mode)


def reduce(op):
    def make(b, x):
        shape = b.shape(x)
        if not shape or (op in ("mean", "prod") and b.dtype(x) != "float32"):
            return None
        axes = tuple(sorted({int(a) for a in b.rng.integers(0, len(shape), size=int(b.rng.integers(1, 3)))}))
        axis = None if b.rng.random() < 0.2 else axes
        count = math.prod(shape if axis is None else [shape[a] for a in axes])
        if op == "prod" and count > 8:      # checked first: bound ** count overflows a float for large counts
            return None
        bound = b.bound(x) * count if op == "sum" else b.bound(x) ** count if op == "prod" else b.bound(x)
        return b.step(op, [x], bound, axis=axis, keepdims=bool(b.rng.random() < 0.5))
    return make


def arg(op):
    def make(b, x):
        shape = b.shape(x)
        if not shape:
            return None
        axis = int(b.rng.integers(-len(shape), len(shape)))
        index = b.step(op, [x], float(shape[axis]), axis=axis, keepdims=bool(b.rng.random() < 0.5),
                       select_last_index=bool(b.rng.random() < 0.5))
        return None if index is None else b.step("cast", [index], float(shape[axis]), dtype="float32")
    return make


def strided_slice(b, x):
    shape = b.shape(x)
    if not shape:
        return None
    begin, end, strides = [], [], []
    for d in shape:
        step = int(b.choice((1, 1, 2, -1)))
        start = int(b.rng.integers(-d, d))
        begin.append(start)
        end.append(int(b.choice((d + 5, -d - 5))) if step < 0 else d + 5)
        strides.append(step)
    return b.step("strided_slice", [x], b.bound(x), begin=tuple(begin), end=tuple(end), strides=tuple(strides))


def tile(b, x):
    shape = b.shape(x)
    reps = tuple(int(b.choice((1, 1, 2, 3))) for _ in shape)
    return b.step("tile", [x], b.bound(x), reps=reps)


def broadcast_to(b, x):
    shape = b.shape(x)
    if len(shape) >= 4:
        return None
    target = (int(b.choice((2, 3))),) + tuple(d if d != 1 else int(b.choice((1, 2, 4))) for d in shape)
    return b.step("broadcast_to", [x], b.bound(x), shape=target)
