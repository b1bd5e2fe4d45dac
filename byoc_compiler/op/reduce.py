"""Reductions (sum, mean, max, min, prod) over a set of axes, and argmax/argmin along one axis.

`axis=None` reduces every axis, `axis=()` none (the identity). An empty reduction gives the
operation's identity: 0 for sum, 1 for prod, -inf/+inf (the dtype's extremes for integers) for
max/min, NaN for mean. float32 sums accumulate in float64 and round once.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call
from .registry import Attr, OpTypeError, make_call, register
from .typecheck import normalize_axis, tensor_arg, tensor_type

__all__ = ["sum", "mean", "max", "min", "prod", "argmax", "argmin"]

REDUCIBLE = ("float32", "float64", "int32", "int64")
REDUCTIONS = ("sum", "mean", "max", "min", "prod")


def reduce_axes(op: str, ndim: int, axis) -> tuple[int, ...]:
    """The sorted, non-negative axes `axis` names (None: all); OpTypeError on a bad or repeated axis."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(normalize_axis(op, "axis", a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise OpTypeError(op, "axis", "distinct axes", f"axis {list(axis)}")
    return tuple(sorted(axes))


def reduced_shape(shape, axes, keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _infer_reduce(name):
    dtypes = (*REDUCIBLE, "bool") if name in ("max", "min") else REDUCIBLE

    def infer(types, attrs):
        data = tensor_arg(name, "data", types[0], dtypes)
        axes = reduce_axes(name, data.ndim, attrs.axis)
        return tensor_type(reduced_shape(data.shape, axes, attrs.keepdims), data.dtype)
    return infer


def empty_value(name: str, dtype) -> float | int:
    """What a reduction over no elements gives."""
    dtype = np.dtype(dtype)
    if name == "sum":
        return 0
    if name == "prod":
        return 1
    if name == "mean":
        return np.nan
    if dtype.kind == "f":
        return -np.inf if name == "max" else np.inf
    if dtype.kind == "b":
        return name == "min"
    info = np.iinfo(dtype)
    return info.min if name == "max" else info.max


def _reduce_ref(name):
    fn = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}[name]

    def ref(args, attrs):
        x = args[0]
        axes = reduce_axes(name, x.ndim, attrs.axis)
        shape = reduced_shape(x.shape, axes, attrs.keepdims)
        if any(x.shape[a] == 0 for a in axes):
            return np.full(shape, empty_value(name, x.dtype), dtype=x.dtype)
        wide = x.astype(np.float64) if x.dtype.kind == "f" and name in ("sum", "mean", "prod") else x
        with np.errstate(all="ignore"):
            out = fn(wide, axis=axes, keepdims=True) if axes else wide.copy()
        if name == "mean" and x.dtype.kind != "f":
            out = np.trunc(out)   # integer mean truncates toward zero, like C
        return np.asarray(out).reshape(shape).astype(x.dtype)
    return ref


for _name in REDUCTIONS:
    register(_name, ("data",), (Attr("axis", "ints_or_none", None), Attr("keepdims", "bool", False)),
             infer=_infer_reduce(_name), ref=_reduce_ref(_name), family="nn",
             doc=f"{_name} over axis (None: all axes), keepdims keeps them as size 1")


def _infer_arg(name):
    def infer(types, attrs):
        # 8-bit too: onnxruntime's quantizer writes ArgMax on the int8/uint8 tensor (QArgMax)
        data = tensor_arg(name, "data", types[0], REDUCIBLE + ("int8", "uint8"))
        if data.ndim == 0:
            raise OpTypeError(name, "data", "a tensor of at least 1 dimension", "a scalar")
        axis = normalize_axis(name, "axis", attrs.axis, data.ndim)
        if data.shape[axis] == 0:
            raise OpTypeError(name, "data", f"a non-empty axis {axis}", f"shape {data.shape}")
        return tensor_type(reduced_shape(data.shape, (axis,), attrs.keepdims), "int64")
    return infer


def _arg_ref(name):
    pick = np.argmax if name == "argmax" else np.argmin

    def ref(args, attrs):
        x = args[0]
        axis = attrs.axis % x.ndim
        if attrs.select_last_index:
            flipped = np.flip(x, axis)
            index = x.shape[axis] - 1 - pick(flipped, axis=axis)
        else:
            index = pick(x, axis=axis)
        index = index.astype(np.int64)
        return np.expand_dims(index, axis) if attrs.keepdims else index
    return ref


for _name in ("argmax", "argmin"):
    register(_name, ("data",), (Attr("axis", "int", 0), Attr("keepdims", "bool", True),
                                Attr("select_last_index", "bool", False)),
             infer=_infer_arg(_name), ref=_arg_ref(_name), family="shape",
             doc=f"int64 index of the {_name[3:]} along axis (the first one, or the last with select_last_index)")


def _reduction(name):
    def construct(data, axis=None, keepdims=False) -> Call:
        return make_call(name, data, axis=axis, keepdims=keepdims)
    construct.__name__ = construct.__qualname__ = name
    return construct


sum, mean, max, min, prod = (_reduction(n) for n in REDUCTIONS)  # noqa: A001 - Relay's names


def argmax(data, axis=0, keepdims=True, select_last_index=False) -> Call:
    return make_call("argmax", data, axis=axis, keepdims=keepdims, select_last_index=select_last_index)


def argmin(data, axis=0, keepdims=True, select_last_index=False) -> Call:
    return make_call("argmin", data, axis=axis, keepdims=keepdims, select_last_index=select_last_index)
