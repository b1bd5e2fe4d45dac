"""nn.layer_norm: normalize over the trailing axes from `axis`, then scale and shift.

y = (x - mean) / sqrt(var + epsilon) * gamma + beta, with mean and (biased) variance over
axes [axis, ndim); gamma and beta broadcast to data.shape[axis:] (ONNX LayerNormalization).
The reference computes in float64 and rounds once.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call
from .registry import Attr, OpTypeError, float_result, make_call, register
from .typecheck import FLOAT, normalize_axis, shape_text, tensor_arg

__all__ = ["layer_norm"]


def _infer(types, attrs):
    data = tensor_arg("nn.layer_norm", "data", types[0], FLOAT)
    if data.ndim == 0:
        raise OpTypeError("nn.layer_norm", "data", "a tensor of at least 1 dimension", "a scalar")
    axis = normalize_axis("nn.layer_norm", "axis", attrs.axis, data.ndim)
    normalized = data.shape[axis:]
    for name, ty in (("gamma", types[1]), ("beta", types[2])):
        vec = tensor_arg("nn.layer_norm", name, ty, FLOAT)
        fits = vec.ndim <= len(normalized) and all(
            v in (1, d) for v, d in zip(vec.shape[::-1], normalized[::-1]))
        if not fits:
            raise OpTypeError("nn.layer_norm", name, f"a shape broadcastable to {shape_text(normalized)} "
                              f"(data.shape[{axis}:])", f"shape {shape_text(vec.shape)}")
    return data


def _ref(args, attrs):
    x, gamma, beta = (a.astype(np.float64) for a in args)
    axes = tuple(range(attrs.axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return float_result((x - mean) / np.sqrt(var + attrs.epsilon) * gamma + beta, args[0])


register("nn.layer_norm", ("data", "gamma", "beta"),
         (Attr("axis", "int", -1), Attr("epsilon", "float", 1e-5, check=lambda v: None if v >= 0 else "must be >= 0")),
         infer=_infer, ref=_ref, family="nn", doc="(x - mean) / sqrt(var + epsilon) * gamma + beta over axes [axis, ndim)")


def layer_norm(data, gamma, beta, axis=-1, epsilon=1e-5) -> Call:
    return make_call("nn.layer_norm", data, gamma, beta, axis=axis, epsilon=epsilon)
