/* ck_qnn.h - the kernel library's int8/uint8 functions (included by byoc_ck.h).
 *
 * Quantized tensors are int8 or uint8 (a `*_signed` flag says which; the data pointers are void*),
 * row-major, NCHW for convolutions. Arithmetic follows byoc's qnn ops bit for bit:
 *   - conv2d / dense: exact int32 sums of (x - x_zp) * w (weights int8, zero point 0);
 *   - requantization (byoc's rounding="float32", onnxruntime's): float32(acc + bias) * scale[o],
 *     the product rounded to float32, then to the nearest integer (ties to even), + output zero
 *     point, clamped to [out_min, out_max] (the output type's range, narrowed by a fused relu/clip);
 *     or TFLite's rounding="tflite" (ck_qparams.rounding 1): an int32 multiplier and exponent per channel.
 * Weights are packed once, ahead of the call (at codegen time; ck_q*_pack_weight is the reference
 * of the layout), with the input zero point folded into the bias:
 *   bias[o] = conv bias[o] - x_zp * sum_k w[o, k] - requantize input zero point.
 * The int8 x uint8 products run on AMX (tdpbsud, 32 x 32 blocks) where the CPU has it and Linux grants
 * the tile state, on AVX512-VNNI (vpdpbusd) where the CPU has that (chosen at run time), on portable C
 * elsewhere: the same exact int32 sums on every path; int8 inputs are offset by 128 into uint8 while packed, which the
 * folded bias already accounts for. */
#ifndef BYOC_CK_QNN_H_
#define BYOC_CK_QNN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Packed weights: rows padded to CK_QMR output channels; B panels: CK_QNR columns. */
#define CK_QMR 8
#define CK_QNR 32

typedef struct {
  int32_t input_signed, output_signed; /* 1: int8, 0: uint8 */
  int32_t input_zero_point, output_zero_point;
  int32_t out_min, out_max;            /* output clamp, within the output type */
  /* 0: byoc's rounding="float32" (onnxruntime's), the `scale` argument float32 per output channel;
   * 1: TFLite's (rounding="tflite"): the `scale` argument points to int32 pairs (multiplier M, exponent e)
   * per output channel, read through that pointer, and acc + bias becomes
   * MultiplyByQuantizedMultiplier(acc + bias, M, e): x << max(e, 0), the saturating rounding doubling
   * high multiply by M, a rounding right shift by max(-e, 0) (TFLite's double rounding) */
  int32_t rounding;
} ck_qparams;

typedef struct {
  ck_conv2d_params conv; /* geometry (as ck_conv2d) */
  ck_qparams q;
  /* Output pixels per im2col chunk (rounded up to a multiple of CK_QNR; the same results whatever it
   * is): 0 copies the whole output image's im2col into the workspace at once, n > 0 bounds that scratch
   * to n columns (a microcontroller's: ResNet-8's 3x3 16-channel conv at 32x32 needs 147 KB whole, 4.6 KB
   * in chunks of 32). Unused by depthwise and 1x1 stride-1 unpadded convolutions, which need no im2col. */
  int64_t im2col_columns;
  /* 1: a stride-1 3x3 convolution of one group and at most 1024 input channels by Winograd F(2x2, 3x3), on the
   * weight ck_qconv2d_pack_weight transforms (int16, 16/9 x 2 of the int8 weight's bytes) and a larger scratch;
   * the same bytes out (ck_qwinograd.c). For CPUs without an int8 dot product: the codegen asks for it on
   * hosted builds made on one (qkernels.winograd). */
  int32_t winograd;
  /* 1: the packed weight is split into pair-safe weights and a correction table (ck_qconv2d_pack_weight), so that
   * CPUs without an int8 dot product sum two uint8 x int8 products in int16 (vpmaddubsw) without saturating:
   * the same bytes out. Not with winograd, not for depthwise convolutions, only with im2col_columns <= 0. The
   * codegen asks for it where the toolchain's CPU has AVX2 and no int8 dot product (qkernels.pairs). */
  int32_t pairs;
  /* NULL, or (with .pairs = 1, a 1x1 kernel and one group) the order of the input channels along the GEMM's depth:
   * the k-th channel it reads is channel_order[k], a permutation of [0, channels). The pairs of k that
   * vpmaddubsw sums are then pairs of channels the codegen chose so that fewer of a row's weight pairs need a
   * correction (qkernels.pair_channel_order); ck_qconv2d_pack_weight packs weight[o][channel_order[k]] at k. The
   * same bytes out. */
  const int32_t *channel_order;
  /* 1: a convolution of one group, byoc's float32 rounding (q.rounding 0), hosted (im2col_columns <= 0), neither
   * winograd nor pairs: summed directly over a channels-last copy of the input with the output channels in the
   * vector lanes (ck_qdirect.c), on the weight ck_qconv2d_pack_weight lays out for it: per block of 64 output
   * channels (zeros past the last), per tap (row-major), per 4 input channels (zeros past the last), 64 x 4 bytes,
   * output channel-major. For CPUs with AVX512-VNNI and no AMX: the codegen asks for it on builds made on one
   * (qkernels.channels_last). The same bytes out. Bits added to the 1: 2, the input tensor is laid out
   * channels-last ([batch][row][column][channel]) instead of NCHW; 4, the output (and ck_qconv2d_add's residual) is.
   * The codegen keeps a tensor channels-last between two such convolutions (channels_last_layout.py). 2 alone, on a
   * depthwise convolution whose window is its whole unpadded plane with rounding 0 (the global average pool the
   * importer writes so): its input is channels-last (its output, one value per channel, is the same either way). */
  int32_t channels_last;
} ck_qconv2d_params;

/* Bytes of the packed weight: per group, round_up(out_channels/groups, CK_QMR) * round_up(K, 4)
 * (K = channels/groups * kernel_h * kernel_w), stored row-major: each output channel's K weights, zeros
 * up to round_up(K, 4), zero rows up to a multiple of CK_QMR; then 64 bytes of zeros (the AMX kernel's
 * last k-block reads up to 64 bytes past a row). Depthwise convolutions (one input and one output channel
 * per group) read the weight as it is: 0.
 * With .pairs = 1 the rows hold pair-safe weights: in each pair of k (0-1, 2-3 of a 4-k step) of the same sign
 * whose sum passes +-128, the larger magnitude is reduced to bring the sum to +-128 (255 * 128 fits int16), and
 * a correction table follows, little-endian int32: row_start[rows + 1] (rows = groups * round_up(og, CK_QMR),
 * index into the entries), then per entry (by row, then k-step) k-step << 3 | row % 8 and the 4 bytes (int8)
 * taken from that step's weights.
 * Its size depends on the weights: ck_qconv2d_packed_weight_bytes gives the most it can take, the pack's own
 * size is row_start[rows] * 8 past the table's start (qkernels.pack_weight_pairs mirrors it). */
size_t ck_qconv2d_packed_weight_bytes(const ck_qconv2d_params *p);
int32_t ck_qconv2d_pack_weight(const ck_qconv2d_params *p, const int8_t *weight, int8_t *packed);
size_t ck_qconv2d_workspace_bytes(const ck_qconv2d_params *p);
/* qnn.conv2d + bias + qnn.requantize (+ relu/clip): out = requant(conv(data, weight) + bias).
 * weight: packed (or, for depthwise, OIHW as is); bias, scale: one per output channel. */
int32_t ck_qconv2d(const ck_qconv2d_params *p, const void *data, const int8_t *weight, const int32_t *bias,
                   const float *scale, void *out, void *workspace);

typedef struct {
  int64_t batch, units, depth; /* data [batch, depth], weight [units, depth], out [batch, units] */
  ck_qparams q;
  /* batch <= direct_rows: one dot product per output over the packed weight, no B panel and no workspace
   * (the same sums and requantization: a microcontroller's dense, where a 32-column panel for one row
   * is 32x the input, and a hosted batch of one, in tasks of units); otherwise the GEMM core. */
  int64_t direct_rows;
} ck_qdense_params;

size_t ck_qdense_packed_weight_bytes(const ck_qdense_params *p);
int32_t ck_qdense_pack_weight(const ck_qdense_params *p, const int8_t *weight, int8_t *packed);
size_t ck_qdense_workspace_bytes(const ck_qdense_params *p);
/* qnn.dense + bias + qnn.requantize (+ relu/clip), the weight packed (as a 1x1 conv's). */
int32_t ck_qdense(const ck_qdense_params *p, const void *data, const int8_t *packed_weight, const int32_t *bias,
                  const float *scale, void *out, void *workspace);

/* qnn.add of two same-shape tensors. rounding 0 (float32, onnxruntime's x86 kernel):
 * round_half_even(fmaf(a, ratio_a, fmaf(b, ratio_b, fixed))); rounding 1 (fixed point):
 * round_half_even(((a - za) * ma + (b - zb) * mb) / 2**shift) + zo; rounding 2 (TFLite's ADD): both inputs
 * minus their zero points shifted left by left_shift, each rescaled by MultiplyByQuantizedMultiplier with
 * (tfl_mult[i], tfl_exp[i]), summed, rescaled by (tfl_mult[2], tfl_exp[2]), + zo; all saturate. */
typedef struct {
  int32_t is_signed, rounding;
  float ratio_a, ratio_b, fixed;
  int32_t lhs_zero_point, rhs_zero_point, output_zero_point;
  int64_t mult_a, mult_b;
  int32_t shift;
  int32_t left_shift, tfl_mult[3], tfl_exp[3];
} ck_qadd_params;

int32_t ck_qadd(const ck_qadd_params *p, int64_t n, const void *lhs, const void *rhs, void *out);

/* A residual add in a convolution's epilogue: ck_qconv2d, then ck_qadd(add, conv output, residual) (or, conv_is_rhs,
 * ck_qadd(add, residual, conv output)) over out, the same bytes as the two calls; each GEMM task adds its own part
 * of the output right after computing it, while it is in cache (ResNet's block ends, MobileNetV2's inverted
 * residuals: no second pass over the tensor, no second parallel call). residual: the output's shape, not out. */
int32_t ck_qconv2d_add(const ck_qconv2d_params *p, const ck_qadd_params *add, int32_t conv_is_rhs, const void *data,
                       const int8_t *weight, const int32_t *bias, const float *scale, const void *residual, void *out,
                       void *workspace);

/* A QDQ residual add in one pass, no float32 tensor in memory: out = quantize(act(dequantize(lhs) +
 * dequantize(rhs))) with the float32 operations of ck_dequantize, a float add and ck_quantize (so
 * bit-identical to them run one after another); act: relu when `relu` is 1. Per-tensor parameters.
 * out may alias lhs or rhs. */
typedef struct {
  int32_t lhs_signed, rhs_signed, out_signed, relu;
  float lhs_scale, rhs_scale, out_scale;
  int32_t lhs_zero_point, rhs_zero_point, out_zero_point;
} ck_qdq_add_params;

int32_t ck_qdq_add(const ck_qdq_add_params *p, int64_t n, const void *lhs, const void *rhs, void *out);

/* qnn.quantize: data viewed as [outer, channels, inner], scale/zero_point[channels] (1 per tensor:
 * channels = 1): saturate(round_half_even(x / scale) + zero_point), NaN -> 0. */
int32_t ck_quantize(int64_t outer, int64_t channels, int64_t inner, const float *in, const float *scale,
                    const int32_t *zero_point, int32_t out_signed, void *out);
/* qnn.dequantize: float32(x - zero_point) * scale. */
int32_t ck_dequantize(int64_t outer, int64_t channels, int64_t inner, const void *in, int32_t in_signed,
                      const float *scale, const int32_t *zero_point, float *out);
/* relu / clip on int8 or uint8: out = min(max(x, lo), hi). out may alias in. */
int32_t ck_qclamp(int64_t n, int32_t is_signed, const void *in, void *out, int32_t lo, int32_t hi);
/* nn.max_pool2d on int8 or uint8 (padding never wins). */
int32_t ck_qmax_pool2d(const ck_pool2d_params *p, int32_t is_signed, const void *data, void *out);

/* Name of the int8 GEMM kernel in use ("amx-int8-32x32", "avx512vnni-8x32", "avx2-8x32" or "portable-8x32"); ck_qgemm_use_kernel
 * forces one (tests, benchmarks; CK_EBADPARAM if unknown or this CPU cannot run it). */
const char *ck_qgemm_kernel_name(void);
int32_t ck_qgemm_use_kernel(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* BYOC_CK_QNN_H_ */
