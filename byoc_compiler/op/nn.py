"""Neural-network ops (`nn.*`): dense, matmul, bias_add, batch_norm, softmax, lrn,
and the constructors of every nn op (conv2d and pools live in conv.py/pool.py,
relu/leaky_relu in elementwise.py, pad/dropout/batch_flatten in shape.py).

References accumulate in float64 and round to float32 once.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call
from .registry import Attr, OpTypeError, float_result, make_call, register
from .typecheck import FLOAT, normalize_axis, shape_text, tensor_arg, tensor_type, tuple_type

__all__ = ["relu", "leaky_relu", "dense", "matmul", "bias_add", "conv2d", "max_pool2d", "avg_pool2d",
           "global_avg_pool2d", "batch_norm", "softmax", "lrn", "pad", "dropout", "batch_flatten", "batch_matmul",
           "layer_norm", "gelu", "hard_sigmoid", "hard_swish"]


def _f64(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64)


# ---- dense / matmul -------------------------------------------------------------------------------

def _infer_dense(types, attrs):
    data = tensor_arg("nn.dense", "data", types[0], FLOAT)
    weight = tensor_arg("nn.dense", "weight", types[1], FLOAT, ndim=2)
    if data.ndim < 1:
        raise OpTypeError("nn.dense", "data", "a tensor of at least 1 dimension", "a scalar")
    k = data.shape[-1]
    if weight.shape[1] != k:
        raise OpTypeError("nn.dense", "weight", f"shape (N, {k}) (K = data.shape[-1] = {k})",
                          f"shape {shape_text(weight.shape)}")
    if attrs.units is not None and attrs.units != weight.shape[0]:
        raise OpTypeError("nn.dense", "weight", f"{attrs.units} rows (attribute units)",
                          f"shape {shape_text(weight.shape)}")
    return tensor_type(data.shape[:-1] + (weight.shape[0],), data.dtype)


register("nn.dense", ("data", "weight"), (Attr("units", "int_or_none", None),),
         infer=_infer_dense, ref=lambda args, attrs: float_result(_f64(args[0]) @ _f64(args[1]).T, args[0]),
         family="nn", doc="data [..., K] x weight [N, K]^T -> [..., N]")


def _infer_matmul(types, attrs):
    a = tensor_arg("nn.matmul", "tensor_a", types[0], FLOAT, ndim=2)
    b = tensor_arg("nn.matmul", "tensor_b", types[1], FLOAT, ndim=2)
    m, k = a.shape[::-1] if attrs.transpose_a else a.shape
    kb, n = b.shape[::-1] if attrs.transpose_b else b.shape
    if k != kb:
        want = f"shape ({n}, {k})" if attrs.transpose_b else f"shape ({k}, {n})"
        raise OpTypeError("nn.matmul", "tensor_b", f"{want} (K = {k} from tensor_a)",
                          f"shape {shape_text(b.shape)}")
    return tensor_type((m, n), a.dtype)


def _matmul_ref(args, attrs):
    a, b = _f64(args[0]), _f64(args[1])
    a = a.T if attrs.transpose_a else a
    b = b.T if attrs.transpose_b else b
    return float_result(a @ b, args[0])


register("nn.matmul", ("tensor_a", "tensor_b"),
         (Attr("transpose_a", "bool", False), Attr("transpose_b", "bool", False)),
         infer=_infer_matmul, ref=_matmul_ref, family="nn", doc="2-D [M, K] x [K, N] (flags transpose)")


# ---- bias_add / batch_norm ------------------------------------------------------------------------

def _channel_vector(op, argument, ty, data, axis):
    vec = tensor_arg(op, argument, ty, FLOAT)
    want = (data.shape[axis],)
    if vec.shape != want:
        raise OpTypeError(op, argument, f"shape {shape_text(want)} (data.shape[{axis}])",
                          f"shape {shape_text(vec.shape)}")
    return vec


def _infer_bias_add(types, attrs):
    data = tensor_arg("nn.bias_add", "data", types[0], FLOAT)
    axis = normalize_axis("nn.bias_add", "data", attrs.axis, data.ndim)
    _channel_vector("nn.bias_add", "bias", types[1], data, axis)
    return data


def _along(vec: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A 1-D vector shaped to broadcast along `axis` of an ndim-D tensor."""
    shape = [1] * ndim
    shape[axis] = -1
    return vec.reshape(shape)


def _bias_add_ref(args, attrs):
    x, bias = args
    return float_result(x + _along(bias, attrs.axis % x.ndim, x.ndim), args[0])


register("nn.bias_add", ("data", "bias"), (Attr("axis", "int", 1),), infer=_infer_bias_add,
         ref=_bias_add_ref, family="nn", doc="data + bias along axis")

_BN_INPUTS = ("data", "gamma", "beta", "moving_mean", "moving_var")


def _infer_batch_norm(types, attrs):
    data = tensor_arg("nn.batch_norm", "data", types[0], FLOAT)
    axis = normalize_axis("nn.batch_norm", "data", attrs.axis, data.ndim)
    vecs = [_channel_vector("nn.batch_norm", name, ty, data, axis) for name, ty in zip(_BN_INPUTS[1:], types[1:])]
    return tuple_type((data, vecs[2], vecs[3]))


def _batch_norm_ref(args, attrs):
    x, gamma, beta, mean, var = (_f64(a) for a in args)
    axis = attrs.axis % x.ndim
    out = (x - _along(mean, axis, x.ndim)) / np.sqrt(_along(var, axis, x.ndim) + attrs.epsilon)
    if attrs.scale:
        out = out * _along(gamma, axis, x.ndim)
    if attrs.center:
        out = out + _along(beta, axis, x.ndim)
    return (float_result(out, args[0]), args[3], args[4])


register("nn.batch_norm", _BN_INPUTS,
         (Attr("axis", "int", 1), Attr("epsilon", "float", 1e-5, check=lambda v: None if v >= 0 else "must be >= 0"),
          Attr("center", "bool", True), Attr("scale", "bool", True)),
         infer=_infer_batch_norm, ref=_batch_norm_ref, family="nn",
         doc="inference batch norm -> (normalized, moving_mean, moving_var)")


# ---- softmax / lrn --------------------------------------------------------------------------------

def _infer_softmax(types, attrs):
    data = tensor_arg("nn.softmax", "data", types[0], ("float32", "float64"))
    normalize_axis("nn.softmax", "data", attrs.axis, data.ndim)
    return data


def _softmax_ref(args, attrs):
    x = _f64(args[0])
    shifted = np.exp(x - x.max(axis=attrs.axis, keepdims=True))
    return float_result(shifted / shifted.sum(axis=attrs.axis, keepdims=True), args[0])


register("nn.softmax", ("data",), (Attr("axis", "int", -1),), infer=_infer_softmax, ref=_softmax_ref,
         family="nn", doc="exp(x - max) / sum(exp(x - max)) along axis")


def _infer_lrn(types, attrs):
    data = tensor_arg("nn.lrn", "data", types[0], FLOAT)
    normalize_axis("nn.lrn", "data", attrs.axis, data.ndim)
    return data


def lrn_window(channel: int, size: int, channels: int) -> range:
    """The channels summed for `channel`: (size-1)//2 before it, size//2 after it (ONNX's rule)."""
    return range(max(0, channel - (size - 1) // 2), min(channels, channel + size // 2 + 1))


def _lrn_ref(args, attrs):
    x = np.moveaxis(_f64(args[0]), attrs.axis, 0)
    squares = x * x
    out = np.empty_like(x)
    for c in range(x.shape[0]):
        window = lrn_window(c, attrs.size, x.shape[0])
        total = squares[window.start:window.stop].sum(axis=0)
        out[c] = x[c] / (attrs.bias + attrs.alpha / attrs.size * total) ** attrs.beta
    return float_result(np.moveaxis(out, 0, attrs.axis), args[0])


_positive = lambda v: None if v > 0 else "must be positive"  # noqa: E731

register("nn.lrn", ("data",),
         (Attr("size", "int", 5, check=_positive), Attr("axis", "int", 1), Attr("bias", "float", 2.0),
          Attr("alpha", "float", 1e-4), Attr("beta", "float", 0.75)),
         infer=_infer_lrn, ref=_lrn_ref, family="nn",
         doc="x / (bias + alpha/size * sum of x^2 over `size` neighbouring channels)^beta")


# ---- constructors ---------------------------------------------------------------------------------

def relu(data) -> Call:
    return make_call("nn.relu", data)


def leaky_relu(data, alpha=0.01) -> Call:
    return make_call("nn.leaky_relu", data, alpha=alpha)


def dense(data, weight, units=None) -> Call:
    return make_call("nn.dense", data, weight, units=units)


def matmul(tensor_a, tensor_b, transpose_a=False, transpose_b=False) -> Call:
    return make_call("nn.matmul", tensor_a, tensor_b, transpose_a=transpose_a, transpose_b=transpose_b)


def bias_add(data, bias, axis=1) -> Call:
    return make_call("nn.bias_add", data, bias, axis=axis)


def conv2d(data, weight, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, channels=None,
           kernel_size=None, data_layout="NCHW", kernel_layout="OIHW", out_dtype="") -> Call:
    return make_call("nn.conv2d", data, weight, strides=strides, padding=padding, dilation=dilation,
                     groups=groups, channels=channels, kernel_size=kernel_size, data_layout=data_layout,
                     kernel_layout=kernel_layout, out_dtype=out_dtype)


def max_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0, 0, 0), layout="NCHW",
               ceil_mode=False) -> Call:
    return make_call("nn.max_pool2d", data, pool_size=pool_size, strides=strides, dilation=dilation,
                     padding=padding, layout=layout, ceil_mode=ceil_mode)


def avg_pool2d(data, pool_size=(1, 1), strides=(1, 1), dilation=(1, 1), padding=(0, 0, 0, 0), layout="NCHW",
               ceil_mode=False, count_include_pad=False) -> Call:
    return make_call("nn.avg_pool2d", data, pool_size=pool_size, strides=strides, dilation=dilation,
                     padding=padding, layout=layout, ceil_mode=ceil_mode, count_include_pad=count_include_pad)


def global_avg_pool2d(data, layout="NCHW") -> Call:
    return make_call("nn.global_avg_pool2d", data, layout=layout)


def batch_norm(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True,
               scale=True) -> Call:
    """The call returns a tuple (normalized, moving_mean, moving_var); use `batch_norm(...)[0]`."""
    return make_call("nn.batch_norm", data, gamma, beta, moving_mean, moving_var, axis=axis, epsilon=epsilon,
                     center=center, scale=scale)


def softmax(data, axis=-1) -> Call:
    return make_call("nn.softmax", data, axis=axis)


def lrn(data, size=5, axis=1, bias=2.0, alpha=1e-4, beta=0.75) -> Call:
    return make_call("nn.lrn", data, size=size, axis=axis, bias=bias, alpha=alpha, beta=beta)


def pad(data, pad_width, pad_value=0.0, pad_mode="constant") -> Call:
    return make_call("nn.pad", data, pad_width=pad_width, pad_value=pad_value, pad_mode=pad_mode)


def dropout(data, rate=0.5) -> Call:
    return make_call("nn.dropout", data, rate=rate)


def batch_flatten(data) -> Call:
    return make_call("nn.batch_flatten", data)



def batch_matmul(tensor_a, tensor_b, transpose_a=False, transpose_b=False) -> Call:
    return make_call("nn.batch_matmul", tensor_a, tensor_b, transpose_a=transpose_a, transpose_b=transpose_b)


def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5) -> Call:
    return make_call("nn.layer_norm", data, gamma, beta, axis=axis, epsilon=epsilon)


def gelu(data, approximate="none") -> Call:
    return make_call("nn.gelu", data, approximate=approximate)


def hard_sigmoid(data, alpha=0.2, beta=0.5) -> Call:
    return make_call("nn.hard_sigmoid", data, alpha=alpha, beta=beta)


def hard_swish(data) -> Call:
    return make_call("nn.hard_swish", data)
