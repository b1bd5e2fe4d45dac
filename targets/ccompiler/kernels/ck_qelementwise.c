/* ck_qelementwise.c - quantize, dequantize, qnn.add, relu/clip and max pooling on int8/uint8.
 *
 * Each computes exactly what byoc's reference computes (op/qnn.py): float32 steps where the
 * reference (onnxruntime) uses float32, ties to even, saturation to the output type. qnn.add's
 * float32 form is the hot one (ResNet's residual adds); on x86-64 it also runs as AVX-512, or AVX2 + FMA (the
 * same fused multiply-adds, lane by lane) when the CPU has it.
 */
#include <math.h>
#include <string.h>

#include "ck_qinternal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
#define CK_QADD_DISPATCH 1
#include <immintrin.h>
#endif

static float ck_clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

#if defined(CK_QADD_DISPATCH)
#define CK_Q_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

/* AVX-512 where the CPU has it, unless the portable int8 kernel was forced (tests) */
static int ck_q_use_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && strcmp(ck_qgemm_kernel_name(), "portable-8x32") != 0;
}

#define CK_Q_AVX2 __attribute__((target("avx2,fma")))

/* AVX2 with FMA (x86 without AVX-512: qnn.add's fmaf steps in 8 lanes instead of libm calls), unless the
 * portable int8 kernel was forced */
static int ck_q_use_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         strcmp(ck_qgemm_kernel_name(), "portable-8x32") != 0;
}

/* ck_quantize's loop, 16 lanes at a time: the same float32 division, rounding and clamp */
CK_Q_AVX512 static int64_t ck_quantize_avx512(int64_t n, const float *in, float scale, float zp, int32_t out_signed,
                                               uint8_t *out) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zp);
  const __m512 lo = _mm512_set1_ps(out_signed ? -128.0f : 0.0f), hi = _mm512_set1_ps(out_signed ? 127.0f : 255.0f);
  int64_t i;
  for (i = 0; i + 16 <= n; i += 16) {
    __m512 v = _mm512_div_ps(_mm512_loadu_ps(in + i), s);
    v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
    v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v); /* NaN -> 0 */
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    _mm_storeu_si128((__m128i *)(void *)(out + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
  }
  return i;
}

/* ck_quantize's loop, 16 lanes at a time in two vectors of 8: the same float32 division, rounding (vroundps to
 * nearest even, nearbyintf's default mode) and clamp; the clamped integers narrowed to bytes exactly. The scalar loop
 * called libm's nearbyintf per element: 3.8% of int8 MobileNetV2's run (its 224 x 224 x 3 float input). */
CK_Q_AVX2 static int64_t ck_quantize_avx2(int64_t n, const float *in, float scale, float zp, int32_t out_signed,
                                          uint8_t *out) {
  const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(zp);
  const __m256 lo = _mm256_set1_ps(out_signed ? -128.0f : 0.0f), hi = _mm256_set1_ps(out_signed ? 127.0f : 255.0f);
  int64_t i;
  for (i = 0; i + 16 <= n; i += 16) {
    __m128i w[2], bytes;
    int h;
    for (h = 0; h < 2; ++h) {
      __m256 v = _mm256_div_ps(_mm256_loadu_ps(in + i + 8 * h), s);
      __m256i r;
      v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), z);
      v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); /* NaN -> 0 */
      r = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
      w[h] = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    }
    bytes = out_signed ? _mm_packs_epi16(w[0], w[1]) : _mm_packus_epi16(w[0], w[1]);
    _mm_storeu_si128((__m128i *)(void *)(out + i), bytes);
  }
  return i;
}
#endif

/* ---- quantize / dequantize -------------------------------------------------------------------- */

/* Quantize and dequantize in parallel: items are (row, segment) pairs, rows = outer x channels of `inner`
 * elements, each row cut into segments of CK_QGRAIN elements (a multiple of 64: cache-line boundaries). */
#define CK_QGRAIN 65536

typedef struct {
  int64_t channels, inner, segments;
  const void *in;
  const float *scale;
  const int32_t *zero_point;
  int32_t is_signed; /* of the int8 side */
  void *out;
} ck_qconvert_job;

static void ck_qconvert_item(const ck_qconvert_job *j, int64_t item, int64_t *base, int64_t *n, int64_t *c) {
  const int64_t row = item / j->segments, first = item % j->segments * CK_QGRAIN;
  *c = row % j->channels;
  *base = row * j->inner + first;
  *n = j->inner - first < CK_QGRAIN ? j->inner - first : CK_QGRAIN;
}

static void ck_quantize_range(void *ctx, int64_t begin, int64_t end) {
  const ck_qconvert_job *j = (const ck_qconvert_job *)ctx;
  const float lo = j->is_signed ? -128.0f : 0.0f, hi = j->is_signed ? 127.0f : 255.0f;
  const float *in = (const float *)j->in;
  int64_t item, base, n, c, i;
  for (item = begin; item < end; ++item) {
    ck_qconvert_item(j, item, &base, &n, &c);
    {
      const float s = j->scale[c], zp = (float)j->zero_point[c];
      i = 0;
#if defined(CK_QADD_DISPATCH)
      if (ck_q_use_avx512())
        i = ck_quantize_avx512(n, in + base, s, zp, j->is_signed, (uint8_t *)j->out + base);
      else if (ck_q_use_avx2())
        i = ck_quantize_avx2(n, in + base, s, zp, j->is_signed, (uint8_t *)j->out + base);
#endif
      for (; i < n; ++i) {
        const float q = in[base + i] / s; /* stored: float32 even where float math runs wider */
        const float v = nearbyintf(q) + zp;
        const int32_t r = v != v ? 0 : (int32_t)ck_clampf(v, lo, hi); /* NaN -> 0 */
        if (j->is_signed)
          ((int8_t *)j->out)[base + i] = (int8_t)r;
        else
          ((uint8_t *)j->out)[base + i] = (uint8_t)r;
      }
    }
  }
}

static void ck_dequantize_range(void *ctx, int64_t begin, int64_t end) {
  const ck_qconvert_job *j = (const ck_qconvert_job *)ctx;
  float *out = (float *)j->out;
  int64_t item, base, n, c, i;
  for (item = begin; item < end; ++item) {
    ck_qconvert_item(j, item, &base, &n, &c);
    for (i = 0; i < n; ++i) {
      const int32_t x = j->is_signed ? ((const int8_t *)j->in)[base + i] : ((const uint8_t *)j->in)[base + i];
      out[base + i] = (float)(x - j->zero_point[c]) * j->scale[c];
    }
  }
}

static int32_t ck_qconvert(ck_range_fn fn, int64_t outer, int64_t channels, int64_t inner, const void *in,
                           const float *scale, const int32_t *zero_point, int32_t is_signed, void *out) {
  ck_qconvert_job j;
  if (in == NULL || scale == NULL || zero_point == NULL || out == NULL || outer < 0 || channels < 1 || inner < 0)
    return CK_EBADPARAM;
  if (inner == 0) return CK_OK;
  j.channels = channels;
  j.inner = inner;
  j.segments = (inner + CK_QGRAIN - 1) / CK_QGRAIN;
  j.in = in;
  j.scale = scale;
  j.zero_point = zero_point;
  j.is_signed = is_signed;
  j.out = out;
  /* about CK_QGRAIN elements per range of items */
  ck_parallel_range(outer * channels * j.segments, inner >= CK_QGRAIN ? 1 : CK_QGRAIN / inner, fn, &j);
  return CK_OK;
}

int32_t ck_quantize(int64_t outer, int64_t channels, int64_t inner, const float *in, const float *scale,
                    const int32_t *zero_point, int32_t out_signed, void *out) {
  return ck_qconvert(ck_quantize_range, outer, channels, inner, in, scale, zero_point, out_signed, out);
}

int32_t ck_dequantize(int64_t outer, int64_t channels, int64_t inner, const void *in, int32_t in_signed,
                      const float *scale, const int32_t *zero_point, float *out) {
  return ck_qconvert(ck_dequantize_range, outer, channels, inner, in, scale, zero_point, in_signed, out);
}

/* Byte-wise kernels (qnn.add, the fused QDQ add, relu/clip) in ranges of CK_QGRAIN elements on the pool:
 * fn computes n elements of a, b (NULL for unary) into out with its params. */
typedef void (*ck_qbytes_fn)(const void *params, int64_t n, const uint8_t *a, const uint8_t *b, uint8_t *out);

typedef struct {
  ck_qbytes_fn fn;
  const void *params;
  const uint8_t *a, *b;
  uint8_t *out;
} ck_qbytes_job;

static void ck_qbytes_range(void *ctx, int64_t begin, int64_t end) {
  const ck_qbytes_job *j = (const ck_qbytes_job *)ctx;
  j->fn(j->params, end - begin, j->a + begin, j->b == NULL ? NULL : j->b + begin, j->out + begin);
}

static void ck_qbytes(ck_qbytes_fn fn, const void *params, int64_t n, const void *a, const void *b, void *out) {
  ck_qbytes_job j;
  j.fn = fn;
  j.params = params;
  j.a = (const uint8_t *)a;
  j.b = (const uint8_t *)b;
  j.out = (uint8_t *)out;
  ck_parallel_range(n, CK_QGRAIN, ck_qbytes_range, &j);
}

/* ---- qnn.add ---------------------------------------------------------------------------------- */

static int32_t ck_load_q(const void *p, int32_t is_signed, int64_t i) {
  return is_signed ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

static void ck_store_q(void *p, int32_t is_signed, int64_t i, int32_t v) {
  if (is_signed)
    ((int8_t *)p)[i] = (int8_t)v;
  else
    ((uint8_t *)p)[i] = (uint8_t)v;
}

/* round(p / 2**shift), ties to even, sign-symmetric (qnn_math.round_shift), 1 <= shift <= 62 */
static int64_t ck_round_shift(int64_t p, int32_t shift) {
  const uint64_t a = p < 0 ? (uint64_t)0 - (uint64_t)p : (uint64_t)p;
  uint64_t q = a >> shift;
  const uint64_t r = a - (q << shift), half = (uint64_t)1 << (shift - 1);
  q += (r > half) || (r == half && (q & 1u));
  return p < 0 ? -(int64_t)q : (int64_t)q;
}

/* TFLite's ADD (rounding 2): both inputs rescaled by MultiplyByQuantizedMultiplier after the left shift, the
 * sum (int32 wrap as TFLite's) rescaled to the output, + zero point, saturated; the shifts found once. */
static void ck_qadd_tflite(const ck_qadd_params *p, int64_t begin, int64_t n, const void *lhs, const void *rhs,
                           void *out) {
  const int32_t lo = p->is_signed ? -128 : 0, hi = p->is_signed ? 127 : 255;
  int32_t left[3], right[3], k;
  int64_t i;
  for (k = 0; k < 3; ++k) ck_tfl_shifts(p->tfl_exp[k], &left[k], &right[k]);
  for (i = begin; i < n; ++i) {
    const int32_t a = ck_load_q(lhs, p->is_signed, i) - p->lhs_zero_point;
    const int32_t b = ck_load_q(rhs, p->is_signed, i) - p->rhs_zero_point;
    const int32_t sa = ck_tfl_scale1((int32_t)((uint32_t)a << p->left_shift), p->tfl_mult[0], left[0], right[0]);
    const int32_t sb = ck_tfl_scale1((int32_t)((uint32_t)b << p->left_shift), p->tfl_mult[1], left[1], right[1]);
    int64_t r = (int64_t)ck_tfl_scale1((int32_t)((uint32_t)sa + (uint32_t)sb), p->tfl_mult[2], left[2], right[2]) +
                p->output_zero_point;
    r = r < lo ? lo : (r > hi ? hi : r);
    ck_store_q(out, p->is_signed, i, (int32_t)r);
  }
}

static void ck_qadd_portable(const ck_qadd_params *p, int64_t begin, int64_t n, const void *lhs, const void *rhs,
                             void *out) {
  const float lo = p->is_signed ? -128.0f : 0.0f, hi = p->is_signed ? 127.0f : 255.0f;
  int64_t i;
  for (i = begin; i < n; ++i) {
    const int32_t a = ck_load_q(lhs, p->is_signed, i), b = ck_load_q(rhs, p->is_signed, i);
    int64_t r;
    if (p->rounding == 0) {
      const float t = fmaf((float)b, p->ratio_b, p->fixed);
      r = (int64_t)nearbyintf(ck_clampf(fmaf((float)a, p->ratio_a, t), lo, hi));
    } else {
      const int64_t sum = (int64_t)(a - p->lhs_zero_point) * p->mult_a + (int64_t)(b - p->rhs_zero_point) * p->mult_b;
      r = ck_round_shift(sum, p->shift) + p->output_zero_point;
      r = r < (int64_t)lo ? (int64_t)lo : (r > (int64_t)hi ? (int64_t)hi : r);
    }
    ck_store_q(out, p->is_signed, i, (int32_t)r);
  }
}

#if defined(CK_QADD_DISPATCH)
/* rounding 0 only: 16 lanes of the portable loop's float32 steps (fmadd is fmaf, one rounding); a row's last lanes
 * under a mask (a residual add's rows of 66 or 90 pixels left 2 or 10 a row to the scalar loop) */
CK_Q_AVX512 static int64_t ck_qadd_avx512(const ck_qadd_params *p, int64_t n, const void *lhs, const void *rhs,
                                          void *out) {
  const __m512 ra = _mm512_set1_ps(p->ratio_a), rb = _mm512_set1_ps(p->ratio_b), fixed = _mm512_set1_ps(p->fixed);
  const __m512 lo = _mm512_set1_ps(p->is_signed ? -128.0f : 0.0f), hi = _mm512_set1_ps(p->is_signed ? 127.0f : 255.0f);
  int64_t i;
  for (i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFFu : (__mmask16)((1u << (n - i)) - 1u);
    const __m128i a8 = _mm_maskz_loadu_epi8(m, (const void *)((const uint8_t *)lhs + i));
    const __m128i b8 = _mm_maskz_loadu_epi8(m, (const void *)((const uint8_t *)rhs + i));
    const __m512i a = p->is_signed ? _mm512_cvtepi8_epi32(a8) : _mm512_cvtepu8_epi32(a8);
    const __m512i b = p->is_signed ? _mm512_cvtepi8_epi32(b8) : _mm512_cvtepu8_epi32(b8);
    const __m512 t = _mm512_fmadd_ps(_mm512_cvtepi32_ps(b), rb, fixed);
    __m512 v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), ra, t);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    _mm_mask_storeu_epi8((void *)((uint8_t *)out + i), m,
                         _mm512_cvtepi32_epi8(_mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
  }
  return n;
}
#endif

#if defined(CK_QADD_DISPATCH)
/* rounding 0 only: 8 lanes of the portable loop's float32 steps (fmadd is fmaf, one rounding; cvtps rounds ties
 * to even in the default mode, as nearbyintf), the clamped values narrowed to bytes exactly */
CK_Q_AVX2 static int64_t ck_qadd_avx2(const ck_qadd_params *p, int64_t n, const void *lhs, const void *rhs, void *out) {
  const __m256 ra = _mm256_set1_ps(p->ratio_a), rb = _mm256_set1_ps(p->ratio_b), fixed = _mm256_set1_ps(p->fixed);
  const __m256 lo = _mm256_set1_ps(p->is_signed ? -128.0f : 0.0f), hi = _mm256_set1_ps(p->is_signed ? 127.0f : 255.0f);
  int64_t i;
  for (i = 0; i + 8 <= n; i += 8) {
    const __m128i a8 = _mm_loadl_epi64((const __m128i *)(const void *)((const uint8_t *)lhs + i));
    const __m128i b8 = _mm_loadl_epi64((const __m128i *)(const void *)((const uint8_t *)rhs + i));
    const __m256i a = p->is_signed ? _mm256_cvtepi8_epi32(a8) : _mm256_cvtepu8_epi32(a8);
    const __m256i b = p->is_signed ? _mm256_cvtepi8_epi32(b8) : _mm256_cvtepu8_epi32(b8);
    const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(b), rb, fixed);
    const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(_mm256_cvtepi32_ps(a), ra, t), lo), hi);
    const __m256i r = _mm256_cvtps_epi32(v);
    const __m128i r16 = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    _mm_storel_epi64((__m128i *)(void *)((uint8_t *)out + i),
                     p->is_signed ? _mm_packs_epi16(r16, r16) : _mm_packus_epi16(r16, r16));
  }
  return i;
}

/* rounding 2: ck_qadd_tflite's integer steps on 16 lanes (ck_tfl_scale16 is ck_tfl_scale1 lane by lane), the
 * clamp before the zero point is added (no int32 wrap-around) */
CK_Q_AVX512 static int64_t ck_qadd_tflite_avx512(const ck_qadd_params *p, int64_t n, const void *lhs, const void *rhs,
                                                 void *out) {
  const __m512i za = _mm512_set1_epi32(p->lhs_zero_point), zb = _mm512_set1_epi32(p->rhs_zero_point);
  const __m512i zo = _mm512_set1_epi32(p->output_zero_point);
  const __m512i lo = _mm512_set1_epi32((p->is_signed ? -128 : 0) - p->output_zero_point);
  const __m512i hi = _mm512_set1_epi32((p->is_signed ? 127 : 255) - p->output_zero_point);
  const __m128i shift = _mm_cvtsi32_si128(p->left_shift);
  int32_t left[3], right[3], k;
  int64_t i;
  for (k = 0; k < 3; ++k) ck_tfl_shifts(p->tfl_exp[k], &left[k], &right[k]);
  for (i = 0; i + 16 <= n; i += 16) {
    const __m128i a8 = _mm_loadu_si128((const __m128i *)(const void *)((const uint8_t *)lhs + i));
    const __m128i b8 = _mm_loadu_si128((const __m128i *)(const void *)((const uint8_t *)rhs + i));
    const __m512i a = _mm512_sub_epi32(p->is_signed ? _mm512_cvtepi8_epi32(a8) : _mm512_cvtepu8_epi32(a8), za);
    const __m512i b = _mm512_sub_epi32(p->is_signed ? _mm512_cvtepi8_epi32(b8) : _mm512_cvtepu8_epi32(b8), zb);
    const __m512i sa = ck_tfl_scale16(_mm512_sll_epi32(a, shift), p->tfl_mult[0], left[0], right[0]);
    const __m512i sb = ck_tfl_scale16(_mm512_sll_epi32(b, shift), p->tfl_mult[1], left[1], right[1]);
    const __m512i r = ck_tfl_scale16(_mm512_add_epi32(sa, sb), p->tfl_mult[2], left[2], right[2]);
    _mm_storeu_si128((__m128i *)(void *)((uint8_t *)out + i),
                     _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(r, lo), hi), zo)));
  }
  return i;
}
#endif

/* rows x n bytes at a row stride of `stride` in lhs, rhs and out; the instruction set chosen once */
void ck_qadd_rows(const ck_qadd_params *p, int64_t rows, int64_t n, int64_t stride, const uint8_t *lhs,
                  const uint8_t *rhs, uint8_t *out) {
  int64_t r;
#if defined(CK_QADD_DISPATCH)
  const int vector = p->rounding != 1 && ck_q_use_avx512();
  const int vector256 = !vector && p->rounding == 0 && ck_q_use_avx2();
#endif
  for (r = 0; r < rows; ++r, lhs += stride, rhs += stride, out += stride) {
    int64_t done = 0;
#if defined(CK_QADD_DISPATCH)
    if (vector)
      done = p->rounding == 0 ? ck_qadd_avx512(p, n, lhs, rhs, out) : ck_qadd_tflite_avx512(p, n, lhs, rhs, out);
    else if (vector256)
      done = ck_qadd_avx2(p, n, lhs, rhs, out);
#endif
    if (p->rounding == 2)
      ck_qadd_tflite(p, done, n, lhs, rhs, out);
    else
      ck_qadd_portable(p, done, n, lhs, rhs, out);
  }
}

static void ck_qadd_serial(const void *params, int64_t n, const uint8_t *lhs, const uint8_t *rhs, uint8_t *out) {
  ck_qadd_rows((const ck_qadd_params *)params, 1, n, n, lhs, rhs, out);
}

int ck_qadd_params_valid(const ck_qadd_params *p) {
  return p != NULL && p->rounding >= 0 && p->rounding <= 2 && (p->rounding != 1 || (p->shift >= 1 && p->shift <= 62)) &&
         (p->rounding != 2 || (p->left_shift >= 0 && p->left_shift <= 24 && p->tfl_mult[0] >= 0 &&
                               p->tfl_mult[1] >= 0 && p->tfl_mult[2] >= 0));
}

int32_t ck_qadd(const ck_qadd_params *p, int64_t n, const void *lhs, const void *rhs, void *out) {
  if (!ck_qadd_params_valid(p) || lhs == NULL || rhs == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  ck_qbytes(ck_qadd_serial, p, n, lhs, rhs, out);
  return CK_OK;
}

/* ---- relu / clip ------------------------------------------------------------------------------ */

static void ck_qclamp_serial(const void *params, int64_t n, const uint8_t *in, const uint8_t *unused, uint8_t *out) {
  const int32_t *c = (const int32_t *)params; /* is_signed, lo, hi */
  int64_t i;
  (void)unused;
  for (i = 0; i < n; ++i) {
    const int32_t v = ck_load_q(in, c[0], i);
    ck_store_q(out, c[0], i, v < c[1] ? c[1] : (v > c[2] ? c[2] : v));
  }
}

int32_t ck_qclamp(int64_t n, int32_t is_signed, const void *in, void *out, int32_t lo, int32_t hi) {
  int32_t c[3];
  if (in == NULL || out == NULL || n < 0 || lo > hi) return CK_EBADPARAM;
  c[0] = is_signed;
  c[1] = lo;
  c[2] = hi;
  ck_qbytes(ck_qclamp_serial, c, n, in, NULL, out);
  return CK_OK;
}

/* ---- max pool --------------------------------------------------------------------------------- */

/* Output columns [lo, hi) whose tap at offset `shift` (iw = x * stride + shift) lies in [0, limit). */
static void ck_qtap_range(int64_t shift, int64_t stride, int64_t limit, int64_t out_n, int64_t *lo, int64_t *hi) {
  *lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  *hi = limit - 1 - shift < 0 ? 0 : (limit - 1 - shift) / stride + 1;
  if (*hi > out_n) *hi = out_n;
  if (*lo > *hi) *lo = *hi;
}

/* orow[x] = max(orow[x], row[x * s + shift]) for x in [lo, hi) (taps inside the row): 16 columns at a
 * time with SSE2 for stride 1 and 2 (bytes compared as unsigned, int8 offset by 128: `flip`), never
 * reading outside the taps; the last 16 columns of a row longer than 16 are one more vector that overlaps the
 * ones before (max is idempotent), not a scalar tail: ResNet's 56-column rows took 8 scalar steps per tap. */
static void ck_qmax_row(uint8_t *restrict orow, const uint8_t *restrict row, int64_t shift, int64_t lo, int64_t hi,
                        int64_t s, uint8_t flip) {
  const uint8_t *first; /* the tap of column lo; column x reads first[(x - lo) * s] */
  int64_t x = 0, n = hi - lo;
  if (n <= 0) return;
  first = row + lo * s + shift;
  orow += lo;
#if defined(__SSE2__)
  if (s == 1 || s == 2) {
    const __m128i f = _mm_set1_epi8((char)flip), even = _mm_set1_epi16(0x00FF);
    for (; x + 16 < n; x += 16) {
      __m128i v;
      if (s == 1) {
        v = _mm_loadu_si128((const __m128i *)(const void *)(first + x));
      } else {
        const __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(first + 2 * x)), even);
        const __m128i b = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(first + 2 * x + 16)), even);
        v = _mm_packus_epi16(a, b);
      }
      v = _mm_max_epu8(_mm_xor_si128(v, f), _mm_xor_si128(_mm_loadu_si128((const __m128i *)(void *)(orow + x)), f));
      _mm_storeu_si128((__m128i *)(void *)(orow + x), _mm_xor_si128(v, f));
    }
    if (n > 16) {   /* columns n - 16 .. n - 1; at stride 2 their taps are the odd bytes of the 32 before the last tap's end */
      __m128i v;
      x = n - 16;
      if (s == 1) {
        v = _mm_loadu_si128((const __m128i *)(const void *)(first + x));
      } else {
        const __m128i a = _mm_srli_epi16(_mm_loadu_si128((const __m128i *)(const void *)(first + 2 * x - 1)), 8);
        const __m128i b = _mm_srli_epi16(_mm_loadu_si128((const __m128i *)(const void *)(first + 2 * x + 15)), 8);
        v = _mm_packus_epi16(a, b);
      }
      v = _mm_max_epu8(_mm_xor_si128(v, f), _mm_xor_si128(_mm_loadu_si128((const __m128i *)(void *)(orow + x)), f));
      _mm_storeu_si128((__m128i *)(void *)(orow + x), _mm_xor_si128(v, f));
      return;
    }
  }
#endif
  for (; x < n; ++x) {
    const uint8_t a = (uint8_t)(first[x * s] ^ flip), b = (uint8_t)(orow[x] ^ flip);
    orow[x] = (uint8_t)((a > b ? a : b) ^ flip);
  }
}

/* Rows up to CK_QPOOL_ROW wide are folded down the window first (each window row's bytes into one row, unit
 * stride, whole vectors), then along it (pool_w strided passes over that row): pool_h + pool_w passes where tap by
 * tap took pool_h * pool_w strided ones, and each tap's column range is computed once per call, not per row and
 * tap (two divisions). Max of integers in any order is the same byte. ResNet-50's 3x3/2 pool over 64 x 112 x 112
 * (SSE2, one thread, Zen 3, p10 of 200 calls): 0.48-0.53 ms tap by tap, 0.23 folded (onnxruntime's took 0.10 in
 * the model). The row lives on the stack (256 bytes). */
#define CK_QPOOL_ROW 256
#define CK_QPOOL_RANGES 16

/* Tap kw of a pool's row into orow: columns [lo, hi) from `range` (computed once) or computed here */
static void ck_qmax_tap(const ck_pool2d_params *p, uint8_t *orow, const uint8_t *row, int64_t kw, int64_t ow_n,
                        const int64_t *range, uint8_t flip) {
  const int64_t shift = kw * p->dilation_w - p->pad_left;
  int64_t lo, hi;
  if (range != NULL) {
    lo = range[0];
    hi = range[1];
  } else {
    ck_qtap_range(shift, p->stride_w, p->width, ow_n, &lo, &hi);
  }
  ck_qmax_row(orow, row, shift, lo, hi, p->stride_w, flip);
}

/* Planes [first, last) of uint8 (flip 0) or int8 (flip 0x80, the lowest int8 as a byte) */
static void ck_qmax_pool_bytes(const ck_pool2d_params *p, int64_t oh_n, int64_t ow_n, const uint8_t *data,
                               uint8_t *out, int64_t first, int64_t last, uint8_t flip) {
  const int ranges = p->pool_w <= CK_QPOOL_RANGES;
  const int fold = p->pool_h > 1 && p->width <= CK_QPOOL_ROW;
  int64_t range[CK_QPOOL_RANGES][2], plane, oh, kh, kw;
  uint8_t column_max[CK_QPOOL_ROW];
  for (kw = 0; ranges && kw < p->pool_w; ++kw)
    ck_qtap_range(kw * p->dilation_w - p->pad_left, p->stride_w, p->width, ow_n, &range[kw][0], &range[kw][1]);
  for (plane = first; plane < last; ++plane) {
    const uint8_t *in = data + plane * p->height * p->width;
    for (oh = 0; oh < oh_n; ++oh) {
      uint8_t *restrict orow = out + (plane * oh_n + oh) * ow_n;
      const int64_t h0 = oh * p->stride_h - p->pad_top;
      int rows = 0;
      memset(orow, flip, (size_t)ow_n);
      for (kh = 0; kh < p->pool_h; ++kh) {
        const int64_t ih = h0 + kh * p->dilation_h;
        if (ih < 0 || ih >= p->height) continue;
        if (fold) {   /* the first row as it is (the max of it and the lowest byte), the others folded in */
          if (rows++ == 0)
            memcpy(column_max, in + ih * p->width, (size_t)p->width);
          else
            ck_qmax_row(column_max, in + ih * p->width, 0, 0, p->width, 1, flip);
          continue;
        }
        for (kw = 0; kw < p->pool_w; ++kw)
          ck_qmax_tap(p, orow, in + ih * p->width, kw, ow_n, ranges ? range[kw] : NULL, flip);
      }
      for (kw = 0; fold && rows > 0 && kw < p->pool_w; ++kw)
        ck_qmax_tap(p, orow, column_max, kw, ow_n, ranges ? range[kw] : NULL, flip);
    }
  }
}

typedef struct {
  const ck_pool2d_params *p;
  int64_t oh, ow;
  int32_t is_signed;
  const void *data;
  void *out;
} ck_qpool_job;

#if defined(CK_QADD_DISPATCH)
#define CK_QPOOL_TAPS 16 /* pool widths of the AVX-512 path (its per-call column ranges on the stack) */

/* The taps at `shift` of the 64 output columns from x0 (stride 1 or 2), flipped into unsigned order; columns
 * outside [lo, hi) are 0, the lowest flipped byte. Masked loads: only the taps' bytes (and, at stride 2, the bytes
 * between them) are read, so a row's edges need no care. */
CK_Q_AVX512 static __m512i ck_qpool_taps(const uint8_t *row, int64_t x0, int64_t shift, int64_t s, int64_t lo,
                                          int64_t hi, __m512i f) {
  const int64_t a = lo > x0 ? lo - x0 : 0, b = hi - x0 < 64 ? hi - x0 : 64;
  /* column x0's tap, as an address: it lies before the row when the pool pads on the left (never read there) */
  const uintptr_t base = (uintptr_t)row + (uintptr_t)(x0 * s + shift);
  __m512i v;
  if (b <= a) return _mm512_setzero_si512();
  if (s == 1)
    v = _mm512_maskz_loadu_epi8(ck_qbits(a, b), (const void *)base);
  else
    v = ck_qeven_bytes(base, a, b);
  return _mm512_maskz_mov_epi8(ck_qbits(a, b), _mm512_xor_si512(v, f));
}

/* Planes [first, last) at stride 1 or 2: per output row, 64 columns at a time, every tap's columns in one
 * register (ResNet's 3 x 3 / 2 pool over 112 x 112: 9 vectors per row, where the SSE2 rows took 36) */
CK_Q_AVX512 static void ck_qmax_pool_avx512(const ck_qpool_job *j, int64_t first, int64_t last) {
  const ck_pool2d_params *p = j->p;
  const __m512i f = _mm512_set1_epi8((char)(j->is_signed ? 0x80 : 0));
  int64_t plane, oh, x0, kh, kw, range[CK_QPOOL_TAPS][2];   /* each kw's columns [lo, hi): divisions, once */
  for (kw = 0; kw < p->pool_w && kw < CK_QPOOL_TAPS; ++kw)
    ck_qtap_range(kw * p->dilation_w - p->pad_left, p->stride_w, p->width, j->ow, &range[kw][0], &range[kw][1]);
  for (plane = first; plane < last; ++plane) {
    const uint8_t *in = (const uint8_t *)j->data + plane * p->height * p->width;
    for (oh = 0; oh < j->oh; ++oh) {
      uint8_t *orow = (uint8_t *)j->out + (plane * j->oh + oh) * j->ow;
      for (x0 = 0; x0 < j->ow; x0 += 64) {
        __m512i acc = _mm512_setzero_si512();
        for (kh = 0; kh < p->pool_h; ++kh) {
          const int64_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
          if (ih < 0 || ih >= p->height) continue;
          for (kw = 0; kw < p->pool_w; ++kw) {
            const int64_t shift = kw * p->dilation_w - p->pad_left;
            acc = _mm512_max_epu8(acc, ck_qpool_taps(in + ih * p->width, x0, shift, p->stride_w, range[kw][0],
                                                     range[kw][1], f));
          }
        }
        _mm512_mask_storeu_epi8((void *)(orow + x0), ck_qbits(0, j->ow - x0 < 64 ? j->ow - x0 : 64),
                                _mm512_xor_si512(acc, f));
      }
    }
  }
}
#endif

static void ck_qmax_pool_planes(void *ctx, int64_t first, int64_t last) {
  const ck_qpool_job *j = (const ck_qpool_job *)ctx;
#if defined(CK_QADD_DISPATCH)
  if ((j->p->stride_w == 1 || j->p->stride_w == 2) && j->p->pool_w <= CK_QPOOL_TAPS && ck_q_use_avx512()) {
    ck_qmax_pool_avx512(j, first, last);
    return;
  }
#endif
  ck_qmax_pool_bytes(j->p, j->oh, j->ow, (const uint8_t *)j->data, (uint8_t *)j->out, first, last,
                     (uint8_t)(j->is_signed ? 0x80 : 0));
}

/* planes in parallel, about CK_QGRAIN input bytes per range */
int32_t ck_qmax_pool2d(const ck_pool2d_params *p, int32_t is_signed, const void *data, void *out) {
  ck_qpool_job j;
  int64_t plane;
  if (ck_pool2d_output_hw(p, &j.oh, &j.ow) != CK_OK || data == NULL || out == NULL) return CK_EBADPARAM;
  j.p = p;
  j.is_signed = is_signed;
  j.data = data;
  j.out = out;
  plane = p->height * p->width;
  ck_parallel_range(p->batch * p->channels, plane >= CK_QGRAIN ? 1 : CK_QGRAIN / (plane < 1 ? 1 : plane),
                    ck_qmax_pool_planes, &j);
  return CK_OK;
}

/* ---- dequantize + add (+ relu) + quantize, fused ------------------------------------------------- */

static void ck_qdq_add_serial(const void *params, int64_t n, const uint8_t *lhs, const uint8_t *rhs, uint8_t *out) {
  const ck_qdq_add_params *p = (const ck_qdq_add_params *)params;
  const float lo = p->out_signed ? -128.0f : 0.0f, hi = p->out_signed ? 127.0f : 255.0f;
  int64_t i;
  for (i = 0; i < n; ++i) {
    /* one statement per rounding, as the unfused kernels store each float32 result (no contraction) */
    const float a = (float)(ck_load_q(lhs, p->lhs_signed, i) - p->lhs_zero_point) * p->lhs_scale;
    const float b = (float)(ck_load_q(rhs, p->rhs_signed, i) - p->rhs_zero_point) * p->rhs_scale;
    float x = a + b;
    float q, v;
    int32_t r;
    if (p->relu && !(x > 0.0f)) x = 0.0f;
    q = x / p->out_scale;
    v = nearbyintf(q) + (float)p->out_zero_point;
    r = v != v ? 0 : (int32_t)ck_clampf(v, lo, hi); /* NaN -> 0 */
    ck_store_q(out, p->out_signed, i, r);
  }
}

int32_t ck_qdq_add(const ck_qdq_add_params *p, int64_t n, const void *lhs, const void *rhs, void *out) {
  if (p == NULL || lhs == NULL || rhs == NULL || out == NULL || n < 0 || !(p->out_scale != 0.0f)) return CK_EBADPARAM;
  ck_qbytes(ck_qdq_add_serial, p, n, lhs, rhs, out);
  return CK_OK;
}
