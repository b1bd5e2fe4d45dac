/* Pooling over channel-blocked values (oneDNN's aBcd8b and aBcd16b), run by the runtime itself.
 *
 * oneDNN 2.6's pooling kernels for AVX2 take 3-5 ns per output vector where the loads alone need well under
 * one: ShuffleNet's 3x3/2 max pool over 24 channels of 112x112 took 0.28 ms, its 3x3/2 average pools over 240
 * and 480 channels 0.12 and 0.11 ms (one thread, blocked layouts, each alone in a loop), about 10% of the model.
 * A window over a blocked value is a sum or max of whole channel blocks, a loop the compiler vectorizes for
 * the baseline ISA; each (image, block, output row) is one task. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "bd_internal.h"
#include "byoc/parallel.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The layout of md if it is a 4-D blocked layout of 8 or 16 channels whose channels fill the blocks: the lanes
 * of a block, else 0. */
static int64_t channel_block(const dnnl_memory_desc_t* md) {
  static const struct {
    dnnl_format_tag_t tag;
    int64_t lanes;
  } BLOCKED[] = {{dnnl_aBcd8b, 8}, {dnnl_aBcd16b, 16}};
  size_t i;
  if (md->ndims != 4) return 0;
  for (i = 0; i < sizeof BLOCKED / sizeof BLOCKED[0]; ++i) {
    dnnl_memory_desc_t want;
    if (md->dims[1] % BLOCKED[i].lanes != 0) continue;
    if (dnnl_memory_desc_init_by_tag(&want, 4, md->dims, dnnl_f32, BLOCKED[i].tag) != dnnl_success) continue;
    if (dnnl_memory_desc_equal(&want, md)) return BLOCKED[i].lanes;
  }
  return 0;
}

int bd_pool_shape(dnnl_primitive_desc_t pd, int max, int include_pad, const dnnl_dims_t strides,
                  const dnnl_dims_t kernel, const dnnl_dims_t dil, const dnnl_dims_t pl, BdPoolShape* out) {
  const dnnl_memory_desc_t* src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t* dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  const int64_t lanes = src ? channel_block(src) : 0;
  if (lanes == 0 || dst == NULL || channel_block(dst) != lanes) return 0;
  out->images = src->dims[0];
  out->block = lanes;
  out->blocks = src->dims[1] / lanes;
  out->ih = src->dims[2];
  out->iw = src->dims[3];
  out->oh = dst->dims[2];
  out->ow = dst->dims[3];
  out->kh = kernel[0];
  out->kw = kernel[1];
  out->sh = strides[0];
  out->sw = strides[1];
  out->ph = pl[0];
  out->pw = pl[1];
  out->dh = dil[0] + 1; /* oneDNN counts the gaps */
  out->dw = dil[1] + 1;
  out->max = max;
  out->include_pad = include_pad;
  return 1;
}

/* Taps [lo, hi) of a window starting at `start` (stride `step`) that fall inside [0, size). */
static void taps_inside(int64_t start, int64_t step, int64_t taps, int64_t size, int64_t* lo, int64_t* hi) {
  *lo = 0;
  *hi = taps;
  while (*lo < *hi && start + *lo * step < 0) ++*lo;
  while (*hi > *lo && start + (*hi - 1) * step >= size) --*hi;
}

/* 8 lanes of the window at (y0, x0) over the taps inside the plane: their max, or their sum. Separate loops
 * per lane with a constant count, so that the compiler keeps the lanes in vector registers. */
static inline void window_max8(const BdPoolShape* p, const float* src, int64_t y0, int64_t x0, int64_t ky_lo,
                               int64_t ky_hi, int64_t kx_lo, int64_t kx_hi, int64_t B, float* out) {
  float acc[8];
  int64_t ky, kx, l;
  for (l = 0; l < 8; ++l) acc[l] = -FLT_MAX;
  for (ky = ky_lo; ky < ky_hi; ++ky) {
    const float* row = src + (y0 + ky * p->dh) * p->iw * B;
    for (kx = kx_lo; kx < kx_hi; ++kx) {
      const float* px = row + (x0 + kx * p->dw) * B;
#if defined(__SSE2__)
      /* the compilers leave `a > b ? a : b` over lanes scalar; _mm_max_ps(a, b) is that expression per lane */
      _mm_storeu_ps(acc, _mm_max_ps(_mm_loadu_ps(px), _mm_loadu_ps(acc)));
      _mm_storeu_ps(acc + 4, _mm_max_ps(_mm_loadu_ps(px + 4), _mm_loadu_ps(acc + 4)));
#else
      for (l = 0; l < 8; ++l) acc[l] = px[l] > acc[l] ? px[l] : acc[l];
#endif
    }
  }
  for (l = 0; l < 8; ++l) out[l] = acc[l];
}

static inline void window_mean8(const BdPoolShape* p, const float* src, int64_t y0, int64_t x0, int64_t ky_lo,
                                int64_t ky_hi, int64_t kx_lo, int64_t kx_hi, int64_t B, float* out) {
  float acc[8];
  const float taps = (float)(p->include_pad ? p->kh * p->kw : (ky_hi - ky_lo) * (kx_hi - kx_lo));
  int64_t ky, kx, l;
  for (l = 0; l < 8; ++l) acc[l] = 0.0f;
  for (ky = ky_lo; ky < ky_hi; ++ky) {
    const float* row = src + (y0 + ky * p->dh) * p->iw * B;
    for (kx = kx_lo; kx < kx_hi; ++kx) {
      const float* px = row + (x0 + kx * p->dw) * B;
      for (l = 0; l < 8; ++l) acc[l] += px[l];
    }
  }
  for (l = 0; l < 8; ++l) out[l] = taps > 0.0f ? acc[l] / taps : 0.0f;
}

/* One output row of one channel block of B lanes (8 or 16: one or two groups of 8). */
static void pool_row(const BdPoolShape* p, const float* src, float* dst, int64_t oy) {
  const int64_t B = p->block, y0 = oy * p->sh - p->ph;
  int64_t ky_lo, ky_hi, ox, g;
  taps_inside(y0, p->dh, p->kh, p->ih, &ky_lo, &ky_hi);
  for (ox = 0; ox < p->ow; ++ox) {
    const int64_t x0 = ox * p->sw - p->pw;
    int64_t kx_lo, kx_hi;
    taps_inside(x0, p->dw, p->kw, p->iw, &kx_lo, &kx_hi);
    for (g = 0; g < B; g += 8) {
      if (p->max) {
        window_max8(p, src + g, y0, x0, ky_lo, ky_hi, kx_lo, kx_hi, B, dst + ox * B + g);
      } else {
        window_mean8(p, src + g, y0, x0, ky_lo, ky_hi, kx_lo, kx_hi, B, dst + ox * B + g);
      }
    }
  }
}

/* libgomp's entry for `#pragma omp parallel` and the thread queries, looked up when the step is built (as
 * bd_module.c looks up omp_set_num_threads): the tasks run on oneDNN's own OpenMP threads. The runtime's pool
 * would contend with those, which spin after every primitive: on 2 threads it made the pooling no faster. */
typedef void (*GompParallel)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);
typedef int (*OmpQuery)(void);

typedef struct {
  BdPoolShape shape;
  GompParallel parallel; /* NULL: the tasks run serially */
  OmpQuery thread_num, num_threads;
} PoolStep;

typedef struct {
  const PoolStep* step;
  const BdPoolShape* p;
  const float* src;
  float* dst;
  int32_t tasks;
} PoolRun;

/* task: (image * blocks + block) * oh + output row */
static void pool_task(const PoolRun* r, int32_t task) {
  const BdPoolShape* p = r->p;
  const int64_t plane = (int64_t)task / p->oh, oy = (int64_t)task % p->oh;
  pool_row(p, r->src + plane * p->ih * p->iw * p->block, r->dst + (plane * p->oh + oy) * p->ow * p->block, oy);
}

/* A thread's share of the tasks: a run of neighbouring rows, by its number (outputs do not depend on the split) */
static void pool_share(void* ctx) {
  const PoolRun* r = (const PoolRun*)ctx;
  const int32_t t = r->step->thread_num(), n = r->step->num_threads();
  const int32_t first = (int32_t)((int64_t)r->tasks * t / n), last = (int32_t)((int64_t)r->tasks * (t + 1) / n);
  int32_t task;
  for (task = first; task < last; ++task) pool_task(r, task);
}

void bd_pool_compute(const BdPoolShape* p, const float* src, float* dst) {
  PoolRun r;
  int32_t task;
  r.step = NULL;
  r.p = p;
  r.src = src;
  r.dst = dst;
  r.tasks = (int32_t)(p->images * p->blocks * p->oh);
  for (task = 0; task < r.tasks; ++task) pool_task(&r, task);
}

static int32_t run_pool(const BdStep* s) {
  PoolRun r;
  void *src = NULL, *dst = NULL;
  int32_t threads = byoc_get_num_threads();
  r.step = (const PoolStep*)s->params;
  r.p = &r.step->shape;
  if (dnnl_memory_get_data_handle(s->args[0].memory, &src) != dnnl_success ||
      dnnl_memory_get_data_handle(s->args[1].memory, &dst) != dnnl_success) {
    byoc_set_last_error("dnnl: a pooling step's buffers are not set");
    return -1;
  }
  r.src = (const float*)src;
  r.dst = (float*)dst;
  r.tasks = (int32_t)(r.p->images * r.p->blocks * r.p->oh);
  if (threads > r.tasks) threads = r.tasks;
  if (r.step->parallel != NULL && threads > 1) {
    r.step->parallel(pool_share, &r, (unsigned)threads, 0);
  } else {
    bd_pool_compute(r.p, r.src, r.dst);
  }
  return 0;
}

int32_t bd_pool_step(BdModule* m, int32_t id, const BdPoolShape* shape, dnnl_memory_t src, dnnl_memory_t dst) {
  dnnl_exec_arg_t args[2];
  PoolStep* params = (PoolStep*)malloc(sizeof(*params));
  if (params == NULL) return bd_fail(m, id, "out of memory");
  params->shape = *shape;
  *(void**)(&params->parallel) = dlsym(RTLD_DEFAULT, "GOMP_parallel");
  *(void**)(&params->thread_num) = dlsym(RTLD_DEFAULT, "omp_get_thread_num");
  *(void**)(&params->num_threads) = dlsym(RTLD_DEFAULT, "omp_get_num_threads");
  if (params->thread_num == NULL || params->num_threads == NULL) params->parallel = NULL;
  args[0].arg = DNNL_ARG_SRC;
  args[0].memory = src;
  args[1].arg = DNNL_ARG_DST;
  args[1].memory = dst;
  return bd_kernel_step(m, run_pool, params, 2, args, id);
}
