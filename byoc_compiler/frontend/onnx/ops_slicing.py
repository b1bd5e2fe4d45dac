"""Slice, Split, Expand and Tile. Their index arguments (starts/ends/axes/steps, split sizes,
shapes, repeats) must be known at import time."""
from __future__ import annotations

import numpy as np

from .context import Context, Node, NodeError
from .table import converter

_BIG = 2 ** 62


def _ints(data) -> list[int] | None:
    return None if data is None else [int(v) for v in np.ravel(data)]


def _slice(node: Node, ctx: Context, starts, ends, axes, steps):
    x = node.required(0, "data")
    shape = ctx.shape(x)
    ndim = len(shape)
    if starts is None or ends is None:
        raise NodeError("starts and ends are required")
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise NodeError(f"starts, ends, axes and steps have different lengths ({len(starts)}, {len(ends)}, "
                        f"{len(axes)}, {len(steps)})")
    begin, end, stride = [0] * ndim, [_BIG] * ndim, [1] * ndim
    seen = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        if not -ndim <= a < ndim:
            raise NodeError(f"axis {a} is out of range for a {ndim}-D input")
        a %= ndim
        if a in seen:
            raise NodeError(f"axis {a} is sliced twice")
        if st == 0:
            raise NodeError("a step of 0 is not allowed")
        seen.add(a)
        clamp = lambda v: max(-_BIG, min(_BIG, v))  # noqa: E731 - INT64_MAX/MIN stand for "to the end"
        begin[a], end[a], stride[a] = clamp(s), clamp(e), st
    return [ctx.call("strided_slice", x, begin=tuple(begin), end=tuple(end), strides=tuple(stride))]


@converter("Slice", (1,))
def _slice_attrs(node: Node, ctx: Context):
    return _slice(node, ctx, node.attr("starts"), node.attr("ends"), node.attr("axes"), None)


# 10 moves the arguments to inputs and adds steps; 11 allows negative axes; 13 adds types.
@converter("Slice", (10, 11, 13))
def _slice_inputs(node: Node, ctx: Context):
    return _slice(node, ctx, _ints(ctx.constant_input(node, 1, "starts")), _ints(ctx.constant_input(node, 2, "ends")),
                  _ints(ctx.constant_input(node, 3, "axes")), _ints(ctx.constant_input(node, 4, "steps")))


# ---- Split ------------------------------------------------------------------------------------------

def _split(node: Node, ctx: Context, sizes: list[int] | None):
    x = node.required(0, "input")
    shape = ctx.shape(x)
    axis = int(node.attr("axis", 0))
    if not -len(shape) <= axis < len(shape):
        raise NodeError(f"axis {axis} is out of range for a {len(shape)}-D input")
    axis %= len(shape)
    dim = shape[axis]
    count = len(node.output_names)
    if sizes is None:
        parts = node.attr("num_outputs")
        if parts is not None:            # 18: the last piece may be smaller
            chunk = -(-dim // int(parts))
            sizes = [min(chunk, max(0, dim - i * chunk)) for i in range(int(parts))]
        else:
            if dim % count:
                raise NodeError(f"axis {axis} of size {dim} does not split into {count} equal outputs")
            sizes = [dim // count] * count
    if sum(sizes) != dim or any(s < 0 for s in sizes):
        raise NodeError(f"split sizes {sizes} do not add up to axis {axis} of size {dim}")
    if len(sizes) != count:
        raise NodeError(f"{len(sizes)} split sizes for {count} outputs")
    edges = list(np.cumsum(sizes)[:-1])
    pieces = ctx.call("split", x, indices_or_sections=tuple(int(e) for e in edges), axis=axis)
    return [ctx.item(pieces, i) for i in range(count)]


_MAX_OUTPUTS = 1 << 16


@converter("Split", (2, 11), outputs=_MAX_OUTPUTS)
def _split_attr(node: Node, ctx: Context):
    return _split(node, ctx, node.attr("split") and [int(v) for v in node.attr("split")])


@converter("Split", (13, 18), outputs=_MAX_OUTPUTS)
def _split_input(node: Node, ctx: Context):
    return _split(node, ctx, _ints(ctx.constant_input(node, 1, "split")))


# ---- Expand, Tile -----------------------------------------------------------------------------------

@converter("Expand", (8, 13))
def _expand(node: Node, ctx: Context):
    x = node.required(0, "input")
    target = _ints(ctx.constant_input(node, 1, "shape"))
    if target is None:
        raise NodeError("input 1 (shape) is missing")
    try:
        out = tuple(np.broadcast_shapes(ctx.shape(x), tuple(target)))
    except ValueError:
        raise NodeError(f"shape {target} does not broadcast with the input shape {ctx.shape(x)}") from None
    if out == ctx.shape(x):
        return [x]
    return [ctx.call("broadcast_to", x, shape=out)]


@converter("Tile", (6, 13))
def _tile(node: Node, ctx: Context):
    x = node.required(0, "input")
    reps = _ints(ctx.constant_input(node, 1, "repeats"))
    if reps is None or len(reps) != len(ctx.shape(x)):
        raise NodeError(f"repeats must have one value per input axis ({len(ctx.shape(x))})")
    return [ctx.call("tile", x, reps=tuple(reps))]
