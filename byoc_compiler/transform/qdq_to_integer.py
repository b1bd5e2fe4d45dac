"""QDQToInteger: quantize(float_op(dequantize(x), dequantize(w), ...)) -> integer qnn ops.

A QDQ model (ONNX's QuantizeLinear/DequantizeLinear around float ops, as
onnxruntime.quantization.quantize_static writes it) computes in float between a
dequantize and a quantize. Real int8 kernels compute those steps in integers; this
pass rewrites every `qnn.quantize` whose float producer has an integer form:

| float op (inputs dequantized)                | integer form                                          |
| -------------------------------------------- | ----------------------------------------------------- |
| nn.conv2d (+ nn.bias_add/add of an int32 bias) | qnn.conv2d + add int32 bias + qnn.requantize        |
| nn.dense / nn.matmul by a 2-D weight (+ bias) | qnn.dense / qnn.matmul + add bias + qnn.requantize    |
| add of uint8 (any dtype, and multiply, with `binary=True`) | qnn.add (onnxruntime's QLinearAdd rounding), qnn.mul |
| concatenate                                  | qnn.concatenate                                       |
| nn.global_avg_pool2d                         | as onnxruntime's QLinearGlobalAveragePool             |
| nn.avg_pool2d                                | as onnxruntime's QLinearAveragePool: qnn.avg_pool2d (float32 steps), or the global pool's form over a whole unpadded plane |
| nn.batch_matmul of two 8-bit activations     | 2-D qnn.matmul per batch matrix + qnn.requantize (onnxruntime's QLinearMatMul) |
| nn.softmax (8-bit in and out)                | float softmax quantized with onnxruntime's step 1 / floor(1 / scale) |
| nn.max_pool2d, nn.relu, data movement, with the same scale and zero point in and out | the op on the integers (relu: clip at the zero point) |

By default only a uint8 add becomes qnn.add: onnxruntime fuses a QDQ Add into QLinearAdd for uint8
and leaves int8 Add and Mul in float (dequantize, float32 op, quantize); a deep network amplifies even
rare last-bit differences into many changed outputs, so byoc follows the peer's choice to stay
bit-exact with it (`binary=True` rewrites them all).
A relu or clip right before the quantize is dropped when the quantize's saturation already does its
work (zero point at the type's minimum; representable range inside the clip bounds), as onnxruntime
does. Anything else keeps its float form (dequantize -> float op -> quantize), which is
exactly what the QDQ model means. The requantization scale is x_scale * w_scale
rounded to float32 (onnxruntime's). Idea from onnxruntime's QDQ transformer and TVM's
FakeQuantizationToInteger; the code is written for byoc's IR.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import Call, Constant, Function, Op, Tuple
from ..ir.module import IRModule
from ..ir.types import TensorType
from ..ir.visitor import ExprMutator
from ..op.qnn import global_avg_pool_int, qmatmul_nd, softmax_output_scale
from ..op.qnn_pool import avg_pool_int
from ..op.registry import make_call
from .infer_type import infer_type
from .named_pass import NamedPass

_Q8 = ("int8", "uint8")
# ops that only move or select elements: they commute with an affine quantization of unchanged parameters
_SAME_PARAMS = ("reshape", "squeeze", "expand_dims", "nn.batch_flatten", "transpose", "nn.max_pool2d",
                "nn.dropout")


def _is(expr, name: str) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == name


class _DQ:
    """A dequantize call seen in the original (typed) graph and its rebuilt counterpart."""

    def __init__(self, orig: Call, new: Call):
        self.value = new.args[0]
        self.scale = list(orig.attrs.scale)
        self.zp = list(orig.attrs.zero_point)
        self.axis = orig.attrs.axis
        ty = orig.args[0].checked_type
        self.dtype = ty.dtype if isinstance(ty, TensorType) else None
        self.constant = self.value.data if isinstance(self.value, Constant) else None

    @property
    def per_tensor(self) -> bool:
        return len(self.scale) == 1 and len(self.zp) == 1


def _dq(orig, new) -> _DQ | None:
    if _is(orig, "qnn.dequantize") and _is(new, "qnn.dequantize"):
        return _DQ(orig, new)
    return None


def _f32_products(a: list[float], b: list[float]) -> list[float]:
    if len(a) == 1:
        a = a * len(b)
    return [float(np.float32(np.float32(x) * np.float32(y))) for x, y in zip(a, b)]


class _Rewriter(ExprMutator):
    into_functions = False

    def __init__(self, binary: bool = False):
        super().__init__()
        self.rules = (_linear, (lambda o, n, q: _binary(o, n, q, binary)), _concat, _same_params, _global_avg_pool,
                      _avg_pool, _softmax, _batch_matmul)

    def rewrite_call(self, original, rebuilt):
        if not _is(original, "qnn.quantize") or not _is(rebuilt, "qnn.quantize"):
            return rebuilt
        q = original.attrs
        if len(q.scale) != 1 or len(q.zero_point) != 1 or q.out_dtype not in _Q8:
            return rebuilt
        out = dict(scale=list(q.scale), zp=list(q.zero_point), dtype=q.out_dtype)
        inner_o, inner_n = original.args[0], rebuilt.args[0]
        while _absorbed_by_saturation(inner_o, out):
            inner_o, inner_n = inner_o.args[0], inner_n.args[0]
        for rule in self.rules:
            result = rule(inner_o, inner_n, out)
            if result is not None:
                return result
        return rebuilt


def _absorbed_by_saturation(expr, out) -> bool:
    """relu/clip right before the quantize that change nothing the quantize's saturation does not already
    do: relu when the zero point is the type's minimum, clip when the representable range lies inside
    [a_min, a_max] (onnxruntime's ReluQuantFusion and ClipQuantFusion)."""
    info = np.iinfo(out["dtype"])
    scale, zp = out["scale"][0], out["zp"][0]
    if _is(expr, "nn.relu"):
        return zp == info.min
    if _is(expr, "clip"):
        lo, hi = (info.min - zp) * scale, (info.max - zp) * scale
        return expr.attrs.a_min <= lo and hi <= expr.attrs.a_max
    return False


def _bias(orig, new) -> tuple[Call, Call, _DQ | None] | None:
    """(producer orig, producer new, bias) of conv/dense [+ bias_add/add of a dequantized int32 bias]."""
    if _is(orig, "nn.bias_add") or _is(orig, "add"):
        b = _dq(orig.args[1], new.args[1])
        if b is None or b.constant is None or b.dtype != "int32" or any(z != 0 for z in b.zp):
            return None
        return orig.args[0], new.args[0], b
    return orig, new, None


def _transposed_weight(op_o, op_n) -> _DQ | None:
    """The (K, N) weight of nn.dense(x, transpose(dequantize(W))): how the importer writes ONNX MatMul by a
    2-D constant (a dense layer with weight W^T)."""
    t_o, t_n = op_o.args[1], op_n.args[1]
    if not (_is(t_o, "transpose") and _is(t_n, "transpose") and tuple(t_o.attrs.axes) == (1, 0)):
        return None
    return _dq(t_o.args[0], t_n.args[0])


def _product(op_o, op_n):
    """(integer product, x, w, channels, channel axis) of a conv2d / dense / matmul on dequantized int8
    operands and a constant weight, or None."""
    x = _dq(op_o.args[0], op_n.args[0])
    matmul_weight = _transposed_weight(op_o, op_n) if _is(op_o, "nn.dense") else None
    w = matmul_weight or _dq(op_o.args[1], op_n.args[1])
    if x is None or w is None or not x.per_tensor or x.dtype not in _Q8 or w.dtype not in _Q8 or w.constant is None:
        return None
    a, per_channel = op_o.attrs, len(w.scale) > 1
    if _is(op_o, "nn.conv2d"):
        if per_channel and w.axis % 4 != 0:
            return None
        conv = {k: a[k] for k in ("strides", "padding", "dilation", "groups")}
        acc = make_call("qnn.conv2d", x.value, w.value, input_zero_point=x.zp[0], kernel_zero_point=w.zp, **conv)
        return acc, x, w, w.constant.shape[0], 1
    if _is(op_o, "nn.dense") and matmul_weight is None:
        if per_channel and w.axis % 2 != 0:
            return None
        acc = make_call("qnn.dense", x.value, w.value, input_zero_point=x.zp[0], kernel_zero_point=w.zp)
        return acc, x, w, w.constant.shape[0], -1
    xt = op_o.args[0].checked_type
    if (_is(op_o, "nn.matmul") and (a.transpose_a or a.transpose_b)) or xt.ndim < 2 or w.constant.ndim != 2 or \
            (per_channel and w.axis % 2 != 1):
        return None
    acc = qmatmul_nd(make_call, x.value, w.value, xt.shape, w.constant.shape, x.zp[0], w.zp)
    return acc, x, w, w.constant.shape[1], -1


def _linear(orig, new, out):
    found = _bias(orig, new)
    if found is None:
        return None
    op_o, op_n, bias = found
    if not (_is(op_o, "nn.conv2d") or _is(op_o, "nn.dense") or _is(op_o, "nn.matmul")):
        return None
    product = _product(op_o, op_n)
    if product is None:
        return None
    acc, x, w, channels, channel_axis = product
    if bias is not None:
        b = bias.constant.reshape(-1)
        if b.size != channels:
            return None
        shaped = Constant(b.reshape(channels, 1, 1) if channel_axis == 1 else b)
        acc = make_call("add", acc, shaped)
    return make_call("qnn.requantize", acc, input_scale=_f32_products(x.scale, w.scale), input_zero_point=[0],
                     output_scale=out["scale"], output_zero_point=out["zp"], axis=channel_axis,
                     out_dtype=out["dtype"])


def _binary(orig, new, out, binary_all: bool = False):
    name = {"add": "qnn.add", "multiply": "qnn.mul"}.get(orig.op.name if isinstance(orig, Call) and
                                                         isinstance(orig.op, Op) else "")
    if name is None:
        return None
    a, b = _dq(orig.args[0], new.args[0]), _dq(orig.args[1], new.args[1])
    if a is None or b is None or not (a.per_tensor and b.per_tensor) or a.dtype != b.dtype or a.dtype != out["dtype"]:
        return None
    if not binary_all and not (name == "qnn.add" and a.dtype == "uint8"):
        return None
    return make_call(name, a.value, b.value, lhs_scale=a.scale, lhs_zero_point=a.zp[0], rhs_scale=b.scale,
                     rhs_zero_point=b.zp[0], output_scale=out["scale"], output_zero_point=out["zp"][0])


def _concat(orig, new, out):
    if not _is(orig, "concatenate") or not isinstance(orig.args[0], Tuple) or not isinstance(new.args[0], Tuple):
        return None
    parts = [_dq(o, n) for o, n in zip(orig.args[0].fields, new.args[0].fields)]
    if any(p is None or not p.per_tensor or p.dtype != out["dtype"] for p in parts):
        return None
    return make_call("qnn.concatenate", Tuple([p.value for p in parts]),
                     input_scales=[p.scale[0] for p in parts], input_zero_points=[p.zp[0] for p in parts],
                     output_scale=out["scale"][0], output_zero_point=out["zp"][0], axis=orig.attrs.axis)


def _same_params(orig, new, out):
    if not isinstance(orig, Call) or not isinstance(orig.op, Op) or len(orig.args) != 1:
        return None
    name = orig.op.name
    if name not in _SAME_PARAMS and name != "nn.relu":
        return None
    x = _dq(orig.args[0], new.args[0])
    if x is None or not x.per_tensor or x.dtype != out["dtype"] or x.scale != out["scale"] or x.zp != out["zp"]:
        return None
    if name == "nn.relu":   # relu in the real domain is max(q, zero point) in the integer one
        info = np.iinfo(x.dtype)
        return make_call("clip", x.value, a_min=float(x.zp[0]), a_max=float(info.max))
    return make_call(name, x.value, **dict(orig.attrs))


def _global_avg_pool(orig, new, out):
    """As onnxruntime's QLinearGlobalAveragePool (the QDQ form of GlobalAveragePool)."""
    if not _is(orig, "nn.global_avg_pool2d"):
        return None
    x = _dq(orig.args[0], new.args[0])
    if x is None or not x.per_tensor or x.dtype != out["dtype"]:
        return None
    return global_avg_pool_int(make_call, x.value, orig.args[0].checked_type.shape, x.dtype, x.scale[0], x.zp[0],
                               out["scale"][0], out["zp"][0], out["dtype"])


def _avg_pool(orig, new, out):
    """As onnxruntime's QLinearAveragePool (its fusion of a QDQ AveragePool): over the whole plane without
    padding its integer global pool, else the float32 steps of qnn.avg_pool2d."""
    if not _is(orig, "nn.avg_pool2d"):
        return None
    x = _dq(orig.args[0], new.args[0])
    if x is None or not x.per_tensor or x.dtype != out["dtype"]:
        return None
    return avg_pool_int(make_call, x.value, orig.args[0].checked_type.shape, dict(orig.attrs), x.dtype,
                        (x.scale[0], x.zp[0]), (out["scale"][0], out["zp"][0]))


def _batch_matmul(orig, new, out):
    """A MatMul of two dequantized 8-bit activations (attention's scores and context), as onnxruntime's
    QLinearMatMul: the integer product, requantized by a_scale * b_scale in float32."""
    if not _is(orig, "nn.batch_matmul") or orig.attrs.transpose_a or orig.attrs.transpose_b:
        return None
    a, b = _dq(orig.args[0], new.args[0]), _dq(orig.args[1], new.args[1])
    if a is None or b is None or not (a.per_tensor and b.per_tensor) or {a.dtype, b.dtype} - set(_Q8):
        return None
    shapes = [arg.checked_type.shape for arg in orig.args[:2]]
    acc = qmatmul_nd(make_call, a.value, b.value, *shapes, a.zp[0], b.zp)
    return make_call("qnn.requantize", acc, input_scale=_f32_products(a.scale, b.scale), input_zero_point=[0],
                     output_scale=out["scale"], output_zero_point=out["zp"], axis=-1, out_dtype=out["dtype"])


def _softmax(orig, new, out):
    """onnxruntime fuses a QDQ Softmax into QLinearSoftmax, whose output step is 1 / floor(1 / scale)."""
    if not _is(orig, "nn.softmax"):
        return None
    x = _dq(orig.args[0], new.args[0])
    scale = softmax_output_scale(out["scale"][0])
    if x is None or not x.per_tensor or x.dtype != out["dtype"] or scale == out["scale"][0]:
        return None
    return make_call("qnn.quantize", new, scale=[scale], zero_point=out["zp"], axis=0, out_dtype=out["dtype"])


def qdq_to_integer(mod: IRModule, binary: bool = False) -> IRModule:
    typed = infer_type(mod)
    out = IRModule()
    changed = False
    for name, func in typed.items():
        body = _Rewriter(binary).visit(func.body)
        changed |= body is not func.body
        out = out.with_function(name, func if body is func.body else
                                Function(func.params, body, None, func.attrs, func.span))
    return infer_type(out) if changed else typed


def QDQToInteger() -> NamedPass:  # noqa: N802 - TVM's spelling
    return NamedPass("QDQToInteger", qdq_to_integer)
