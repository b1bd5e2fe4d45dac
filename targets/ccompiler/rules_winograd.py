"""Rules for the convolutions prepack.py gave a Winograd-transformed weight (winograd.py): one
ck_conv2d_winograd call each, with the residual add fuse_residual.py may have moved into it."""
from __future__ import annotations

from . import kernels, winograd
from .rule import Rule


def conv2d_params(step) -> dict[str, int]:
    """ck_conv2d_params of the step (NCHW/OIHW: prepack.py picked Winograd through rules.conv2d_params, which
    refuses other layouts)."""
    a = step.attrs
    return kernels.conv2d_params(step.ins[0].type.shape, step.ins[1].type.shape, a["strides"], a["padding"],
                                 a["dilation"], a["groups"])


def _emit(step):
    """ins: data, transformed weight, bias, and for conv2d_winograd_add a residual."""
    p = conv2d_params(step)
    params = kernels.c_struct_initializer(kernels.CONV2D_PARAM_FIELDS, p)
    data, weight = step.ins[0], step.ins[1]
    bias = step.ins[2].ptr if len(step.ins) > 2 else "NULL"
    residual = step.ins[3].ptr if len(step.ins) > 3 else "NULL"
    act = kernels.ACTIVATIONS[step.activation]
    decls = [f"static const ck_conv2d_params params = {params};"]
    return decls, (f"ck_conv2d_winograd(&params, {winograd.tile(p)}, {data.ptr}, {weight.ptr}, {bias}, {residual}, "
                   f"{act}, {step.outs[0].ptr}, {step.scratch_ptr})")


def _scratch(step) -> int:
    p = conv2d_params(step)
    return winograd.workspace_bytes(p, winograd.tile(p))


def _query(step) -> str:
    return f"ck_conv2d_winograd_workspace_bytes(&params, {winograd.tile(conv2d_params(step))})"


def rules() -> dict[str, Rule]:
    # not ops: nn.conv2d on a weight transformed for Winograd (prepack.py), and that with a residual add (and
    # relu) in its epilogue (fuse_residual.py)
    rule = Rule(_emit, _scratch, _query)
    return {"conv2d_winograd": rule, "conv2d_winograd_add": rule}
