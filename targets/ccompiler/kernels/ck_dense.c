/* ck_dense.c - nn.dense and nn.matmul: strides into the one gemm core. */
#include "ck_internal.h"

size_t ck_dense_workspace_bytes(int64_t m, int64_t n, int64_t k) { return ck_gemm_workspace_bytes(m, n, k); }

int32_t ck_dense(int64_t m, int64_t n, int64_t k, const float *data, const float *weight,
                 const float *bias, int32_t activation, float *out, void *workspace) {
  ck_epilogue epilogue;
  if (data == NULL || weight == NULL || out == NULL) return CK_EBADPARAM;
  if (!CK_VALID_ACTIVATION(activation)) return CK_EBADPARAM;
  epilogue.bias = bias;
  epilogue.bias_per_row = 0;
  epilogue.activation = activation;
  /* B[k, n] = weight[n, k]: row stride 1, column stride K. */
  return ck_gemm(m, n, k, data, k, 1, weight, 1, k, out, n, &epilogue, workspace);
}

size_t ck_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k) { return ck_gemm_workspace_bytes(m, n, k); }

int32_t ck_matmul(int64_t m, int64_t n, int64_t k, const float *a, int32_t transpose_a,
                  const float *b, int32_t transpose_b, float *out, void *workspace) {
  if (a == NULL || b == NULL || out == NULL) return CK_EBADPARAM;
  return ck_gemm(m, n, k, a, transpose_a ? 1 : k, transpose_a ? m : 1,
                 b, transpose_b ? 1 : n, transpose_b ? k : 1, out, n, NULL, workspace);
}
