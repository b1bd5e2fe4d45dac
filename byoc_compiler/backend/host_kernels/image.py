"""image.resize: every output element is the weighted sum over its axes' taps (op/image.py's tables).

The tap tables (input position and weight per output position and tap) are computed at
codegen time and emitted as static arrays; an axis that is not resized reads the output
position itself, with no table.
"""
from __future__ import annotations

from ...ctext import float_literal, int_literal as L, line_array
from ...op.image import axis_taps
from .cwriter import contiguous_strides, size_of


def _array(dtype: str, name: str, values) -> str:
    return "  " + line_array(name, dtype, values)


def _resize(ctx) -> str:
    data, out = ctx.inputs[0], ctx.outputs[0]
    if size_of(out.shape) == 0:
        return ""
    taps = axis_taps(data.shape, ctx.attrs)
    own = contiguous_strides(data.shape)
    lines, terms, weights, extrapolate = [], [], [], []
    resized = []
    for a, (index, weight, outside) in enumerate(taps):
        identity = index.shape[1] == 1 and (weight == 1).all() and (index[:, 0] == range(len(index))).all()
        if identity:
            terms.append(f"o{a} * {L(own[a])}")
            continue
        n = index.shape[1]
        resized.append((a, n))
        lines.append(_array("int64", f"index{a}", (int(i) * own[a] for i in index.ravel())))
        lines.append(_array("float64", f"weight{a}", weight.ravel()))
        terms.append(f"index{a}[o{a} * {n} + t{a}]")
        weights.append(f"weight{a}[o{a} * {n} + t{a}]")
        if outside.any():
            lines.append(_array("bool", f"outside{a}", outside))
            extrapolate.append(f"outside{a}[o{a}]")
    pad = "  "
    for a, d in enumerate(out.shape):
        lines.append(f"{pad}for (int64_t o{a} = 0; o{a} < {L(d)}; ++o{a}) {{")
        pad += "  "
    at = " + ".join(f"o{a} * {L(s)}" for a, s in enumerate(contiguous_strides(out.shape))) or "0"
    body = [f"{pad}double acc = 0.0;"]
    inner = pad
    for a, n in resized:
        body.append(f"{inner}for (int64_t t{a} = 0; t{a} < {n}; ++t{a}) {{")
        inner += "  "
    product = " * ".join(weights) or "1.0"
    body.append(f"{inner}acc += {product} * (double)in0[{' + '.join(terms) or '0'}];")
    for _ in resized:
        inner = inner[:-2]
        body.append(f"{inner}}}")
    if extrapolate:
        lines.append(f"{pad}if ({' || '.join(extrapolate)}) {{")
        lines.append(f"{pad}  out0[{at}] = {float_literal(ctx.attrs.extrapolation_value)};")
        lines.append(f"{pad}  continue;")
        lines.append(f"{pad}}}")
        if "INFINITY" in float_literal(ctx.attrs.extrapolation_value) or "NAN" in \
                float_literal(ctx.attrs.extrapolation_value):
            ctx.need("math.h")
    lines += body
    lines.append(f"{pad}out0[{at}] = (float)acc;")
    for _ in out.shape:
        pad = pad[:-2]
        lines.append(f"{pad}}}")
    return "\n".join(lines)


RULES = {"image.resize": _resize}
