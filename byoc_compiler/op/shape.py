"""Data-movement ops: reshape, transpose, concatenate, squeeze, expand_dims, split, take,
nn.batch_flatten, nn.pad, nn.dropout. They accept any dtype the IR speaks and never
change values, so their references are plain numpy.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call
from ..ir.types import DTYPES, TupleType
from .attr_forms import all_non_negative
from .registry import Attr, OpTypeError, make_call, register
from .typecheck import INDEX, normalize_axis, shape_text, tensor_arg, tensor_type, tuple_type, type_text

__all__ = ["reshape", "transpose", "concatenate", "squeeze", "expand_dims", "split", "take"]

ANY = DTYPES


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# ---- reshape --------------------------------------------------------------------------------------

def reshape_target(shape: tuple[int, ...], newshape: tuple[int, ...]) -> tuple[int, ...]:
    """Relay's newshape rules: 0 copies the input dim at that position, -1 is inferred.
    Raises ValueError with the reason."""
    out: list[int] = []
    unknown = None
    for i, d in enumerate(newshape):
        if d == 0:
            if i >= len(shape):
                raise ValueError(f"0 at position {i} has no input dimension to copy")
            out.append(shape[i])
        elif d == -1:
            if unknown is not None:
                raise ValueError("more than one -1")
            unknown = i
            out.append(1)
        elif d < -1:
            raise ValueError(f"{d} is not a dimension (use 0 to copy, -1 to infer)")
        else:
            out.append(d)
    known = _size(out)
    total = _size(shape)
    if unknown is not None:
        if known == 0 or total % known:
            raise ValueError(f"-1 cannot be inferred: {total} elements do not split into {shape_text(out)}")
        out[unknown] = total // known
    if _size(out) != total:
        raise ValueError(f"{_size(out)} elements, the input has {total}")
    return tuple(out)


def _infer_reshape(types, attrs):
    data = tensor_arg("reshape", "data", types[0], ANY)
    try:
        return tensor_type(reshape_target(data.shape, attrs.newshape), data.dtype)
    except ValueError as exc:
        raise OpTypeError("reshape", "data", f"a shape that fits newshape {shape_text(attrs.newshape)}",
                          f"shape {shape_text(data.shape)} ({exc})") from None


register("reshape", ("data",), (Attr("newshape", "ints"),), infer=_infer_reshape,
         ref=lambda args, attrs: args[0].reshape(reshape_target(args[0].shape, attrs.newshape)),
         family="shape", doc="Relay newshape: 0 copies the input dim, -1 is inferred")


# ---- transpose ------------------------------------------------------------------------------------

def transpose_axes(ndim: int, axes) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))[::-1]
    return tuple(a + ndim if a < 0 else a for a in axes)


def _infer_transpose(types, attrs):
    data = tensor_arg("transpose", "data", types[0], ANY)
    axes = transpose_axes(data.ndim, attrs.axes)
    if sorted(axes) != list(range(data.ndim)):
        raise OpTypeError("transpose", "data", f"a {len(axes)}-D tensor for axes {attrs.axes}"
                          if len(axes) != data.ndim else f"axes that are a permutation of 0..{data.ndim - 1}",
                          f"shape {shape_text(data.shape)} with axes {attrs.axes}")
    return tensor_type(tuple(data.shape[a] for a in axes), data.dtype)


register("transpose", ("data",), (Attr("axes", "ints_or_none", None),), infer=_infer_transpose,
         ref=lambda args, attrs: np.ascontiguousarray(np.transpose(args[0], transpose_axes(args[0].ndim, attrs.axes))),
         family="shape", doc="permute axes (None reverses them)")


# ---- concatenate / split --------------------------------------------------------------------------

def _infer_concatenate(types, attrs):
    tup = types[0]
    if not isinstance(tup, TupleType) or not tup.fields:
        raise OpTypeError("concatenate", "data", "a non-empty tuple of tensors", type_text(tup))
    first = tensor_arg("concatenate", "data[0]", tup.fields[0], ANY)
    axis = normalize_axis("concatenate", "axis", attrs.axis, max(first.ndim, 1))
    total = 0
    for i, field in enumerate(tup.fields):
        t = tensor_arg("concatenate", f"data[{i}]", field, (first.dtype,), ndim=first.ndim)
        if t.shape[:axis] + t.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:]:
            want = list(first.shape)
            want[axis] = "*"
            raise OpTypeError("concatenate", f"data[{i}]",
                              f"shape ({', '.join(map(str, want))}) (all dims but axis {axis} like data[0])",
                              f"shape {shape_text(t.shape)}")
        total += t.shape[axis]
    shape = list(first.shape)
    shape[axis] = total
    return tensor_type(shape, first.dtype)


register("concatenate", ("data",), (Attr("axis", "int", 0),), infer=_infer_concatenate,
         ref=lambda args, attrs: np.concatenate(list(args[0]), axis=attrs.axis), family="shape",
         tuple_input=True, doc="join a tuple of tensors along axis")


def split_bounds(dim: int, indices_or_sections) -> list[tuple[int, int]]:
    """(begin, end) of every piece along the split axis."""
    if isinstance(indices_or_sections, int):
        step = dim // indices_or_sections
        return [(i * step, (i + 1) * step) for i in range(indices_or_sections)]
    edges = [0, *indices_or_sections, dim]
    return list(zip(edges[:-1], edges[1:]))


def _infer_split(types, attrs):
    data = tensor_arg("split", "data", types[0], ANY)
    axis = normalize_axis("split", "axis", attrs.axis, data.ndim)
    dim = data.shape[axis]
    sections = attrs.indices_or_sections
    if isinstance(sections, int):
        if sections < 1 or dim % sections:
            raise OpTypeError("split", "data", f"axis {axis} divisible into {sections} equal sections",
                              f"shape {shape_text(data.shape)}")
    elif list(sections) != sorted(sections) or (sections and (sections[0] < 0 or sections[-1] > dim)):
        raise OpTypeError("split", "data", f"ascending split indices within [0, {dim}] (axis {axis})",
                          f"indices {list(sections)} for shape {shape_text(data.shape)}")
    fields = []
    for begin, end in split_bounds(dim, sections):
        shape = list(data.shape)
        shape[axis] = end - begin
        fields.append(tensor_type(shape, data.dtype))
    return tuple_type(fields)


def _split_ref(args, attrs):
    x = args[0]
    axis = attrs.axis % x.ndim
    pieces = []
    for begin, end in split_bounds(x.shape[axis], attrs.indices_or_sections):
        index = [slice(None)] * x.ndim
        index[axis] = slice(begin, end)
        pieces.append(np.ascontiguousarray(x[tuple(index)]))
    return tuple(pieces)


register("split", ("data",), (Attr("indices_or_sections", "int_or_ints"), Attr("axis", "int", 0)),
         infer=_infer_split, ref=_split_ref, family="shape",
         doc="int: equal sections; list: split indices -> tuple of tensors")


# ---- squeeze / expand_dims / batch_flatten --------------------------------------------------------

def squeeze_axes(shape, axis) -> tuple[int, ...]:
    if axis is None:
        return tuple(i for i, d in enumerate(shape) if d == 1)
    return tuple(sorted({a + len(shape) if a < 0 else a for a in axis}))


def _infer_squeeze(types, attrs):
    data = tensor_arg("squeeze", "data", types[0], ANY)
    for a in attrs.axis or ():
        normalize_axis("squeeze", "axis", a, data.ndim)
    drop = squeeze_axes(data.shape, attrs.axis)
    bad = [a for a in drop if data.shape[a] != 1]
    if bad:
        raise OpTypeError("squeeze", "data", f"dimension {bad[0]} of size 1", f"shape {shape_text(data.shape)}")
    return tensor_type(tuple(d for i, d in enumerate(data.shape) if i not in drop), data.dtype)


register("squeeze", ("data",), (Attr("axis", "ints_or_none", None),), infer=_infer_squeeze,
         ref=lambda args, attrs: np.squeeze(args[0], axis=squeeze_axes(args[0].shape, attrs.axis)),
         family="shape", doc="drop dims of size 1 (None: all of them)")


def expand_dims_shape(shape, axis: int, num_newaxis: int) -> tuple[int, ...]:
    axis = axis + len(shape) + 1 if axis < 0 else axis
    return tuple(shape[:axis]) + (1,) * num_newaxis + tuple(shape[axis:])


def _infer_expand_dims(types, attrs):
    data = tensor_arg("expand_dims", "data", types[0], ANY)
    if not -data.ndim - 1 <= attrs.axis <= data.ndim:
        raise OpTypeError("expand_dims", "axis", f"axis in [{-data.ndim - 1}, {data.ndim}] for a {data.ndim}-D tensor",
                          f"axis {attrs.axis}")
    return tensor_type(expand_dims_shape(data.shape, attrs.axis, attrs.num_newaxis), data.dtype)


register("expand_dims", ("data",), (Attr("axis", "int"), Attr("num_newaxis", "int", 1, check=all_non_negative)),
         infer=_infer_expand_dims,
         ref=lambda args, attrs: args[0].reshape(expand_dims_shape(args[0].shape, attrs.axis, attrs.num_newaxis)),
         family="shape", doc="insert num_newaxis dims of size 1 at axis")


def _infer_batch_flatten(types, attrs):
    data = tensor_arg("nn.batch_flatten", "data", types[0], ANY)
    if data.ndim < 1:
        raise OpTypeError("nn.batch_flatten", "data", "a tensor with a batch dimension", "a scalar")
    return tensor_type((data.shape[0], _size(data.shape[1:])), data.dtype)


register("nn.batch_flatten", ("data",), (), infer=_infer_batch_flatten,
         ref=lambda args, attrs: args[0].reshape(args[0].shape[0], -1), family="shape", doc="[N, ...] -> [N, rest]")


# ---- take -----------------------------------------------------------------------------------------

def _infer_take(types, attrs):
    data = tensor_arg("take", "data", types[0], ANY)
    indices = tensor_arg("take", "indices", types[1], INDEX)
    if attrs.axis is None:
        return tensor_type(indices.shape, data.dtype)
    axis = normalize_axis("take", "axis", attrs.axis, data.ndim)
    if data.shape[axis] == 0:
        raise OpTypeError("take", "data", f"a non-empty axis {axis}", f"shape {shape_text(data.shape)}")
    return tensor_type(data.shape[:axis] + indices.shape + data.shape[axis + 1:], data.dtype)


register("take", ("data", "indices"), (Attr("axis", "int_or_none", None), Attr("mode", "str", "clip",
                                                                            choices=("clip", "wrap"))),
         infer=_infer_take, ref=lambda args, attrs: np.take(args[0], args[1], axis=attrs.axis, mode=attrs.mode),
         family="shape", doc="gather along axis (None: the flattened data); out-of-range indices clip or wrap")


# ---- pad / dropout --------------------------------------------------------------------------------

def _infer_pad(types, attrs):
    # int8/uint8: onnxruntime's quantizer pads the quantized tensor with its zero point (QPad)
    data = tensor_arg("nn.pad", "data", types[0], ("float32", "int32", "int8", "uint8"))
    widths = attrs.pad_width
    if len(widths) != data.ndim:
        raise OpTypeError("nn.pad", "data", f"a {len(widths)}-D tensor (pad_width has {len(widths)} pairs)",
                          f"shape {shape_text(data.shape)}")
    for axis, (before, after) in enumerate(widths):
        dim = data.shape[axis]
        if attrs.pad_mode == "reflect" and max(before, after) > dim - 1:
            raise OpTypeError("nn.pad", "data", f"axis {axis} longer than its reflect padding {max(before, after)}",
                              f"shape {shape_text(data.shape)}")
        if attrs.pad_mode in ("edge", "wrap") and (before or after) and dim == 0:
            raise OpTypeError("nn.pad", "data", f"a non-empty axis {axis} to repeat", f"shape {shape_text(data.shape)}")
    shape = tuple(d + b + a for d, (b, a) in zip(data.shape, widths))
    return tensor_type(shape, data.dtype)


def _pad_ref(args, attrs):
    if attrs.pad_mode == "constant":
        return np.pad(args[0], attrs.pad_width, mode="constant", constant_values=attrs.pad_value)
    return np.pad(args[0], attrs.pad_width, mode=attrs.pad_mode)


register("nn.pad", ("data",),
         (Attr("pad_width", "int_pairs", check=all_non_negative), Attr("pad_value", "float", 0.0),
          Attr("pad_mode", "str", "constant", choices=("constant", "reflect", "edge", "wrap"))),
         infer=_infer_pad, ref=_pad_ref, family="shape", doc="pad every axis by (before, after)")


def _infer_dropout(types, attrs):
    return tensor_arg("nn.dropout", "data", types[0], ("float32",))


register("nn.dropout", ("data",),
         (Attr("rate", "float", 0.5, check=lambda v: None if 0 <= v < 1 else "must be in [0, 1)"),),
         infer=_infer_dropout, ref=lambda args, attrs: args[0], family="shape",
         doc="identity at inference (returns one tensor, unlike Relay's tuple)")


# ---- constructors ---------------------------------------------------------------------------------

def reshape(data, newshape) -> Call:
    return make_call("reshape", data, newshape=newshape)


def transpose(data, axes=None) -> Call:
    return make_call("transpose", data, axes=axes)


def concatenate(data, axis=0) -> Call:
    return make_call("concatenate", data, axis=axis)


def squeeze(data, axis=None) -> Call:
    return make_call("squeeze", data, axis=axis)


def expand_dims(data, axis, num_newaxis=1) -> Call:
    return make_call("expand_dims", data, axis=axis, num_newaxis=num_newaxis)


def split(data, indices_or_sections, axis=0) -> Call:
    return make_call("split", data, indices_or_sections=indices_or_sections, axis=axis)


def take(data, indices, axis=None, mode="clip") -> Call:
    return make_call("take", data, indices, axis=axis, mode=mode)
