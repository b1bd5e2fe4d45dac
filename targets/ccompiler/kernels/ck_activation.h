/* ck_activation.h - the kernel library's piecewise-linear activations of mobile CNNs (ck_activation.c);
 * included by byoc_ck.h. Same conventions: float32, 0 on success, CK_EBADPARAM on bad parameters. */
#ifndef BYOC_CK_ACTIVATION_H_
#define BYOC_CK_ACTIVATION_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nn.hard_sigmoid: out = clamp(alpha * x + beta, 0, 1) on n elements (NaN stays NaN; out may alias in). */
int32_t ck_hard_sigmoid(int64_t n, const float *in, float *out, float alpha, float beta);
/* nn.hard_swish: out = x * clamp(x / 6 + 1/2, 0, 1) on n elements (NaN stays NaN; out may alias in). */
int32_t ck_hard_swish(int64_t n, const float *in, float *out);

#ifdef __cplusplus
}
#endif

#endif /* BYOC_CK_ACTIVATION_H_ */
