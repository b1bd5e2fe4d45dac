"""Elementwise ops: binary with numpy broadcasting, unary, clip, leaky_relu, cast.

The registrations are tables; the numpy references compute transcendental
functions in float64 and round once, so that they are the accurate side of
every comparison.
"""
from __future__ import annotations

import inspect
import math

import numpy as np

from ..ir.expr import Call
from ..ir.types import DTYPES, TensorType
from .attr_forms import dtype_name
from .cast_rule import cast_array
from .registry import Attr, float_result, get_op_def, make_call, register
from .typecheck import ARITH, FLOAT, FLOATS, broadcast_shapes, same_dtype, tensor_arg, tensor_type

__all__ = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
           "negative", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "erf", "clip", "cast"]


# ---- binary ---------------------------------------------------------------------------------------

def _infer_binary(name, dtypes):
    def infer(types, attrs):
        lhs = types[0]
        if lhs is types[1] and type(lhs) is TensorType and lhs.dtype in dtypes:
            return tensor_type(lhs.shape, lhs.dtype)   # (most binary calls: the checks below all pass)
        lhs = tensor_arg(name, "lhs", lhs, dtypes)
        rhs = tensor_arg(name, "rhs", types[1], dtypes)
        same_dtype(name, "rhs", lhs, rhs)
        return tensor_type(broadcast_shapes(name, "rhs", lhs.shape, rhs.shape), lhs.dtype)
    return infer


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.divide(a, b)
    # Integer division truncates toward zero, like C (numpy's // floors).
    with np.errstate(divide="ignore", invalid="ignore"):
        magnitude = np.floor_divide(np.abs(a), np.abs(b))
        return np.where((a < 0) != (b < 0), -magnitude, magnitude).astype(a.dtype)


def _power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.power(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


_BINARY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": _divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": _power,
}

# divide: integer division of narrow types is left out (numpy's int8 -128 // -1 semantics are not C's).
_BINARY_DTYPES = {"divide": (*FLOATS, "int32", "int64"), "power": ("float32", "float64")}
for _name in ("add", "subtract", "multiply", "maximum", "minimum"):
    _BINARY_DTYPES[_name] = (*ARITH, "int64")     # int64: index arithmetic of exported models

for _name, _fn in _BINARY.items():
    register(_name, ("lhs", "rhs"), infer=_infer_binary(_name, _BINARY_DTYPES.get(_name, ARITH)),
             ref=lambda args, attrs, fn=_fn: np.asarray(fn(args[0], args[1])),
             family="elementwise", doc=f"elementwise {_name} with numpy broadcasting")


# ---- unary ----------------------------------------------------------------------------------------

def _infer_unary(name, dtypes):
    def infer(types, attrs):
        data = tensor_arg(name, "data", types[0], dtypes)
        return data
    return infer


def _float64(fn):
    """Apply `fn` in float64 and round to the argument's dtype once."""
    def ref(args, attrs):
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return fn(args[0].astype(np.float64)).astype(args[0].dtype)
    return ref


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x


# name -> (dtypes, reference)
_UNARY = {
    "negative": (ARITH, lambda args, attrs: np.negative(args[0])),
    "abs": (ARITH, lambda args, attrs: np.abs(args[0])),
    "exp": (FLOATS, _float64(np.exp)),
    "log": (FLOATS, _float64(np.log)),
    "sqrt": (FLOATS, _float64(np.sqrt)),
    "tanh": (FLOATS, _float64(np.tanh)),
    "sigmoid": (FLOATS, _float64(_sigmoid)),
    "nn.relu": (ARITH, lambda args, attrs: np.maximum(args[0], np.zeros((), args[0].dtype))),
    "erf": (("float32",), _float64(_erf)),
    "nn.hard_swish": (("float32",), _float64(lambda x: x * np.clip(x / 6.0 + 0.5, 0.0, 1.0))),
}

for _name, (_dtypes, _ref) in _UNARY.items():
    register(_name, ("data",), infer=_infer_unary(_name, _dtypes), ref=_ref, family="elementwise",
             doc=f"elementwise {_name.split('.')[-1]} ({' or '.join(_dtypes)})")


def _clip_ref(args, attrs):
    x = args[0]
    if x.dtype.kind == "f":  # bounds rounded to x's float type (numpy's weak Python scalars)
        return np.minimum(np.maximum(x, attrs.a_min), attrs.a_max).astype(x.dtype)
    # integers against float bounds: clip in float64 and truncate back (exact for every int here)
    return cast_array(np.minimum(np.maximum(x.astype(np.float64), attrs.a_min), attrs.a_max), str(x.dtype))


register("clip", ("data",), (Attr("a_min", "float"), Attr("a_max", "float")),
         infer=_infer_unary("clip", ARITH), ref=_clip_ref, family="elementwise",
         doc="min(max(data, a_min), a_max)")


def _leaky_relu_ref(args, attrs):
    x = args[0].astype(np.float64)
    return np.where(x > 0, x, attrs.alpha * x).astype(args[0].dtype)


register("nn.leaky_relu", ("data",), (Attr("alpha", "float", 0.01),),
         infer=_infer_unary("nn.leaky_relu", FLOATS), ref=_leaky_relu_ref, family="elementwise",
         doc="data if data > 0 else alpha * data")


def _hard_sigmoid_ref(args, attrs):
    x = args[0].astype(np.float64)
    return float_result(np.clip(attrs.alpha * x + attrs.beta, 0.0, 1.0), args[0])


register("nn.hard_sigmoid", ("data",), (Attr("alpha", "float", 0.2), Attr("beta", "float", 0.5)),
         infer=_infer_unary("nn.hard_sigmoid", FLOAT), ref=_hard_sigmoid_ref, family="elementwise",
         doc="max(0, min(1, alpha * data + beta))")


def _gelu_ref(args, attrs):
    x = args[0].astype(np.float64)
    if attrs.approximate == "tanh":
        return float_result(0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3))), args[0])
    return float_result(0.5 * x * (1.0 + _erf(x / np.sqrt(2.0))), args[0])


register("nn.gelu", ("data",), (Attr("approximate", "str", "none", choices=("none", "tanh")),),
         infer=_infer_unary("nn.gelu", FLOAT), ref=_gelu_ref, family="elementwise",
         doc="x * Phi(x) (approximate='tanh': the tanh formula)")


def _infer_cast(types, attrs):
    data = tensor_arg("cast", "data", types[0], DTYPES)
    return tensor_type(data.shape, attrs.dtype)


register("cast", ("data",), (Attr("dtype", "str", check=dtype_name),),
         infer=_infer_cast, ref=lambda args, attrs: cast_array(args[0], attrs.dtype), family="elementwise",
         doc="convert to dtype (float to int truncates toward zero and saturates, NaN -> 0; ints wrap)")


# ---- constructors ---------------------------------------------------------------------------------

def _constructor(name: str, inputs: tuple[str, ...]):
    def construct(*args) -> Call:
        return make_call(name, *args)

    construct.__name__ = construct.__qualname__ = name
    construct.__doc__ = f"{name}({', '.join(inputs)}): {get_op_def(name).doc}"
    construct.__signature__ = inspect.Signature(
        [inspect.Parameter(i, inspect.Parameter.POSITIONAL_ONLY) for i in inputs])
    return construct


add, subtract, multiply, divide, maximum, minimum, power = (_constructor(n, ("lhs", "rhs")) for n in _BINARY)
negative, abs, exp, log, sqrt, tanh, sigmoid, erf = (  # noqa: A001 - Relay's names
    _constructor(n, ("data",)) for n in ("negative", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "erf"))


def clip(data, a_min, a_max) -> Call:
    return make_call("clip", data, a_min=a_min, a_max=a_max)


def cast(data, dtype) -> Call:
    return make_call("cast", data, dtype=dtype)
