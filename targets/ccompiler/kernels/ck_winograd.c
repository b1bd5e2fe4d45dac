/* ck_winograd.c - stride-1 3x3 convolutions by Winograd's minimal filtering, F(m x m, 3 x 3), m = 2 or 4.
 *
 * The output is cut into m x m tiles; each tile of each input channel reads an alpha x alpha patch
 * (alpha = m + 2) of the zero-bordered input d and becomes V = B^T d B, each weight 3x3 g becomes
 * U = G g G^T (at codegen time: winograd.py's pack_weight), and for every one of the alpha^2
 * positions (i, j) the products summed over input channels are one matrix product
 * M[i,j] = U[i,j] (out x in) . V[i,j] (in x tiles), run on the gemm core's micro-kernels; the tile's output is
 * Y = A^T M A (+ bias, + residual, activation). F(2x2) multiplies 16 times per 4 outputs, F(4x4) 36 times per
 * 16, where the direct convolution multiplies 36 and 144 times.
 *
 * Numbers: the transforms add and subtract (F(4x4) also scales by 2, 4, 5, 8), so the sums carry the rounding
 * of the transformed operands as well as the products'; F(2x2) stays close to the direct convolution,
 * F(4x4) loses a few bits (its transformed values grow), which is why the codegen picks m per layer.
 *
 * Work: tiles in blocks of CK_WG_BLOCK_TILES, one task each (its input transform, then per pass of CK_WG_PASS_ROWS
 * output channels all positions' products and their output transform, in its thread's slot, so the block's
 * transformed data and the transformed weight stay in L2); planes of at most CK_WG_SHARED_TILES tiles (14x14,
 * 7x7) instead border and transform every tile at once (ranges of input channels on the pool), then run one task per position (its transformed weight and input read once) and the output transform in
 * ranges of output channels. Every output is one multiply-add chain over the input channels in a fixed order on
 * the same transformed values whatever the split, so every thread count gives the same bits. The transforms work
 * on CK_WG_LANES tiles at once in generic vectors (plain loops where the compiler has no vector shuffles),
 * compiled for AVX2 and AVX-512 too and following the gemm core's choice of instruction set.
 */
#include <string.h>

#include "ck_internal.h"

#ifndef CK_WG_BLOCK_TILES       /* (set on the command line: block-size experiments) */
#define CK_WG_BLOCK_TILES 32  /* tiles per task; one 32-column sliver of the products */
#endif
#ifndef CK_WG_SHARED_TILES
#define CK_WG_SHARED_TILES 64 /* at most this many tiles: every tile at once, then the products by position */
#endif
#ifndef CK_WG_PASS_ROWS
/* Output channels per pass of a block's products and output transform: the products of every position for this
 * many channels (16 x 72 x 32 floats, 144 KB) instead of all of them (288 KB at 128 channels), so the block's
 * transformed input, its products and the whole transformed weight (1.2 MB at 128 channels, read once per block)
 * fit in L2 together. With every channel at once the products took 1.2x the time of a run whose weight was two
 * positions' worth; in passes of 72 the layer (128 channels at 28x28) takes 0.85 of the time, one thread, in-process
 * A/B at load 5 (passes of 48 and 96 the same, 72 keeps 64 channels in one pass). */
#define CK_WG_PASS_ROWS 72
#endif
#define CK_WG_MAX_ALPHA 6
#define CK_WG_LANES 16 /* tiles transformed at once (see the transforms) */
/* Floats between one input channel's 32 columns and the next in the transformed input: 16 more than the 32, so
 * a group of lanes stored whole from a run's last columns stays in its own channel's row. */
#define CK_WG_VS (CK_N_QUANTUM + CK_WG_LANES)
/* Floats between one position's transformed input and the next's past their CK_WG_VS-float rows: without them the
 * positions lay a multiple of 4 KB apart (64 or 128 channels x 48 floats), so the input transform's 16 stores of one
 * lane group fell into one L1 set of 12 ways (with them the input transform took 0.75-0.8 of the time, ResNet-50's
 * 64 channels at 56x56 and 128 at 28x28, one thread, in-process A/B). */
#define CK_WG_POS_PAD 32
/* Floats past the bordered input and past a slot's products that lanes beyond a run's end may read. */
#define CK_WG_SLACK 128

#if defined(__GNUC__)
#define CK_WG_INLINE inline __attribute__((always_inline))
#else
#define CK_WG_INLINE inline
#endif

static int64_t ck_wg_round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }
static int64_t ck_wg_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- the plan: everything the shape decides ---------------------------------------------------- */

typedef struct {
  int64_t m, alpha, a2, oh, ow, ntx, nty, nt, ph, pw, plane, cin, cout, m24;
  int shared;          /* few tiles: every tile transformed at once, products by position, then the outputs */
  int64_t block_tiles; /* tiles per task (shared: all) */
  int64_t pass_rows;   /* output channels per pass of the products (shared: all, m24) */
  int64_t cols;        /* columns of the products: block_tiles on the 32-column grid */
  int64_t blocks, slots;
} ck_wg_plan;

static int ck_wg_plan_of(const ck_conv2d_params *p, int32_t m, ck_wg_plan *w) {
  int64_t oh, ow;
  if (m != 2 && m != 4) return 0;
  if (ck_conv2d_output_hw(p, &oh, &ow) != CK_OK) return 0;
  if (p->groups != 1 || p->kernel_h != 3 || p->kernel_w != 3 || p->stride_h != 1 || p->stride_w != 1 ||
      p->dilation_h != 1 || p->dilation_w != 1)
    return 0;
  w->m = m;
  w->alpha = m + 2;
  w->a2 = w->alpha * w->alpha;
  w->oh = oh;
  w->ow = ow;
  w->ntx = (ow + m - 1) / m;
  w->nty = (oh + m - 1) / m;
  w->nt = w->ntx * w->nty;
  w->pw = w->ntx * m + 2; /* the bordered copy covers every tile's patch, overhanging ones included */
  w->ph = w->nty * m + 2;
  w->cin = p->channels;
  w->cout = p->out_channels;
  w->m24 = ck_wg_round_up(p->out_channels, CK_M_QUANTUM);
  w->shared = w->nt <= CK_WG_SHARED_TILES;
  /* With few tiles a task borders its planes and transforms them in one phase, while another task borders the
   * next planes: lanes past a plane's last run read up to CK_WG_SLACK floats on, which must then be its own. */
  w->plane = w->ph * w->pw + (w->shared ? CK_WG_SLACK : 0);
  w->block_tiles = w->shared ? w->nt : CK_WG_BLOCK_TILES;
  w->cols = ck_wg_round_up(w->block_tiles, CK_N_QUANTUM);
  w->pass_rows = w->shared ? w->m24 : ck_wg_min(w->m24, CK_WG_PASS_ROWS);
  w->blocks = (w->nt + w->block_tiles - 1) / w->block_tiles;
  w->slots = w->shared ? 0 : ck_wg_min(BYOC_MAX_THREADS, w->blocks);
  return 1;
}

/* Floats of one position of the transformed input: per 32-column sliver, every channel's CK_WG_VS floats. */
static int64_t ck_wg_v_pos(const ck_wg_plan *w) { return w->cols / CK_N_QUANTUM * w->cin * CK_WG_VS + CK_WG_POS_PAD; }

/* Floats of the products of every position (one pass of a block's, or with shared every tile's), and of one slot
 * (blocked: a block's transformed input and one pass's products). */
static int64_t ck_wg_mm_pos(const ck_wg_plan *w) { return w->pass_rows * w->cols; }
static int64_t ck_wg_mm_floats(const ck_wg_plan *w) { return w->a2 * ck_wg_mm_pos(w) + CK_WG_SLACK; }
static int64_t ck_wg_slot_floats(const ck_wg_plan *w) { return w->a2 * ck_wg_v_pos(w) + ck_wg_mm_floats(w); }

static size_t ck_wg_bordered_bytes(const ck_wg_plan *w) {
  return CK_ALIGN + sizeof(float) * (size_t)(w->cin * w->plane + CK_WG_SLACK);
}

static size_t ck_wg_shared_bytes(const ck_wg_plan *w) {
  return w->shared ? 2 * CK_ALIGN + sizeof(float) * (size_t)(w->a2 * ck_wg_v_pos(w) + ck_wg_mm_floats(w)) : 0;
}

static size_t ck_wg_slot_bytes(const ck_wg_plan *w) { return CK_ALIGN + sizeof(float) * (size_t)ck_wg_slot_floats(w); }

size_t ck_conv2d_winograd_workspace_bytes(const ck_conv2d_params *p, int32_t m) {
  ck_wg_plan w;
  if (p == NULL || !ck_wg_plan_of(p, m, &w)) return 0;
  return ck_wg_bordered_bytes(&w) + ck_wg_shared_bytes(&w) + (size_t)w.slots * ck_wg_slot_bytes(&w);
}

size_t ck_conv2d_winograd_weight_bytes(const ck_conv2d_params *p, int32_t m) {
  ck_wg_plan w;
  if (p == NULL || !ck_wg_plan_of(p, m, &w)) return 0;
  return sizeof(float) * (size_t)(w.a2 * w.m24 * w.cin);
}

static float *ck_wg_align(uintptr_t at) {
  return (float *)(void *)((at + (CK_ALIGN - 1)) & ~(uintptr_t)(CK_ALIGN - 1));
}

/* ---- the transforms, on CK_WG_LANES neighbouring tiles of one tile row at once ---------------------
 * A run is at most CK_N_QUANTUM neighbouring tiles of one tile row, all in one 32-column sliver of the products,
 * taken CK_WG_LANES at a time (the lanes; past the run's end they compute on finite neighbours and are dropped):
 * patches of neighbouring tiles start m floats apart in a row of the bordered input (loads at stride m), their
 * transformed values and products sit side by side in the slivers, their outputs are m floats apart in an
 * output row. Every loop has constant bounds, so the compiler vectorizes it across the lanes. */

#if !defined(CK_WG_NO_VECTORS) && (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12))
/* The same transforms on generic vectors of the CK_WG_LANES lanes, taking the strided patches apart with
 * shuffles: the plain loops above left gcc gathering each lane's patch in 128-bit pieces through the stack and
 * reloading them as one 512-bit vector, a store-forwarding stall per vector that made the input transform take
 * longer than the products (F(2x2), 64 channels at 56x56). Same operations in the same order, so the same bits. */
#define CK_WG_VECTORS 1
typedef float ck_wgv __attribute__((vector_size(CK_WG_LANES * sizeof(float))));
typedef float ck_wgh __attribute__((vector_size(CK_WG_LANES / 2 * sizeof(float))));

/* (no vector is passed or returned by value: their ABI differs between the instruction sets) */
#define CK_WG_LOAD(v, p) memcpy(&(v), (p), sizeof(v))

/* *e = lanes p[l * m] for l < CK_WG_LANES */
static CK_WG_INLINE void ck_wg_every(int64_t m, const float *p, ck_wgv *e) {
  ck_wgv a, b;
  CK_WG_LOAD(a, p);
  CK_WG_LOAD(b, p + 16);
  if (m == 2) {
    *e = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  } else {
    ck_wgv c, d;
    ck_wgh lo, hi;
    CK_WG_LOAD(c, p + 32);
    CK_WG_LOAD(d, p + 48);
    lo = __builtin_shufflevector(a, b, 0, 4, 8, 12, 16, 20, 24, 28);
    hi = __builtin_shufflevector(c, d, 0, 4, 8, 12, 16, 20, 24, 28);
    *e = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  }
}

/* B^T d and A^T x on alpha vectors of lanes, for either vector width (statements, so one body serves both) */
#define CK_WG_BTV(m, d, y)                                  \
  do {                                                      \
    if ((m) == 2) {                                         \
      (y)[0] = (d)[0] - (d)[2];                             \
      (y)[1] = (d)[1] + (d)[2];                             \
      (y)[2] = (d)[2] - (d)[1];                             \
      (y)[3] = (d)[1] - (d)[3];                             \
    } else {                                                \
      (y)[0] = (4.0f * (d)[0] - 5.0f * (d)[2]) + (d)[4];    \
      (y)[1] = ((d)[3] + (d)[4]) - 4.0f * ((d)[1] + (d)[2]); \
      (y)[2] = ((d)[4] - (d)[3]) + 4.0f * ((d)[1] - (d)[2]); \
      (y)[3] = ((d)[4] - (d)[2]) + 2.0f * ((d)[3] - (d)[1]); \
      (y)[4] = ((d)[4] - (d)[2]) - 2.0f * ((d)[3] - (d)[1]); \
      (y)[5] = (4.0f * (d)[1] - 5.0f * (d)[3]) + (d)[5];    \
    }                                                       \
  } while (0)
#define CK_WG_ATV(T, m, x, y)                                                                          \
  do {                                                                                                 \
    if ((m) == 2) {                                                                                    \
      (y)[0] = ((x)[0] + (x)[1]) + (x)[2];                                                             \
      (y)[1] = ((x)[1] - (x)[2]) - (x)[3];                                                             \
    } else {                                                                                           \
      const T a_ = (x)[1] + (x)[2], b_ = (x)[1] - (x)[2], c_ = (x)[3] + (x)[4], e_ = (x)[3] - (x)[4]; \
      (y)[0] = ((x)[0] + a_) + c_;                                                                     \
      (y)[1] = b_ + 2.0f * e_;                                                                         \
      (y)[2] = a_ + 4.0f * c_;                                                                         \
      (y)[3] = (b_ + 8.0f * e_) + (x)[5];                                                              \
    }                                                                                                  \
  } while (0)

/* One group of lanes of one input channel (its patches from rows, rows pw apart, lanes m apart) -> V, position
 * pos at dst + pos * pos_stride; V is the vector type, EVERY gathers one patch column of its lanes. */
#define CK_WG_INPUT_GROUP(V, EVERY, m, pw, rows, dst, pos_stride)                           \
  do {                                                                                      \
    const int64_t alpha_ = (m) + 2;                                                         \
    V e_[CK_WG_MAX_ALPHA], h_[CK_WG_MAX_ALPHA][CK_WG_MAX_ALPHA], col_[CK_WG_MAX_ALPHA];    \
    V out_[CK_WG_MAX_ALPHA];                                                                \
    int64_t i_, j_, k_;                                                                     \
    for (i_ = 0; i_ < alpha_; ++i_) { /* along row i: h[i][j] = (d[i] B)[j] */             \
      for (j_ = 0; j_ < alpha_; ++j_) EVERY((m), (rows) + i_ * (pw) + j_, &e_[j_]);         \
      CK_WG_BTV((m), e_, h_[i_]);                                                           \
    }                                                                                       \
    for (j_ = 0; j_ < alpha_; ++j_) { /* down column j: V[k][j] = (B^T h)[k][j] */          \
      for (i_ = 0; i_ < alpha_; ++i_) col_[i_] = h_[i_][j_];                                \
      CK_WG_BTV((m), col_, out_);                                                           \
      for (k_ = 0; k_ < alpha_; ++k_)                                                       \
        memcpy((dst) + (k_ * alpha_ + j_) * (pos_stride), &out_[k_], sizeof out_[k_]);      \
    }                                                                                       \
  } while (0)

/* One group of lanes of one output row r: Y = A^T M A from src, y[a][b] = Y[a][b] of the lanes */
#define CK_WG_OUTPUT_Y(V, m, src, pos_stride, y)                                            \
  do {                                                                                      \
    const int64_t alpha_ = (m) + 2;                                                         \
    V x_[CK_WG_MAX_ALPHA], t_[CK_WG_MAX_ALPHA][4], col_[CK_WG_MAX_ALPHA];                  \
    int64_t i_, j_, a_, b_;                                                                 \
    for (i_ = 0; i_ < alpha_; ++i_) { /* along row i: t[i][b] = (M[i] A)[b] */             \
      for (j_ = 0; j_ < alpha_; ++j_) CK_WG_LOAD(x_[j_], (src) + (i_ * alpha_ + j_) * (pos_stride)); \
      CK_WG_ATV(V, (m), x_, t_[i_]);                                                        \
    }                                                                                       \
    for (b_ = 0; b_ < (m); ++b_) { /* down column b: Y[a][b] = (A^T t)[a][b] */             \
      V yb_[4];                                                                             \
      for (i_ = 0; i_ < alpha_; ++i_) col_[i_] = t_[i_][b_];                                \
      CK_WG_ATV(V, (m), col_, yb_);                                                         \
      for (a_ = 0; a_ < (m); ++a_) (y)[a_][b_] = yb_[a_];                                   \
    }                                                                                       \
  } while (0)

static CK_WG_INLINE void ck_wg_input_group(int64_t m, int64_t pw, const float *rows, float *dst, int64_t pos_stride) {
  CK_WG_INPUT_GROUP(ck_wgv, ck_wg_every, m, pw, rows, dst, pos_stride);
}

/* One group of lanes of one output row r: Y = A^T M A, z[a][l * m + b] = Y[a][b] of lane l. */
static CK_WG_INLINE void ck_wg_output_group(int64_t m, const float *src, int64_t pos_stride, float *z) {
  ck_wgv y[4][4];
  int64_t a;
  CK_WG_OUTPUT_Y(ck_wgv, m, src, pos_stride, y);
  for (a = 0; a < m; ++a) { /* tile l's m outputs side by side */
    float *za = z + a * CK_WG_LANES * 4;
    if (m == 2) {
      const ck_wgv lo = __builtin_shufflevector(y[a][0], y[a][1], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const ck_wgv hi = __builtin_shufflevector(y[a][0], y[a][1], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30,
                                                15, 31);
      memcpy(za, &lo, sizeof lo);
      memcpy(za + 16, &hi, sizeof hi);
    } else {
      const ck_wgv p0 = __builtin_shufflevector(y[a][0], y[a][2], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const ck_wgv p1 = __builtin_shufflevector(y[a][0], y[a][2], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30,
                                                15, 31);
      const ck_wgv q0 = __builtin_shufflevector(y[a][1], y[a][3], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const ck_wgv q1 = __builtin_shufflevector(y[a][1], y[a][3], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30,
                                                15, 31);
      /* p: (b0, b2) of each lane, q: (b1, b3): interleaved again, b0 b1 b2 b3 */
      const ck_wgv s0 = __builtin_shufflevector(p0, q0, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const ck_wgv s1 = __builtin_shufflevector(p0, q0, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      const ck_wgv s2 = __builtin_shufflevector(p1, q1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
      const ck_wgv s3 = __builtin_shufflevector(p1, q1, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
      memcpy(za, &s0, sizeof s0);
      memcpy(za + 16, &s1, sizeof s1);
      memcpy(za + 32, &s2, sizeof s2);
      memcpy(za + 48, &s3, sizeof s3);
    }
  }
}

/* The same on half a group, lanes in 8-float vectors, for AVX2: its 16 registers held a 16-float vector in two,
 * and gcc kept the transforms' temporaries on the stack (297 stack references in the F(2x2) input transform
 * against 41 under AVX-512). The caller runs the two halves of a group; each lane computes exactly as above. */
typedef float ck_wgv8 __attribute__((vector_size(8 * sizeof(float))));
typedef float ck_wgv4 __attribute__((vector_size(4 * sizeof(float))));

static CK_WG_INLINE void ck_wg_every8(int64_t m, const float *p, ck_wgv8 *e) {
  ck_wgv8 a, b;
  CK_WG_LOAD(a, p);
  CK_WG_LOAD(b, p + 8);
  if (m == 2) {
    *e = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
  } else {
    ck_wgv8 c, d;
    ck_wgv4 lo, hi;
    CK_WG_LOAD(c, p + 16);
    CK_WG_LOAD(d, p + 24);
    lo = __builtin_shufflevector(a, b, 0, 4, 8, 12);
    hi = __builtin_shufflevector(c, d, 0, 4, 8, 12);
    *e = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
  }
}

static CK_WG_INLINE void ck_wg_input_half(int64_t m, int64_t pw, const float *rows, float *dst, int64_t pos_stride) {
  CK_WG_INPUT_GROUP(ck_wgv8, ck_wg_every8, m, pw, rows, dst, pos_stride);
}

/* z[a * 4 * CK_WG_LANES + l * m + b] = Y[a][b] of lane l < 8 */
static CK_WG_INLINE void ck_wg_output_half(int64_t m, const float *src, int64_t pos_stride, float *z) {
  ck_wgv8 y[4][4];
  int64_t a;
  CK_WG_OUTPUT_Y(ck_wgv8, m, src, pos_stride, y);
  for (a = 0; a < m; ++a) {
    float *za = z + a * CK_WG_LANES * 4;
    if (m == 2) {
      const ck_wgv8 lo = __builtin_shufflevector(y[a][0], y[a][1], 0, 8, 1, 9, 2, 10, 3, 11);
      const ck_wgv8 hi = __builtin_shufflevector(y[a][0], y[a][1], 4, 12, 5, 13, 6, 14, 7, 15);
      memcpy(za, &lo, sizeof lo);
      memcpy(za + 8, &hi, sizeof hi);
    } else {
      const ck_wgv8 p0 = __builtin_shufflevector(y[a][0], y[a][2], 0, 8, 1, 9, 2, 10, 3, 11);
      const ck_wgv8 p1 = __builtin_shufflevector(y[a][0], y[a][2], 4, 12, 5, 13, 6, 14, 7, 15);
      const ck_wgv8 q0 = __builtin_shufflevector(y[a][1], y[a][3], 0, 8, 1, 9, 2, 10, 3, 11);
      const ck_wgv8 q1 = __builtin_shufflevector(y[a][1], y[a][3], 4, 12, 5, 13, 6, 14, 7, 15);
      const ck_wgv8 s0 = __builtin_shufflevector(p0, q0, 0, 8, 1, 9, 2, 10, 3, 11);
      const ck_wgv8 s1 = __builtin_shufflevector(p0, q0, 4, 12, 5, 13, 6, 14, 7, 15);
      const ck_wgv8 s2 = __builtin_shufflevector(p1, q1, 0, 8, 1, 9, 2, 10, 3, 11);
      const ck_wgv8 s3 = __builtin_shufflevector(p1, q1, 4, 12, 5, 13, 6, 14, 7, 15);
      memcpy(za, &s0, sizeof s0);
      memcpy(za + 8, &s1, sizeof s1);
      memcpy(za + 16, &s2, sizeof s2);
      memcpy(za + 24, &s3, sizeof s3);
    }
  }
}

/* A group as two halves where narrow (constant at every call: the branch folds away) */
static CK_WG_INLINE void ck_wg_input_lanes(int narrow, int64_t m, int64_t pw, const float *rows, float *dst,
                                           int64_t pos_stride) {
  if (narrow) {
    ck_wg_input_half(m, pw, rows, dst, pos_stride);
    ck_wg_input_half(m, pw, rows + 8 * m, dst + 8, pos_stride);
  } else {
    ck_wg_input_group(m, pw, rows, dst, pos_stride);
  }
}
static CK_WG_INLINE void ck_wg_output_lanes(int narrow, int64_t m, const float *src, int64_t pos_stride, float *z) {
  if (narrow) {
    ck_wg_output_half(m, src, pos_stride, z);
    ck_wg_output_half(m, src + 8, pos_stride, z + 8 * m);
  } else {
    ck_wg_output_group(m, src, pos_stride, z);
  }
}
#else
#define ck_wg_input_lanes(narrow, m, pw, rows, dst, pos_stride) ck_wg_input_group(m, pw, rows, dst, pos_stride)
#define ck_wg_output_lanes(narrow, m, src, pos_stride, z) ck_wg_output_group(m, src, pos_stride, z)
#endif

#if !defined(CK_WG_VECTORS)
/* y[i][l] = (B^T x[.][l])[i]: alpha points of CK_WG_LANES lanes in, alpha out (rows CK_WG_LANES apart) */
static CK_WG_INLINE void ck_wg_bt(int64_t m, const float *restrict x, float *restrict y) {
  int64_t l;
  const float *d0 = x, *d1 = x + CK_WG_LANES, *d2 = x + 2 * CK_WG_LANES, *d3 = x + 3 * CK_WG_LANES;
  if (m == 2) {
    for (l = 0; l < CK_WG_LANES; ++l) {
      y[l] = d0[l] - d2[l];
      y[CK_WG_LANES + l] = d1[l] + d2[l];
      y[2 * CK_WG_LANES + l] = d2[l] - d1[l];
      y[3 * CK_WG_LANES + l] = d1[l] - d3[l];
    }
    return;
  }
  for (l = 0; l < CK_WG_LANES; ++l) {
    const float *d4 = x + 4 * CK_WG_LANES, *d5 = x + 5 * CK_WG_LANES;
    y[l] = (4.0f * d0[l] - 5.0f * d2[l]) + d4[l];
    y[CK_WG_LANES + l] = (d3[l] + d4[l]) - 4.0f * (d1[l] + d2[l]);
    y[2 * CK_WG_LANES + l] = (d4[l] - d3[l]) + 4.0f * (d1[l] - d2[l]);
    y[3 * CK_WG_LANES + l] = (d4[l] - d2[l]) + 2.0f * (d3[l] - d1[l]);
    y[4 * CK_WG_LANES + l] = (d4[l] - d2[l]) - 2.0f * (d3[l] - d1[l]);
    y[5 * CK_WG_LANES + l] = (4.0f * d1[l] - 5.0f * d3[l]) + d5[l];
  }
}

/* y[a][l] = (A^T x[.][l])[a]: alpha points in, m out */
static CK_WG_INLINE void ck_wg_at(int64_t m, const float *restrict x, float *restrict y) {
  int64_t l;
  const float *x0 = x, *x1 = x + CK_WG_LANES, *x2 = x + 2 * CK_WG_LANES, *x3 = x + 3 * CK_WG_LANES;
  if (m == 2) {
    for (l = 0; l < CK_WG_LANES; ++l) {
      y[l] = (x0[l] + x1[l]) + x2[l];
      y[CK_WG_LANES + l] = (x1[l] - x2[l]) - x3[l];
    }
    return;
  }
  for (l = 0; l < CK_WG_LANES; ++l) {
    const float *x4 = x + 4 * CK_WG_LANES, *x5 = x + 5 * CK_WG_LANES;
    const float a = x1[l] + x2[l], b = x1[l] - x2[l], c = x3[l] + x4[l], e = x3[l] - x4[l];
    y[l] = (x0[l] + a) + c;
    y[CK_WG_LANES + l] = b + 2.0f * e;
    y[2 * CK_WG_LANES + l] = a + 4.0f * c;
    y[3 * CK_WG_LANES + l] = (b + 8.0f * e) + x5[l];
  }
}

#endif

/* A run: n tiles of tile row ty from tile column tx, at column col of the task's products. */
typedef struct {
  int64_t ty, tx, n, col;
} ck_wg_run;


#if !defined(CK_WG_VECTORS)
/* One group of lanes of one input channel: patches from rows (the first lane's; rows pw apart, lanes m apart)
 * -> V, position pos at dst + pos * pos_stride. */
static CK_WG_INLINE void ck_wg_input_group(int64_t m, int64_t pw, const float *rows, float *dst, int64_t pos_stride) {
  const int64_t alpha = m + 2;
  float e[CK_WG_MAX_ALPHA * CK_WG_LANES], h[CK_WG_MAX_ALPHA * CK_WG_MAX_ALPHA * CK_WG_LANES];
  float col[CK_WG_MAX_ALPHA * CK_WG_LANES], out[CK_WG_MAX_ALPHA * CK_WG_LANES];
  int64_t i, j, k, l;
  for (i = 0; i < alpha; ++i) { /* along row i: h[i][j] = (d[i] B)[j] */
    for (j = 0; j < alpha; ++j)
      for (l = 0; l < CK_WG_LANES; ++l) e[j * CK_WG_LANES + l] = rows[i * pw + l * m + j];
    ck_wg_bt(m, e, h + i * alpha * CK_WG_LANES);
  }
  for (j = 0; j < alpha; ++j) { /* down column j: V[k][j] = (B^T h)[k][j] */
    for (i = 0; i < alpha; ++i)
      for (l = 0; l < CK_WG_LANES; ++l) col[i * CK_WG_LANES + l] = h[(i * alpha + j) * CK_WG_LANES + l];
    ck_wg_bt(m, col, out);
    for (k = 0; k < alpha; ++k)
      for (l = 0; l < CK_WG_LANES; ++l) dst[(k * alpha + j) * pos_stride + l] = out[k * CK_WG_LANES + l];
  }
}

/* One group of lanes of one output row: Y = A^T M A from src (position pos at src + pos * pos_stride),
 * z[a * 4 * CK_WG_LANES + l * m + b] = Y[a][b] of lane l. */
static CK_WG_INLINE void ck_wg_output_group(int64_t m, const float *src, int64_t pos_stride, float *z) {
  const int64_t alpha = m + 2;
  float x[CK_WG_MAX_ALPHA * CK_WG_LANES], t[CK_WG_MAX_ALPHA * 4 * CK_WG_LANES], col[CK_WG_MAX_ALPHA * CK_WG_LANES];
  float y[4 * 4 * CK_WG_LANES];
  int64_t i, j, a, b, l;
  for (i = 0; i < alpha; ++i) { /* along row i: t[i][b] = (M[i] A)[b] */
    for (j = 0; j < alpha; ++j)
      for (l = 0; l < CK_WG_LANES; ++l) x[j * CK_WG_LANES + l] = src[(i * alpha + j) * pos_stride + l];
    ck_wg_at(m, x, t + i * m * CK_WG_LANES);
  }
  for (b = 0; b < m; ++b) { /* down column b: Y[a][b] = (A^T t)[a][b] */
    for (i = 0; i < alpha; ++i)
      for (l = 0; l < CK_WG_LANES; ++l) col[i * CK_WG_LANES + l] = t[(i * m + b) * CK_WG_LANES + l];
    ck_wg_at(m, col, y + b * m * CK_WG_LANES);
  }
  for (a = 0; a < m; ++a)
    for (l = 0; l < CK_WG_LANES; ++l)
      for (b = 0; b < m; ++b) z[a * 4 * CK_WG_LANES + l * m + b] = y[(b * m + a) * CK_WG_LANES + l];
}
#endif

/* Input channels [c0, c1) of one run -> v (position pos at v + pos * pos_stride, channel c's columns at
 * c * CK_WG_VS in the run's sliver). */
static CK_WG_INLINE void ck_wg_input_run(int narrow, int64_t m, const ck_wg_plan *w, const float *bordered, const ck_wg_run *run,
                                         int64_t c0, int64_t c1, float *v, int64_t pos_stride) {
  const int64_t plane = w->plane;
  float *dst = v + run->col / CK_N_QUANTUM * w->cin * CK_WG_VS + run->col % CK_N_QUANTUM;
  int64_t c, g;
  for (c = c0; c < c1; ++c)
    for (g = 0; g < run->n; g += CK_WG_LANES)
      ck_wg_input_lanes(narrow, m, w->pw, bordered + c * plane + run->ty * m * w->pw + (run->tx + g) * m,
                        dst + c * CK_WG_VS + g, pos_stride);
}

typedef struct {
  const float *bias, *residual;
  float *out;
  int32_t activation;
  int64_t oh, ow;
} ck_wg_out;

/* x[0 .. n) + bias (+ residual[0 .. n)), activation -> out[0 .. n) */
static CK_WG_INLINE void ck_wg_finish(const float *restrict x, int64_t n, float bias, const float *restrict residual,
                                      int32_t activation, float *restrict out) {
  int64_t l;
  if (residual != NULL)
    for (l = 0; l < n; ++l) out[l] = (x[l] + bias) + residual[l];
  else
    for (l = 0; l < n; ++l) out[l] = x[l] + bias;
  if (activation == CK_ACT_RELU) {
    for (l = 0; l < n; ++l) out[l] = out[l] > 0.0f ? out[l] : 0.0f; /* as ck_activate */
  } else if (activation == CK_ACT_RELU6) {
    for (l = 0; l < n; ++l) {
      const float u = out[l] < 0.0f ? 0.0f : out[l];
      out[l] = u > 6.0f ? 6.0f : u;
    }
  }
}

/* Output channel rows [r0, r1) of one run from the products (row r at mm + (r - rbase) * ldc, position pos
 * pos_stride further) -> out, + bias, + residual, activation; the run's last tile may overhang the plane. */
static CK_WG_INLINE void ck_wg_output_run(int narrow, int64_t m, const float *mm, int64_t pos_stride, int64_t ldc, int64_t rbase,
                                          int64_t r0, int64_t r1, const ck_wg_run *run, const ck_wg_out *o) {
  const int64_t plane = o->oh * o->ow, rows = ck_wg_min(m, o->oh - run->ty * m);
  float z[4 * 4 * CK_WG_LANES];
  int64_t r, g, a;
  for (r = r0; r < r1; ++r) {
    const float bias = o->bias != NULL ? o->bias[r] : 0.0f;
    for (g = 0; g < run->n; g += CK_WG_LANES) {
      const int64_t x0 = (run->tx + g) * m, width = ck_wg_min(ck_wg_min(CK_WG_LANES, run->n - g) * m, o->ow - x0);
      ck_wg_output_lanes(narrow, m, mm + (r - rbase) * ldc + run->col + g, pos_stride, z);
      for (a = 0; a < rows; ++a) {
        const int64_t at = r * plane + (run->ty * m + a) * o->ow + x0;
        ck_wg_finish(z + a * 4 * CK_WG_LANES, width, bias, o->residual != NULL ? o->residual + at : NULL,
                     o->activation, o->out + at);
      }
    }
  }
}

/* Tiles [t0, t0 + count) cut into runs: along tile rows, and at every 32nd column of the products. */
static CK_WG_INLINE int64_t ck_wg_next_run(const ck_wg_plan *w, int64_t t0, int64_t count, int64_t col,
                                           ck_wg_run *run) {
  const int64_t t = t0 + col;
  run->ty = t / w->ntx;
  run->tx = t % w->ntx;
  run->col = col;
  run->n = ck_wg_min(ck_wg_min(w->ntx - run->tx, count - col), CK_N_QUANTUM - col % CK_N_QUANTUM);
  return col + run->n;
}

/* Tiles [t0, t0 + count), input channels [c0, c1) -> v; the columns past count up to the 32-column grid zeroed,
 * so every column the products read is finite. */
static CK_WG_INLINE void ck_wg_input_tiles(int narrow, int64_t m, const ck_wg_plan *w, const float *bordered, int64_t t0,
                                           int64_t count, int64_t c0, int64_t c1, float *v, int64_t pos_stride) {
  const int64_t end = ck_wg_round_up(count, CK_N_QUANTUM);
  ck_wg_run run;
  int64_t col = 0, pos, c;
  while (col < count) {
    col = ck_wg_next_run(w, t0, count, col, &run);
    ck_wg_input_run(narrow, m, w, bordered, &run, c0, c1, v, pos_stride);
  }
  if (count < end)
    for (pos = 0; pos < w->a2; ++pos)
      for (c = c0; c < c1; ++c)
        memset(v + pos * pos_stride + count / CK_N_QUANTUM * w->cin * CK_WG_VS + c * CK_WG_VS + count % CK_N_QUANTUM,
               0, sizeof(float) * (size_t)(end - count));
}

static CK_WG_INLINE void ck_wg_output_tiles(int narrow, int64_t m, const ck_wg_plan *w, const float *mm, int64_t pos_stride,
                                            int64_t t0, int64_t count, int64_t rbase, int64_t r0, int64_t r1,
                                            const ck_wg_out *o) {
  ck_wg_run run;
  int64_t col = 0;
  while (col < count) {
    col = ck_wg_next_run(w, t0, count, col, &run);
    ck_wg_output_run(narrow, m, mm, pos_stride, w->cols, rbase, r0, r1, &run, o);
  }
}

/* Each transform compiled per instruction set (and per m, so every loop has constant bounds). */
typedef void (*ck_wg_input_fn)(const ck_wg_plan *w, const float *bordered, int64_t t0, int64_t count, int64_t c0,
                               int64_t c1, float *v, int64_t pos_stride);
typedef void (*ck_wg_output_fn)(const ck_wg_plan *w, const float *mm, int64_t pos_stride, int64_t t0, int64_t count,
                                int64_t rbase, int64_t r0, int64_t r1, const ck_wg_out *o);

/* (one function per macro: an attribute before a macro applies to the first function it defines alone) */
#define CK_WG_DEFINE_IN(SUFFIX, M, NARROW)                                                                                \
  static CK_NO_TRAPS void ck_wg_in##SUFFIX(const ck_wg_plan *w, const float *bordered, int64_t t0, int64_t count, \
                                           int64_t c0, int64_t c1, float *v, int64_t pos_stride) {               \
    ck_wg_input_tiles(NARROW, M, w, bordered, t0, count, c0, c1, v, pos_stride);                                          \
  }
#define CK_WG_DEFINE_OUT(SUFFIX, M, NARROW)                                                                                \
  static CK_NO_TRAPS void ck_wg_out##SUFFIX(const ck_wg_plan *w, const float *mm, int64_t pos_stride, int64_t t0,  \
                                            int64_t count, int64_t rbase, int64_t r0, int64_t r1,                \
                                            const ck_wg_out *o) {                                                 \
    ck_wg_output_tiles(NARROW, M, w, mm, pos_stride, t0, count, rbase, r0, r1, o);                                        \
  }

CK_WG_DEFINE_IN(2_baseline, 2, 0)
CK_WG_DEFINE_OUT(2_baseline, 2, 0)
CK_WG_DEFINE_IN(4_baseline, 4, 0)
CK_WG_DEFINE_OUT(4_baseline, 4, 0)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
#define CK_WG_DISPATCH 1
__attribute__((target("avx2"))) CK_WG_DEFINE_IN(2_avx2, 2, 1)
__attribute__((target("avx2"))) CK_WG_DEFINE_OUT(2_avx2, 2, 1)
__attribute__((target("avx2"))) CK_WG_DEFINE_IN(4_avx2, 4, 1)
__attribute__((target("avx2"))) CK_WG_DEFINE_OUT(4_avx2, 4, 1)
__attribute__((target("avx512f,avx2"))) CK_WG_DEFINE_IN(2_avx512, 2, 0)
__attribute__((target("avx512f,avx2"))) CK_WG_DEFINE_OUT(2_avx512, 2, 0)
__attribute__((target("avx512f,avx2"))) CK_WG_DEFINE_IN(4_avx512, 4, 0)
__attribute__((target("avx512f,avx2"))) CK_WG_DEFINE_OUT(4_avx512, 4, 0)
#endif

static void ck_wg_pick(int64_t m, ck_wg_input_fn *in, ck_wg_output_fn *out) {
#if defined(CK_WG_DISPATCH)
  static const ck_wg_input_fn ins[2][3] = {{ck_wg_in2_baseline, ck_wg_in2_avx2, ck_wg_in2_avx512},
                                           {ck_wg_in4_baseline, ck_wg_in4_avx2, ck_wg_in4_avx512}};
  static const ck_wg_output_fn outs[2][3] = {{ck_wg_out2_baseline, ck_wg_out2_avx2, ck_wg_out2_avx512},
                                             {ck_wg_out4_baseline, ck_wg_out4_avx2, ck_wg_out4_avx512}};
  *in = ins[m == 4][ck_micro_kernel_isa()];
  *out = outs[m == 4][ck_micro_kernel_isa()];
#else
  *in = m == 4 ? ck_wg_in4_baseline : ck_wg_in2_baseline;
  *out = m == 4 ? ck_wg_out4_baseline : ck_wg_out2_baseline;
#endif
}

/* ---- the products ------------------------------------------------------------------------------ */

/* mm[pos] rows [r0, r1) (at row r - r0) x cols columns = U[pos] . V[pos] for positions [pos0, pos1): per K block
 * of CK_KC input channels, the micro-kernels over the weight's 24-row slivers (packed ahead, CK_M_QUANTUM apart)
 * and the transformed input's 32-column slivers (CK_N_QUANTUM apart), one chain from the first block on. Whole
 * slivers of real channels run the CPU's tall tiles where it has them (two 12 x 32 and a 24 x 16 on a half-width
 * last sliver, as ck_gemm.c does on weights packed ahead), the rest the mr-row tiles: the same bits either way. */
typedef struct {
  const ck_micro_kernel *kernel;
  const float *vpos;
  float *crow;
  int64_t kc, pc, main_cols, cols, cin;
  int use_half;
} ck_wg_prod_row;

/* The transformed input's columns from jr on, for the K block of q. */
static const float *ck_wg_b_at(const ck_wg_prod_row *q, int64_t jr) {
  return q->vpos + jr / CK_N_QUANTUM * q->cin * CK_WG_VS + q->pc * CK_WG_VS + jr % CK_N_QUANTUM;
}

/* One row of tiles (`run`, from the weight sliver rows at ap) into crow against every full column sliver, then
 * run_half on the half-width last one (where there is one and run_half is given). */
static void ck_wg_prod_tiles(const ck_wg_prod_row *q, const float *ap, float *crow, ck_micro_fn run,
                             ck_micro_fn run_half) {
  int64_t jr;
  for (jr = 0; jr < q->main_cols; jr += q->kernel->nr)
    run(q->kc, ap, CK_M_QUANTUM, ck_wg_b_at(q, jr), CK_WG_VS, crow + jr, q->cols, q->pc > 0, NULL, NULL, CK_ACT_NONE);
  if (q->use_half && run_half != NULL)
    run_half(q->kc, ap, CK_M_QUANTUM, ck_wg_b_at(q, jr), CK_WG_VS, crow + jr, q->cols, q->pc > 0, NULL, NULL,
             CK_ACT_NONE);
}

static void ck_wg_products(const ck_wg_plan *w, const float *u, const float *v, int64_t cols, float *mm, int64_t pos0,
                           int64_t pos1, int64_t r0, int64_t r1) {
  const ck_micro_kernel *kernel = ck_micro_kernel_current();
  const int64_t mr = kernel->mr, nr = kernel->nr, tail = cols % nr;
  const int64_t rows = ck_wg_min(r1, ck_wg_round_up(w->cout, mr)); /* (r0: a multiple of CK_M_QUANTUM) */
  const int64_t real = ck_wg_min(r1, w->cout);
  ck_wg_prod_row q;
  int64_t pos, ir;
  q.kernel = kernel;
  q.use_half = kernel->run_half != NULL && tail > 0 && tail <= nr / 2;
  q.main_cols = q.use_half ? cols - tail : ck_wg_round_up(cols, nr);
  q.cols = w->cols;
  q.cin = w->cin;
  for (pos = pos0; pos < pos1; ++pos) {
    const float *upos = u + pos * w->m24 * w->cin;
    float *mpos = mm + pos * ck_wg_mm_pos(w);
    q.vpos = v + pos * ck_wg_v_pos(w);
    for (q.pc = 0; q.pc < w->cin; q.pc += CK_KC) {
      q.kc = ck_wg_min(CK_KC, w->cin - q.pc);
      for (ir = r0; ir < rows;) {
        const float *ap = upos + q.pc * w->m24 + ir / CK_M_QUANTUM * CK_M_QUANTUM * q.kc + ir % CK_M_QUANTUM;
        float *crow = mpos + (ir - r0) * w->cols;
        if (kernel->run_tall == NULL || ir % CK_M_QUANTUM != 0 || ir + CK_M_QUANTUM > real) {
          ck_wg_prod_tiles(&q, ap, crow, kernel->run, kernel->run_half);
          ir += mr;
          continue;
        }
        ck_wg_prod_tiles(&q, ap, crow, kernel->run_tall, NULL);
        ck_wg_prod_tiles(&q, ap + CK_MR_TALL, crow + CK_MR_TALL * w->cols, kernel->run_tall, NULL);
        if (q.use_half)
          kernel->run_half_tall(q.kc, ap, CK_M_QUANTUM, ck_wg_b_at(&q, q.main_cols), CK_WG_VS, crow + q.main_cols,
                                q.cols, q.pc > 0, NULL, NULL, CK_ACT_NONE);
        ir += CK_M_QUANTUM;
      }
    }
  }
}

/* ---- the driver -------------------------------------------------------------------------------- */

typedef struct {
  const ck_wg_plan *w;
  const ck_conv2d_params *p;
  const float *data, *u;
  float *bordered, *v_shared, *mm_shared;
  char *slots;
  ck_wg_out o;
  ck_wg_input_fn input;
  ck_wg_output_fn output;
  int64_t image;
} ck_wg_job;

static void ck_wg_border(void *ctx, int64_t c0, int64_t c1) {
  const ck_wg_job *job = (const ck_wg_job *)ctx;
  const ck_wg_plan *w = job->w;
  const ck_conv2d_params *p = job->p;
  const int64_t plane = w->plane, h = p->height, wd = p->width;
  int64_t c, y;
  for (c = c0; c < c1; ++c) {
    float *restrict dst = job->bordered + c * plane;
    const float *restrict src = job->data + (job->image * w->cin + c) * h * wd;
    memset(dst, 0, sizeof(float) * (size_t)plane);
    for (y = 0; y < h && p->pad_top + y < w->ph; ++y)
      memcpy(dst + (p->pad_top + y) * w->pw + p->pad_left, src + y * wd,
             sizeof(float) * (size_t)ck_wg_min(wd, w->pw - p->pad_left));
  }
}

/* Shared: input channels [c0, c1) into the bordered copy and straight on through every tile's transform (one phase:
 * the planes a task borders are the ones it transforms, still in its cache). */
static void ck_wg_input_shared(void *ctx, int64_t c0, int64_t c1) {
  const ck_wg_job *job = (const ck_wg_job *)ctx;
  const ck_wg_plan *w = job->w;
  ck_wg_border(ctx, c0, c1);
  job->input(w, job->bordered, 0, w->nt, c0, c1, job->v_shared, ck_wg_v_pos(w));
}

/* Blocked: block `task` of tiles, its transform, products and outputs, on the scratch of `slot`. */
static void ck_wg_block_task(int32_t task, int32_t slot, void *ctx) {
  const ck_wg_job *job = (const ck_wg_job *)ctx;
  const ck_wg_plan *w = job->w;
  const int64_t t0 = (int64_t)task * w->block_tiles, count = ck_wg_min(w->block_tiles, w->nt - t0);
  float *v = ck_wg_align((uintptr_t)(job->slots + (size_t)slot * ck_wg_slot_bytes(w)));
  float *mm = v + w->a2 * ck_wg_v_pos(w);
  int64_t r0;
  job->input(w, job->bordered, t0, count, 0, w->cin, v, ck_wg_v_pos(w));
  for (r0 = 0; r0 < w->cout; r0 += w->pass_rows) {
    ck_wg_products(w, job->u, v, ck_wg_round_up(count, CK_N_QUANTUM / 2), mm, 0, w->a2, r0, r0 + w->pass_rows);
    job->output(w, mm, ck_wg_mm_pos(w), t0, count, r0, r0, ck_wg_min(w->cout, r0 + w->pass_rows), &job->o);
  }
}

/* Shared: the product of one position over every tile (its weight and transformed input read once, in cache). */
static void ck_wg_position_task(int32_t pos, int32_t n_tasks, void *ctx) {
  const ck_wg_job *job = (const ck_wg_job *)ctx;
  (void)n_tasks;
  ck_wg_products(job->w, job->u, job->v_shared, ck_wg_round_up(job->w->nt, CK_N_QUANTUM / 2), job->mm_shared, pos,
                 pos + 1, 0, job->w->m24);
}

/* Shared: output channels [r0, r1) of every tile. */
static void ck_wg_output_shared(void *ctx, int64_t r0, int64_t r1) {
  const ck_wg_job *job = (const ck_wg_job *)ctx;
  const ck_wg_plan *w = job->w;
  job->output(w, job->mm_shared, ck_wg_mm_pos(w), 0, w->nt, 0, r0, r1, &job->o);
}

/* One image: the bordered copy, then blocks of tiles (each on its slot), or with few tiles the bordered copy and
 * every tile's transform by channels, the products by position and the outputs by channels, each phase on the pool. */
static int32_t ck_wg_image(ck_wg_job *job) {
  const ck_wg_plan *w = job->w;
  if (!w->shared) {
    ck_parallel_range(w->cin, ck_grain(w->plane), ck_wg_border, job);
    return byoc_parallel_chunks((int32_t)w->blocks, (int32_t)w->slots, ck_wg_block_task, job) != 0 ? CK_EBADPARAM
                                                                                                   : CK_OK;
  }
  ck_parallel_range(w->cin, (w->cin + 15) / 16, ck_wg_input_shared, job);
  if (byoc_parallel_for((int32_t)w->a2, ck_wg_position_task, job) != 0) return CK_EBADPARAM;
  ck_parallel_range(w->cout, (w->cout + 15) / 16, ck_wg_output_shared, job);
  return CK_OK;
}

int32_t ck_conv2d_winograd(const ck_conv2d_params *p, int32_t m, const float *data, const float *packed_weight,
                           const float *bias, const float *residual, int32_t activation, float *out,
                           void *workspace) {
  ck_wg_plan w;
  ck_wg_job job;
  uintptr_t at;
  if (p == NULL || !ck_wg_plan_of(p, m, &w) || data == NULL || packed_weight == NULL || out == NULL ||
      workspace == NULL || !CK_VALID_ACTIVATION(activation))
    return CK_EBADPARAM;
  job.w = &w;
  job.p = p;
  job.u = packed_weight;
  job.o.activation = activation;
  job.o.bias = bias;
  job.o.oh = w.oh;
  job.o.ow = w.ow;
  ck_wg_pick(w.m, &job.input, &job.output);
  at = (uintptr_t)workspace;
  job.bordered = ck_wg_align(at);
  at += ck_wg_bordered_bytes(&w);
  job.v_shared = w.shared ? ck_wg_align(at) : NULL;
  job.mm_shared = w.shared ? ck_wg_align((uintptr_t)(job.v_shared + w.a2 * ck_wg_v_pos(&w))) : NULL;
  job.slots = (char *)(at + ck_wg_shared_bytes(&w));
  for (job.image = 0; job.image < p->batch; ++job.image) {
    const int64_t image_floats = w.cout * w.oh * w.ow;
    job.data = data;
    job.o.out = out + job.image * image_floats;
    job.o.residual = residual != NULL ? residual + job.image * image_floats : NULL;
    if (ck_wg_image(&job) != CK_OK) return CK_EBADPARAM;
  }
  return CK_OK;
}
