/* byoc_ck.h - the ccompiler target's kernel library ("the vendor's C library").
 *
 * Plain C99 over float32 data, contiguous row-major tensors, int64 shapes.
 * Conventions every function follows:
 *   - returns 0 on success, non-zero (CK_EBADPARAM) when its parameters are inconsistent; the
 *     codegen validates shapes first, these checks are the last line of defence, never a crash;
 *   - never allocates: a function that needs scratch memory takes `workspace`, and its companion
 *     `*_workspace_bytes` says how many bytes it needs (0 means NULL is fine). The size does not
 *     depend on the CPU or the compiler flags, so a code generator can plan a static buffer; any
 *     alignment is fine (the library aligns inside the slack it asks for);
 *   - outputs never alias inputs, except where a function says so.
 * Layouts: conv2d and pools NCHW data, OIHW weight; padding (top, left, bottom, right).
 */
#ifndef BYOC_CK_H_
#define BYOC_CK_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CK_OK 0
#define CK_EBADPARAM 1

/* Largest rank the shape-generic kernels (binary broadcast, transpose) accept. */
#define CK_MAX_RANK 8

/* Fused epilogue of the matrix-multiply kernels (composites conv2d+bias(+relu|relu6), dense+bias(+relu)).
 * RELU6 is clip(x, 0, 6) (MobileNet's activation). */
typedef enum { CK_ACT_NONE = 0, CK_ACT_RELU = 1, CK_ACT_RELU6 = 2 } ck_activation;

/* ---- matrix multiply core (ck_gemm.c) -------------------------------------------------------
 * C[m, n] = sum_k A[m, k] * B[k, n] for any element strides of A and B, C row-major with row
 * stride ldc. Blocked over M/N/K with packed panels and a register-tiled micro-kernel. */
typedef struct {
  const float *bias;       /* NULL: none */
  int32_t bias_per_row;    /* 1: bias[m] per row (conv2d output channels); 0: bias[n] per column */
  int32_t activation;      /* ck_activation */
} ck_epilogue;

size_t ck_gemm_workspace_bytes(int64_t m, int64_t n, int64_t k);

/* The register-tile kernel the core uses, e.g. "avx2-6x16": on x86-64 with gcc/clang the best
 * one this CPU runs (AVX-512, AVX2+FMA, or the one the compiler flags allow), chosen on first use. */
const char *ck_gemm_kernel_name(void);
/* Every kernel compiled in, index 0 .. until NULL (tests, benchmarks). */
const char *ck_gemm_kernel_at(int32_t index);
/* Use the named kernel from now on (tests, benchmarks; not thread-safe). CK_EBADPARAM when it is
 * unknown or this CPU cannot run it. */
int32_t ck_gemm_use_kernel(const char *name);
int32_t ck_gemm(int64_t m, int64_t n, int64_t k,
                const float *a, int64_t a_row_stride, int64_t a_col_stride,
                const float *b, int64_t b_row_stride, int64_t b_col_stride,
                float *c, int64_t ldc, const ck_epilogue *epilogue, void *workspace);

/* ---- dense and matmul (ck_dense.c) ------------------------------------------------------------
 * nn.dense: out[M, N] = data[M, K] . weight[N, K]^T (+ bias[N]) (relu); data [..., K] is [M, K]. */
size_t ck_dense_workspace_bytes(int64_t m, int64_t n, int64_t k);
int32_t ck_dense(int64_t m, int64_t n, int64_t k, const float *data, const float *weight,
                 const float *bias, int32_t activation, float *out, void *workspace);

/* nn.matmul: out[M, N] = op(a) . op(b); op(a) is [M, K] (a stored [K, M] when transpose_a),
 * op(b) is [K, N] (b stored [N, K] when transpose_b). */
size_t ck_matmul_workspace_bytes(int64_t m, int64_t n, int64_t k);
int32_t ck_matmul(int64_t m, int64_t n, int64_t k, const float *a, int32_t transpose_a,
                  const float *b, int32_t transpose_b, float *out, void *workspace);

/* A constant B operand (a dense weight, a matmul's or batch_matmul's constant right-hand side) packed
 * once (at codegen time or at init) instead of on every call, in a layout every micro-kernel of every
 * CPU reads where it lies: per K block of 256 (the last one shorter), 32-column slivers of B[K, N],
 * each stored k-major (32 floats per k, zeros past column N); the block at k offset pc starts at
 * pc * round_up(N, 32). B is read with element strides: a dense weight [N, K] is B with row stride 1
 * and column stride K. */
size_t ck_gemm_packed_b_bytes(int64_t n, int64_t k);
int32_t ck_gemm_pack_b(int64_t n, int64_t k, const float *b, int64_t b_row_stride, int64_t b_col_stride,
                       float *packed);
/* Scratch of the three calls below (the rows of A packed per call; nothing for B). */
size_t ck_gemm_prepacked_workspace_bytes(int64_t m, int64_t n, int64_t k);
/* ck_dense with the weight packed by ck_gemm_pack_b(n, k, weight, 1, k, packed_weight). */
int32_t ck_dense_prepacked(int64_t m, int64_t n, int64_t k, const float *data, const float *packed_weight,
                           const float *bias, int32_t activation, float *out, void *workspace);
/* ck_matmul with op(b) packed by ck_gemm_pack_b (b_row_stride, b_col_stride: 1, k when transpose_b, else n, 1). */
int32_t ck_matmul_prepacked(int64_t m, int64_t n, int64_t k, const float *a, int32_t transpose_a,
                            const float *packed_b, float *out, void *workspace);
/* ck_batch_matmul (ck_transformer.h) with each distinct B_b packed by ck_gemm_pack_b; b_offsets count
 * floats of the packed blob (multiples of ck_gemm_packed_b_bytes(n, k) / 4). */
int32_t ck_batch_matmul_prepacked(int64_t batch, int64_t m, int64_t n, int64_t k, const float *a,
                                  const int64_t *a_offsets, int32_t transpose_a, const float *packed_b,
                                  const int64_t *b_offsets, float *out, void *workspace);

/* ---- conv2d (ck_conv2d.c) ---------------------------------------------------------------------
 * NCHW data [batch, channels, height, width], OIHW weight [out_channels, channels/groups, kh, kw].
 * Output [batch, out_channels, out_h, out_w] with out = (in + pads - dilation*(k-1) - 1)/stride + 1. */
typedef struct {
  int64_t batch, channels, height, width;
  int64_t out_channels, kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t dilation_h, dilation_w;
  int64_t groups;
} ck_conv2d_params;

/* Output spatial size; returns CK_EBADPARAM for an invalid geometry. */
int32_t ck_conv2d_output_hw(const ck_conv2d_params *p, int64_t *out_h, int64_t *out_w);
size_t ck_conv2d_workspace_bytes(const ck_conv2d_params *p);
int32_t ck_conv2d(const ck_conv2d_params *p, const float *data, const float *weight,
                  const float *bias, int32_t activation, float *out, void *workspace);

/* Constant weights packed once (at codegen time or at init) instead of on every call, in a layout
 * every micro-kernel of every CPU reads: per group, per K block of 256 (K = channels/groups * kh * kw,
 * the last block shorter), 24-row slivers of the group's [out_channels/groups, K] weight matrix,
 * each stored k-major (24 floats per k, zeros past the last row). 0 bytes means this geometry is
 * not packed (one input channel per group: the direct kernel reads the weight as it is). */
size_t ck_conv2d_packed_weight_bytes(const ck_conv2d_params *p);
int32_t ck_conv2d_pack_weight(const ck_conv2d_params *p, const float *weight, float *packed);
/* ck_conv2d with the weight packed by ck_conv2d_pack_weight (same scratch). */
int32_t ck_conv2d_prepacked(const ck_conv2d_params *p, const float *data, const float *packed_weight,
                            const float *bias, int32_t activation, float *out, void *workspace);
/* Stride-1, undilated 3x3 convolutions with one group by Winograd's F(m x m, 3 x 3), m = 2 or 4
 * (ck_winograd.c): the weight transformed (U = G g G^T per output and input channel) and packed at codegen
 * time (winograd.py's pack_weight: per position of the (m + 2)^2, the [out_channels, channels] matrix
 * in ck_conv2d_pack_weight's 24-row slivers per K block of 256); residual: NULL, or a tensor of the output's
 * shape added after the bias, before the activation. 0 bytes: not a geometry this path takes. */
size_t ck_conv2d_winograd_weight_bytes(const ck_conv2d_params *p, int32_t m);
size_t ck_conv2d_winograd_workspace_bytes(const ck_conv2d_params *p, int32_t m);
int32_t ck_conv2d_winograd(const ck_conv2d_params *p, int32_t m, const float *data, const float *packed_weight,
                           const float *bias, const float *residual, int32_t activation, float *out,
                           void *workspace);
/* out = activation(conv2d + bias + residual): a residual connection's add (and the relu after it) in the
 * convolution's epilogue, while each output tile is still in registers. residual has out's shape and
 * must not overlap out (partial sums of a long reduction land in out first); same scratch. */
int32_t ck_conv2d_prepacked_add(const ck_conv2d_params *p, const float *data, const float *packed_weight,
                                const float *bias, const float *residual, int32_t activation, float *out,
                                void *workspace);

/* ---- elementwise (ck_elementwise.c) ----------------------------------------------------------- */
typedef enum {
  CK_ADD = 0, CK_SUBTRACT = 1, CK_MULTIPLY = 2, CK_DIVIDE = 3, CK_MAXIMUM = 4, CK_MINIMUM = 5
} ck_binary_op;

/* out = lhs (op) rhs with numpy broadcasting. Shapes are right-aligned: lhs_shape has lhs_ndim
 * dims, rhs_shape rhs_ndim, out_shape out_ndim (>= both; every dim equal or 1 in the inputs).
 * Rank 0 (scalar) is fine. out may alias an input of the same shape. */
int32_t ck_binary(int32_t op, const float *lhs, int32_t lhs_ndim, const int64_t *lhs_shape,
                  const float *rhs, int32_t rhs_ndim, const int64_t *rhs_shape,
                  float *out, int32_t out_ndim, const int64_t *out_shape);

typedef enum {
  CK_NEGATIVE = 0, CK_ABS = 1, CK_EXP = 2, CK_LOG = 3, CK_SQRT = 4, CK_TANH = 5, CK_SIGMOID = 6,
  CK_RELU = 7, CK_CLIP = 8, CK_LEAKY_RELU = 9
} ck_unary_op;

/* out[i] = f(in[i]) for n elements; p0/p1 are clip's a_min/a_max, leaky_relu's alpha in p0.
 * out may alias in. */
int32_t ck_unary(int32_t op, int64_t n, const float *in, float *out, float p0, float p1);

/* nn.bias_add on any axis: data viewed as [outer, channels, inner]. out may alias data. */
int32_t ck_bias_add(int64_t outer, int64_t channels, int64_t inner, const float *data,
                    const float *bias, float *out);

/* nn.batch_norm (inference), element 0 of its tuple: data viewed as [outer, channels, inner];
 * out = (x - mean) / sqrt(var + epsilon) * gamma + beta (gamma unused unless scale, beta unless
 * center). out may alias data. */
int32_t ck_batch_norm(int64_t outer, int64_t channels, int64_t inner, const float *data,
                      const float *gamma, const float *beta, const float *mean, const float *var,
                      float epsilon, int32_t center, int32_t scale, float *out);

/* ---- pooling (ck_pool.c) ----------------------------------------------------------------------
 * ceil_mode: out = ceil((in + pads - dilation*(k-1) - 1)/stride) + 1, minus one when the last
 * window would start in the trailing padding. Padding never wins a max; avg divides by the
 * number of input elements in the window, or with count_include_pad by the positions inside
 * input + padding (never the ceil-mode overhang). */
typedef struct {
  int64_t batch, channels, height, width;
  int64_t pool_h, pool_w;
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t dilation_h, dilation_w;
  int32_t ceil_mode;
  int32_t count_include_pad; /* avg only */
} ck_pool2d_params;

int32_t ck_pool2d_output_hw(const ck_pool2d_params *p, int64_t *out_h, int64_t *out_w);
int32_t ck_max_pool2d(const ck_pool2d_params *p, const float *data, float *out);
int32_t ck_avg_pool2d(const ck_pool2d_params *p, const float *data, float *out);
/* data [batch*channels planes of plane elements] -> out [batch*channels] means. */
int32_t ck_global_avg_pool2d(int64_t planes, int64_t plane, const float *data, float *out);

/* ---- shape ops (ck_shape.c) ------------------------------------------------------------------- */
/* reshape and friends: a copy of n elements (no-op when out == in). */
int32_t ck_copy(int64_t n, const float *in, float *out);
/* out = in.transpose(axes): out_shape[i] = in_shape[axes[i]]. */
int32_t ck_transpose(int32_t ndim, const int64_t *in_shape, const int32_t *axes, const float *in,
                     float *out);
/* concatenate along an axis: input i viewed as [outer, sizes[i], inner]; out [outer, sum, inner]. */
int32_t ck_concatenate(int32_t num_inputs, const float *const *inputs, const int64_t *sizes,
                       int64_t outer, int64_t inner, float *out);

#ifdef __cplusplus
}
#endif

#include "ck_transformer.h"   /* batched matmul, softmax, layer norm, gelu */
#include "ck_reduce.h"        /* sum, mean, max, min, prod over any axes */
#include "ck_resize.h"        /* nearest and linear resampling (ONNX Resize) */
#include "ck_qnn.h"           /* int8/uint8: quantized conv2d, dense, add, quantize, pools */
#include "ck_activation.h"    /* hard sigmoid, hard swish */

#endif /* BYOC_CK_H_ */
