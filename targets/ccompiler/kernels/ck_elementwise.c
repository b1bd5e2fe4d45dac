/* ck_elementwise.c - binary ops with numpy broadcasting, unary ops, bias_add, batch_norm.
 *
 * Binary ops: shapes are aligned to the output's rank, dims of size 1 in the output dropped and
 * neighbouring dims merged wherever both inputs stay contiguous across them, so most calls end
 * up as one or two dims. The innermost loop then reads each input with stride 1 (or 0: a
 * broadcast scalar per row) and has one specialised loop per (op, stride pair): no branch per
 * element. Outputs may alias inputs element for element, hence no `restrict` on these loops
 * (the compiler's runtime alias check keeps them vectorized).
 */
#include <math.h>
#include <string.h>

#include "ck_internal.h"

typedef void (*ck_binary_row)(int64_t n, const float *a, int64_t sa, const float *b, int64_t sb, float *o);

#define CK_BINARY_ROW(NAME, EXPR)                                                                     \
  static void NAME(int64_t n, const float *a, int64_t sa, const float *b, int64_t sb, float *o) {    \
    int64_t i;                                                                                        \
    if (sa == 1 && sb == 1) {                                                                         \
      for (i = 0; i < n; ++i) {                                                                       \
        const float x = a[i], y = b[i];                                                               \
        o[i] = (EXPR);                                                                                \
      }                                                                                               \
    } else if (sa == 1) {                                                                             \
      const float y = b[0];                                                                           \
      for (i = 0; i < n; ++i) {                                                                       \
        const float x = a[i];                                                                         \
        o[i] = (EXPR);                                                                                \
      }                                                                                               \
    } else if (sb == 1) {                                                                             \
      const float x = a[0];                                                                           \
      for (i = 0; i < n; ++i) {                                                                       \
        const float y = b[i];                                                                         \
        o[i] = (EXPR);                                                                                \
      }                                                                                               \
    } else {                                                                                          \
      const float x = a[0], y = b[0];                                                                 \
      const float v = (EXPR);                                                                         \
      for (i = 0; i < n; ++i) o[i] = v;                                                               \
    }                                                                                                 \
  }

CK_BINARY_ROW(ck_row_add, x + y)
CK_BINARY_ROW(ck_row_subtract, x - y)
CK_BINARY_ROW(ck_row_multiply, x * y)
CK_BINARY_ROW(ck_row_divide, x / y)
CK_BINARY_ROW(ck_row_maximum, x > y ? x : y)
CK_BINARY_ROW(ck_row_minimum, x < y ? x : y)

/* Indexed by ck_binary_op. */
static const ck_binary_row ck_binary_rows[] = {ck_row_add,     ck_row_subtract, ck_row_multiply,
                                               ck_row_divide,  ck_row_maximum,  ck_row_minimum};

/* Strides of an input of rank `ndim` as seen from an output of rank `out_ndim` (0 where the
 * input broadcasts). Returns 0 when a dim is neither equal to the output's nor 1. */
static int ck_broadcast_strides(int32_t ndim, const int64_t *shape, int32_t out_ndim, const int64_t *out_shape,
                                int64_t *strides) {
  int64_t stride = 1;
  int32_t d;
  for (d = out_ndim - 1; d >= 0; --d) {
    const int32_t src = d - (out_ndim - ndim);
    if (src < 0) {
      strides[d] = 0;
      continue;
    }
    if (shape[src] == out_shape[d]) {
      strides[d] = out_shape[d] == 1 ? 0 : stride;
    } else if (shape[src] == 1) {
      strides[d] = 0;
    } else {
      return 0;
    }
    stride *= shape[src];
  }
  return 1;
}

/* A binary op's simplified walk: nd dims (the last one contiguous in the output), each input's strides. */
typedef struct {
  ck_binary_row row;
  const float *lhs, *rhs;
  float *out;
  int32_t nd;
  int64_t size[CK_MAX_RANK], sa[CK_MAX_RANK], sb[CK_MAX_RANK];
} ck_binary_job;

/* Output elements [begin, end): the walk starts at begin's coordinates and runs row pieces, so a range may
 * start or end inside a row. Every element is computed by the same expression whatever the cut. */
static void ck_binary_range(void *ctx, int64_t begin, int64_t end) {
  const ck_binary_job *job = (const ck_binary_job *)ctx;
  const int32_t last = job->nd - 1;
  int64_t index[CK_MAX_RANK], offset_a = 0, offset_b = 0, rest = begin, p = begin;
  int32_t d;
  for (d = last; d >= 0; --d) {
    index[d] = rest % job->size[d];
    rest /= job->size[d];
    offset_a += index[d] * job->sa[d];
    offset_b += index[d] * job->sb[d];
  }
  while (p < end) {
    const int64_t left = job->size[last] - index[last];
    const int64_t n = left < end - p ? left : end - p;
    job->row(n, job->lhs + offset_a, job->sa[last], job->rhs + offset_b, job->sb[last], job->out + p);
    p += n;
    offset_a -= index[last] * job->sa[last];   /* back to the row's start, then the odometer */
    offset_b -= index[last] * job->sb[last];
    index[last] = 0;
    for (d = last - 1; d >= 0; --d) {
      offset_a += job->sa[d];
      offset_b += job->sb[d];
      if (++index[d] < job->size[d]) break;
      offset_a -= job->sa[d] * job->size[d];
      offset_b -= job->sb[d] * job->size[d];
      index[d] = 0;
    }
  }
}

int32_t ck_binary(int32_t op, const float *lhs, int32_t lhs_ndim, const int64_t *lhs_shape,
                  const float *rhs, int32_t rhs_ndim, const int64_t *rhs_shape,
                  float *out, int32_t out_ndim, const int64_t *out_shape) {
  int64_t ls[CK_MAX_RANK], rs[CK_MAX_RANK];
  int64_t total = 1;
  int32_t d, nd = 0;
  ck_binary_job job;
  if (op < CK_ADD || op > CK_MINIMUM || lhs == NULL || rhs == NULL || out == NULL) return CK_EBADPARAM;
  if (out_ndim < 0 || out_ndim > CK_MAX_RANK || lhs_ndim < 0 || lhs_ndim > out_ndim || rhs_ndim < 0 ||
      rhs_ndim > out_ndim)
    return CK_EBADPARAM;
  for (d = 0; d < out_ndim; ++d) {
    if (out_shape[d] < 0) return CK_EBADPARAM;
    total *= out_shape[d];
  }
  if (!ck_broadcast_strides(lhs_ndim, lhs_shape, out_ndim, out_shape, ls) ||
      !ck_broadcast_strides(rhs_ndim, rhs_shape, out_ndim, out_shape, rs))
    return CK_EBADPARAM;
  if (total == 0) return CK_OK;
  job.row = ck_binary_rows[op];
  /* Drop unit dims, merge a dim into the previous one when both inputs are contiguous across. */
  for (d = 0; d < out_ndim; ++d) {
    if (out_shape[d] == 1) continue;
    if (nd > 0 && job.sa[nd - 1] == ls[d] * out_shape[d] && job.sb[nd - 1] == rs[d] * out_shape[d]) {
      job.size[nd - 1] *= out_shape[d];
      job.sa[nd - 1] = ls[d];
      job.sb[nd - 1] = rs[d];
      continue;
    }
    job.size[nd] = out_shape[d];
    job.sa[nd] = ls[d];
    job.sb[nd] = rs[d];
    ++nd;
  }
  if (nd == 0) { /* every dim is 1: one element */
    job.row(1, lhs, 1, rhs, 1, out);
    return CK_OK;
  }
  job.lhs = lhs;
  job.rhs = rhs;
  job.out = out;
  job.nd = nd;
  ck_parallel_range(total, CK_GRAIN_FLOATS, ck_binary_range, &job);
  return CK_OK;
}

static void ck_unary_span(int32_t op, int64_t n, const float *in, float *out, float p0, float p1) {
  int64_t i;
  switch (op) {
    case CK_NEGATIVE:
      for (i = 0; i < n; ++i) out[i] = -in[i];
      break;
    case CK_ABS:
      for (i = 0; i < n; ++i) out[i] = fabsf(in[i]);
      break;
    case CK_EXP:
      for (i = 0; i < n; ++i) out[i] = expf(in[i]);
      break;
    case CK_LOG:
      for (i = 0; i < n; ++i) out[i] = logf(in[i]);
      break;
    case CK_SQRT:
      for (i = 0; i < n; ++i) out[i] = sqrtf(in[i]);
      break;
    case CK_TANH:
      for (i = 0; i < n; ++i) out[i] = tanhf(in[i]);
      break;
    case CK_SIGMOID:
      for (i = 0; i < n; ++i) out[i] = 1.0f / (1.0f + expf(-in[i]));
      break;
    case CK_RELU:
      for (i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
      break;
    case CK_CLIP:
      for (i = 0; i < n; ++i) {
        const float x = in[i] < p0 ? p0 : in[i];
        out[i] = x > p1 ? p1 : x;
      }
      break;
    case CK_LEAKY_RELU:
      for (i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : p0 * in[i];
      break;
    default:
      break;
  }
}

typedef struct {
  int32_t op;
  const float *in;
  float *out;
  float p0, p1;
} ck_unary_job;

static void ck_unary_range(void *ctx, int64_t begin, int64_t end) {
  const ck_unary_job *job = (const ck_unary_job *)ctx;
  ck_unary_span(job->op, end - begin, job->in + begin, job->out + begin, job->p0, job->p1);
}

int32_t ck_unary(int32_t op, int64_t n, const float *in, float *out, float p0, float p1) {
  ck_unary_job job;
  if (in == NULL || out == NULL || n < 0 || op < CK_NEGATIVE || op > CK_LEAKY_RELU) return CK_EBADPARAM;
  if (op == CK_CLIP && !(p0 <= p1)) return CK_EBADPARAM;
  job.op = op;
  job.in = in;
  job.out = out;
  job.p0 = p0;
  job.p1 = p1;
  ck_parallel_range(n, CK_GRAIN_FLOATS, ck_unary_range, &job);
  return CK_OK;
}

/* Rows of `inner` floats, row r = (o, c): y = x * k[c] + s[c] (bias_add: k = 1, s = bias). */
typedef struct {
  int64_t channels, inner;
  const float *data, *bias;
  const float *gamma, *beta, *mean, *var;
  float epsilon;
  int32_t center, scale, norm;
  float *out;
} ck_channel_job;

static void ck_channel_rows(void *ctx, int64_t begin, int64_t end) {
  const ck_channel_job *job = (const ck_channel_job *)ctx;
  const int64_t inner = job->inner;
  int64_t r, i;
  for (r = begin; r < end; ++r) {
    const int64_t c = r % job->channels;
    const float *x = job->data + r * inner;
    float *y = job->out + r * inner;
    if (job->norm) {
      /* y = x * k + s with k, s folded per channel (inference: statistics are constants) */
      const float k = (job->scale ? job->gamma[c] : 1.0f) / sqrtf(job->var[c] + job->epsilon);
      const float s = (job->center ? job->beta[c] : 0.0f) - job->mean[c] * k;
      for (i = 0; i < inner; ++i) y[i] = x[i] * k + s;
    } else {
      const float b = job->bias[c];
      for (i = 0; i < inner; ++i) y[i] = x[i] + b;
    }
  }
}

/* bias along the last axis: rows of `channels` floats */
static void ck_bias_rows(void *ctx, int64_t begin, int64_t end) {
  const ck_channel_job *job = (const ck_channel_job *)ctx;
  int64_t o, c;
  for (o = begin; o < end; ++o) {
    const float *x = job->data + o * job->channels;
    float *y = job->out + o * job->channels;
    for (c = 0; c < job->channels; ++c) y[c] = x[c] + job->bias[c];
  }
}

int32_t ck_bias_add(int64_t outer, int64_t channels, int64_t inner, const float *data,
                    const float *bias, float *out) {
  ck_channel_job job;
  if (data == NULL || bias == NULL || out == NULL || outer < 0 || channels < 0 || inner < 0) return CK_EBADPARAM;
  if (channels == 0 || inner == 0) return CK_OK;
  memset(&job, 0, sizeof job);
  job.channels = channels;
  job.inner = inner;
  job.data = data;
  job.bias = bias;
  job.out = out;
  if (inner == 1)
    ck_parallel_range(outer, ck_grain(channels), ck_bias_rows, &job);
  else
    ck_parallel_range(outer * channels, ck_grain(inner), ck_channel_rows, &job);
  return CK_OK;
}

int32_t ck_batch_norm(int64_t outer, int64_t channels, int64_t inner, const float *data,
                      const float *gamma, const float *beta, const float *mean, const float *var,
                      float epsilon, int32_t center, int32_t scale, float *out) {
  ck_channel_job job;
  if (data == NULL || mean == NULL || var == NULL || out == NULL || outer < 0 || channels < 0 || inner < 0 ||
      (scale && gamma == NULL) || (center && beta == NULL))
    return CK_EBADPARAM;
  if (channels == 0) return CK_OK;
  memset(&job, 0, sizeof job);
  job.channels = channels;
  job.inner = inner;
  job.data = data;
  job.gamma = gamma;
  job.beta = beta;
  job.mean = mean;
  job.var = var;
  job.epsilon = epsilon;
  job.center = center;
  job.scale = scale;
  job.norm = 1;
  job.out = out;
  ck_parallel_range(outer * channels, ck_grain(inner), ck_channel_rows, &job);
  return CK_OK;
}
