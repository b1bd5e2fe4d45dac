"""Small pieces of C text the kernel rules share: helper functions, strides, strided loop nests.

Literals come from byoc_compiler.ctext, like every other C text byoc writes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ...ctext import c_type, int_literal


# Small static functions kernels may use: name -> (headers, definition). The driver emits the
# ones a kernel asked for, each under an include guard, so concatenated kernels share them.
HELPERS = {
    # c ? a : b on floats without a jump: gcc -O2 keeps a float ternary as a conditional branch,
    # which mispredicts on data (relu on random signs runs ~20x slower than this).
    "byoc_select_f32": (("string.h",), """static inline float byoc_select_f32(int c, float a, float b) {
  uint32_t ua, ub;
  const uint32_t m = 0u - (uint32_t)(c != 0);
  memcpy(&ua, &a, sizeof ua);
  memcpy(&ub, &b, sizeof ub);
  ua = (ua & m) | (ub & ~m);
  memcpy(&a, &ua, sizeof a);
  return a;
}"""),
    # IEEE binary16 <-> float/double without a half type (C99 has none portably). Both directions
    # are exact where the value fits; to half rounds to nearest, ties to even, from the double value.
    "byoc_f16_to_f32": (("math.h",), """static inline float byoc_f16_to_f32(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  float v;
  if (e == 0x1f) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexpf((float)m, -24);
  else v = ldexpf((float)(m | 0x400), e - 25);
  return (h & 0x8000u) ? -v : v;
}"""),
    "byoc_f64_to_f16": (("math.h",), """static inline uint16_t byoc_f64_to_f16(double x) {
  const uint16_t sign = signbit(x) ? 0x8000u : 0u;
  double a = fabs(x), q, r;
  int e, k;
  uint32_t m;
  if (isnan(x)) return (uint16_t)(sign | 0x7e00u);
  if (a >= 65520.0) return (uint16_t)(sign | 0x7c00u);    /* halfway to 2^16 and beyond round to inf */
  if (a < 6.103515625e-05) {                              /* below 2^-14: subnormal, steps of 2^-24 */
    e = 0;
    q = a * 16777216.0;
  } else {
    (void)frexp(a, &k);                                   /* a = f * 2^k, f in [0.5, 1) */
    e = k + 14;                                           /* biased exponent of 2^(k-1) */
    q = ldexp(a, 11 - k);                                 /* in [1024, 2048), exact */
  }
  m = (uint32_t)floor(q);
  r = q - (double)m;
  if (r > 0.5 || (r == 0.5 && (m & 1u))) ++m;
  if (e == 0) return (uint16_t)(sign | m);                /* m == 1024 is the smallest normal's bits */
  if (m == 2048u) { m = 1024u; ++e; }
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | ((uint32_t)e << 10) | (m - 1024u));
}"""),
    # needs byoc_f64_to_f16 before it (HELPER_DEPS)
    "byoc_f32_to_f16": ((), """static inline uint16_t byoc_f32_to_f16(float x) { return byoc_f64_to_f16((double)x); }"""),
    # Two's complement wrap-around to a narrower signed type without implementation-defined casts.
    "byoc_wrap_i8": ((), """static inline int8_t byoc_wrap_i8(int64_t v) {
  return (int8_t)((int32_t)(((uint32_t)(uint64_t)v & 0xffu) ^ 0x80u) - 0x80);
}"""),
    "byoc_wrap_i16": ((), """static inline int16_t byoc_wrap_i16(int64_t v) {
  return (int16_t)((int32_t)(((uint32_t)(uint64_t)v & 0xffffu) ^ 0x8000u) - 0x8000);
}"""),
    "byoc_wrap_i32": ((), """static inline int32_t byoc_wrap_i32(int64_t v) {
  const uint32_t u = (uint32_t)(uint64_t)v;
  return u >= 0x80000000u ? (int32_t)(u - 0x80000000u) - INT32_MAX - 1 : (int32_t)u;
}"""),
    # min(max(v, 0), 1) that keeps NaN (numpy's clip does); two plain selects, which compilers if-convert
    # and vectorize (a nested conditional stays a branch).
    "byoc_unit_clamp": ((), """static inline double byoc_unit_clamp(double v) {
  const double low = v < 0.0 ? 0.0 : v;
  return low > 1.0 ? 1.0 : low;
}"""),
    # x * Phi(x): the exact form with erf, or (approximate) the tanh formula; in double, rounded once.
    "byoc_gelu_f32": (("math.h",), """static inline float byoc_gelu_f32(float x, int approximate) {
  const double v = (double)x;
  if (approximate) {
    return (float)(0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
  }
  return (float)(0.5 * v * (1.0 + erf(v * 0.7071067811865476)));
}"""),
}


# helper -> the helpers its definition calls (emitted before it). One function per helper: a static
# function a kernel does not call would be an unused-function warning (an error under -Werror).
HELPER_DEPS = {"byoc_f32_to_f16": ("byoc_f64_to_f16",)}


def helper_definition(name: str) -> str:
    guard = f"BYOC_HELPER_{name.upper()}_"
    return f"#ifndef {guard}\n#define {guard}\n{HELPERS[name][1]}\n#endif"


def size_of(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def axis_split(shape, axis: int) -> tuple[int, int, int]:
    """(outer, extent, inner) of a contiguous tensor around `axis`."""
    axis = axis % len(shape)
    return size_of(shape[:axis]), shape[axis], size_of(shape[axis + 1:])


def contiguous_strides(shape: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= int(d)
    return strides[::-1]


def broadcast_strides(shape: Sequence[int], out_shape: Sequence[int]) -> list[int]:
    """Strides that read a contiguous tensor of `shape` broadcast to `out_shape` (0 on broadcast dims)."""
    lead = len(out_shape) - len(shape)
    own = contiguous_strides(shape)
    return [0] * lead + [0 if shape[i] == 1 and out_shape[lead + i] != 1 else own[i] for i in range(len(shape))]


def coalesce(shape: Sequence[int], strides: Mapping[str, Sequence[int]]) -> list[tuple[int, dict[str, int]]]:
    """Loop dims (extent, {operand: stride}) with unit dims dropped and mergeable neighbours merged.

    Two neighbouring dims merge when every operand steps through them as one
    (stride[i] == stride[i+1] * extent[i+1]), so a same-shape elementwise op
    becomes one flat loop and a broadcast becomes the fewest nested loops.
    """
    dims = [(int(n), {k: int(s[i]) for k, s in strides.items()}) for i, n in enumerate(shape) if n != 1]
    merged: list[tuple[int, dict[str, int]]] = []
    for extent, st in dims:
        if merged:
            prev_extent, prev = merged[-1]
            if all(prev[k] == st[k] * extent for k in st):
                merged[-1] = (prev_extent * extent, st)
                continue
        merged.append((extent, st))
    return merged


def _term(base: str, var: str, stride: int) -> str:
    if stride == 0:
        return base or "0"
    step = var if stride == 1 else f"{var} * {int_literal(stride)}"
    return f"{base} + {step}" if base else step


def loop_nest(shape: Sequence[int], strides: Mapping[str, Sequence[int]],
              body: Callable[[dict[str, str]], str], indent: int = 1, prefix: str = "") -> str:
    """Loops over `shape`; `body(offsets)` gets each operand's element offset as C text.

    Offsets are built by one multiply-add per loop level (no division); the
    innermost one is inlined in the body so the compiler sees a plain stride.
    """
    if size_of(shape) == 0:
        return ""
    dims = coalesce(shape, strides)
    pad = "  " * indent
    lines: list[str] = []
    offsets = {k: "" for k in strides}
    for level, (extent, st) in enumerate(dims):
        var = f"{prefix}i{level}"
        lines.append(f"{pad}for (int64_t {var} = 0; {var} < {int_literal(extent)}; ++{var}) {{")
        pad += "  "
        last = level == len(dims) - 1
        for name, stride in st.items():
            term = _term(offsets[name], var, stride)
            if last or term == (offsets[name] or "0"):
                offsets[name] = term if term != "0" else ""
            else:
                local = f"{prefix}{name}_{level}"
                lines.append(f"{pad}const int64_t {local} = {term};")
                offsets[name] = local
    text = body({k: v or "0" for k, v in offsets.items()})
    lines.extend(pad + line for line in text.splitlines())
    for _ in dims:
        pad = pad[:-2]
        lines.append(f"{pad}}}")
    return "\n".join(lines)


def plane_tasks(ctx, planes: int, plane_cost: int, body: str) -> str:
    """The core's statements running `body` (it sees `plane` and the kernel's in*/out* pointers) for
    every plane in [0, planes), in tasks of whole planes on the runtime's pool: a static task function
    is added to the kernel. A task gets at least ~2^18 units of `plane_cost` (a hand-off costs
    microseconds); the split depends on the shape alone, so every thread count computes the same bits."""
    per = min(planes, 2 ** 18 // max(1, plane_cost) + 1)
    tasks = -(-planes // per)
    ctx.need("byoc/parallel.h")
    pointers = [(f"const {c_type(t.dtype)}*", f"in{i}") for i, t in enumerate(ctx.inputs)]
    pointers += [(f"{c_type(t.dtype)}*", f"out{i}") for i, t in enumerate(ctx.outputs)]
    name = f"{ctx.symbol}_planes"
    fields = " ".join(f"{t} {n};" for t, n in pointers)
    unpack = "\n".join(f"  {t} restrict {n} = a->{n};\n  (void){n};" for t, n in pointers)
    P, N = int_literal(per), int_literal(planes)
    ctx.functions.append(f"""typedef struct {{ {fields} }} {name}_args;
static void {name}(int32_t task, int32_t n_tasks, void* arg) {{
  const {name}_args* a = (const {name}_args*)arg;
{unpack}
  const int64_t first = (int64_t)task * {P};
  const int64_t end = first + {P} < {N} ? first + {P} : {N};
  (void)n_tasks;
  for (int64_t plane = first; plane < end; ++plane) {{
{indent_block(body, 2)}
  }}
}}""")
    assign = " ".join(f"args.{n} = {n};" for _, n in pointers)
    call = f"{name}(0, 1, &args);" if tasks == 1 else f"(void)byoc_parallel_for({tasks}, {name}, &args);"
    return f"  {name}_args args;\n  {assign}\n  {call}"


def indent_block(text: str, levels: int = 1) -> str:
    pad = "  " * levels
    return "\n".join(pad + line if line else line for line in text.splitlines())


def flat_loop(n: int, body: str, var: str = "i", indent: int = 1) -> str:
    """`for (var = 0; var < n; ++var) { body }`, nothing for n == 0."""
    if n == 0:
        return ""
    pad = "  " * indent
    inner = "\n".join(pad + "  " + line for line in body.splitlines())
    return f"{pad}for (int64_t {var} = 0; {var} < {int_literal(n)}; ++{var}) {{\n{inner}\n{pad}}}"



@dataclass(frozen=True)
class Conv2d:
    """The sizes of a 2-D NCHW convolution call (input n c h w, weight o cg kh kw, output oh ow),
    unpacked once for the float and the integer kernel writers."""
    n: int
    c: int
    h: int
    w: int
    o: int
    cg: int
    kh: int
    kw: int
    oh: int
    ow: int
    sh: int
    sw: int
    dh: int
    dw: int
    pt: int
    pl: int
    per_group: int      # output channels per group

    @classmethod
    def of(cls, ctx) -> "Conv2d":
        (n, c, h, w), (o, cg, kh, kw) = ctx.inputs[0].shape, ctx.inputs[1].shape
        _, _, oh, ow = ctx.outputs[0].shape
        a = ctx.attrs
        return cls(n, c, h, w, o, cg, kh, kw, oh, ow, *a.strides, *a.dilation, *a.padding[:2], o // a.groups)


def conv_window(g: Conv2d, body: str, indent: int) -> str:
    """The ky/kx loops over the taps of output (oy, ox); taps whose input row `iy` or column `ix` lies in
    the padding are skipped. `body` runs per tap and sees iy, ix, ky, kx."""
    L = int_literal
    lines = [f"for (int64_t ky = 0; ky < {L(g.kh)}; ++ky) {{",
             f"  const int64_t iy = oy * {L(g.sh)} - {L(g.pt)} + ky * {L(g.dh)};",
             f"  if (iy < 0 || iy >= {L(g.h)}) continue;",
             f"  for (int64_t kx = 0; kx < {L(g.kw)}; ++kx) {{",
             f"    const int64_t ix = ox * {L(g.sw)} - {L(g.pl)} + kx * {L(g.dw)};",
             f"    if (ix < 0 || ix >= {L(g.w)}) continue;",
             *("    " + line for line in body.splitlines()),
             "  }",
             "}"]
    pad = "  " * indent
    return "\n".join(pad + line for line in lines)
