/* ck_pool.c - max/avg pooling (NCHW, padding, dilation, ceil_mode) and global average pooling.
 *
 * Every output row is built tap by tap: for a window tap (kh, kw) the output columns whose input
 * column lies inside the image form one range, computed up front, so the inner loop is a
 * branch-free max/sum along the row. Windows always hold at least one input element (padding
 * is smaller than the window, and ceil mode drops a window that would start in the padding).
 */
#include <math.h>

#include "ck_internal.h"

/* Output size along one axis; -1 when the geometry is invalid. */
static int64_t ck_pool_out(int64_t size, int64_t before, int64_t after, int64_t k, int64_t stride,
                           int64_t dilation, int32_t ceil_mode) {
  const int64_t span = size + before + after - dilation * (k - 1) - 1;
  int64_t out;
  if (!ceil_mode) return span < 0 ? -1 : span / stride + 1;
  /* ceil(span / stride) + 1; a window longer than the input still yields one output when
   * span > -stride (C's division truncates toward zero, which is ceil for negative spans). */
  out = span < 0 ? -((-span) / stride) + 1 : (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= size + before) --out;
  return out;
}

int32_t ck_pool2d_output_hw(const ck_pool2d_params *p, int64_t *out_h, int64_t *out_w) {
  if (p == NULL || out_h == NULL || out_w == NULL) return CK_EBADPARAM;
  if (p->batch < 0 || p->channels < 0 || p->height < 1 || p->width < 1 || p->pool_h < 1 || p->pool_w < 1 ||
      p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 || p->dilation_w < 1 || p->pad_top < 0 ||
      p->pad_left < 0 || p->pad_bottom < 0 || p->pad_right < 0)
    return CK_EBADPARAM;
  /* padding at least the dilated window would allow windows with no input element */
  if (p->pad_top > p->dilation_h * (p->pool_h - 1) || p->pad_bottom > p->dilation_h * (p->pool_h - 1) ||
      p->pad_left > p->dilation_w * (p->pool_w - 1) || p->pad_right > p->dilation_w * (p->pool_w - 1))
    return CK_EBADPARAM;
  *out_h = ck_pool_out(p->height, p->pad_top, p->pad_bottom, p->pool_h, p->stride_h, p->dilation_h, p->ceil_mode);
  *out_w = ck_pool_out(p->width, p->pad_left, p->pad_right, p->pool_w, p->stride_w, p->dilation_w, p->ceil_mode);
  return *out_h < 1 || *out_w < 1 ? CK_EBADPARAM : CK_OK;
}

/* Output columns [lo, hi) whose tap at offset `shift` (iw = x * stride + shift) lies in [0, limit). */
static void ck_tap_range(int64_t shift, int64_t stride, int64_t limit, int64_t out_n, int64_t *lo, int64_t *hi) {
  *lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  *hi = limit - 1 - shift < 0 ? 0 : (limit - 1 - shift) / stride + 1;
  if (*hi > out_n) *hi = out_n;
  if (*lo > *hi) *lo = *hi;
}

/* Number of taps of a window starting at `start` that fall inside [0, limit). */
static int64_t ck_taps_inside(int64_t start, int64_t k, int64_t dilation, int64_t lo_bound, int64_t limit) {
  int64_t first = 0, last;
  if (start < lo_bound) first = (lo_bound - start + dilation - 1) / dilation;
  last = limit - 1 - start < 0 ? -1 : (limit - 1 - start) / dilation;
  if (last > k - 1) last = k - 1;
  return last >= first ? last - first + 1 : 0;
}

/* Elements counted for output column x of a row whose window has `rows` rows inside. */
static float ck_avg_divisor(const ck_pool2d_params *p, int64_t rows, int64_t x, int64_t lo_w, int64_t hi_w) {
  const int64_t count = rows * ck_taps_inside(x * p->stride_w - p->pad_left, p->pool_w, p->dilation_w, lo_w, hi_w);
  return (float)(count > 0 ? count : 1);
}

/* orow[x] = max(orow[x], irow[x * s + shift]) for x in [lo, hi), NaN in orow kept (`v > o ? v : o`). Told that
 * FP traps are not observed, gcc turns the select into a vector max instead of a branch per element, and with the
 * stride a constant it loads stride-2 taps as vectors; compiled for AVX2 and AVX-512 too, following the gemm
 * core's instruction set. The same values in the same order either way. */
#define CK_DEFINE_MAX_TAP(NAME)                                                                       \
  static CK_NO_TRAPS void NAME(float *restrict orow, const float *restrict irow, int64_t lo, int64_t hi, \
                               int64_t s, int64_t shift) {                                          \
    int64_t x;                                                                                      \
    if (s == 1) {                                                                                   \
      for (x = lo; x < hi; ++x) {                                                                   \
        const float v = irow[x + shift];                                                            \
        orow[x] = v > orow[x] ? v : orow[x];                                                        \
      }                                                                                             \
    } else if (s == 2) {                                                                            \
      for (x = lo; x < hi; ++x) {                                                                   \
        const float v = irow[2 * x + shift];                                                        \
        orow[x] = v > orow[x] ? v : orow[x];                                                        \
      }                                                                                             \
    } else {                                                                                        \
      for (x = lo; x < hi; ++x) {                                                                   \
        const float v = irow[x * s + shift];                                                        \
        orow[x] = v > orow[x] ? v : orow[x];                                                        \
      }                                                                                             \
    }                                                                                               \
  }

typedef void (*ck_max_tap_fn)(float *orow, const float *irow, int64_t lo, int64_t hi, int64_t s, int64_t shift);

CK_DEFINE_MAX_TAP(ck_max_tap_baseline)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
__attribute__((target("avx2"))) CK_DEFINE_MAX_TAP(ck_max_tap_avx2)
__attribute__((target("avx512f,avx2"))) CK_DEFINE_MAX_TAP(ck_max_tap_avx512)

static ck_max_tap_fn ck_max_tap_current(void) {
  static const ck_max_tap_fn by_isa[] = {ck_max_tap_baseline, ck_max_tap_avx2, ck_max_tap_avx512};
  return by_isa[ck_micro_kernel_isa()];
}
#else
static ck_max_tap_fn ck_max_tap_current(void) { return ck_max_tap_baseline; }
#endif

typedef enum { CK_POOL_MAX, CK_POOL_AVG } ck_pool_kind;

typedef struct {
  const ck_pool2d_params *p;
  const float *data;
  float *out;
  ck_pool_kind kind;
  int64_t oh_n, ow_n;
} ck_pool_job;

#define CK_POOL_RANGES 16
/* A max pool's rows up to this wide are folded down the window first (one pass per window row over the input
 * row, unit stride), then along it (one pass per window column over that row): pool_h + pool_w passes where
 * tap by tap took pool_h * pool_w strided ones. ResNet-50's 3x3/2 over 64 x 112 x 112: 0.51 ms against
 * onnxruntime's 0.27 in the model (one thread, Zen 3). Each output is still the first of its window's largest
 * values under `v > o ? v : o` from -inf (NaN never taken), folded row-major or column-major: the same value
 * (of equal ones, a zero's sign may come from another tap).
 * The row lives on the stack (1 KB: microcontroller stacks too). */
#define CK_POOL_ROW 256

/* Planes [begin, end) (of every image and channel). */
static void ck_pool_planes(void *ctx, int64_t begin, int64_t end) {
  const ck_pool_job *job = (const ck_pool_job *)ctx;
  const ck_pool2d_params *p = job->p;
  const float *data = job->data;
  float *out = job->out;
  const ck_pool_kind kind = job->kind;
  const int64_t oh_n = job->oh_n, ow_n = job->ow_n;
  /* each tap column's output range, the same for every row: computed once (two divisions per tap and row were
   * most of a 3x3/2 max pool's time) where the window is narrow enough, per row otherwise */
  int64_t lo_kw[CK_POOL_RANGES], hi_kw[CK_POOL_RANGES];
  const int ranges = p->pool_w <= CK_POOL_RANGES;
  const ck_max_tap_fn max_tap = ck_max_tap_current();
  int64_t plane, oh, kh, kw, x;
  for (kw = 0; ranges && kw < p->pool_w; ++kw)
    ck_tap_range(kw * p->dilation_w - p->pad_left, p->stride_w, p->width, ow_n, &lo_kw[kw], &hi_kw[kw]);
  for (plane = begin; plane < end; ++plane) {
    const float *in = data + plane * p->height * p->width;
    float *o_plane = out + plane * oh_n * ow_n;
    for (oh = 0; oh < oh_n; ++oh) {
      float *restrict orow = o_plane + oh * ow_n;
      const int64_t h0 = oh * p->stride_h - p->pad_top;
      const float init = kind == CK_POOL_MAX ? -INFINITY : 0.0f;
      for (x = 0; x < ow_n; ++x) orow[x] = init;
      if (kind == CK_POOL_MAX && p->pool_h > 1 && p->width <= CK_POOL_ROW) {
        float column_max[CK_POOL_ROW];
        for (x = 0; x < p->width; ++x) column_max[x] = -INFINITY;
        for (kh = 0; kh < p->pool_h; ++kh) {
          const int64_t ih = h0 + kh * p->dilation_h;
          if (ih >= 0 && ih < p->height) max_tap(column_max, in + ih * p->width, 0, p->width, 1, 0);
        }
        for (kw = 0; kw < p->pool_w; ++kw) {
          int64_t lo = ranges ? lo_kw[kw] : 0, hi = ranges ? hi_kw[kw] : 0;
          const int64_t shift = kw * p->dilation_w - p->pad_left;
          if (!ranges) ck_tap_range(shift, p->stride_w, p->width, ow_n, &lo, &hi);
          max_tap(orow, column_max, lo, hi, p->stride_w, shift);
        }
        continue;
      }
      for (kh = 0; kh < p->pool_h; ++kh) {
        const int64_t ih = h0 + kh * p->dilation_h;
        const float *restrict irow;
        if (ih < 0 || ih >= p->height) continue;
        irow = in + ih * p->width;
        for (kw = 0; kw < p->pool_w; ++kw) {
          const int64_t shift = kw * p->dilation_w - p->pad_left;
          const int64_t s = p->stride_w;
          int64_t lo = ranges ? lo_kw[kw] : 0, hi = ranges ? hi_kw[kw] : 0;
          if (!ranges) ck_tap_range(shift, s, p->width, ow_n, &lo, &hi);
          if (kind == CK_POOL_MAX) {
            max_tap(orow, irow, lo, hi, s, shift);
          } else {
            for (x = lo; x < hi; ++x) orow[x] += irow[x * s + shift];
          }
        }
      }
      if (kind == CK_POOL_AVG) {
        /* the divisor is separable: taps inside along h times taps inside along w */
        const int64_t lo_h = p->count_include_pad ? -p->pad_top : 0;
        const int64_t hi_h = p->count_include_pad ? p->height + p->pad_bottom : p->height;
        const int64_t lo_w = p->count_include_pad ? -p->pad_left : 0;
        const int64_t hi_w = p->count_include_pad ? p->width + p->pad_right : p->width;
        const int64_t rows = ck_taps_inside(h0, p->pool_h, p->dilation_h, lo_h, hi_h);
        /* columns [full_lo, full_hi) hold the whole window: one divisor, a vector loop;
         * only the few border columns count their taps */
        const int64_t span = hi_w - 1 - p->dilation_w * (p->pool_w - 1) + p->pad_left;
        int64_t full_lo = (lo_w + p->pad_left + p->stride_w - 1) / p->stride_w;
        int64_t full_hi = span < 0 ? 0 : span / p->stride_w + 1;
        const float full = (float)(rows * p->pool_w);
        if (full_lo < 0) full_lo = 0;
        if (full_hi > ow_n) full_hi = ow_n;
        if (full_lo > full_hi) full_lo = full_hi;
        for (x = 0; x < full_lo; ++x) orow[x] = orow[x] / ck_avg_divisor(p, rows, x, lo_w, hi_w);
        for (x = full_lo; x < full_hi; ++x) orow[x] = orow[x] / full;
        for (x = full_hi; x < ow_n; ++x) orow[x] = orow[x] / ck_avg_divisor(p, rows, x, lo_w, hi_w);
      }
    }
  }
}

static int32_t ck_pool2d(const ck_pool2d_params *p, const float *data, float *out, ck_pool_kind kind) {
  ck_pool_job job;
  if (ck_pool2d_output_hw(p, &job.oh_n, &job.ow_n) != CK_OK || data == NULL || out == NULL) return CK_EBADPARAM;
  job.p = p;
  job.data = data;
  job.out = out;
  job.kind = kind;
  ck_parallel_range(p->batch * p->channels, ck_grain(p->height * p->width), ck_pool_planes, &job);
  return CK_OK;
}

int32_t ck_max_pool2d(const ck_pool2d_params *p, const float *data, float *out) {
  return ck_pool2d(p, data, out, CK_POOL_MAX);
}

int32_t ck_avg_pool2d(const ck_pool2d_params *p, const float *data, float *out) {
  return ck_pool2d(p, data, out, CK_POOL_AVG);
}

typedef struct {
  int64_t plane;
  const float *data;
  float *out;
} ck_gap_job;

static void ck_gap_planes(void *ctx, int64_t begin, int64_t end) {
  const ck_gap_job *job = (const ck_gap_job *)ctx;
  const int64_t plane = job->plane;
  int64_t c, i;
  int l;
  for (c = begin; c < end; ++c) {
    const float *restrict x = job->data + c * plane;
    float lanes[8], sum;
    for (l = 0; l < 8; ++l) lanes[l] = 0.0f;
    /* 8 independent partial sums: vectorizes without reassociation flags */
    for (i = 0; i + 8 <= plane; i += 8)
      for (l = 0; l < 8; ++l) lanes[l] += x[i + l];
    sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (; i < plane; ++i) sum += x[i];
    job->out[c] = sum / (float)plane;
  }
}

int32_t ck_global_avg_pool2d(int64_t planes, int64_t plane, const float *data, float *out) {
  ck_gap_job job;
  if (data == NULL || out == NULL || planes < 0 || plane < 1) return CK_EBADPARAM;
  job.plane = plane;
  job.data = data;
  job.out = out;
  ck_parallel_range(planes, ck_grain(plane), ck_gap_planes, &job);
  return CK_OK;
}
