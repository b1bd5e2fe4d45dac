/* ck_transformer.h - the kernel library's transformer ops (ck_transformer.c); included by byoc_ck.h.
 * Same conventions: float32, contiguous row-major, 0 on success, CK_EBADPARAM on bad parameters. */
#ifndef BYOC_CK_TRANSFORMER_H_
#define BYOC_CK_TRANSFORMER_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* nn.batch_matmul: for b < batch, out[b] (m x n) = A_b . B_b where A_b starts at a + a_offsets[b]
 * (m x k, or k x m with transpose_a) and B_b at b + b_offsets[b] (k x n, or n x k with transpose_b):
 * the offsets express broadcast batch dimensions. Scratch: ck_batch_matmul_workspace_bytes. */
size_t ck_batch_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k);
int32_t ck_batch_matmul(int64_t batch, int64_t m, int64_t n, int64_t k, const float *a, const int64_t *a_offsets,
                        int32_t transpose_a, const float *b, const int64_t *b_offsets, int32_t transpose_b,
                        float *out, void *workspace);
/* nn.softmax along the last axis of [rows, n] (out may alias in). */
int32_t ck_softmax_rows(int64_t rows, int64_t n, const float *in, float *out);
/* nn.layer_norm along the last axis of [rows, n], gamma and beta of n elements (out may alias in). */
int32_t ck_layer_norm_rows(int64_t rows, int64_t n, const float *in, const float *gamma, const float *beta,
                           float epsilon, float *out);
/* nn.gelu: x * Phi(x) (approximate: the tanh formula) on n elements (out may alias in). */
int32_t ck_gelu(int64_t n, const float *in, float *out, int32_t approximate);

#ifdef __cplusplus
}
#endif

#endif /* BYOC_CK_TRANSFORMER_H_ */
