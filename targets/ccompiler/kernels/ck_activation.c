/* ck_activation.c - hard sigmoid and hard swish (MobileNetV3, EfficientNet-lite).
 *
 * The clamps are comparisons and selects, not fminf/fmaxf: those return the other operand for a NaN
 * (the reference keeps the NaN), and selects vectorize. In place (the codegen's usual call) runs a
 * loop over one pointer: with two, the compiler's run-time overlap check would send out == in to its
 * scalar loop.
 */
#include "ck_internal.h"


static inline CK_NO_TRAPS float ck_unit_clamp(float v) {
  v = v < 0.0f ? 0.0f : v;
  return v > 1.0f ? 1.0f : v;
}

static inline CK_NO_TRAPS float ck_hard_swish_one(float x) {
  return x * ck_unit_clamp(x * (1.0f / 6.0f) + 0.5f);   /* a multiply: a divide is several times slower */
}

CK_NO_TRAPS int32_t ck_hard_sigmoid(int64_t n, const float *in, float *out, float alpha, float beta) {
  int64_t i;
  if (in == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  if (in == out) {
    for (i = 0; i < n; ++i) out[i] = ck_unit_clamp(alpha * out[i] + beta);
  } else {
    const float *restrict x = in;
    float *restrict y = out;
    for (i = 0; i < n; ++i) y[i] = ck_unit_clamp(alpha * x[i] + beta);
  }
  return CK_OK;
}

CK_NO_TRAPS int32_t ck_hard_swish(int64_t n, const float *in, float *out) {
  int64_t i;
  if (in == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  if (in == out) {
    for (i = 0; i < n; ++i) out[i] = ck_hard_swish_one(out[i]);
  } else {
    const float *restrict x = in;
    float *restrict y = out;
    for (i = 0; i < n; ++i) y[i] = ck_hard_swish_one(x[i]);
  }
  return CK_OK;
}
