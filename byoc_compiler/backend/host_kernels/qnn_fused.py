"""Kernels of the quantized chains backend/host_fusion.py makes one host step: no int32 or float32 tensor.

- host.qnn_conv2d_requantize / host.qnn_dense_requantize: the int32 sums of one output row (conv) or one
  output element (dense, and convs whose sums need int64) stay in registers or a row on the stack; the bias
  is added with int32 wrap-around (the add kernel's) and each sum is requantized by qnn.requantize's own
  statements (qnn.requantize_store).
- host.qdq_add: quantize(relu?(add(dequantize(a), dequantize(b)))) per element with the float32 steps of the
  unfused kernels, each a statement of its own (no compiler contracts a product and a sum into one rounding).

The inputs are in0 (data), in1 (weight), in2 (bias, when the chain has one), or in0/in1 (the add's operands).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ctext import c_type, int_literal as L
from ...ir.expr import Call
from ...ir.visitor import post_order
from .cwriter import Conv2d, flat_loop, size_of
from .qnn import (_array, _wrap32, conv2d_outputs, quantize_store, requantize_channels, requantize_store,
                  requantize_tables, row_tap)

# Convs with at most this many output columns accumulate a row in a stack array (int32 per column); wider
# rows, and sums that need int64, accumulate one output at a time.
ROW_LIMIT = 1024


@dataclass
class _Op:
    """One op of the chain, seen as its own kernel would see it (for Conv2d.of)."""

    inputs: list
    outputs: list
    attrs: object


def _chain(ctx) -> dict[str, Call]:
    return {n.op.name: n for n in post_order(ctx.call.op.body) if isinstance(n, Call)}


def _bias(ctx, index: str) -> str:
    """`s = acc (+ bias[index])` with the add kernel's int32 wrap-around."""
    if len(ctx.inputs) < 3:
        return "const int32_t s = acc;"
    at = "0" if size_of(ctx.inputs[2].shape) == 1 else index
    return f"const int32_t s = (int32_t)((uint32_t)acc + (uint32_t)in2[{at}]);"


def _epilogue(ctx, req: Call, channel: str, dst: str) -> str:
    """Bias and requantization of the int32 `acc` of output channel `channel` into `dst`."""
    c = channel if requantize_channels(req.attrs) > 1 else "0"
    return (f"{_bias(ctx, channel)}\nconst int64_t c = {c};\n"
            + requantize_store(ctx, req.attrs, "s", dst, ctx.outputs[0].dtype))


def _indent(text: str, levels: int) -> str:
    return "\n".join("  " * levels + line for line in text.splitlines())


def _conv2d_requantize(ctx) -> str:
    chain = _chain(ctx)
    conv, req = chain["qnn.conv2d"], chain["qnn.requantize"]
    g = Conv2d.of(_Op(ctx.inputs[:2], [conv.checked_type], conv.attrs))
    kzp = conv.attrs.kernel_zero_point
    tables = [_array("kzp", "int32", [int(z) for z in list(kzp) * (g.o if len(kzp) == 1 else 1)]),
              *requantize_tables(req.attrs)]
    wide = g.cg * g.kh * g.kw * 255 * 255 >= 2 ** 31
    body = _conv_outputs(ctx, g, conv, req) if wide or g.ow > ROW_LIMIT else _conv_rows(ctx, g, conv, req)
    return "\n".join(tables) + "\n" + body


def _conv_rows(ctx, g: Conv2d, conv: Call, req: Call) -> str:
    """Per output row: for each weight tap, acc[ox] += (x - x_zp) * (w - w_zp) over the columns whose input is
    inside the image (the unfused kernel's branch-free row update), then the epilogue per column."""
    dst = f"out0[((b * {L(g.o)} + oc) * {L(g.oh)} + oy) * {L(g.ow)} + ox]"
    return f"""  for (int64_t b = 0; b < {L(g.n)}; ++b) {{
    for (int64_t oc = 0; oc < {L(g.o)}; ++oc) {{
      const int64_t first_channel = (oc / {L(g.per_group)}) * {L(g.cg)};
      for (int64_t oy = 0; oy < {L(g.oh)}; ++oy) {{
        int32_t row[{L(g.ow)}];
        for (int64_t ox = 0; ox < {L(g.ow)}; ++ox) row[ox] = 0;
        for (int64_t ic = 0; ic < {L(g.cg)}; ++ic) {{
          const {c_type(ctx.inputs[0].dtype)}* x = in0 + (b * {L(g.c)} + first_channel + ic) * {L(g.h * g.w)};
          for (int64_t ky = 0; ky < {L(g.kh)}; ++ky) {{
            const int64_t iy = oy * {L(g.sh)} - {L(g.pt)} + ky * {L(g.dh)};
            if (iy < 0 || iy >= {L(g.h)}) continue;
            for (int64_t kx = 0; kx < {L(g.kw)}; ++kx) {{
{row_tap(g, 14)}
              const int64_t base = iy * {L(g.w)} + shift;   /* base + ox * sw >= 0 for ox >= lo */
              for (int64_t ox = lo; ox < hi; ++ox)
                row[ox] += ((int32_t)x[base + ox * {L(g.sw)}] - {L(conv.attrs.input_zero_point)}) * wv;
            }}
          }}
        }}
        for (int64_t ox = 0; ox < {L(g.ow)}; ++ox) {{
          const int32_t acc = row[ox];
{_indent(_epilogue(ctx, req, "oc", dst), 5)}
        }}
      }}
    }}
  }}"""


def _conv_outputs(ctx, g: Conv2d, conv: Call, req: Call) -> str:
    """One output at a time, the sum in int64 wrapped to int32 (the unfused wide kernel's)."""
    dst = f"out0[((b * {L(g.o)} + oc) * {L(g.oh)} + oy) * {L(g.ow)} + ox]"
    finish = f"const int32_t acc = {_wrap32(ctx, 'sum')};\n" + _epilogue(ctx, req, "oc", dst)
    return conv2d_outputs(g, conv.attrs.input_zero_point, "sum", _indent(finish, 5))


def _dense_requantize(ctx) -> str:
    chain = _chain(ctx)
    dense, req = chain["qnn.dense"], chain["qnn.requantize"]
    x, wt = ctx.inputs[:2]
    k, units, rows = x.shape[-1], wt.shape[0], size_of(x.shape[:-1])
    wzp = list(dense.attrs.kernel_zero_point)
    tables = [_array("wzp", "int32", [int(z) for z in wzp * (units if len(wzp) == 1 else 1)]),
              *requantize_tables(req.attrs)]
    return "\n".join(tables) + f"""
  for (int64_t r = 0; r < {L(rows)}; ++r) {{
    for (int64_t u = 0; u < {L(units)}; ++u) {{
      int64_t sum = 0;
      for (int64_t j = 0; j < {L(k)}; ++j)
        sum += (int64_t)(((int32_t)in0[r * {L(k)} + j] - {L(dense.attrs.input_zero_point)}) *
                         ((int32_t)in1[u * {L(k)} + j] - wzp[u]));
      const int32_t acc = {_wrap32(ctx, "sum")};
{_indent(_epilogue(ctx, req, "u", f"out0[r * {L(units)} + u]"), 3)}
    }}
  }}"""


def _qdq_add(ctx) -> str:
    chain = _chain(ctx)
    dqs = [n for n in post_order(ctx.call.op.body) if isinstance(n, Call) and n.op.name == "qnn.dequantize"]
    quant = chain["qnn.quantize"]
    ctx.need("math.h")
    tables = []
    for k, dq in enumerate(dqs):
        tables += [_array(f"scale{k}", "float32", [dq.attrs.scale[0]]),
                   _array(f"zp{k}", "int64", [int(dq.attrs.zero_point[0])])]
    tables += [_array("scale", "float32", [quant.attrs.scale[0]]),
               _array("zp", "float32", [int(quant.attrs.zero_point[0])])]
    lines = [f"const float d{k} = (float)((int64_t)in{k}[i] - zp{k}[0]) * scale{k}[0];" for k in range(2)]
    lines.append("float sum = d0 + d1;")
    if "nn.relu" in chain:
        ctx.use("byoc_select_f32")
        lines.append("sum = byoc_select_f32(sum < 0.0f, 0.0f, sum);")
    lines.append(quantize_store(quant.attrs, "sum", "scale[0]", "zp[0]", "out0[i]", ctx.outputs[0].dtype))
    return "\n".join(tables) + "\n" + flat_loop(size_of(ctx.outputs[0].shape), "\n".join(lines))


RULES = {
    "host.qnn_conv2d_requantize": _conv2d_requantize,
    "host.qnn_dense_requantize": _dense_requantize,
    "host.qdq_add": _qdq_add,
}
