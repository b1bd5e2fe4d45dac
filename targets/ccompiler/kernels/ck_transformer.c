/* ck_transformer.c - the ops of transformer encoders: batched matmul (on the gemm core), softmax and
 * layer norm along rows, gelu.
 *
 * Row reductions accumulate in double (a row of a few hundred floats summed in float drifts past
 * the reference's tolerance); the per-element work stays in float so it vectorizes.
 */
#include <math.h>

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

int32_t ck_softmax_rows(int64_t rows, int64_t n, const float *in, float *out) {
  int64_t r, i;
  if (in == NULL || out == NULL || rows < 0 || n < 1) return CK_EBADPARAM;
  for (r = 0; r < rows; ++r) {
    const float *x = in + r * n;
    float *y = out + r * n;
    float top = x[0];
    double total = 0.0;
    float scale;
    for (i = 1; i < n; ++i) {
      if (x[i] > top || x[i] != x[i]) top = x[i];
    }
    for (i = 0; i < n; ++i) {
      const float e = expf(x[i] - top);
      y[i] = e;
      total += (double)e;
    }
    scale = (float)(1.0 / total);
    for (i = 0; i < n; ++i) y[i] *= scale;
  }
  return CK_OK;
}

int32_t ck_layer_norm_rows(int64_t rows, int64_t n, const float *in, const float *gamma, const float *beta,
                           float epsilon, float *out) {
  int64_t r, i;
  if (in == NULL || out == NULL || gamma == NULL || beta == NULL || rows < 0 || n < 1) return CK_EBADPARAM;
  for (r = 0; r < rows; ++r) {
    const float *x = in + r * n;
    float *y = out + r * n;
    double total = 0.0, squares = 0.0;
    float mean, inv;
    for (i = 0; i < n; ++i) total += (double)x[i];
    mean = (float)(total / (double)n);
    for (i = 0; i < n; ++i) {
      const double d = (double)x[i] - (double)mean;
      squares += d * d;
    }
    inv = (float)(1.0 / sqrt(squares / (double)n + (double)epsilon));
    for (i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
  }
  return CK_OK;
}

/* erf(x) by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7): 1 - poly(t) exp(-x^2) with
 * t = 1 / (1 + 0.3275911 |x|), signed like x. About half the cost of libm's erff, which dominated gelu. */
static float ck_erf(float x) {
  const float a = fabsf(x);
  const float t = 1.0f / (1.0f + 0.3275911f * a);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f +
                     t * 1.061405429f))));
  return copysignf(1.0f - poly * expf(-a * a), x);
}

int32_t ck_gelu(int64_t n, const float *in, float *out, int32_t approximate) {
  int64_t i;
  if (in == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  if (approximate) {
    for (i = 0; i < n; ++i) {
      const float x = in[i];
      out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
  } else {
    for (i = 0; i < n; ++i) {
      const float x = in[i];
      out[i] = 0.5f * x * (1.0f + ck_erf(x * 0.70710678118654752f));
    }
  }
  return CK_OK;
}
