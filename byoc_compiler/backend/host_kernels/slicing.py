"""strided_slice, tile and broadcast_to: strided loop nests that copy elements unchanged."""
from __future__ import annotations

from ...ctext import int_literal as L
from ...op.slicing import slice_range
from .cwriter import broadcast_strides, contiguous_strides, loop_nest


def _strided_slice(ctx) -> str:
    data, out = ctx.inputs[0], ctx.outputs[0]
    own = contiguous_strides(data.shape)
    base, steps = 0, []
    for d, b, e, s, stride in zip(data.shape, ctx.attrs.begin, ctx.attrs.end, ctx.attrs.strides, own):
        first, _ = slice_range(d, b, e, s)
        base += first * stride
        steps.append(s * stride)
    strides = {"in0": steps, "out0": contiguous_strides(out.shape)}
    return loop_nest(out.shape, strides, lambda off: f"out0[{off['out0']}] = in0[{L(base)} + {off['in0']}];")


def _tile(ctx) -> str:
    data = ctx.inputs[0]
    # Axis i of the output is (reps[i], dim[i]): the repeat steps nothing in the input.
    shape, in_strides = [], []
    for d, r, s in zip(data.shape, ctx.attrs.reps, contiguous_strides(data.shape)):
        shape += [r, d]
        in_strides += [0, s]
    strides = {"in0": in_strides, "out0": contiguous_strides(shape)}
    if not shape:
        return "  out0[0] = in0[0];"
    return loop_nest(shape, strides, lambda off: f"out0[{off['out0']}] = in0[{off['in0']}];")


def _broadcast_to(ctx) -> str:
    data, out = ctx.inputs[0], ctx.outputs[0]
    strides = {"in0": broadcast_strides(data.shape, out.shape), "out0": contiguous_strides(out.shape)}
    if not out.shape:
        return "  out0[0] = in0[0];"
    return loop_nest(out.shape, strides, lambda off: f"out0[{off['out0']}] = in0[{off['in0']}];")


RULES = {"strided_slice": _strided_slice, "tile": _tile, "broadcast_to": _broadcast_to}
