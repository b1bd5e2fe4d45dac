/* ck_dw_flat.c - depthwise windows of 5x5 or 7x7 with "same" padding, a plane as one flat pass read in place.
 *
 * The 3x3 flat pass of ck_depthwise.c for larger square windows (EfficientNet's 5x5 layers): stride 1 on rows
 * narrower than 32, or stride 2 on even planes with rows narrower than 64, split once into their four (row
 * parity x column parity) quarters. With r = (k - 1) / 2, output t = y * W + x (stride 1) reads tap (i, j) at
 * t + (i - r) * W + (j - r); at stride 2 input row 2y + a and column 2x + b (a = i - r, b = j - r) are in the
 * quarter of parities (a & 1, b & 1) at row y + floor(a / 2) and column x + floor(b / 2), so output t = y * W/2
 * + x reads it at t + floor(a / 2) * W/2 + floor(b / 2). A tap whose column offset d is not 0 reads a
 * neighbouring row's pixels in the lanes where x + d falls outside the row: those lanes are masked to zero (a
 * select: an inf next door stays out) through a table per offset of the column pattern; the rows above and
 * below are zero rows around each copy. 16 outputs per vector, every output bias + its products in tap order
 * (as ck_depthwise.c's other loops), stored straight into the output, the activation over the plane after.
 * The per-row copies and calls of the bordered-plane loop were most of the time on 7- and 14-wide rows
 * (EfficientNet-lite's 5x5 layers on 7x7 and 14x14 planes ran 2-5x onnxruntime's time at one thread). */
#include <string.h>

#include "ck_depthwise.h"

#define CK_DWF_MAX_K 7
#define CK_DWF_MAX_TAPS (CK_DWF_MAX_K * CK_DWF_MAX_K)

#if defined(__GNUC__)

#define CK_DEFINE_DW_FLAT(NAME, LANES)                                                                       \
  static void NAME(int64_t n, int64_t period, int32_t taps, const float *const *tap,                  \
                   const int32_t *const *mask, const float *restrict w, float bias, float *restrict out) { \
    typedef float vec __attribute__((vector_size(LANES * sizeof(float))));                     \
    typedef int32_t ivec __attribute__((vector_size(LANES * sizeof(int32_t))));                \
    vec b = {0}, wk = {0}, s, acc;                                                                    \
    ivec m;                                                                                           \
    int64_t t = 0, c = 0;                                                                             \
    int32_t k;                                                                                        \
    CK_DW_SPLAT(b, bias);                                                                            \
    for (; t + 2 * LANES <= n; t += 2 * LANES) { /* two blocks per pass over the taps */  \
      int64_t c1 = c + LANES;                                                                  \
      vec acc1 = b, s1;                                                                               \
      ivec m1;                                                                                        \
      while (c1 >= period) c1 -= period;                                                              \
      acc = b;                                                                                        \
      for (k = 0; k < taps; ++k) {                                                                    \
        memcpy(&s, tap[k] + t, sizeof s);                                                             \
        memcpy(&s1, tap[k] + t + LANES, sizeof s1);                                            \
        if (mask[k] != NULL) {                                                                        \
          memcpy(&m, mask[k] + c, sizeof m);                                                          \
          memcpy(&m1, mask[k] + c1, sizeof m1);                                                       \
          s = (vec)((ivec)s & m);                                                                     \
          s1 = (vec)((ivec)s1 & m1);                                                                  \
        }                                                                                             \
        CK_DW_SPLAT(wk, w[k]);                                                                       \
        acc = acc + wk * s;                                                                           \
        acc1 = acc1 + wk * s1;                                                                        \
      }                                                                                               \
      memcpy(out + t, &acc, sizeof acc);                                                              \
      memcpy(out + t + LANES, &acc1, sizeof acc1);                                             \
      for (c = c1 + LANES; c >= period;) c -= period;                                         \
    }                                                                                                 \
    while (t < n) {                                                                                   \
      if (t + LANES > n) { /* the last block ends at n (outputs written twice, same values) */ \
        t = n - LANES;                                                                         \
        c = t % period;                                                                               \
      }                                                                                               \
      acc = b;                                                                                        \
      for (k = 0; k < taps; ++k) {                                                                    \
        memcpy(&s, tap[k] + t, sizeof s);                                                             \
        if (mask[k] != NULL) {                                                                        \
          memcpy(&m, mask[k] + c, sizeof m);                                                          \
          s = (vec)((ivec)s & m);                                                                     \
        }                                                                                             \
        CK_DW_SPLAT(wk, w[k]);                                                                       \
        acc = acc + wk * s;                                                                           \
      }                                                                                               \
      memcpy(out + t, &acc, sizeof acc);                                                              \
      t += LANES;                                                                              \
      for (c += LANES; c >= period;) c -= period;                                              \
    }                                                                                                 \
  }

typedef void (*ck_dw_flat_fn)(int64_t n, int64_t period, int32_t taps, const float *const *tap,
                              const int32_t *const *mask, const float *w, float bias, float *out);

CK_CONTRACT CK_DEFINE_DW_FLAT(ck_dw_flat_baseline, CK_DW_BLOCK)
#if defined(__x86_64__) && !defined(CK_NO_DISPATCH)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_DW_FLAT(ck_dw_flat_avx2, CK_DW_BLOCK_AVX2)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_DW_FLAT(ck_dw_flat_avx512, CK_DW_BLOCK)

static ck_dw_flat_fn ck_dw_flat_current(void) {
  static const ck_dw_flat_fn by_isa[] = {ck_dw_flat_baseline, ck_dw_flat_avx2, ck_dw_flat_avx512};
  return by_isa[ck_micro_kernel_isa()];
}
#else
static ck_dw_flat_fn ck_dw_flat_current(void) { return ck_dw_flat_baseline; }
#endif

/* The geometry of one copy (the plane at stride 1, each quarter at stride 2): rows x cols, with `above` zero
 * rows before it and `below` after, and `guard` zero floats before and after those. */
typedef struct {
  int64_t rows, cols, above, below, guard, shift; /* shift: the largest column offset of a tap */
} ck_dwf_geometry;

static ck_dwf_geometry ck_dwf_geometry_of(const ck_conv2d_params *p) {
  const int64_t r = (p->kernel_h - 1) / 2, s = p->stride_w;
  ck_dwf_geometry g;
  g.rows = p->height / s;
  g.cols = p->width / s;
  g.above = s == 1 ? r : (r + 1) / 2; /* -floor(-r / 2) */
  g.below = s == 1 ? r : r / 2;
  g.guard = g.shift = g.above;
  return g;
}

static int64_t ck_dwf_copy_floats(const ck_dwf_geometry *g) {
  return 2 * g->guard + (g->above + g->rows + g->below) * g->cols;
}

/* Floats of the slot: the copies (1 or 4), then a column table per nonzero offset. */
static int64_t ck_dwf_floats(const ck_conv2d_params *p) {
  const ck_dwf_geometry g = ck_dwf_geometry_of(p);
  return p->stride_w * p->stride_w * ck_dwf_copy_floats(&g) + 2 * g.shift * (g.cols + CK_DW_BLOCK);
}

int ck_dw_flat_takes(const ck_conv2d_params *p) {
  const int64_t k = p->kernel_h, r = (k - 1) / 2, s = p->stride_w;
  const int64_t bordered = (p->height + 2 * r) * (p->width + 2 * r);
  return p->channels == p->groups && (k == 5 || k == 7) && p->kernel_w == k && p->stride_h == s &&
         (s == 1 || (s == 2 && p->height % 2 == 0 && p->width % 2 == 0)) && p->dilation_h == 1 &&
         p->dilation_w == 1 && p->pad_top == r && p->pad_left == r && p->pad_bottom == r && p->pad_right == r &&
         p->width < 16 * s * s && p->height * p->width >= CK_DW_BLOCK * s * s && p->height / s > r &&
         ck_dwf_floats(p) <= 2 * bordered; /* inside the slot of the bordered-plane loop */
}

/* Where each tap reads (tap[k] + t) and which column table masks it; the zero rows and guards set; the copies'
 * plane starts in planes[] (ee, eo, oe, oo at stride 2). */
static void ck_dwf_layout(const ck_conv2d_params *p, float *slot, float **planes, const float **tap,
                          const int32_t **mask) {
  const ck_dwf_geometry g = ck_dwf_geometry_of(p);
  const int64_t k = p->kernel_h, r = (k - 1) / 2, s = p->stride_w, copy = ck_dwf_copy_floats(&g);
  int32_t *table = (int32_t *)(void *)(slot + s * s * copy);
  int64_t q, i, j, d, x;
  for (q = 0; q < s * s; ++q) {
    float *base = slot + q * copy;
    planes[q] = base + g.guard + g.above * g.cols;
    memset(base, 0, sizeof(float) * (size_t)(g.guard + g.above * g.cols));
    memset(planes[q] + g.rows * g.cols, 0, sizeof(float) * (size_t)(g.below * g.cols + g.guard));
  }
  for (d = -g.shift; d <= g.shift; ++d) { /* the table of offset d: x + d inside [0, cols) */
    int32_t *t = d == 0 ? NULL : table + (d < 0 ? d + g.shift : d + g.shift - 1) * (g.cols + CK_DW_BLOCK);
    for (i = 0, x = 0; t != NULL && i < g.cols + CK_DW_BLOCK; ++i, x = x + 1 < g.cols ? x + 1 : 0)
      t[i] = x + d >= 0 && x + d < g.cols ? -1 : 0;
  }
  for (i = 0; i < k; ++i) {
    for (j = 0; j < k; ++j) {
      const int64_t a = i - r, b = j - r;
      /* floor(a / 2), floor(b / 2) at stride 2 (a, b >= -3); the quarter of parities (a & 1, b & 1) */
      const int64_t dy = s == 1 ? a : (a + 4) / 2 - 2, dx = s == 1 ? b : (b + 4) / 2 - 2;
      const int64_t quarter = s == 1 ? 0 : ((a + 4) % 2) + 2 * ((b + 4) % 2);
      tap[i * k + j] = planes[quarter] + dy * g.cols + dx;
      mask[i * k + j] = dx == 0 ? NULL : table + (dx < 0 ? dx + g.shift : dx + g.shift - 1) * (g.cols + CK_DW_BLOCK);
    }
  }
}

void ck_dw_flat_groups(const ck_conv2d_params *p, int64_t first, int64_t end, const float *data,
                       const float *weight, const float *bias, int32_t activation, float *out, float *slot) {
  const int64_t plane = p->height * p->width, s = p->stride_w, taps = p->kernel_h * p->kernel_w;
  const int64_t og = p->out_channels / p->groups, outputs = plane / (s * s);
  const ck_dw_flat_fn run = ck_dw_flat_current();
  const float *tap[CK_DWF_MAX_TAPS];
  const int32_t *mask[CK_DWF_MAX_TAPS];
  float *planes[4] = {NULL, NULL, NULL, NULL};
  int64_t i, o;
  ck_dwf_layout(p, slot, planes, tap, mask);
  for (i = first; i < end; ++i) {
    const int64_t n = i / p->groups, g = i % p->groups;
    const float *in = data + (n * p->channels + g) * plane;
    if (s == 1)
      memcpy(planes[0], in, sizeof(float) * (size_t)plane);
    else /* planes: ee (0), eo (1), oe (2), oo (3): quarter index = row parity + 2 x column parity */
      ck_dw3x3_quarters(p->height, p->width, in, planes[0], planes[1], planes[2], planes[3]);
    for (o = 0; o < og; ++o) {
      const int64_t oc = g * og + o;
      float *dst = out + (n * p->out_channels + oc) * outputs;
      run(outputs, p->width / s, (int32_t)taps, tap, mask, weight + oc * taps, bias != NULL ? bias[oc] : 0.0f, dst);
      ck_activate(activation, outputs, dst);
    }
  }
}
#else
int ck_dw_flat_takes(const ck_conv2d_params *p) {
  (void)p;
  return 0;
}

void ck_dw_flat_groups(const ck_conv2d_params *p, int64_t first, int64_t end, const float *data,
                       const float *weight, const float *bias, int32_t activation, float *out, float *slot) {
  (void)p, (void)first, (void)end, (void)data, (void)weight, (void)bias, (void)activation, (void)out, (void)slot;
}
#endif
