"""nn ops: dense, matmul, bias_add, conv2d, pools, batch_norm, softmax, lrn (float32, NCHW).

Reductions accumulate in double and round once, like the numpy references;
window positions outside the input are skipped, never read.
"""
from __future__ import annotations

import numpy as np

from ...ctext import c_type, double_literal, int64_array, int_literal as L
from ...op.batch_matmul import matmul_dims
from .cwriter import (axis_split, broadcast_strides, contiguous_strides, Conv2d, conv_window, flat_loop, indent_block,
                      loop_nest, plane_tasks, size_of)


def _dot(a_at, b_at, k: int) -> str:
    """`acc` = sum over kk < k of a_at(kk) * b_at(kk) in double, with four partial sums so the
    additions do not wait on each other."""
    terms = "\n".join(f"  acc[{j}] += (double){a_at(f'kk + {j}')} * (double){b_at(f'kk + {j}')};" for j in range(4))
    return f"""double acc[4] = {{0.0, 0.0, 0.0, 0.0}};
int64_t kk = 0;
for (; kk + 4 <= {L(k)}; kk += 4) {{
{terms}
}}
for (; kk < {L(k)}; ++kk) acc[0] += (double){a_at('kk')} * (double){b_at('kk')};"""


def _dense(ctx) -> str:
    data, weight = ctx.inputs
    k = data.shape[-1]
    m = size_of(data.shape[:-1])
    n = weight.shape[0]
    if m * n == 0:
        return ""
    if m <= 2:   # a row or two: one dot product per output (a 4-row tile would waste its other rows)
        dot = ctx.use("byoc_host_dot")
        return flat_loop(m, flat_loop(n, f"out0[m * {L(n)} + n] = {dot}({L(k)}, in0 + m * {L(k)}, in1 + n * {L(k)});",
                                      var="n", indent=0), var="m")
    # out (m x n) = data (m x k) * weight^T (weight read as k x n: strides 1 and k)
    return f"  {ctx.use('byoc_host_gemm')}({L(m)}, {L(n)}, {L(k)}, in0, {L(k)}, 1, in1, 1, {L(k)}, out0, {L(n)}, 1);"


def _matmul(ctx) -> str:
    a, b = ctx.inputs
    ta, tb = ctx.attrs.transpose_a, ctx.attrs.transpose_b
    m, k = a.shape[::-1] if ta else a.shape
    n = ctx.outputs[0].shape[1]
    if m * n == 0:
        return ""
    sam, sak = (1, m) if ta else (k, 1)
    sbk, sbn = (1, k) if tb else (n, 1)
    return (f"  {ctx.use('byoc_host_gemm')}({L(m)}, {L(n)}, {L(k)}, in0, {L(sam)}, {L(sak)}, in1, {L(sbk)}, "
            f"{L(sbn)}, out0, {L(n)}, 1);")


def _bias_add(ctx) -> str:
    data = ctx.inputs[0]
    axis = ctx.attrs.axis % data.ndim
    bias_shape = [1] * data.ndim
    bias_shape[axis] = data.shape[axis]
    strides = {"in0": contiguous_strides(data.shape), "in1": broadcast_strides(bias_shape, data.shape),
               "out0": contiguous_strides(data.shape)}
    return loop_nest(data.shape, strides, lambda off: f"out0[{off['out0']}] = in0[{off['in0']}] + in1[{off['in1']}];")


def _conv2d(ctx) -> str:
    g = Conv2d.of(ctx)
    if g.n * g.o * g.oh * g.ow == 0:
        return ""
    if g.cg == 1:
        return _depthwise(ctx, g)
    groups = g.c // g.cg
    k, pixels = g.cg * g.kh * g.kw, g.oh * g.ow
    weights = f"in1 + grp * {L(g.per_group * k)}"
    out = f"out0 + (b * {L(g.o)} + grp * {L(g.per_group)}) * {L(pixels)}"
    x = f"in0 + (b * {L(g.c)} + grp * {L(g.cg)}) * {L(g.h * g.w)}"
    if (g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.oh, g.ow) == (1, 1, 1, 1, 0, 0, g.h, g.w):
        # pointwise: the input planes are B (cg x pixels) as they are
        call = (f"{ctx.use('byoc_host_gemm')}({L(g.per_group)}, {L(pixels)}, {L(k)}, {weights}, {L(k)}, 1, {x}, "
                f"{L(pixels)}, 1, {out}, {L(pixels)}, 1);")
    else:
        fill = ctx.use("byoc_host_fill_im2col")
        fields = zip(("h", "w", "kh", "kw", "ow", "sh", "sw", "dh", "dw", "pt", "pl"),
                     (g.h, g.w, g.kh, g.kw, g.ow, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl))
        call = "\n".join(["byoc_host_conv g;", f"g.x = {x};", *(f"g.{f} = {L(v)};" for f, v in fields),
                          f"byoc_host_gemm_panels({L(g.per_group)}, {L(pixels)}, {L(k)}, {weights}, {L(k)}, 1, {fill}, "
                          f"&g, {out}, {L(pixels)}, 1);"])
    return flat_loop(g.n, flat_loop(groups, call, var="grp", indent=0), var="b")


def _depthwise(ctx, g: Conv2d) -> str:
    """One input channel per output channel: per output row, each tap adds a scaled input row (a
    vectorizable axpy at stride 1)."""
    taps = _row_taps(g.h, g.w, (g.kh, g.kw), (g.sh, g.sw), (g.dh, g.dw), (g.pt, g.pl), g.ow,
                     f"const float weight = wk[ky * {L(g.kw)} + kx];", "{y} += weight * v;")
    return plane_tasks(ctx, g.n * g.o, g.oh * g.ow * g.kh * g.kw, f"""const int64_t oc = plane % {L(g.o)};
const float* restrict x = in0 + (plane / {L(g.o)} * {L(g.c)} + oc / {L(g.per_group)}) * {L(g.h * g.w)};
const float* restrict wk = in1 + oc * {L(g.kh * g.kw)};
for (int64_t oy = 0; oy < {L(g.oh)}; ++oy) {{
  float* restrict y = out0 + plane * {L(g.oh * g.ow)} + oy * {L(g.ow)};
  for (int64_t ox = 0; ox < {L(g.ow)}; ++ox) y[ox] = 0.0f;
{indent_block(taps, 1)}
}}""")


def _row_taps(h: int, w: int, kernel, strides, dilation, pad, ow: int, setup: str, update: str) -> str:
    """The taps of output row oy (depthwise conv, max pool): rows outside the input are skipped, and for
    each tap the output columns [lo, hi) whose input column lies inside the row are computed up front,
    so `update` (the input element in `v`, the output element `{y}`) runs in plain loops the compiler
    vectorizes: chunks of 8 columns (a constant trip count, which gcc's -O2 vectorizer needs) and the
    rest. `setup` runs once per tap (sees ky, kx)."""
    (kh, kw), (sh, sw), (dh, dw), (pt, pl) = kernel, strides, dilation, pad
    setup_line = f"\n    {setup}" if setup else ""
    return f"""for (int64_t ky = 0; ky < {L(kh)}; ++ky) {{
  const int64_t iy = oy * {L(sh)} - {L(pt)} + ky * {L(dh)};
  if (iy < 0 || iy >= {L(h)}) continue;
  for (int64_t kx = 0; kx < {L(kw)}; ++kx) {{
    const float* restrict row = x + iy * {L(w)};
    const int64_t ix0 = kx * {L(dw)} - {L(pl)};
    int64_t lo = ix0 >= 0 ? 0 : ({L(sw - 1)} - ix0) / {L(sw)};
    int64_t hi = ix0 >= {L(w)} ? 0 : ({L(w + sw - 1)} - ix0) / {L(sw)};{setup_line}
    hi = hi < {L(ow)} ? hi : {L(ow)};
    const int64_t body = lo + (hi - lo) / 8 * 8;
    for (int64_t ox = lo; ox < body; ox += 8) {{
      for (int64_t j = 0; j < 8; ++j) {{
        const float v = row[ix0 + (ox + j) * {L(sw)}];
        {update.format(y="y[ox + j]")}
      }}
    }}
    for (int64_t ox = body; ox < hi; ++ox) {{
      const float v = row[ix0 + ox * {L(sw)}];
      {update.format(y="y[ox]")}
    }}
  }}
}}"""


def pool_loops(ctx, init: str, step: str, finish: str, ctype: str = "float") -> str:
    """Loops over every output of a 2-D pool; `step` sees `v` (an input element) and `in_pad`
    counting; `finish` writes `y[...]`."""
    n, c, h, w = ctx.inputs[0].shape
    _, _, oh, ow = ctx.outputs[0].shape
    kh, kw = ctx.attrs.pool_size
    sh, sw = ctx.attrs.strides
    dh, dw = ctx.attrs.dilation
    pt, pl, pb, pr = ctx.attrs.padding
    return f"""  for (int64_t plane = 0; plane < {L(n * c)}; ++plane) {{
    const {ctype}* x = in0 + plane * {L(h * w)};
    {ctype}* y = out0 + plane * {L(oh * ow)};
    for (int64_t oy = 0; oy < {L(oh)}; ++oy) {{
      for (int64_t ox = 0; ox < {L(ow)}; ++ox) {{
{indent_block(init, 4)}
        for (int64_t ky = 0; ky < {L(kh)}; ++ky) {{
          const int64_t iy = oy * {L(sh)} - {L(pt)} + ky * {L(dh)};
          if (iy >= {L(h + pb)}) break;
          for (int64_t kx = 0; kx < {L(kw)}; ++kx) {{
            const int64_t ix = ox * {L(sw)} - {L(pl)} + kx * {L(dw)};
            if (ix >= {L(w + pr)}) break;
            in_padded += 1;
            if (iy < 0 || iy >= {L(h)} || ix < 0 || ix >= {L(w)}) continue;
            {{
              const {ctype} v = x[iy * {L(w)} + ix];
{indent_block(step, 7)}
            }}
          }}
        }}
{indent_block(finish, 4)}
      }}
    }}
  }}"""


def _max_pool2d(ctx) -> str:
    dtype = ctx.inputs[0].dtype
    if dtype != "float32":   # int8/uint8: padding never wins, every window holds an input element
        t = c_type(dtype)
        return pool_loops(ctx, "int32_t best = INT32_MIN;\nint64_t in_padded = 0;",
                           "best = (int32_t)v > best ? (int32_t)v : best;",
                           "(void)in_padded;\ny[oy * %s + ox] = (%s)best;" % (L(ctx.outputs[0].shape[3]), t), t)
    ctx.need("math.h")
    return _max_pool_rows(ctx, ctx.use("byoc_select_f32"))


def _max_pool_rows(ctx, select: str) -> str:
    """float32 max pool by output rows (_row_taps). Padding never wins: only input elements are compared;
    NaN propagates like numpy's maximum."""
    n, c, h, w = ctx.inputs[0].shape
    _, _, oh, ow = ctx.outputs[0].shape
    if n * c * oh * ow == 0:
        return ""
    a = ctx.attrs
    taps = _row_taps(h, w, a.pool_size, a.strides, a.dilation, a.padding[:2], ow, "",
                     f"{{y}} = {select}((v > {{y}}) | (v != v), v, {{y}});")
    kh, kw = a.pool_size
    return plane_tasks(ctx, n * c, oh * ow * kh * kw, f"""const float* restrict x = in0 + plane * {L(h * w)};
for (int64_t oy = 0; oy < {L(oh)}; ++oy) {{
  float* restrict y = out0 + plane * {L(oh * ow)} + oy * {L(ow)};
  for (int64_t ox = 0; ox < {L(ow)}; ++ox) y[ox] = -INFINITY;
{indent_block(taps, 1)}
}}""")


def _avg_pool2d(ctx) -> str:
    count = "in_padded" if ctx.attrs.count_include_pad else "in_input"
    dtype = ctx.inputs[0].dtype
    if dtype != "float32":   # int8/uint8: integer mean, ties to even (op/pool.py divide_round_even)
        t = c_type(dtype)
        if ctx.attrs.rounding == "tflite":   # TFLite's: ties away from zero (C division truncates)
            rounded = "int64_t q = total > 0 ? (total + cnt / 2) / cnt : (total - cnt / 2) / cnt;\n"
        else:
            rounded = ("const int64_t a = total < 0 ? -total : total;\n"
                       "  int64_t q = a / cnt;\n  const int64_t r = a - q * cnt;\n"
                       "  if (2 * r > cnt || (2 * r == cnt && (q & 1))) ++q;\n  if (total < 0) q = -q;\n")
        finish = (f"(void)in_padded;\n(void)in_input;\n{{\n"
                  f"  const int64_t cnt = {count} > 0 ? {count} : 1;\n"
                  f"  {rounded}"
                  f"  y[oy * {L(ctx.outputs[0].shape[3])} + ox] = ({t})q;\n}}")
        return pool_loops(ctx, "int64_t total = 0;\nint64_t in_padded = 0;\nint64_t in_input = 0;",
                           "total += (int64_t)v;\nin_input += 1;", finish, t)
    return pool_loops(ctx, "double total = 0.0;\nint64_t in_padded = 0;\nint64_t in_input = 0;",
                       "total += (double)v;\nin_input += 1;",
                       f"(void)in_padded;\n(void)in_input;\n"
                       f"y[oy * {L(ctx.outputs[0].shape[3])} + ox] = "
                       f"(float)(total / (double)({count} > 0 ? {count} : 1));")


def _global_avg_pool2d(ctx) -> str:
    n, c, h, w = ctx.inputs[0].shape
    # eight independent double partial sums: a vectorizable loop without reassociating one chain
    body = h * w // 8 * 8
    sums = (f"for (int64_t i = 0; i < {L(body)}; i += 8)\n  for (int j = 0; j < 8; ++j) part[j] += (double)x[i + j];\n"
            if body else "")
    sums += f"for (int64_t i = {L(body)}; i < {L(h * w)}; ++i) part[0] += (double)x[i];\n" if h * w > body else ""
    return flat_loop(n * c, f"""const float* restrict x = in0 + plane * {L(h * w)};
double part[8] = {{0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}};
{sums}out0[plane] = (float)((((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7])))
                      / {double_literal(float(h * w) or 1.0)});""", var="plane")


def _batch_norm(ctx) -> str:
    ctx.need("math.h")
    ctx.need("string.h")
    data = ctx.inputs[0]
    outer, channels, inner = axis_split(data.shape, ctx.attrs.axis)
    copies = "\n".join(f"  memcpy(out{k}, in{k + 2}, {L(channels)} * sizeof(float));" for k in (1, 2)) \
        if channels else ""
    # Per channel y = x * s + t with s = gamma / sqrt(var + eps), t = beta - mean * s, in double and rounded
    # once: no division per element, and the inner loop is a plain multiply-add the compiler vectorizes.
    s = "(double)in1[ch] / deviation" if ctx.attrs.scale else "1.0 / deviation"
    t = "(double)in2[ch]" if ctx.attrs.center else "0.0"
    loops = "" if size_of(data.shape) == 0 else f"""  for (int64_t o = 0; o < {L(outer)}; ++o) {{
    for (int64_t ch = 0; ch < {L(channels)}; ++ch) {{
      const double deviation = sqrt((double)in4[ch] + {double_literal(ctx.attrs.epsilon)});
      const double s = {s};
      const double t = {t} - (double)in3[ch] * s;
      const float* restrict x = in0 + (o * {L(channels)} + ch) * {L(inner)};
      float* restrict y = out0 + (o * {L(channels)} + ch) * {L(inner)};
      for (int64_t i = 0; i < {L(inner)}; ++i) y[i] = (float)((double)x[i] * s + t);
    }}
  }}"""
    return "\n".join(part for part in (loops, copies) if part)


def _lanes(ctx, body: str) -> str:
    """Loops over every 1-D lane of in0/out0 along attrs.axis; `body` sees the lane as `x`/`y`
    (element l at x[l * inner])."""
    data = ctx.inputs[0]
    t = "double" if data.dtype == "float64" else "float"
    outer, extent, inner = axis_split(data.shape, ctx.attrs.axis)
    if size_of(data.shape) == 0:
        return ""
    return f"""  for (int64_t o = 0; o < {L(outer)}; ++o) {{
    for (int64_t i = 0; i < {L(inner)}; ++i) {{
      const {t}* x = in0 + o * {L(extent * inner)} + i;
      {t}* y = out0 + o * {L(extent * inner)} + i;
{indent_block(body, 3)}
    }}
  }}"""


def _softmax(ctx) -> str:
    ctx.need("math.h")
    _, extent, inner = axis_split(ctx.inputs[0].shape, ctx.attrs.axis)
    t, exp = ("double", "exp") if ctx.inputs[0].dtype == "float64" else ("float", "expf")
    # Subtract the maximum so exp never overflows; sum in double.
    return _lanes(ctx, f"""{t} top = x[0];
double total = 0.0;
for (int64_t l = 1; l < {L(extent)}; ++l) {{
  const {t} v = x[l * {L(inner)}];
  if (v > top || v != v) top = v; /* a running maximum rarely changes: the branch predicts well */
}}
for (int64_t l = 0; l < {L(extent)}; ++l) {{
  const {t} e = {exp}(x[l * {L(inner)}] - top);
  y[l * {L(inner)}] = e;
  total += (double)e;
}}
for (int64_t l = 0; l < {L(extent)}; ++l) y[l * {L(inner)}] = ({t})((double)y[l * {L(inner)}] / total);""")


def _lrn(ctx) -> str:
    ctx.need("math.h")
    _, channels, inner = axis_split(ctx.inputs[0].shape, ctx.attrs.axis)
    size = ctx.attrs.size
    before, after = (size - 1) // 2, size // 2
    # Window of channel c: (size-1)/2 channels before it, size/2 after it, clipped to the tensor.
    return _lanes(ctx, f"""for (int64_t ch = 0; ch < {L(channels)}; ++ch) {{
  const int64_t first = ch - {L(before)} < 0 ? 0 : ch - {L(before)};
  const int64_t last = ch + {L(after)} >= {L(channels)} ? {L(channels - 1)} : ch + {L(after)};
  double squares = 0.0;
  for (int64_t j = first; j <= last; ++j) {{
    const double v = (double)x[j * {L(inner)}];
    squares += v * v;
  }}
  y[ch * {L(inner)}] = (float)((double)x[ch * {L(inner)}] /
      pow({double_literal(ctx.attrs.bias)} + {double_literal(ctx.attrs.alpha / size)} * squares,
          {double_literal(ctx.attrs.beta)}));
}}""")


def _batch_matmul(ctx) -> str:
    a, b = ctx.inputs
    t = c_type(a.dtype)
    ta, tb = ctx.attrs.transpose_a, ctx.attrs.transpose_b
    batch, m, k, n = matmul_dims(a.shape, b.shape, ta, tb)
    count = size_of(batch)
    if count * m * n == 0:
        return ""
    # Where each batch element's matrices start (broadcast batch dims repeat an operand).
    offsets = []
    for operand in (a, b):
        own = operand.shape[:-2]
        flat = np.arange(size_of(own), dtype=np.int64).reshape(own) if own else np.zeros((), np.int64)
        full = np.broadcast_to(flat, batch).ravel() * (operand.shape[-1] * operand.shape[-2])
        offsets.append(full)
    arrays = f"""  {int64_array("a_offset", offsets[0])}
  {int64_array("b_offset", offsets[1])}
"""
    if t == "float":
        sam, sak = (1, m) if ta else (k, 1)
        sbk, sbn = (1, k) if tb else (n, 1)
        return arrays + flat_loop(count, f"{ctx.use('byoc_host_gemm')}({L(m)}, {L(n)}, {L(k)}, in0 + a_offset[bi], "
                                         f"{L(sam)}, {L(sak)}, in1 + b_offset[bi], {L(sbk)}, {L(sbn)}, "
                                         f"out0 + bi * {L(m * n)}, {L(n)}, 1);", var="bi")
    a_at = (lambda i: f"x[({i}) * {L(m)} + m]") if ta else (lambda i: f"x[m * {L(k)} + {i}]")
    b_at = (lambda i: f"w[n * {L(k)} + {i}]") if tb else (lambda i: f"w[({i}) * {L(n)} + n]")
    inner = flat_loop(m, flat_loop(n, f"""{_dot(a_at, b_at, k)}
y[m * {L(n)} + n] = ({t})((acc[0] + acc[1]) + (acc[2] + acc[3]));""", var="n", indent=0), var="m", indent=0)
    return arrays + flat_loop(count, f"""const {t}* x = in0 + a_offset[bi];
const {t}* w = in1 + b_offset[bi];
{t}* y = out0 + bi * {L(m * n)};
{inner}""", var="bi")


def _layer_norm(ctx) -> str:
    ctx.need("math.h")
    data, gamma, beta = ctx.inputs
    axis = ctx.attrs.axis % data.ndim
    outer = size_of(data.shape[:axis])
    normalized = data.shape[axis:]
    inner = size_of(normalized)
    if outer * inner == 0:
        return ""
    strides = {"x": contiguous_strides(normalized), "g": broadcast_strides(gamma.shape, normalized),
               "b": broadcast_strides(beta.shape, normalized)}
    scale = loop_nest(normalized, strides, lambda off: (
        f"y[{off['x']}] = (float)(((double)x[{off['x']}] - mean) * inv * (double)in1[{off['g']}] "
        f"+ (double)in2[{off['b']}]);"), indent=0, prefix="s")
    return flat_loop(outer, f"""const float* x = in0 + o * {L(inner)};
float* y = out0 + o * {L(inner)};
double total = 0.0;
for (int64_t i = 0; i < {L(inner)}; ++i) total += (double)x[i];
const double mean = total / {double_literal(float(inner))};
double squares = 0.0;
for (int64_t i = 0; i < {L(inner)}; ++i) {{
  const double d = (double)x[i] - mean;
  squares += d * d;
}}
const double inv = 1.0 / sqrt(squares / {double_literal(float(inner))} + {double_literal(ctx.attrs.epsilon)});
{scale}""", var="o")


RULES = {
    "nn.batch_matmul": _batch_matmul,
    "nn.layer_norm": _layer_norm,
    "nn.dense": _dense,
    "nn.matmul": _matmul,
    "nn.bias_add": _bias_add,
    "nn.conv2d": _conv2d,
    "nn.max_pool2d": _max_pool2d,
    "nn.avg_pool2d": _avg_pool2d,
    "nn.global_avg_pool2d": _global_avg_pool2d,
    "nn.batch_norm": _batch_norm,
    "nn.softmax": _softmax,
    "nn.lrn": _lrn,
}
