"""Neural-network ONNX ops: Conv and pools (2-D; 1-D run as 2-D; 3-D pools as two 2-D pools), BatchNormalization,
Softmax, LRN, Dropout."""
from __future__ import annotations

import math

import numpy as np

from .context import Context, Node, NodeError
from .table import converter

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def _check_auto_pad(attrs) -> list[str]:
    mode = attrs.get("auto_pad", "NOTSET")
    return [] if mode in _AUTO_PADS else [f"auto_pad {mode!r} is not one of {', '.join(_AUTO_PADS)}"]


def _spatial_rank(ctx: Context, x, what: str, ranks: str = "1-D and 2-D") -> int:
    """1 or 2: how many spatial axes the (N, C, [H,] W) input has (3-D convs and pools are handled before)."""
    shape = ctx.shape(x)
    if len(shape) not in (3, 4):
        raise NodeError(f"only {ranks} {what} on (N, C, [D,] [H,] W) tensors is supported; "
                        f"the input has shape {shape}")
    return len(shape) - 2


# A 1-D op runs as the 2-D op with a height of 1: inputs get an H axis, attributes a leading entry.

def _lift(values, rank: int, fill: int) -> tuple[int, int]:
    return tuple(int(v) for v in values) if rank == 2 else (fill, int(values[0]))


def _lift_tensor(ctx: Context, x, rank: int):
    return x if rank == 2 else ctx.call("expand_dims", x, axis=2)


def _lower_tensor(ctx: Context, y, rank: int):
    return y if rank == 2 else ctx.call("squeeze", y, axis=(2,))


def _ints_attr(node: Node, name: str, rank: int, default: int) -> tuple[int, int]:
    value = node.attr(name)
    if value is None:
        return (default, default)
    if len(value) != rank:
        raise NodeError(f"attribute {name} has {len(value)} values; a {rank}-D op needs {rank}")
    return _lift(value, rank, 1)


def padding(node: Node, rank: int, sizes, kernel, strides, dilations) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of the lifted 2-D op, from `pads` or `auto_pad`.

    ONNX pads are [x1_begin, x2_begin, x1_end, x2_end], which is Relay's order in 2-D. SAME_* pads
    so that out = ceil(in / stride); an odd total goes to the end (UPPER) or the beginning (LOWER).
    """
    mode = node.attr("auto_pad", "NOTSET")
    if mode == "VALID":
        return (0, 0, 0, 0)
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for size, k, s, d in zip(sizes, kernel, strides, dilations):
            out = -(-size // s)
            total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
            small, large = total // 2, total - total // 2
            begins.append(small if mode == "SAME_UPPER" else large)
            ends.append(large if mode == "SAME_UPPER" else small)
        return (begins[0], begins[1], ends[0], ends[1])
    pads = node.attr("pads")
    if pads is None:
        return (0, 0, 0, 0)
    if len(pads) != 2 * rank:
        raise NodeError(f"attribute pads has {len(pads)} values; a {rank}-D op needs {2 * rank}")
    if any(p < 0 for p in pads):
        raise NodeError(f"negative pads {list(pads)} are not supported")
    return _lift(pads[:rank], rank, 0) + _lift(pads[rank:], rank, 0)


# ---- Conv -----------------------------------------------------------------------------------------

@converter("Conv", (1, 11, 22), check=_check_auto_pad)
def _conv(node: Node, ctx: Context):
    x, w, bias = node.required(0, "X"), node.required(1, "W"), node.input(2)
    if len(ctx.shape(x)) == 5:
        return _conv3d(node, ctx, x, w, bias)
    rank = _spatial_rank(ctx, x, "convolution", "1-D, 2-D and 3-D")
    wshape = ctx.shape(w)
    if len(wshape) != rank + 2:
        raise NodeError(f"the weight W must be {rank + 2}-D (O, I/group, kernel...), got shape {wshape}")
    declared = node.attr("kernel_shape")
    if declared is not None and tuple(declared) != wshape[2:]:
        raise NodeError(f"kernel_shape {list(declared)} does not match the weight shape {wshape}")
    x, w = _lift_tensor(ctx, x, rank), _lift_tensor(ctx, w, rank)
    kernel = ctx.shape(w)[2:]
    strides, dilations = _ints_attr(node, "strides", rank, 1), _ints_attr(node, "dilations", rank, 1)
    pads = padding(node, rank, ctx.shape(x)[2:], kernel, strides, dilations)
    out = ctx.call("nn.conv2d", x, w, strides=strides, padding=pads, dilation=dilations,
                   groups=int(node.attr("group", 1)), channels=wshape[0], kernel_size=kernel)
    if bias is not None:
        out = ctx.call("nn.bias_add", out, bias, axis=1)
    return [_lower_tensor(ctx, out, rank)]


def _conv3d(node: Node, ctx: Context, x, w, bias):
    """A 3-D convolution as 2-D ones: output depth slice od is the sum over the kernel's depth taps kd
    of conv2d(input depth slice od * stride - pad + kd * dilation, weight slice kd); taps that land in
    the padding add nothing. Correct, not fast: one conv2d per (output slice, tap)."""
    n, c, d, h, wd = ctx.shape(x)
    wshape = ctx.shape(w)
    if len(wshape) != 5:
        raise NodeError(f"the weight W must be 5-D (O, I/group, kD, kH, kW), got shape {wshape}")
    kernel = wshape[2:]
    strides = [int(v) for v in node.attr("strides") or [1, 1, 1]]
    dilations = [int(v) for v in node.attr("dilations") or [1, 1, 1]]
    begins, ends = _pads_nd(node, (d, h, wd), kernel, strides, dilations)
    out_d = (d + begins[0] + ends[0] - dilations[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    if out_d < 1:
        raise NodeError(f"the kernel depth {kernel[0]} does not fit the padded input depth")
    taps = [ctx.call("squeeze", ctx.call("take", w, ctx.const(np.array([k], np.int32)), axis=2, mode="clip"),
                     axis=(2,)) for k in range(kernel[0])]
    slices = {}
    outs = []
    for od in range(out_d):
        total = None
        for k in range(kernel[0]):
            z = od * strides[0] - begins[0] + k * dilations[0]
            if not 0 <= z < d:
                continue
            if z not in slices:
                slices[z] = ctx.call("squeeze", ctx.call("take", x, ctx.const(np.array([z], np.int32)), axis=2,
                                                         mode="clip"), axis=(2,))
            part = ctx.call("nn.conv2d", slices[z], taps[k], strides=tuple(strides[1:]),
                            padding=(begins[1], begins[2], ends[1], ends[2]), dilation=tuple(dilations[1:]),
                            groups=int(node.attr("group", 1)), channels=wshape[0], kernel_size=tuple(kernel[1:]))
            total = part if total is None else ctx.call("add", total, part)
        if total is None:       # every tap lands in the padding: a slice of zeros
            plane = [(size + b + e - dil * (k - 1) - 1) // st + 1
                     for size, b, e, dil, k, st in zip((h, wd), begins[1:], ends[1:], dilations[1:], kernel[1:],
                                                      strides[1:])]
            outs.append(ctx.const(np.zeros((n, wshape[0], 1, *plane), np.float32)))
        else:
            outs.append(ctx.call("expand_dims", total, axis=2))
    out = outs[0] if len(outs) == 1 else ctx.call("concatenate", outs, axis=2)
    if bias is not None:
        out = ctx.call("nn.bias_add", out, bias, axis=1)
    return [out]


# ---- pools ----------------------------------------------------------------------------------------

def _pads_nd(node: Node, sizes, kernel, strides, dilations) -> tuple[list[int], list[int]]:
    """(begins, ends) of an N-D op's padding, from `pads` or `auto_pad` (as `padding` does for 2-D)."""
    rank = len(sizes)
    mode = node.attr("auto_pad", "NOTSET")
    if mode == "VALID":
        return [0] * rank, [0] * rank
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        begins, ends = [], []
        for size, k, s, d in zip(sizes, kernel, strides, dilations):
            total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
            small, large = total // 2, total - total // 2
            begins.append(small if mode == "SAME_UPPER" else large)
            ends.append(large if mode == "SAME_UPPER" else small)
        return begins, ends
    pads = [int(p) for p in node.attr("pads") or [0] * (2 * rank)]
    if len(pads) != 2 * rank or any(p < 0 for p in pads):
        raise NodeError(f"attribute pads {pads} must hold {2 * rank} non-negative values")
    return pads[:rank], pads[rank:]


def _pool3d(node: Node, ctx: Context, ir_op: str, x, **extra):
    """A 3-D pool as two 2-D pools: over (H, W) for every depth slice, then over D. A box window
    is separable for max and for average (its element count is the product of the axes' counts)."""
    n, c, d, h, w = ctx.shape(x)
    kernel = [int(k) for k in node.attr("kernel_shape") or []]
    if len(kernel) != 3:
        raise NodeError(f"kernel_shape must have 3 values, got {kernel}")
    strides = [int(v) for v in node.attr("strides") or [1, 1, 1]]
    dilations = [int(v) for v in node.attr("dilations") or [1, 1, 1]]
    begins, ends = _pads_nd(node, (d, h, w), kernel, strides, dilations)
    ceil = bool(node.attr("ceil_mode", 0))
    planes = ctx.call(ir_op, ctx.call("reshape", x, newshape=(n, c * d, h, w)), pool_size=tuple(kernel[1:]),
                      strides=tuple(strides[1:]), dilation=tuple(dilations[1:]),
                      padding=(begins[1], begins[2], ends[1], ends[2]), ceil_mode=ceil, **extra)
    oh, ow = ctx.shape(planes)[2:]
    depth = ctx.call(ir_op, ctx.call("reshape", planes, newshape=(n, c, d, oh * ow)), pool_size=(kernel[0], 1),
                     strides=(strides[0], 1), dilation=(dilations[0], 1), padding=(begins[0], 0, ends[0], 0),
                     ceil_mode=ceil, **extra)
    return [ctx.call("reshape", depth, newshape=(n, c, ctx.shape(depth)[2], oh, ow))]


def _pool(node: Node, ctx: Context, ir_op: str, **extra):
    x = node.required(0, "X")
    if len(ctx.shape(x)) == 5:
        return _pool3d(node, ctx, ir_op, x, **extra)
    rank = _spatial_rank(ctx, x, "pooling", "1-D, 2-D and 3-D")
    kernel = node.attr("kernel_shape")
    if kernel is None or len(kernel) != rank:
        raise NodeError(f"kernel_shape must have {rank} values, got {kernel}")
    x, kernel = _lift_tensor(ctx, x, rank), _lift(kernel, rank, 1)
    strides, dilations = _ints_attr(node, "strides", rank, 1), _ints_attr(node, "dilations", rank, 1)
    pads = padding(node, rank, ctx.shape(x)[2:], kernel, strides, dilations)
    out = ctx.call(ir_op, x, pool_size=kernel, strides=strides, dilation=dilations, padding=pads,
                   ceil_mode=bool(node.attr("ceil_mode", 0)), **extra)
    return [_lower_tensor(ctx, out, rank)]


# Definition 1 has neither dilations nor ceil_mode (absent attributes take the defaults); 8 adds
# storage_order and the Indices output, which only matters when the Indices are used (outputs=1).
@converter("MaxPool", (1, 8, 10, 11, 12, 22), check=_check_auto_pad)
def _max_pool(node: Node, ctx: Context):
    return _pool(node, ctx, "nn.max_pool2d")


@converter("AveragePool", (7, 10, 11, 19, 22), check=_check_auto_pad)
def _avg_pool(node: Node, ctx: Context):
    return _pool(node, ctx, "nn.avg_pool2d", count_include_pad=bool(node.attr("count_include_pad", 0)))


@converter("GlobalAveragePool", (1, 22))
def _global_avg_pool(node: Node, ctx: Context):
    x = node.required(0, "X")
    rank = _spatial_rank(ctx, x, "global pooling")
    return [_lower_tensor(ctx, ctx.call("nn.global_avg_pool2d", _lift_tensor(ctx, x, rank)), rank)]


# ---- BatchNormalization ---------------------------------------------------------------------------

def _check_batch_norm(attrs) -> list[str]:
    problems = []
    if attrs.get("spatial", 1) != 1:
        problems.append("spatial=0 (per-element statistics) is not supported")
    return problems


# 7 has `spatial`, 9 drops it, 14 adds training_mode (and its extra outputs), 15 more types.
@converter("BatchNormalization", (7, 9, 14, 15), check=_check_batch_norm, outputs=3)
def _batch_norm(node: Node, ctx: Context):
    args = [node.required(i, what) for i, what in enumerate(("X", "scale", "B", "mean", "var"))]
    eps = float(node.attr("epsilon", 1e-5))
    if node.since >= 14 and node.attr("training_mode", 0):
        return _batch_norm_training(node, ctx, *args, eps)
    if any(name for name in node.output_names[1:]):
        raise NodeError("the running mean and variance outputs exist only with training_mode=1")
    out = ctx.call("nn.batch_norm", *args, axis=1, epsilon=eps)
    return [ctx.item(out, 0)]


def _batch_norm_training(node: Node, ctx: Context, x, scale, bias, mean, var, eps: float):
    """training_mode=1: normalize with the batch's own statistics (population variance); outputs 1 and 2
    are the running statistics updated with `momentum`."""
    shape = ctx.shape(x)
    axes = tuple(a for a in range(len(shape)) if a != 1)
    momentum = float(node.attr("momentum", 0.9))
    batch_mean = ctx.call("mean", x, axis=axes, keepdims=True)
    centered = ctx.call("subtract", x, batch_mean)
    batch_var = ctx.call("mean", ctx.call("multiply", centered, centered), axis=axes, keepdims=True)
    channel = (1, shape[1]) + (1,) * (len(shape) - 2)
    inv = ctx.call("divide", ctx.const(1.0, "float32"),
                   ctx.call("sqrt", ctx.call("add", batch_var, ctx.const(eps, "float32"))))
    y = ctx.call("add", ctx.call("multiply", ctx.call("multiply", centered, inv),
                                 ctx.call("reshape", scale, newshape=channel)),
                 ctx.call("reshape", bias, newshape=channel))

    def running(old, current):
        flat = ctx.call("reshape", current, newshape=(shape[1],))
        return ctx.call("add", ctx.call("multiply", old, ctx.const(momentum, "float32")),
                        ctx.call("multiply", flat, ctx.const(1.0 - momentum, "float32")))
    return [y, running(mean, batch_mean), running(var, batch_var)]


# ---- Softmax --------------------------------------------------------------------------------------

@converter("Softmax", (1, 11))
def _softmax_coerced(node: Node, ctx: Context):
    """Up to definition 11, softmax treats the input as 2-D [prod(dims[:axis]), prod(dims[axis:])]."""
    x = node.required(0, "input")
    shape = ctx.shape(x)
    axis = _axis(node.attr("axis", 1), len(shape))
    if axis == len(shape) - 1:
        return [ctx.call("nn.softmax", x, axis=-1)]
    rows = math.prod(shape[:axis])
    flat = ctx.call("reshape", x, newshape=(rows, math.prod(shape[axis:])))
    return [ctx.call("reshape", ctx.call("nn.softmax", flat, axis=1), newshape=shape)]


@converter("Softmax", (13,))
def _softmax(node: Node, ctx: Context):
    x = node.required(0, "input")
    axis = _axis(node.attr("axis", -1), len(ctx.shape(x)))
    return [ctx.call("nn.softmax", x, axis=axis)]


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise NodeError(f"axis {axis} is out of range for a {ndim}-D input")
    return axis + ndim if axis < 0 else axis


# ---- LRN, Dropout ---------------------------------------------------------------------------------

@converter("LRN", (1, 13))
def _lrn(node: Node, ctx: Context):
    size = node.attr("size")
    if size is None:
        raise NodeError("attribute size is required")
    return [ctx.call("nn.lrn", node.required(0, "X"), size=int(size), axis=1,
                     bias=float(node.attr("bias", 1.0)), alpha=float(node.attr("alpha", 1e-4)),
                     beta=float(node.attr("beta", 0.75)))]


# Dropout is the identity at inference, and its mask (output 1) all true. 7/10 take `ratio` as an
# attribute; 12+ take ratio and training_mode as optional inputs (training with ratio 0 is the identity too).
def _dropout(node: Node, ctx: Context, x):
    return [x, ctx.const(np.ones(ctx.shape(x), bool))]


@converter("Dropout", (7, 10), outputs=2)
def _dropout_attrs(node: Node, ctx: Context):
    return _dropout(node, ctx, node.required(0, "data"))


@converter("Dropout", (12, 13, 22), outputs=2)
def _dropout_inputs(node: Node, ctx: Context):
    training = ctx.constant_input(node, 2, "training_mode")
    ratio = ctx.constant_input(node, 1, "ratio")
    if training is not None and bool(training.ravel()[0]) and not (ratio is not None and float(ratio.ravel()[0]) == 0):
        raise NodeError("training_mode=true with a non-zero ratio is not supported (inference only)")
    return _dropout(node, ctx, node.required(0, "data"))
