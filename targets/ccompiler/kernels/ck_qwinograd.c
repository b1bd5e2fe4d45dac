/* ck_qwinograd.c - int8 stride-1 3x3 convolutions by Winograd's F(2x2, 3x3), exact.
 *
 * Why: an x86 CPU without an int8 dot product (AVX2 before VNNI: AMD Zen 1-3, Intel before Ice Lake) sums exact
 * uint8 x int8 products two at a time in vpmaddwd + vpaddd, 1.2x the time of the saturating sequence onnxruntime
 * uses there (bench/int8_products.py). F(2x2, 3x3) multiplies 16 times per 2x2 outputs and channel
 * where the direct convolution multiplies 36, on int16 operands the same vpmaddwd takes whole.
 *
 * Exactness. Each 4x4 patch d of the uint8 input (int8 inputs offset by 128, zero-point borders: the GEMM core's
 * operand, so the codegen's folded bias is the same) becomes V = B^T d B, integers in [-1020, 1020]. Each 3x3
 * weight g becomes U = G' g G'^T with G' = 2G = [2 0 0; 1 1 1; 1 -1 1; 0 0 2], integers in [-1152, 1152]
 * (int16; at codegen time, qkernels.winograd_pack_weight, or ck_qconv2d_pack_weight). For every one of the 16
 * positions the sums over input channels M = U . V are a matrix product of int16 pairs (channels 2c and 2c + 1
 * side by side, what vpmaddwd multiplies and adds), summed modulo 2^32. The 2x2 output tile A^T M A is then 4x
 * the direct convolution's int32 sum, which lies in int32 for up to CK_QWG_MAX_CHANNELS input channels
 * (4 * 9 * 1024 * 255 * 128 < 2^31): the wrapped value is exact, a quarter of it is the direct sum bit for bit,
 * and the requantization (ck_qrequant_row, TFLite's or byoc's rounding) gives ck_qconv2d's bytes.
 *
 * Work, per image: (1) the input in a zero-point-bordered copy of 2 * tiles + 2 rows and columns (the last tile
 * of an odd plane reads one row or column past the convolution's padding: the zero point, its outputs unused);
 * (2) the input transform by channel pairs on the pool, into V[position][pair][tile]; (3) the 16 matrix products
 * M[position][out][tile], tasks of 16 output channels of one position; (4) the output transform by output
 * channel, two output rows of a tile row at a time, requantized (and the residual added) while they are in cache.
 * Integer sums are exact in any order: every thread count gives the same bytes.
 */
#include <string.h>

#include "ck_qinternal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
#define CK_QWG_AVX2 1
#include <immintrin.h>
#endif

#if defined(__GNUC__)
#define CK_QWG_INLINE inline __attribute__((always_inline))
#else
#define CK_QWG_INLINE inline
#endif

#define CK_QWG_POSITIONS 16
#define CK_QWG_TILES_QUANTUM 8  /* tiles rounded up to a product's 8 or 16 columns (49 tiles: 56, not 64) */
#define CK_QWG_COLUMNS 16       /* the product's columns (an 8-column one for a last group of 8) */
#define CK_QWG_ROWS 4           /* output channels rounded up to the product's 4 rows */
#define CK_QWG_TASK_ROWS 16     /* output channels per product task */
#define CK_QWG_SEGMENT 64       /* tiles transformed at once (stack arrays) */
#define CK_QWG_LANES 16         /* tiles per vectorized group of the transforms */
/* bytes after the bordered planes a group of lanes past the last row's end reads */
#define CK_QWG_SLACK (2 * CK_QWG_LANES + 2)

typedef struct {
  int64_t oh, ow, th, tw, tiles, tp; /* output plane, tiles down and across, tiles, tiles rounded up */
  int64_t pairs, orows;              /* input channel pairs, output channels rounded up to CK_QWG_ROWS */
  int64_t ph, pw;                    /* bordered plane */
  int64_t border_bytes, v_words, m_words;
} ck_qwg_plan;

int ck_qwinograd_takes(const ck_qconv2d_params *p) {
  const ck_conv2d_params *c = &p->conv;
  return c->kernel_h == 3 && c->kernel_w == 3 && c->stride_h == 1 && c->stride_w == 1 && c->dilation_h == 1 &&
         c->dilation_w == 1 && c->groups == 1 && !(c->channels == 1 && c->out_channels == 1) &&
         c->channels <= CK_QWG_MAX_CHANNELS;
}

static void ck_qwg_plan_of(const ck_qconv2d_params *p, int64_t oh, int64_t ow, ck_qwg_plan *s) {
  s->oh = oh;
  s->ow = ow;
  s->th = (oh + 1) / 2;
  s->tw = (ow + 1) / 2;
  s->tiles = s->th * s->tw;
  s->tp = ck_qround_up(s->tiles, CK_QWG_TILES_QUANTUM);
  s->pairs = (p->conv.channels + 1) / 2;
  s->orows = ck_qround_up(p->conv.out_channels, CK_QWG_ROWS);
  s->ph = 2 * s->th + 2;
  s->pw = 2 * s->tw + 2;
  s->border_bytes = ck_qround_up(p->conv.channels * s->ph * s->pw + CK_QWG_SLACK, CK_QALIGN);
  s->v_words = CK_QWG_POSITIONS * s->pairs * s->tp;
  s->m_words = CK_QWG_POSITIONS * s->orows * s->tp + CK_QWG_LANES; /* + a group the output transform reads past */
}

size_t ck_qwinograd_weight_bytes(const ck_qconv2d_params *p) {
  return (size_t)(CK_QWG_POSITIONS * ck_qround_up(p->conv.out_channels, CK_QWG_ROWS) *
                  ((p->conv.channels + 1) / 2) * 4);
}

size_t ck_qwinograd_workspace_bytes(const ck_qconv2d_params *p, int64_t oh, int64_t ow) {
  ck_qwg_plan s;
  ck_qwg_plan_of(p, oh, ow, &s);
  return (size_t)(CK_QALIGN + s.border_bytes + 4 * (s.v_words + s.m_words));
}

/* U = G' g G'^T of each (out, in) 3x3 weight, as int16 pairs of input channels:
 * packed[((position * orows + o) * pairs + c / 2) * 2 + c % 2], zeros past the channels. */
void ck_qwinograd_pack_weight(const ck_qconv2d_params *p, const int8_t *weight, int16_t *packed) {
  const int64_t c_n = p->conv.channels, o_n = p->conv.out_channels;
  const int64_t orows = ck_qround_up(o_n, CK_QWG_ROWS), pairs = (c_n + 1) / 2;
  int64_t o, c;
  int i, j;
  memset(packed, 0, ck_qwinograd_weight_bytes(p));
  for (o = 0; o < o_n; ++o)
    for (c = 0; c < c_n; ++c) {
      const int8_t *g = weight + (o * c_n + c) * 9;
      int32_t t[4][3], u[4][4];
      for (j = 0; j < 3; ++j) { /* G' g: rows of G' against g's columns */
        t[0][j] = 2 * g[j];
        t[1][j] = g[j] + g[3 + j] + g[6 + j];
        t[2][j] = g[j] - g[3 + j] + g[6 + j];
        t[3][j] = 2 * g[6 + j];
      }
      for (i = 0; i < 4; ++i) { /* (G' g) G'^T */
        u[i][0] = 2 * t[i][0];
        u[i][1] = t[i][0] + t[i][1] + t[i][2];
        u[i][2] = t[i][0] - t[i][1] + t[i][2];
        u[i][3] = 2 * t[i][2];
      }
      for (i = 0; i < 4; ++i)
        for (j = 0; j < 4; ++j) packed[(((i * 4 + j) * orows + o) * pairs + c / 2) * 2 + c % 2] = (int16_t)u[i][j];
    }
}

/* ---- (1) the bordered input ------------------------------------------------------------------------------ */

typedef struct {
  const ck_qconv2d_params *p;
  const ck_qwg_plan *s;
  const uint8_t *in;
  uint8_t fill, flip;
  uint8_t *pad;
} ck_qwg_border_job;

static void ck_qwg_border(void *ctx, int64_t first, int64_t last) {
  const ck_qwg_border_job *j = (const ck_qwg_border_job *)ctx;
  const ck_conv2d_params *c = &j->p->conv;
  const int64_t pw = j->s->pw, plane = j->s->ph * pw;
  int64_t ch, y, x;
  for (ch = first; ch < last; ++ch) {
    uint8_t *dst = j->pad + ch * plane;
    memset(dst, j->fill, (size_t)plane);
    for (y = 0; y < c->height; ++y) {
      const uint8_t *src = j->in + (ch * c->height + y) * c->width;
      uint8_t *row = dst + (y + c->pad_top) * pw + c->pad_left;
      for (x = 0; x < c->width; ++x) row[x] = (uint8_t)(src[x] ^ j->flip);
    }
  }
}

/* ---- (2) the input transform ----------------------------------------------------------------------------- */

/* v[position][k] (k < lanes, a multiple of CK_QWG_LANES: tiles past the row's end are computed from the bytes after
 * it, which the slack keeps readable, and never stored) of one channel's tiles tx0 .. of tile row ty:
 * V = B^T d B, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], rows first. Every loop runs whole groups of
 * CK_QWG_LANES consecutive tiles (vectorized without scalar tails: rows of 28, 14 and 7 tiles were mostly tails). */
static CK_QWG_INLINE void ck_qwg_transform_tiles(const uint8_t *plane, int64_t pw, int64_t ty, int64_t tx0,
                                                 int64_t lanes, int16_t v[CK_QWG_POSITIONS][CK_QWG_SEGMENT]) {
  int16_t h[4][4][CK_QWG_SEGMENT]; /* [row of the patch][column of d B][tile] */
  int64_t r, k0, k;
  for (r = 0; r < 4; ++r) {
    const uint8_t *row = plane + (2 * ty + r) * pw + 2 * tx0;
    for (k0 = 0; k0 < lanes; k0 += CK_QWG_LANES)
      for (k = k0; k < k0 + CK_QWG_LANES; ++k) {
        const int16_t d0 = row[2 * k], d1 = row[2 * k + 1], d2 = row[2 * k + 2], d3 = row[2 * k + 3];
        h[r][0][k] = (int16_t)(d0 - d2);
        h[r][1][k] = (int16_t)(d1 + d2);
        h[r][2][k] = (int16_t)(d2 - d1);
        h[r][3][k] = (int16_t)(d1 - d3);
      }
  }
  for (r = 0; r < 4; ++r) /* r: the column of d B */
    for (k0 = 0; k0 < lanes; k0 += CK_QWG_LANES)
      for (k = k0; k < k0 + CK_QWG_LANES; ++k) {
        v[0 * 4 + r][k] = (int16_t)(h[0][r][k] - h[2][r][k]);
        v[1 * 4 + r][k] = (int16_t)(h[1][r][k] + h[2][r][k]);
        v[2 * 4 + r][k] = (int16_t)(h[2][r][k] - h[1][r][k]);
        v[3 * 4 + r][k] = (int16_t)(h[1][r][k] - h[3][r][k]);
      }
}

typedef struct {
  const ck_qconv2d_params *p;
  const ck_qwg_plan *s;
  const uint8_t *pad;
  uint32_t *v; /* [position][pair][tp]: int16 pairs (channel 2c, then 2c + 1) */
} ck_qwg_input_job;

static CK_QWG_INLINE void ck_qwg_input_body(const ck_qwg_input_job *j, int64_t first, int64_t last) {
  const ck_qwg_plan *s = j->s;
  const int64_t plane = s->ph * s->pw, c_n = j->p->conv.channels;
  int16_t lo[CK_QWG_POSITIONS][CK_QWG_SEGMENT], hi[CK_QWG_POSITIONS][CK_QWG_SEGMENT];
  int64_t pair, ty, tx0, k;
  int pos;
  for (pair = first; pair < last; ++pair) {
    for (ty = 0; ty < s->th; ++ty)
      for (tx0 = 0; tx0 < s->tw; tx0 += CK_QWG_SEGMENT) {
        const int64_t n = s->tw - tx0 < CK_QWG_SEGMENT ? s->tw - tx0 : CK_QWG_SEGMENT;
        const int64_t lanes = ck_qround_up(n, CK_QWG_LANES), at = ty * s->tw + tx0;
        /* whole groups stored where they stay in this pair's row (the tiles past n belong to later tile rows,
         * stored again then, or past the plane, zeroed below), the last tile row's n alone */
        const int64_t stored = at + lanes <= s->tp ? lanes : n;
        ck_qwg_transform_tiles(j->pad + 2 * pair * plane, s->pw, ty, tx0, lanes, lo);
        if (2 * pair + 1 < c_n)
          ck_qwg_transform_tiles(j->pad + (2 * pair + 1) * plane, s->pw, ty, tx0, lanes, hi);
        else
          memset(hi, 0, sizeof hi);
        for (pos = 0; pos < CK_QWG_POSITIONS; ++pos) { /* the pair in memory order, as the weight's (any endianness) */
          int16_t *dst = (int16_t *)(void *)(j->v + ((int64_t)pos * s->pairs + pair) * s->tp + at);
          for (k = 0; k < stored; ++k) {
            dst[2 * k] = lo[pos][k];
            dst[2 * k + 1] = hi[pos][k];
          }
        }
      }
    for (pos = 0; pos < CK_QWG_POSITIONS; ++pos) /* the tiles past the plane: zeros the products read */
      memset(j->v + ((int64_t)pos * s->pairs + pair) * s->tp + s->tiles, 0,
             (size_t)(s->tp - s->tiles) * sizeof(uint32_t));
  }
}

static void ck_qwg_input(void *ctx, int64_t first, int64_t last) {
  ck_qwg_input_body((const ck_qwg_input_job *)ctx, first, last);
}

/* ---- (3) the products ------------------------------------------------------------------------------------ */

/* m[i * tp + t] = sum over pairs of the int16 pair products u[i * pairs + c] . v[c * tp + t], i < CK_QWG_ROWS,
 * t < cols (8 or 16), modulo 2^32 */
static void ck_qwg_product_portable(int64_t pairs, int64_t tp, int64_t cols, const uint32_t *u, const uint32_t *v,
                                    uint32_t *m) {
  /* the words as the int16 pairs they hold in memory: the same on either endianness */
  const int16_t *u16 = (const int16_t *)(const void *)u, *v16 = (const int16_t *)(const void *)v;
  uint32_t acc[CK_QWG_ROWS][CK_QWG_COLUMNS];
  int64_t c, t;
  int i;
  memset(acc, 0, sizeof acc);
  for (c = 0; c < pairs; ++c)
    for (i = 0; i < CK_QWG_ROWS; ++i) {
      const int32_t u0 = u16[2 * (i * pairs + c)], u1 = u16[2 * (i * pairs + c) + 1];
      for (t = 0; t < cols; ++t) {
        const int16_t *w = v16 + 2 * (c * tp + t);
        acc[i][t] += (uint32_t)(u0 * w[0]) + (uint32_t)(u1 * w[1]);
      }
    }
  for (i = 0; i < CK_QWG_ROWS; ++i) memcpy(m + i * tp, acc[i], sizeof(uint32_t) * (size_t)cols);
}

#if defined(CK_QWG_AVX2)
/* a weight pair as one int32 lane (read as bytes: the weight is an int16 array) */
static inline int32_t ck_qwg_pair(const uint32_t *p) {
  int32_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

/* the same on AVX2, 8 columns: per pair one 8-tile vector and a broadcast pair per row, 4 accumulators */
__attribute__((target("avx2"))) static void ck_qwg_product8_avx2(int64_t pairs, int64_t tp, const uint32_t *u,
                                                                  const uint32_t *v, uint32_t *m) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  int64_t c;
  for (c = 0; c < pairs; ++c, v += tp) {
    const __m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)v);
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(v0, _mm256_set1_epi32(ck_qwg_pair(u + c))));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(v0, _mm256_set1_epi32(ck_qwg_pair(u + pairs + c))));
    a2 = _mm256_add_epi32(a2, _mm256_madd_epi16(v0, _mm256_set1_epi32(ck_qwg_pair(u + 2 * pairs + c))));
    a3 = _mm256_add_epi32(a3, _mm256_madd_epi16(v0, _mm256_set1_epi32(ck_qwg_pair(u + 3 * pairs + c))));
  }
  _mm256_storeu_si256((__m256i *)(void *)m, a0);
  _mm256_storeu_si256((__m256i *)(void *)(m + tp), a1);
  _mm256_storeu_si256((__m256i *)(void *)(m + 2 * tp), a2);
  _mm256_storeu_si256((__m256i *)(void *)(m + 3 * tp), a3);
}

/* 16 columns: per pair two 8-tile vectors and a broadcast pair per row into vpmaddwd, 8 accumulators */
__attribute__((target("avx2"))) static void ck_qwg_product16_avx2(int64_t pairs, int64_t tp, const uint32_t *u,
                                                                   const uint32_t *v, uint32_t *m) {
  __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00, a31 = a00;
  int64_t c;
  for (c = 0; c < pairs; ++c, v += tp) {
    const __m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)v);
    const __m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(v + 8));
    __m256i w = _mm256_set1_epi32(ck_qwg_pair(u + c));
    a00 = _mm256_add_epi32(a00, _mm256_madd_epi16(v0, w));
    a01 = _mm256_add_epi32(a01, _mm256_madd_epi16(v1, w));
    w = _mm256_set1_epi32(ck_qwg_pair(u + pairs + c));
    a10 = _mm256_add_epi32(a10, _mm256_madd_epi16(v0, w));
    a11 = _mm256_add_epi32(a11, _mm256_madd_epi16(v1, w));
    w = _mm256_set1_epi32(ck_qwg_pair(u + 2 * pairs + c));
    a20 = _mm256_add_epi32(a20, _mm256_madd_epi16(v0, w));
    a21 = _mm256_add_epi32(a21, _mm256_madd_epi16(v1, w));
    w = _mm256_set1_epi32(ck_qwg_pair(u + 3 * pairs + c));
    a30 = _mm256_add_epi32(a30, _mm256_madd_epi16(v0, w));
    a31 = _mm256_add_epi32(a31, _mm256_madd_epi16(v1, w));
  }
  _mm256_storeu_si256((__m256i *)(void *)m, a00);
  _mm256_storeu_si256((__m256i *)(void *)(m + 8), a01);
  _mm256_storeu_si256((__m256i *)(void *)(m + tp), a10);
  _mm256_storeu_si256((__m256i *)(void *)(m + tp + 8), a11);
  _mm256_storeu_si256((__m256i *)(void *)(m + 2 * tp), a20);
  _mm256_storeu_si256((__m256i *)(void *)(m + 2 * tp + 8), a21);
  _mm256_storeu_si256((__m256i *)(void *)(m + 3 * tp), a30);
  _mm256_storeu_si256((__m256i *)(void *)(m + 3 * tp + 8), a31);
}

static void ck_qwg_product_avx2(int64_t pairs, int64_t tp, int64_t cols, const uint32_t *u, const uint32_t *v,
                                uint32_t *m) {
  if (cols == CK_QWG_COLUMNS)
    ck_qwg_product16_avx2(pairs, tp, u, v, m);
  else
    ck_qwg_product8_avx2(pairs, tp, u, v, m);
}
#endif

typedef void (*ck_qwg_product_fn)(int64_t pairs, int64_t tp, int64_t cols, const uint32_t *u, const uint32_t *v,
                                  uint32_t *m);

/* the int8 GEMM's choice: its portable kernel (other CPUs, or a test's ck_qgemm_use_kernel) keeps portable C */
static ck_qwg_product_fn ck_qwg_product(void) {
#if defined(CK_QWG_AVX2)
  if (strcmp(ck_qgemm_kernel_name(), "portable-8x32") != 0) return ck_qwg_product_avx2;
#endif
  return ck_qwg_product_portable;
}

typedef struct {
  const ck_qwg_plan *s;
  const uint32_t *u, *v;
  uint32_t *m;
  int64_t blocks; /* product tasks per position */
  ck_qwg_product_fn product;
} ck_qwg_product_job;

static void ck_qwg_products(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_qwg_product_job *j = (const ck_qwg_product_job *)ctx;
  const ck_qwg_plan *s = j->s;
  const int64_t pos = task / j->blocks, o0 = (task % j->blocks) * CK_QWG_TASK_ROWS;
  const int64_t o1 = o0 + CK_QWG_TASK_ROWS < s->orows ? o0 + CK_QWG_TASK_ROWS : s->orows;
  const uint32_t *v = j->v + pos * s->pairs * s->tp;
  int64_t o, t;
  (void)n_tasks;
  for (o = o0; o < o1; o += CK_QWG_ROWS)
    for (t = 0; t < s->tp; t += CK_QWG_COLUMNS)
      j->product(s->pairs, s->tp, s->tp - t < CK_QWG_COLUMNS ? s->tp - t : CK_QWG_COLUMNS,
                 j->u + (pos * s->orows + o) * s->pairs, v + t, j->m + (pos * s->orows + o) * s->tp + t);
}

/* ---- (4) the output transform ---------------------------------------------------------------------------- */

typedef struct {
  const ck_qconv2d_params *p;
  const ck_qwg_plan *s;
  const uint32_t *m;
  const int32_t *bias;
  const float *scale;
  uint8_t *out;
  const ck_qpost *post; /* NULL, or the residual add (out laid out as the conv's output) */
} ck_qwg_output_job;

/* Y = A^T M A / 4 (A^T = [1 1 1 0; 0 1 -1 -1]) of tiles tx0 .. tx0 + n of tile row ty: row0, row1 get the tile
 * row's two output rows, 2n values each. The sums wrap modulo 2^32; the true value lies in int32. Written as loops
 * over consecutive tiles of the 16 positions' rows, then an interleave, so that both vectorize. */
static CK_QWG_INLINE void ck_qwg_untransform(const uint32_t *m, int64_t stride, int64_t lanes, int32_t *row0,
                                             int32_t *row1) {
  int32_t y00[CK_QWG_SEGMENT], y01[CK_QWG_SEGMENT], y10[CK_QWG_SEGMENT], y11[CK_QWG_SEGMENT];
  const uint32_t *m0 = m, *m1 = m + stride, *m2 = m + 2 * stride, *m3 = m + 3 * stride;
  int64_t k0, k;
  for (k0 = 0; k0 < lanes; k0 += CK_QWG_LANES)
    for (k = k0; k < k0 + CK_QWG_LANES; ++k) {
      /* A^T M: s the sum of M's first three rows, d the second minus the third and fourth (each row 4 positions) */
      const uint32_t s0 = m0[k] + m0[4 * stride + k] + m0[8 * stride + k];
      const uint32_t s1 = m1[k] + m1[4 * stride + k] + m1[8 * stride + k];
      const uint32_t s2 = m2[k] + m2[4 * stride + k] + m2[8 * stride + k];
      const uint32_t s3 = m3[k] + m3[4 * stride + k] + m3[8 * stride + k];
      const uint32_t d0 = m0[4 * stride + k] - m0[8 * stride + k] - m0[12 * stride + k];
      const uint32_t d1 = m1[4 * stride + k] - m1[8 * stride + k] - m1[12 * stride + k];
      const uint32_t d2 = m2[4 * stride + k] - m2[8 * stride + k] - m2[12 * stride + k];
      const uint32_t d3 = m3[4 * stride + k] - m3[8 * stride + k] - m3[12 * stride + k];
      y00[k] = (int32_t)(s0 + s1 + s2) / 4;
      y01[k] = (int32_t)(s1 - s2 - s3) / 4;
      y10[k] = (int32_t)(d0 + d1 + d2) / 4;
      y11[k] = (int32_t)(d1 - d2 - d3) / 4;
    }
  for (k0 = 0; k0 < lanes; k0 += CK_QWG_LANES)
    for (k = k0; k < k0 + CK_QWG_LANES; ++k) {
      row0[2 * k] = y00[k];
      row0[2 * k + 1] = y01[k];
      row1[2 * k] = y10[k];
      row1[2 * k + 1] = y11[k];
    }
}

static void ck_qwg_requant(const ck_qwg_output_job *j, int64_t o, int64_t y, int64_t x0, int64_t n,
                           const int32_t *acc) {
  const ck_qparams *q = &j->p->q;
  const int64_t at = (o * j->s->oh + y) * j->s->ow + x0;
  uint8_t *dst = j->out + at;
  if (q->rounding == 1)
    ck_qrequant_row_tfl(n, acc, j->bias[o], (const int32_t *)(const void *)j->scale + 2 * o, q, dst);
  else
    ck_qrequant_row(n, acc, j->bias[o], j->scale[o], q, dst);
  if (j->post != NULL) {
    const uint8_t *r = j->post->residual + at;
    if (j->post->conv_is_rhs)
      ck_qadd_rows(j->post->add, 1, n, n, r, dst, dst);
    else
      ck_qadd_rows(j->post->add, 1, n, n, dst, r, dst);
  }
}

/* A channel's output rows are requantized (and added to) a band of whole rows at a time, up to CK_QWG_BAND values:
 * row by row the requantization's setup and call cost as much as its arithmetic on 28- and 14-wide rows (a row's
 * last 4 or 6 values through a copy), 2.9% of int8 ResNet-50's run. */
#define CK_QWG_BAND 1024

static CK_QWG_INLINE void ck_qwg_output_rows(const ck_qwg_output_job *j, int64_t first, int64_t last) {
  const ck_qwg_plan *s = j->s;
  const int64_t stride = s->orows * s->tp; /* between positions */
  int32_t row0[2 * CK_QWG_SEGMENT], row1[2 * CK_QWG_SEGMENT];
  int64_t o, ty, tx0;
  for (o = first; o < last; ++o)
    for (ty = 0; ty < s->th; ++ty)
      for (tx0 = 0; tx0 < s->tw; tx0 += CK_QWG_SEGMENT) {
        const int64_t n = s->tw - tx0 < CK_QWG_SEGMENT ? s->tw - tx0 : CK_QWG_SEGMENT;
        const int64_t cols = 2 * (tx0 + n) <= s->ow ? 2 * n : s->ow - 2 * tx0;
        ck_qwg_untransform(j->m + o * s->tp + ty * s->tw + tx0, stride, ck_qround_up(n, CK_QWG_LANES), row0, row1);
        ck_qwg_requant(j, o, 2 * ty, 2 * tx0, cols, row0);
        if (2 * ty + 1 < s->oh) ck_qwg_requant(j, o, 2 * ty + 1, 2 * tx0, cols, row1);
      }
}

/* planes whose tile rows are one segment each: bands of CK_QWG_BAND / (2 ow) tile rows */
static CK_QWG_INLINE void ck_qwg_output_bands(const ck_qwg_output_job *j, int64_t first, int64_t last) {
  const ck_qwg_plan *s = j->s;
  const int64_t stride = s->orows * s->tp, lanes = ck_qround_up(s->tw, CK_QWG_LANES);
  const int64_t tile_rows = CK_QWG_BAND / (2 * s->ow);
  int32_t row0[2 * CK_QWG_SEGMENT], row1[2 * CK_QWG_SEGMENT], band[CK_QWG_BAND];
  int64_t o, ty0, ty;
  for (o = first; o < last; ++o)
    for (ty0 = 0; ty0 < s->th; ty0 += tile_rows) {
      const int64_t ty1 = ty0 + tile_rows < s->th ? ty0 + tile_rows : s->th;
      const int64_t rows = (2 * ty1 < s->oh ? 2 * ty1 : s->oh) - 2 * ty0;
      for (ty = ty0; ty < ty1; ++ty) {
        int32_t *dst = band + 2 * (ty - ty0) * s->ow;
        ck_qwg_untransform(j->m + o * s->tp + ty * s->tw, stride, lanes, row0, row1);
        memcpy(dst, row0, sizeof(int32_t) * (size_t)s->ow);
        if (2 * ty + 1 < s->oh) memcpy(dst + s->ow, row1, sizeof(int32_t) * (size_t)s->ow);
      }
      ck_qwg_requant(j, o, 2 * ty0, 0, rows * s->ow, band);
    }
}

static CK_QWG_INLINE void ck_qwg_output_body(const ck_qwg_output_job *j, int64_t first, int64_t last) {
  if (j->s->tw <= CK_QWG_SEGMENT && 2 * j->s->ow <= CK_QWG_BAND)
    ck_qwg_output_bands(j, first, last);
  else
    ck_qwg_output_rows(j, first, last);
}

static void ck_qwg_output(void *ctx, int64_t first, int64_t last) {
  ck_qwg_output_body((const ck_qwg_output_job *)ctx, first, last);
}

#if defined(CK_QWG_AVX2)
/* the transforms compiled for AVX2 too (the library's C is built for the baseline ISA): 8 int32 or 16 int16 lanes */
__attribute__((target("avx2"))) static void ck_qwg_output_avx2(void *ctx, int64_t first, int64_t last) {
  ck_qwg_output_body((const ck_qwg_output_job *)ctx, first, last);
}

__attribute__((target("avx2"))) static void ck_qwg_input_avx2(void *ctx, int64_t first, int64_t last) {
  ck_qwg_input_body((const ck_qwg_input_job *)ctx, first, last);
}
#endif

/* ---- the call -------------------------------------------------------------------------------------------- */

void ck_qwinograd_run(const ck_qconv2d_params *p, int64_t oh, int64_t ow, const uint8_t *data, const int16_t *weight,
                      const int32_t *bias, const float *scale, uint8_t *out, uint8_t *ws, const ck_qpost *post) {
  const ck_conv2d_params *c = &p->conv;
  ck_qwg_plan s;
  ck_qwg_border_job border;
  ck_qwg_input_job input;
  ck_qwg_product_job products;
  ck_qwg_output_job output;
  ck_qpost part;
  int64_t image;
  ck_range_fn input_fn = ck_qwg_input, output_fn = ck_qwg_output;
  ck_qwg_plan_of(p, oh, ow, &s);
  border.p = input.p = output.p = p;
  border.s = input.s = products.s = output.s = &s;
  border.flip = p->q.input_signed ? 0x80 : 0;
  border.fill = (uint8_t)((uint8_t)p->q.input_zero_point ^ border.flip);
  border.pad = ws;
  input.pad = ws;
  input.v = (uint32_t *)(void *)(ws + s.border_bytes);
  products.u = (const uint32_t *)(const void *)weight;
  products.v = input.v;
  products.m = input.v + s.v_words;
  products.blocks = (s.orows + CK_QWG_TASK_ROWS - 1) / CK_QWG_TASK_ROWS;
  products.product = ck_qwg_product();
#if defined(CK_QWG_AVX2)
  if (products.product == ck_qwg_product_avx2) { /* the transforms follow the products' instruction set */
    input_fn = ck_qwg_input_avx2;
    output_fn = ck_qwg_output_avx2;
  }
#endif
  output.m = products.m;
  output.bias = bias;
  output.scale = scale;
  /* the slack past the bordered planes and past the products, read by lanes beyond a row's end (never used) */
  memset(ws + c->channels * s.ph * s.pw, border.fill, (size_t)(s.border_bytes - c->channels * s.ph * s.pw));
  memset(products.m + s.m_words - CK_QWG_LANES, 0, CK_QWG_LANES * sizeof(uint32_t));
  for (image = 0; image < c->batch; ++image) {
    const int64_t out_at = image * c->out_channels * oh * ow;
    border.in = data + image * c->channels * c->height * c->width;
    ck_parallel_range(c->channels, 1, ck_qwg_border, &border);
    ck_parallel_range(s.pairs, 1, input_fn, &input);
    byoc_parallel_for((int32_t)(CK_QWG_POSITIONS * products.blocks), ck_qwg_products, &products);
    output.out = out + out_at;
    output.post = NULL;
    if (post != NULL) {
      part = *post;
      part.residual = post->residual + out_at;
      output.post = &part;
    }
    ck_parallel_range(c->out_channels, 1, output_fn, &output);
  }
}
