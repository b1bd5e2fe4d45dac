"""How each op (and each composite) of a ccompiler region becomes one call of the kernel library.

One table, RULES: op name -> Rule. A rule sees a planned `Step` (its input and output tensors with
their types and C pointers, the op's attrs) and answers two questions:
  scratch(step) -> bytes of kernel scratch it needs (from the size mirrors in kernels.py, so the
                   codegen can plan it in the region's static workspace), and
  emit(step)    -> (declarations, call): C declarations of the call's static parameters (shape
                   arrays, parameter structs) and the kernel call expression, which returns 0 on
                   success.
Ops that move no data (reshape, the mean/var outputs of batch_norm) have no rule: the codegen
treats them as views of their input.
"""
from __future__ import annotations

from typing import Callable

from byoc_compiler.vendor import ByocError, float_literal, int64_array, int_literal, line_array

from . import kernels
from .rule import Rule


def _axis(axis: int, ndim: int, what: str) -> int:
    axis = int(axis)
    if not -ndim <= axis < max(ndim, 1):
        raise ByocError(f"{what}: axis {axis} is out of range for rank {ndim}")
    return axis % ndim if ndim else 0


def _check_rank(step, what: str) -> None:
    for t in (*step.ins, *step.outs):
        if t.type.ndim > kernels.MAX_RANK:
            raise ByocError(f"{what}: rank {t.type.ndim} is above the kernel library's limit of "
                            f"{kernels.MAX_RANK} (CK_MAX_RANK); keep this op on the host")


def _shape_arg(step, name: str, shape, decls: list[str], known: dict) -> str:
    """A `static const int64_t` array for a shape (one per distinct shape), or NULL for rank 0."""
    if not shape:
        return "NULL"
    if tuple(shape) not in known:
        known[tuple(shape)] = name
        decls.append(int64_array(name, shape))
    return known[tuple(shape)]


# ---- elementwise -------------------------------------------------------------------------------

def _binary(step):
    _check_rank(step, step.op)
    lhs, rhs = step.ins
    out = step.outs[0]
    decls: list[str] = []
    known: dict = {}
    same = lhs.type.shape == rhs.type.shape == out.type.shape
    ls = _shape_arg(step, "shape" if same else "lhs_shape", lhs.type.shape, decls, known)
    rs = _shape_arg(step, "rhs_shape", rhs.type.shape, decls, known)
    os_ = _shape_arg(step, "out_shape", out.type.shape, decls, known)
    call = (f"ck_binary({kernels.BINARY_OPS[step.op]}, {lhs.ptr}, {lhs.type.ndim}, {ls}, "
            f"{rhs.ptr}, {rhs.type.ndim}, {rs}, {out.ptr}, {out.type.ndim}, {os_})")
    return decls, call


def _unary(step):
    p0, p1 = 0.0, 0.0
    if step.op == "clip":
        p0, p1 = step.attrs["a_min"], step.attrs["a_max"]
    elif step.op == "nn.leaky_relu":
        p0 = step.attrs["alpha"]
    (x,), (out,) = step.ins, step.outs
    return [], (f"ck_unary({kernels.UNARY_OPS[step.op]}, {int_literal(out.type.size)}, {x.ptr}, {out.ptr}, "
                f"{float_literal(p0)}, {float_literal(p1)})")


def _channel_split(shape, axis: int) -> tuple[int, int, int]:
    """(outer, channels, inner) of a tensor viewed around `axis`."""
    return kernels.element_count(shape[:axis]), int(shape[axis]), kernels.element_count(shape[axis + 1:])


def _bias_add(step):
    data, bias = step.ins
    axis = _axis(step.attrs["axis"], data.type.ndim, "nn.bias_add")
    outer, channels, inner = _channel_split(data.type.shape, axis)
    return [], (f"ck_bias_add({int_literal(outer)}, {int_literal(channels)}, {int_literal(inner)}, {data.ptr}, "
                f"{bias.ptr}, {step.outs[0].ptr})")


def _batch_norm(step):
    data, gamma, beta, mean, var = step.ins
    axis = _axis(step.attrs["axis"], data.type.ndim, "nn.batch_norm")
    outer, channels, inner = _channel_split(data.type.shape, axis)
    return [], (f"ck_batch_norm({int_literal(outer)}, {int_literal(channels)}, {int_literal(inner)}, {data.ptr}, "
                f"{gamma.ptr}, {beta.ptr}, {mean.ptr}, {var.ptr}, {float_literal(step.attrs['epsilon'])}, "
                f"{int(bool(step.attrs['center']))}, {int(bool(step.attrs['scale']))}, {step.outs[0].ptr})")


# ---- dense, matmul, conv2d (plain and fused) -----------------------------------------------------

def _dense_mnk(step) -> tuple[int, int, int]:
    data, weight = step.ins[0], step.ins[1]
    k = int(data.type.shape[-1]) if data.type.ndim else 1
    return kernels.element_count(data.type.shape[:-1]), int(weight.type.shape[0]), k


def _dense(step):
    m, n, k = _dense_mnk(step)
    data, weight = step.ins[0], step.ins[1]
    bias = step.ins[2].ptr if len(step.ins) > 2 else "NULL"
    act = kernels.ACTIVATIONS[step.activation]
    # dense_prepacked: the weight input is the packed constant (its value keeps the [N, K] type)
    function = "ck_dense_prepacked" if step.op == "dense_prepacked" else "ck_dense"
    return [], (f"{function}({int_literal(m)}, {int_literal(n)}, {int_literal(k)}, {data.ptr}, {weight.ptr}, "
                f"{bias}, {act}, {step.outs[0].ptr}, {step.scratch_ptr})")


def _matmul_mnk(step) -> tuple[int, int, int]:
    a, b = step.ins
    m, k = (a.type.shape[1], a.type.shape[0]) if step.attrs["transpose_a"] else a.type.shape
    n = b.type.shape[0] if step.attrs["transpose_b"] else b.type.shape[1]
    return int(m), int(n), int(k)


def _matmul(step):
    m, n, k = _matmul_mnk(step)
    a, b = step.ins
    if step.op == "matmul_prepacked":  # op(b) packed: the transpose is in the layout
        return [], (f"ck_matmul_prepacked({int_literal(m)}, {int_literal(n)}, {int_literal(k)}, {a.ptr}, "
                    f"{int(bool(step.attrs['transpose_a']))}, {b.ptr}, {step.outs[0].ptr}, {step.scratch_ptr})")
    return [], (f"ck_matmul({int_literal(m)}, {int_literal(n)}, {int_literal(k)}, {a.ptr}, "
                f"{int(bool(step.attrs['transpose_a']))}, {b.ptr}, {int(bool(step.attrs['transpose_b']))}, "
                f"{step.outs[0].ptr}, {step.scratch_ptr})")


def _conv2d_params(step) -> dict[str, int]:
    a = step.attrs
    if a["data_layout"] != "NCHW" or a["kernel_layout"] != "OIHW":
        raise ByocError(f"nn.conv2d: layout {a['data_layout']}/{a['kernel_layout']} is not supported by the "
                        "kernel library (NCHW/OIHW only)")
    return kernels.conv2d_params(step.ins[0].type.shape, step.ins[1].type.shape, a["strides"], a["padding"],
                                 a["dilation"], a["groups"])


def _conv2d(step):
    params = kernels.c_struct_initializer(kernels.CONV2D_PARAM_FIELDS, _conv2d_params(step))
    data, weight = step.ins[0], step.ins[1]
    bias = step.ins[2].ptr if len(step.ins) > 2 else "NULL"
    act = kernels.ACTIVATIONS[step.activation]
    # conv2d_prepacked: the weight input is the packed constant (its value keeps the OIHW type)
    function = "ck_conv2d_prepacked" if step.op == "conv2d_prepacked" else "ck_conv2d"
    decls = [f"static const ck_conv2d_params params = {params};"]
    return decls, (f"{function}(&params, {data.ptr}, {weight.ptr}, {bias}, {act}, {step.outs[0].ptr}, "
                   f"{step.scratch_ptr})")


def _conv2d_add(step):
    """conv2d_prepacked + bias, a residual add and maybe a relu (fuse_residual.py): ins data, weight, bias, residual."""
    params = kernels.c_struct_initializer(kernels.CONV2D_PARAM_FIELDS, _conv2d_params(step))
    data, weight, bias, residual = step.ins
    act = kernels.ACTIVATIONS[step.activation]
    decls = [f"static const ck_conv2d_params params = {params};"]
    return decls, (f"ck_conv2d_prepacked_add(&params, {data.ptr}, {weight.ptr}, {bias.ptr}, {residual.ptr}, {act}, "
                   f"{step.outs[0].ptr}, {step.scratch_ptr})")


conv2d_params = _conv2d_params
matmul_mnk = _matmul_mnk


# ---- pools ---------------------------------------------------------------------------------------

def _pool_params(step) -> str:
    a = step.attrs
    if a["layout"] != "NCHW":
        raise ByocError(f"{step.op}: layout {a['layout']} is not supported by the kernel library (NCHW only)")
    values = kernels.pool2d_params(step.ins[0].type.shape, a["pool_size"], a["strides"], a["padding"],
                                   a["dilation"], a["ceil_mode"], a.get("count_include_pad", False))
    return kernels.c_struct_initializer(kernels.POOL2D_PARAM_FIELDS, values)


def _pool(function: str):
    def emit(step):
        decls = [f"static const ck_pool2d_params params = {_pool_params(step)};"]
        return decls, f"{function}(&params, {step.ins[0].ptr}, {step.outs[0].ptr})"
    return emit


def _global_avg_pool2d(step):
    if step.attrs["layout"] != "NCHW":
        raise ByocError(f"nn.global_avg_pool2d: layout {step.attrs['layout']} is not supported (NCHW only)")
    n, c, h, w = step.ins[0].type.shape
    return [], (f"ck_global_avg_pool2d({int_literal(n * c)}, {int_literal(h * w)}, {step.ins[0].ptr}, "
                f"{step.outs[0].ptr})")


# ---- shape ops -----------------------------------------------------------------------------------

def _copy(step):
    return [], f"ck_copy({int_literal(step.outs[0].type.size)}, {step.ins[0].ptr}, {step.outs[0].ptr})"


def _transpose(step):
    _check_rank(step, "transpose")
    x = step.ins[0]
    ndim = x.type.ndim
    axes = step.attrs["axes"]
    axes = list(range(ndim))[::-1] if axes is None else [_axis(a, ndim, "transpose") for a in axes]
    if not ndim:
        return _copy(step)
    decls = [int64_array("in_shape", x.type.shape),
             line_array("axes", "int32", axes)]
    return decls, f"ck_transpose({ndim}, in_shape, axes, {x.ptr}, {step.outs[0].ptr})"


def _concatenate(step):
    out = step.outs[0]
    axis = _axis(step.attrs["axis"], out.type.ndim, "concatenate")
    outer, inner = kernels.element_count(out.type.shape[:axis]), kernels.element_count(out.type.shape[axis + 1:])
    n = len(step.ins)
    decls = [f"const float* const inputs[{n}] = {{{', '.join(t.ptr for t in step.ins)}}};",
             int64_array("sizes", [t.type.shape[axis] for t in step.ins])]
    return decls, f"ck_concatenate({n}, inputs, sizes, {int_literal(outer)}, {int_literal(inner)}, {out.ptr})"


def _gemm_scratch(size: Callable, mnk: Callable):
    return lambda step: size(*mnk(step))


def _gemm_query(function: str, mnk: Callable):
    return lambda step: f"{function}({', '.join(int_literal(v) for v in mnk(step))})"


RULES: dict[str, Rule] = {
    **{op: Rule(_binary, inplace=(0, 1)) for op in kernels.BINARY_OPS},
    **{op: Rule(_unary, inplace=(0,)) for op in kernels.UNARY_OPS},
    "nn.bias_add": Rule(_bias_add, inplace=(0,)),
    "nn.batch_norm": Rule(_batch_norm, inplace=(0,)),
    "nn.dense": Rule(_dense, _gemm_scratch(kernels.dense_workspace_bytes, _dense_mnk),
                     _gemm_query("ck_dense_workspace_bytes", _dense_mnk)),
    "nn.matmul": Rule(_matmul, _gemm_scratch(kernels.matmul_workspace_bytes, _matmul_mnk),
                      _gemm_query("ck_matmul_workspace_bytes", _matmul_mnk)),
    # not ops: nn.dense / nn.matmul on a constant weight the codegen packed (prepack.py)
    "dense_prepacked": Rule(_dense, _gemm_scratch(kernels.gemm_prepacked_workspace_bytes, _dense_mnk),
                            _gemm_query("ck_gemm_prepacked_workspace_bytes", _dense_mnk)),
    "matmul_prepacked": Rule(_matmul, _gemm_scratch(kernels.gemm_prepacked_workspace_bytes, _matmul_mnk),
                             _gemm_query("ck_gemm_prepacked_workspace_bytes", _matmul_mnk)),
    "nn.conv2d": Rule(_conv2d, lambda step: kernels.conv2d_workspace_bytes(_conv2d_params(step)),
                      lambda step: "ck_conv2d_workspace_bytes(&params)"),
    # not an op: nn.conv2d on a constant weight the codegen packed (prepack.py)
    "conv2d_prepacked": Rule(_conv2d, lambda step: kernels.conv2d_workspace_bytes(_conv2d_params(step)),
                             lambda step: "ck_conv2d_workspace_bytes(&params)"),
    # not an op either: conv2d_prepacked with a residual add (and relu) in its epilogue (fuse_residual.py)
    "conv2d_prepacked_add": Rule(_conv2d_add, lambda step: kernels.conv2d_workspace_bytes(_conv2d_params(step)),
                                 lambda step: "ck_conv2d_workspace_bytes(&params)"),
    "nn.max_pool2d": Rule(_pool("ck_max_pool2d")),
    "nn.avg_pool2d": Rule(_pool("ck_avg_pool2d")),
    "nn.global_avg_pool2d": Rule(_global_avg_pool2d),
    "transpose": Rule(_transpose),
    "concatenate": Rule(_concatenate),
    "copy": Rule(_copy),           # not an op: region outputs that are inputs, constants or repeats
}

# The transformer ops (batched matmul, softmax, layer norm, gelu) live in their own file.
from .rules_transformer import rules as _transformer_rules  # noqa: E402

RULES.update(_transformer_rules())
# The int8/uint8 ops and chains (after the float rules: max_pool2d and copy dispatch on the dtype).
from .rules_qnn import rules as _qnn_rules  # noqa: E402

RULES.update(_qnn_rules(RULES))

# Reductions and resize, likewise.
from .rules_reduce_resize import rules as _reduce_resize_rules  # noqa: E402

RULES.update(_reduce_resize_rules())

# Hard sigmoid and hard swish, likewise.
from .rules_activation import rules as _activation_rules  # noqa: E402

RULES.update(_activation_rules())

# Stride-1 3x3 convolutions on a Winograd-transformed weight, likewise.
from .rules_winograd import rules as _winograd_rules  # noqa: E402

RULES.update(_winograd_rules())

# Ops that are views: their output is their input's bytes under another shape (no call at all).
# op name -> for each output, the index of the input it is a view of.
VIEWS: dict[str, tuple[int, ...]] = {
    "reshape": (0,),
    "nn.batch_flatten": (0,),
}
# Tuple-valued ops whose later outputs are inputs passed through (batch_norm's moving mean and var).
PASS_THROUGH: dict[str, dict[int, int]] = {
    "nn.batch_norm": {1: 3, 2: 4},
}
