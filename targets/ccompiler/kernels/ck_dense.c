/* ck_dense.c - nn.dense, nn.matmul (and nn.batch_matmul on a packed B): strides into the one gemm core. */
#include "ck_internal.h"

size_t ck_dense_workspace_bytes(int64_t m, int64_t n, int64_t k) { return ck_gemm_workspace_bytes(m, n, k); }

/* Both nn.dense entries check the same arguments and fuse the same epilogue: a bias per output column,
   then the activation. */
static int32_t ck_dense_setup(const float *data, const float *weight, const float *out, const float *bias,
                              int32_t activation, ck_epilogue *epilogue) {
  if (data == NULL || weight == NULL || out == NULL) return CK_EBADPARAM;
  if (!CK_VALID_ACTIVATION(activation)) return CK_EBADPARAM;
  epilogue->bias = bias;
  epilogue->bias_per_row = 0;
  epilogue->activation = activation;
  return CK_OK;
}

int32_t ck_dense(int64_t m, int64_t n, int64_t k, const float *data, const float *weight,
                 const float *bias, int32_t activation, float *out, void *workspace) {
  ck_epilogue epilogue;
  int32_t status = ck_dense_setup(data, weight, out, bias, activation, &epilogue);
  if (status != CK_OK) return status;
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

/* The gemm core on B packed ahead (ck_gemm_pack_b); A read with strides and packed per call. */
static int32_t ck_gemm_on_packed_b(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_row_stride,
                                   int64_t a_col_stride, const float *packed_b, float *c,
                                   const ck_epilogue *epilogue, void *workspace) {
  ck_b_source source;
  source.base = NULL;
  source.row_stride = source.col_stride = 0;
  source.conv = NULL;
  source.packed = packed_b;
  return ck_gemm_core(m, n, k, a, a_row_stride, a_col_stride, NULL, &source, c, n, epilogue, NULL, workspace);
}

int32_t ck_dense_prepacked(int64_t m, int64_t n, int64_t k, const float *data, const float *packed_weight,
                           const float *bias, int32_t activation, float *out, void *workspace) {
  ck_epilogue epilogue;
  int32_t status = ck_dense_setup(data, packed_weight, out, bias, activation, &epilogue);
  if (status != CK_OK) return status;
  return ck_gemm_on_packed_b(m, n, k, data, k, 1, packed_weight, out, &epilogue, workspace);
}

int32_t ck_matmul_prepacked(int64_t m, int64_t n, int64_t k, const float *a, int32_t transpose_a,
                            const float *packed_b, float *out, void *workspace) {
  if (a == NULL || packed_b == NULL || out == NULL) return CK_EBADPARAM;
  return ck_gemm_on_packed_b(m, n, k, a, transpose_a ? 1 : k, transpose_a ? m : 1, packed_b, out, NULL, workspace);
}

int32_t ck_batch_matmul_prepacked(int64_t batch, int64_t m, int64_t n, int64_t k, const float *a,
                                  const int64_t *a_offsets, int32_t transpose_a, const float *packed_b,
                                  const int64_t *b_offsets, float *out, void *workspace) {
  int64_t i;
  if (a == NULL || packed_b == NULL || out == NULL || a_offsets == NULL || b_offsets == NULL || batch < 0)
    return CK_EBADPARAM;
  for (i = 0; i < batch; ++i) {
    const int32_t rc = ck_gemm_on_packed_b(m, n, k, a + a_offsets[i], transpose_a ? 1 : k, transpose_a ? m : 1,
                                           packed_b + b_offsets[i], out + i * m * n, NULL, workspace);
    if (rc != CK_OK) return rc;
  }
  return CK_OK;
}
