"""ccompiler's int8/uint8 side: which quantized ops and chains it takes, and how each becomes one call.

The quantized models byoc imports (QDQ after transform.QDQToInteger, or QOperator) are chains
    qnn.conv2d -> add (int32 bias) -> qnn.requantize        (and qnn.dense, and without the bias)
between uint8/int8 tensors, with qnn.add for residuals, int8 max pooling, a flatten, and
qnn.quantize / qnn.dequantize at the ends. Each chain is one composite and one kernel call
(ck_qconv2d / ck_qdense): the weight is packed at codegen time (qkernels.pack_weight), the input zero
point folded into the bias, the requantize factors passed as one float32 per output channel.

Taken: int8 weights with zero point 0 (what quantize_static writes), uint8 or int8 activations,
requantize rounding "float32" (what the ONNX importer writes) or "tflite" (the TFLite importer's: the
kernels get TFLite's int32 multiplier and exponent per channel, from the function the reference uses;
"fixed_point" and "tflite_single" stay on the host), one output zero point. Anything else stays on the host with the reason in the why-not table.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from byoc_compiler.vendor import (ByocError, TensorType, add_float32_params, add_multipliers, float_literal, int_literal,
                                  is_constant, is_op, line_array, requantize_ratios, tflite_add_params, tflite_requantize_multipliers,
                                  wildcard, workspace_budget)

from . import kernels, qkernels
from .qkernels import TYPE_RANGE
from .rule import Rule

Q8 = qkernels.Q_DTYPES
# TFLite's 16x8 (int16 activations, int8 weights, int64 sums) is computed by the host C only
SIXTEEN_BY_EIGHT = "int16 activations (TFLite's 16x8): no ccompiler kernel, the host computes them"

# The chains, longest first: (pattern name, producer op, with the int32 bias add, activation after the
# requantize: None, "nn.relu" or "clip" on the int8/uint8 result, fused into the output clamp).
CHAINS = [(f"qnn_{kind}{'_bias' if bias else ''}_requantize{'_' + act.split('.')[-1] if act else ''}",
           f"qnn.{kind}", bias, act)
          for kind in ("conv2d", "dense") for bias in (True, False) for act in ("nn.relu", "clip", None)]
# composite name -> the rule (a step of the codegen, not an op) that emits its chain
COMPOSITES = {f"ccompiler.{name}": f"qnn_{producer.split('.')[1]}" for name, producer, _, _ in CHAINS}
# A QDQ model's residual add, quantize(relu?(dequantize(a) + dequantize(b))): one int8 pass (ck_qdq_add) instead
# of two float32 tensors four times the int8 ones (ResNet-8's arena: 147 KB -> 48 KB).
QDQ_ADDS = {"qdq_add_relu": True, "qdq_add": False}
COMPOSITES.update({f"ccompiler.{name}": "qdq_add" for name in QDQ_ADDS})


# ---- the op table -------------------------------------------------------------------------------

def _dtype(expr) -> str:
    return expr.checked_type.dtype


def _chain(root):
    """(producer, bias constant or None, requantize, activation call or None) of a matched chain."""
    act = None
    if getattr(root.op, "name", "") in ("nn.relu", "clip"):
        act, root = root, root.args[0]
    inner = root.args[0]
    if getattr(inner.op, "name", "") == "add":
        return inner.args[0], inner.args[1], root, act
    return inner, None, root, act


def _activation_bounds(act, dtype: str) -> tuple[int, int] | str:
    """The integer clamp a relu or clip on `dtype` values computes (clip: float bounds, truncated as the
    reference casts its float64 result back), or why it is not one."""
    lo, hi = TYPE_RANGE[dtype]
    if act is None:
        return lo, hi
    if act.op.name == "nn.relu":
        return max(lo, 0), hi
    a_min, a_max = float(act.attrs["a_min"]), float(act.attrs["a_max"])
    if not (np.isfinite(a_min) and np.isfinite(a_max) and lo <= a_min <= a_max <= hi):
        return f"clip bounds ({a_min}, {a_max}) are not an order within {dtype}'s range"
    return int(np.trunc(a_min)), int(np.trunc(a_max))


def _channel_vector_reason(shape, ndim: int, axis: int) -> str | None:
    padded = (1,) * (ndim - len(shape)) + tuple(shape)
    if len(padded) != ndim or any(d != 1 for i, d in enumerate(padded) if i != axis):
        return f"bias of shape {tuple(shape)} is not one value per output channel"
    return None


def _chain_reason(root) -> str | None:
    producer, bias, rq, act = _chain(root)
    data, weight = producer.args
    a = producer.attrs
    ndim = producer.checked_type.ndim
    axis = 1 if producer.op.name == "qnn.conv2d" else ndim - 1
    if _dtype(data) == "int16":
        return SIXTEEN_BY_EIGHT
    if _dtype(data) not in Q8 or _dtype(weight) not in Q8:
        return f"data {_dtype(data)} x weight {_dtype(weight)}: the int8 kernels take uint8/int8 x int8"
    if _dtype(weight) == "uint8" and int(np.asarray(weight.data).max(initial=0)) > 127:
        # (the global average pool the importer writes sums with a uint8 kernel of ones: taken as int8)
        return "uint8 weight values above 127 (the kernels multiply by int8)"
    if any(int(z) != 0 for z in a["kernel_zero_point"]):
        return "weight zero point is not 0"
    if ndim == 0 or ndim > kernels.MAX_RANK:
        return f"rank {ndim}"
    r = rq.attrs
    if r["rounding"] not in qkernels.ROUNDINGS:
        return f"requantize rounding {r['rounding']!r} (the kernels round the float32 or the tflite way)"
    if r["rounding"] == "tflite" and any(int(z) != 0 for z in r["input_zero_point"]):
        return "tflite requantize with an input zero point (TFLite's accumulators have none)"
    if r["out_dtype"] not in Q8:
        return f"requantize to {r['out_dtype']}"
    bounds = _activation_bounds(act, r["out_dtype"])
    if isinstance(bounds, str):
        return bounds
    if len(set(int(z) for z in r["output_zero_point"])) != 1:
        return "per-channel output zero points"
    per_channel = any(len(r[n]) > 1 for n in ("input_scale", "input_zero_point", "output_scale"))
    if per_channel and int(r["axis"]) % ndim != axis:
        return f"requantize along axis {r['axis']}, not the output channels"
    if bias is not None:
        if _dtype(bias) != "int32":
            return f"bias of dtype {_dtype(bias)}"
        return _channel_vector_reason(bias.checked_type.shape, ndim, axis)
    return None


# ck_qadd_params.rounding per qnn.add rounding
QADD_ROUNDINGS = {"float32": 0, "fixed_point": 1, "tflite": 2}


def _same_shape_q8(call) -> str | None:
    types = [a.checked_type for a in call.args] + [call.checked_type]
    if any(t.dtype == "int16" for t in types):
        return SIXTEEN_BY_EIGHT
    if any(t.dtype not in Q8 for t in types):
        return "not int8/uint8"
    if len({tuple(t.shape) for t in types}) != 1:
        return "operands of different shapes (no broadcasting in the int8 kernel)"
    if call.attrs.get("rounding", "float32") not in QADD_ROUNDINGS:
        return f"rounding {call.attrs['rounding']!r} (the kernel rounds the float32, fixed_point or tflite way)"
    if call.attrs.get("rounding", "float32") == "fixed_point":
        (ma, mb), shift = add_multipliers(call.attrs)
        if not 1 <= shift <= 62:
            return "rescale shift out of range"
    return None


def _q8_in(call) -> str | None:
    return None if _dtype(call.args[0]) in Q8 else f"input {_dtype(call.args[0])} is not int8/uint8"


def _q8_out(call) -> str | None:
    if _dtype(call.args[0]) != "float32" or call.attrs["out_dtype"] not in Q8:
        return "float32 -> int8/uint8 only"
    if call.attrs.get("rounding", "half_even") != "half_even":
        return f"rounding {call.attrs['rounding']!r} (the kernel rounds half to even)"
    return None


def _with_q8(float_predicate, q8_predicate=None):
    """float32 calls: the target's float predicate; int8/uint8 ones: q8_predicate (or accepted)."""
    def predicate(call):
        if all(_dtype(e) in Q8 for e in (*call.args, call)):
            return q8_predicate(call) if q8_predicate else None
        return float_predicate(call) if float_predicate else None
    return predicate


def _qdq_add_parts(root):
    """(quantize, relu or None, add, lhs dequantize, rhs dequantize) of a matched QDQ add."""
    relu = root.args[0] if getattr(root.args[0].op, "name", "") == "nn.relu" else None
    add = (relu or root).args[0]
    return root, relu, add, add.args[0], add.args[1]


def _qdq_add_reason(root) -> str | None:
    q, _, add, dq_a, dq_b = _qdq_add_parts(root)
    shapes = {tuple(e.checked_type.shape) for e in (dq_a.args[0], dq_b.args[0], q)}
    if len(shapes) != 1:
        return "operands of different shapes (no broadcasting in the fused int8 add)"
    if any(len(c.attrs["scale"]) != 1 or len(c.attrs["zero_point"]) != 1 for c in (q, dq_a, dq_b)):
        return "per-channel scales (the fused int8 add takes one scale per tensor)"
    if q.attrs.get("rounding", "half_even") != "half_even" or q.attrs["out_dtype"] not in Q8:
        return "the quantize is not half-to-even into int8/uint8"
    if any(_dtype(d.args[0]) not in Q8 for d in (dq_a, dq_b)) or _dtype(add) != "float32":
        return "not int8/uint8 operands added in float32"
    return None


def declare(target) -> None:
    """Add the int8 ops and chains to ccompiler's table (after the float declarations)."""
    def chain(producer, with_bias):
        core = is_op(producer)(wildcard(), is_constant())
        if with_bias:
            core = is_op("add")(core, is_constant())
        return is_op("qnn.requantize")(core)

    for name, producer, bias, act in CHAINS:
        pattern = chain(producer, bias)
        target.pattern(name, is_op(act)(pattern) if act else pattern, check=_chain_reason)
    dq_add = is_op("add")(is_op("qnn.dequantize")(wildcard()), is_op("qnn.dequantize")(wildcard()))
    for name, relu in QDQ_ADDS.items():
        target.pattern(name, is_op("qnn.quantize")(is_op("nn.relu")(dq_add) if relu else dq_add), check=_qdq_add_reason)
    target.supports("qnn.add", predicate=_same_shape_q8)
    target.supports("qnn.quantize", predicate=_q8_out)
    target.supports("qnn.dequantize", predicate=_q8_in)
    for op in ("nn.max_pool2d", "reshape", "nn.batch_flatten", "nn.relu"):
        target.supports(op, predicate=_with_q8(target.ops.get(op)))
    target.supports("clip", predicate=_with_q8(target.ops.get("clip"), _clip_reason))


def _clip_reason(call) -> str | None:
    bounds = _activation_bounds(call, _dtype(call))
    return bounds if isinstance(bounds, str) else None


# ---- lowering a chain composite into one step ------------------------------------------------------

def lower_qdq_add(lowering, call, name: str, func, args) -> list:
    """A QDQ add composite as one qdq_add step (ck_qdq_add) of `lowering`."""
    by_param = {id(p): a for p, a in zip(func.params, args)}
    q, relu, _, dq_a, dq_b = _qdq_add_parts(func.body)
    ins = [by_param[id(d.args[0])][0] for d in (dq_a, dq_b)]
    attrs = {"scales": [float(c.attrs["scale"][0]) for c in (dq_a, dq_b, q)],
             "zero_points": [int(c.attrs["zero_point"][0]) for c in (dq_a, dq_b, q)], "relu": relu is not None}
    out_type = call.checked_type
    title = f"{name} [qnn.dequantize x2 + add{' + nn.relu' if relu is not None else ''} + qnn.quantize]"
    return lowering.op("qdq_add", attrs, ins, [TensorType(tuple(out_type.shape), out_type.dtype)], title)


def lower_composite(lowering, call, name: str, func, args) -> list:
    """The chain of composite `name` as one qnn_conv2d / qnn_dense / qdq_add step of `lowering`."""
    if COMPOSITES[name] == "qdq_add":
        return lower_qdq_add(lowering, call, name, func, args)
    by_param = {id(p): a for p, a in zip(func.params, args)}
    producer, bias, rq, act = _chain(func.body)
    data = by_param[id(producer.args[0])][0]
    weight = by_param[id(producer.args[1])][0]
    bias_value = by_param[id(bias)][0] if bias is not None else None
    if weight.buffer.kind != "const" or (bias_value is not None and bias_value.buffer.kind != "const"):
        raise ByocError(f"{name}: weight and bias must be constants")
    w = np.asarray(weight.buffer.data).astype(np.int8)      # uint8 weights are <= 127 (_chain_reason)
    a, r = dict(producer.attrs), dict(rq.attrs)
    out_type = call.checked_type
    units = int(w.shape[0])
    out_min, out_max = _activation_bounds(act, out_type.dtype)
    q = qkernels.qparams(data.type.dtype, out_type.dtype, a["input_zero_point"], r["output_zero_point"][0], out_min,
                         out_max, r["rounding"])
    if producer.op.name == "qnn.conv2d":
        conv = kernels.conv2d_params(data.type.shape, w.shape, a["strides"], a["padding"], a["dilation"], a["groups"])
        depthwise = qkernels.is_depthwise(conv)
        groups = conv["groups"]
        columns = qkernels.im2col_columns(workspace_budget())
        winograd = not depthwise and qkernels.winograd(conv, columns, w)
        pairs, order = qkernels.pairs_plan(conv, columns, winograd, w)
        channels_last = not depthwise and qkernels.channels_last(conv, q["rounding"], columns, winograd, pairs)
        attrs = {"conv": conv, "q": q, "im2col_columns": columns, "winograd": winograd, "pairs": pairs,
                 "channel_order": None if order is None else tuple(int(c) for c in order),
                 "channels_last": channels_last}
    else:
        depthwise, groups = False, 1
        attrs = {"batch": data.type.size // int(data.type.shape[-1]), "units": units, "depth": int(w.shape[1]),
                 "q": q, "direct_rows": qkernels.dense_direct_rows(workspace_budget())}
    # the GEMM sums uint8 (int8 inputs offset by 128); the depthwise kernel sums the raw values
    offset = 128 if data.type.dtype == "int8" and not depthwise else 0
    folded = qkernels.fold_bias(w, None if bias_value is None else np.asarray(bias_value.buffer.data),
                                int(a["input_zero_point"]) + offset,
                                np.broadcast_to(np.asarray(r["input_zero_point"], np.int64), (units,)))
    shape = "x".join(str(d) for d in w.shape)
    packed = _packed_weight(lowering, producer.op.name, attrs, weight, w, groups, depthwise)
    ins = [data, packed,
           lowering.derived_constant(folded, f"bias of the {shape} weight, input zero point folded in"),
           lowering.derived_constant(qkernels.requantize_constants(rq.attrs, units, requantize_ratios,
                                                                   tflite_requantize_multipliers),
                                     "requantize factors per output channel")]
    out_types = [TensorType(tuple(out_type.shape), out_type.dtype)]
    title = (f"{name} [{producer.op.name}{' + add' if bias is not None else ''} + qnn.requantize"
             f"{' + ' + act.op.name if act is not None else ''}]")
    return lowering.op(COMPOSITES[name], attrs, ins, out_types, title)


def _packed_weight(lowering, op_name: str, attrs: dict, weight, w: np.ndarray, groups: int, depthwise: bool):
    """The weight argument of the kernel call `attrs` describe: the int8 weight as is (depthwise) or packed."""
    shape = "x".join(str(d) for d in w.shape)
    if depthwise and weight.type.dtype == "int8":
        return weight
    if depthwise:
        return lowering.derived_constant(w, f"{op_name} weight {shape} as int8")
    if attrs.get("winograd"):
        return lowering.derived_constant(qkernels.winograd_pack_weight(w),
                                         f"{op_name} weight {shape} as Winograd F(2x2, 3x3) int16")
    if attrs.get("channels_last"):
        return lowering.derived_constant(qkernels.channels_last_pack_weight(w),
                                         f"{op_name} weight {shape} in 64-channel blocks for the channels-last conv")
    if attrs.get("pairs"):
        order = attrs.get("channel_order")
        return lowering.derived_constant(
            qkernels.pack_weight_pairs(groups, w, None if order is None else np.asarray(order, np.int32)),
            f"{op_name} weight {shape} pair-safe{', input channels reordered' if order else ''}, with its corrections")
    return lowering.derived_constant(qkernels.pack_weight(groups, w), f"{op_name} weight {shape} packed for ck_q kernels")


# ---- rules ---------------------------------------------------------------------------------------

def _scale_arg(scale) -> str:
    """The `scale` argument: TFLite's int32 pairs go through the kernels' const float * (ck_qparams.rounding)."""
    return scale.ptr if scale.type.dtype == "float32" else f"(const float *)(const void *){scale.ptr}"


def _qconv2d_init(attrs) -> tuple[list[str], str]:
    """(declarations, the ck_qconv2d_params initializer): the input channels' order, if any, is an array beside it."""
    order = attrs.get("channel_order")
    decls = [line_array("channel_order", "int32", order)] if order else []
    return decls, qkernels.qconv2d_initializer(kernels.CONV2D_PARAM_FIELDS, attrs["conv"], attrs["q"],
                                               attrs["im2col_columns"], attrs.get("winograd", False),
                                               attrs.get("pairs", False), "channel_order" if order else None,
                                               attrs.get("channels_last", False))


def _weight_arg(weight) -> str:
    """The `weight` argument: a Winograd weight's int16 values go through the kernels' const int8_t *."""
    return weight.ptr if weight.type.dtype == "int8" else f"(const int8_t *)(const void *){weight.ptr}"


def _qconv2d_scratch(step) -> int:
    a = step.attrs
    return qkernels.qconv2d_workspace_bytes(a["conv"], a["im2col_columns"], a.get("winograd", False),
                                            a.get("channels_last", False))


def _qconv2d(step):
    decls, init = _qconv2d_init(step.attrs)
    data, weight, bias, scale = step.ins
    return (decls + [f"static const ck_qconv2d_params params = {init};"],
            f"ck_qconv2d(&params, {data.ptr}, {_weight_arg(weight)}, {bias.ptr}, {_scale_arg(scale)}, "
            f"{step.outs[0].ptr}, {step.scratch_ptr})")


def _qdense(step):
    a = step.attrs
    init = qkernels.qdense_initializer(a["batch"], a["units"], a["depth"], a["q"], a["direct_rows"])
    data, weight, bias, scale = step.ins
    return ([f"static const ck_qdense_params params = {init};"],
            f"ck_qdense(&params, {data.ptr}, {weight.ptr}, {bias.ptr}, {_scale_arg(scale)}, {step.outs[0].ptr}, "
            f"{step.scratch_ptr})")


def _split(shape, axis: int, n: int) -> tuple[int, int, int]:
    """(outer, channels, inner) around `axis` for per-channel values, (1, 1, size) per tensor."""
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if n == 1:
        return 1, 1, size
    axis %= len(shape)
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    return outer, int(shape[axis]), int(np.prod(shape[axis + 1:], dtype=np.int64))


def _scale_decls(scales, zero_points, n: int) -> list[str]:
    s = np.broadcast_to(np.asarray(scales, np.float32), (n,))
    z = np.broadcast_to(np.asarray(zero_points, np.int64), (n,))
    return [line_array("scale", "float32", s), line_array("zero_point", "int32", z)]


def _per_channel(step, signed_tensor):
    """The scale/zero-point arrays and (outer, channels, inner, signed) of a quantize or dequantize step;
    `signed_tensor` is its int8/uint8 side."""
    a = step.attrs
    n = max(len(a["scale"]), len(a["zero_point"]))
    outer, channels, inner = _split(step.ins[0].type.shape, int(a["axis"]), n)
    signed = int(signed_tensor.type.dtype == "int8")
    sizes = (int_literal(outer), channels, int_literal(inner), signed)
    return _scale_decls(a["scale"], a["zero_point"], channels), sizes


def _quantize(step):
    decls, (outer, channels, inner, signed) = _per_channel(step, step.outs[0])
    return (decls, f"ck_quantize({outer}, {channels}, {inner}, {step.ins[0].ptr}, scale, "
                   f"zero_point, {signed}, {step.outs[0].ptr})")


def _dequantize(step):
    decls, (outer, channels, inner, signed) = _per_channel(step, step.ins[0])
    return (decls, f"ck_dequantize({outer}, {channels}, {inner}, {step.ins[0].ptr}, {signed}, "
                   f"scale, zero_point, {step.outs[0].ptr})")


def _qadd_initializer(attrs: dict, lhs_dtype: str, out_dtype: str) -> str:
    """ck_qadd_params of a qnn.add with these attributes, lhs and output types."""
    a = attrs
    ra, rb, fixed = add_float32_params(SimpleNamespace(**a))
    (ma, mb), shift = add_multipliers(SimpleNamespace(**a))
    rounding = a.get("rounding", "float32")
    return (f"{{.is_signed = {int(out_dtype == 'int8')}, "
            f".rounding = {QADD_ROUNDINGS[rounding]}, {_tflite_add_fields(SimpleNamespace(**a), rounding, lhs_dtype)}"
            f".ratio_a = {float_literal(ra)}, .ratio_b = {float_literal(rb)}, .fixed = {float_literal(fixed)}, "
            f".lhs_zero_point = {int(a['lhs_zero_point'])}, .rhs_zero_point = {int(a['rhs_zero_point'])}, "
            f".output_zero_point = {int(a['output_zero_point'])}, .mult_a = {int_literal(ma)}, "
            f".mult_b = {int_literal(mb)}, .shift = {int(shift)}}}")


def _qadd(step):
    init = _qadd_initializer(step.attrs, step.ins[0].type.dtype, step.outs[0].type.dtype)
    lhs, rhs = step.ins
    return ([f"static const ck_qadd_params params = {init};"],
            f"ck_qadd(&params, {int_literal(step.outs[0].type.size)}, {lhs.ptr}, {rhs.ptr}, {step.outs[0].ptr})")


def _qconv2d_add(step):
    """qnn_conv2d with the residual qnn.add after it (fuse_qresidual.py): ins data, weight, bias, scale, residual."""
    a = step.attrs
    decls, init = _qconv2d_init(a)
    add = _qadd_initializer(a["add"], a["lhs_dtype"], step.outs[0].type.dtype)
    data, weight, bias, scale, residual = step.ins
    return (decls + [f"static const ck_qconv2d_params params = {init};", f"static const ck_qadd_params add = {add};"],
            f"ck_qconv2d_add(&params, &add, {int(a['conv_is_rhs'])}, {data.ptr}, {_weight_arg(weight)}, {bias.ptr}, "
            f"{_scale_arg(scale)}, {residual.ptr}, {step.outs[0].ptr}, {step.scratch_ptr})")


def _tflite_add_fields(attrs, rounding: str, lhs_dtype: str) -> str:
    """ck_qadd_params' TFLite fields (zeros unless rounding is "tflite"), from the reference's own function."""
    if rounding != "tflite":
        return ""
    t = tflite_add_params(attrs, lhs_dtype)
    return (f".left_shift = {t['left_shift']}, .tfl_mult = {{{t['m1']}, {t['m2']}, {t['mo']}}}, "
            f".tfl_exp = {{{t['e1']}, {t['e2']}, {t['eo']}}}, ")


def _qdq_add(step):
    a = step.attrs
    sa, sb, so = (float_literal(np.float32(v)) for v in a["scales"])
    za, zb, zo = a["zero_points"]
    lhs, rhs = step.ins
    init = (f"{{.lhs_signed = {int(lhs.type.dtype == 'int8')}, .rhs_signed = {int(rhs.type.dtype == 'int8')}, "
            f".out_signed = {int(step.outs[0].type.dtype == 'int8')}, .relu = {int(a['relu'])}, "
            f".lhs_scale = {sa}, .rhs_scale = {sb}, .out_scale = {so}, .lhs_zero_point = {za}, "
            f".rhs_zero_point = {zb}, .out_zero_point = {zo}}}")
    return ([f"static const ck_qdq_add_params params = {init};"],
            f"ck_qdq_add(&params, {int_literal(step.outs[0].type.size)}, {lhs.ptr}, {rhs.ptr}, {step.outs[0].ptr})")


def _qmax_pool2d(step):
    a = step.attrs
    values = kernels.pool2d_params(step.ins[0].type.shape, a["pool_size"], a["strides"], a["padding"],
                                   a["dilation"], a["ceil_mode"], False)
    init = kernels.c_struct_initializer(kernels.POOL2D_PARAM_FIELDS, values)
    signed = int(step.ins[0].type.dtype == "int8")
    return ([f"static const ck_pool2d_params params = {init};"],
            f"ck_qmax_pool2d(&params, {signed}, {step.ins[0].ptr}, {step.outs[0].ptr})")


def _qclamp(step):
    """nn.relu / clip on int8 or uint8: ck_qclamp with the reference's integer bounds."""
    lo, hi = TYPE_RANGE[step.outs[0].type.dtype]
    if step.op == "nn.relu":
        lo = max(lo, 0)
    else:
        lo, hi = int(np.trunc(step.attrs["a_min"])), int(np.trunc(step.attrs["a_max"]))
    return [], (f"ck_qclamp({int_literal(step.outs[0].type.size)}, {int(step.outs[0].type.dtype == 'int8')}, "
                f"{step.ins[0].ptr}, {step.outs[0].ptr}, {lo}, {hi})")


def _qcopy(step):
    signed = step.outs[0].type.dtype == "int8"
    lo, hi = qkernels.TYPE_RANGE[step.outs[0].type.dtype]
    return [], (f"ck_qclamp({int_literal(step.outs[0].type.size)}, {int(signed)}, {step.ins[0].ptr}, "
                f"{step.outs[0].ptr}, {lo}, {hi})")


def rules(float_rules: dict) -> dict:
    """RULES entries of the int8 side; ops that exist in float too dispatch on the dtype."""
    def by_dtype(op, q_emit):
        base = float_rules[op]

        def emit(step):
            return (q_emit if step.outs[0].type.dtype in Q8 else base.emit)(step)
        return Rule(emit, base.scratch, base.scratch_query, base.inplace)

    return {
        "qnn_conv2d": Rule(_qconv2d, _qconv2d_scratch, lambda step: "ck_qconv2d_workspace_bytes(&params)"),
        "qnn_dense": Rule(_qdense,
                          lambda step: qkernels.qdense_workspace_bytes(step.attrs["depth"], step.attrs["batch"],
                                                                       step.attrs["direct_rows"]),
                          lambda step: "ck_qdense_workspace_bytes(&params)"),
        "qnn.quantize": Rule(_quantize),
        "qnn.dequantize": Rule(_dequantize),
        "qnn.add": Rule(_qadd),
        # not an op: qnn_conv2d with the residual qnn.add after it (fuse_qresidual.py)
        "qnn_conv2d_add": Rule(_qconv2d_add, _qconv2d_scratch, lambda step: "ck_qconv2d_workspace_bytes(&params)"),
        "qdq_add": Rule(_qdq_add, inplace=(0, 1)),
        "nn.max_pool2d": by_dtype("nn.max_pool2d", _qmax_pool2d),
        "copy": by_dtype("copy", _qcopy),
        "nn.relu": by_dtype("nn.relu", _qclamp),
        "clip": by_dtype("clip", _qclamp),
    }
