/* ck_activation.c - hard sigmoid and hard swish (MobileNetV3, EfficientNet-lite).
 *
 * The clamps are comparisons and selects, not fminf/fmaxf: those return the other operand for a NaN
 * (the reference keeps the NaN), and selects vectorize. In place (the codegen's usual call) runs a
 * loop over one pointer: with two, the compiler's run-time overlap check would send out == in to its
 * scalar loop. On x86-64 the loops are compiled for AVX2 and AVX-512 too and follow the gemm core's
 * choice of instruction set, as ck_depthwise.c does (built for the baseline alone, SSE2, they were a
 * fifth of EfficientNet-lite's run); elements in ranges fixed by n on the runtime's pool.
 */
#include "ck_internal.h"

static inline CK_NO_TRAPS float ck_unit_clamp(float v) {
  v = v < 0.0f ? 0.0f : v;
  return v > 1.0f ? 1.0f : v;
}

static inline CK_NO_TRAPS float ck_hard_swish_one(float x) {
  return x * ck_unit_clamp(x * (1.0f / 6.0f) + 0.5f);   /* a multiply: a divide is several times slower */
}

/* One range [begin, end) of either function (alpha, beta: hard sigmoid's; hard swish when swish). */
#define CK_DEFINE_ACTIVATION_RANGE(NAME)                                                             \
  static CK_NO_TRAPS void NAME(int swish, const float *in, float *out, float alpha, float beta,      \
                               int64_t begin, int64_t end) {                                         \
    int64_t i;                                                                                       \
    if (in == out) {                                                                                 \
      float *restrict y = out;                                                                       \
      if (swish) {                                                                                   \
        for (i = begin; i < end; ++i) y[i] = ck_hard_swish_one(y[i]);                                \
      } else {                                                                                       \
        for (i = begin; i < end; ++i) y[i] = ck_unit_clamp(alpha * y[i] + beta);                     \
      }                                                                                              \
    } else {                                                                                         \
      const float *restrict x = in;                                                                  \
      float *restrict y = out;                                                                       \
      if (swish) {                                                                                   \
        for (i = begin; i < end; ++i) y[i] = ck_hard_swish_one(x[i]);                                \
      } else {                                                                                       \
        for (i = begin; i < end; ++i) y[i] = ck_unit_clamp(alpha * x[i] + beta);                     \
      }                                                                                              \
    }                                                                                                \
  }

typedef void (*ck_activation_range_fn)(int swish, const float *in, float *out, float alpha, float beta,
                                       int64_t begin, int64_t end);

CK_DEFINE_ACTIVATION_RANGE(ck_activation_baseline)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
__attribute__((target("avx2"))) CK_DEFINE_ACTIVATION_RANGE(ck_activation_avx2)
__attribute__((target("avx512f,avx2"))) CK_DEFINE_ACTIVATION_RANGE(ck_activation_avx512)

static ck_activation_range_fn ck_activation_current(void) {
  static const ck_activation_range_fn by_isa[] = {ck_activation_baseline, ck_activation_avx2, ck_activation_avx512};
  return by_isa[ck_micro_kernel_isa()];
}
#else
static ck_activation_range_fn ck_activation_current(void) { return ck_activation_baseline; }
#endif

typedef struct {
  ck_activation_range_fn run;
  int swish;
  const float *in;
  float *out;
  float alpha, beta;
} ck_activation_job;

static void ck_activation_range(void *ctx, int64_t begin, int64_t end) {
  const ck_activation_job *job = (const ck_activation_job *)ctx;
  job->run(job->swish, job->in, job->out, job->alpha, job->beta, begin, end);
}

static int32_t ck_activation_any(int swish, int64_t n, const float *in, float *out, float alpha, float beta) {
  ck_activation_job job;
  if (in == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  job.run = ck_activation_current();
  job.swish = swish;
  job.in = in;
  job.out = out;
  job.alpha = alpha;
  job.beta = beta;
  ck_parallel_range(n, CK_GRAIN_FLOATS, ck_activation_range, &job);
  return CK_OK;
}

int32_t ck_hard_sigmoid(int64_t n, const float *in, float *out, float alpha, float beta) {
  return ck_activation_any(0, n, in, out, alpha, beta);
}

int32_t ck_hard_swish(int64_t n, const float *in, float *out) { return ck_activation_any(1, n, in, out, 0.0f, 0.0f); }
