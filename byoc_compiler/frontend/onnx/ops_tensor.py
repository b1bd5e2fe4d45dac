"""Shape and data-movement ONNX ops, and the ops that make constants.

Shapes, axes and pads that ONNX passes as tensors (opset 5+ Reshape, 11+ Pad,
13+ Squeeze/Unsqueeze) must be known at import time; Constant, ConstantOfShape
and Shape (of a static shape) produce Constants, so exporter-style shape
arithmetic folds away.
"""
from __future__ import annotations

import math

import numpy as np

from ...transform.fold_constant import MAX_FOLD_BYTES
from .context import Context, Node, NodeError
from .table import converter


def _axis(axis: int, ndim: int, what: str = "axis") -> int:
    if not -ndim <= axis < ndim:
        raise NodeError(f"{what} {axis} is out of range for a {ndim}-D input")
    return axis + ndim if axis < 0 else axis


def _ints(data: np.ndarray | None) -> list[int] | None:
    return None if data is None else [int(v) for v in np.ravel(data)]


@converter("Identity", (1, 13, 14, 16, 19, 21, 23, 24, 25))
def _identity(node: Node, ctx: Context):
    return [node.required(0, "input")]


@converter("Concat", (4, 11, 13))
def _concat(node: Node, ctx: Context):
    args = [a for a in node.inputs if a is not None]
    if node.attr("axis") is None:
        raise NodeError("attribute axis is required")
    axis = _axis(int(node.attr("axis")), len(ctx.shape(args[0])))
    if len(args) == 1:
        return [args[0]]
    return [ctx.call("concatenate", args, axis=axis)]


# ---- Reshape, Flatten, Transpose, Squeeze, Unsqueeze ----------------------------------------------

@converter("Reshape", (5, 13, 14, 19, 21, 23, 24, 25))
def _reshape(node: Node, ctx: Context):
    x = node.required(0, "data")
    target = _ints(ctx.constant_input(node, 1, "shape"))
    if target is None:
        raise NodeError("input 1 (shape) is missing")
    shape = ctx.shape(x)
    allow_zero = bool(node.attr("allowzero", 0))
    out, unknown = [], None
    for i, d in enumerate(target):
        if d == 0 and not allow_zero:
            if i >= len(shape):
                raise NodeError(f"shape {target}: 0 at position {i} has no input dimension to copy")
            out.append(shape[i])
        elif d == -1:
            if unknown is not None:
                raise NodeError(f"shape {target} has more than one -1")
            unknown = i
            out.append(1)
        elif d < 0:
            raise NodeError(f"shape {target} has the invalid dimension {d}")
        else:
            out.append(d)
    total = math.prod(shape)
    if unknown is not None:
        known = math.prod(out)
        if known == 0 or total % known:
            raise NodeError(f"shape {target} cannot hold the {total} elements of input shape {shape}")
        out[unknown] = total // known
    if allow_zero and 0 in out and total == 0:
        # A literal 0 is a dimension of size 0 here, which reshape's newshape cannot say (0 copies a
        # dimension); every empty tensor of that shape is the result.
        return [ctx.const(np.zeros(out, dtype=ctx.dtype(x)))]
    if math.prod(out) != total:
        raise NodeError(f"shape {target} ({math.prod(out)} elements) does not fit input shape {shape}")
    return [ctx.call("reshape", x, newshape=tuple(out))]


@converter("Flatten", (1, 9, 11, 13, 21, 23, 24, 25))
def _flatten(node: Node, ctx: Context):
    x = node.required(0, "input")
    shape = ctx.shape(x)
    axis = int(node.attr("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise NodeError(f"axis {axis} is out of range for a {len(shape)}-D input")
    axis = axis + len(shape) if axis < 0 else axis
    if axis == 1 and len(shape) >= 2:
        return [ctx.call("nn.batch_flatten", x)]
    return [ctx.call("reshape", x, newshape=(math.prod(shape[:axis]), math.prod(shape[axis:])))]


@converter("Transpose", (1, 13, 21, 23, 24, 25))
def _transpose(node: Node, ctx: Context):
    x = node.required(0, "data")
    perm = node.attr("perm")
    ndim = len(ctx.shape(x))
    axes = tuple(range(ndim))[::-1] if perm is None else tuple(_axis(int(p), ndim, "perm entry") for p in perm)
    if sorted(axes) != list(range(ndim)):
        raise NodeError(f"perm {list(axes)} is not a permutation of the {ndim} axes")
    return [ctx.call("transpose", x, axes=axes)]


def _axes(node: Node, ctx: Context) -> list[int] | None:
    """Squeeze/Unsqueeze axes: an attribute up to definition 11, an optional input from 13."""
    if node.since < 13:
        return node.attr("axes")
    return _ints(ctx.constant_input(node, 1, "axes"))


@converter("Squeeze", (1, 11, 13, 21, 23, 24, 25))
def _squeeze(node: Node, ctx: Context):
    x, axes = node.required(0, "data"), _axes(node, ctx)
    shape = ctx.shape(x)
    if not axes:
        return [ctx.call("squeeze", x, axis=None)]
    axes = sorted({_axis(a, len(shape)) for a in axes})
    bad = [a for a in axes if shape[a] != 1]
    if bad:
        raise NodeError(f"cannot squeeze axis {bad[0]} of size {shape[bad[0]]} (input shape {shape})")
    return [ctx.call("squeeze", x, axis=tuple(axes))]


@converter("Unsqueeze", (1, 11, 13, 21, 23, 24, 25))
def _unsqueeze(node: Node, ctx: Context):
    x, axes = node.required(0, "data"), _axes(node, ctx)
    if not axes:
        raise NodeError("axes are required")
    rank = len(ctx.shape(x)) + len(axes)
    positions = sorted({_axis(a, rank) for a in axes})
    if len(positions) != len(axes):
        raise NodeError(f"axes {list(axes)} repeat an axis")
    # Inserting in ascending order of final position keeps every earlier insertion in place.
    for position in positions:
        x = ctx.call("expand_dims", x, axis=position)
    return [x]


# ---- Pad ------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "edge", "wrap")   # wrap: definition 19


def _check_pad(attrs) -> list[str]:
    mode = attrs.get("mode", "constant")
    return [] if mode in _PAD_MODES else [f"mode {mode!r} is not supported (supported: {', '.join(_PAD_MODES)})"]


def _pad(node: Node, ctx: Context, pads: list[int], value: float, axes: list[int] | None = None):
    x = node.required(0, "data")
    ndim = len(ctx.shape(x))
    axes = list(range(ndim)) if axes is None else [_axis(a, ndim) for a in axes]
    if len(pads) != 2 * len(axes):
        raise NodeError(f"pads has {len(pads)} values; {len(axes)} axes need {2 * len(axes)}")
    if any(p < 0 for p in pads):
        raise NodeError(f"negative pads (cropping) {pads} are not supported")
    widths = [(0, 0)] * ndim
    for i, axis in enumerate(axes):
        widths[axis] = (pads[i], pads[i + len(axes)])
    return [ctx.call("nn.pad", x, pad_width=tuple(widths), pad_value=value, pad_mode=node.attr("mode", "constant"))]


@converter("Pad", (2,), check=_check_pad)
def _pad_attrs(node: Node, ctx: Context):
    if node.attr("pads") is None:
        raise NodeError("attribute pads is required")
    return _pad(node, ctx, list(node.attr("pads")), float(node.attr("value", 0.0)))


# 18 adds the optional axes input; 19 adds mode "wrap"; 21 and later add types.
@converter("Pad", (11, 13, 18, 19, 21, 23, 24, 25), check=_check_pad)
def _pad_inputs(node: Node, ctx: Context):
    pads = _ints(ctx.constant_input(node, 1, "pads"))
    if pads is None:
        raise NodeError("input 1 (pads) is missing")
    value = ctx.constant_input(node, 2, "constant_value")
    axes = _ints(ctx.constant_input(node, 3, "axes")) if node.since >= 18 else None
    return _pad(node, ctx, pads, 0.0 if value is None or value.size == 0 else float(np.ravel(value)[0]), axes)


# ---- constants ------------------------------------------------------------------------------------

def _check_constant(attrs) -> list[str]:
    for unsupported in ("sparse_value", "value_string", "value_strings"):
        if unsupported in attrs:
            return [f"attribute {unsupported} is not supported (only numeric dense tensors are)"]
    return []


@converter("Constant", (1, 9, 11, 12, 13, 19, 21, 23, 24, 25), check=_check_constant)
def _constant(node: Node, ctx: Context):
    attrs = node.attrs
    if "value" in attrs:
        return [ctx.const(attrs["value"])]
    if "value_float" in attrs:
        return [ctx.const(attrs["value_float"], "float32")]
    if "value_floats" in attrs:
        return [ctx.const(list(attrs["value_floats"]), "float32")]
    if "value_int" in attrs:
        return [ctx.const(attrs["value_int"], "int64")]
    if "value_ints" in attrs:
        return [ctx.const(list(attrs["value_ints"]), "int64")]
    raise NodeError("no value attribute")


@converter("ConstantOfShape", (9, 20, 21, 23, 24, 25))
def _constant_of_shape(node: Node, ctx: Context):
    shape = _ints(ctx.constant_input(node, 0, "input"))
    if shape is None:
        raise NodeError("input 0 (shape) is missing")
    if any(d < 0 for d in shape):
        raise NodeError(f"shape {shape} has a negative dimension")
    value = node.attr("value")
    if value is None:
        value = np.zeros(1, np.float32)
    if value.size != 1:
        raise NodeError(f"attribute value must hold one element, it has {value.size}")
    nbytes = math.prod(shape) * value.dtype.itemsize
    if nbytes > MAX_FOLD_BYTES:
        raise NodeError(f"shape {shape} makes a constant of {nbytes} bytes; byoc builds constants of up to "
                        f"{MAX_FOLD_BYTES} bytes at import time")
    return [ctx.const(np.full(shape, value.ravel()[0], dtype=value.dtype))]


@converter("Shape", (1, 13, 15, 19, 21, 23, 24, 25))
def _shape(node: Node, ctx: Context):
    shape = list(ctx.shape(node.required(0, "data")))
    # Definition 15 adds start/end, clamped like Python slices.
    start, end = int(node.attr("start", 0)), node.attr("end")
    return [ctx.const(np.array(shape[start: None if end is None else int(end)], dtype=np.int64))]


# ---- Gather ---------------------------------------------------------------------------------------

@converter("Gather", (1, 11, 13))
def _gather(node: Node, ctx: Context):
    data, indices = node.required(0, "data"), node.required(1, "indices")
    shape = ctx.shape(data)
    axis = _axis(int(node.attr("axis", 0)), len(shape))
    known = ctx.value(indices)
    if known is not None:
        # Negative indices count from the end (definition 11+); normalize so any mode reads them right.
        if known.size and (known.min() < -shape[axis] or known.max() >= shape[axis]):
            raise NodeError(f"indices {known.tolist()} are out of range for axis {axis} of size {shape[axis]}")
        indices = ctx.const(np.where(known < 0, known + shape[axis], known).astype(np.int32))
    elif ctx.dtype(indices) not in ("int32", "int64"):
        raise NodeError(f"indices must be int32 or int64, got {ctx.dtype(indices)}")
    # Run-time indices may be negative: "wrap" maps -1 to the last element, as ONNX does.
    return [ctx.call("take", data, indices, axis=axis, mode="wrap")]

