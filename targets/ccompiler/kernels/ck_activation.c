/* ck_activation.c - hard sigmoid and hard swish (MobileNetV3, EfficientNet-lite).
 *
 * The clamps are comparisons and selects, not fminf/fmaxf: those return the other operand for a NaN
 * (the reference keeps the NaN), and selects vectorize on every compiler.
 */
#include "ck_internal.h"

static inline float ck_unit_clamp(float v) {
  v = v < 0.0f ? 0.0f : v;
  return v > 1.0f ? 1.0f : v;
}

int32_t ck_hard_sigmoid(int64_t n, const float *in, float *out, float alpha, float beta) {
  int64_t i;
  if (in == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  for (i = 0; i < n; ++i) out[i] = ck_unit_clamp(alpha * in[i] + beta);
  return CK_OK;
}

int32_t ck_hard_swish(int64_t n, const float *in, float *out) {
  int64_t i;
  if (in == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  for (i = 0; i < n; ++i) {
    const float x = in[i];
    out[i] = x * ck_unit_clamp(x / 6.0f + 0.5f);
  }
  return CK_OK;
}
