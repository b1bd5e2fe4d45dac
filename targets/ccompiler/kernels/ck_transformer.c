/* ck_transformer.c - the ops of transformer encoders: batched matmul (on the gemm core), softmax and
 * layer norm along rows, gelu.
 *
 * Row reductions accumulate in double (a row of a few hundred floats summed in float drifts past
 * the reference's tolerance); the per-element work stays in float so it vectorizes.
 */
#include <math.h>
#include <string.h>

#include "ck_internal.h"

size_t ck_batch_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k) { return ck_gemm_workspace_bytes(m, n, k); }

int32_t ck_batch_matmul(int64_t batch, int64_t m, int64_t n, int64_t k, const float *a, const int64_t *a_offsets,
                        int32_t transpose_a, const float *b, const int64_t *b_offsets, int32_t transpose_b,
                        float *out, void *workspace) {
  int64_t i;
  if (a == NULL || b == NULL || out == NULL || a_offsets == NULL || b_offsets == NULL || batch < 0) {
    return CK_EBADPARAM;
  }
  for (i = 0; i < batch; ++i) {
    const int32_t rc = ck_gemm(m, n, k, a + a_offsets[i], transpose_a ? 1 : k, transpose_a ? m : 1,
                               b + b_offsets[i], transpose_b ? 1 : n, transpose_b ? k : 1, out + i * m * n, n, NULL,
                               workspace);
    if (rc != CK_OK) return rc;
  }
  return CK_OK;
}

/* exp(x) for x in [-88, 0], written so that the loop around it vectorizes (a libm call per element
 * does not): x = k ln2 + r with |r| <= ln2/2, exp(r) by its Taylor series to r^7 (relative error
 * below 2e-8 there), times 2^k made from the exponent bits. */
static inline float ck_exp_nonpositive(float x) {
  const float round = 12582912.0f;     /* 1.5 * 2^23: adding then subtracting it rounds to an integer */
  /* the sum is stored before the subtraction: where float math runs in double (FLT_EVAL_METHOD != 0,
   * s390x in ISO mode) only the assignment rounds it to float, i.e. to an integer */
  const float shifted = x * 1.44269504088896341f + round;
  const float k = shifted - round;
  const float r = (x - k * 0.693145751953125f) - k * 1.42860682030941723e-06f;
  const float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6.0f + r * (1.0f / 24.0f + r * (1.0f / 120.0f +
                  r * (1.0f / 720.0f + r * (1.0f / 5040.0f)))))));
  const int32_t bits = ((int32_t)k + 127) * 8388608;     /* (k + 127) << 23 */
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/* max(v, -88) for v <= 0 (or -inf), branch-free: non-positive floats' magnitudes order like their bit
 * patterns as integers, so the cap is an integer min on |v|. At -88 ck_exp_nonpositive's k is -127,
 * whose 2^k bits are all zero: exp of anything below is exactly 0 (a -inf, a masked attention position,
 * weighs nothing, as in the reference) at no cost in the loop; above, k >= -126 keeps 2^k a float. */
static inline float ck_floor_at_minus_88(float v) {
  float a = -v;
  int32_t bits;
  const int32_t cap = 0x42b00000;      /* 88.0f */
  memcpy(&bits, &a, sizeof bits);
  bits = bits < cap ? bits : cap;
  memcpy(&a, &bits, sizeof a);
  return -a;
}

/* Largest of x[0 .. n), n >= 1, in eight lanes (a NaN never wins a compare: *has_nan says whether
 * there is one). Compare-and-select on lanes vectorizes; `if (x > top) top = x` does not. */
static inline CK_NO_TRAPS float ck_row_max(const float *x, int64_t n, int32_t *has_nan) {
  float lanes[8];
  int32_t nan = 0;
  int64_t i = 0;
  int l;
  for (l = 0; l < 8; ++l) lanes[l] = x[0];
  for (; i + 8 <= n; i += 8) {
    for (l = 0; l < 8; ++l) {
      lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
      nan |= x[i + l] != x[i + l];
    }
  }
  for (; i < n; ++i) {
    lanes[0] = x[i] > lanes[0] ? x[i] : lanes[0];
    nan |= x[i] != x[i];
  }
  for (l = 1; l < 8; ++l) lanes[0] = lanes[l] > lanes[0] ? lanes[l] : lanes[0];
  *has_nan = nan;
  return lanes[0];
}

/* sum of (x[i] - mean)^2 in double, four lanes. */
static inline double ck_row_squares(const float *x, int64_t n, double mean) {
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t i = 0;
  int l;
  for (; i + 4 <= n; i += 4) {
    for (l = 0; l < 4; ++l) {
      const double d = (double)x[i + l] - mean;
      s[l] += d * d;
    }
  }
  for (; i < n; ++i) s[0] += ((double)x[i] - mean) * ((double)x[i] - mean);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/* y = exp(x - top), x and y distinct or the same row: a loop per case (with one pointer for the
 * second), as the compiler's run-time overlap check sends y == x to its scalar loop. */
static inline void ck_exp_shifted(const float *x, float *y, int64_t n, float top) {
  int64_t i;
  if (x == y) {
    for (i = 0; i < n; ++i) y[i] = ck_exp_nonpositive(ck_floor_at_minus_88(y[i] - top));
  } else {
    const float *restrict xs = x;
    float *restrict ys = y;
    for (i = 0; i < n; ++i) ys[i] = ck_exp_nonpositive(ck_floor_at_minus_88(xs[i] - top));
  }
}

/* Softmax and layer norm: rows in parallel (ranges of rows; every row computed alone, as before). A row's
 * element costs about what CK_ROW_WEIGHT floats of a copy do (an exp, or two passes in double and a third), so
 * ranges hold that many times fewer rows than ck_grain's copies: bert_tiny's 128 x 128 layer norms were one range,
 * on the caller alone, at two threads. */
#define CK_ROW_WEIGHT 4
typedef struct ck_rows_job_ ck_rows_job;
typedef void (*ck_rows_fn)(const ck_rows_job *job, int64_t begin, int64_t end);
struct ck_rows_job_ {
  int64_t n;
  const float *in, *gamma, *beta;
  float epsilon;
  float *out;
  ck_rows_fn run;   /* the instruction set's softmax or layer norm rows */
};

/* Rows [begin, end) of softmax and of layer norm, compiled (with the helpers above inlined) for the baseline and,
 * on x86-64, for AVX2 and AVX-512, following the gemm core's choice of instruction set as gelu does. */
#define CK_DEFINE_ROWS(ATTR, SOFTMAX, LAYER_NORM)                                                       \
  ATTR static void SOFTMAX(const ck_rows_job *job, int64_t begin, int64_t end) {                        \
    const int64_t n = job->n;                                                                           \
    int64_t r, i;                                                                                       \
    for (r = begin; r < end; ++r) {                                                                     \
      const float *x = job->in + r * n;                                                                 \
      float *y = job->out + r * n;                                                                      \
      int32_t has_nan;                                                                                  \
      const float top = ck_row_max(x, n, &has_nan);                                                     \
      float scale;                                                                                      \
      /* NaN or +inf in the row, or every entry -inf (-inf - -inf): libm's expf gives the reference's NaNs */ \
      if (has_nan || top == INFINITY || top == -INFINITY) {                                             \
        for (i = 0; i < n; ++i) y[i] = expf(x[i] - (has_nan ? NAN : top));                             \
      } else {                                                                                          \
        ck_exp_shifted(x, y, n, top);                                                                   \
      }                                                                                                 \
      scale = (float)(1.0 / ck_sum_f64(y, n));                                                          \
      for (i = 0; i < n; ++i) y[i] *= scale;                                                            \
    }                                                                                                   \
  }                                                                                                     \
  ATTR static void LAYER_NORM(const ck_rows_job *job, int64_t begin, int64_t end) {                     \
    const int64_t n = job->n;                                                                           \
    const float *gamma = job->gamma, *beta = job->beta;                                                 \
    int64_t r, i;                                                                                       \
    for (r = begin; r < end; ++r) {                                                                     \
      const float *x = job->in + r * n;                                                                 \
      float *y = job->out + r * n;                                                                      \
      const float mean = (float)(ck_sum_f64(x, n) / (double)n);                                         \
      const float inv =                                                                                 \
          (float)(1.0 / sqrt(ck_row_squares(x, n, (double)mean) / (double)n + (double)job->epsilon));   \
      if (x == y) {                                                                                     \
        for (i = 0; i < n; ++i) y[i] = (y[i] - mean) * inv * gamma[i] + beta[i];                        \
      } else {                                                                                          \
        const float *restrict xs = x;                                                                   \
        float *restrict ys = y;                                                                         \
        for (i = 0; i < n; ++i) ys[i] = (xs[i] - mean) * inv * gamma[i] + beta[i];                      \
      }                                                                                                 \
    }                                                                                                   \
  }

CK_DEFINE_ROWS(, ck_softmax_baseline, ck_layer_norm_baseline)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
CK_DEFINE_ROWS(__attribute__((target("avx2"))), ck_softmax_avx2, ck_layer_norm_avx2)
CK_DEFINE_ROWS(__attribute__((target("avx512f,avx2"))), ck_softmax_avx512, ck_layer_norm_avx512)

static ck_rows_fn ck_rows_current(int softmax) {
  static const ck_rows_fn by_isa[2][3] = {{ck_layer_norm_baseline, ck_layer_norm_avx2, ck_layer_norm_avx512},
                                          {ck_softmax_baseline, ck_softmax_avx2, ck_softmax_avx512}};
  return by_isa[softmax][ck_micro_kernel_isa()];
}
#else
static ck_rows_fn ck_rows_current(int softmax) { return softmax ? ck_softmax_baseline : ck_layer_norm_baseline; }
#endif

static void ck_rows_range(void *ctx, int64_t begin, int64_t end) {
  const ck_rows_job *job = (const ck_rows_job *)ctx;
  job->run(job, begin, end);
}

int32_t ck_softmax_rows(int64_t rows, int64_t n, const float *in, float *out) {
  ck_rows_job job;
  if (in == NULL || out == NULL || rows < 0 || n < 1) return CK_EBADPARAM;
  job.n = n;
  job.in = in;
  job.out = out;
  job.run = ck_rows_current(1);
  ck_parallel_range(rows, ck_grain(CK_ROW_WEIGHT * n), ck_rows_range, &job);
  return CK_OK;
}

int32_t ck_layer_norm_rows(int64_t rows, int64_t n, const float *in, const float *gamma, const float *beta,
                           float epsilon, float *out) {
  ck_rows_job job;
  if (in == NULL || out == NULL || gamma == NULL || beta == NULL || rows < 0 || n < 1) return CK_EBADPARAM;
  job.n = n;
  job.in = in;
  job.gamma = gamma;
  job.beta = beta;
  job.epsilon = epsilon;
  job.out = out;
  job.run = ck_rows_current(0);
  ck_parallel_range(rows, ck_grain(CK_ROW_WEIGHT * n), ck_rows_range, &job);
  return CK_OK;
}

static float ck_gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

/* erfc(z) for z >= 0 with a small relative error everywhere (about 1.2e-7 in exact arithmetic), as the
 * Chebyshev-fitted form t exp(-z^2 + P(t)), t = 1 / (1 + z/2), of Press et al.'s Numerical Recipes. z is capped
 * at 9.3 by comparing bit patterns as integers, which orders non-negative floats and keeps the loop branch-free
 * (erfc is below the smallest normal float there); the exponent is at most 0 and floored at -88
 * (ck_exp_nonpositive's range). */
static inline float ck_erfc_nonnegative(float z) {
  int32_t bits;
  const int32_t cap = 0x4114cccd;      /* 9.3f */
  float zc;
  memcpy(&bits, &z, sizeof bits);
  bits = bits < cap ? bits : cap;
  memcpy(&zc, &bits, sizeof zc);
  {
    const float t = 1.0f / (1.0f + 0.5f * zc);
    const float p = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f + t * (-0.18628806f +
                    t * (0.27886807f + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f +
                    t * 0.17087277f))))))));
    return t * ck_exp_nonpositive(ck_floor_at_minus_88(p - zc * zc));
  }
}

/* x/2 (1 + erf(x / sqrt 2)) from one erfc of |x| / sqrt 2, c: x/2 c for x < 0, where 1 + erf would cancel (4%
 * off at x = -5 with an absolute-error erf), x/2 (2 - c) for x >= 0 (no cancellation: 2 - c is in [1, 2]). The
 * factor is picked by x's sign bit with integer masks, so the loop around it has no branch and vectorizes; a
 * NaN x gives a NaN (x multiplies the result). */
static inline float ck_gelu_erf(float x) {
  const float c = ck_erfc_nonnegative(fabsf(x * 0.70710678118654752f));
  const float upper = 2.0f - c;
  int32_t xb, ub, cb, mask;
  float f;
  memcpy(&xb, &x, sizeof xb);
  memcpy(&ub, &upper, sizeof ub);
  memcpy(&cb, &c, sizeof cb);
  mask = -(int32_t)((uint32_t)xb >> 31);      /* all ones where x's sign bit is set (x < 0 or -0) */
  ub = (cb & mask) | (ub & ~mask);
  memcpy(&f, &ub, sizeof f);
  return 0.5f * x * f;
}

/* One range [begin, end) of gelu (approximate: the tanh formula). The erf loop is branch-free so that it
 * vectorizes; on x86-64 it is compiled for AVX2 and AVX-512 too and follows the gemm core's choice of instruction
 * set, as ck_activation.c does (built for the baseline alone, SSE2, gelu was 39% of bert_tiny's run). */
#define CK_DEFINE_GELU_RANGE(NAME)                                                                    \
  static void NAME(int32_t approximate, const float *in, float *out, int64_t begin, int64_t end) {   \
    int64_t i;                                                                                      \
    if (approximate) {                                                                              \
      for (i = begin; i < end; ++i) out[i] = ck_gelu_tanh(in[i]);                                   \
    } else if (in == out) { /* in place (the codegen's usual call): one pointer, see ck_exp_shifted */ \
      float *restrict y = out;                                                                      \
      for (i = begin; i < end; ++i) y[i] = ck_gelu_erf(y[i]);                                       \
    } else {                                                                                        \
      const float *restrict x = in;                                                                 \
      float *restrict y = out;                                                                      \
      for (i = begin; i < end; ++i) y[i] = ck_gelu_erf(x[i]);                                       \
    }                                                                                               \
  }

typedef void (*ck_gelu_range_fn)(int32_t approximate, const float *in, float *out, int64_t begin, int64_t end);

CK_DEFINE_GELU_RANGE(ck_gelu_baseline)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
__attribute__((target("avx2"))) CK_DEFINE_GELU_RANGE(ck_gelu_avx2)
__attribute__((target("avx512f,avx2"))) CK_DEFINE_GELU_RANGE(ck_gelu_avx512)

static ck_gelu_range_fn ck_gelu_current(void) {
  static const ck_gelu_range_fn by_isa[] = {ck_gelu_baseline, ck_gelu_avx2, ck_gelu_avx512};
  return by_isa[ck_micro_kernel_isa()];
}
#else
static ck_gelu_range_fn ck_gelu_current(void) { return ck_gelu_baseline; }
#endif

typedef struct {
  ck_gelu_range_fn run;
  const float *in;
  float *out;
  int32_t approximate;
} ck_gelu_job;

static void ck_gelu_range(void *ctx, int64_t begin, int64_t end) {
  const ck_gelu_job *job = (const ck_gelu_job *)ctx;
  job->run(job->approximate, job->in, job->out, begin, end);
}

int32_t ck_gelu(int64_t n, const float *in, float *out, int32_t approximate) {
  ck_gelu_job job;
  if (in == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  job.run = ck_gelu_current();
  job.in = in;
  job.out = out;
  job.approximate = approximate;
  ck_parallel_range(n, CK_GRAIN_FLOATS, ck_gelu_range, &job);
  return CK_OK;
}
