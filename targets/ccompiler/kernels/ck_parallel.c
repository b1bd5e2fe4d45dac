/* ck_parallel.c - ranges of independent items (elements, rows, planes) on the runtime's pool.
 *
 * [0, n) is cut into ranges of `grain` items (the last one shorter): the cut depends on n and grain
 * alone, never on the thread count, and every item is computed by one call in the same way, so results
 * are the same for every thread count. A range of fewer than two grains runs on the caller. */
#include "ck_internal.h"

typedef struct {
  ck_range_fn fn;
  void *ctx;
  int64_t n, grain;
} ck_range_job;

static void ck_range_task(int32_t task, int32_t n_tasks, void *arg) {
  const ck_range_job *job = (const ck_range_job *)arg;
  const int64_t begin = (int64_t)task * job->grain;
  (void)n_tasks;
  job->fn(job->ctx, begin, begin + job->grain < job->n ? begin + job->grain : job->n);
}

void ck_parallel_range(int64_t n, int64_t grain, ck_range_fn fn, void *ctx) {
  ck_range_job job;
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (n <= grain) {
    fn(ctx, 0, n);
    return;
  }
  job.fn = fn;
  job.ctx = ctx;
  job.n = n;
  job.grain = grain;
  byoc_parallel_for((int32_t)((n + grain - 1) / grain), ck_range_task, &job);
}

int64_t ck_grain(int64_t item_floats) {
  const int64_t per = item_floats < 1 ? 1 : item_floats;
  return per >= CK_GRAIN_FLOATS ? 1 : CK_GRAIN_FLOATS / per;
}
