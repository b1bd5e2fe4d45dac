/* ck_stem.c - convolutions over few input channels at stride 2: a CNN's stem (ResNet-50's 7x7/2 over 3
 * channels, MobileNet's and EfficientNet's 3x3/2).
 *
 * On the gemm core such a convolution packs an im2col of K = 3 x 7 x 7 = 147 rows for every 32 output pixels,
 * copied at stride 2 one float at a time, while K is too short for the micro-kernel to pay that back (ResNet-50's
 * conv1 ran at 0.69-0.8x onnxruntime's speed, MobileNet's 3x3/2 at 35 GFLOP/s). Here the input is copied once per
 * image, each zero-bordered row as its even columns, then its odd ones, so output pixels x .. x + 31 of one output
 * row read, for every tap, 32 neighbouring floats of one half-row: the tile (MR channels x two vectors of pixels)
 * loads them where they lie through one offset per tap, the weight broadcast from its packed slivers, and writes
 * the output (NCHW) directly with bias, residual and activation applied in registers. Every element is one fused
 * multiply-add chain over the taps in order from 0, then + bias, + residual, activation, as on the gemm core, so
 * the bits are the same as there; tasks are bands of whole output rows fixed by the shape.
 */
#include <float.h>
#include <string.h>

#include "ck_stem.h"

static int64_t ck_stem_round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

int ck_stem_takes(const ck_conv2d_params *p) {
  int64_t oh, ow;
  if (ck_conv2d_output_hw(p, &oh, &ow) != CK_OK) return 0;
  return p->groups == 1 && p->channels >= 2 && p->channels <= CK_STEM_MAX_CHANNELS &&
         p->kernel_h * p->kernel_w > 1 && p->channels * p->kernel_h * p->kernel_w <= CK_KC && p->stride_w == 2 &&
         ow >= 16;
}

/* The split copy: per channel and padded row, the even half (padded column 2k at k) then the odd half (2k + 1
 * at half + k), each `half` floats: enough for every read of a tile of CK_NR_MAX pixels that starts before ow
 * (columns past a row's end are zeros and computed into dropped outputs). */
typedef struct {
  int64_t oh, ow, half, row, plane; /* row = 2 * half floats; plane = padded_h rows */
} ck_stem_geometry;

static ck_stem_geometry ck_stem_geometry_of(const ck_conv2d_params *p) {
  ck_stem_geometry g;
  const int64_t pw = p->width + p->pad_left + p->pad_right;
  const int64_t reach = ((p->kernel_w - 1) * p->dilation_w) / 2; /* the widest tap's offset into a half */
  ck_conv2d_output_hw(p, &g.oh, &g.ow);
  g.half = ck_stem_round_up(g.ow, CK_NR_MAX) + reach;
  if (g.half < (pw + 1) / 2) g.half = (pw + 1) / 2;
  g.row = 2 * g.half;
  g.plane = (p->height + p->pad_top + p->pad_bottom) * g.row;
  return g;
}

size_t ck_stem_workspace_bytes(const ck_conv2d_params *p) {
  return CK_ALIGN + sizeof(float) * (size_t)(p->channels * ck_stem_geometry_of(p).plane);
}

/* ---- the copy ------------------------------------------------------------------------------- */
typedef struct {
  const ck_conv2d_params *p;
  ck_stem_geometry g;
  const float *in; /* one image */
  float *copy;
} ck_stem_copy_job;

/* Padded rows [r0, r1) of all channels (row r: channel r / padded_h). */
static void ck_stem_copy_rows(void *ctx, int64_t r0, int64_t r1) {
  const ck_stem_copy_job *job = (const ck_stem_copy_job *)ctx;
  const ck_conv2d_params *p = job->p;
  const int64_t padded_h = p->height + p->pad_top + p->pad_bottom, pl = p->pad_left, w = p->width;
  int64_t r, h, k;
  for (r = r0; r < r1; ++r) {
    const int64_t c = r / padded_h, y = r % padded_h - p->pad_top;
    float *restrict dst = job->copy + r * job->g.row;
    const float *restrict src;
    if (y < 0 || y >= p->height) {
      memset(dst, 0, sizeof(float) * (size_t)job->g.row);
      continue;
    }
    src = job->in + (c * p->height + y) * w;
    for (h = 0; h < 2; ++h) { /* half h, k: padded column 2k + h = input column 2k + h - pl, inside [0, w) for */
      float *restrict d = dst + h * job->g.half;
      const int64_t lo = (pl - h + 1) / 2, hi = (w + pl - h + 1) / 2; /* k in [lo, hi) */
      for (k = 0; k < lo; ++k) d[k] = 0.0f;
      for (k = lo; k < hi; ++k) d[k] = src[2 * k + h - pl];
      for (k = hi; k < job->g.half; ++k) d[k] = 0.0f;
    }
  }
}

/* ---- the tile --------------------------------------------------------------------------------
 * c[i][j] for rows i < mr (channels) and columns j < nr (pixels) of an MR x NV*VF tile: sum over taps q < kc of
 * a[q * a_ks + i * a_is] * b[boff[q] + j], one chain per element from 0 in tap order, then + bias[i],
 * + residual[i * ldc + j], activation. Rows past mr read row mr - 1 (in bounds) and are dropped; columns past nr
 * are computed and dropped. Each ISA has a full tile (NV 2) and a half one (NV 1) for a row's last pixels. */
typedef void (*ck_stem_tile_fn)(int64_t kc, const float *a, int64_t a_ks, int64_t a_is, int64_t mr,
                                const int64_t *boff, const float *b, float *c, int64_t ldc, int64_t nr,
                                const float *bias, const float *residual, int32_t activation);

/* One row's accumulators after the chain: + bias, + residual, activation (ck_activate's rules), stored; a
 * partial row (nr < NV * VF) through lanes, the same operations per element. */
#define CK_STEM_STORE_ROW(VEC, IVEC, VF, NV)                                                          \
  {                                                                                                 \
    float *row = c + i * ldc;                                                                       \
    const int whole = nr == (NV) * (VF);                                                            \
    int h;                                                                                          \
    for (h = 0; h < (NV); ++h) {                                                                    \
      VEC v = acc[i][h];                                                                            \
      const VEC zero = (VEC){0};                                                                    \
      if (bias != NULL) {                                                                           \
        CK_STEM_SPLAT(VEC, VF, bi, bias[i]);                                                        \
        v = v + bi;                                                                                 \
      }                                                                                             \
      if (residual != NULL && whole) {                                                              \
        VEC r;                                                                                      \
        memcpy(&r, residual + i * ldc + h * (VF), sizeof r);                                        \
        v = v + r;                                                                                  \
      }                                                                                             \
      if (activation == CK_ACT_RELU && (residual == NULL || whole)) {                               \
        v = (VEC)((IVEC)v & (v > zero));                                                            \
      } else if (activation == CK_ACT_RELU6 && (residual == NULL || whole)) {                       \
        CK_STEM_SPLAT(VEC, VF, six, 6.0f);                                                          \
        const IVEC high = v > six;                                                                  \
        v = (VEC)((IVEC)v & ~(v < zero));                                                           \
        v = (VEC)(((IVEC)v & ~high) | ((IVEC)six & high));                                          \
      }                                                                                             \
      acc[i][h] = v;                                                                                \
    }                                                                                               \
    if (whole) {                                                                                    \
      for (h = 0; h < (NV); ++h) memcpy(row + h * (VF), &acc[i][h], sizeof acc[i][h]);              \
    } else {                                                                                        \
      float lanes[(NV) * (VF)];                                                                     \
      for (h = 0; h < (NV); ++h) memcpy(lanes + h * (VF), &acc[i][h], sizeof acc[i][h]);            \
      for (j = 0; j < nr; ++j) row[j] = residual != NULL ? lanes[j] + residual[i * ldc + j] : lanes[j]; \
      if (residual != NULL) ck_activate(activation, nr, row);                                       \
    }                                                                                               \
  }

#if defined(__GNUC__)
/* A vector of copies of one float: scalar - vector splats (x - 0 == x, even -0); where float math runs in double
 * (FLT_EVAL_METHOD != 0, s390x in ISO mode) that would narrow, so fill the lanes. */
#if FLT_EVAL_METHOD == 0
#define CK_STEM_SPLAT(VEC, VF, V, VALUE) const VEC V = (VALUE) - (VEC){0}
#else
#define CK_STEM_SPLAT(VEC, VF, V, VALUE) \
  VEC V;                                 \
  {                                      \
    int lane_;                           \
    for (lane_ = 0; lane_ < (VF); ++lane_) V[lane_] = (VALUE); \
  }
#endif
#define CK_DEFINE_STEM_TILE(NAME, MR, VF, NV)                                                         \
  static void NAME(int64_t kc, const float *a, int64_t a_ks, int64_t a_is, int64_t mr,                \
                   const int64_t *restrict boff, const float *restrict b, float *restrict c, int64_t ldc, \
                   int64_t nr, const float *restrict bias, const float *restrict residual,        \
                   int32_t activation) {                                                           \
    typedef float vec __attribute__((vector_size((VF) * sizeof(float))));                          \
    typedef int32_t ivec __attribute__((vector_size((VF) * sizeof(float))));                       \
    vec acc[MR][NV];                                                                                \
    const float *restrict ar[MR];                                                                   \
    int64_t q, j;                                                                                   \
    int i, h;                                                                                       \
    for (i = 0; i < (MR); ++i) {                                                                    \
      ar[i] = a + (i < mr ? i : mr - 1) * a_is;                                                     \
      for (h = 0; h < (NV); ++h) acc[i][h] = (vec){0};                                              \
    }                                                                                               \
    for (q = 0; q < kc; ++q) {                                                                      \
      vec bv[NV];                                                                                   \
      for (h = 0; h < (NV); ++h) memcpy(&bv[h], b + boff[q] + h * (VF), sizeof bv[h]);              \
      for (i = 0; i < (MR); ++i) {                                                                  \
        CK_STEM_SPLAT(vec, VF, ai, ar[i][q * a_ks]);                                                \
        for (h = 0; h < (NV); ++h) acc[i][h] = acc[i][h] + ai * bv[h];                              \
      }                                                                                             \
    }                                                                                               \
    for (i = 0; i < mr; ++i) CK_STEM_STORE_ROW(vec, ivec, VF, NV)                                   \
  }
#define CK_STEM_VECTORS 1
#else /* other compilers: plain loops, the same order per element */
#define CK_DEFINE_STEM_TILE(NAME, MR, VF, NV)                                                         \
  static void NAME(int64_t kc, const float *a, int64_t a_ks, int64_t a_is, int64_t mr,                \
                   const int64_t *restrict boff, const float *restrict b, float *restrict c, int64_t ldc, \
                   int64_t nr, const float *restrict bias, const float *restrict residual,        \
                   int32_t activation) {                                                           \
    float acc[(NV) * (VF)];                                                                         \
    int64_t q, j;                                                                                   \
    int i;                                                                                          \
    for (i = 0; i < mr; ++i) {                                                                      \
      float *row = c + i * ldc;                                                                     \
      for (j = 0; j < nr; ++j) acc[j] = 0.0f;                                                       \
      for (q = 0; q < kc; ++q)                                                                      \
        for (j = 0; j < nr; ++j) acc[j] = CK_FMA(a[q * a_ks + i * a_is], b[boff[q] + j], acc[j]);   \
      for (j = 0; j < nr; ++j) {                                                                    \
        row[j] = acc[j] + (bias != NULL ? bias[i] : 0.0f);                                          \
        if (residual != NULL) row[j] += residual[i * ldc + j];                                      \
      }                                                                                             \
      ck_activate(activation, nr, row);                                                             \
    }                                                                                               \
    (void)(MR);                                                                                     \
  }
#endif

CK_CONTRACT CK_DEFINE_STEM_TILE(ck_stem_tile_baseline, CK_MR, CK_NR / 2, 2)
CK_CONTRACT CK_DEFINE_STEM_TILE(ck_stem_half_baseline, CK_MR, CK_NR / 2, 1)

/* The tiles of the gemm core's instruction set (as its micro-kernel): full and half, rows, full width. */
typedef struct {
  ck_stem_tile_fn full, half;
  int64_t mr, nr;
} ck_stem_tiles;

#if defined(__x86_64__) && defined(CK_STEM_VECTORS) && !defined(CK_NO_DISPATCH)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_STEM_TILE(ck_stem_tile_avx2, 6, 8, 2)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_STEM_TILE(ck_stem_half_avx2, 6, 8, 1)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_STEM_TILE(ck_stem_tile_avx512, 8, 16, 2)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_STEM_TILE(ck_stem_half_avx512, 8, 16, 1)

static ck_stem_tiles ck_stem_tiles_of(void) {
  static const ck_stem_tiles by_isa[] = {{ck_stem_tile_baseline, ck_stem_half_baseline, CK_MR, CK_NR},
                                         {ck_stem_tile_avx2, ck_stem_half_avx2, 6, 16},
                                         {ck_stem_tile_avx512, ck_stem_half_avx512, 8, 32}};
  return by_isa[ck_micro_kernel_isa()];
}
#else
static ck_stem_tiles ck_stem_tiles_of(void) {
  const ck_stem_tiles tiles = {ck_stem_tile_baseline, ck_stem_half_baseline, CK_MR, CK_NR};
  return tiles;
}
#endif

/* ---- the driver ------------------------------------------------------------------------------ */
/* Tasks: bands of whole output rows, about CK_STEM_TASKS of them, each a multiple of the rows that end a plane's
 * band on a cache line (16 floats), so neighbouring tasks (other threads) never write one line. */
#define CK_STEM_TASKS 16

typedef struct {
  const ck_conv2d_params *p;
  ck_stem_geometry g;
  const float *copy, *a, *bias, *residual;
  int64_t a_ks, a_is, a_sliver, kdim, band;
  const int64_t *boff;
  int32_t activation;
  float *out;
} ck_stem_job;

static void ck_stem_task(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_stem_job *job = (const ck_stem_job *)ctx;
  const int64_t og = job->p->out_channels, pixels = job->g.oh * job->g.ow, y0 = task * job->band;
  const int64_t y1 = y0 + job->band < job->g.oh ? y0 + job->band : job->g.oh;
  const ck_stem_tiles tiles = ck_stem_tiles_of();
  const int64_t mr = tiles.mr, nr = tiles.nr;
  int64_t y, o, x;
  (void)n_tasks;
  for (y = y0; y < y1; ++y) {
    const float *b = job->copy + y * job->p->stride_h * job->g.row;
    for (o = 0; o < og; o += mr) {
      /* rows o .. o + mr of the weight: within one packed 24-row sliver (mr divides 24), or OIHW rows */
      const float *a = job->a + (job->a_sliver ? o / CK_M_QUANTUM * CK_M_QUANTUM * job->kdim + o % CK_M_QUANTUM
                                               : o * job->kdim);
      for (x = 0; x < job->g.ow; x += nr) {
        const int64_t at = o * pixels + y * job->g.ow + x;
        /* a row's last pixels, at most half a tile: the half tile (ResNet-50's and MobileNet's 112-pixel rows
         * are 3.5 tiles of 32) */
        (job->g.ow - x <= nr / 2 ? tiles.half : tiles.full)(job->kdim, a, job->a_ks, job->a_is, og - o < mr ? og - o : mr, job->boff, b + x, job->out + at, pixels,
             job->g.ow - x < nr ? job->g.ow - x : nr, job->bias != NULL ? job->bias + o : NULL,
             job->residual != NULL ? job->residual + at : NULL, job->activation);
      }
    }
  }
}

static int64_t ck_stem_gcd(int64_t a, int64_t b) { return b == 0 ? a : ck_stem_gcd(b, a % b); }

int32_t ck_conv_stem(const ck_conv2d_params *p, const float *data, const float *weight, const float *packed,
                     const float *bias, const float *residual, int32_t activation, float *out, void *workspace) {
  ck_stem_job job;
  ck_stem_copy_job copy;
  int64_t boff[CK_KC], c, kh, kw, n;
  const int64_t line_rows = 16 / ck_stem_gcd(ck_stem_geometry_of(p).ow, 16);
  if (workspace == NULL || (weight == NULL && packed == NULL)) return CK_EBADPARAM;
  job.p = copy.p = p;
  job.g = copy.g = ck_stem_geometry_of(p);
  copy.copy = (float *)(void *)(((uintptr_t)workspace + (CK_ALIGN - 1)) & ~(uintptr_t)(CK_ALIGN - 1));
  job.copy = copy.copy;
  job.kdim = p->channels * p->kernel_h * p->kernel_w;
  job.a = packed != NULL ? packed : weight;
  job.a_sliver = packed != NULL; /* ck_pack_a_ahead: one K block (kdim <= CK_KC) of 24-row slivers */
  job.a_ks = packed != NULL ? CK_M_QUANTUM : 1;
  job.a_is = packed != NULL ? 1 : job.kdim;
  job.bias = bias;
  job.activation = activation;
  job.band = ck_stem_round_up((job.g.oh + CK_STEM_TASKS - 1) / CK_STEM_TASKS, line_rows);
  for (c = 0; c < p->channels; ++c) /* tap (c, kh, kw): padded column 2x + d of output column x, d = kw * dil */
    for (kh = 0; kh < p->kernel_h; ++kh)
      for (kw = 0; kw < p->kernel_w; ++kw) {
        const int64_t d = kw * p->dilation_w;
        boff[(c * p->kernel_h + kh) * p->kernel_w + kw] =
            c * job.g.plane + kh * p->dilation_h * job.g.row + d % 2 * job.g.half + d / 2;
      }
  job.boff = boff;
  for (n = 0; n < p->batch; ++n) {
    copy.in = data + n * p->channels * p->height * p->width;
    ck_parallel_range(p->channels * (p->height + p->pad_top + p->pad_bottom), ck_grain(job.g.row),
                      ck_stem_copy_rows, &copy);
    job.out = out + n * p->out_channels * job.g.oh * job.g.ow;
    job.residual = residual != NULL ? residual + n * p->out_channels * job.g.oh * job.g.ow : NULL;
    byoc_parallel_for((int32_t)((job.g.oh + job.band - 1) / job.band), ck_stem_task, &job);
  }
  return CK_OK;
}
