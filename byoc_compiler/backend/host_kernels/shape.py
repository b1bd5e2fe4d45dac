"""Data-movement ops: copies (reshape & co.), transpose, concatenate, split, take, pad.

Every op here moves elements without changing them, so one rule works for
every dtype.
"""
from __future__ import annotations

import numpy as np

from ...ctext import c_type, float_literal, int64_array, int_literal as L
from .cwriter import axis_split, coalesce, contiguous_strides, flat_loop, loop_nest, size_of


def _copy(ctx) -> str:
    """reshape, squeeze, expand_dims, batch_flatten, dropout: the bytes do not change."""
    t = ctx.inputs[0]
    n = size_of(t.shape)
    if n == 0:
        return ""
    ctx.need("string.h")
    return f"  memcpy(out0, in0, {L(n)} * sizeof({c_type(t.dtype)}));"


def _transpose(ctx) -> str:
    data, out = ctx.inputs[0], ctx.outputs[0]
    axes = ctx.attrs.axes
    axes = tuple(range(data.ndim))[::-1] if axes is None else tuple(a % data.ndim for a in axes)
    own = contiguous_strides(data.shape)
    strides = {"in0": [own[a] for a in axes], "out0": contiguous_strides(out.shape)}
    if size_of(out.shape) == 0:
        return ""
    dims = coalesce(out.shape, strides)
    across = [i for i, (_, st) in enumerate(dims[:-1]) if st["in0"] == 1]
    if not dims or dims[-1][1]["in0"] == 1 or not across:
        # the innermost loop copies a contiguous run (or the data is that run): nothing to block
        return loop_nest(out.shape, strides, lambda off: f"out0[{off['out0']}] = in0[{off['in0']}];")
    return _blocked_transpose(dims, across[0])


def _blocked_transpose(dims, j: int, block: int = 16) -> str:
    """The output's innermost dim reads the input at a stride: walk it and the input's innermost dim (j)
    in block x block tiles, so the input lines a tile reads stay in cache until all their elements
    are written (a plain nest would fetch a new input line for every output element)."""
    (rows, row_st), (cols, col_st) = dims[j], dims[-1]
    rest = [d for i, d in enumerate(dims[:-1]) if i != j]
    shape = [e for e, _ in rest]
    strides = {k: [st[k] for _, st in rest] for k in ("in0", "out0")}
    tile = f"""for (int64_t r0 = 0; r0 < {L(rows)}; r0 += {block}) {{
  const int64_t r1 = r0 + {block} < {L(rows)} ? r0 + {block} : {L(rows)};
  for (int64_t c0 = 0; c0 < {L(cols)}; c0 += {block}) {{
    const int64_t c1 = c0 + {block} < {L(cols)} ? c0 + {block} : {L(cols)};
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c)
        out0[@OUT@ + r * {L(row_st["out0"])} + c] = in0[@IN@ + r + c * {L(col_st["in0"])}];
  }}
}}"""
    return loop_nest(shape, strides, lambda off: tile.replace("@OUT@", off["out0"]).replace("@IN@", off["in0"]), prefix="t")


def _row_copies(ctx, whole, parts: list[str], whole_name: str, gather: bool) -> str:
    """Concatenate (gather: parts -> whole) or split (whole -> parts) along the axis: for every
    index before the axis, one memcpy per part."""
    axis = ctx.attrs.axis % whole.ndim
    outer, _, inner = axis_split(whole.shape, axis)
    row = whole.shape[axis] * inner
    lines, offset = [], 0
    for name, t in zip(parts, ctx.inputs if gather else ctx.outputs):
        count = t.shape[axis] * inner
        if count:
            at_whole = f"{whole_name} + o * {L(row)} + {L(offset)}"
            at_part = f"{name} + o * {L(count)}"
            dst, src = (at_whole, at_part) if gather else (at_part, at_whole)
            lines.append(f"memcpy({dst}, {src}, {L(count)} * sizeof({c_type(whole.dtype)}));")
        offset += count
    if not lines or outer == 0:
        return ""
    ctx.need("string.h")
    return flat_loop(outer, "\n".join(lines), var="o")


def _concatenate(ctx) -> str:
    return _row_copies(ctx, ctx.outputs[0], [f"in{i}" for i in range(len(ctx.inputs))], "out0", gather=True)


def _split(ctx) -> str:
    return _row_copies(ctx, ctx.inputs[0], [f"out{i}" for i in range(len(ctx.outputs))], "in0", gather=False)


def _take(ctx) -> str:
    data, indices = ctx.inputs
    out = ctx.outputs[0]
    if ctx.attrs.axis is None:
        outer, extent, inner = 1, size_of(data.shape), 1
    else:
        outer, extent, inner = axis_split(data.shape, ctx.attrs.axis)
    count = size_of(indices.shape)
    if size_of(out.shape) == 0:
        return ""
    if extent == 0:  # only reachable with axis=None on empty data: nothing to take from
        return ctx.fail("take from an empty tensor")
    if ctx.attrs.mode == "clip":
        fix = f"if (k < 0) k = 0;\nif (k > {L(extent - 1)}) k = {L(extent - 1)};"
    else:
        fix = f"k %= {L(extent)};\nif (k < 0) k += {L(extent)};"
    copy = (f"out0[(o * {L(count)} + j) * {L(inner)}] = in0[(o * {L(extent)} + k) * {L(inner)}];" if inner == 1
            else f"for (int64_t i = 0; i < {L(inner)}; ++i) "
                 f"out0[(o * {L(count)} + j) * {L(inner)} + i] = in0[(o * {L(extent)} + k) * {L(inner)} + i];")
    inner_body = f"int64_t k = (int64_t)in1[j];\n{fix}\n{copy}"
    return flat_loop(outer, flat_loop(count, inner_body, var="j", indent=0), var="o")


def _pad(ctx) -> str:
    data, out = ctx.inputs[0], ctx.outputs[0]
    if size_of(out.shape) == 0:
        return ""
    mode, widths = ctx.attrs.pad_mode, ctx.attrs.pad_width
    t = c_type(data.dtype)
    if data.ndim == 0:
        return "  out0[0] = in0[0];"
    # Per axis, the source index of every output position (-1: the pad value). np.pad of an
    # arange gives exactly numpy's reflect/edge rules.
    lines, conds = [], []
    for axis, (dim, (before, after)) in enumerate(zip(data.shape, widths)):
        if mode == "constant" or dim == 0:
            source = np.pad(np.arange(dim), (before, after), mode="constant", constant_values=-1)
        else:
            source = np.pad(np.arange(dim), (before, after), mode=mode)
        lines.append("  " + int64_array(f"source{axis}", source))
    own = contiguous_strides(data.shape)
    if data.dtype == "float32":
        fill = float_literal(ctx.attrs.pad_value)
        if "INFINITY" in fill or "NAN" in fill:
            ctx.need("math.h")
    else:
        # numpy casts the float pad value to the array's dtype (truncation).
        v = float(ctx.attrs.pad_value)
        fill = L(int(np.array(v).astype(np.int32)) if np.isfinite(v) else -(1 << 31), "int32")
    pad_loops = []
    pad = "  "
    for axis, dim in enumerate(out.shape):
        pad_loops.append(f"{pad}for (int64_t i{axis} = 0; i{axis} < {L(dim)}; ++i{axis}) {{")
        pad += "  "
        pad_loops.append(f"{pad}const int64_t s{axis} = source{axis}[i{axis}];")
        conds.append(f"s{axis} < 0")
        at = " + ".join(f"s{a} * {L(own[a])}" if own[a] != 1 else f"s{a}" for a in range(axis + 1))
        if axis == out.ndim - 1:
            pad_loops.append(f"{pad}out0[next++] = ({' || '.join(conds)}) ? ({t}){fill} : in0[{at}];")
    for axis in reversed(range(out.ndim)):
        pad = pad[:-2]
        pad_loops.append(f"{pad}}}")
    return "\n".join(lines + ["  int64_t next = 0;"] + pad_loops)


_COPIES = ("reshape", "squeeze", "expand_dims", "nn.batch_flatten", "nn.dropout")

RULES = {name: _copy for name in _COPIES}
RULES.update({
    "transpose": _transpose,
    "concatenate": _concatenate,
    "split": _split,
    "take": _take,
    "nn.pad": _pad,
})
