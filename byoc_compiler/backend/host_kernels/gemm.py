"""The host's one GEMM: float32 C = A * B in register tiles over packed panels of B, for dense, matmul and
(through im2col panels) conv2d.

Written once here as C text and emitted as static helpers (cwriter.HELPERS' mechanism), so every
host.c that needs it carries one copy; it is deliberately small and portable (the host stands for
"whatever no vendor took"), not ccompiler's library.

How it gets vector speed without -march: the 4x16 register tile keeps four rows of 16 float
accumulators in arrays whose every loop has a constant trip count and restrict-qualified operands,
so gcc and clang vectorize it for the toolchain's baseline ISA (SSE2 on x86-64: 16-20 GFLOP/s per
core measured, NEON on aarch64). On x86-64 with glibc, the tile and the dot product are also
cloned for AVX2 and AVX-512 (gcc/clang `target_clones`: one function per ISA, the loader's ifunc
resolver picks one for the CPU it runs on; ~85 GFLOP/s on an AVX-512 core), so a binary built for
the baseline still uses the CPU's widest vectors; BYOC_HOST_NO_CLONES turns that off.

Accumulation is in float (like every BLAS and the peer runtimes), 16 partial sums per output row
along K blocks of 256: results differ from the double-accumulating reference by the float32
rounding of a sum, which the whole-model check's error bounds model.
"""
from __future__ import annotations

MR, NR, KC = 4, 16, 256

_CLONES = """#if defined(__x86_64__) && defined(__GNUC__) && defined(__GLIBC__) && !defined(BYOC_FREESTANDING) \\
    && !defined(BYOC_HOST_NO_CLONES) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define BYOC_HOST_CLONES __attribute__((target_clones("default", "avx2", "avx512f")))
#endif
#endif
#ifndef BYOC_HOST_CLONES
#define BYOC_HOST_CLONES
#endif
#define BYOC_HOST_MR %d
#define BYOC_HOST_NR %d
#define BYOC_HOST_KC %d""" % (MR, NR, KC)


def _tile() -> str:
    rows = range(MR)
    clamp = "\n".join(f"  const float* restrict a{i} = a + (mr > {i} ? {i} : mr - 1) * sam;" for i in rows)
    acc = "\n".join(f"  float c{i}[{NR}] = {{0.0f}};" for i in rows)
    loads = " ".join(f"const float x{i} = a{i}[k * sak];" for i in rows)
    update = " ".join(f"c{i}[j] += x{i} * b[j];" for i in rows)
    stores = "\n".join(f"""  if (mr > {i}) {{
    float* restrict y = c + {i} * scm;
    if (add) for (int64_t j = 0; j < nr; ++j) y[j * scn] += c{i}[j];
    else for (int64_t j = 0; j < nr; ++j) y[j * scn] = c{i}[j];
  }}""" for i in rows)
    # Rows past mr read the last real row (valid memory) and are never stored: no zero-padded copy of A.
    return f"""/* c[i * scm + j * scn] (+)= sum over k < kc of a[i * sam + k * sak] * bp[k * NR + j], i < mr, j < nr */
BYOC_HOST_CLONES static void byoc_host_tile(int64_t kc, const float* a, int64_t sam, int64_t sak, int64_t mr,
                                            const float* restrict bp, float* restrict c, int64_t scm,
                                            int64_t scn, int64_t nr, int add) {{
{clamp}
{acc}
  for (int64_t k = 0; k < kc; ++k) {{
    const float* restrict b = bp + k * {NR};
    {loads}
    for (int j = 0; j < {NR}; ++j) {{ {update} }}
  }}
{stores}
}}"""


_DOT = """/* sum of x[i] * w[i], i < k, in 16 float partial sums (vectorizable without reassociating) */
BYOC_HOST_CLONES static float byoc_host_dot(int64_t k, const float* restrict x, const float* restrict w) {
  float acc[16] = {0.0f};
  float tail = 0.0f;
  const int64_t body = k - k % 16;    /* bounds computed first: gcc -O3 misreads `i + 16 <= k` loops */
  for (int64_t i = 0; i < body; i += 16)
    for (int j = 0; j < 16; ++j) acc[j] += x[i + j] * w[i + j];
  for (int64_t i = body; i < k; ++i) tail += x[i] * w[i];
  for (int j = 0; j < 8; ++j) acc[j] += acc[j + 8];
  for (int j = 0; j < 4; ++j) acc[j] += acc[j + 4];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + tail;
}"""

# B panels: kc rows of NR floats, zero past the last column, filled by a callback so that dense/matmul
# (a strided matrix) and conv2d (im2col of the input) share the blocked loops; column panels are the
# tasks handed to the runtime's thread pool (byoc/parallel.h).
_PANELS = """typedef void (*byoc_host_fill)(const void* ctx, int64_t k0, int64_t kc, int64_t n0, int64_t nr, float* bp);

typedef struct {
  int64_t m, n, k, sam, sak, scm, scn, per_task;
  const float* a;
  byoc_host_fill fill;
  const void* ctx;
  float* c;
} byoc_host_gemm_job;

/* panels [task * per_task, (task + 1) * per_task) of NR columns, each packed into this task's own buffer */
static void byoc_host_gemm_task(int32_t task, int32_t n_tasks, void* arg) {
  const byoc_host_gemm_job* g = (const byoc_host_gemm_job*)arg;
  float bp[BYOC_HOST_KC * BYOC_HOST_NR];
  const int64_t first = (int64_t)task * g->per_task * BYOC_HOST_NR;
  const int64_t end = first + g->per_task * BYOC_HOST_NR < g->n ? first + g->per_task * BYOC_HOST_NR : g->n;
  (void)n_tasks;
  for (int64_t n0 = first; n0 < end; n0 += BYOC_HOST_NR) {
    const int64_t nr = end - n0 < BYOC_HOST_NR ? end - n0 : BYOC_HOST_NR;
    if (g->k == 0) {
      for (int64_t i = 0; i < g->m; ++i)
        for (int64_t j = 0; j < nr; ++j) g->c[i * g->scm + (n0 + j) * g->scn] = 0.0f;
      continue;
    }
    for (int64_t k0 = 0; k0 < g->k; k0 += BYOC_HOST_KC) {
      const int64_t kc = g->k - k0 < BYOC_HOST_KC ? g->k - k0 : BYOC_HOST_KC;
      g->fill(g->ctx, k0, kc, n0, nr, bp);
      for (int64_t m0 = 0; m0 < g->m; m0 += BYOC_HOST_MR)
        byoc_host_tile(kc, g->a + m0 * g->sam + k0 * g->sak, g->sam, g->sak,
                       g->m - m0 < BYOC_HOST_MR ? g->m - m0 : BYOC_HOST_MR, bp, g->c + m0 * g->scm + n0 * g->scn,
                       g->scm, g->scn, nr, k0 > 0);
    }
  }
}

/* c (m x n, strides scm/scn) = a (m x k, strides sam/sak) * B (k x n, given by fill), in tasks of whole
 * column panels on the runtime's pool. A task gets at least ~2^20 flops (a hand-off costs microseconds)
 * and the split depends on the shape alone, so every thread count computes the same bits. */
static void byoc_host_gemm_panels(int64_t m, int64_t n, int64_t k, const float* a, int64_t sam, int64_t sak,
                                  byoc_host_fill fill, const void* ctx, float* c, int64_t scm, int64_t scn) {
  byoc_host_gemm_job g;
  const int64_t panels = (n + BYOC_HOST_NR - 1) / BYOC_HOST_NR;
  const int64_t panel_flops = 2 * m * (k > 0 ? k : 1) * BYOC_HOST_NR;
  int64_t per_task = (INT64_C(1) << 20) / (panel_flops > 0 ? panel_flops : 1) + 1;
  if (per_task < (panels + 4095) / 4096) per_task = (panels + 4095) / 4096;
  g.m = m;
  g.n = n;
  g.k = k;
  g.sam = sam;
  g.sak = sak;
  g.scm = scm;
  g.scn = scn;
  g.per_task = per_task;
  g.a = a;
  g.fill = fill;
  g.ctx = ctx;
  g.c = c;
  if (panels <= per_task) byoc_host_gemm_task(0, 1, &g);
  else (void)byoc_parallel_for((int32_t)((panels + per_task - 1) / per_task), byoc_host_gemm_task, &g);
}"""

_MATRIX = """typedef struct { const float* b; int64_t sbk, sbn; } byoc_host_matrix;

/* panel of a strided matrix: bp[kk * NR + j] = b[(k0 + kk) * sbk + (n0 + j) * sbn] */
static void byoc_host_fill_matrix(const void* ctx, int64_t k0, int64_t kc, int64_t n0, int64_t nr, float* bp) {
  const byoc_host_matrix* g = (const byoc_host_matrix*)ctx;
  for (int64_t kk = 0; kk < kc; ++kk) {
    const float* restrict row = g->b + (k0 + kk) * g->sbk + n0 * g->sbn;
    float* restrict dst = bp + kk * BYOC_HOST_NR;
    int64_t j = 0;
    if (g->sbn == 1) for (; j < nr; ++j) dst[j] = row[j];
    else for (; j < nr; ++j) dst[j] = row[j * g->sbn];
    for (; j < BYOC_HOST_NR; ++j) dst[j] = 0.0f;
  }
}

static void byoc_host_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t sam, int64_t sak,
                           const float* b, int64_t sbk, int64_t sbn, float* c, int64_t scm, int64_t scn) {
  byoc_host_matrix g;
  g.b = b;
  g.sbk = sbk;
  g.sbn = sbn;
  byoc_host_gemm_panels(m, n, k, a, sam, sak, byoc_host_fill_matrix, &g, c, scm, scn);
}"""

# im2col one panel at a time: the NR output pixels of the panel split into runs within one output row,
# and each run of one tap row reads the input row in place (a contiguous copy at stride 1), with
# zeros where the window leaves the input. Nothing the size of the whole im2col matrix is allocated.
_IM2COL = """typedef struct {
  const float* x;     /* the group's first input channel */
  int64_t h, w, kh, kw, ow, sh, sw, dh, dw, pt, pl;
} byoc_host_conv;

static void byoc_host_fill_im2col(const void* ctx, int64_t k0, int64_t kc, int64_t n0, int64_t nr, float* bp) {
  const byoc_host_conv* g = (const byoc_host_conv*)ctx;
  for (int64_t kk = 0; kk < kc; ++kk) {
    const int64_t tap = (k0 + kk) % (g->kh * g->kw);
    const int64_t ky = tap / g->kw, kx = tap % g->kw;
    const float* plane = g->x + (k0 + kk) / (g->kh * g->kw) * g->h * g->w;
    float* restrict dst = bp + kk * BYOC_HOST_NR;
    int64_t j = 0;
    while (j < nr) {
      const int64_t p = n0 + j, oy = p / g->ow, ox0 = p % g->ow;
      const int64_t run = g->ow - ox0 < nr - j ? g->ow - ox0 : nr - j;
      const int64_t iy = oy * g->sh - g->pt + ky * g->dh;
      const int64_t ix0 = ox0 * g->sw - g->pl + kx * g->dw;
      if (iy < 0 || iy >= g->h) {
        for (int64_t t = 0; t < run; ++t) dst[j + t] = 0.0f;
      } else {
        /* pixels [lo, hi) of the run read inside the row; bounds first, so the copy loop is plain */
        const float* restrict src = plane + iy * g->w;
        int64_t lo = ix0 >= 0 ? 0 : (g->sw - 1 - ix0) / g->sw;
        int64_t hi = ix0 >= g->w ? 0 : (g->w - ix0 + g->sw - 1) / g->sw;
        hi = hi < run ? hi : run;
        lo = lo < hi ? lo : hi;
        float* restrict out = dst + j;
        for (int64_t t = 0; t < lo; ++t) out[t] = 0.0f;
        if (g->sw == 1) for (int64_t t = lo; t < hi; ++t) out[t] = src[ix0 + t];
        else for (int64_t t = lo; t < hi; ++t) out[t] = src[ix0 + t * g->sw];
        for (int64_t t = hi; t < run; ++t) out[t] = 0.0f;
      }
      j += run;
    }
    for (; j < BYOC_HOST_NR; ++j) dst[j] = 0.0f;
  }
}"""

HELPERS = {
    "byoc_host_isa": ((), _CLONES),
    "byoc_host_tile": ((), _tile()),
    "byoc_host_dot": ((), _DOT),
    "byoc_host_gemm_panels": (("byoc/parallel.h",), _PANELS),
    "byoc_host_gemm": ((), _MATRIX),
    "byoc_host_fill_im2col": ((), _IM2COL),
}

HELPER_DEPS = {
    "byoc_host_tile": ("byoc_host_isa",),
    "byoc_host_dot": ("byoc_host_isa",),
    "byoc_host_gemm_panels": ("byoc_host_tile",),
    "byoc_host_gemm": ("byoc_host_gemm_panels",),
    "byoc_host_fill_im2col": ("byoc_host_gemm_panels",),
}
