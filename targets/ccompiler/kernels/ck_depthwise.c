/* ck_depthwise.c - depthwise convolutions of any window (5x5, 7x7, 3x5, ...) up to CK_DW_MAX_TAPS taps.
 *
 * Over the zero-bordered copy of an input plane every tap of every output lies inside, so an output
 * row (or, for narrow rows, the whole plane read as one flat row in padded coordinates: the columns
 * between one output row's end and the next one's start are computed and dropped) is out[t] = bias + sum over taps k of w[k] * src[t + off[k]].
 * That loop runs 16 outputs at a time with their sums in registers across all the taps: no store per
 * tap (the direct kernel's cost: ck_conv2d.c, for what this file does not take), unit-stride loads.
 * On x86-64 it is compiled for AVX2+FMA and AVX-512 too and follows the gemm core's choice of
 * instruction set (ck_gemm_kernel_name(); ck_gemm_use_kernel() forces it for tests).
 */
#include <float.h>
#include <string.h>

#include "ck_depthwise.h"

#define CK_DW_BLOCK 16
/* Stride 1 over rows narrower than this (stride 2: than a block, as it computes 3 columns per output
 * there): one flat pass over the padded plane fills vectors better. */
#define CK_DW_FLAT_BELOW 32

/* out[t] for t < n, CK_DW_BLOCK at a time; a last partial block is the block ending at n (outputs are
 * written, not accumulated, so computing some twice is harmless), scalars only when n < CK_DW_BLOCK.
 * Every output is bias + its taps' products in tap order, whichever of these loops computes it. */
/* The outputs from t on, one at a time (both forms below end with these; only a row of fewer than
 * CK_DW_BLOCK outputs reaches them). */
#define CK_DW_TAPS_SCALARS                                                                            \
  for (; t < n; ++t) {                                                                                \
    float acc = bias;                                                                                 \
    for (k = 0; k < taps; ++k) acc += w[k] * src[t + off[k]];                                         \
    out[t] = acc;                                                                                     \
  }

#if defined(__GNUC__)
/* Generic vectors, two blocks per pass over the taps where two fit: each tap's weight and offset are
 * loaded once for 32 outputs. Written as a float[16] array (the portable form below), gcc split the
 * sums into an 8-, a 4-, a 2-wide vector and two scalars: 5x5 taps on 14x14 planes ran at about a
 * third of the vector width (perf: 18.5% of efficientnet_lite at one thread). */
/* A vector of copies of one float: scalar - vector splats (x - 0 == x, even -0); where float math runs in
 * double (FLT_EVAL_METHOD != 0) that would narrow, so fill the lanes (gcc makes 16 masked broadcasts of that
 * on AVX-512, which is why it is not the only form). */
#if FLT_EVAL_METHOD == 0
#define CK_DW_SPLAT(V, VALUE) ((V) = (VALUE) - (vec){0})
#else
#define CK_DW_SPLAT(V, VALUE)                                                                         \
  do {                                                                                                \
    int lane_;                                                                                        \
    for (lane_ = 0; lane_ < CK_DW_BLOCK; ++lane_) (V)[lane_] = (VALUE);                              \
  } while (0)
#endif
#define CK_DEFINE_DW_TAPS(NAME)                                                                       \
  static void NAME(int64_t n, int32_t taps, const int64_t *restrict off, const float *restrict w,      \
                   const float *restrict src, float bias, float *restrict out) {                      \
    typedef float vec __attribute__((vector_size(CK_DW_BLOCK * sizeof(float))));                      \
    vec b = {0}, wk = {0}, s0, s1, acc0, acc1;                                                        \
    int64_t t = 0;                                                                                    \
    int32_t k;                                                                                        \
    CK_DW_SPLAT(b, bias);                                                                             \
    for (; t + 2 * CK_DW_BLOCK <= n; t += 2 * CK_DW_BLOCK) {                                          \
      acc0 = acc1 = b;                                                                                \
      for (k = 0; k < taps; ++k) {                                                                    \
        CK_DW_SPLAT(wk, w[k]);                                                                        \
        memcpy(&s0, src + t + off[k], sizeof s0);                                                     \
        memcpy(&s1, src + t + off[k] + CK_DW_BLOCK, sizeof s1);                                       \
        acc0 = acc0 + wk * s0;                                                                        \
        acc1 = acc1 + wk * s1;                                                                        \
      }                                                                                               \
      memcpy(out + t, &acc0, sizeof acc0);                                                            \
      memcpy(out + t + CK_DW_BLOCK, &acc1, sizeof acc1);                                              \
    }                                                                                                 \
    while (t < n && n >= CK_DW_BLOCK) {                                                               \
      if (t + CK_DW_BLOCK > n) t = n - CK_DW_BLOCK;                                                   \
      acc0 = b;                                                                                       \
      for (k = 0; k < taps; ++k) {                                                                    \
        CK_DW_SPLAT(wk, w[k]);                                                                        \
        memcpy(&s0, src + t + off[k], sizeof s0);                                                     \
        acc0 = acc0 + wk * s0;                                                                        \
      }                                                                                               \
      memcpy(out + t, &acc0, sizeof acc0);                                                            \
      t += CK_DW_BLOCK;                                                                               \
    }                                                                                                 \
    CK_DW_TAPS_SCALARS                                                                                \
  }
#else
#define CK_DEFINE_DW_TAPS(NAME)                                                                       \
  static void NAME(int64_t n, int32_t taps, const int64_t *restrict off, const float *restrict w,      \
                   const float *restrict src, float bias, float *restrict out) {                      \
    int64_t t = 0;                                                                                    \
    int32_t k;                                                                                        \
    int l;                                                                                            \
    while (t < n && n >= CK_DW_BLOCK) {                                                               \
      float acc[CK_DW_BLOCK];                                                                         \
      if (t + CK_DW_BLOCK > n) t = n - CK_DW_BLOCK;                                                   \
      for (l = 0; l < CK_DW_BLOCK; ++l) acc[l] = bias;                                                \
      for (k = 0; k < taps; ++k) {                                                                    \
        const float wk = w[k];                                                                        \
        const float *restrict s = src + t + off[k];                                                   \
        for (l = 0; l < CK_DW_BLOCK; ++l) acc[l] += wk * s[l];                                        \
      }                                                                                               \
      for (l = 0; l < CK_DW_BLOCK; ++l) out[t + l] = acc[l];                                          \
      t += CK_DW_BLOCK;                                                                               \
    }                                                                                                 \
    CK_DW_TAPS_SCALARS                                                                                \
  }
#endif

typedef void (*ck_dw_taps_fn)(int64_t n, int32_t taps, const int64_t *off, const float *w, const float *src,
                              float bias, float *out);

CK_CONTRACT CK_DEFINE_DW_TAPS(ck_dw_taps_baseline)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_DW_TAPS(ck_dw_taps_avx2)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_DW_TAPS(ck_dw_taps_avx512)

static ck_dw_taps_fn ck_dw_taps_current(void) {
  static const ck_dw_taps_fn by_isa[] = {ck_dw_taps_baseline, ck_dw_taps_avx2, ck_dw_taps_avx512};
  return by_isa[ck_micro_kernel_isa()];
}
#else
static ck_dw_taps_fn ck_dw_taps_current(void) { return ck_dw_taps_baseline; }
#endif

int ck_dw_any_takes(const ck_conv2d_params *p) {
  return p->channels == p->groups && p->dilation_h == 1 && p->dilation_w == 1 &&
         (p->stride_w == 1 || p->stride_w == 2) && p->kernel_h * p->kernel_w <= CK_DW_MAX_TAPS &&
         !(p->kernel_h == 3 && p->kernel_w == 3);
}

void ck_dw_plane(const ck_conv2d_params *p, int64_t oh_n, int64_t ow_n, const float *padded, int64_t odd,
                 const float *w, float bias, int32_t activation, float *out, float *flat) {
  const int64_t pw = p->width + p->pad_left + p->pad_right;
  const int32_t taps = (int32_t)(p->kernel_h * p->kernel_w);
  const ck_dw_taps_fn run = ck_dw_taps_current();
  int64_t off[CK_DW_MAX_TAPS];
  int64_t i, j, oh;
  for (i = 0; i < p->kernel_h; ++i) {   /* tap (i, j) of output column x reads padded column stride*x + j */
    for (j = 0; j < p->kernel_w; ++j) {
      off[i * p->kernel_w + j] = i * pw + (p->stride_w == 1 ? j : (j % 2) * odd + j / 2);
    }
  }
  if (p->stride_w == 1 ? ow_n < CK_DW_FLAT_BELOW : ow_n < CK_DW_BLOCK) {
    /* flat[t] for t = oh * pitch + x (x < pitch; those past ow_n are dropped). Every read is inside the
     * plane: output row oh reads padded rows oh * stride_h + i, i < kernel_h, and columns up to
     * stride_w * (ow_n - 1) + kernel_w - 1 < pw for x < ow_n; for the dropped x of a row before the last,
     * at most pw further, which is still before the end of padded row (oh_n - 1) * stride_h + kernel_h - 1. */
    const int64_t pitch = p->stride_h * pw;
    run((oh_n - 1) * pitch + ow_n, taps, off, w, padded, bias, flat);
    for (oh = 0; oh < oh_n; ++oh) {
      memcpy(out + oh * ow_n, flat + oh * pitch, (size_t)ow_n * sizeof(float));
      ck_activate(activation, ow_n, out + oh * ow_n);
    }
    return;
  }
  for (oh = 0; oh < oh_n; ++oh) {
    run(ow_n, taps, off, w, padded + oh * p->stride_h * pw, bias, out + oh * ow_n);
    ck_activate(activation, ow_n, out + oh * ow_n);
  }
}
