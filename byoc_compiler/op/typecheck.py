"""Helpers shared by the ops' type inference: argument checks that raise OpTypeError.

Type inference runs once per call of a 100,000-node model, so result types
are interned (`tensor_type`) instead of validated again on every call.
"""
from __future__ import annotations

from typing import Sequence

from ..ir.types import TensorType, TupleType, Type
from .registry import OpTypeError

FLOAT = ("float32",)
FLOATS = ("float32", "float16", "float64")
SMALL_INTS = ("int8", "int16", "uint8", "uint16")
NUMERIC = ("float32", "int32")
# Elementwise arithmetic: every float width, int32, and the narrow integers (they wrap, like numpy).
ARITH = (*FLOATS, "int32", *SMALL_INTS)
INDEX = ("int32", "int64")

_INTERNED: dict[tuple, TensorType] = {}


def tensor_type(shape: Sequence[int], dtype: str) -> TensorType:
    """An interned TensorType: building and validating one per call would dominate InferType."""
    key = (tuple(shape), dtype)
    ty = _INTERNED.get(key)
    if ty is None:
        ty = _INTERNED[key] = TensorType(key[0], dtype)
    return ty


def shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def type_text(ty: Type) -> str:
    if isinstance(ty, TensorType):
        return f"a {ty.dtype} tensor of shape {shape_text(ty.shape)}"
    return f"a tuple {ty}"


def tensor_arg(op: str, argument: str, ty: Type, dtypes: Sequence[str] = NUMERIC,
               ndim: int | Sequence[int] | None = None) -> TensorType:
    """`ty` as a TensorType of one of `dtypes` (and `ndim` dims), or an OpTypeError."""
    if not isinstance(ty, TensorType):
        raise OpTypeError(op, argument, "a tensor", type_text(ty))
    if ty.dtype not in dtypes:
        raise OpTypeError(op, argument, " or ".join(dtypes) + " tensor", f"a {ty.dtype} tensor")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if ty.ndim not in allowed:
            want = " or ".join(f"{n}-D" for n in allowed)
            raise OpTypeError(op, argument, f"a {want} tensor",
                              f"a {ty.ndim}-D tensor of shape {shape_text(ty.shape)}")
    return ty


def same_dtype(op: str, argument: str, first: TensorType, other: TensorType) -> None:
    if other.dtype != first.dtype:
        raise OpTypeError(op, argument, f"dtype {first.dtype} (like the first argument)", f"dtype {other.dtype}")


def broadcast_shapes(op: str, argument: str, lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting of two shapes; `argument` is blamed when they do not broadcast."""
    if lhs == rhs:
        return tuple(lhs)
    out = []
    for i in range(1, max(len(lhs), len(rhs)) + 1):
        a = lhs[-i] if i <= len(lhs) else 1
        b = rhs[-i] if i <= len(rhs) else 1
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        else:
            raise OpTypeError(op, argument, f"a shape broadcastable with {shape_text(lhs)}",
                              f"shape {shape_text(rhs)} (dimension {a} vs {b})")
    return tuple(reversed(out))


def normalize_axis(op: str, argument: str, axis: int, ndim: int) -> int:
    """`axis` in [-ndim, ndim) as a non-negative axis, or an OpTypeError naming the range."""
    if not -ndim <= axis < ndim:
        raise OpTypeError(op, argument, f"axis in [{-ndim}, {ndim - 1}] for a {ndim}-D tensor", f"axis {axis}")
    return axis + ndim if axis < 0 else axis


def tuple_type(fields: Sequence[Type]) -> TupleType:
    return TupleType(tuple(fields))
