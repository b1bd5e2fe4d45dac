/* ck_reduce.c - sum, mean, max, min, prod over any set of axes.
 *
 * The shape is simplified first: size-1 axes are dropped (reducing one changes nothing) and
 * neighbouring axes of the same kind merged, so [N, C, H, W] over (2, 3) is [N*C, H*W] over axis 1
 * and over (1,) it is [N, C, H*W] over axis 1. Then either the innermost axis is reduced (each output
 * reduces contiguous runs of the input), or it is kept (a row of outputs accumulates whole input rows,
 * in tiles of CK_REDUCE_TILE accumulators on the stack: no scratch, unit-stride loops). Sums, means and
 * products accumulate in double (the reference's float64), rounded to float once. Outputs (or output
 * tiles) are split over the runtime's pool; each is reduced whole by one thread, in the same order for
 * every thread count, so the bits do not depend on it (a reduction to very few outputs stays serial).
 */
#include <math.h>

#include "ck_internal.h"

#define CK_REDUCE_TILE 256

/* An odometer over some axes of the input that tracks the element offset of its position. */
typedef struct {
  int32_t n;
  int64_t dim[CK_MAX_RANK], stride[CK_MAX_RANK], coord[CK_MAX_RANK];
  int64_t offset;
} ck_walk;

static void walk_add(ck_walk *w, int64_t dim, int64_t stride) {
  w->dim[w->n] = dim;
  w->stride[w->n] = stride;
  w->coord[w->n] = 0;
  ++w->n;
}

/* The next position (after the last one: back to the first). */
static void walk_next(ck_walk *w) {
  int32_t i;
  for (i = w->n - 1; i >= 0; --i) {
    w->offset += w->stride[i];
    if (++w->coord[i] < w->dim[i]) return;
    w->offset -= w->stride[i] * w->dim[i];
    w->coord[i] = 0;
  }
}

static double reduce_identity(int32_t op) {
  switch (op) {
    case CK_REDUCE_MAX: return -INFINITY;
    case CK_REDUCE_MIN: return INFINITY;
    case CK_REDUCE_PROD: return 1.0;
    default: return 0.0;
  }
}

static float reduce_finish(int32_t op, double acc, int64_t count) {
  return op == CK_REDUCE_MEAN ? (float)(acc / (double)count) : (float)acc;
}

/* acc combined with the n contiguous floats at x. max/min: a NaN wins and stays. */
static double reduce_run(int32_t op, const float *x, int64_t n, double acc) {
  int64_t i = 0;
  switch (op) {
    case CK_REDUCE_SUM:
    case CK_REDUCE_MEAN:
      return acc + ck_sum_f64(x, n);
    case CK_REDUCE_PROD:
      for (; i < n; ++i) acc *= (double)x[i];
      return acc;
    case CK_REDUCE_MAX:
      for (; i < n; ++i) {
        if ((double)x[i] > acc || x[i] != x[i]) acc = (double)x[i];
        if (acc != acc) break;
      }
      return acc;
    default:
      for (; i < n; ++i) {
        if ((double)x[i] < acc || x[i] != x[i]) acc = (double)x[i];
        if (acc != acc) break;
      }
      return acc;
  }
}

/* acc[j] combined with x[j] for j < n. */
static void reduce_rows(int32_t op, double *acc, const float *x, int64_t n) {
  int64_t j;
  switch (op) {
    case CK_REDUCE_SUM:
    case CK_REDUCE_MEAN:
      for (j = 0; j < n; ++j) acc[j] += (double)x[j];
      break;
    case CK_REDUCE_PROD:
      for (j = 0; j < n; ++j) acc[j] *= (double)x[j];
      break;
    case CK_REDUCE_MAX:
      for (j = 0; j < n; ++j) acc[j] = ((double)x[j] > acc[j] || x[j] != x[j]) ? (double)x[j] : acc[j];
      break;
    default:
      for (j = 0; j < n; ++j) acc[j] = ((double)x[j] < acc[j] || x[j] != x[j]) ? (double)x[j] : acc[j];
      break;
  }
}

/* The walk moved to its `pos`-th position (row-major over its axes). */
static void walk_seek(ck_walk *w, int64_t pos) {
  int32_t i;
  w->offset = 0;
  for (i = w->n - 1; i >= 0; --i) {
    w->coord[i] = pos % w->dim[i];
    pos /= w->dim[i];
    w->offset += w->coord[i] * w->stride[i];
  }
}

/* One reduction: the kept and reduced walks (at their first positions), what each output reads. */
typedef struct {
  int32_t op;
  const float *in;
  float *out;
  int64_t count, last, tiles;     /* last: the innermost merged axis' length */
  ck_walk kept, reduced;
} ck_reduce_job;

/* Innermost merged axis reduced: output k (the kept walk's k-th position) reduces runs of `last`. */
static void reduce_inner(void *ctx, int64_t begin, int64_t end) {
  const ck_reduce_job *job = (const ck_reduce_job *)ctx;
  ck_walk kept = job->kept, reduced = job->reduced;
  int64_t k, rep;
  walk_seek(&kept, begin);
  for (k = begin; k < end; ++k) {
    double acc = reduce_identity(job->op);
    for (rep = 0; rep < job->count / job->last; ++rep) {
      acc = reduce_run(job->op, job->in + kept.offset + reduced.offset, job->last, acc);
      walk_next(&reduced);
    }
    job->out[k] = reduce_finish(job->op, acc, job->count);
    walk_next(&kept);
  }
}

/* Innermost merged axis kept: item i is tile i % tiles (CK_REDUCE_TILE outputs) of output row i / tiles,
 * which accumulates `count` input rows. */
static void reduce_outer(void *ctx, int64_t begin, int64_t end) {
  const ck_reduce_job *job = (const ck_reduce_job *)ctx;
  const int64_t inner = job->last;
  ck_walk kept = job->kept, reduced = job->reduced;
  double acc[CK_REDUCE_TILE];
  int64_t item, j, rep;
  walk_seek(&kept, begin / job->tiles);
  for (item = begin; item < end; ++item) {
    const int64_t r = item / job->tiles, t0 = item % job->tiles * CK_REDUCE_TILE;
    const int64_t n = inner - t0 < CK_REDUCE_TILE ? inner - t0 : CK_REDUCE_TILE;
    const double start = reduce_identity(job->op);
    if (item > begin && t0 == 0) walk_next(&kept);
    for (j = 0; j < n; ++j) acc[j] = start;
    for (rep = 0; rep < job->count; ++rep) {
      reduce_rows(job->op, acc, job->in + kept.offset + reduced.offset + t0, n);
      walk_next(&reduced);
    }
    for (j = 0; j < n; ++j) job->out[r * inner + t0 + j] = reduce_finish(job->op, acc[j], job->count);
  }
}

int32_t ck_reduce(int32_t op, int32_t ndim, const int64_t *shape, const int32_t *reduce, const float *in,
                  float *out) {
  int64_t dim[CK_MAX_RANK], stride[CK_MAX_RANK];
  int32_t red[CK_MAX_RANK];
  int64_t count = 1, outputs = 1, k;
  int32_t i, m = 0;
  ck_reduce_job job;
  if (op < CK_REDUCE_SUM || op > CK_REDUCE_PROD || ndim < 0 || ndim > CK_MAX_RANK ||
      (ndim > 0 && (shape == NULL || reduce == NULL))) {
    return CK_EBADPARAM;
  }
  for (i = 0; i < ndim; ++i) {
    if (shape[i] < 0) return CK_EBADPARAM;
    if (reduce[i]) {
      count *= shape[i];
    } else {
      outputs *= shape[i];
    }
  }
  if (outputs == 0) return CK_OK;
  if (out == NULL) return CK_EBADPARAM;
  if (count == 0) {            /* an empty reduction: the operation's identity (mean: NaN) */
    const float value = op == CK_REDUCE_MEAN ? NAN : (float)reduce_identity(op);
    for (k = 0; k < outputs; ++k) out[k] = value;
    return CK_OK;
  }
  if (in == NULL || in == out) return CK_EBADPARAM;
  if (count == 1) {            /* nothing reduced (or only size-1 axes): the same values */
    for (k = 0; k < outputs; ++k) out[k] = in[k];
    return CK_OK;
  }
  for (i = 0; i < ndim; ++i) {
    const int32_t r = reduce[i] != 0;
    if (shape[i] == 1) continue;
    if (m > 0 && red[m - 1] == r) {
      dim[m - 1] *= shape[i];
    } else {
      dim[m] = shape[i];
      red[m] = r;
      ++m;
    }
  }
  stride[m - 1] = 1;
  for (i = m - 2; i >= 0; --i) stride[i] = stride[i + 1] * dim[i + 1];
  job.kept.n = job.reduced.n = 0;
  job.kept.offset = job.reduced.offset = 0;
  for (i = 0; i < m - 1; ++i) walk_add(red[i] ? &job.reduced : &job.kept, dim[i], stride[i]);
  job.op = op;
  job.in = in;
  job.out = out;
  job.count = count;
  job.last = dim[m - 1];
  /* items: outputs (each reads count floats) or output tiles (each reads count rows of a tile) */
  if (red[m - 1]) {
    ck_parallel_range(outputs, ck_grain(count), reduce_inner, &job);
  } else {
    const int64_t width = job.last < CK_REDUCE_TILE ? job.last : CK_REDUCE_TILE;
    job.tiles = (job.last + CK_REDUCE_TILE - 1) / CK_REDUCE_TILE;
    ck_parallel_range(outputs / job.last * job.tiles, ck_grain(count * width), reduce_outer, &job);
  }
  return CK_OK;
}
