"""qnn ops: quantize, dequantize, requantize, conv2d, dense, matmul, add, mul, concatenate (integer C).

The fixed-point multipliers and shifts (op/qnn_math.py) are computed here, at code generation, and
written as constants, so the C side does only integer multiply, round-half-to-even shift and
saturation: the same steps, in the same order, as the numpy reference. Sums of products accumulate
in int64 (no overflow, whatever K) and wrap to int32 like the reference.
"""
from __future__ import annotations

import numpy as np

from ...ctext import c_type, float_literal, int_literal as L, line_array
from ...op.qnn import (add_float32_params, add_multipliers, concat_copies, concat_requant, concat_table, mul_multiplier,
                       requantize_ratios)
from ...op.qnn_math import fixed_point
from . import tflite_qnn
from .nn import pool_loops
from .cwriter import (axis_split, broadcast_strides, contiguous_strides, Conv2d, conv_window, flat_loop, loop_nest,
                      size_of)

_RANGE = {"int8": ("INT8_MIN", "INT8_MAX"), "uint8": ("0", "UINT8_MAX"), "int16": ("INT16_MIN", "INT16_MAX"),
          "uint16": ("0", "UINT16_MAX"), "int32": ("INT32_MIN", "INT32_MAX")}

# round(p / 2^s), ties to even, on magnitudes (a right shift of a negative value is implementation-defined)
HELPERS = {
    "byoc_round_shift": ((), """static inline int64_t byoc_round_shift(int64_t p, int32_t s) {
  const uint64_t a = p < 0 ? (uint64_t)0 - (uint64_t)p : (uint64_t)p;
  uint64_t q = a >> s;
  const uint64_t r = a - (q << s), half = (uint64_t)1 << (s - 1);
  if (r > half || (r == half && (q & 1u))) ++q;
  return p < 0 ? -(int64_t)q : (int64_t)q;
}"""),
    "byoc_clamp64": ((), """static inline int64_t byoc_clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}"""),
}


def _array(name: str, dtype: str, values) -> str:
    return "  " + line_array(name, dtype, values)


def _channel_index(ctx, shape, axis: int, count: int) -> tuple[str, int, int]:
    """(C expression of the channel of flat element i, outer, inner) for per-channel attributes."""
    if count == 1:
        return "0", 0, 0
    outer, extent, inner = axis_split(shape, axis)
    return (f"(i / {L(inner)}) % {L(extent)}" if inner != 1 else f"i % {L(extent)}"), outer, inner


def _axis(ctx, ty) -> int:
    return ctx.attrs.axis % ty.ndim if ty.ndim else 0


def _quantize(ctx) -> str:
    x, out = ctx.inputs[0], ctx.outputs[0]
    ctx.need("math.h")
    scales, zps = ctx.attrs.scale, ctx.attrs.zero_point
    n = max(len(scales), len(zps))
    ch, _, _ = _channel_index(ctx, x.shape, _axis(ctx, x), n)
    pre = [_array("scale", "float32", scales * n if len(scales) == 1 else scales),
           _array("zp", "float32", [int(z) for z in (zps * n if len(zps) == 1 else zps)])]
    body = f"const int64_t c = {ch};\n" + quantize_store(ctx.attrs, "in0[i]", "scale[c]", "zp[c]", "out0[i]", out.dtype)
    return "\n".join(pre) + "\n" + flat_loop(size_of(x.shape), body)


def quantize_store(a, src: str, scale: str, zp: str, dst: str, dtype: str) -> str:
    """Statements of qnn.quantize (attrs `a`) storing float `src` into `dst` (they declare `v`); `scale` and
    `zp` are float32 C expressions. The one arithmetic of the op's own kernel and of fused ones."""
    lo, hi = _RANGE[dtype]
    rounder = "roundf" if a.rounding == "tflite" else "nearbyintf"   # ties away from zero / to even
    return (f"float v = {rounder}({src} / {scale}) + {zp};   /* float32 division */\n"
            f"if (isnan(v)) v = 0.0f;\n"
            f"v = v < (float){lo} ? (float){lo} : v > (float){hi} ? (float){hi} : v;\n"
            f"{dst} = ({c_type(dtype)})v;")


def _dequantize(ctx) -> str:
    x = ctx.inputs[0]
    scales, zps = ctx.attrs.scale, ctx.attrs.zero_point
    n = max(len(scales), len(zps))
    ch, _, _ = _channel_index(ctx, x.shape, _axis(ctx, x), n)
    pre = [_array("scale", "float32", scales * n if len(scales) == 1 else scales),
           _array("zp", "int64", [int(z) for z in (zps * n if len(zps) == 1 else zps)])]
    body = f"const int64_t c = {ch};\nout0[i] = (float)((int64_t)in0[i] - zp[c]) * scale[c];"
    return "\n".join(pre) + "\n" + flat_loop(size_of(x.shape), body)


def _rounded_to(ctx, value: str, shift: str, out_zp: str, out_dtype: str) -> str:
    """C expression: saturate(round_shift(value, shift) + out_zp) as out_dtype (value: int64)."""
    ctx.use("byoc_round_shift")
    ctx.use("byoc_clamp64")
    lo, hi = _RANGE[out_dtype]
    return f"({c_type(out_dtype)})byoc_clamp64(byoc_round_shift({value}, {shift}) + {out_zp}, {lo}, {hi})"


def requant_step(ctx, value: str, mult: str, shift: str, out_zp: str, out_dtype: str) -> str:
    """C expression: saturate(round_shift(value * mult, shift) + out_zp) as out_dtype (value: int64)."""
    return _rounded_to(ctx, f"byoc_clamp64({value}, -INT64_C(2147483647), INT64_C(2147483647)) * {mult}", shift,
                       out_zp, out_dtype)


def _requantize(ctx) -> str:
    x, out = ctx.inputs[0], ctx.outputs[0]
    a = ctx.attrs
    n = requantize_channels(a)
    ch, _, _ = _channel_index(ctx, x.shape, _axis(ctx, x), n)
    if a.rounding in ("tflite", "tflite_single"):
        return tflite_qnn.requantize(ctx, ch, n)
    body = f"const int64_t c = {ch};\n" + requantize_store(ctx, a, "in0[i]", "out0[i]", out.dtype)
    return "\n".join(requantize_tables(a)) + "\n" + flat_loop(size_of(x.shape), body)


def requantize_channels(a) -> int:
    """How many channels a qnn.requantize's parameters have (1: per tensor)."""
    return max(len(requantize_ratios(a)), len(a.input_zero_point), len(a.output_zero_point))


def requantize_tables(a) -> list[str]:
    """The per-channel tables requantize_store reads (rounding "float32" or "fixed_point")."""
    n = requantize_channels(a)
    ratios = requantize_ratios(a)
    izp = list(a.input_zero_point) * (n if len(a.input_zero_point) == 1 else 1)
    ozp = list(a.output_zero_point) * (n if len(a.output_zero_point) == 1 else 1)
    if a.rounding == "float32":
        return [_array("ratio", "float32", list(ratios) * (n if len(ratios) == 1 else 1)),
                _array("izp", "int64", izp), _array("ozp", "int64", ozp)]
    pairs = [fixed_point([r]) for r in ratios]
    pairs = pairs * n if len(pairs) == 1 else pairs
    return [_array("mult", "int64", [p[0][0] for p in pairs]), _array("shift", "int32", [p[1] for p in pairs]),
            _array("izp", "int64", izp), _array("ozp", "int64", ozp)]


def requantize_store(ctx, a, src: str, dst: str, dtype: str) -> str:
    """Statements storing the requantized `src` (an integer element of channel `c`) into `dst`: the one
    arithmetic of qnn.requantize (rounding "float32" or "fixed_point") for its own kernel and fused ones
    (they declare `v` and `q`)."""
    if a.rounding == "float32":
        ctx.need("math.h")
        ctx.use("byoc_clamp64")
        lo, hi = _RANGE[dtype]
        return (f"const float v = nearbyintf((float)((int64_t){src} - izp[c]) * ratio[c]);   /* ties to even */\n"
                f"const int64_t q = v >= 9.0e18f ? INT64_MAX : v <= -9.0e18f ? INT64_MIN + 1 : (int64_t)v;\n"
                f"{dst} = ({c_type(dtype)})byoc_clamp64(q + ozp[c], {lo}, {hi});")
    return f"{dst} = {requant_step(ctx, f'(int64_t){src} - izp[c]', 'mult[c]', 'shift[c]', 'ozp[c]', dtype)};"


def _wrap32(ctx, value: str) -> str:
    ctx.use("byoc_wrap_i32")
    return f"byoc_wrap_i32({value})"


def _conv2d(ctx) -> str:
    """Direct convolution; int32 accumulation of a whole output row cannot overflow when
    K * 255 * 255 < 2**31, larger K and int16 data (16x8) accumulate in int64 per output instead."""
    g = Conv2d.of(ctx)
    kzp = ctx.attrs.kernel_zero_point
    kzp = _array("kzp", "int32", [int(z) for z in list(kzp) * (g.o if len(kzp) == 1 else 1)])
    wide = g.cg * g.kh * g.kw * 255 * 255 >= 2 ** 31 or ctx.inputs[0].dtype == "int16"
    return kzp + "\n" + (_conv2d_wide(ctx, g) if wide else _conv2d_rows(ctx, g))


def _conv2d_rows(ctx, g: Conv2d) -> str:
    """For each weight tap, y[oy, ox] += (x - x_zp) * (w - w_zp) over the output positions whose input
    is inside the image (padding adds exact zeros), so the inner loop is a branch-free, vectorizable
    row update."""
    return f"""  for (int64_t b = 0; b < {L(g.n)}; ++b) {{
    for (int64_t oc = 0; oc < {L(g.o)}; ++oc) {{
      const int64_t first_channel = (oc / {L(g.per_group)}) * {L(g.cg)};
      int32_t* y = out0 + (b * {L(g.o)} + oc) * {L(g.oh * g.ow)};
      for (int64_t i = 0; i < {L(g.oh * g.ow)}; ++i) y[i] = 0;
      for (int64_t ic = 0; ic < {L(g.cg)}; ++ic) {{
        const {c_type(ctx.inputs[0].dtype)}* x = in0 + (b * {L(g.c)} + first_channel + ic) * {L(g.h * g.w)};
        for (int64_t ky = 0; ky < {L(g.kh)}; ++ky) {{
          for (int64_t kx = 0; kx < {L(g.kw)}; ++kx) {{
{row_tap(g, 12)}
            for (int64_t oy = 0; oy < {L(g.oh)}; ++oy) {{
              const int64_t iy = oy * {L(g.sh)} - {L(g.pt)} + ky * {L(g.dh)};
              if (iy < 0 || iy >= {L(g.h)}) continue;
              const int64_t base = iy * {L(g.w)} + shift;   /* base + ox * sw >= 0 for ox >= lo */
              int32_t* yr = y + oy * {L(g.ow)};
              for (int64_t ox = lo; ox < hi; ++ox)
                yr[ox] += ((int32_t)x[base + ox * {L(g.sw)}] - {L(ctx.attrs.input_zero_point)}) * wv;
            }}
          }}
        }}
      }}
    }}
  }}"""


def row_tap(g: Conv2d, indent: int) -> str:
    """The weight tap (ky, kx) of output channel oc and input channel ic as wv, and the output columns
    [lo, hi) whose input column ox * sw + shift lies inside the image; skips the tap when none or wv == 0.
    The row-update kernels' (unfused and fused) one computation of it."""
    lines = (f"const int32_t wv = (int32_t)in1[((oc * {L(g.cg)} + ic) * {L(g.kh)} + ky) * {L(g.kw)} + kx] - kzp[oc];",
             f"const int64_t shift = kx * {L(g.dw)} - {L(g.pl)};   /* ix = ox * sw + shift */",
             f"const int64_t lo = shift >= 0 ? 0 : (-shift + {L(g.sw - 1)}) / {L(g.sw)};",
             f"int64_t hi = {L(g.w - 1)} - shift < 0 ? 0 : ({L(g.w - 1)} - shift) / {L(g.sw)} + 1;",
             f"if (hi > {L(g.ow)}) hi = {L(g.ow)};",
             "if (wv == 0 || lo >= hi) continue;")
    return "\n".join(" " * indent + line for line in lines)


def _conv2d_wide(ctx, g: Conv2d) -> str:
    dst = f"out0[((b * {L(g.o)} + oc) * {L(g.oh)} + oy) * {L(g.ow)} + ox]"
    return conv2d_outputs(g, ctx.attrs.input_zero_point, "acc", f"          {dst} = {_stored_sum(ctx, 'acc')};")


def _stored_sum(ctx, acc: str) -> str:
    """The int64 sum `acc` as the output keeps it: itself (16x8's int64 accumulator) or wrapped to int32."""
    return acc if ctx.outputs[0].dtype == "int64" else _wrap32(ctx, acc)


def conv2d_outputs(g: Conv2d, input_zp: int, acc: str, finish: str) -> str:
    """One output at a time, its sum in the int64 `acc`; `finish` (C at the output loop's depth) stores it.
    The unfused wide kernel's loops and fused kernels' alike."""
    window = conv_window(g, f"""\
const int32_t xv = (int32_t)in0[((b * {L(g.c)} + first_channel + ic) * {L(g.h)} + iy) * {L(g.w)} + ix]
                   - {L(input_zp)};
const int32_t wv = (int32_t)in1[((oc * {L(g.cg)} + ic) * {L(g.kh)} + ky) * {L(g.kw)} + kx] - kzp[oc];
{acc} += (int64_t)(xv * wv);""", indent=6)
    return f"""  for (int64_t b = 0; b < {L(g.n)}; ++b) {{
    for (int64_t oc = 0; oc < {L(g.o)}; ++oc) {{
      const int64_t first_channel = (oc / {L(g.per_group)}) * {L(g.cg)};
      for (int64_t oy = 0; oy < {L(g.oh)}; ++oy) {{
        for (int64_t ox = 0; ox < {L(g.ow)}; ++ox) {{
          int64_t {acc} = 0;
          for (int64_t ic = 0; ic < {L(g.cg)}; ++ic) {{
{window}
          }}
{finish}
        }}
      }}
    }}
  }}"""


def _int_gemm(ctx, m: int, k: int, n: int, x_zp: int, w_zps, w_at: str) -> str:
    """out0[r, c] = sum_j (in0[r, j] - x_zp) * (in1 at `w_at` - w_zps[c]), for dense (weight [n, k])
    and matmul (weight [k, n]) alike; `w_at` is the weight's offset in terms of c and j."""
    wzp = list(w_zps) * (n if len(w_zps) == 1 else 1)
    return f"""{_array("wzp", "int32", [int(z) for z in wzp])}
  for (int64_t r = 0; r < {L(m)}; ++r) {{
    for (int64_t c = 0; c < {L(n)}; ++c) {{
      int64_t acc = 0;
      for (int64_t j = 0; j < {L(k)}; ++j)
        acc += (int64_t)(((int32_t)in0[r * {L(k)} + j] - {L(x_zp)}) *
                         ((int32_t)in1[{w_at}] - wzp[c]));
      out0[r * {L(n)} + c] = {_stored_sum(ctx, "acc")};
    }}
  }}"""


def _dense(ctx) -> str:
    x, wt = ctx.inputs
    k, units = x.shape[-1], wt.shape[0]
    a = ctx.attrs
    return _int_gemm(ctx, size_of(x.shape[:-1]), k, units, a.input_zero_point, a.kernel_zero_point,
                     f"c * {L(k)} + j")


def _matmul(ctx) -> str:
    (m, k), (_, n) = ctx.inputs[0].shape, ctx.inputs[1].shape
    a = ctx.attrs
    return _int_gemm(ctx, m, k, n, a.a_zero_point, a.b_zero_point, f"j * {L(n)} + c")


def _binary(ctx, expr_of) -> str:
    out = ctx.outputs[0]
    strides = {f"in{i}": broadcast_strides(t.shape, out.shape) for i, t in enumerate(ctx.inputs)}
    strides["out0"] = contiguous_strides(out.shape)
    a = ctx.attrs

    def body(off):
        return (f"const int64_t a = (int64_t)in0[{off['in0']}] - {L(a.lhs_zero_point)};\n"
                f"const int64_t b = (int64_t)in1[{off['in1']}] - {L(a.rhs_zero_point)};\n"
                f"out0[{off['out0']}] = {expr_of('a', 'b')};")
    return loop_nest(out.shape, strides, body)


def _saturated(ctx, value: str, shift: int, dtype: str) -> str:
    return _rounded_to(ctx, value, str(shift), str(int(ctx.attrs.output_zero_point)), dtype)


def _add(ctx) -> str:
    dtype = ctx.outputs[0].dtype
    if ctx.attrs.rounding == "tflite":
        return tflite_qnn.add(ctx, _binary)
    if ctx.attrs.rounding == "float32":
        # fmaf rounds once, as the reference (op/qnn.py add_float32_params) and onnxruntime's kernel
        ctx.need("math.h")
        ctx.use("byoc_clamp64")
        ra, rb, fixed = add_float32_params(ctx.attrs)
        lo, hi = _RANGE[dtype]
        out = ctx.outputs[0]
        strides = {f"in{i}": broadcast_strides(t.shape, out.shape) for i, t in enumerate(ctx.inputs)}
        strides["out0"] = contiguous_strides(out.shape)

        def body(off):
            return (f"const float t = fmaf((float)in1[{off['in1']}], {float_literal(rb)}, {float_literal(fixed)});\n"
                    f"const float v = fmaf((float)in0[{off['in0']}], {float_literal(ra)}, t);\n"
                    f"out0[{off['out0']}] = ({c_type(dtype)})byoc_clamp64((int64_t)nearbyintf(v), {lo}, {hi});")
        return loop_nest(out.shape, strides, body)
    (ma, mb), s = add_multipliers(ctx.attrs)
    return _binary(ctx, lambda a, b: _saturated(ctx, f"{a} * {L(ma)} + {b} * {L(mb)}", s, dtype))


def _mul(ctx) -> str:
    if ctx.attrs.rounding == "tflite":
        return tflite_qnn.mul(ctx, _binary)
    (m,), s = mul_multiplier(ctx.attrs)
    dtype = ctx.outputs[0].dtype
    return _binary(ctx, lambda a, b: _saturated(ctx, f"{a} * {b} * {L(m)}", s, dtype))


def _concat_step(ctx, i: int, zp: int, ratio: float, source: str) -> tuple[list[str], str]:
    """(declarations, C expression) of input i's element `source` in the output's scale and zero point."""
    out = ctx.outputs[0]
    if ctx.attrs.rounding == "float32":    # the reference's table, indexed from the type's minimum
        table = concat_table(ctx.attrs, i, out.dtype)
        lowest = int(np.iinfo(out.dtype).min)
        return [_array(f"table{i}", out.dtype, table)], f"table{i}[(int32_t){source} - ({lowest})]"
    (m,), s = fixed_point([ratio])
    return [], requant_step(ctx, f"(int64_t){source} - {zp}", L(m), str(s), str(int(ctx.attrs.output_zero_point)),
                            out.dtype)


def _concatenate(ctx) -> str:
    out = ctx.outputs[0]
    axis = ctx.attrs.axis % out.ndim
    outer, _, inner = axis_split(out.shape, axis)
    row = out.shape[axis] * inner
    decls, lines, offset = [], [], 0
    inputs = zip(ctx.inputs, concat_requant(ctx.attrs), concat_copies(ctx.attrs))
    for i, (t, (ratio, zp), copy) in enumerate(inputs):
        count = t.shape[axis] * inner
        if count:
            value = f"in{i}[o * {L(count)} + j]"
            if not copy:
                table, value = _concat_step(ctx, i, zp, ratio, value)
                decls += table
            lines.append(flat_loop(count, f"out0[o * {L(row)} + {L(offset)} + j] = {value};", var="j", indent=0))
        offset += count
    if not lines or outer == 0:
        return ""
    return "\n".join(decls + [flat_loop(outer, "\n".join(lines), var="o")])


def _avg_pool2d(ctx) -> str:
    """onnxruntime's float32 steps (op/qnn_pool.py), each a statement of its own so that no compiler
    contracts a product and a sum into one rounding."""
    a, t = ctx.attrs, c_type(ctx.inputs[0].dtype)
    lo, hi = _RANGE[ctx.inputs[0].dtype]
    count = L(a.pool_size[0] * a.pool_size[1]) if a.count_include_pad else "in_input"
    step = (f"const float d = (float)((int32_t)v - {int(a.input_zero_point)}) * {float_literal(a.input_scale[0])};\n"
            "total += d;\nin_input += 1;")
    finish = (f"(void)in_padded;\n(void)in_input;\n{{\n"
              f"  const float mean = total / (float)({count} > 0 ? {count} : 1);\n"
              f"  const float scaled = mean / {float_literal(a.output_scale[0])};\n"
              f"  float q = nearbyintf(scaled + {float_literal(float(a.output_zero_point))});\n"
              f"  q = q < (float){lo} ? (float){lo} : q > (float){hi} ? (float){hi} : q;\n"
              f"  y[oy * {L(ctx.outputs[0].shape[3])} + ox] = ({t})q;\n}}")
    ctx.need("math.h")
    return pool_loops(ctx, "float total = 0.0f;\nint64_t in_padded = 0;\nint64_t in_input = 0;", step, finish, t)


def _subtract(ctx) -> str:
    """qnn.subtract: TFLite's SUB (tflite_qnn.add with subtract=True) over this module's broadcast loop."""
    return tflite_qnn.add(ctx, _binary, subtract=True)


RULES = {
    "qnn.quantize": _quantize,
    "qnn.dequantize": _dequantize,
    "qnn.requantize": _requantize,
    "qnn.conv2d": _conv2d,
    "qnn.dense": _dense,
    "qnn.matmul": _matmul,
    "qnn.add": _add,
    "qnn.mul": _mul,
    "qnn.concatenate": _concatenate,
    "qnn.avg_pool2d": _avg_pool2d,
    "qnn.subtract": _subtract,
}
