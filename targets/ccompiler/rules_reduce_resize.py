"""ccompiler rules of reductions (sum, mean, max, min, prod over any axes) and image.resize (nearest, linear).

Same shape as rules.py's table (op name -> Rule); rules.py merges RULES in. Both kernels take the
op's shapes and attributes as static arrays and enums and compute everything else themselves (the
reduction's axis merging, resize's source coordinates and taps), so nothing here mirrors C.
"""
from __future__ import annotations

import math

from byoc_compiler.vendor import ByocError, float_literal, int64_array, line_array

from . import kernels
from .rule import Rule


def _reduced_axes(step) -> set[int]:
    """The axes `axis` names (None: every axis; (): none), non-negative."""
    ndim = step.ins[0].type.ndim
    axis = step.attrs["axis"]
    if axis is None:
        return set(range(ndim))
    for a in axis:
        if not -ndim <= int(a) < max(ndim, 1):
            raise ByocError(f"{step.op}: axis {a} is out of range for rank {ndim}")
    return {int(a) % ndim for a in axis} if ndim else set()


def _reduce(step):
    x = step.ins[0]
    ndim = x.type.ndim
    if ndim > kernels.MAX_RANK:
        raise ByocError(f"{step.op}: rank {ndim} is above the kernel library's limit of {kernels.MAX_RANK}")
    axes = _reduced_axes(step)
    op = kernels.REDUCE_OPS[step.op]
    if not ndim:
        return [], f"ck_reduce({op}, 0, NULL, NULL, {x.ptr}, {step.outs[0].ptr})"
    decls = [int64_array("shape", x.type.shape), line_array("reduce", "int32", [int(a in axes) for a in range(ndim)])]
    return decls, f"ck_reduce({op}, {ndim}, shape, reduce, {x.ptr}, {step.outs[0].ptr})"


def _double_array(name: str, values) -> str:
    """Scales and roi as doubles with the bits the reference computes with (finite: checked here, as the
    kernel refuses the call otherwise)."""
    bad = [v for v in values if not math.isfinite(float(v))]
    if bad:
        raise ByocError(f"image.resize: {bad[0]} is not a finite scale or roi value")
    return line_array(name, "float64", values)


def _resize(step):
    x, out = step.ins[0], step.outs[0]
    a = step.attrs
    ndim = x.type.ndim
    if not 1 <= ndim <= kernels.MAX_RANK or a["method"] not in kernels.RESIZE_METHODS:
        raise ByocError(f"image.resize: method {a['method']} at rank {ndim} is not in the kernel library "
                        "(nearest and linear, rank 1 to 8); keep it on the host")
    decls = [int64_array("in_shape", x.type.shape), int64_array("out_shape", out.type.shape),
             _double_array("scales", a["scales"])]
    roi = "NULL"
    if a["roi"]:
        decls.append(_double_array("roi", a["roi"]))
        roi = "roi"
    return decls, (f"ck_resize({ndim}, in_shape, out_shape, scales, {roi}, {kernels.RESIZE_METHODS[a['method']]}, "
                   f"{kernels.COORDINATE_MODES[a['coordinate_transformation_mode']]}, "
                   f"{kernels.NEAREST_MODES[a['nearest_mode']]}, {float_literal(a['extrapolation_value'])}, "
                   f"{x.ptr}, {out.ptr})")


def rules() -> dict:
    """The table (rules.py merges it into RULES)."""
    return {**{op: Rule(_reduce) for op in kernels.REDUCE_OPS}, "image.resize": Rule(_resize)}
