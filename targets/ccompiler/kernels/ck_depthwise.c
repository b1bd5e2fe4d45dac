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
#include <string.h>

#include "ck_depthwise.h"

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
#define CK_DEFINE_DW_TAPS(NAME, LANES)                                                                       \
  static void NAME(int64_t n, int32_t taps, const int64_t *restrict off, const float *restrict w,      \
                   const float *restrict src, float bias, float *restrict out) {                      \
    typedef float vec __attribute__((vector_size(LANES * sizeof(float))));                      \
    vec b = {0}, wk = {0}, s0, s1, acc0, acc1;                                                        \
    int64_t t = 0;                                                                                    \
    int32_t k;                                                                                        \
    CK_DW_SPLAT(b, bias);                                                                             \
    for (; t + 2 * LANES <= n; t += 2 * LANES) {                                          \
      acc0 = acc1 = b;                                                                                \
      for (k = 0; k < taps; ++k) {                                                                    \
        CK_DW_SPLAT(wk, w[k]);                                                                        \
        memcpy(&s0, src + t + off[k], sizeof s0);                                                     \
        memcpy(&s1, src + t + off[k] + LANES, sizeof s1);                                       \
        acc0 = acc0 + wk * s0;                                                                        \
        acc1 = acc1 + wk * s1;                                                                        \
      }                                                                                               \
      memcpy(out + t, &acc0, sizeof acc0);                                                            \
      memcpy(out + t + LANES, &acc1, sizeof acc1);                                              \
    }                                                                                                 \
    while (t < n && n >= LANES) {                                                               \
      if (t + LANES > n) t = n - LANES;                                                   \
      acc0 = b;                                                                                       \
      for (k = 0; k < taps; ++k) {                                                                    \
        CK_DW_SPLAT(wk, w[k]);                                                                        \
        memcpy(&s0, src + t + off[k], sizeof s0);                                                     \
        acc0 = acc0 + wk * s0;                                                                        \
      }                                                                                               \
      memcpy(out + t, &acc0, sizeof acc0);                                                            \
      t += LANES;                                                                               \
    }                                                                                                 \
    CK_DW_TAPS_SCALARS                                                                                \
  }
#else
#define CK_DEFINE_DW_TAPS(NAME, LANES)                                                                       \
  static void NAME(int64_t n, int32_t taps, const int64_t *restrict off, const float *restrict w,      \
                   const float *restrict src, float bias, float *restrict out) {                      \
    int64_t t = 0;                                                                                    \
    int32_t k;                                                                                        \
    int l;                                                                                            \
    while (t < n && n >= LANES) {                                                               \
      float acc[LANES];                                                                         \
      if (t + LANES > n) t = n - LANES;                                                   \
      for (l = 0; l < LANES; ++l) acc[l] = bias;                                                \
      for (k = 0; k < taps; ++k) {                                                                    \
        const float wk = w[k];                                                                        \
        const float *restrict s = src + t + off[k];                                                   \
        for (l = 0; l < LANES; ++l) acc[l] += wk * s[l];                                        \
      }                                                                                               \
      for (l = 0; l < LANES; ++l) out[t + l] = acc[l];                                          \
      t += LANES;                                                                               \
    }                                                                                                 \
    CK_DW_TAPS_SCALARS                                                                                \
  }
#endif

typedef void (*ck_dw_taps_fn)(int64_t n, int32_t taps, const int64_t *off, const float *w, const float *src,
                              float bias, float *out);

CK_CONTRACT CK_DEFINE_DW_TAPS(ck_dw_taps_baseline, CK_DW_BLOCK)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_DW_TAPS(ck_dw_taps_avx2, CK_DW_BLOCK_AVX2)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_DW_TAPS(ck_dw_taps_avx512, CK_DW_BLOCK)

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

/* ---- 3x3, stride 1 or 2, padding 1: a plane as one flat pass, no per-row copies -----------------
 *
 * Stride 1: output t = y * W + x of an H x W plane reads the input at t + (i - 1) * W + (j - 1) for tap
 * (i, j), so the whole plane is one flat pass of CK_DW_BLOCK outputs at a time. Stride 2 (H, W even): the
 * plane is first split into four (even or odd rows x even or odd columns, each H/2 x W/2), and output
 * t = y * W/2 + x reads tap (i, j) in one of them at t, t - 1, t - W/2 or t - W/2 - 1 alike. Either way
 * the outputs are written straight to the output with bias and activation in registers. A left tap
 * (j = 0) of column 0, and at stride 1 a right tap (j = 2) of column W - 1, read a neighbouring row's
 * pixel there: those lanes are masked to zero (a select, not a product, so an inf or NaN next door stays
 * out), through tables of the column pattern. The row above the first (and at stride 1 below the last)
 * is a zero row around a copy of the plane in the thread's slot (one memcpy per plane at stride 1, in
 * place of a copy and a store per row: on 7x7 and 14x14 planes those per-row calls were most of the time).
 * Every output is bias + its nine products in tap order, as in the row kernels. */
#if defined(__GNUC__)
#define CK_DW3_MASKED(V, M) ((vec)((ivec)(V) & (M)))
#define CK_DEFINE_DW3X3_FLAT(NAME, LANES)                                                                    \
  static void NAME(int64_t n, int64_t period, const float *const *tap, const int32_t *restrict left,   \
                   const int32_t *restrict right, const float *restrict w, float bias, int32_t activation, \
                   float *restrict out) {                                                            \
    typedef float vec __attribute__((vector_size(LANES * sizeof(float))));                      \
    typedef int32_t ivec __attribute__((vector_size(LANES * sizeof(int32_t))));                 \
    vec k[9] = {{0}}, b = {0}, lo = {0}, hi = {0}, s, acc;                                            \
    ivec ml, mr;                                                                                      \
    int64_t t = 0, c = 0;                                                                             \
    int i;                                                                                            \
    for (i = 0; i < 9; ++i) CK_DW_SPLAT(k[i], w[i]);                                                  \
    CK_DW_SPLAT(b, bias);                                                                             \
    CK_DW_SPLAT(hi, 6.0f);                                                                            \
    while (t < n) {                                                                                   \
      if (t + LANES > n) { /* the last block ends at n (outputs written twice, same values) */  \
        t = n - LANES;                                                                          \
        c = t % period;                                                                               \
      }                                                                                               \
      memcpy(&ml, left + c, sizeof ml);                                                               \
      memcpy(&mr, right + c, sizeof mr);                                                              \
      acc = b;                                                                                        \
      for (i = 0; i < 9; i += 3) {                                                                    \
        memcpy(&s, tap[i] + t, sizeof s);                                                             \
        acc = acc + k[i] * CK_DW3_MASKED(s, ml);                                                      \
        memcpy(&s, tap[i + 1] + t, sizeof s);                                                         \
        acc = acc + k[i + 1] * s;                                                                     \
        memcpy(&s, tap[i + 2] + t, sizeof s);                                                         \
        acc = acc + k[i + 2] * CK_DW3_MASKED(s, mr);                                                  \
      }                                                                                               \
      if (activation == CK_ACT_RELU) { /* compare-and-select as ck_activate: NaN becomes 0 here */      \
        acc = CK_DW3_MASKED(acc, acc > lo);                                                           \
      } else if (activation == CK_ACT_RELU6) { /* and stays NaN here */                               \
        acc = CK_DW3_MASKED(acc, ~(acc < lo));                                                        \
        acc = (vec)(((ivec)acc & ~(acc > hi)) | ((ivec)hi & (acc > hi)));                             \
      }                                                                                               \
      memcpy(out + t, &acc, sizeof acc);                                                              \
      t += LANES;                                                                               \
      for (c += LANES; c >= period;) c -= period;                                               \
    }                                                                                                 \
  }

typedef void (*ck_dw3x3_flat_fn)(int64_t n, int64_t period, const float *const *tap, const int32_t *left,
                                 const int32_t *right, const float *w, float bias, int32_t activation, float *out);

CK_CONTRACT CK_DEFINE_DW3X3_FLAT(ck_dw3x3_flat_baseline, CK_DW_BLOCK)
#if defined(__x86_64__) && !defined(CK_NO_DISPATCH)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_DW3X3_FLAT(ck_dw3x3_flat_avx2, CK_DW_BLOCK_AVX2)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_DW3X3_FLAT(ck_dw3x3_flat_avx512, CK_DW_BLOCK)

static ck_dw3x3_flat_fn ck_dw3x3_flat_current(void) {
  static const ck_dw3x3_flat_fn by_isa[] = {ck_dw3x3_flat_baseline, ck_dw3x3_flat_avx2, ck_dw3x3_flat_avx512};
  return by_isa[ck_micro_kernel_isa()];
}
#else
static ck_dw3x3_flat_fn ck_dw3x3_flat_current(void) { return ck_dw3x3_flat_baseline; }
#endif

/* Floats of the slot this uses: stride 1 [guard][zero row][plane][zero row][guard]; stride 2
 * [guard][zero row][odd rows, even columns][guard][zero row][odd rows, odd columns][guard]
 * [even rows, odd columns][even rows, even columns]; then the two column tables. */
static int64_t ck_dw3x3_flat_floats(const ck_conv2d_params *p, int64_t *period) {
  *period = p->stride_w == 1 ? p->width : p->width / 2;
  return (p->stride_w == 1 ? (p->height + 2) * p->width + 2 : 2 * p->height * p->width / 2 + p->width + 3) +
         2 * (*period + CK_DW_BLOCK);
}

int ck_dw3x3_flat_takes(const ck_conv2d_params *p) {
  const int64_t bordered = (p->height + 2) * (p->width + 2), s = p->stride_w;
  int64_t period;
  return p->channels == p->groups && p->kernel_h == 3 && p->kernel_w == 3 && p->stride_h == s &&
         (s == 1 || (s == 2 && p->height % 2 == 0 && p->width % 2 == 0)) && p->dilation_h == 1 &&
         p->dilation_w == 1 && p->pad_top == 1 && p->pad_left == 1 && p->pad_bottom == 1 && p->pad_right == 1 &&
         p->width < CK_DW_FLAT_BELOW * s && p->height * p->width >= CK_DW_BLOCK * s * s &&
         ck_dw3x3_flat_floats(p, &period) <= 2 * bordered; /* inside the slot of the bordered-plane kernels */
}

/* The plane's four (row parity x column parity) quarters, each H/2 x W/2 (also ck_dw_flat.c's). */
void ck_dw3x3_quarters(int64_t h, int64_t w_n, const float *restrict in, float *restrict ee,
                              float *restrict eo, float *restrict oe, float *restrict oo) {
  const int64_t hw = w_n / 2;
  int64_t y, x;
  for (y = 0; y < h / 2; ++y) {
    const float *restrict r0 = in + 2 * y * w_n, *restrict r1 = r0 + w_n;
    for (x = 0; x < hw; ++x) {
      ee[y * hw + x] = r0[2 * x];
      eo[y * hw + x] = r1[2 * x];
      oe[y * hw + x] = r0[2 * x + 1];
      oo[y * hw + x] = r1[2 * x + 1];
    }
  }
}

/* Where each tap reads, per output t (tap[k] + t), and the zero rows and guards, in the slot. */
static void ck_dw3x3_layout(const ck_conv2d_params *p, float *slot, float **planes, const float **tap) {
  const int64_t w_n = p->width, plane = p->height * w_n;
  int64_t i;
  if (p->stride_w == 1) {
    float *src = slot + 1 + w_n;
    memset(slot, 0, sizeof(float) * (size_t)(w_n + 1));
    memset(src + plane, 0, sizeof(float) * (size_t)(w_n + 1));
    for (i = 0; i < 9; ++i) tap[i] = src + (i / 3 - 1) * w_n + (i % 3 - 1);
    planes[0] = src;
  } else {
    const int64_t hw = w_n / 2, q = plane / 4;
    float *eo = slot + 1 + hw, *oo = eo + q + 1 + hw, *oe = oo + q + 1, *ee = oe + q;
    memset(slot, 0, sizeof(float) * (size_t)(hw + 1));
    memset(eo + q, 0, sizeof(float) * (size_t)(hw + 1));
    oe[-1] = 0.0f;
    /* rows 2y - 1 (odd row y - 1), 2y (even row y), 2y + 1 (odd row y); columns 2x - 1, 2x, 2x + 1 */
    tap[0] = oo - hw - 1, tap[1] = eo - hw, tap[2] = oo - hw;
    tap[3] = oe - 1, tap[4] = ee, tap[5] = oe;
    tap[6] = oo - 1, tap[7] = eo, tap[8] = oo;
    planes[0] = ee, planes[1] = eo, planes[2] = oe, planes[3] = oo;
  }
}

void ck_dw3x3_flat_groups(const ck_conv2d_params *p, int64_t first, int64_t end, const float *data,
                          const float *weight, const float *bias, int32_t activation, float *out, float *slot) {
  const int64_t plane = p->height * p->width, og = p->out_channels / p->groups, s = p->stride_w;
  const ck_dw3x3_flat_fn run = ck_dw3x3_flat_current();
  const float *tap[9];
  float *planes[4] = {NULL, NULL, NULL, NULL};
  int64_t period, floats = ck_dw3x3_flat_floats(p, &period), i, o;
  int32_t *left = (int32_t *)(void *)(slot + floats - 2 * (period + CK_DW_BLOCK)), *right = left + period + CK_DW_BLOCK;
  ck_dw3x3_layout(p, slot, planes, tap);
  for (i = 0, o = 0; i < period + CK_DW_BLOCK; ++i, o = o + 1 < period ? o + 1 : 0) { /* o = i % period */
    left[i] = o != 0 ? -1 : 0;
    right[i] = s == 2 || o != period - 1 ? -1 : 0; /* (stride 2: column 2x + 1 < W always) */
  }
  for (i = first; i < end; ++i) {
    const int64_t n = i / p->groups, g = i % p->groups;
    const float *in = data + (n * p->channels + g) * plane;
    if (s == 1)
      memcpy(planes[0], in, sizeof(float) * (size_t)plane);
    else
      ck_dw3x3_quarters(p->height, p->width, in, planes[0], planes[1], planes[2], planes[3]);
    for (o = 0; o < og; ++o) {
      const int64_t oc = g * og + o;
      run(plane / (s * s), period, tap, left, right, weight + oc * 9, bias != NULL ? bias[oc] : 0.0f,
          activation, out + (n * p->out_channels + oc) * (plane / (s * s)));
    }
  }
}
#else
int ck_dw3x3_flat_takes(const ck_conv2d_params *p) {
  (void)p;
  return 0;
}

void ck_dw3x3_flat_groups(const ck_conv2d_params *p, int64_t first, int64_t end, const float *data,
                          const float *weight, const float *bias, int32_t activation, float *out, float *slot) {
  (void)p, (void)first, (void)end, (void)data, (void)weight, (void)bias, (void)activation, (void)out, (void)slot;
}
#endif
