"""onnxruntime's quantized contrib ops (domain com.microsoft) that its quantizer writes in QOperator form,
besides QLinearAdd/Mul, QGemm and QLinearGlobalAveragePool (ops_quant.py): QLinearConcat,
QLinearAveragePool, QLinearLeakyRelu, QLinearSigmoid, QLinearSoftmax, QLinearWhere.

How onnxruntime computes them decides how byoc imports them:
- QLinearConcat and QLinearWhere re-express each input in the output's scale and zero point by a
  256-entry table of quantize(dequantize(v)) in float32 (a copy where the parameters are equal):
  qnn.concatenate with rounding="float32" (the same table), and for Where qnn.dequantize ->
  qnn.quantize per input (the same float32 steps) and a `where` on the integers;
- QLinearAveragePool averages in float32 (or, over a whole unpadded plane, as its global pool): the
  same steps as qnn.avg_pool2d (op/qnn_pool.py);
- QLinearLeakyRelu, QLinearSigmoid and QLinearSoftmax compute in float between a dequantize and a
  quantize (tables of the float function): imported as exactly that, qnn.dequantize -> the float op's
  own converter -> qnn.quantize; softmax's output step is onnxruntime's 1 / floor(1 / y_scale). Equal
  to onnxruntime wherever the float function's last bit does not move a value across a rounding
  boundary (its sigmoid is a polynomial, its softmax a table of exp in double).
"""
from __future__ import annotations

from ...ir.expr import Call
from ...op.qnn import softmax_output_scale
from ...op.qnn_pool import avg_pool_int
from .context import Context, Node, NodeError
from .ops_quant import _qparams
from .table import MS_TABLE, Converter, resolve

# float op whose converter a QLinear op reuses -> the opset whose definition the contrib op follows
_FLOAT_OPSET = {"AveragePool": 19, "LeakyRelu": 16, "Sigmoid": 13, "Softmax": 13}
_POOL_ATTRS = ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")


def _per_tensor(node: Node, ctx: Context, scale: int, zp: int, what: str) -> tuple[float, int, str]:
    scales, zps, dtype = _qparams(node, ctx, scale, zp, what)
    if len(scales) != 1 or len(zps) != 1:
        raise NodeError(f"{what} scale and zero point must be per-tensor (one value each)")
    return scales[0], zps[0], dtype


def _dequantized(ctx: Context, x, scale: float, zp: int):
    return ctx.call("qnn.dequantize", x, scale=[scale], zero_point=[zp], axis=0)


def _quantized(ctx: Context, x, scale: float, zp: int, dtype: str):
    return ctx.call("qnn.quantize", x, scale=[scale], zero_point=[zp], axis=0, out_dtype=dtype)


def _float_op(node: Node, ctx: Context, op_type: str, attrs, x, opset: int):
    """The float op's own converter applied to x, with the contrib node's attributes in `attrs`."""
    conv, reason = resolve(op_type, "", opset)
    if conv is None:
        raise NodeError(reason)
    inner = Node(node.name, op_type, opset, opset, {k: v for k, v in node.attrs.items() if k in attrs}, [x], ["X"],
                 node.output_names)
    (y,) = conv.convert(inner, ctx)
    return y


def _unary_params(node: Node, ctx: Context):
    """(X, (x_scale, x_zp), (y_scale, y_zp), y dtype) of X, x_scale, x_zp, y_scale, y_zp."""
    x = node.required(0, "X")
    xs, xzp, _ = _per_tensor(node, ctx, 1, 2, "X")
    ys, yzp, ydtype = _per_tensor(node, ctx, 3, 4, "Y")
    if ctx.dtype(x) not in ("int8", "uint8"):
        raise NodeError(f"X has dtype {ctx.dtype(x)}; int8 or uint8 expected")
    if int(node.attr("channels_last", 0)):
        raise NodeError("channels_last=1 is not supported")
    return x, (xs, xzp), (ys, yzp), ydtype


def _float_path(op_type: str, attrs=()):
    """X, x_scale, x_zp, y_scale, y_zp: quantize(<op_type>(dequantize(X))) with the float op's converter."""
    def convert(node: Node, ctx: Context):
        x, (xs, xzp), (ys, yzp), ydtype = _unary_params(node, ctx)
        y = _float_op(node, ctx, op_type, attrs, _dequantized(ctx, x, xs, xzp), _FLOAT_OPSET[op_type])
        return [_quantized(ctx, y, ys, yzp, ydtype)]
    return convert


def _qlinear_softmax(node: Node, ctx: Context):
    """Softmax in float on the dequantized input (the `opset` attribute picks the definition), quantized with
    onnxruntime's output step 1 / floor(1 / y_scale) (op/qnn.py softmax_output_scale)."""
    x, (xs, xzp), (ys, yzp), ydtype = _unary_params(node, ctx)
    opset = int(node.attr("opset", _FLOAT_OPSET["Softmax"]))
    y = _float_op(node, ctx, "Softmax", ("axis",), _dequantized(ctx, x, xs, xzp), opset)
    return [_quantized(ctx, y, softmax_output_scale(ys), yzp, ydtype)]


def _qlinear_avg_pool(node: Node, ctx: Context):
    """AveragePool's attributes read by its converter, computed as onnxruntime does (op/qnn_pool.py)."""
    x, x_params, y_params, ydtype = _unary_params(node, ctx)
    if ydtype != ctx.dtype(x):
        raise NodeError(f"X is {ctx.dtype(x)} and Y {ydtype}: one 8-bit type expected")
    pooled = _float_op(node, ctx, "AveragePool", _POOL_ATTRS, _dequantized(ctx, x, *x_params), _FLOAT_OPSET["AveragePool"])
    if not isinstance(pooled, Call) or pooled.op.name != "nn.avg_pool2d":
        raise NodeError(f"only 2-D pools are supported (X is {len(ctx.shape(x))}-D)")
    return [avg_pool_int(ctx.call, x, ctx.shape(x), dict(pooled.attrs), ydtype, x_params, y_params)]


def _qlinear_concat(node: Node, ctx: Context):
    """Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input."""
    if len(node.inputs) < 5 or (len(node.inputs) - 2) % 3:
        raise NodeError(f"{len(node.inputs)} inputs: expected Y_scale, Y_zero_point and (X, scale, zero point) "
                        "triples")
    ys, yzp, ydtype = _per_tensor(node, ctx, 0, 1, "Y")
    xs, scales, zps = [], [], []
    for start in range(2, len(node.inputs), 3):
        x = node.required(start, f"X{(start - 2) // 3}")
        s, z, _ = _per_tensor(node, ctx, start + 1, start + 2, f"X{(start - 2) // 3}")
        if ctx.dtype(x) != ydtype:
            raise NodeError(f"input {start} has dtype {ctx.dtype(x)}, the output's zero point {ydtype}")
        xs.append(x), scales.append(s), zps.append(z)
    rank = len(ctx.shape(xs[0]))
    axis = int(node.attr("axis", 0))
    if not -rank <= axis < rank:
        raise NodeError(f"axis {axis} is out of range for {rank}-D inputs")
    return [ctx.call("qnn.concatenate", xs, input_scales=scales, input_zero_points=zps, output_scale=ys,
                     output_zero_point=yzp, axis=axis % rank, rounding="float32")]


def _qlinear_where(node: Node, ctx: Context):
    """condition, X, x_scale, x_zp, Y, y_scale, y_zp, z_scale, z_zp: X and Y re-expressed in Z's parameters."""
    cond = node.required(0, "condition")
    zs, zzp, zdtype = _per_tensor(node, ctx, 7, 8, "Z")
    branches = []
    for start, what in ((1, "X"), (4, "Y")):
        v = node.required(start, what)
        s, z, _ = _per_tensor(node, ctx, start + 1, start + 2, what)
        if (s, z) != (zs, zzp):
            v = _quantized(ctx, _dequantized(ctx, v, s, z), zs, zzp, zdtype)
        branches.append(v)
    return [ctx.call("where", cond, *branches)]


MS_TABLE.update({
    "QLinearConcat": Converter("QLinearConcat", (1,), _qlinear_concat),
    "QLinearWhere": Converter("QLinearWhere", (1,), _qlinear_where),
    "QLinearAveragePool": Converter("QLinearAveragePool", (1,), _qlinear_avg_pool),
    "QLinearLeakyRelu": Converter("QLinearLeakyRelu", (1,), _float_path("LeakyRelu", ("alpha",))),
    "QLinearSigmoid": Converter("QLinearSigmoid", (1,), _float_path("Sigmoid")),
    "QLinearSoftmax": Converter("QLinearSoftmax", (1,), _qlinear_softmax),
})
