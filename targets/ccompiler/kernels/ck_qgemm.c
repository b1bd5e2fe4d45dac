/* ck_qgemm.c - the int8 GEMM core: uint8 activations x int8 weights -> int32, requantized.
 *
 * C[m, n] = sum_k A[m, k] * B[k, n]: A is the weight, packed ahead of time row-major with rows
 * padded to 4 k (and to 8 rows, zeros); B (activations) is packed per call, one panel of 32
 * columns at a time, as 32 columns x 4 consecutive k (128 bytes per k-step), int8 data offset by
 * 128 into uint8 on the way (the bias folded at codegen time compensates). That is the operand
 * shape of x86's vpdpbusd (4 uint8 x int8 products summed into each int32 lane): the AVX512-VNNI
 * micro-kernel keeps an 8 x 32 int32 tile in 16 registers, reading one 4-byte weight group per row
 * as a broadcast. Where the CPU has AMX (Intel's tile unit, Sapphire Rapids on) and Linux grants the
 * process its tile state, blocks of 32 rows x 32 columns run on it instead: tdpbsud multiplies a
 * 16 x 64-byte tile of weight rows (the row-major packing read as it is) with a 16 x 64-byte tile of
 * the panel (16 k-steps of 16 columns, the same bytes vpdpbusd reads) into 16 x 16 int32, four such
 * tiles per block. Elsewhere (other CPUs, other compilers) a portable C kernel computes the same
 * tile. Every path sums the same int32 products exactly, so all give the same bytes. The epilogue
 * requantizes a tile row by row: float32(acc + bias) * scale, rounded to nearest even, + zero point,
 * clamped (byoc's qnn.requantize, rounding="float32").
 */
#if defined(__linux__) && defined(__x86_64__) && !defined(BYOC_FREESTANDING) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* syscall() for arch_prctl (AMX's tile state) */
#endif
#include <math.h>
#include <string.h>

#include "ck_qinternal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
#define CK_QDISPATCH 1
#include <immintrin.h>
#endif

/* AMX: an x86-64 Linux process must ask the kernel for the tile state (arch_prctl) before its first tile
 * instruction; gcc 11 and clang 12 on have the intrinsics. Never on bare metal. */
#if defined(CK_QDISPATCH) && defined(__linux__) && !defined(BYOC_FREESTANDING) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11))
#define CK_QAMX 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

int ck_qparams_valid(const ck_qparams *q) {
  const int32_t lo = q->output_signed ? -128 : 0, hi = q->output_signed ? 127 : 255;
  const int32_t in_lo = q->input_signed ? -128 : 0, in_hi = q->input_signed ? 127 : 255;
  return q->out_min >= lo && q->out_max <= hi && q->out_min <= q->out_max && q->output_zero_point >= lo &&
         q->output_zero_point <= hi && q->input_zero_point >= in_lo && q->input_zero_point <= in_hi &&
         (q->rounding == 0 || q->rounding == 1);
}

/* ---- requantization ------------------------------------------------------------------------- */

static int32_t ck_requant1(int32_t acc, int32_t bias, float scale, float lo, float hi, int32_t zp) {
  /* int32 wrap-around like the reference's int32 add; the product stored rounds to float32 even
   * where float math runs wider (FLT_EVAL_METHOD != 0) */
  const int32_t v = (int32_t)((uint32_t)acc + (uint32_t)bias);
  float p = (float)v * scale;
  p = p < lo ? lo : (p > hi ? hi : p); /* integer bounds: clamping first rounds the same */
  return (int32_t)nearbyintf(p) + zp;
}

static void ck_qrequant_row_portable(int64_t n, const int32_t *acc, int32_t bias, float scale, const ck_qparams *q,
                                     uint8_t *out) {
  const int32_t zp = q->output_zero_point;
  const float lo = (float)(q->out_min - zp), hi = (float)(q->out_max - zp);
  int64_t x;
  if (q->output_signed) {
    int8_t *o = (int8_t *)out;
    for (x = 0; x < n; ++x) o[x] = (int8_t)ck_requant1(acc[x], bias, scale, lo, hi, zp);
  } else {
    for (x = 0; x < n; ++x) out[x] = (uint8_t)ck_requant1(acc[x], bias, scale, lo, hi, zp);
  }
}

/* ---- TFLite's requantization (q->rounding 1) -------------------------------------------------- */

/* out[x] = clamp(MultiplyByQuantizedMultiplier(acc[x] + bias, me[0], me[1]) + zero point) */
static void ck_qrequant_row_tfl_portable(int64_t n, const int32_t *acc, int32_t bias, const int32_t *me,
                                         const ck_qparams *q, uint8_t *out) {
  int32_t left, right;
  int64_t x;
  ck_tfl_shifts(me[1], &left, &right);
  for (x = 0; x < n; ++x) {
    const int32_t v = (int32_t)((uint32_t)acc[x] + (uint32_t)bias);
    int64_t r = (int64_t)ck_tfl_scale1(v, me[0], left, right) + q->output_zero_point;
    r = r < q->out_min ? q->out_min : (r > q->out_max ? q->out_max : r);
    out[x] = (uint8_t)r; /* int8 values: their two's-complement byte */
  }
}

/* ---- B panels --------------------------------------------------------------------------------- */

static const uint8_t *ck_qb_row(const ck_qb_source *b, int64_t k) {
  return b->base + (b->rows != NULL ? (int64_t)b->rows[k] : k) * b->row_stride;
}

/* panel[(k / 4) * 128 + j * 4 + k % 4] = B[k, n0 + j] ^ flip for k < K, j < cols; 0 elsewhere. */
static void ck_qpack_b(int64_t k, int64_t n0, int64_t cols, const ck_qb_source *b, uint8_t *panel) {
  const int64_t k4 = ck_qround_up(k, 4);
  int64_t p;
  if (b->pack != NULL) {
    b->pack(b, k, n0, cols, panel);
    return;
  }
  if (cols < CK_QNR || k4 != k) memset(panel, 0, (size_t)(k4 * CK_QNR));
  if (b->col_stride == 1) {
    /* a last panel of fewer columns (ResNet's 28x28, 14x14 and 7x7 planes end in 16, 4 and 17) goes through rows
     * padded with `flip`, which the interleave turns into the zeros past the columns: the same panel, vectorized */
    uint8_t tmp[4][CK_QNR];
    for (p = 0; p + 4 <= k; p += 4) {
      const uint8_t *r0 = ck_qb_row(b, p) + n0, *r1 = ck_qb_row(b, p + 1) + n0;
      const uint8_t *r2 = ck_qb_row(b, p + 2) + n0, *r3 = ck_qb_row(b, p + 3) + n0;
      if (cols < CK_QNR) {
        memset(tmp, b->flip, sizeof tmp);
        memcpy(tmp[0], r0, (size_t)cols);
        memcpy(tmp[1], r1, (size_t)cols);
        memcpy(tmp[2], r2, (size_t)cols);
        memcpy(tmp[3], r3, (size_t)cols);
        ck_qinterleave4(tmp[0], tmp[1], tmp[2], tmp[3], b->flip, panel + p * CK_QNR);
        continue;
      }
      ck_qinterleave4(r0, r1, r2, r3, b->flip, panel + p * CK_QNR);
    }
    for (; p < k; ++p) {
      int64_t j;
      const uint8_t *r = ck_qb_row(b, p) + n0;
      for (j = 0; j < cols; ++j) panel[(p / 4) * 4 * CK_QNR + j * 4 + p % 4] = (uint8_t)(r[j] ^ b->flip);
    }
    return;
  }
  for (p = 0; p < k; ++p) {
    const uint8_t *r = ck_qb_row(b, p) + n0 * b->col_stride;
    uint8_t *dst = panel + (p / 4) * 4 * CK_QNR + p % 4;
    int64_t j;
    for (j = 0; j < cols; ++j) dst[j * 4] = (uint8_t)(r[j * b->col_stride] ^ b->flip);
  }
}

/* ---- micro-kernels: acc[8][32] = sum over k-steps of the A tile x the B panel ------------------ */

typedef void (*ck_qtile_fn)(int64_t steps, const int8_t *a, const uint8_t *b, int64_t cols, int32_t *acc);
typedef void (*ck_qrow_fn)(int64_t n, const int32_t *acc, int32_t bias, float scale, const ck_qparams *q,
                           uint8_t *out);
/* The tile and its requantization: rows x cols of out (row stride ldo, unit column stride). */
typedef void (*ck_qfix_fn)(int64_t rows, const ck_qfix *fix, int64_t m0, const uint8_t *panel, int64_t cols,
                           int32_t *acc);
typedef void (*ck_qfused_fn)(int64_t steps, const int8_t *a, const uint8_t *b, int64_t rows, int64_t cols,
                             const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out, int64_t ldo);

static void ck_qtile_portable(int64_t steps, const int8_t *a, const uint8_t *b, int64_t cols, int32_t *acc) {
  int64_t s;
  int i, j;
  (void)cols;
  for (i = 0; i < CK_QMR * CK_QNR; ++i) acc[i] = 0;
  for (s = 0; s < steps; ++s) {
    const int8_t *as = a + s * 4;   /* row i of the packed weight at i * 4 * steps */
    const uint8_t *bs = b + s * 4 * CK_QNR;
    for (i = 0; i < CK_QMR; ++i) {
      const int8_t *wi = as + i * 4 * steps;
      const int32_t w0 = wi[0], w1 = wi[1], w2 = wi[2], w3 = wi[3];
      int32_t *row = acc + i * CK_QNR;
      for (j = 0; j < CK_QNR; ++j)
        row[j] += w0 * bs[4 * j] + w1 * bs[4 * j + 1] + w2 * bs[4 * j + 2] + w3 * bs[4 * j + 3];
    }
  }
}

static void ck_qrequant_row_portable(int64_t n, const int32_t *acc, int32_t bias, float scale, const ck_qparams *q,
                                     uint8_t *out);

/* A pair-safe weight's corrections added to a tile's sums: rows [m0, m0 + rows) of the GEMM (at most CK_QMR, m0 a
 * multiple of it; acc row stride CK_QNR), columns [0, cols) of the panel. The rows' entries are one run of the
 * table, each naming its row in the tile (ck_qnn.h). */
static void ck_qfix_portable(int64_t rows, const ck_qfix *fix, int64_t m0, const uint8_t *panel, int64_t cols,
                             int32_t *acc) {
  const int32_t e1 = ck_qle32(fix->row_start + 4 * (m0 + rows));
  int32_t e;
  int64_t j, t;
  for (e = ck_qle32(fix->row_start + 4 * m0); e < e1; ++e) {
    const uint8_t *entry = fix->entries + 8 * e;
    const uint32_t where = (uint32_t)ck_qle32(entry);
    const uint8_t *b = panel + (int64_t)(where >> 3) * 4 * CK_QNR;
    int32_t *row = acc + (where & 7u) * CK_QNR;
    for (j = 0; j < cols; ++j)
      for (t = 0; t < 4; ++t) row[j] += (int32_t)(int8_t)entry[4 + t] * (int32_t)b[4 * j + t];
  }
}

static void ck_qfused_portable(int64_t steps, const int8_t *a, const uint8_t *b, int64_t rows, int64_t cols,
                               const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out,
                               int64_t ldo) {
  int32_t acc[CK_QMR * CK_QNR];
  int64_t i;
  ck_qtile_portable(steps, a, b, cols, acc);
  for (i = 0; i < rows; ++i) ck_qrequant_row_portable(cols, acc + i * CK_QNR, bias[i], scale[i], q, out + i * ldo);
}

#if defined(CK_QDISPATCH)
#define CK_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/* One k-step: 8 rows x (1 or 2) vectors of 16 columns, the row's 4 weights broadcast. */
#define CK_VNNI_ROW(I)                                                          \
  do {                                                                          \
    int32_t w_;                                                                 \
    memcpy(&w_, a + (I) * lda_, sizeof w_);                                     \
    acc##I##0 = _mm512_dpbusd_epi32(acc##I##0, b0, _mm512_set1_epi32(w_));      \
    if (wide) acc##I##1 = _mm512_dpbusd_epi32(acc##I##1, b1, _mm512_set1_epi32(w_)); \
  } while (0)
/* The 8 x 32 tile's k-loop: declares the 16 accumulators acc<row><half> (registers, hence a macro: both
 * callers keep them live into their own store or epilogue) and runs `steps` packed k-steps over a, b. */
#define CK_VNNI_ACCUMULATE()                                                                         \
  __m512i acc00 = _mm512_setzero_si512(), acc01 = acc00, acc10 = acc00, acc11 = acc00, acc20 = acc00, \
          acc21 = acc00, acc30 = acc00, acc31 = acc00, acc40 = acc00, acc41 = acc00, acc50 = acc00,   \
          acc51 = acc00, acc60 = acc00, acc61 = acc00, acc70 = acc00, acc71 = acc00;                  \
  const int64_t lda_ = 4 * steps; /* the packed weight's row stride */                              \
  int64_t s_;                                                                                        \
  for (s_ = 0; s_ < steps; ++s_, a += 4, b += 4 * CK_QNR) {                                          \
    const __m512i b0 = _mm512_loadu_si512((const void *)b);                                          \
    const __m512i b1 = wide ? _mm512_loadu_si512((const void *)(b + 64)) : b0;                       \
    CK_VNNI_ROW(0);                                                                                  \
    CK_VNNI_ROW(1);                                                                                  \
    CK_VNNI_ROW(2);                                                                                  \
    CK_VNNI_ROW(3);                                                                                  \
    CK_VNNI_ROW(4);                                                                                  \
    CK_VNNI_ROW(5);                                                                                  \
    CK_VNNI_ROW(6);                                                                                  \
    CK_VNNI_ROW(7);                                                                                  \
  }
#define CK_VNNI_STORE(I)                                                                 \
  do {                                                                                   \
    _mm512_storeu_si512((void *)(acc + (I) * CK_QNR), acc##I##0);                        \
    _mm512_storeu_si512((void *)(acc + (I) * CK_QNR + 16), acc##I##1);                   \
  } while (0)

CK_VNNI_TARGET static void ck_qtile_vnni(int64_t steps, const int8_t *a, const uint8_t *b, int64_t cols,
                                         int32_t *acc) {
  const int wide = cols > 16;
  CK_VNNI_ACCUMULATE();
  CK_VNNI_STORE(0);
  CK_VNNI_STORE(1);
  CK_VNNI_STORE(2);
  CK_VNNI_STORE(3);
  CK_VNNI_STORE(4);
  CK_VNNI_STORE(5);
  CK_VNNI_STORE(6);
  CK_VNNI_STORE(7);
}

CK_VNNI_TARGET static void ck_qrequant_row_avx512(int64_t n, const int32_t *acc, int32_t bias, float scale,
                                                  const ck_qparams *q, uint8_t *out) {
  const __m512i vbias = _mm512_set1_epi32(bias), vzp = _mm512_set1_epi32(q->output_zero_point);
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512 lo = _mm512_set1_ps((float)(q->out_min - q->output_zero_point));
  const __m512 hi = _mm512_set1_ps((float)(q->out_max - q->output_zero_point));
  int64_t x;
  for (x = 0; x < n; x += 16) {
    const __mmask16 mask = n - x >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - x)) - 1u);
    const __m512i v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(mask, (const void *)(acc + x)), vbias);
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), vscale);
    __m512i r;
    f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
    r = _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzp);
    /* in range of the output type already: truncating to bytes is exact for int8 and uint8 */
    _mm_mask_storeu_epi8((void *)(out + x), mask, _mm512_cvtepi32_epi8(r));
  }
}

typedef struct {
  __m512i zp;
  __m512 lo, hi;
} ck_qepilogue;

/* 16 lanes of requantization, stored as bytes under `mask` (ck_requant1 lane by lane). */
CK_VNNI_TARGET static inline void ck_qrequant16(__m512i acc, int32_t bias, float scale, const ck_qepilogue *e,
                                                __mmask16 mask, uint8_t *out) {
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc, _mm512_set1_epi32(bias))), _mm512_set1_ps(scale));
  __m512i r;
  f = _mm512_min_ps(_mm512_max_ps(f, e->lo), e->hi);
  r = _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), e->zp);
  _mm_mask_storeu_epi8((void *)out, mask, _mm512_cvtepi32_epi8(r));
}

#define CK_VNNI_EPILOGUE(I)                                                               \
  do {                                                                                    \
    if ((I) < rows) {                                                                     \
      ck_qrequant16(acc##I##0, bias[I], scale[I], &e, mask0, out + (I) * ldo);            \
      if (wide) ck_qrequant16(acc##I##1, bias[I], scale[I], &e, mask1, out + (I) * ldo + 16); \
    }                                                                                     \
  } while (0)

/* The 8 x 32 tile requantized straight from its registers. */
CK_VNNI_TARGET static void ck_qfused_vnni(int64_t steps, const int8_t *a, const uint8_t *b, int64_t rows, int64_t cols,
                                          const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out,
                                          int64_t ldo) {
  const int wide = cols > 16;
  const __mmask16 mask0 = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1u);
  const __mmask16 mask1 = cols >= 32 ? (__mmask16)0xFFFF : (__mmask16)(cols > 16 ? (1u << (cols - 16)) - 1u : 0u);
  ck_qepilogue e;
  CK_VNNI_ACCUMULATE();
  e.zp = _mm512_set1_epi32(q->output_zero_point);
  e.lo = _mm512_set1_ps((float)(q->out_min - q->output_zero_point));
  e.hi = _mm512_set1_ps((float)(q->out_max - q->output_zero_point));
  CK_VNNI_EPILOGUE(0);
  CK_VNNI_EPILOGUE(1);
  CK_VNNI_EPILOGUE(2);
  CK_VNNI_EPILOGUE(3);
  CK_VNNI_EPILOGUE(4);
  CK_VNNI_EPILOGUE(5);
  CK_VNNI_EPILOGUE(6);
  CK_VNNI_EPILOGUE(7);
}

CK_VNNI_TARGET static void ck_qrequant_row_tfl_avx512(int64_t n, const int32_t *acc, int32_t bias, const int32_t *me,
                                                      const ck_qparams *q, uint8_t *out) {
  const __m512i vbias = _mm512_set1_epi32(bias), vzp = _mm512_set1_epi32(q->output_zero_point);
  const __m512i lo = _mm512_set1_epi32(q->out_min - q->output_zero_point);
  const __m512i hi = _mm512_set1_epi32(q->out_max - q->output_zero_point);
  int32_t left, right;
  int64_t x;
  ck_tfl_shifts(me[1], &left, &right);
  for (x = 0; x < n; x += 16) {
    const __mmask16 mask = n - x >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - x)) - 1u);
    const __m512i v = _mm512_add_epi32(_mm512_maskz_loadu_epi32(mask, (const void *)(acc + x)), vbias);
    /* clamped before the zero point is added: no int32 wrap-around */
    const __m512i r = _mm512_min_epi32(_mm512_max_epi32(ck_tfl_scale16(v, me[0], left, right), lo), hi);
    _mm_mask_storeu_epi8((void *)(out + x), mask, _mm512_cvtepi32_epi8(_mm512_add_epi32(r, vzp)));
  }
}

/* ---- depthwise over a whole bordered plane: AVX512-VBMI + VNNI ---------------------------------- */

/* what ck_qdw_plane_vbmi takes: up to 8 x 8 taps, 16 outputs' taps of a row within one 64-byte load */
static int ck_qdw_plane_fits(const ck_conv2d_params *c) {
  return c->kernel_w <= 8 && c->kernel_h <= 8 && 15 * c->stride_w + (c->kernel_w - 1) * c->dilation_w < 64;
}

#define CK_VBMI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

/* TFLite's requantization (me: multiplier, exponent) or byoc's float32 one (scale) of 16 sums + bias, stored
 * as bytes under mask */
typedef struct {
  int32_t tfl, left, right, mult;
  float scale;
  __m512i ilo, ihi, zp;
  ck_qepilogue e;
} ck_qdw_epilogue;

CK_VBMI_TARGET static inline void ck_qdw_store16(__m512i acc, int32_t bias, const ck_qdw_epilogue *d, __mmask16 mask,
                                                 uint8_t *out) {
  if (d->tfl) {
    const __m512i v = ck_tfl_scale16(_mm512_add_epi32(acc, _mm512_set1_epi32(bias)), d->mult, d->left, d->right);
    const __m512i r = _mm512_min_epi32(_mm512_max_epi32(v, d->ilo), d->ihi);
    _mm_mask_storeu_epi8((void *)out, mask, _mm512_cvtepi32_epi8(_mm512_add_epi32(r, d->zp)));
  } else {
    ck_qrequant16(acc, bias, d->scale, &d->e, mask, out);
  }
}

/* 16 outputs at column step `sw` from p: per kernel row i and group g of 4 taps, the 4 taps' bytes of every
 * output gathered into its int32 lane (vpermb of one 64-byte load) and multiplied with the 4 weights
 * (vpdpbusd); int8 input flipped into uint8 (the bias carries -128 * the weights' sum). */
CK_VBMI_TARGET static inline __m512i ck_qdw_sum16_vbmi(const uint8_t *p, int64_t row_step, int64_t kh, int64_t groups,
                                                       const __m512i *idx, const __m512i *wv, __m512i flip) {
  __m512i acc = _mm512_setzero_si512();
  int64_t i, g;
  for (i = 0; i < kh; ++i) {
    const __m512i v = _mm512_xor_si512(_mm512_loadu_si512((const void *)(p + i * row_step)), flip);
    for (g = 0; g < groups; ++g)
      acc = _mm512_dpbusd_epi32(acc, _mm512_permutexvar_epi8(idx[g], v), wv[i * groups + g]);
  }
  return acc;
}

/* One channel's outputs from its plane bordered with the zero point (ph x pw, 64 bytes readable past it):
 * stride-1 planes whose rows are narrow as one flat pass over oh x pw positions (into flat, then the ow
 * columns of each row copied out), others row by row, 16 columns at a time. 0: not this kernel's shape
 * (windows over 8 columns or 16 outputs' taps beyond one 64-byte load, more than 8 rows). */
CK_VBMI_TARGET static int ck_qdw_plane_vbmi(const ck_conv2d_params *c, const uint8_t *index, const uint8_t *pad,
                                            int64_t pw, int64_t oh, int64_t ow, const int8_t *w, int32_t bias,
                                            const float *scale, const ck_qparams *q, uint8_t *out, uint8_t *flat) {
  const int64_t kw = c->kernel_w, kh = c->kernel_h, sw = c->stride_w, groups = (kw + 3) / 4;
  __m512i idx[2], wv[16];
  ck_qdw_epilogue d;
  int32_t wsum = 0;
  int64_t i, g, t, x, y;
  if (!ck_qdw_plane_fits(c)) return 0;
  for (g = 0; g < groups; ++g) {
    idx[g] = _mm512_loadu_si512((const void *)(index + 64 * g));
    for (i = 0; i < kh; ++i) {
      int8_t q4[4];
      int32_t word;
      for (t = 0; t < 4; ++t) q4[t] = 4 * g + t < kw ? w[i * kw + 4 * g + t] : 0;
      memcpy(&word, q4, sizeof word);
      wv[i * groups + g] = _mm512_set1_epi32(word);
    }
  }
  for (t = 0; t < kh * kw; ++t) wsum += w[t];
  if (q->input_signed) bias = (int32_t)((uint32_t)bias - 128u * (uint32_t)wsum);
  d.tfl = q->rounding == 1;
  d.mult = d.tfl ? ((const int32_t *)(const void *)scale)[0] : 0;
  ck_tfl_shifts(d.tfl ? ((const int32_t *)(const void *)scale)[1] : 0, &d.left, &d.right);
  d.scale = d.tfl ? 0.0f : scale[0];
  d.ilo = _mm512_set1_epi32(q->out_min - q->output_zero_point);
  d.ihi = _mm512_set1_epi32(q->out_max - q->output_zero_point);
  d.zp = d.e.zp = _mm512_set1_epi32(q->output_zero_point);
  d.e.lo = _mm512_set1_ps((float)(q->out_min - q->output_zero_point));
  d.e.hi = _mm512_set1_ps((float)(q->out_max - q->output_zero_point));
  {
    const __m512i flip = _mm512_set1_epi8((char)(q->input_signed ? 0x80 : 0));
    const int64_t row_step = c->dilation_h * pw;
    if (sw == 1 && c->stride_h == 1 && (oh * pw + 15) / 16 < oh * ((ow + 15) / 16)) {
      for (x = 0; x < oh * pw; x += 16) {
        const int64_t n = oh * pw - x < 16 ? oh * pw - x : 16;
        ck_qdw_store16(ck_qdw_sum16_vbmi(pad + x, row_step, kh, groups, idx, wv, flip), bias, &d,
                       (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u), flat + x);
      }
      for (y = 0; y < oh; ++y) ck_qcopy_row(out + y * ow, flat + y * pw, ow);
      return 1;
    }
    for (y = 0; y < oh; ++y)
      for (x = 0; x < ow; x += 16) {
        const int64_t n = ow - x < 16 ? ow - x : 16;
        ck_qdw_store16(ck_qdw_sum16_vbmi(pad + y * c->stride_h * pw + x * sw, row_step, kh, groups, idx, wv, flip),
                       bias, &d, (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u), out + y * ow + x);
      }
  }
  return 1;
}

/* ---- AVX2 without VNNI: exact products, two at a time in vpmaddwd --------------------------------
 * vpmaddubsw would sum two uint8 x int8 products in int16, which saturates (255 * 127 * 2 > 32767: the
 * reason onnxruntime's AVX2 kernels are not exact). Here a panel k-step's 4 bytes of a column (one int32
 * lane) are split into its even and odd bytes zero-extended to int16 (and, shift), the row's 4 weights into
 * theirs sign-extended, and vpmaddwd sums each pair of exact int16 products into int32: two multiplies per
 * 32 products, as many as vpmaddubsw + vpmaddwd take. The tile's weights are split once per block of
 * CK_AVX2_KB k-steps into a stack copy (32 bytes of a row at a time), so the inner loop broadcasts them from
 * memory; the 8 x 32 tile runs as 4 x 16 quarters. */
#define CK_AVX2_TARGET __attribute__((target("avx2")))
#define CK_AVX2_KB 128 /* k-steps per block: the 8 rows' split weights take 8 KB */

/* even[i * CK_AVX2_KB + s], odd[...]: row i's k-step s as the int16 pairs (w0, w2) and (w1, w3). Reads up to
 * 28 bytes past a row's `steps` k-steps: the next row's, or the packed weight's slack. */
CK_AVX2_TARGET static void ck_qsplit_weights_avx2(const int8_t *a, int64_t lda, int64_t steps, int32_t *even,
                                                  int32_t *odd) {
  int64_t i, s;
  for (i = 0; i < CK_QMR; ++i)
    for (s = 0; s < steps; s += 8) {
      const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(a + i * lda + 4 * s));
      _mm256_storeu_si256((__m256i *)(void *)(even + i * CK_AVX2_KB + s),
                          _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8));
      _mm256_storeu_si256((__m256i *)(void *)(odd + i * CK_AVX2_KB + s), _mm256_srai_epi16(v, 8));
    }
}

/* each product added to its accumulator at once: the empty asm keeps the compiler from summing the products
 * first (integer adds reassociate), which needs more registers than the 16 and spills accumulators */
#define CK_AVX2_MADD(ACC, X, W)                                             \
  do {                                                                      \
    ACC = _mm256_add_epi32(ACC, _mm256_madd_epi16(X, _mm256_set1_epi32(W))); \
    __asm__("" : "+x"(ACC));                                                \
  } while (0)
#define CK_AVX2_ROW(I)                                   \
  do {                                                   \
    CK_AVX2_MADD(acc##I##0, e0, even[(I) * CK_AVX2_KB + s]); \
    CK_AVX2_MADD(acc##I##1, e1, even[(I) * CK_AVX2_KB + s]); \
    CK_AVX2_MADD(acc##I##0, o0, odd[(I) * CK_AVX2_KB + s]);  \
    CK_AVX2_MADD(acc##I##1, o1, odd[(I) * CK_AVX2_KB + s]);  \
  } while (0)
#define CK_AVX2_ACC(I, J) _mm256_loadu_si256((const __m256i *)(const void *)(acc + (I) * CK_QNR + 8 * (J)))
#define CK_AVX2_STORE(I, J) _mm256_storeu_si256((__m256i *)(void *)(acc + (I) * CK_QNR + 8 * (J)), acc##I##J)
/* a quarter's 8 accumulators, from acc or (first) zero, and back to acc */
#define CK_AVX2_QUARTER_SUMS                                                                        \
  const __m256i z = _mm256_setzero_si256();                                                         \
  __m256i acc00 = first ? z : CK_AVX2_ACC(0, 0), acc01 = first ? z : CK_AVX2_ACC(0, 1),             \
          acc10 = first ? z : CK_AVX2_ACC(1, 0), acc11 = first ? z : CK_AVX2_ACC(1, 1),             \
          acc20 = first ? z : CK_AVX2_ACC(2, 0), acc21 = first ? z : CK_AVX2_ACC(2, 1),             \
          acc30 = first ? z : CK_AVX2_ACC(3, 0), acc31 = first ? z : CK_AVX2_ACC(3, 1)
#define CK_AVX2_QUARTER_STORE \
  do {                        \
    CK_AVX2_STORE(0, 0);      \
    CK_AVX2_STORE(0, 1);      \
    CK_AVX2_STORE(1, 0);      \
    CK_AVX2_STORE(1, 1);      \
    CK_AVX2_STORE(2, 0);      \
    CK_AVX2_STORE(2, 1);      \
    CK_AVX2_STORE(3, 0);      \
    CK_AVX2_STORE(3, 1);      \
  } while (0)

/* acc[i * CK_QNR + j] (+)= split weight rows 0..3 x panel columns 0..15 of b over `steps` k-steps (`first`: the
 * sums start at zero, acc not read): 8 accumulators, the two column vectors' even and odd halves, a broadcast
 * weight and a product: 14 of the 16 registers. */
CK_AVX2_TARGET static void ck_qquarter_avx2(int64_t steps, const int32_t *even, const int32_t *odd, const uint8_t *b,
                                            int first, int32_t *acc) {
  CK_AVX2_QUARTER_SUMS;
  int64_t s;
  for (s = 0; s < steps; ++s, b += 4 * CK_QNR) {
    const __m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)b);
    const __m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(b + 32));
    const __m256i mask = _mm256_set1_epi32(0x00FF00FF);
    const __m256i e0 = _mm256_and_si256(v0, mask), o0 = _mm256_srli_epi16(v0, 8);
    const __m256i e1 = _mm256_and_si256(v1, mask), o1 = _mm256_srli_epi16(v1, 8);
    CK_AVX2_ROW(0);
    CK_AVX2_ROW(1);
    CK_AVX2_ROW(2);
    CK_AVX2_ROW(3);
  }
  CK_AVX2_QUARTER_STORE;
}

#define CK_AVX2_MADD8(I)                                             \
  do {                                                               \
    CK_AVX2_MADD(acc##I, e, even[(I) * CK_AVX2_KB + s]);             \
    CK_AVX2_MADD(acc##I, o, odd[(I) * CK_AVX2_KB + s]);              \
  } while (0)
#define CK_AVX2_ACC8(I) _mm256_loadu_si256((const __m256i *)(const void *)(acc + (I) * CK_QNR))
#define CK_AVX2_STORE8(I) _mm256_storeu_si256((__m256i *)(void *)(acc + (I) * CK_QNR), acc##I)
/* an eighth's 8 accumulators (one a row), from acc or (first) zero, and back to acc */
#define CK_AVX2_EIGHTH_SUMS                                                                                      \
  const __m256i z = _mm256_setzero_si256();                                                                      \
  __m256i acc0 = first ? z : CK_AVX2_ACC8(0), acc1 = first ? z : CK_AVX2_ACC8(1), acc2 = first ? z : CK_AVX2_ACC8(2), \
          acc3 = first ? z : CK_AVX2_ACC8(3), acc4 = first ? z : CK_AVX2_ACC8(4), acc5 = first ? z : CK_AVX2_ACC8(5), \
          acc6 = first ? z : CK_AVX2_ACC8(6), acc7 = first ? z : CK_AVX2_ACC8(7)
#define CK_AVX2_EIGHTH_STORE \
  do {                       \
    CK_AVX2_STORE8(0);       \
    CK_AVX2_STORE8(1);       \
    CK_AVX2_STORE8(2);       \
    CK_AVX2_STORE8(3);       \
    CK_AVX2_STORE8(4);       \
    CK_AVX2_STORE8(5);       \
    CK_AVX2_STORE8(6);       \
    CK_AVX2_STORE8(7);       \
  } while (0)

/* acc[i * CK_QNR + j] (+)= split weight rows 0..7 x panel columns 0..7 of b: a panel's last 8 columns or fewer
 * (ResNet's 7x7 planes are 49 columns, its 14x14 ones 196: a 16-column quarter for the last 1 or 4 computed 15
 * or 12 columns of zeros, 23% and 11% of those layers' products). All 8 rows at once: one column vector split per
 * k-step for 8 rows, 8 accumulators. */
CK_AVX2_TARGET static void ck_qeighth_avx2(int64_t steps, const int32_t *even, const int32_t *odd, const uint8_t *b,
                                           int first, int32_t *acc) {
  CK_AVX2_EIGHTH_SUMS;
  int64_t s;
  for (s = 0; s < steps; ++s, b += 4 * CK_QNR) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)b);
    const __m256i e = _mm256_and_si256(v, _mm256_set1_epi32(0x00FF00FF)), o = _mm256_srli_epi16(v, 8);
    CK_AVX2_MADD8(0);
    CK_AVX2_MADD8(1);
    CK_AVX2_MADD8(2);
    CK_AVX2_MADD8(3);
    CK_AVX2_MADD8(4);
    CK_AVX2_MADD8(5);
    CK_AVX2_MADD8(6);
    CK_AVX2_MADD8(7);
  }
  CK_AVX2_EIGHTH_STORE;
}

/* the 8 x 32 tile as its 4 x 16 quarters, block by block of k, the columns past the last whole 16 (if any are
 * used) as an 8 x 8 eighth or a quarter; the columns past `cols`' last 8 are not computed (their sums unused, not
 * written). The first block starts its sums at zero in registers: clearing the 1 KB tile with memset (a
 * `rep stos`) was 12% of a 64 -> 256-channel 1x1 conv's time (16 k-steps a tile). */
CK_AVX2_TARGET static void ck_qtile_avx2(int64_t steps, const int8_t *a, const uint8_t *b, int64_t cols,
                                         int32_t *acc) {
  int32_t even[CK_QMR * CK_AVX2_KB], odd[CK_QMR * CK_AVX2_KB];
  int64_t s0, rows, half;
  if (steps <= 0) memset(acc, 0, sizeof(int32_t) * CK_QMR * CK_QNR);
  for (s0 = 0; s0 < steps; s0 += CK_AVX2_KB) {
    const int64_t n = steps - s0 < CK_AVX2_KB ? steps - s0 : CK_AVX2_KB;
    const uint8_t *bs = b + s0 * 4 * CK_QNR;
    ck_qsplit_weights_avx2(a + 4 * s0, 4 * steps, n, even, odd);
    for (half = 0; half < cols; half += 16) {
      if (cols - half <= 8) {
        ck_qeighth_avx2(n, even, odd, bs + half * 4, s0 == 0, acc + half);
        continue;
      }
      for (rows = 0; rows < CK_QMR; rows += 4)
        ck_qquarter_avx2(n, even + rows * CK_AVX2_KB, odd + rows * CK_AVX2_KB, bs + half * 4, s0 == 0,
                         acc + rows * CK_QNR + half);
    }
  }
}

/* ---- AVX2 on pair-safe weights (ck_qconv2d_params.pairs): two products a pair in vpmaddubsw --------------
 * vpmaddubsw sums each pair of uint8 x int8 products in int16; no pair of a pair-safe weight can pass 255 * 128 in
 * magnitude (its same-sign pairs sum to at most 128), so nothing saturates and vpmaddwd by ones sums the two pairs
 * of a 4-byte lane into int32 exactly: three instructions per 32 products, onnxruntime's sequence, where the
 * widening kernel above takes four and splits the panel. The weights are read as they are packed (a row's 4 bytes
 * of a k-step broadcast), the k-steps in blocks of CK_AVX2_KB so the panel's block stays in L1 for the tile's four
 * quarters; the taken-out products come back through the correction table (ck_qfix_avx2). */
#define CK_AVX2_UBS(ACC, X, W)                                                          \
  do {                                                                                  \
    ACC = _mm256_add_epi32(ACC, _mm256_madd_epi16(_mm256_maddubs_epi16(X, W), ones)); \
    __asm__("" : "+x"(ACC));                                                            \
  } while (0)
#define CK_AVX2_WEIGHT(I) _mm256_set1_epi32(ck_qload32(a + (I) * lda + 4 * s))
#define CK_AVX2_UBS_ROW(I)                        \
  do {                                            \
    const __m256i w##I = CK_AVX2_WEIGHT(I);       \
    CK_AVX2_UBS(acc##I##0, v0, w##I);             \
    CK_AVX2_UBS(acc##I##1, v1, w##I);             \
  } while (0)

static inline int32_t ck_qload32(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* acc (+)= rows 0..3 of a (row stride lda bytes) x panel columns 0..15 of b over `steps` k-steps */
CK_AVX2_TARGET static void ck_qquarter_pairs_avx2(int64_t steps, const int8_t *a, int64_t lda, const uint8_t *b,
                                                  int first, int32_t *acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  CK_AVX2_QUARTER_SUMS;
  int64_t s;
  for (s = 0; s < steps; ++s, b += 4 * CK_QNR) {
    const __m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)b);
    const __m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(b + 32));
    CK_AVX2_UBS_ROW(0);
    CK_AVX2_UBS_ROW(1);
    CK_AVX2_UBS_ROW(2);
    CK_AVX2_UBS_ROW(3);
  }
  CK_AVX2_QUARTER_STORE;
}

#define CK_AVX2_UBS8(I) CK_AVX2_UBS(acc##I, v, CK_AVX2_WEIGHT(I))

/* acc (+)= rows 0..7 of a x panel columns 0..7 of b: a panel's last 8 columns or fewer (as ck_qeighth_avx2) */
CK_AVX2_TARGET static void ck_qeighth_pairs_avx2(int64_t steps, const int8_t *a, int64_t lda, const uint8_t *b,
                                                 int first, int32_t *acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  CK_AVX2_EIGHTH_SUMS;
  int64_t s;
  for (s = 0; s < steps; ++s, b += 4 * CK_QNR) {
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)b);
    CK_AVX2_UBS8(0);
    CK_AVX2_UBS8(1);
    CK_AVX2_UBS8(2);
    CK_AVX2_UBS8(3);
    CK_AVX2_UBS8(4);
    CK_AVX2_UBS8(5);
    CK_AVX2_UBS8(6);
    CK_AVX2_UBS8(7);
  }
  CK_AVX2_EIGHTH_STORE;
}

/* acc[i * CK_QNR + col] = rows 0..7 of a (row stride 4 * steps) x panel column `col` alone, over all `steps`
 * k-steps; the 7 columns after it in acc zeroed (the corrections add to all 8). A panel's single last column (a 7x7
 * plane: 49 = 32 + 16 + 1) through the eighth kernel computed 8 columns for it; here its bytes are gathered once
 * per block of k-steps and each row is a dot product over its contiguous k: the same pairs of k (0-1, 2-3 of a
 * step) in vpmaddubsw, so a pair-safe weight stays exact. A row's last step may be read up to 28 bytes past its end
 * (the next row, or the packed weight's CK_QKB slack) against zeros. */
CK_AVX2_TARGET static void ck_qcolumn_pairs_avx2(int64_t steps, const int8_t *a, const uint8_t *b, int64_t col,
                                                 int32_t *acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i r[CK_QMR], t0, t1, t2, t3, u0, u1, sums;
  uint8_t x[4 * CK_AVX2_KB] __attribute__((aligned(32)));
  int32_t out[CK_QMR];
  int64_t s0, s, i;
  for (i = 0; i < CK_QMR; ++i) r[i] = _mm256_setzero_si256();
  for (s0 = 0; s0 < steps; s0 += CK_AVX2_KB) {
    const int64_t n = steps - s0 < CK_AVX2_KB ? steps - s0 : CK_AVX2_KB, n8 = (n + 7) / 8 * 8;
    for (s = 0; s < n; ++s) memcpy(x + 4 * s, b + (s0 + s) * 4 * CK_QNR + 4 * col, 4);
    memset(x + 4 * n, 0, (size_t)(4 * (n8 - n)));
    for (i = 0; i < CK_QMR; ++i) { /* the row's sum in a local: r[i] indexed in the loop stayed in memory */
      const int8_t *w = a + i * 4 * steps + 4 * s0;
      __m256i sum = r[i];
      for (s = 0; s < n8; s += 8) {
        const __m256i v = _mm256_load_si256((const __m256i *)(const void *)(x + 4 * s));
        CK_AVX2_UBS(sum, v, _mm256_loadu_si256((const __m256i *)(const void *)(w + 4 * s)));
      }
      r[i] = sum;
    }
  }
  /* the 8 rows' lanes summed: pairwise adds, then the two 128-bit halves */
  t0 = _mm256_hadd_epi32(r[0], r[1]);
  t1 = _mm256_hadd_epi32(r[2], r[3]);
  t2 = _mm256_hadd_epi32(r[4], r[5]);
  t3 = _mm256_hadd_epi32(r[6], r[7]);
  u0 = _mm256_hadd_epi32(t0, t1);
  u1 = _mm256_hadd_epi32(t2, t3);
  sums = _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
  _mm256_storeu_si256((__m256i *)(void *)out, sums);
  for (i = 0; i < CK_QMR; ++i) {
    memset(acc + i * CK_QNR + col, 0, 8 * sizeof(int32_t));
    acc[i * CK_QNR + col] = out[i];
  }
}

/* ck_qtile_avx2's tile (same columns computed, same layout) on a pair-safe weight, without its corrections */
CK_AVX2_TARGET static void ck_qtile_pairs_avx2(int64_t steps, const int8_t *a, const uint8_t *b, int64_t cols,
                                               int32_t *acc) {
  const int64_t single = cols % 16 == 1 ? cols - 1 : -1; /* a last column alone: ck_qcolumn_pairs_avx2 */
  const int64_t wide = single >= 0 ? single : cols;
  int64_t s0, rows, half;
  if (steps <= 0) memset(acc, 0, sizeof(int32_t) * CK_QMR * CK_QNR);
  for (s0 = 0; s0 < steps; s0 += CK_AVX2_KB) {
    const int64_t n = steps - s0 < CK_AVX2_KB ? steps - s0 : CK_AVX2_KB;
    const uint8_t *bs = b + s0 * 4 * CK_QNR;
    for (half = 0; half < wide; half += 16) {
      if (wide - half <= 8) {
        ck_qeighth_pairs_avx2(n, a + 4 * s0, 4 * steps, bs + half * 4, s0 == 0, acc + half);
        continue;
      }
      for (rows = 0; rows < CK_QMR; rows += 4)
        ck_qquarter_pairs_avx2(n, a + rows * 4 * steps + 4 * s0, 4 * steps, bs + half * 4, s0 == 0,
                               acc + rows * CK_QNR + half);
    }
  }
  if (single >= 0) ck_qcolumn_pairs_avx2(steps, a, b, single, acc);
}

/* ck_qfix_portable in AVX2: an entry's 4 bytes broadcast against its k-step's column vectors (one nonzero a pair:
 * exact in vpmaddubsw). A row's entries are summed in registers and added to its sums once: adding each entry to
 * the sums in memory made every entry wait on the store of the one before (the same row's sums); with the sums in
 * registers a layer takes 0.93-0.98 of that time (0.91 for a 64-deep one), the loop per row's branch included. */
#define CK_AVX2_FIX(S, J)                                                                               \
  S = _mm256_add_epi32(S, _mm256_madd_epi16(_mm256_maddubs_epi16(                                       \
                              _mm256_loadu_si256((const __m256i *)(const void *)(b + 32 * (J))), w), ones))
#define CK_AVX2_FIX_ADD(S, J)                                                                              \
  _mm256_storeu_si256((__m256i *)(void *)(sums + 8 * (J)),                                                  \
                      _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(sums + 8 * (J))), S))
CK_AVX2_TARGET static void ck_qfix_avx2(int64_t rows, const ck_qfix *fix, int64_t m0, const uint8_t *panel,
                                        int64_t cols, int32_t *acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  int64_t r;
  for (r = 0; r < rows; ++r) {   /* m0 is a multiple of 8: row r's entries name r */
    const int32_t e1 = ck_qle32(fix->row_start + 4 * (m0 + r + 1));
    int32_t e = ck_qle32(fix->row_start + 4 * (m0 + r));
    int32_t *sums = acc + r * CK_QNR;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    if (e == e1) continue;
    for (; e < e1; ++e) {
      const uint8_t *entry = fix->entries + 8 * e;
      const uint8_t *b = panel + (int64_t)((uint32_t)ck_qle32(entry) >> 3) * 4 * CK_QNR;
      const __m256i w = _mm256_set1_epi32(ck_qle32(entry + 4));
      if (cols > 24) {
        CK_AVX2_FIX(s0, 0);
        CK_AVX2_FIX(s1, 1);
        CK_AVX2_FIX(s2, 2);
        CK_AVX2_FIX(s3, 3);
      } else {   /* a panel's last columns: the vectors they need */
        CK_AVX2_FIX(s0, 0);
        if (cols > 8) CK_AVX2_FIX(s1, 1);
        if (cols > 16) CK_AVX2_FIX(s2, 2);
      }
    }
    CK_AVX2_FIX_ADD(s0, 0);
    if (cols > 8) CK_AVX2_FIX_ADD(s1, 1);
    if (cols > 16) CK_AVX2_FIX_ADD(s2, 2);
    if (cols > 24) CK_AVX2_FIX_ADD(s3, 3);
  }
}

/* The requantization of 8 int32 lanes, its constants made once per row or plane: byoc's float32 one (rounding 0)
 * or TFLite's integer one (rounding 1: multiplier and exponent) */
typedef struct {
  __m256i bias, zp, ilo, ihi;
  __m256 scale, lo, hi;
  int output_signed, tfl;
  int32_t mult, left, right;
} ck_qrequant8;

CK_AVX2_TARGET static inline ck_qrequant8 ck_qrequant8_of(int32_t bias, float scale, const ck_qparams *q) {
  ck_qrequant8 r;
  r.ilo = r.ihi = _mm256_setzero_si256();
  r.tfl = 0;
  r.mult = r.left = r.right = 0;
  r.bias = _mm256_set1_epi32(bias);
  r.zp = _mm256_set1_epi32(q->output_zero_point);
  r.scale = _mm256_set1_ps(scale);
  r.lo = _mm256_set1_ps((float)(q->out_min - q->output_zero_point));
  r.hi = _mm256_set1_ps((float)(q->out_max - q->output_zero_point));
  r.output_signed = q->output_signed;
  return r;
}

/* me: TFLite's (multiplier, exponent) of the row or channel */
CK_AVX2_TARGET static inline ck_qrequant8 ck_qrequant8_tfl_of(int32_t bias, const int32_t *me, const ck_qparams *q) {
  ck_qrequant8 r = ck_qrequant8_of(bias, 0.0f, q);
  r.tfl = 1;
  r.mult = me[0];
  ck_tfl_shifts(me[1], &r.left, &r.right);
  r.ilo = _mm256_set1_epi32(q->out_min);
  r.ihi = _mm256_set1_epi32(q->out_max);
  return r;
}

/* ck_tfl_scale1 on 8 lanes: the 64-bit products of the even and the odd lanes (vpmuldq) plus the nudge, their
 * bits 31-62 (a logical shift keeps them as the arithmetic one would), interleaved; then the rounding right shift */
CK_AVX2_TARGET static inline __m256i ck_tfl_scale8(__m256i x, int32_t m, int32_t left, int32_t right) {
  const __m256i v = _mm256_sll_epi32(x, _mm_cvtsi32_si128(left)), vm = _mm256_set1_epi64x(m);
  const __m256i nudge = _mm256_set1_epi64x((int64_t)1 << 30);
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(v, vm), nudge), 31);
  const __m256i odd = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(v, 32), vm), nudge), 31);
  const __m256i h = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  const __m256i mask = _mm256_set1_epi32((int32_t)(((uint32_t)1 << right) - 1u));
  const __m256i threshold = _mm256_add_epi32(_mm256_srli_epi32(mask, 1), _mm256_srli_epi32(h, 31));
  const __m256i r = _mm256_sra_epi32(h, _mm_cvtsi32_si128(right));
  return _mm256_sub_epi32(r, _mm256_cmpgt_epi32(_mm256_and_si256(h, mask), threshold));
}

/* 8 lanes requantized, the clamped values narrowed to bytes exactly: the 8 bytes in the low half. Rounding 0:
 * ck_qrequant_row_portable's float32 operations, rounded by cvtps (ties to even in the default rounding mode, as
 * nearbyintf); rounding 1: ck_qrequant_row_tfl_portable's integer ones (the int32 add wrapping, as there). */
CK_AVX2_TARGET static inline __m128i ck_qrequant8_bytes(__m256i acc, const ck_qrequant8 *e) {
  __m256i r;
  __m128i r16;
  if (e->tfl) {
    r = _mm256_add_epi32(ck_tfl_scale8(_mm256_add_epi32(acc, e->bias), e->mult, e->left, e->right), e->zp);
    r = _mm256_min_epi32(_mm256_max_epi32(r, e->ilo), e->ihi);
  } else {
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(acc, e->bias)), e->scale);
    f = _mm256_min_ps(_mm256_max_ps(f, e->lo), e->hi);
    r = _mm256_add_epi32(_mm256_cvtps_epi32(f), e->zp);
  }
  r16 = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  return e->output_signed ? _mm_packs_epi16(r16, r16) : _mm_packus_epi16(r16, r16);
}

/* A row of n sums requantized by e, 8 lanes at a time; the last columns through a copy (the same lanes' operations).
 * e is read into a local first: the byte stores may alias it, and through the pointer every field was loaded again
 * and both branches taken again for each 8 lanes (5.5% of int8 ResNet-50's run was this function). */
CK_AVX2_TARGET static void ck_qrequant8_row(int64_t n, const int32_t *acc, const ck_qrequant8 *ep, uint8_t *out) {
  const ck_qrequant8 local = *ep, *e = &local;
  int64_t x;
  for (x = 0; x + 8 <= n; x += 8)
    _mm_storel_epi64((__m128i *)(void *)(out + x),
                     ck_qrequant8_bytes(_mm256_loadu_si256((const __m256i *)(const void *)(acc + x)), e));
  if (x < n) {
    int32_t tail[8] = {0};
    uint8_t bytes[8];
    memcpy(tail, acc + x, sizeof(int32_t) * (size_t)(n - x));
    _mm_storel_epi64((__m128i *)(void *)bytes,
                     ck_qrequant8_bytes(_mm256_loadu_si256((const __m256i *)(const void *)tail), e));
    ck_qcopy_tail(out + x, bytes, n - x);
  }
}

/* ck_qrequant_row_tfl_portable on 8 lanes (the GEMM's rows under TFLite's rounding) */
CK_AVX2_TARGET static void ck_qrequant_row_tfl_avx2(int64_t n, const int32_t *acc, int32_t bias, const int32_t *me,
                                                    const ck_qparams *q, uint8_t *out) {
  const ck_qrequant8 e = ck_qrequant8_tfl_of(bias, me, q);
  ck_qrequant8_row(n, acc, &e, out);
}

/* ck_qrequant_row_portable on 8 lanes */
CK_AVX2_TARGET static void ck_qrequant_row_avx2(int64_t n, const int32_t *acc, int32_t bias, float scale,
                                                const ck_qparams *q, uint8_t *out) {
  const ck_qrequant8 e = ck_qrequant8_of(bias, scale, q);
  ck_qrequant8_row(n, acc, &e, out);
}

/* A whole 32-column row of the tile requantized as ck_qrequant8_bytes does it (the same float32 operations in the
 * same order), 32 bytes stored at once: the constants shared by the tile's rows made once, a row's bias and scale
 * broadcast per row (row by row through ck_qrequant_row_avx2, the constants' setup and the call took as long as the
 * arithmetic: ck_qrequant8_row was 5.5% of int8 ResNet-50's run) */
CK_AVX2_TARGET static void ck_qrequant_tile32_avx2(int64_t rows, const int32_t *acc, const int32_t *bias,
                                                   const float *scale, const ck_qparams *q, uint8_t *out,
                                                   int64_t ldo) {
  const __m256i zp = _mm256_set1_epi32(q->output_zero_point);
  const __m256 lo = _mm256_set1_ps((float)(q->out_min - q->output_zero_point));
  const __m256 hi = _mm256_set1_ps((float)(q->out_max - q->output_zero_point));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); /* undoes the packs' per-128-bit-lane order */
  int64_t i;
  int j;
  for (i = 0; i < rows; ++i) {
    const __m256i vb = _mm256_set1_epi32(bias[i]);
    const __m256 vs = _mm256_set1_ps(scale[i]);
    __m256i r[4], w01, w23, bytes;
    for (j = 0; j < 4; ++j) {
      const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(acc + i * CK_QNR + 8 * j));
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(x, vb)), vs);
      f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
      r[j] = _mm256_add_epi32(_mm256_cvtps_epi32(f), zp);
    }
    w01 = _mm256_packs_epi32(r[0], r[1]); /* lanes: r0[0..3] r1[0..3] | r0[4..7] r1[4..7] */
    w23 = _mm256_packs_epi32(r[2], r[3]);
    bytes = q->output_signed ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
    _mm256_storeu_si256((__m256i *)(void *)(out + i * ldo), _mm256_permutevar8x32_epi32(bytes, order));
  }
}

/* ck_qrequant_tile32_avx2 on a tile of cols < 32 columns (a panel's last: 16 of a 28x28 plane, 4 of a 14x14 one, 17 of
 * a 7x7 one), in one call, each row's constants made once (ck_qrequant8_row): row by row through requant_row, each
 * row's calls and constants took as long as its arithmetic (1.4% of int8 ResNet-50's run). */
CK_AVX2_TARGET static void ck_qrequant_tile_avx2(int64_t rows, int64_t cols, const int32_t *acc, const int32_t *bias,
                                                 const float *scale, const ck_qparams *q, uint8_t *out, int64_t ldo) {
  int64_t i;
  for (i = 0; i < rows; ++i) {
    const ck_qrequant8 e = ck_qrequant8_of(bias[i], scale[i], q);
    ck_qrequant8_row(cols, acc + i * CK_QNR, &e, out + i * ldo);
  }
}

/* ck_qrequant_tile32_avx2 under TFLite's rounding (q->rounding 1): each row's multiplier and shifts from
 * me[2 * i], me[2 * i + 1], the integer operations of ck_qrequant8_bytes, 32 bytes stored at once. Row by row
 * through ck_qrequant_row_tfl_avx2 (the constants made and copied per row) the requantization was 25% of an int8
 * MobileNet v1 0.25 (TFLite) runner's time. */
CK_AVX2_TARGET static void ck_qrequant_tile32_tfl_avx2(int64_t rows, const int32_t *acc, const int32_t *bias,
                                                       const int32_t *me, const ck_qparams *q, uint8_t *out,
                                                       int64_t ldo) {
  const __m256i zp = _mm256_set1_epi32(q->output_zero_point);
  const __m256i lo = _mm256_set1_epi32(q->out_min), hi = _mm256_set1_epi32(q->out_max);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7); /* undoes the packs' per-128-bit-lane order */
  int64_t i;
  int j;
  for (i = 0; i < rows; ++i) {
    const __m256i vb = _mm256_set1_epi32(bias[i]);
    int32_t left, right;
    __m256i r[4], w01, w23, bytes;
    ck_tfl_shifts(me[2 * i + 1], &left, &right);
    for (j = 0; j < 4; ++j) {
      const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(acc + i * CK_QNR + 8 * j));
      r[j] = _mm256_add_epi32(ck_tfl_scale8(_mm256_add_epi32(x, vb), me[2 * i], left, right), zp);
      r[j] = _mm256_min_epi32(_mm256_max_epi32(r[j], lo), hi);
    }
    w01 = _mm256_packs_epi32(r[0], r[1]);
    w23 = _mm256_packs_epi32(r[2], r[3]);
    bytes = q->output_signed ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
    _mm256_storeu_si256((__m256i *)(void *)(out + i * ldo), _mm256_permutevar8x32_epi32(bytes, order));
  }
}

CK_AVX2_TARGET static void ck_qfused_avx2(int64_t steps, const int8_t *a, const uint8_t *b, int64_t rows,
                                          int64_t cols, const int32_t *bias, const float *scale, const ck_qparams *q,
                                          uint8_t *out, int64_t ldo) {
  int32_t acc[CK_QMR * CK_QNR];
  int64_t i;
  ck_qtile_avx2(steps, a, b, cols, acc);
  if (cols == CK_QNR) {
    ck_qrequant_tile32_avx2(rows, acc, bias, scale, q, out, ldo);
    return;
  }
  for (i = 0; i < rows; ++i) ck_qrequant_row_avx2(cols, acc + i * CK_QNR, bias[i], scale[i], q, out + i * ldo);
}

static int ck_cpu_has_avx2_int(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

static int ck_cpu_has_vbmi(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vbmi");
}

static int ck_cpu_has_vnni(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}
#endif

/* ---- AMX: 32 x 32 blocks on the tile unit ------------------------------------------------------ */

typedef void (*ck_qblock_fn)(int64_t steps, const int8_t *a, const uint8_t *b, int32_t *acc);
#define CK_QBLOCK 32 /* rows and columns of a block */
#if defined(CK_QAMX)
#define CK_QACC_ROWS CK_QBLOCK
#else
#define CK_QACC_ROWS CK_QMR /* no block kernel: a microcontroller's stack keeps 3 KB */
#endif

#if defined(CK_QAMX)
#define CK_AMX_TARGET __attribute__((target("amx-tile,amx-int8")))

/* AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25; clang 14's __builtin_cpu_supports does not know
 * them), the VNNI kernel for the rows a block leaves, and Linux's permission for the tile state
 * (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), asked once per process; refused: the VNNI kernel). */
static int ck_cpu_has_amx(void) {
  unsigned eax, ebx, ecx, edx;
  if (!ck_cpu_has_vnni() || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
  if (!(edx & (1u << 24)) || !(edx & (1u << 25))) return 0;
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
}

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} ck_qtilecfg;

/* All eight tiles 16 rows x 64 bytes (palette 1). A constant in memory, 64-byte aligned (ldtilecfg faults
 * otherwise): gcc 12's _tile_loadconfig tells the compiler it reads 8 bytes, so a config filled on the stack
 * loses the other stores. */
static const ck_qtilecfg ck_qamx_config __attribute__((aligned(64))) = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

/* on: this thread's tiles configured for ck_qblock_amx; off: released, so the OS need not save them */
CK_AMX_TARGET static void ck_qtiles_amx(int on) {
  if (on)
    _tile_loadconfig(&ck_qamx_config);
  else
    _tile_release();
}

/* acc[32][CK_QNR] = rows 0..31 of the packed weight (row stride 4 * steps) x the panel: tiles 0-3 the block's
 * quarters, 4 and 5 weight rows 0-15 and 16-31 (64 bytes of k each), 6 and 7 panel columns 0-15 and 16-31
 * (16 k-steps each). The last k-block reads past a row's 4 * steps bytes into the next row (or the weight's
 * slack) and past the panel's k-steps into its zeroed tail: those products are 0. */
CK_AMX_TARGET static void ck_qblock_amx(int64_t steps, const int8_t *a, const uint8_t *b, int32_t *acc) {
  const int64_t lda = 4 * steps, ldb = 4 * CK_QNR;
  int64_t s;
  __asm__ volatile("" ::: "memory");   /* the tile loads' asm does not say it reads memory */
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (s = 0; s < steps; s += CK_QKB / 4) {
    _tile_loadd(4, a + 4 * s, lda);
    _tile_loadd(6, b + ldb * s, ldb);
    _tile_loadd(7, b + ldb * s + 64, ldb);
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_loadd(5, a + 16 * lda + 4 * s, lda);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
  }
  _tile_stored(0, acc, ldb);
  _tile_stored(1, acc + 16, ldb);
  _tile_stored(2, acc + 16 * CK_QNR, ldb);
  _tile_stored(3, acc + 16 * CK_QNR + 16, ldb);
}

/* The block and byoc's float32 requantization of its first rows x cols, straight from the stored tiles (no
 * call per row: at 32 columns a row is two vectors) */
__attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni"))) static void ck_qfused_amx(
    int64_t steps, const int8_t *a, const uint8_t *b, int64_t rows, int64_t cols, const int32_t *bias,
    const float *scale, const ck_qparams *q, uint8_t *out, int64_t ldo) {
  const __mmask16 mask0 = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1u);
  const __mmask16 mask1 = cols >= 32 ? (__mmask16)0xFFFF : (__mmask16)(cols > 16 ? (1u << (cols - 16)) - 1u : 0u);
  int32_t acc[CK_QBLOCK * CK_QNR];
  ck_qepilogue e;
  int64_t i;
  ck_qblock_amx(steps, a, b, acc);
  e.zp = _mm512_set1_epi32(q->output_zero_point);
  e.lo = _mm512_set1_ps((float)(q->out_min - q->output_zero_point));
  e.hi = _mm512_set1_ps((float)(q->out_max - q->output_zero_point));
  for (i = 0; i < rows; ++i) {
    ck_qrequant16(_mm512_loadu_si512((const void *)(acc + i * CK_QNR)), bias[i], scale[i], &e, mask0, out + i * ldo);
    if (cols > 16)
      ck_qrequant16(_mm512_loadu_si512((const void *)(acc + i * CK_QNR + 16)), bias[i], scale[i], &e, mask1,
                    out + i * ldo + 16);
  }
}
#endif

/* TFLite's requantization of rows [0, rows) of a tile's 32 columns: out[i * ldo + j] */
typedef void (*ck_qtile32_fn)(int64_t rows, const int32_t *acc, const int32_t *bias, const float *scale,
                              const ck_qparams *q, uint8_t *out, int64_t ldo);
typedef void (*ck_qtile_requant_fn)(int64_t rows, int64_t cols, const int32_t *acc, const int32_t *bias,
                                    const float *scale, const ck_qparams *q, uint8_t *out, int64_t ldo);
typedef void (*ck_qtfl_tile_fn)(int64_t rows, const int32_t *acc, const int32_t *bias, const int32_t *me,
                                const ck_qparams *q, uint8_t *out, int64_t ldo);
typedef void (*ck_qtfl_row_fn)(int64_t n, const int32_t *acc, int32_t bias, const int32_t *me, const ck_qparams *q,
                               uint8_t *out);
typedef void (*ck_qdw_sums_fn)(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride, int64_t col_step,
                               int64_t kh, int64_t kw, const int8_t *w, int32_t is_signed, int32_t *acc);

typedef void (*ck_qdw_row_fn)(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride, int64_t col_step,
                              int64_t kh, int64_t kw, const int8_t *w, int32_t bias, float scale, const ck_qparams *q,
                              uint8_t *out, int32_t *acc);

#define CK_DEFINE_QDW_ROW(NAME, T)                                                                    \
  static void NAME(int64_t x0, int64_t n, const T *base, int64_t row_step, int64_t stride, int64_t col_step, \
                   int64_t kh, int64_t kw, const int8_t *w, int32_t *restrict acc) {                   \
    int64_t i, j, x;                                                                                  \
    for (x = x0; x < n; ++x) acc[x] = 0;                                                              \
    for (i = 0; i < kh; ++i) {                                                                        \
      for (j = 0; j < kw; ++j) {                                                                      \
        const int32_t wv = w[i * kw + j];                                                             \
        const T *restrict src = base + i * row_step + j * col_step;                                   \
        for (x = x0; x < n; ++x) acc[x] += wv * (int32_t)src[x * stride];                             \
      }                                                                                               \
    }                                                                                                 \
  }

CK_DEFINE_QDW_ROW(ck_qdw_sums_u8, uint8_t)
CK_DEFINE_QDW_ROW(ck_qdw_sums_s8, int8_t)

static void ck_qdw_sums_portable(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride, int64_t col_step,
                                 int64_t kh, int64_t kw, const int8_t *w, int32_t is_signed, int32_t *acc) {
  if (is_signed)
    ck_qdw_sums_s8(0, n, (const int8_t *)base, row_step, stride, col_step, kh, kw, w, acc);
  else
    ck_qdw_sums_u8(0, n, base, row_step, stride, col_step, kh, kw, w, acc);
}

/* columns [x0, n) of ck_qdw_row in portable C */
static void ck_qdw_row_from(int64_t x0, int64_t n, const uint8_t *base, int64_t row_step, int64_t stride,
                            int64_t col_step, int64_t kh, int64_t kw, const int8_t *w, int32_t bias, float scale,
                            const ck_qparams *q, uint8_t *out, int32_t *acc) {
  if (x0 >= n) return;
  if (q->input_signed)
    ck_qdw_sums_s8(x0, n, (const int8_t *)base, row_step, stride, col_step, kh, kw, w, acc);
  else
    ck_qdw_sums_u8(x0, n, base, row_step, stride, col_step, kh, kw, w, acc);
  ck_qrequant_row_portable(n - x0, acc + x0, bias, scale, q, out + x0);
}

static void ck_qdw_row_portable(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride, int64_t col_step,
                                int64_t kh, int64_t kw, const int8_t *w, int32_t bias, float scale,
                                const ck_qparams *q, uint8_t *out, int32_t *acc) {
  ck_qdw_row_from(0, n, base, row_step, stride, col_step, kh, kw, w, bias, scale, q, out, acc);
}

#if defined(CK_QDISPATCH)
/* The first `count` (<= 16) of 16 input bytes at stride 1 or 2 (the even bytes of 32), widened
 * to int32 lanes; the bytes past them are not read (masked loads). */
CK_VNNI_TARGET static inline __m512i ck_qload16(const uint8_t *p, int64_t stride, int32_t is_signed, int64_t count) {
  if (stride == 1) {
    const __m128i v = _mm_maskz_loadu_epi8((__mmask16)(count >= 16 ? 0xFFFFu : (1u << count) - 1u), (const void *)p);
    return is_signed ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
  } else {
    const __m256i v = _mm256_maskz_loadu_epi8((__mmask32)(count >= 16 ? 0xFFFFFFFFu : (1u << (2 * count)) - 1u),
                                              (const void *)p);
    return is_signed ? _mm512_cvtepi16_epi32(_mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8))
                     : _mm512_cvtepu16_epi32(_mm256_and_si256(v, _mm256_set1_epi16(0x00FF)));
  }
}

/* The taps of 16 output columns (the first `count`) starting at p, summed in int32 lanes. */
CK_VNNI_TARGET static inline __m512i ck_qdw_sum16(const uint8_t *p, int64_t row_step, int64_t stride, int64_t col_step,
                                                  int64_t kh, int64_t kw, const int8_t *w, int32_t is_signed,
                                                  int64_t count) {
  __m512i sum = _mm512_setzero_si512();
  int64_t i, j;
  for (i = 0; i < kh; ++i)
    for (j = 0; j < kw; ++j)
      sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(_mm512_set1_epi32(w[i * kw + j]),
                                                     ck_qload16(p + i * row_step + j * col_step, stride, is_signed,
                                                                count)));
  return sum;
}

/* ck_qdw_row's sums only, into acc[0, n) (rounding 1 requantizes them afterwards) */
CK_VNNI_TARGET static void ck_qdw_sums_avx512(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride,
                                              int64_t col_step, int64_t kh, int64_t kw, const int8_t *w,
                                              int32_t is_signed, int32_t *acc) {
  int64_t x = 0;
  if (stride == 1 || stride == 2) {
    for (; x < n; x += 16) {
      const int64_t count = n - x < 16 ? n - x : 16;
      const __m512i sum = ck_qdw_sum16(base + x * stride, row_step, stride, col_step, kh, kw, w, is_signed, count);
      _mm512_mask_storeu_epi32((void *)(acc + x), (__mmask16)(count >= 16 ? 0xFFFFu : (1u << count) - 1u), sum);
    }
    return;
  }
  ck_qdw_sums_portable(n, base, row_step, stride, col_step, kh, kw, w, is_signed, acc);
}

/* 16 output columns at a time (the last ones masked), the taps summed in registers and
 * requantized there; strides other than 1 and 2 in portable C */
CK_VNNI_TARGET static void ck_qdw_row_avx512(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride,
                                             int64_t col_step, int64_t kh, int64_t kw, const int8_t *w, int32_t bias,
                                             float scale, const ck_qparams *q, uint8_t *out, int32_t *acc) {
  int64_t x = 0;
  if (stride == 1 || stride == 2) {
    ck_qepilogue e;
    e.zp = _mm512_set1_epi32(q->output_zero_point);
    e.lo = _mm512_set1_ps((float)(q->out_min - q->output_zero_point));
    e.hi = _mm512_set1_ps((float)(q->out_max - q->output_zero_point));
    for (; x < n; x += 16) {
      const int64_t count = n - x < 16 ? n - x : 16;
      const __m512i sum =
          ck_qdw_sum16(base + x * stride, row_step, stride, col_step, kh, kw, w, q->input_signed, count);
      ck_qrequant16(sum, bias, scale, &e, (__mmask16)(count >= 16 ? 0xFFFFu : (1u << count) - 1u), out + x);
    }
  }
  ck_qdw_row_from(x, n, base, row_step, stride, col_step, kh, kw, w, bias, scale, q, out, acc);
}
#endif

#if defined(CK_QDISPATCH)
/* 8 input bytes at stride 1 or 2 (the even bytes of 15) widened to int32 lanes; no byte past them is read */
CK_AVX2_TARGET static inline __m256i ck_qload8_avx2(const uint8_t *p, int64_t stride, int32_t is_signed) {
  if (stride == 1) {
    const __m128i v = _mm_loadl_epi64((const __m128i *)(const void *)p);
    return is_signed ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
  } else {
    uint8_t bytes[16] = {0};
    __m128i v;
    memcpy(bytes, p, 15);
    v = _mm_loadu_si128((const __m128i *)(const void *)bytes);
    return is_signed ? _mm256_cvtepi16_epi32(_mm_srai_epi16(_mm_slli_epi16(v, 8), 8))
                     : _mm256_cvtepu16_epi32(_mm_and_si128(v, _mm_set1_epi16(0x00FF)));
  }
}

/* The depthwise row's sums, 8 columns at a time in int32 lanes (stride 1 or 2; others and a row's last
 * columns in portable C): in portable C the sums and their requantization were 61% of int8 MobileNetV2's run
 * on a Zen 3. */
CK_AVX2_TARGET static void ck_qdw_sums_avx2(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride,
                                            int64_t col_step, int64_t kh, int64_t kw, const int8_t *w,
                                            int32_t is_signed, int32_t *acc) {
  int64_t x = 0, i, j;
  if (stride == 1 || stride == 2)
    for (; x + 8 <= n; x += 8) {
      const uint8_t *p = base + x * stride;
      __m256i sum = _mm256_setzero_si256();
      for (i = 0; i < kh; ++i)
        for (j = 0; j < kw; ++j)
          sum = _mm256_add_epi32(sum, _mm256_mullo_epi32(_mm256_set1_epi32(w[i * kw + j]),
                                                         ck_qload8_avx2(p + i * row_step + j * col_step, stride,
                                                                        is_signed)));
      _mm256_storeu_si256((__m256i *)(void *)(acc + x), sum);
    }
  if (x >= n) return;
  if (is_signed)
    ck_qdw_sums_s8(x, n, (const int8_t *)base, row_step, stride, col_step, kh, kw, w, acc);
  else
    ck_qdw_sums_u8(x, n, base, row_step, stride, col_step, kh, kw, w, acc);
}

/* ---- depthwise over a whole bordered plane: AVX2 ---------------------------------------------------------- */

/* 8 outputs' sums at column step SW (1 or 2) from p: each tap's 8 input bytes (the even ones of 16 at stride 2)
 * widened to int32 lanes, times its weight. Reads up to 8 * SW bytes past the outputs' last tap byte. */
#define CK_QDW_SUM8(SW, SIGNED, p, row_step, col_step, kh, kw, wv, acc)                                        \
  do {                                                                                                       \
    int64_t i_, j_;                                                                                          \
    acc = _mm256_setzero_si256();                                                                            \
    for (i_ = 0; i_ < (kh); ++i_)                                                                            \
      for (j_ = 0; j_ < (kw); ++j_) {                                                                        \
        const uint8_t *s_ = (p) + i_ * (row_step) + j_ * (col_step);                                         \
        __m256i x_;                                                                                          \
        if ((SW) == 1) {                                                                                     \
          const __m128i v_ = _mm_loadl_epi64((const __m128i *)(const void *)s_);                             \
          x_ = (SIGNED) ? _mm256_cvtepi8_epi32(v_) : _mm256_cvtepu8_epi32(v_);                               \
        } else {                                                                                             \
          const __m128i v_ = _mm_loadu_si128((const __m128i *)(const void *)s_);                             \
          x_ = (SIGNED) ? _mm256_cvtepi16_epi32(_mm_srai_epi16(_mm_slli_epi16(v_, 8), 8))                    \
                        : _mm256_cvtepu16_epi32(_mm_and_si128(v_, _mm_set1_epi16(0x00FF)));                  \
        }                                                                                                    \
        acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32((wv)[i_ * (kw) + j_]), x_));        \
      }                                                                                                      \
  } while (0)

#define CK_QDW_AVX2_TAPS 64 /* windows up to 8 x 8 */

/* The flat pass over n positions and the row pass, inlined where called with constant windows, strides and
 * signedness (3x3, MobileNet's window: every tap unrolled, the 9 weights held in registers; the loop over taps
 * of a general window cost some 10 instructions a tap). */
#define CK_QDW_INLINE __attribute__((always_inline)) inline
CK_AVX2_TARGET static CK_QDW_INLINE void ck_qdw_flat_avx2(const uint8_t *pad, int64_t n, int64_t row_step,
                                                           int64_t col_step, int64_t kh, int64_t kw, int is_signed,
                                                           const int32_t *wv, const ck_qrequant8 *e, uint8_t *flat) {
  int64_t x;
  __m256i acc;
  for (x = 0; x < n; x += 8) {
    if (is_signed)
      CK_QDW_SUM8(1, 1, pad + x, row_step, col_step, kh, kw, wv, acc);
    else
      CK_QDW_SUM8(1, 0, pad + x, row_step, col_step, kh, kw, wv, acc);
    _mm_storel_epi64((__m128i *)(void *)(flat + x), ck_qrequant8_bytes(acc, e));
  }
}

CK_AVX2_TARGET static CK_QDW_INLINE void ck_qdw_rows_avx2(const uint8_t *pad, int64_t down, int64_t oh, int64_t ow,
                                                           int64_t sw, int64_t row_step, int64_t col_step, int64_t kh,
                                                           int64_t kw, int is_signed, const int32_t *wv,
                                                           const ck_qrequant8 *e, uint8_t *out) {
  int64_t x, y;
  __m256i acc;
  for (y = 0; y < oh; ++y)
    for (x = 0; x < ow; x += 8) {
      const uint8_t *p = pad + y * down + x * sw;
      uint8_t *o = out + y * ow + x;
      __m128i bytes;
      if (sw == 1 && is_signed)
        CK_QDW_SUM8(1, 1, p, row_step, col_step, kh, kw, wv, acc);
      else if (sw == 1)
        CK_QDW_SUM8(1, 0, p, row_step, col_step, kh, kw, wv, acc);
      else if (is_signed)
        CK_QDW_SUM8(2, 1, p, row_step, col_step, kh, kw, wv, acc);
      else
        CK_QDW_SUM8(2, 0, p, row_step, col_step, kh, kw, wv, acc);
      bytes = ck_qrequant8_bytes(acc, e);
      if (ow - x >= 8) {
        _mm_storel_epi64((__m128i *)(void *)o, bytes);
      } else {
        uint8_t last[8];
        _mm_storel_epi64((__m128i *)(void *)last, bytes);
        ck_qcopy_tail(o, last, ow - x);
      }
    }
}

/* One channel's outputs (byoc's requantization) from its plane bordered with the zero point (pw wide, 64
 * bytes readable past it): at stride 1, where rows are narrow, one flat pass over oh x pw positions (into flat,
 * each row's ow columns copied out; the columns past a row's end computed and dropped), else row by row, 8
 * columns at a time, each row's last ones through a local copy. The per-row kernel ran a row's last ow % 8
 * columns in portable C and requantized from memory: MobileNetV2's 14x14 and 7x7 depthwise layers were mostly
 * such columns (the depthwise sums and their requantization 59% of int8 MobileNetV2's run, `perf`, a Zen 3).
 * Either requantization (byoc's float32 one, TFLite's integer one). 0: not this kernel's shape (strides other than
 * 1 and 2, larger windows). */
CK_AVX2_TARGET static int ck_qdw_plane_avx2(const ck_conv2d_params *c, const uint8_t *pad, int64_t pw, int64_t oh,
                                            int64_t ow, const int8_t *w, int32_t bias, const float *scale,
                                            const ck_qparams *q, uint8_t *out, uint8_t *flat) {
  const int64_t kh = c->kernel_h, kw = c->kernel_w, sw = c->stride_w, down = c->stride_h * pw;
  const int64_t row_step = c->dilation_h * pw, col_step = c->dilation_w;
  const int is_signed = q->input_signed != 0, k3 = kh == 3 && kw == 3;
  ck_qrequant8 e;
  int32_t wv[CK_QDW_AVX2_TAPS];
  int64_t t, y;
  if ((sw != 1 && sw != 2) || kh * kw > CK_QDW_AVX2_TAPS || (kw - 1) * col_step + 16 > 64) return 0;
  /* rounding 1: scale holds the channel's (multiplier, exponent) */
  e = q->rounding == 1 ? ck_qrequant8_tfl_of(bias, (const int32_t *)(const void *)scale, q)
                       : ck_qrequant8_of(bias, scale[0], q);
  for (t = 0; t < kh * kw; ++t) wv[t] = w[t];
  if (sw == 1 && c->stride_h == 1 && (oh * pw + 7) / 8 < oh * ((ow + 7) / 8)) {
    if (k3 && is_signed)
      ck_qdw_flat_avx2(pad, oh * pw, row_step, col_step, 3, 3, 1, wv, &e, flat);
    else if (k3)
      ck_qdw_flat_avx2(pad, oh * pw, row_step, col_step, 3, 3, 0, wv, &e, flat);
    else
      ck_qdw_flat_avx2(pad, oh * pw, row_step, col_step, kh, kw, is_signed, wv, &e, flat);
    for (y = 0; y < oh; ++y) ck_qcopy_row(out + y * ow, flat + y * pw, ow);
    return 1;
  }
  if (k3 && sw == 1 && is_signed)
    ck_qdw_rows_avx2(pad, down, oh, ow, 1, row_step, col_step, 3, 3, 1, wv, &e, out);
  else if (k3 && sw == 1)
    ck_qdw_rows_avx2(pad, down, oh, ow, 1, row_step, col_step, 3, 3, 0, wv, &e, out);
  else if (k3 && is_signed)
    ck_qdw_rows_avx2(pad, down, oh, ow, 2, row_step, col_step, 3, 3, 1, wv, &e, out);
  else if (k3)
    ck_qdw_rows_avx2(pad, down, oh, ow, 2, row_step, col_step, 3, 3, 0, wv, &e, out);
  else
    ck_qdw_rows_avx2(pad, down, oh, ow, sw, row_step, col_step, kh, kw, is_signed, wv, &e, out);
  return 1;
}

CK_AVX2_TARGET static void ck_qdw_row_avx2(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride,
                                           int64_t col_step, int64_t kh, int64_t kw, const int8_t *w, int32_t bias,
                                           float scale, const ck_qparams *q, uint8_t *out, int32_t *acc) {
  ck_qdw_sums_avx2(n, base, row_step, stride, col_step, kh, kw, w, q->input_signed, acc);
  ck_qrequant_row_avx2(n, acc, bias, scale, q, out);
}
#endif

typedef struct {
  const char *name;
  ck_qblock_fn block;       /* NULL, or 32 x 32 blocks (AMX): rows a block leaves run on `tile` */
  ck_qfused_fn block_fused; /* the block requantized (float32 rounding, unit column stride) */
  void (*tiles)(int on);    /* the block kernel's per-thread set-up (on) and release (off) */
  ck_qtile_fn tile;
  ck_qfused_fn fused;
  ck_qrow_fn requant_row;
  ck_qdw_row_fn dw_row;
  int (*cpu_has)(void);
  ck_qtfl_row_fn tfl_row;   /* TFLite's requantization of a row of sums (q->rounding 1) */
  ck_qdw_sums_fn dw_sums;   /* a depthwise row's sums, requantized by tfl_row */
  ck_qtfl_tile_fn tfl_tile32; /* NULL, or tfl_row over whole 32-column rows of a tile at once */
  ck_qtile_fn tile_pairs;   /* NULL, or `tile` for pair-safe weights only (faster there); NULL: `tile` */
  ck_qfix_fn fix;           /* NULL, or ck_qfix_portable's corrections faster */
  ck_qtile32_fn tile32;     /* NULL, or requant_row over whole 32-column rows of a tile at once */
  ck_qtile_requant_fn tile_requant; /* NULL, or requant_row over the rows of a tile of fewer columns at once */
} ck_qkernel;

static const ck_qkernel ck_qkernels[] = {
#if defined(CK_QAMX)
    {"amx-int8-32x32", ck_qblock_amx, ck_qfused_amx, ck_qtiles_amx, ck_qtile_vnni, ck_qfused_vnni, ck_qrequant_row_avx512,
     ck_qdw_row_avx512, ck_cpu_has_amx, ck_qrequant_row_tfl_avx512, ck_qdw_sums_avx512, NULL, NULL, NULL, NULL, NULL},
#endif
#if defined(CK_QDISPATCH)
    {"avx512vnni-8x32", NULL, NULL, NULL, ck_qtile_vnni, ck_qfused_vnni, ck_qrequant_row_avx512, ck_qdw_row_avx512, ck_cpu_has_vnni,
     ck_qrequant_row_tfl_avx512, ck_qdw_sums_avx512, NULL, NULL, NULL, NULL, NULL},
    {"avx2-8x32", NULL, NULL, NULL, ck_qtile_avx2, ck_qfused_avx2, ck_qrequant_row_avx2, ck_qdw_row_avx2,
     ck_cpu_has_avx2_int, ck_qrequant_row_tfl_avx2, ck_qdw_sums_avx2, ck_qrequant_tile32_tfl_avx2,
     ck_qtile_pairs_avx2, ck_qfix_avx2, ck_qrequant_tile32_avx2, ck_qrequant_tile_avx2},
#endif
    {"portable-8x32", NULL, NULL, NULL, ck_qtile_portable, ck_qfused_portable, ck_qrequant_row_portable, ck_qdw_row_portable, NULL,
     ck_qrequant_row_tfl_portable, ck_qdw_sums_portable, NULL, NULL, NULL, NULL, NULL},
};
#define CK_NUM_QKERNELS ((int32_t)(sizeof ck_qkernels / sizeof ck_qkernels[0]))

/* Written once on first use (the same value from any thread that races here). */
static const ck_qkernel *ck_qcurrent = NULL;

static const ck_qkernel *ck_qkernel_current(void) {
  if (ck_qcurrent == NULL) {
    int32_t i;
    for (i = 0; i < CK_NUM_QKERNELS && ck_qkernels[i].cpu_has != NULL && !ck_qkernels[i].cpu_has(); ++i) {
    }
    ck_qcurrent = &ck_qkernels[i < CK_NUM_QKERNELS ? i : CK_NUM_QKERNELS - 1];
  }
  return ck_qcurrent;
}

const char *ck_qgemm_kernel_name(void) { return ck_qkernel_current()->name; }

int32_t ck_qgemm_use_kernel(const char *name) {
  int32_t i;
  if (name == NULL) return CK_EBADPARAM;
  for (i = 0; i < CK_NUM_QKERNELS; ++i) {
    if (strcmp(ck_qkernels[i].name, name) == 0) {
      if (ck_qkernels[i].cpu_has != NULL && !ck_qkernels[i].cpu_has()) return CK_EBADPARAM;
      ck_qcurrent = &ck_qkernels[i];
      return CK_OK;
    }
  }
  return CK_EBADPARAM;
}

void ck_qrequant_row(int64_t n, const int32_t *acc, int32_t bias, float scale, const ck_qparams *q, uint8_t *out) {
  ck_qkernel_current()->requant_row(n, acc, bias, scale, q, out);
}

void ck_qrequant_row_tfl(int64_t n, const int32_t *acc, int32_t bias, const int32_t *me, const ck_qparams *q,
                         uint8_t *out) {
  ck_qkernel_current()->tfl_row(n, acc, bias, me, q, out);
}

void ck_qdw_row(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride, int64_t col_step, int64_t kh,
                int64_t kw, const int8_t *w, int32_t bias, float scale, const ck_qparams *q, uint8_t *out,
                int32_t *acc) {
  ck_qkernel_current()->dw_row(n, base, row_step, stride, col_step, kh, kw, w, bias, scale, q, out, acc);
}

void ck_qdw_row_tfl(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride, int64_t col_step, int64_t kh,
                    int64_t kw, const int8_t *w, int32_t bias, const int32_t *me, const ck_qparams *q, uint8_t *out,
                    int32_t *acc) {
  const ck_qkernel *kernel = ck_qkernel_current();
  kernel->dw_sums(n, base, row_step, stride, col_step, kh, kw, w, q->input_signed, acc);
  kernel->tfl_row(n, acc, bias, me, q, out);
}

int ck_qdirect_vnni(void) {
#if defined(CK_QDISPATCH)
  return ck_qkernel_current()->tile == ck_qtile_vnni;
#else
  return 0;
#endif
}

int ck_qvbmi(void) {
#if defined(CK_QDISPATCH)
  static int vbmi = -1;   /* written once on first use (the same value from any thread that races here) */
  if (vbmi < 0) vbmi = ck_cpu_has_vbmi();
  return vbmi && ck_qkernel_current()->tile == ck_qtile_vnni;   /* the VNNI kernel or AMX's */
#else
  return 0;
#endif
}

void ck_qdw_plane_index(const ck_conv2d_params *c, uint8_t *index) {
  int64_t g, t;
  for (g = 0; g < 2; ++g)
    for (t = 0; t < 64; ++t)
      index[64 * g + t] = (uint8_t)(t % 4 + 4 * g < c->kernel_w ? (t / 4) * c->stride_w + (t % 4 + 4 * g) * c->dilation_w
                                                                 : 0);   /* used where it fits a byte */
}

int ck_qdw_plane(const ck_conv2d_params *c, const uint8_t *index, const uint8_t *pad, int64_t pw, int64_t oh,
                 int64_t ow, const int8_t *w, int32_t bias, const float *scale, const ck_qparams *q, uint8_t *out,
                 uint8_t *flat) {
#if defined(CK_QDISPATCH)
  if (ck_qvbmi()) return ck_qdw_plane_vbmi(c, index, pad, pw, oh, ow, w, bias, scale, q, out, flat);
  if (ck_qkernel_current()->tile == ck_qtile_avx2)
    return ck_qdw_plane_avx2(c, pad, pw, oh, ow, w, bias, scale, q, out, flat);
#else
  (void)c, (void)index, (void)pad, (void)pw, (void)oh, (void)ow, (void)w, (void)bias, (void)scale, (void)q, (void)out, (void)flat;
#endif
  return 0;
}

/* ---- the core ------------------------------------------------------------------------------- */

/* TFLite's requantization (q->rounding 1) of a tile: the int32 tile in memory, then the integer epilogue
 * row by row (me: the rows' (multiplier, exponent) pairs); out[i * ldo + j * col_stride]. */
static void ck_qtfl_tile(const ck_qkernel *kernel, int64_t steps, const int8_t *a, const uint8_t *b, int64_t rows,
                         int64_t cols, const int32_t *bias, const int32_t *me, const ck_qparams *q, uint8_t *out,
                         int64_t ldo, int64_t col_stride) {
  int32_t acc[CK_QMR * CK_QNR];
  uint8_t tmp[CK_QNR];
  int64_t i, j;
  kernel->tile(steps, a, b, cols, acc);
  if (kernel->tfl_tile32 != NULL && cols == CK_QNR && col_stride == 1) {
    kernel->tfl_tile32(rows, acc, bias, me, q, out, ldo);
    return;
  }
  for (i = 0; i < rows; ++i) {
    uint8_t *dst = out + i * ldo;
    kernel->tfl_row(cols, acc + i * CK_QNR, bias[i], me + 2 * i, q, col_stride == 1 ? dst : tmp);
    if (col_stride != 1)
      for (j = 0; j < cols; ++j) dst[j * col_stride] = tmp[j];
  }
}

/* In parallel: column chunks of whole panels, each packing its panels into its thread's slot: 4 panels (128
 * bytes of every output row) over wide outputs, 2 panels from CK_QN_HALF columns (ResNet's 784-byte 28x28 rows: 13
 * tasks, where 32-byte ones shared a cache line with the next task's on every row, and at 2 threads the whole
 * model ran 2-3% faster in one process, alternated), one panel (32) below, so that ResNet's
 * 14x14 and 7x7 layers still make 7 and 2 tasks, not 2 uneven ones and 1 (the few bytes threads then share
 * in a cache line cost less than a core idling). The split depends on n alone and every output byte is
 * computed by one task in one order: results are the same for every thread count. */

static int64_t ck_qgemm_chunk_columns(int64_t n) {
  return n >= CK_QN_WIDE ? 4 * CK_QNR : n >= CK_QN_HALF ? 2 * CK_QNR : CK_QNR;
}

static int64_t ck_qgemm_chunks(int64_t n) { return (n + ck_qgemm_chunk_columns(n) - 1) / ck_qgemm_chunk_columns(n); }

int64_t ck_qgemm_slots(int64_t n) {
  const int64_t chunks = ck_qgemm_chunks(n);
  return chunks < 1 ? 1 : chunks < BYOC_MAX_THREADS ? chunks : BYOC_MAX_THREADS;
}

int64_t ck_qgemm_panel_stride(int64_t k) { return ck_qround_up(k, CK_QKB) * CK_QNR; }

int64_t ck_qgemm_panel_bytes(int64_t k) { return ck_qround_up(ck_qround_up(k, 4) * CK_QNR, CK_QALIGN); }

typedef struct {
  int64_t m, n, k;
  const int8_t *packed_a;
  const ck_qb_source *b;
  const int32_t *bias;
  const float *scale;
  const ck_qparams *q;
  uint8_t *out;
  int64_t out_row, out_col;
  uint8_t *panels;
  const ck_qpost *post;
  const ck_qfix *fix;
} ck_qgemm_job;

/* The task's finished rows [m0, m1) x columns [n0, n1) through job->post, if any */
static void ck_qgemm_post(const ck_qgemm_job *job, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
  const ck_qpost *post = job->post;
  uint8_t *o;
  const uint8_t *r;
  if (post == NULL || m0 >= m1) return;
  o = job->out + m0 * job->out_row + n0;
  r = post->residual + m0 * job->out_row + n0;
  if (n0 == 0 && n1 == job->out_row) { /* whole rows: one stretch */
    n1 = (m1 - m0) * job->out_row;
    m1 = m0 + 1;
  }
  if (post->conv_is_rhs)
    ck_qadd_rows(post->add, m1 - m0, n1 - n0, job->out_row, r, o, o);
  else
    ck_qadd_rows(post->add, m1 - m0, n1 - n0, job->out_row, o, r, o);
}

/* Rows [m0, m0 + rows) x columns [n0, n0 + cols) of the output requantized from acc (row stride CK_QNR) */
static void ck_qgemm_store(const ck_qkernel *kernel, const ck_qgemm_job *job, int64_t m0, int64_t rows, int64_t n0,
                           int64_t cols, const int32_t *acc) {
  uint8_t tmp[CK_QNR];
  int64_t i, j;
  if (job->q->rounding == 1 && kernel->tfl_tile32 != NULL && cols == CK_QNR && job->out_col == 1) {
    kernel->tfl_tile32(rows, acc, job->bias + m0, (const int32_t *)(const void *)job->scale + 2 * m0, job->q,
                       job->out + m0 * job->out_row + n0, job->out_row);
    return;
  }
  if (job->q->rounding == 0 && kernel->tile32 != NULL && cols == CK_QNR && job->out_col == 1) {
    kernel->tile32(rows, acc, job->bias + m0, job->scale + m0, job->q, job->out + m0 * job->out_row + n0,
                   job->out_row);
    return;
  }
  if (job->q->rounding == 0 && kernel->tile_requant != NULL && job->out_col == 1) {
    kernel->tile_requant(rows, cols, acc, job->bias + m0, job->scale + m0, job->q, job->out + m0 * job->out_row + n0,
                         job->out_row);
    return;
  }
  for (i = 0; i < rows; ++i) {
    uint8_t *dst = job->out + (m0 + i) * job->out_row + n0 * job->out_col;
    uint8_t *o = job->out_col == 1 ? dst : tmp;
    if (job->q->rounding == 1)
      kernel->tfl_row(cols, acc + i * CK_QNR, job->bias[m0 + i], (const int32_t *)(const void *)job->scale + 2 * (m0 + i),
                      job->q, o);
    else
      kernel->requant_row(cols, acc + i * CK_QNR, job->bias[m0 + i], job->scale[m0 + i], job->q, o);
    if (job->out_col != 1)
      for (j = 0; j < cols; ++j) dst[j * job->out_col] = tmp[j];
  }
}

/* Rows [m0, m1) of the output's columns [n0, n0 + cols) from their packed panel: 32-row blocks where the kernel
 * has them (up to the last whole block of round_up(m, 8) rows), 8-row tiles after */
static void ck_qgemm_rows_of_panel(const ck_qkernel *kernel, const ck_qgemm_job *job, int64_t m0, int64_t m1,
                                   int64_t n0, int64_t cols, const uint8_t *panel, int32_t *acc) {
  const int64_t k4 = ck_qround_up(job->k, 4), steps = k4 / 4, m8 = ck_qround_up(m1, CK_QMR);
  const int fused = job->q->rounding == 0 && job->out_col == 1 && job->fix == NULL;
  const ck_qtile_fn tile = job->fix != NULL && kernel->tile_pairs != NULL ? kernel->tile_pairs : kernel->tile;
  const ck_qfix_fn fix = kernel->fix != NULL ? kernel->fix : ck_qfix_portable;
  int64_t i;
  if (kernel->block != NULL)
    for (; m0 + CK_QBLOCK <= m8; m0 += CK_QBLOCK) {
      const int64_t rows = m1 - m0 < CK_QBLOCK ? m1 - m0 : CK_QBLOCK;
      if (fused) {
        kernel->block_fused(steps, job->packed_a + m0 * k4, panel, rows, cols, job->bias + m0, job->scale + m0,
                            job->q, job->out + m0 * job->out_row + n0, job->out_row);
        continue;
      }
      kernel->block(steps, job->packed_a + m0 * k4, panel, acc);
      if (job->fix != NULL) /* the table names rows within 8-row tiles */
        for (i = 0; i < rows; i += CK_QMR)
          fix(rows - i < CK_QMR ? rows - i : CK_QMR, job->fix, m0 + i, panel, cols, acc + i * CK_QNR);
      ck_qgemm_store(kernel, job, m0, rows, n0, cols, acc);
    }
  for (; m0 < m1; m0 += CK_QMR) {
    const int64_t rows = m1 - m0 < CK_QMR ? m1 - m0 : CK_QMR;
    if (fused) {
      kernel->fused(steps, job->packed_a + m0 * k4, panel, rows, cols, job->bias + m0, job->scale + m0, job->q,
                    job->out + m0 * job->out_row + n0, job->out_row);
      continue;
    }
    tile(steps, job->packed_a + m0 * k4, panel, cols, acc);
    if (job->fix != NULL) fix(rows, job->fix, m0, panel, cols, acc);
    ck_qgemm_store(kernel, job, m0, rows, n0, cols, acc);
  }
}

/* Packs the columns n0 .. n0 + cols into panel, zeros past them and past k4 up to the block kernel's k-block */
static void ck_qgemm_pack(const ck_qgemm_job *job, int64_t n0, int64_t cols, uint8_t *panel) {
  const int64_t k4 = ck_qround_up(job->k, 4);
  ck_qpack_b(job->k, n0, cols, job->b, panel);
  memset(panel + k4 * CK_QNR, 0, (size_t)(ck_qgemm_panel_stride(job->k) - k4 * CK_QNR));
}

/* The residual's rows [m0, m1) x columns [n0, n0 + cols) requested into the cache ahead of the post step that reads
 * them: a chunk's post step reads each row's few bytes at the output's row stride, a pattern the hardware
 * prefetcher does not follow, so each row's line came from memory on demand (3.6% of int8 ResNet-50's run in
 * ck_qadd_avx2). Asked panel by panel, while the GEMM runs. */
static void ck_qgemm_prefetch_residual(const ck_qgemm_job *job, int64_t m0, int64_t m1, int64_t n0, int64_t cols) {
#if defined(__GNUC__)
  int64_t i;
  if (job->post == NULL) return;
  for (i = m0; i < m1; ++i) {
    const uint8_t *r = job->post->residual + i * job->out_row + n0;
    __builtin_prefetch(r, 0, 2);
    __builtin_prefetch(r + cols - 1, 0, 2);
  }
#else
  (void)job;
  (void)m0;
  (void)m1;
  (void)n0;
  (void)cols;
#endif
}

static void ck_qgemm_chunk(int32_t chunk, int32_t slot, void *ctx) {
  const ck_qgemm_job *job = (const ck_qgemm_job *)ctx;
  const ck_qkernel *kernel = ck_qkernel_current();
  const int64_t first = (int64_t)chunk * ck_qgemm_chunk_columns(job->n);
  const int64_t end = first + ck_qgemm_chunk_columns(job->n) < job->n ? first + ck_qgemm_chunk_columns(job->n) : job->n;
  uint8_t *panel = job->panels + (size_t)slot * (size_t)ck_qgemm_panel_stride(job->k);
  int32_t acc[CK_QACC_ROWS * CK_QNR];
  int64_t n0;
  if (kernel->block != NULL) kernel->tiles(1);
  for (n0 = first; n0 < end; n0 += CK_QNR) {
    const int64_t cols = end - n0 < CK_QNR ? end - n0 : CK_QNR;
    ck_qgemm_pack(job, n0, cols, panel);
    ck_qgemm_prefetch_residual(job, 0, job->m, n0, cols);
    ck_qgemm_rows_of_panel(kernel, job, 0, job->m, n0, cols, panel, acc);
  }
  if (kernel->block != NULL) kernel->tiles(0);
  ck_qgemm_post(job, 0, job->m, first, end);
}

/* ---- few columns: every panel packed once, then tasks of CK_QBLOCK rows over all of them ---------------------
 * Where the planned scratch holds every panel (n <= 256 at 8 threads: ResNet's 14x14 and 7x7 layers, a
 * transformer's dense), column tasks would read the whole weight once per panel (2.4 MB for a 3x3 512-channel
 * conv: from memory, twice at 7x7) and give 2 threads 7 panels to share; row tasks read each 32-row block of it
 * once, for every panel while it is in cache, and make m / 32 equal tasks. The same tiles either way: the same
 * bytes. */

static int64_t ck_qgemm_panels(int64_t n) { return (n + CK_QNR - 1) / CK_QNR; }

static int ck_qgemm_by_rows(int64_t m, int64_t n) {
  return ck_qgemm_panels(n) <= ck_qgemm_slots(n) && m > CK_QBLOCK;
}

static void ck_qgemm_pack_task(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_qgemm_job *job = (const ck_qgemm_job *)ctx;
  const int64_t n0 = (int64_t)task * CK_QNR, cols = job->n - n0 < CK_QNR ? job->n - n0 : CK_QNR;
  (void)n_tasks;
  ck_qgemm_pack(job, n0, cols, job->panels + (size_t)task * (size_t)ck_qgemm_panel_stride(job->k));
}

static void ck_qgemm_rows_task(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_qgemm_job *job = (const ck_qgemm_job *)ctx;
  const ck_qkernel *kernel = ck_qkernel_current();
  const int64_t m0 = (int64_t)task * CK_QBLOCK, m1 = m0 + CK_QBLOCK < job->m ? m0 + CK_QBLOCK : job->m;
  int32_t acc[CK_QACC_ROWS * CK_QNR];
  int64_t p;
  (void)n_tasks;
  if (kernel->block != NULL) kernel->tiles(1);
  for (p = 0; p < ck_qgemm_panels(job->n); ++p) {
    const int64_t n0 = p * CK_QNR, cols = job->n - n0 < CK_QNR ? job->n - n0 : CK_QNR;
    ck_qgemm_prefetch_residual(job, m0, m1, n0, cols);
    ck_qgemm_rows_of_panel(kernel, job, m0, m1, n0, cols,
                           job->panels + (size_t)p * (size_t)ck_qgemm_panel_stride(job->k), acc);
  }
  if (kernel->block != NULL) kernel->tiles(0);
  ck_qgemm_post(job, m0, m1, 0, job->n);
}

void ck_qgemm_core(int64_t m, int64_t n, int64_t k, const int8_t *packed_a, const ck_qb_source *b,
                   const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out, int64_t out_row,
                   int64_t out_col, uint8_t *panels) {
  ck_qgemm_core_post(m, n, k, packed_a, b, bias, scale, q, out, out_row, out_col, panels, NULL, NULL);
}

void ck_qgemm_core_post(int64_t m, int64_t n, int64_t k, const int8_t *packed_a, const ck_qb_source *b,
                        const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out, int64_t out_row,
                        int64_t out_col, uint8_t *panels, const ck_qpost *post, const ck_qfix *fix) {
  ck_qgemm_job job;
  job.m = m;
  job.n = n;
  job.k = k;
  job.packed_a = packed_a;
  job.b = b;
  job.bias = bias;
  job.scale = scale;
  job.q = q;
  job.out = out;
  job.out_row = out_row;
  job.out_col = out_col;
  job.panels = panels;
  job.post = out_col == 1 ? post : NULL;
  job.fix = fix;
  if (ck_qgemm_by_rows(m, n)) {
    byoc_parallel_for((int32_t)ck_qgemm_panels(n), ck_qgemm_pack_task, &job);
    byoc_parallel_for((int32_t)((m + CK_QBLOCK - 1) / CK_QBLOCK), ck_qgemm_rows_task, &job);
    return;
  }
  byoc_parallel_chunks((int32_t)ck_qgemm_chunks(n), (int32_t)ck_qgemm_slots(n), ck_qgemm_chunk, &job);
}

void ck_qgemm_panel(int64_t m, int64_t cols, int64_t k, const int8_t *packed_a, const uint8_t *panel,
                    const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out, int64_t out_row) {
  const ck_qkernel *kernel = ck_qkernel_current();
  const int64_t k4 = ck_qround_up(k, 4);
  int64_t m0;
  for (m0 = 0; m0 < m; m0 += CK_QMR) {
    const int64_t rows = m - m0 < CK_QMR ? m - m0 : CK_QMR;
    if (q->rounding == 1)
      ck_qtfl_tile(kernel, k4 / 4, packed_a + m0 * k4, panel, rows, cols, bias + m0,
                   (const int32_t *)(const void *)scale + 2 * m0, q, out + m0 * out_row, out_row, 1);
    else
      kernel->fused(k4 / 4, packed_a + m0 * k4, panel, rows, cols, bias + m0, scale + m0, q, out + m0 * out_row,
                    out_row);
  }
}

/* ---- dense ---------------------------------------------------------------------------------- */

size_t ck_qdense_packed_weight_bytes(const ck_qdense_params *p) {
  if (p == NULL || p->units < 1 || p->depth < 1) return 0;
  return (size_t)(ck_qround_up(p->units, CK_QMR) * ck_qround_up(p->depth, 4) + CK_QKB);
}

/* [round_up(M, 8)][round_up(K, 4)] row-major, zeros past the ends and in the CK_QKB bytes of slack after */
static void ck_qpack_a(int64_t m, int64_t k, const int8_t *w, int8_t *packed) {
  const int64_t k4 = ck_qround_up(k, 4), m8 = ck_qround_up(m, CK_QMR);
  int64_t r;
  memset(packed, 0, (size_t)(m8 * k4 + CK_QKB));
  for (r = 0; r < m; ++r) memcpy(packed + r * k4, w + r * k, (size_t)k);
}

int32_t ck_qdense_pack_weight(const ck_qdense_params *p, const int8_t *weight, int8_t *packed) {
  if (ck_qdense_packed_weight_bytes(p) == 0 || weight == NULL || packed == NULL) return CK_EBADPARAM;
  ck_qpack_a(p->units, p->depth, weight, packed);
  return CK_OK;
}

size_t ck_qdense_workspace_bytes(const ck_qdense_params *p) {
  if (p == NULL || p->depth < 1 || p->batch <= p->direct_rows) return 0;
  return (size_t)(CK_QALIGN + ck_qgemm_slots(p->batch) * ck_qgemm_panel_stride(p->depth));
}

/* sum over c < n of w[c] * (x[c] ^ flip) */
typedef int32_t (*ck_qdot_fn)(int64_t n, const int8_t *w, const uint8_t *x, uint8_t flip);

static int32_t ck_qdot_portable(int64_t n, const int8_t *w, const uint8_t *x, uint8_t flip) {
  int32_t acc = 0;
  int64_t c;
  for (c = 0; c < n; ++c) acc += (int32_t)w[c] * (int32_t)(uint8_t)(x[c] ^ flip);
  return acc;
}

#if defined(CK_QDISPATCH)
/* ck_qdot_portable 32 k at a time: both operands widened to int16 and summed in pairs by vpmaddwd, exact for any
 * weight (no pair-safe packing for a dense weight) */
CK_AVX2_TARGET static int32_t ck_qdot_avx2(int64_t n, const int8_t *w, const uint8_t *x, uint8_t flip) {
  const __m128i f = _mm_set1_epi8((char)flip);
  __m256i s0 = _mm256_setzero_si256(), s1 = s0;
  __m128i h;
  int64_t c;
  for (c = 0; c + 32 <= n; c += 32) {
    const __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(x + c)), f);
    const __m128i x1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(x + c + 16)), f);
    const __m128i w0 = _mm_loadu_si128((const __m128i *)(const void *)(w + c));
    const __m128i w1 = _mm_loadu_si128((const __m128i *)(const void *)(w + c + 16));
    s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_cvtepu8_epi16(x0), _mm256_cvtepi8_epi16(w0)));
    s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_cvtepu8_epi16(x1), _mm256_cvtepi8_epi16(w1)));
  }
  s0 = _mm256_add_epi32(s0, s1);
  h = _mm_add_epi32(_mm256_castsi256_si128(s0), _mm256_extracti128_si256(s0, 1));
  h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
  h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
  return _mm_cvtsi128_si32(h) + ck_qdot_portable(n - c, w + c, x + c, flip);
}
#endif

#if defined(CK_QDISPATCH)
/* ck_qdot_portable 128 k at a time on vpdpbusd (uint8 x int8, four products a lane, exact), the tail under masks:
 * ResNet-50's 2048 x 1000 classifier 0.25 -> 0.12 ms beside the AVX2 dot (one thread, the AVX512-VNNI Xeon) */
CK_VNNI_TARGET static int32_t ck_qdot_vnni(int64_t n, const int8_t *w, const uint8_t *x, uint8_t flip) {
  const __m512i f = _mm512_set1_epi8((char)flip);
  __m512i s0 = _mm512_setzero_si512(), s1 = s0;
  int64_t c;
  for (c = 0; c + 128 <= n; c += 128) {
    s0 = _mm512_dpbusd_epi32(s0, _mm512_xor_si512(_mm512_loadu_si512((const void *)(x + c)), f),
                             _mm512_loadu_si512((const void *)(w + c)));
    s1 = _mm512_dpbusd_epi32(s1, _mm512_xor_si512(_mm512_loadu_si512((const void *)(x + c + 64)), f),
                             _mm512_loadu_si512((const void *)(w + c + 64)));
  }
  for (; c < n; c += 64) {
    const __mmask64 m = ck_qbits(0, n - c < 64 ? n - c : 64);
    s0 = _mm512_dpbusd_epi32(s0, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, x + c), f),   /* w's zeros past n */
                             _mm512_maskz_loadu_epi8(m, w + c));
  }
  return _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
}
#endif

static ck_qdot_fn ck_qdot(void) {
#if defined(CK_QDISPATCH)
  if (ck_qkernel_current()->tile == ck_qtile_vnni) return ck_qdot_vnni;
  if (ck_cpu_has_avx2_int() && strcmp(ck_qkernel_current()->name, "portable-8x32") != 0) return ck_qdot_avx2;
#endif
  return ck_qdot_portable;
}

typedef struct {
  const ck_qdense_params *p;
  const uint8_t *data;
  const int8_t *w;
  const int32_t *bias;
  const float *scale;
  uint8_t *out;
  ck_qdot_fn dot;
} ck_qdense_direct_job;

/* units [first, last) of every row */
static void ck_qdense_direct_units(void *ctx, int64_t first, int64_t last) {
  const ck_qdense_direct_job *j = (const ck_qdense_direct_job *)ctx;
  const ck_qdense_params *p = j->p;
  const int64_t k4 = ck_qround_up(p->depth, 4);
  const uint8_t flip = p->q.input_signed ? 0x80 : 0;
  int64_t r, u;
  for (r = 0; r < p->batch; ++r)
    for (u = first; u < last; ++u) {
      int32_t acc = j->dot(p->depth, j->w + u * k4, j->data + r * p->depth, flip); /* ck_qpack_a's rows */
      if (p->q.rounding == 1)
        ck_qkernel_current()->tfl_row(1, &acc, j->bias[u], (const int32_t *)(const void *)j->scale + 2 * u, &p->q,
                                      j->out + r * p->units + u);
      else
        ck_qrequant_row(1, &acc, j->bias[u], j->scale[u], &p->q, j->out + r * p->units + u);
    }
}

/* Units per task of the direct dense: 64 x a 2048-deep row is 128 KB of the weight */
#define CK_QDENSE_UNITS 64

/* out[r, u] = requant(sum_c W[u, c] * (data[r, c] ^ flip) + bias[u]): the packed weight read in place, once per
 * row, tasks of CK_QDENSE_UNITS units on the pool. A batch-1 classifier through the GEMM core computed 8 columns
 * of its one and ran as one task (int8 ResNet-50's 2048 -> 1000: 0.70 ms, 1% of its run; onnxruntime's 0.17). */
static void ck_qdense_direct(const ck_qdense_params *p, const uint8_t *data, const int8_t *w, const int32_t *bias,
                             const float *scale, uint8_t *out) {
  ck_qdense_direct_job job;
  job.p = p;
  job.data = data;
  job.w = w;
  job.bias = bias;
  job.scale = scale;
  job.out = out;
  job.dot = ck_qdot();
  ck_parallel_range(p->units, CK_QDENSE_UNITS, ck_qdense_direct_units, &job);
}

int32_t ck_qdense(const ck_qdense_params *p, const void *data, const int8_t *packed_weight, const int32_t *bias,
                  const float *scale, void *out, void *workspace) {
  ck_qb_source b;
  uint8_t *panel;
  if (p == NULL || data == NULL || packed_weight == NULL || bias == NULL || scale == NULL || out == NULL ||
      p->batch < 0 || p->units < 1 || p->depth < 1 || !ck_qparams_valid(&p->q))
    return CK_EBADPARAM;
  if (p->batch <= p->direct_rows) {
    ck_qdense_direct(p, (const uint8_t *)data, packed_weight, bias, scale, (uint8_t *)out);
    return CK_OK;
  }
  if (workspace == NULL) return CK_EBADPARAM;
  panel = (uint8_t *)workspace + (CK_QALIGN - (uintptr_t)workspace % CK_QALIGN) % CK_QALIGN;
  /* C[unit, row] = W[unit, :] . data[row, :]: B[k, n] = data[n, k] */
  b.base = (const uint8_t *)data;
  b.row_stride = 1;
  b.col_stride = p->depth;
  b.flip = p->q.input_signed ? 0x80 : 0;
  b.pack = NULL;
  b.rows = NULL;
  b.ctx = NULL;
  ck_qgemm_core(p->units, p->batch, p->depth, packed_weight, &b, bias, scale, &p->q, (uint8_t *)out, 1, p->units,
                panel);
  return CK_OK;
}
