/* ck_internal.h - what the library's sources share and callers never see. */
#ifndef BYOC_CK_INTERNAL_H_
#define BYOC_CK_INTERNAL_H_

/* The library's loops need gcc's -O3 whatever the build's level: complete unrolling keeps a tile's sums in
 * registers, and loops with a tail (the 3x3 depthwise rows, hard swish, the elementwise rows) vectorize only
 * past -O2's very cheap cost model. At the default -O2 a gcc build ran mobilenetv2 2.5-3.5x and
 * efficientnet_lite 1.5-2.2x slower than at -O3 at one thread (perf: the depthwise rows and hard swish
 * scalar). The same operations per element either way, so the same bits. Not at -O0 (sanitizer builds) or
 * -Os (size). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && !defined(__OPTIMIZE_SIZE__)
#pragma GCC optimize("O3")
#endif

#include "byoc_ck.h"
#include "byoc/parallel.h" /* the runtime's pool (its include directory is on every compile of a model) */

/* Register tile of the micro-kernel built for the compiler's own target flags (the "baseline"),
 * picked from the vector registers it may use: 32 x 512-bit (AVX-512) hold 8x32 floats,
 * 16 x 256-bit (AVX) or 32 x 128-bit (NEON) 6x16, 16 x 128-bit (SSE2, the x86-64 default) 4x8.
 * On x86-64 with gcc/clang, ck_microkernel.c also builds AVX2 and AVX-512 tiles and picks the
 * best one the CPU runs (ck_gemm_kernel_name). Tiles change with the CPU, so workspace sizes
 * never depend on them: the block sizes below are multiples of every tile (the quanta). */
#if defined(CK_MR) && defined(CK_NR)
/* set on the command line (block-size experiments) */
#elif defined(__AVX512F__)
#define CK_MR 8
#define CK_NR 32
#elif defined(__AVX__) || defined(__aarch64__)
#define CK_MR 6
#define CK_NR 16
#else /* SSE2 (x86-64's default) and the rest: 4x8 leaves room for SSE's two-operand temporaries */
#define CK_MR 4
#define CK_NR 8
#endif
#define CK_MR_MAX 8  /* largest tile of any kernel's mr (the tall tiles write no local tile) */
#define CK_NR_MAX 32

#define CK_M_QUANTUM 24 /* multiple of every CK_MR */
#define CK_N_QUANTUM 32 /* multiple of every CK_NR */
#if CK_M_QUANTUM % CK_MR != 0 || CK_N_QUANTUM % CK_NR != 0 || CK_MR > CK_MR_MAX || CK_NR > CK_NR_MAX || CK_NR % 2
#error "CK_MR x CK_NR must divide the workspace quanta (24 x 32), with an even CK_NR"
#endif

/* Cache blocks: an MC x KC block of A stays in L2, a KC x NR sliver of B in L1,
 * a KC x NC block of B in L3. */
#define CK_MC 96
#define CK_KC 256
#define CK_ALIGN 64

/* ISO mode (-std=c99) turns GCC's FMA contraction off; the hot loops ask for it back. */
#if defined(__GNUC__) && !defined(__clang__)
#define CK_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define CK_CONTRACT
#endif

/* GCC keeps a float compare in a loop as a branch (it might trap) unless told FP traps are not
 * observed; the values are the same either way, and loops with compare-and-select vectorize. */
#if defined(__GNUC__) && !defined(__clang__)
#define CK_NO_TRAPS __attribute__((optimize("no-trapping-math")))
#else
#define CK_NO_TRAPS
#endif

/* fmaf is one instruction only where the hardware has FMA; elsewhere it is a slow libm call. */
#if defined(__FMA__) || defined(__aarch64__)
#include <math.h>
#define CK_FMA(a, b, c) fmaf((a), (b), (c))
#else
#define CK_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* sum of x[0 .. n) in double, four lanes: an explicit order the compiler may vectorize without
 * reassociating (reductions and the transformer rows share it, so both round alike). */
static inline double ck_sum_f64(const float *x, int64_t n) {
  double s[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s[0] += (double)x[i];
    s[1] += (double)x[i + 1];
    s[2] += (double)x[i + 2];
    s[3] += (double)x[i + 3];
  }
  for (; i < n; ++i) s[0] += (double)x[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

/* B[k, n] read through an implicit im2col of one image and one group of a conv2d. */
typedef struct {
  const float *data; /* [channels_in_group, height, width] */
  int64_t height, width, kernel_h, kernel_w;
  int64_t stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  int64_t out_w;
  /* NULL, or a zero-bordered copy of data ([channels_in_group, padded_h, padded_w] with the padding
   * inside, padded_plane = padded_h * padded_w floats apart): then every tap of every pixel lies in
   * it and the packing reads it without bounds checks. */
  const float *padded;
  int64_t padded_w, padded_plane;
} ck_conv_view;

/* The B operand of the gemm core: a strided matrix, a conv view when conv != NULL, or B already
 * packed (packed != NULL, by ck_gemm_pack_b: a constant weight packed once) whose slivers the
 * micro-kernels read where they lie, with no copy. */
typedef struct {
  const float *base;
  int64_t row_stride, col_stride;
  const ck_conv_view *conv;
  const float *packed;
} ck_b_source;

/* C[mr][nr] = sum over kc of the packed slivers' outer products, one fused multiply-add chain per element
 * that starts from 0, or when accumulate goes on from C (so how K is cut into blocks never changes the bits)
 * (A sliver: mr floats per k, `as` floats apart, as >= mr; B sliver: nr floats per k, `bs` floats
 * apart, bs >= nr; C row stride ldc, unit column stride). as == mr and bs == nr for slivers packed
 * per call; as == CK_M_QUANTUM for weights packed ahead as A (conv2d), bs == CK_N_QUANTUM for B
 * packed ahead (dense/matmul weights: a kernel narrower than 32 reads part of each packed row).
 * Then, before the store, + row_bias[i] per row (unless NULL), + residual[i * ldc + j] (unless NULL: a
 * tile of the same shape and row stride as C) and the activation (conv2d's fused epilogue on the tile
 * still in registers). */
typedef void (*ck_micro_fn)(int64_t kc, const float *ap, int64_t as, const float *bp, int64_t bs, float *c,
                            int64_t ldc, int accumulate, const float *row_bias, const float *residual,
                            int32_t activation);
/* c[j] = a . b[j * cs .. j * cs + k) for j < n: batch-1 dense, rows of the weight read once. */
typedef void (*ck_gemv_dot_fn)(int64_t n, int64_t k, const float *a, const float *b, int64_t cs, float *c);
/* One output row of a 3x3 depthwise convolution, all taps inside the input:
 * out[x] = activation(bias + sum over (i, j) of w[3i + j] * rows[i](stride * x + j)), x < n, where
 * rows[i](c) is r_i[c] for stride 1 (odd == 0), and for stride 2 r_i[c / 2] for even c and
 * r_i[odd + c / 2] for odd c (rows stored as their even columns, then their odd ones). */
typedef void (*ck_dw3x3_row_fn)(int64_t n, int64_t odd, const float *r0, const float *r1, const float *r2,
                                const float *w, float bias, int32_t activation, float *out);
/* Pixel-major tile, for convolutions whose output planes are small (7x7, 14x14): C'[i][j] = sum over kc of
 * a_p[i] * wp[p * CK_M_QUANTUM + j] (a chain from 0, or from C' when accumulate, as in ck_micro_fn)
 * (the second sliver of the wide tile ws floats after wp) for CK_PM_MR pixels i and
 * the CK_M_QUANTUM output channels j of one sliver of a packed conv2d weight (ck_pack_a_ahead) read as
 * it is; a_p = ap + p * as when aoff == NULL: packed pixel slivers (as == CK_PM_MR) or a 1x1 convolution's
 * input itself (as: the plane); else a_p = ap + aoff[p]: seven neighbouring pixels of one row of the
 * zero-bordered input copy, aoff[p] the offset of tap p (channel, kh, kw) in it (no packing at all);
 * C' is pixels x channels, row stride ldc. Seven pixels tile 7x7, 14x14, 28x28... planes exactly,
 * where 32-pixel slivers waste up to a quarter of the work. */
#define CK_PM_MR 7
#define CK_PM_MAX_PIXELS 1024 /* larger planes: the channel-major tiles */
#define CK_PM_MAX_OFFSET_PIXELS 4096 /* the same where the tiles read the bordered input in place (up to 64x64) */
#define CK_PM_REDUCE_PIXELS 196 /* 1x1 convolutions that reduce channels, read in place (ck_conv2d.c) */
typedef void (*ck_pm_fn)(int64_t kc, const float *ap, int64_t as, const int64_t *aoff, const float *wp, int64_t ws,
                         float *c, int64_t ldc, int accumulate);
typedef struct {
  const char *name;
  int32_t mr, nr;
  ck_micro_fn run;
  ck_micro_fn run_half;    /* mr x nr/2 on nr/2-wide slivers, for a narrow last sliver; NULL: none */
  ck_gemv_dot_fn gemv_dot; /* same vector width */
  ck_dw3x3_row_fn dw3x3_row; /* same instruction set */
  ck_pm_fn pixel_major;      /* NULL: none (then small planes run the channel-major tiles) */
  ck_pm_fn pixel_major_wide; /* the same on two slivers (48 channels), the second ws floats after wp, with the
                              * same bits; NULL: none (pixel_major only) */
  /* the same on the first 16 or 32 channels of two slivers (channels <= 16: the first sliver alone is read;
   * otherwise the second's first 8 channels too), with the same bits; NULL: none (with pixel_major_wide) */
  ck_pm_fn (*pixel_major_part)(int32_t channels);
  int (*cpu_has)(void); /* NULL: always available */
  /* on A packed ahead (24-row slivers, as == CK_M_QUANTUM) only, NULL: none: CK_MR_TALL x nr (two per 24-row sliver)
   * and 24 x nr/2 (a whole sliver on a narrow last sliver of B), with the same bits as the mr-row tiles */
  ck_micro_fn run_tall;
  ck_micro_fn run_half_tall;
} ck_micro_kernel;
#define CK_MR_TALL 12

/* The kernel in use (chosen on first call). */
const ck_micro_kernel *ck_micro_kernel_current(void);
/* The instruction set the kernel in use was checked for, for the loops that follow it (depthwise windows,
 * activations): CK_ISA_AVX512, CK_ISA_AVX2 or CK_ISA_BASELINE (what the compiler flags allow). */
enum { CK_ISA_BASELINE = 0, CK_ISA_AVX2 = 1, CK_ISA_AVX512 = 2 };
int32_t ck_micro_kernel_isa(void);

/* a_packed: NULL, or A already packed by ck_pack_a_ahead (then a and its strides are unused).
 * residual: NULL, or an m x n matrix (row stride ldc, not aliasing c) added after the epilogue's bias,
 * before its activation. */
int32_t ck_gemm_core(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_row_stride,
                     int64_t a_col_stride, const float *a_packed, const ck_b_source *b, float *c, int64_t ldc,
                     const ck_epilogue *epilogue, const float *residual, void *workspace);

/* A [m, k] (row-major, row stride lda) packed once for every micro-kernel: per K block of CK_KC
 * (the last one shorter), CK_M_QUANTUM-row slivers, each kc x CK_M_QUANTUM (k-major, zero rows past
 * m). Block at k offset pc starts at pc * round_up(m, CK_M_QUANTUM); round_up(m, 24) * k floats. */
void ck_pack_a_ahead(int64_t m, int64_t k, const float *a, int64_t lda, float *packed);

/* B[k, n] (element strides rs, cs) packed once for every micro-kernel: per K block of CK_KC (the last
 * one shorter), CK_N_QUANTUM-column slivers, each kc x CK_N_QUANTUM (k-major, zero columns past n).
 * Block at k offset pc starts at pc * round_up(n, CK_N_QUANTUM); round_up(n, 32) * k floats. The
 * mirror image of ck_pack_a_ahead; ck_gemm_pack_b (byoc_ck.h) is its checked public face. */
void ck_pack_b_ahead(int64_t n, int64_t k, const float *b, int64_t rs, int64_t cs, float *packed);

/* B[pc .. pc+kc, j0 .. j0+nc] of a strided or conv source (not a packed one) -> nr-wide slivers
 * (kc x nr, k-major), zero columns past n_total and past the last sliver's end. */
void ck_pack_b(const ck_b_source *b, int64_t pc, int64_t kc, int64_t j0, int64_t nc, int64_t n_total, int64_t nr,
               float *dst);

/* out[0 .. n) = activation(out[0 .. n)) (any ck_activation but NONE; no-op for NONE). */
void ck_activate(int32_t activation, int64_t n, float *out);
#define CK_VALID_ACTIVATION(a) ((a) == CK_ACT_NONE || (a) == CK_ACT_RELU || (a) == CK_ACT_RELU6)

/* fn(ctx, begin, end) over ranges of `grain` items covering [0, n), in parallel (ck_parallel.c): for
 * kernels whose items (elements, rows, planes) are independent. */
typedef void (*ck_range_fn)(void *ctx, int64_t begin, int64_t end);
void ck_parallel_range(int64_t n, int64_t grain, ck_range_fn fn, void *ctx);
/* Items of item_floats floats per range: about CK_GRAIN_FLOATS floats (64 KiB: enough work to pay for a
 * task, and a multiple of 16 floats, so ranges of elements start on cache lines). */
#define CK_GRAIN_FLOATS 16384
int64_t ck_grain(int64_t item_floats);

#endif /* BYOC_CK_INTERNAL_H_ */
