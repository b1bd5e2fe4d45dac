/* ck_resize.c - nearest and (multi)linear resampling with ONNX Resize's coordinate rules.
 *
 * Separable: along each axis, output position o maps to a source coordinate x (the coordinate
 * mode), and reads one input position (nearest: the neighbour nearest_mode picks; an axis that does
 * not change: o itself) or two (linear: the positions around x, weights 1 - f and f for the fraction
 * f of x), clamped to the axis. An output element is the weighted sum over every combination of its
 * axes' taps. The work goes row by row: the innermost axis' taps are computed once per tile of
 * CK_RESIZE_TILE output columns (on the stack: no scratch), the outer axes' once per output row as at
 * most 2^(ndim-1) input rows with their weight products, so the inner loop only loads and multiplies.
 * Coordinates and weights are double, computed with the reference's operations in the reference's
 * order (so a tie of round_prefer_floor/ceil falls the same way), and each output rounds once. Ranges of
 * output rows go to the runtime's pool (each thread computes its tiles' column taps itself).
 */
#include <math.h>

#include "ck_internal.h"

#define CK_RESIZE_TILE 256

/* a * b + c must not become a fused multiply-add here: the coordinate has to equal the reference's. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#define CK_NO_CONTRACT
#elif defined(__GNUC__)
#define CK_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define CK_NO_CONTRACT
#endif

typedef struct {
  int64_t in, out;
  double scale, roi_start, roi_end;
  int32_t identity;
} ck_axis;

/* One output position's input positions and weights along one axis. */
typedef struct {
  int64_t index[2];
  double weight[2];
  int32_t count, outside;
} ck_taps;

/* Python's math.isclose(a, b) with its default rel_tol of 1e-9. */
static int32_t ck_isclose(double a, double b) {
  if (!isfinite(a) || !isfinite(b)) return a == b;
  return a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* ONNX Resize's formulas; `length` is the un-rounded output length scale * in. */
static CK_NO_CONTRACT double source_coordinate(int32_t mode, const ck_axis *a, int64_t o) {
  const double length = a->scale * (double)a->in;
  const double span = (double)(a->in - 1);
  switch (mode) {
    case CK_COORD_ALIGN_CORNERS:
      return length == 1.0 ? 0.0 : (double)(o * (a->in - 1)) / (length - 1.0);
    case CK_COORD_ASYMMETRIC:
      return (double)o / a->scale;
    case CK_COORD_TF_CROP_AND_RESIZE:
      if (length == 1.0) return (a->roi_end - a->roi_start) * span / 2.0 + a->roi_start * span;
      return (double)o * (a->roi_end - a->roi_start) * span / (length - 1.0) + a->roi_start * span;
    case CK_COORD_PYTORCH_HALF_PIXEL:
      return length == 1.0 ? -0.5 : ((double)o + 0.5) / a->scale - 0.5;
    case CK_COORD_HALF_PIXEL_SYMMETRIC: {
      const double offset = (double)a->in / 2.0 * (1.0 - (double)a->out / length);
      return offset + ((double)o + 0.5) / a->scale - 0.5;
    }
    default:
      return ((double)o + 0.5) / a->scale - 0.5;
  }
}

static int64_t clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

static void axis_taps(const ck_axis *a, int64_t o, int32_t method, int32_t mode, int32_t nearest, ck_taps *t) {
  double x, below, ratio, up;
  int64_t left;
  t->outside = 0;
  if (a->identity) {
    t->count = 1;
    t->index[0] = o;
    t->weight[0] = 1.0;
    return;
  }
  x = source_coordinate(mode, a, o);
  t->outside = mode == CK_COORD_TF_CROP_AND_RESIZE && (x < 0.0 || x > (double)(a->in - 1));
  below = floor(x);
  ratio = x == below ? 1.0 : x - below;   /* how far x lies past the position before it, in (0, 1] */
  /* the taps are ceil(x) - 1 and ceil(x); clamped to [-1, in] before the conversion (a huge x must not
   * overflow int64), which the clamp to the axis below makes no difference to */
  up = ceil(x);
  if (!(up >= -1.0)) up = -1.0;
  if (up > (double)a->in) up = (double)a->in;
  left = (int64_t)up - 1;
  if (method == CK_RESIZE_NEAREST) {
    int32_t right = 1;
    if (ratio != 1.0) {
      switch (nearest) {
        case CK_ROUND_PREFER_FLOOR: right = ratio > 0.5; break;
        case CK_ROUND_PREFER_CEIL: right = ratio >= 0.5; break;
        case CK_NEAREST_FLOOR: right = 0; break;
        default: right = 1; break;
      }
    }
    t->count = 1;
    t->index[0] = clamp_index(left + right, a->in);
    t->weight[0] = 1.0;
  } else {
    t->count = 2;
    t->index[0] = clamp_index(left, a->in);
    t->index[1] = clamp_index(left + 1, a->in);
    t->weight[0] = 1.0 - ratio;
    t->weight[1] = ratio;
  }
}

/* The input rows (offsets into in) and weight products one output row reads; returns how many,
 * or 0 when a coordinate lies outside (tf_crop_and_resize). */
static int32_t row_sources(int32_t ndim, const ck_axis *ax, const int64_t *coord, int32_t method, int32_t mode,
                           int32_t nearest, int64_t *offset, double *weight) {
  int32_t n = 1, a, c, j;
  offset[0] = 0;
  weight[0] = 1.0;
  for (a = 0; a < ndim - 1; ++a) {
    ck_taps t;
    axis_taps(&ax[a], coord[a], method, mode, nearest, &t);
    if (t.outside) return 0;
    for (c = n - 1; c >= 0; --c) {      /* each source so far times each tap of this axis */
      for (j = t.count - 1; j >= 0; --j) {
        offset[c * t.count + j] = offset[c] * ax[a].in + t.index[j];
        weight[c * t.count + j] = weight[c] * t.weight[j];
      }
    }
    n *= t.count;
  }
  for (c = 0; c < n; ++c) offset[c] *= ax[ndim - 1].in;
  return n;
}

static int32_t check_params(int32_t ndim, const int64_t *in_shape, const int64_t *out_shape, const double *scales,
                            const double *roi, int32_t method, int32_t mode, int32_t nearest) {
  int32_t a;
  if (ndim < 1 || ndim > CK_MAX_RANK || in_shape == NULL || out_shape == NULL || scales == NULL) return 0;
  if ((method != CK_RESIZE_NEAREST && method != CK_RESIZE_LINEAR) || mode < CK_COORD_HALF_PIXEL ||
      mode > CK_COORD_TF_CROP_AND_RESIZE || nearest < CK_ROUND_PREFER_FLOOR || nearest > CK_NEAREST_CEIL) {
    return 0;
  }
  if (mode == CK_COORD_TF_CROP_AND_RESIZE && roi == NULL) return 0;
  for (a = 0; a < ndim; ++a) {
    if (in_shape[a] < 0 || out_shape[a] < 0 || !(scales[a] > 0.0) || !isfinite(scales[a])) return 0;
    if (roi != NULL && (!isfinite(roi[a]) || !isfinite(roi[ndim + a]))) return 0;
  }
  return 1;
}

/* One resize: the axes, the modes, and output rows (every axis but the last) of `width` elements. */
typedef struct {
  ck_axis ax[CK_MAX_RANK];
  int32_t ndim, method, mode, nearest;
  float extrapolation;
  int64_t width;
  const float *in;
  float *out;
} ck_resize_job;

/* One output row's tile of n elements from its sources (the columns' taps given). */
static void resize_row(const ck_resize_job *job, const int64_t *offset, const double *weight, int32_t sources,
                       int64_t n, const int64_t *col0, const int64_t *col1, const double *w0, const double *w1,
                       const int32_t *col_outside, float *y) {
  const int32_t single = job->method == CK_RESIZE_NEAREST || job->ax[job->ndim - 1].identity;
  int64_t j;
  int32_t c;
  if (sources == 0) {
    for (j = 0; j < n; ++j) y[j] = job->extrapolation;
  } else if (sources == 1 && single) {      /* nearest: a gather */
    const float *x = job->in + offset[0];
    for (j = 0; j < n; ++j) y[j] = col_outside[j] ? job->extrapolation : x[col0[j]];
  } else {
    for (j = 0; j < n; ++j) {
      double acc = 0.0;
      if (col_outside[j]) {
        y[j] = job->extrapolation;
        continue;
      }
      for (c = 0; c < sources; ++c) {
        const float *x = job->in + offset[c];
        acc += weight[c] * (single ? (double)x[col0[j]] : w0[j] * (double)x[col0[j]] + w1[j] * (double)x[col1[j]]);
      }
      y[j] = (float)acc;
    }
  }
}

/* Output rows [begin, end), tile by tile: the last axis' taps once per tile, the outer axes' once per row. */
static void resize_rows(void *ctx, int64_t begin, int64_t end) {
  const ck_resize_job *job = (const ck_resize_job *)ctx;
  const int32_t ndim = job->ndim;
  int64_t coord[CK_MAX_RANK], offset[1 << (CK_MAX_RANK - 1)];
  double weight[1 << (CK_MAX_RANK - 1)];
  int64_t col0[CK_RESIZE_TILE], col1[CK_RESIZE_TILE];
  double w0[CK_RESIZE_TILE], w1[CK_RESIZE_TILE];
  int32_t col_outside[CK_RESIZE_TILE], a;
  int64_t t0, j, r, rest;
  for (t0 = 0; t0 < job->width; t0 += CK_RESIZE_TILE) {
    const int64_t n = job->width - t0 < CK_RESIZE_TILE ? job->width - t0 : CK_RESIZE_TILE;
    for (j = 0; j < n; ++j) {
      ck_taps t;
      axis_taps(&job->ax[ndim - 1], t0 + j, job->method, job->mode, job->nearest, &t);
      col0[j] = t.index[0];
      col1[j] = t.count == 2 ? t.index[1] : t.index[0];
      w0[j] = t.weight[0];
      w1[j] = t.count == 2 ? t.weight[1] : 0.0;
      col_outside[j] = t.outside;
    }
    for (rest = begin, a = ndim - 2; a >= 0; --a) {   /* row begin's coordinates */
      coord[a] = rest % job->ax[a].out;
      rest /= job->ax[a].out;
    }
    for (r = begin; r < end; ++r) {
      const int32_t sources = row_sources(ndim, job->ax, coord, job->method, job->mode, job->nearest, offset, weight);
      resize_row(job, offset, weight, sources, n, col0, col1, w0, w1, col_outside, job->out + r * job->width + t0);
      for (a = ndim - 2; a >= 0; --a) {        /* the next output row */
        if (++coord[a] < job->ax[a].out) break;
        coord[a] = 0;
      }
    }
  }
}

int32_t ck_resize(int32_t ndim, const int64_t *in_shape, const int64_t *out_shape, const double *scales,
                  const double *roi, int32_t method, int32_t coordinate_mode, int32_t nearest_mode,
                  float extrapolation_value, const float *in, float *out) {
  ck_resize_job job;
  int64_t rows = 1;
  int32_t a;
  if (!check_params(ndim, in_shape, out_shape, scales, roi, method, coordinate_mode, nearest_mode)) {
    return CK_EBADPARAM;
  }
  for (a = 0; a < ndim; ++a) {
    ck_axis *ax = &job.ax[a];
    ax->in = in_shape[a];
    ax->out = out_shape[a];
    ax->scale = scales[a];
    ax->roi_start = roi != NULL ? roi[a] : 0.0;
    ax->roi_end = roi != NULL ? roi[ndim + a] : 1.0;
    ax->identity = in_shape[a] == out_shape[a] && ck_isclose(scales[a], 1.0) &&
                   (roi == NULL || (roi[a] == 0.0 && ck_isclose(roi[ndim + a], 1.0)));
    rows *= out_shape[a];
  }
  if (rows == 0) return CK_OK;
  for (a = 0; a < ndim; ++a) {
    if (in_shape[a] == 0) return CK_EBADPARAM;   /* nothing to sample */
  }
  if (in == NULL || out == NULL || in == out) return CK_EBADPARAM;
  job.ndim = ndim;
  job.method = method;
  job.mode = coordinate_mode;
  job.nearest = nearest_mode;
  job.extrapolation = extrapolation_value;
  job.width = out_shape[ndim - 1];
  job.in = in;
  job.out = out;
  /* rows are independent and each is computed the same way whichever thread takes it */
  ck_parallel_range(rows / job.width, ck_grain(job.width), resize_rows, &job);
  return CK_OK;
}
