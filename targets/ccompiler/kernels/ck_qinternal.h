/* ck_qinternal.h - what the int8 sources share (ck_qgemm.c, ck_qconv.c, ck_qelementwise.c). */
#ifndef BYOC_CK_QINTERNAL_H_
#define BYOC_CK_QINTERNAL_H_

#include "ck_internal.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define CK_QALIGN 64
/* The AMX tiles' k-block (64 bytes of k per tile row): B panels of the GEMM core hold round_up(k, CK_QKB)
 * k, zeros past k; a packed weight ends in CK_QKB bytes of slack, which a tile row of its last k-block
 * may read (their products with those zeros vanish). */
#define CK_QKB 64
/* The GEMM core's column chunks (its tasks on the pool) are 4 panels wide from CK_QN_WIDE columns on, 2 from
 * CK_QN_HALF, 1 below */
#define CK_QN_WIDE 2048
#define CK_QN_HALF 512

static inline int64_t ck_qround_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

/* memset of n bytes for small bordered planes (a 7x7 plane's 145 bytes with its slack, filled per channel): 8-byte
 * stores inline up to 256 bytes, memset beyond */
static inline void ck_qfill(uint8_t *dst, uint8_t value, int64_t n) {
  if (n > 256) {
    memset(dst, value, (size_t)n);
  } else {
    const uint64_t pattern = (uint64_t)value * 0x0101010101010101ull;
    int64_t i;
    for (i = 0; i + 8 <= n; i += 8) memcpy(dst + i, &pattern, 8);
    for (; i < n; ++i) dst[i] = value;
  }
}

/* memcpy of width <= n <= 2 * width bytes (width at most 8, a constant where inlined) as two overlapping
 * fixed-size copies, both read before either is written */
static inline void ck_qcopy_ends(uint8_t *dst, const uint8_t *src, int64_t n, size_t width) {
  uint64_t a, b;
  memcpy(&a, src, width);
  memcpy(&b, src + n - (int64_t)width, width);
  memcpy(dst, &a, width);
  memcpy(dst + n - (int64_t)width, &b, width);
}

/* memcpy of n < 8 bytes (a vector's last lanes): two overlapping 4-byte copies or single bytes, inline */
static inline void ck_qcopy_tail(uint8_t *dst, const uint8_t *src, int64_t n) {
  if (n >= 4) {
    ck_qcopy_ends(dst, src, n, 4);
  } else {
    int64_t i;
    for (i = 0; i < n; ++i) dst[i] = src[i];
  }
}

/* memcpy of n bytes for the short rows of small planes (a depthwise layer's 7- and 14-byte rows, copied twice per
 * plane): up to 16 bytes as two overlapping fixed-size copies the compiler inlines, longer ones through memcpy.
 * The library's call per 7-byte row was 13% of a 960-channel 7x7 depthwise conv. Reads and writes only [0, n). */
static inline void ck_qcopy_row(uint8_t *dst, const uint8_t *src, int64_t n) {
  if (n > 16) {
    memcpy(dst, src, (size_t)n);
  } else if (n >= 8) {
    ck_qcopy_ends(dst, src, n, 8);
  } else {
    ck_qcopy_tail(dst, src, n);
  }
}

/* The B operand of the int8 GEMM: element (k, n) at base[k * row_stride + n * col_stride], raw
 * int8 or uint8 bytes; `flip` (0x80 for int8, 0 for uint8) turns them into uint8 while packed. */
typedef struct ck_qb_source_ {
  const uint8_t *base;
  int64_t row_stride, col_stride;
  const int32_t *rows; /* NULL, or B's row k starts at base + rows[k] * row_stride */
  uint8_t flip;
  /* NULL, or what packs a panel instead (columns n0..n0 + cols in ck_qpack_b's layout, zeros past the ends):
   * the convolution's panels read straight from its zero-point-bordered input (ck_qconv.c), with ctx */
  void (*pack)(const struct ck_qb_source_ *b, int64_t k, int64_t n0, int64_t cols, uint8_t *panel);
  const void *ctx;
} ck_qb_source;

/* dst[j * 4 + r] = rows[r][j] for r < 4, j < CK_QNR: four k of a B panel's k-step (ck_qpack_b's layout) */
static inline void ck_qinterleave4(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,
                                   uint8_t flip, uint8_t *dst) {
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8((char)flip);
  int h;
  for (h = 0; h < 32; h += 16) {
    const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(r0 + h));
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(r1 + h));
    const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(r2 + h));
    const __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(r3 + h));
    const __m128i lo01 = _mm_unpacklo_epi8(a, b), hi01 = _mm_unpackhi_epi8(a, b);
    const __m128i lo23 = _mm_unpacklo_epi8(c, e), hi23 = _mm_unpackhi_epi8(c, e);
    uint8_t *d = dst + h * 4;
    _mm_storeu_si128((__m128i *)(void *)d, _mm_xor_si128(_mm_unpacklo_epi16(lo01, lo23), f));
    _mm_storeu_si128((__m128i *)(void *)(d + 16), _mm_xor_si128(_mm_unpackhi_epi16(lo01, lo23), f));
    _mm_storeu_si128((__m128i *)(void *)(d + 32), _mm_xor_si128(_mm_unpacklo_epi16(hi01, hi23), f));
    _mm_storeu_si128((__m128i *)(void *)(d + 48), _mm_xor_si128(_mm_unpackhi_epi16(hi01, hi23), f));
  }
#else
  int j;
  for (j = 0; j < 32; ++j) {
    dst[j * 4] = (uint8_t)(r0[j] ^ flip);
    dst[j * 4 + 1] = (uint8_t)(r1[j] ^ flip);
    dst[j * 4 + 2] = (uint8_t)(r2[j] ^ flip);
    dst[j * 4 + 3] = (uint8_t)(r3[j] ^ flip);
  }
#endif
}

/* What a GEMM task does to its finished part of the output while it is in cache: a residual qnn.add
 * (ck_qconv2d_add), out = qadd(out, residual) or (conv_is_rhs) qadd(residual, out), residual laid out as the
 * output (row stride out_row, unit column stride). */
typedef struct {
  const ck_qadd_params *add;
  const uint8_t *residual;
  int32_t conv_is_rhs;
} ck_qpost;

/* The little-endian int32 at p (a plain load on little-endian CPUs) */
static inline int32_t ck_qle32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* A pair-safe weight's correction table (ck_qconv2d_params.pairs): row r's entries are
 * [row_start[r], row_start[r + 1]), each 8 bytes of `entries`: k-step << 3 | r % 8 (int32) and the 4 int8 weights
 * to add back at that k-step, little-endian; row_start already offset to the GEMM's first row. NULL: a plain
 * weight. */
typedef struct {
  const uint8_t *row_start;
  const uint8_t *entries;
} ck_qfix;

/* ck_qadd's arithmetic on rows x n bytes at a row stride of `stride` in lhs, rhs and out, on the calling thread
 * (no validation: ck_qadd_params_valid was asked) */
void ck_qadd_rows(const ck_qadd_params *p, int64_t rows, int64_t n, int64_t stride, const uint8_t *lhs,
                  const uint8_t *rhs, uint8_t *out);

/* ck_qadd's checks of its parameters */
int ck_qadd_params_valid(const ck_qadd_params *p);

/* out[m, n] = requant(sum_k A[m, k] * B[k, n] + bias[m]) for m < M, n < N, stored at
 * out + m * out_row + n * out_col; A packed (row-major [round_up(M, 8)][round_up(K, 4)], zeros past the ends,
 * ck_qconv2d_pack_weight's layout);
 * panels: ck_qgemm_slots(n) * ck_qgemm_panel_stride(k) bytes of scratch, 64-byte aligned: one packed panel
 * per thread (the columns are split across the runtime's pool). */
void ck_qgemm_core(int64_t m, int64_t n, int64_t k, const int8_t *packed_a, const ck_qb_source *b,
                   const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out, int64_t out_row,
                   int64_t out_col, uint8_t *panels);
/* ck_qgemm_core, then `post` on each task's rows x columns (NULL: nothing; unit column stride only); `fix`: A's
 * correction table (NULL: A is a plain weight) */
void ck_qgemm_core_post(int64_t m, int64_t n, int64_t k, const int8_t *packed_a, const ck_qb_source *b,
                        const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out, int64_t out_row,
                        int64_t out_col, uint8_t *panels, const ck_qpost *post, const ck_qfix *fix);
/* ck_qgemm_core's work on one B panel the caller packed (cols <= CK_QNR columns in ck_qpack_b's layout:
 * element (k, j) at (k / 4) * 4 * CK_QNR + j * 4 + k % 4, uint8, zeros past the ends), serially: the
 * bounded-scratch conv writes its im2col straight into it. */
void ck_qgemm_panel(int64_t m, int64_t cols, int64_t k, const int8_t *packed_a, const uint8_t *panel,
                    const int32_t *bias, const float *scale, const ck_qparams *q, uint8_t *out, int64_t out_row);
int64_t ck_qgemm_slots(int64_t n);        /* threads' panels a call over n columns uses */
int64_t ck_qgemm_panel_stride(int64_t k); /* bytes of one (k rounded up to CK_QKB), a multiple of CK_QALIGN */
int64_t ck_qgemm_panel_bytes(int64_t k);  /* bytes of ck_qgemm_panel's one panel (k rounded up to 4) */

/* out[x] = requant(acc[x] + bias) for x < n (contiguous output, int8 or uint8 as q says). */
void ck_qrequant_row(int64_t n, const int32_t *acc, int32_t bias, float scale, const ck_qparams *q, uint8_t *out);
/* the same under TFLite's rounding (q->rounding 1): me the channel's (multiplier, exponent) */
void ck_qrequant_row_tfl(int64_t n, const int32_t *acc, int32_t bias, const int32_t *me, const ck_qparams *q,
                         uint8_t *out);

/* ---- Winograd F(2x2, 3x3) (ck_qwinograd.c): ck_qconv2d_params.winograd ------------------------------------ */
#define CK_QWG_MAX_CHANNELS 1024 /* input channels whose 4x sums stay in int32 (ck_qwinograd.c) */
int ck_qwinograd_takes(const ck_qconv2d_params *p); /* the geometry it computes */
size_t ck_qwinograd_weight_bytes(const ck_qconv2d_params *p);
size_t ck_qwinograd_workspace_bytes(const ck_qconv2d_params *p, int64_t oh, int64_t ow);
void ck_qwinograd_pack_weight(const ck_qconv2d_params *p, const int8_t *weight, int16_t *packed);
/* the convolution (+ post) of every image, on a CK_QALIGN-aligned workspace */
void ck_qwinograd_run(const ck_qconv2d_params *p, int64_t oh, int64_t ow, const uint8_t *data, const int16_t *weight,
                      const int32_t *bias, const float *scale, uint8_t *out, uint8_t *ws, const ck_qpost *post);

/* ---- channels-last direct convolution (ck_qdirect.c): ck_qconv2d_params.channels_last ------------------------ */
int ck_qdirect_takes(const ck_qconv2d_params *p); /* the convolutions it computes */
size_t ck_qdirect_weight_bytes(const ck_qconv2d_params *p);
void ck_qdirect_pack_weight(const ck_qconv2d_params *p, const int8_t *weight, int8_t *packed);
size_t ck_qdirect_workspace_bytes(const ck_qconv2d_params *p, int64_t oh, int64_t ow);
/* the convolution (+ post) of every image, on a CK_QALIGN-aligned workspace */
void ck_qdirect_run(const ck_qconv2d_params *p, int64_t oh, int64_t ow, const uint8_t *data, const int8_t *weight,
                    const int32_t *bias, const float *scale, uint8_t *out, uint8_t *ws, const ck_qpost *post);
/* 1 when the GEMM kernel in use is the VNNI one (or AMX's, beside it): the direct convolution's tiles run on vpdpbusd */
int ck_qdirect_vnni(void);

/* One output row of a depthwise convolution over a zero-point-bordered plane:
 * out[x] = requant(bias + sum over taps (i, j) of w[i * kw + j] * base[i * row_step + x * stride + j * col_step])
 * for x < n, the input bytes int8 when q->input_signed, else uint8; acc: n int32 of scratch.
 * May read one byte past the last tap of the row (callers leave slack after the plane). */
void ck_qdw_row(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride, int64_t col_step, int64_t kh,
                int64_t kw, const int8_t *w, int32_t bias, float scale, const ck_qparams *q, uint8_t *out,
                int32_t *acc);

/* ck_qdw_row with TFLite's requantization (q->rounding 1): me = the channel's (multiplier, exponent). */
void ck_qdw_row_tfl(int64_t n, const uint8_t *base, int64_t row_step, int64_t stride, int64_t col_step, int64_t kh,
                    int64_t kw, const int8_t *w, int32_t bias, const int32_t *me, const ck_qparams *q, uint8_t *out,
                    int32_t *acc);

/* 1 when the VNNI kernel is in use and the CPU has AVX512-VBMI too (the byte-permute paths) */
int ck_qvbmi(void);

/* A depthwise channel's whole output from its plane bordered with the zero point (rows of pw bytes, at least
 * 64 bytes readable past its end; flat: oh * pw + 16 bytes of scratch; index: ck_qdw_plane_index's), scale: the channel's constants. 1 when
 * done (AVX512-VBMI + VNNI, the VNNI kernel in use), 0 when the caller must run its rows (ck_qdw_row). */
int ck_qdw_plane(const ck_conv2d_params *c, const uint8_t *index, const uint8_t *pad, int64_t pw, int64_t oh,
                 int64_t ow, const int8_t *w, int32_t bias, const float *scale, const ck_qparams *q, uint8_t *out,
                 uint8_t *flat);
/* ck_qdw_plane's byte permutation of c's taps (128 bytes), made once per call: byte 4 * x + t of group g reads
 * column x * stride + (4 * g + t) * dilation of a 64-byte load */
void ck_qdw_plane_index(const ck_conv2d_params *c, uint8_t *index);

/* The requantization constants of output channel c: scale + c, or (rounding 1) its int32 pair. */
static inline const float *ck_qchannel_scale(const ck_qparams *q, const float *scale, int64_t c) {
  return scale + (q->rounding == 1 ? 2 * c : c);
}

/* ---- TFLite's requantization (ck_qparams.rounding 1, ck_qadd rounding 2) ---- */

/* The shifts of exponent e, clamped to what quantize_multiplier produces (e in [-31, 30]) so that a bad
 * constant cannot shift out of range. */
static inline void ck_tfl_shifts(int32_t e, int32_t *left, int32_t *right) {
  *left = e > 0 ? (e > 30 ? 30 : e) : 0;
  *right = e < 0 ? (e < -31 ? 31 : -e) : 0;
}

/* MultiplyByQuantizedMultiplier(x, m, e), m in [0, 2**31): the doubling high multiply
 * trunc((x * m + nudge) / 2**31) (nudge 2**30, or 1 - 2**30 for negative products) equals
 * floor((x * m + 2**30) / 2**31) -- one arithmetic shift; the rounding divide by 2**right rounds ties
 * away from zero (gemmlowp's RoundingDivideByPOT). */
static inline int32_t ck_tfl_scale1(int32_t x, int32_t m, int32_t left, int32_t right) {
  const int32_t v = (int32_t)((uint32_t)x << left);
  const int32_t h = (int32_t)(((int64_t)v * m + ((int64_t)1 << 30)) >> 31);
  const int32_t mask = (int32_t)(((uint32_t)1 << right) - 1u);
  const int32_t threshold = (mask >> 1) + (h < 0 ? 1 : 0);
  return (h >> right) + ((h & mask) > threshold ? 1 : 0);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
#include <immintrin.h>
/* ck_tfl_scale1 on 16 lanes: the 64-bit products of the even and the odd lanes (vpmuldq), each shifted
 * back by 31, interleaved; then the rounding right shift. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512i ck_tfl_scale16(
    __m512i x, int32_t m, int32_t left, int32_t right) {
  const __m512i v = _mm512_sll_epi32(x, _mm_cvtsi32_si128(left)), vm = _mm512_set1_epi64(m);
  const __m512i nudge = _mm512_set1_epi64((int64_t)1 << 30);
  const __m512i even = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(v, vm), nudge), 31);
  const __m512i odd = _mm512_srai_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(v, 32), vm), nudge), 31);
  const __m512i h = _mm512_mask_blend_epi32((__mmask16)0xAAAA, even, _mm512_slli_epi64(odd, 32));
  const __m512i mask = _mm512_set1_epi32((int32_t)(((uint32_t)1 << right) - 1u));
  const __m512i threshold = _mm512_add_epi32(_mm512_srli_epi32(mask, 1), _mm512_srli_epi32(h, 31));
  const __m512i r = _mm512_sra_epi32(h, _mm_cvtsi32_si128(right));
  return _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(_mm512_and_si512(h, mask), threshold), r,
                               _mm512_set1_epi32(1));
}


/* bits [a, b) of a 64-bit mask, 0 <= a <= b <= 64 */
static inline __mmask64 ck_qbits(int64_t a, int64_t b) {
  const uint64_t below_b = b >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << b) - 1u;
  const uint64_t below_a = a >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << a) - 1u;
  return (__mmask64)(below_b & ~below_a);
}

/* Stride 2 in a register: lane x holds byte 2x of the 128 from base for x in [a, b), 0 elsewhere; masked loads
 * read bytes [2a, 2b - 1) only, so base may lie before or run past the bytes it stands for (an address, never
 * dereferenced outside them). packus interleaves 128-bit lanes: the qword permutation puts them in order. */
__attribute__((target("avx512f,avx512bw"))) static inline __m512i ck_qeven_bytes(uintptr_t base, int64_t a,
                                                                                  int64_t b) {
  const __m512i even = _mm512_set1_epi16(0x00FF);
  const __m512i l = _mm512_maskz_loadu_epi8(ck_qbits(2 * a < 64 ? 2 * a : 64, 2 * b - 1 < 64 ? 2 * b - 1 : 64),
                                            (const void *)base);
  const __m512i h = _mm512_maskz_loadu_epi8(ck_qbits(2 * a > 64 ? 2 * a - 64 : 0, 2 * b - 1 > 64 ? 2 * b - 65 : 0),
                                            (const void *)(base + 64));
  return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7),
                                  _mm512_packus_epi16(_mm512_and_si512(l, even), _mm512_and_si512(h, even)));
}
#endif

/* the output clamp is a valid subrange of the output type */
int ck_qparams_valid(const ck_qparams *q);

#endif /* BYOC_CK_QINTERNAL_H_ */
