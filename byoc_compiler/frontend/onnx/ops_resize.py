"""Resize and Upsample onto image.resize. Scales, sizes and roi must be known at import time.

Upsample (7: scales attribute, 9: scales input) and Resize-10 compute output = floor(in * scale)
with asymmetric coordinates and, for nearest, the floor of the source coordinate. Resize 11+
adds coordinate modes, nearest rounding, cubic, roi and sizes; 18 adds antialias, axes and
keep_aspect_ratio_policy; 19 half_pixel_symmetric.
"""
from __future__ import annotations

import math

import numpy as np

from ...op.image import COORDINATE_MODES, NEAREST_MODES
from .context import Context, Node, NodeError
from .table import converter

_MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "cubic": "cubic"}


def _floats(data) -> list[float] | None:
    return None if data is None or data.size == 0 else [float(v) for v in np.ravel(data)]


def _check(attrs) -> list[str]:
    problems = []
    mode = attrs.get("mode", "nearest")
    if mode not in _MODES:
        problems.append(f"mode {mode!r} is not supported (nearest, linear, cubic)")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel")
    if coord not in COORDINATE_MODES:
        problems.append(f"coordinate_transformation_mode {coord!r} is not supported")
    nearest = attrs.get("nearest_mode", "round_prefer_floor")
    if nearest not in NEAREST_MODES:
        problems.append(f"nearest_mode {nearest!r} is not supported")
    return problems


def _resize(ctx: Context, x, scales, sizes, roi, method: str, **attrs):
    shape = ctx.shape(x)
    rank = len(shape)
    if sizes is not None:
        if len(sizes) != rank:
            raise NodeError(f"sizes has {len(sizes)} values for a {rank}-D input")
        scales = [s / d if d else 1.0 for s, d in zip(sizes, shape)]
    elif scales is not None:
        if len(scales) != rank:
            raise NodeError(f"scales has {len(scales)} values for a {rank}-D input")
        if any(s <= 0 for s in scales):
            raise NodeError(f"scales {scales} must be positive")
        sizes = [int(math.floor(d * s)) for d, s in zip(shape, scales)]
    else:
        raise NodeError("one of scales and sizes is required")
    return ctx.call("image.resize", x, size=tuple(int(s) for s in sizes), scales=tuple(float(s) for s in scales),
                    roi=tuple(roi or ()), method=method, **attrs)


def _legacy(node: Node, ctx: Context, scales):
    mode = node.attr("mode", "nearest")
    return [_resize(ctx, node.required(0, "X"), scales, None, None, _MODES[mode],
                    coordinate_transformation_mode="asymmetric", nearest_mode="floor")]


@converter("Upsample", (7,), check=_check)
def _upsample_attr(node: Node, ctx: Context):
    return _legacy(node, ctx, [float(v) for v in node.attr("scales") or []] or None)


@converter("Upsample", (9,), check=_check)
def _upsample_input(node: Node, ctx: Context):
    return _legacy(node, ctx, _floats(ctx.constant_input(node, 1, "scales")))


@converter("Resize", (10,), check=_check)
def _resize_10(node: Node, ctx: Context):
    return _legacy(node, ctx, _floats(ctx.constant_input(node, 1, "scales")))


@converter("Resize", (11, 13, 18, 19), check=_check)
def _resize_11(node: Node, ctx: Context):
    x = node.required(0, "X")
    shape = ctx.shape(x)
    rank = len(shape)
    roi = _floats(ctx.constant_input(node, 1, "roi"))
    scales = _floats(ctx.constant_input(node, 2, "scales"))
    sizes = ctx.constant_input(node, 3, "sizes")
    sizes = None if sizes is None or sizes.size == 0 else [int(v) for v in np.ravel(sizes)]
    if scales is not None and sizes is not None:
        raise NodeError("only one of scales and sizes may be given")
    axes = node.attr("axes")
    coord = node.attr("coordinate_transformation_mode", "half_pixel")
    if axes is not None:            # 18: scales/sizes/roi name only these axes
        axes = [int(a) % rank for a in axes]
        if scales is not None:
            full = [1.0] * rank
            for a, s in zip(axes, scales):
                full[a] = s
            scales = full
        if sizes is not None:
            full = list(shape)
            for a, s in zip(axes, sizes):
                full[a] = s
            sizes = full
        if roi is not None:
            full = [0.0] * rank + [1.0] * rank
            for i, a in enumerate(axes):
                full[a], full[rank + a] = roi[i], roi[len(axes) + i]
            roi = full
    else:
        axes = list(range(rank))
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    if sizes is not None and policy != "stretch":
        ratios = [sizes[a] / shape[a] for a in axes]
        scale = min(ratios) if policy == "not_larger" else max(ratios)
        scales = [scale if a in axes else 1.0 for a in range(rank)]
        sizes = [int(scale * shape[a] + 0.5) if a in axes else shape[a] for a in range(rank)]
        shape_scales = scales
    else:
        shape_scales = None
    if coord != "tf_crop_and_resize":
        roi = None
    elif roi is None:
        raise NodeError("tf_crop_and_resize needs the roi input")
    attrs = dict(coordinate_transformation_mode=coord,
                 nearest_mode=node.attr("nearest_mode", "round_prefer_floor"),
                 cubic_coeff_a=float(node.attr("cubic_coeff_a", -0.75)),
                 exclude_outside=bool(node.attr("exclude_outside", 0)),
                 extrapolation_value=float(node.attr("extrapolation_value", 0.0)),
                 antialias=bool(node.attr("antialias", 0)))
    method = _MODES[node.attr("mode", "nearest")]
    if shape_scales is not None:
        return [ctx.call("image.resize", x, size=tuple(sizes), scales=tuple(shape_scales), roi=tuple(roi or ()),
                         method=method, **attrs)]
    return [_resize(ctx, x, scales, sizes, roi, method, **attrs)]
