/* ck_microkernel.c - the register-tiled micro-kernels of the gemm core (and the batch-1 dense
 * dot kernel of the same vector width), and which ones run.
 *
 * A micro-kernel keeps an MR x NR tile of C in registers for a whole K block and reads the two
 * packed slivers with unit stride. With gcc/clang it is written with generic vectors (each tile
 * row = two vectors; not intrinsics, they lower to whatever SIMD the target has). On x86-64 the
 * same source is also compiled for AVX2+FMA and AVX-512 through function target attributes and
 * chosen from the CPU at run time, so a plain `-O3` build runs at the speed of the machine.
 */
#include <float.h>
#include <string.h>

#include "ck_internal.h"

/* One output row of a 3x3 depthwise convolution: plain loops over x that the compiler vectorizes
 * (one pass, nine taps in registers). Stride 2 reads rows split into even and odd columns (the odd
 * ones `odd` floats on), so every load is unit-stride too. */
#define CK_DEFINE_DW3X3_ROW(NAME)                                                                     \
  static void NAME(int64_t n, int64_t odd, const float *restrict r0, const float *restrict r1,        \
                   const float *restrict r2, const float *restrict w, float bias, int32_t activation,  \
                   float *restrict out) {                                                          \
    const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7], \
                w8 = w[8];                                                                          \
    int64_t x;                                                                                      \
    if (odd == 0) {                                                                                 \
      for (x = 0; x < n; ++x)                                                                       \
        out[x] = bias + w0 * r0[x] + w1 * r0[x + 1] + w2 * r0[x + 2] + w3 * r1[x] + w4 * r1[x + 1] +  \
                 w5 * r1[x + 2] + w6 * r2[x] + w7 * r2[x + 1] + w8 * r2[x + 2];                      \
    } else {                                                                                        \
      const float *restrict o0 = r0 + odd, *restrict o1 = r1 + odd, *restrict o2 = r2 + odd;         \
      for (x = 0; x < n; ++x)                                                                       \
        out[x] = bias + w0 * r0[x] + w1 * o0[x] + w2 * r0[x + 1] + w3 * r1[x] + w4 * o1[x] +          \
                 w5 * r1[x + 1] + w6 * r2[x] + w7 * o2[x] + w8 * r2[x + 1];                         \
    }                                                                                               \
    if (activation == CK_ACT_RELU) {                                                                \
      for (x = 0; x < n; ++x) out[x] = out[x] > 0.0f ? out[x] : 0.0f;                               \
    } else if (activation == CK_ACT_RELU6) {                                                        \
      for (x = 0; x < n; ++x) {                                                                     \
        const float v = out[x] < 0.0f ? 0.0f : out[x];                                              \
        out[x] = v > 6.0f ? 6.0f : v;                                                               \
      }                                                                                             \
    }                                                                                               \
  }

CK_CONTRACT CK_DEFINE_DW3X3_ROW(ck_dw3x3_baseline)

#if defined(__GNUC__)
/* A vector of copies of one float. Scalar-times-vector splats by itself, but where float math
 * runs in double (FLT_EVAL_METHOD != 0, e.g. s390x in ISO mode) that conversion would be a
 * narrowing one, so fill the lanes instead. */
#if FLT_EVAL_METHOD == 0
#define CK_SPLAT(VEC, VF, NAME, VALUE) const VEC NAME = (VALUE) - (VEC){0} /* x - 0 == x, even -0 */
#else
#define CK_SPLAT(VEC, VF, NAME, VALUE) \
  VEC NAME;                            \
  do {                                 \
    int lane_;                         \
    for (lane_ = 0; lane_ < (VF); ++lane_) NAME[lane_] = (VALUE); \
  } while (0)
#endif

/* The row loops unrolled whole, so the accumulators stay in registers (gcc's own limit stops short of 24 rows). */
#if defined(__clang__)
#define CK_UNROLL _Pragma("unroll")
#else
#define CK_UNROLL _Pragma("GCC unroll 32")
#endif
/* MR rows x NV vectors of VF lanes (2 for the tiles of the table's mr x nr, 1 for the 24-row half-width tile). */
#define CK_DEFINE_MICRO_KERNEL_NV(NAME, MR, VF, NV)                                                 \
  static void NAME(int64_t kc, const float *restrict ap, int64_t as, const float *restrict bp,       \
                   int64_t bs, float *restrict c, int64_t ldc, int accumulate,                      \
                   const float *restrict row_bias,                                                  \
                   const float *restrict residual, int32_t activation) {                           \
    typedef float vec __attribute__((vector_size((VF) * sizeof(float))));                          \
    typedef int32_t ivec __attribute__((vector_size((VF) * sizeof(float))));                       \
    vec acc[MR][NV];                                                                                \
    int64_t p;                                                                                      \
    int i, v;                                                                                       \
    CK_UNROLL for (i = 0; i < (MR); ++i)                                                            \
      for (v = 0; v < (NV); ++v) {                                                                  \
        acc[i][v] = (vec){0};                                                                       \
        /* the chain goes on from C: the K blocking never changes the sums */                       \
        if (accumulate) memcpy(&acc[i][v], c + i * ldc + v * (VF), sizeof acc[i][v]);               \
      }                                                                                             \
    for (p = 0; p < kc; ++p) {                                                                      \
      vec b[NV];                                                                                    \
      for (v = 0; v < (NV); ++v) memcpy(&b[v], bp + p * bs + v * (VF), sizeof b[v]);                \
      CK_UNROLL for (i = 0; i < (MR); ++i) {                                                        \
        CK_SPLAT(vec, VF, ai, ap[p * as + i]);                                                      \
        for (v = 0; v < (NV); ++v) acc[i][v] = acc[i][v] + ai * b[v];                               \
      }                                                                                             \
    }                                                                                               \
    CK_UNROLL for (i = 0; i < (MR); ++i) {                                                          \
      float *row = c + i * ldc;                                                                     \
      if (row_bias != NULL) {                                                                       \
        CK_SPLAT(vec, VF, bi, row_bias[i]);                                                         \
        for (v = 0; v < (NV); ++v) acc[i][v] = acc[i][v] + bi;                                      \
      }                                                                                             \
      if (residual != NULL)                                                                         \
        for (v = 0; v < (NV); ++v) {                                                                \
          vec r;                                                                                    \
          memcpy(&r, residual + i * ldc + v * (VF), sizeof r);                                      \
          acc[i][v] = acc[i][v] + r;                                                                \
        }                                                                                           \
      if (activation != CK_ACT_NONE) {                                                              \
        for (v = 0; v < (NV); ++v) { /* ck_activate's rules, lane-wise: relu maps NaN to 0, relu6 keeps it */ \
          const vec zero = (vec){0};                                                                \
          if (activation == CK_ACT_RELU) {                                                          \
            acc[i][v] = (vec)((ivec)acc[i][v] & (acc[i][v] > zero));                                \
          } else {                                                                                  \
            CK_SPLAT(vec, VF, six, 6.0f);                                                           \
            const ivec high = acc[i][v] > six;                                                      \
            acc[i][v] = (vec)((ivec)acc[i][v] & ~(acc[i][v] < zero));                               \
            acc[i][v] = (vec)(((ivec)acc[i][v] & ~high) | ((ivec)six & high));                      \
          }                                                                                         \
        }                                                                                           \
      }                                                                                             \
      for (v = 0; v < (NV); ++v) memcpy(row + v * (VF), &acc[i][v], sizeof acc[i][v]);              \
    }                                                                                               \
  }
#define CK_DEFINE_MICRO_KERNEL(NAME, MR, VF) CK_DEFINE_MICRO_KERNEL_NV(NAME, MR, VF, 2)

/* The pixel-major tile (ck_pm_fn): MR pixel rows x NV vectors of VF channels (NV * VF == CK_M_QUANTUM,
 * one packed weight sliver read with unit stride), the pixel values broadcast. CK_DEFINE_PM_ROWS computes
 * rows [ROW0, ROW0 + ROWS) of such a tile alone: where 7 x 24 accumulators do not fit the vector registers
 * the tile is two passes over the taps. */
#define CK_PM_STEP(VEC, ROW0, MR, VF, NV, AT)                                                          \
  {                                                                                                 \
    VEC w[NV];                                                                                      \
    const float *restrict a_ = (AT);                                                                \
    CK_UNROLL for (v = 0; v < (NV); ++v) memcpy(&w[v], wp + p * (NV) * (VF) + v * (VF), sizeof w[v]); \
    CK_UNROLL for (i = 0; i < (MR); ++i) { /* (unrolled: 16 live vectors in 16 registers under AVX2) */ \
      CK_SPLAT(VEC, VF, ai, a_[(ROW0) + i]);                                                        \
      CK_UNROLL for (v = 0; v < (NV); ++v) acc[i][v] = acc[i][v] + ai * w[v];                       \
    }                                                                                               \
  }
#define CK_DEFINE_PM_ROWS(NAME, ROW0, MR, VF, NV)                                                     \
  static void NAME(int64_t kc, const float *restrict ap, int64_t as, const int64_t *restrict aoff,   \
                   const float *restrict wp, int64_t ws, float *restrict c, int64_t ldc,           \
                   int accumulate) {                                                               \
    typedef float vec __attribute__((vector_size((VF) * sizeof(float))));                          \
    vec acc[MR][NV];                                                                                \
    int64_t p;                                                                                      \
    int i, v;                                                                                       \
    (void)ws; /* one sliver */                                                                      \
    c += (ROW0) * ldc;                                                                              \
    CK_UNROLL for (i = 0; i < (MR); ++i)                                                            \
      for (v = 0; v < (NV); ++v) {                                                                  \
        acc[i][v] = (vec){0};                                                                       \
        if (accumulate) memcpy(&acc[i][v], c + i * ldc + v * (VF), sizeof acc[i][v]);               \
      }                                                                                             \
    if (aoff == NULL) {                                                                             \
      for (p = 0; p < kc; ++p) CK_PM_STEP(vec, ROW0, MR, VF, NV, ap + p * as)                        \
    } else {                                                                                        \
      for (p = 0; p < kc; ++p) CK_PM_STEP(vec, ROW0, MR, VF, NV, ap + aoff[p])                       \
    }                                                                                               \
    CK_UNROLL for (i = 0; i < (MR); ++i)                                                            \
      CK_UNROLL for (v = 0; v < (NV); ++v) memcpy(c + i * ldc + v * (VF), &acc[i][v], sizeof acc[i][v]); \
  }
#define CK_DEFINE_PM_KERNEL(NAME, MR, VF, NV) CK_DEFINE_PM_ROWS(NAME, 0, MR, VF, NV)

/* Dot products 4 weight rows at a time, vector partial sums added up once at the end
 * (independent lanes: no reassociation flags needed). */
#define CK_DEFINE_GEMV_DOT(NAME, VF)                                                                \
  static void NAME(int64_t n, int64_t k, const float *restrict a, const float *b, int64_t cs,      \
                   float *restrict c) {                                                            \
    typedef float vec __attribute__((vector_size((VF) * sizeof(float))));                          \
    int64_t j = 0, p, q;                                                                            \
    int r, l;                                                                                       \
    while (j < n) {                                                                                 \
      const int rows = n - j >= 4 ? 4 : 1; /* fixed trip counts keep acc in registers */           \
      vec acc[4][2];                                                                                \
      for (r = 0; r < 4; ++r) acc[r][0] = acc[r][1] = (vec){0};                                     \
      if (rows == 4) {                                                                              \
        for (p = 0; p + 2 * (VF) <= k; p += 2 * (VF)) {                                             \
          vec a0, a1;                                                                               \
          memcpy(&a0, a + p, sizeof a0);                                                            \
          memcpy(&a1, a + p + (VF), sizeof a1);                                                     \
          for (r = 0; r < 4; ++r) {                                                                 \
            vec b0, b1;                                                                             \
            memcpy(&b0, b + (j + r) * cs + p, sizeof b0);                                           \
            memcpy(&b1, b + (j + r) * cs + p + (VF), sizeof b1);                                    \
            acc[r][0] = acc[r][0] + a0 * b0;                                                        \
            acc[r][1] = acc[r][1] + a1 * b1;                                                        \
          }                                                                                         \
        }                                                                                           \
      } else {                                                                                      \
        for (p = 0; p + 2 * (VF) <= k; p += 2 * (VF)) {                                             \
          vec a0, a1, b0, b1;                                                                       \
          memcpy(&a0, a + p, sizeof a0);                                                            \
          memcpy(&a1, a + p + (VF), sizeof a1);                                                     \
          memcpy(&b0, b + j * cs + p, sizeof b0);                                                   \
          memcpy(&b1, b + j * cs + p + (VF), sizeof b1);                                            \
          acc[0][0] = acc[0][0] + a0 * b0;                                                          \
          acc[0][1] = acc[0][1] + a1 * b1;                                                          \
        }                                                                                           \
      }                                                                                             \
      for (r = 0; r < rows; ++r) {                                                                  \
        float lanes[VF], sum = 0.0f;                                                                \
        const vec total = acc[r][0] + acc[r][1];                                                    \
        memcpy(lanes, &total, sizeof lanes);                                                        \
        for (l = 0; l < (VF); ++l) sum += lanes[l];                                                 \
        for (q = p; q < k; ++q) sum += a[q] * b[(j + r) * cs + q];                                  \
        c[j + r] = sum;                                                                             \
      }                                                                                             \
      j += rows;                                                                                    \
    }                                                                                               \
  }

CK_CONTRACT CK_DEFINE_MICRO_KERNEL(ck_micro_baseline, CK_MR, CK_NR / 2)
CK_CONTRACT CK_DEFINE_GEMV_DOT(ck_gemv_baseline, CK_NR / 2)

#if defined(__x86_64__) && !defined(CK_NO_DISPATCH)
#define CK_DISPATCH 1
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_MICRO_KERNEL(ck_micro_avx2, 6, 8)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_MICRO_KERNEL(ck_micro_avx512, 8, 16)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_MICRO_KERNEL(ck_micro_avx2_half, 6, 4)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_MICRO_KERNEL(ck_micro_avx512_half, 8, 8)
/* Taller twins for a weight packed ahead in 24-row slivers (ck_gemm_tiles): 12 x 32 (24 accumulators, two B loads per
 * 24 FMAs where 8 x 32 has two per 16) and 24 x 16 for a narrow last sliver (24 accumulators: the 8 x 16 half tile has
 * 8, and ran at about half the full tile's rate). Each element is the same chain as on the 8-row tiles. */
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_MICRO_KERNEL(ck_micro_avx512_tall, 12, 16)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_MICRO_KERNEL_NV(ck_micro_avx512_half_tall, 24, 16, 1)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_GEMV_DOT(ck_gemv_avx2, 8)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_GEMV_DOT(ck_gemv_avx512, 16)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_DW3X3_ROW(ck_dw3x3_avx2)
__attribute__((target("avx512f,avx2,fma"))) CK_CONTRACT CK_DEFINE_DW3X3_ROW(ck_dw3x3_avx512)
/* 7 x 24 in 256-bit vectors: 21 accumulators need AVX-512VL's 32 vector registers */
__attribute__((target("avx512f,avx512vl,avx2,fma"))) CK_CONTRACT CK_DEFINE_PM_KERNEL(ck_pm_avx512, CK_PM_MR, 8, 3)
/* AVX2 has 16: pixels 0-3 then 4-6, 12 and 9 accumulators, the weight sliver read twice (from L1). Without it
 * AVX2 ran small planes on the channel-major tiles (49 pixels padded to 64, 3x3 windows packed by im2col):
 * `bench/kernels.py` on a Zen 3, one thread, against onnxruntime in the same turns: 3x3 512->512 on 7x7
 * 0.70 -> 0.91 of its speed, 3x3/2 512->512 on 14x14 0.74 -> 0.95, 1x1/2 256->128 on 56x56 0.81 -> 1.02. */
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_PM_ROWS(ck_pm_avx2_top, 0, 4, 8, 3)
__attribute__((target("avx2,fma"))) CK_CONTRACT CK_DEFINE_PM_ROWS(ck_pm_avx2_bottom, 4, CK_PM_MR - 4, 8, 3)
static void ck_pm_avx2(int64_t kc, const float *restrict ap, int64_t as, const int64_t *restrict aoff,
                       const float *restrict wp, int64_t ws, float *restrict c, int64_t ldc, int accumulate) {
  ck_pm_avx2_top(kc, ap, as, aoff, wp, ws, c, ldc, accumulate);
  ck_pm_avx2_bottom(kc, ap, as, aoff, wp, ws, c, ldc, accumulate);
}

/* dst (16 floats) = lo[0 .. 8) then hi[0 .. 8), joined in registers where the compiler can (through memory the
 * 512-bit load would wait on two 256-bit stores) */
#if defined(__clang__) || __GNUC__ >= 12
#define CK_LOAD_JOINED(dst, lo_at, hi_at)                                                            \
  {                                                                                                 \
    typedef float half_ __attribute__((vector_size(8 * sizeof(float))));                            \
    half_ lo_, hi_;                                                                                 \
    memcpy(&lo_, (lo_at), sizeof lo_);                                                              \
    memcpy(&hi_, (hi_at), sizeof hi_);                                                              \
    (dst) = __builtin_shufflevector(lo_, hi_, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); \
  }
#else
#define CK_LOAD_JOINED(dst, lo_at, hi_at)                   \
  {                                                        \
    memcpy(&(dst), (lo_at), sizeof(dst) / 2);              \
    memcpy((char *)&(dst) + sizeof(dst) / 2, (hi_at), sizeof(dst) / 2); \
  }
#endif

/* The wide pixel-major tile (ck_micro_kernel.pixel_major_wide): 7 pixels x 48 channels, two weight slivers
 * (the second ws floats after the first) in three 512-bit vectors, the middle one half of
 * each sliver: 21 accumulators of 16 lanes where the 7 x 24 tile has 21 of 8. Each lane sums the same
 * products in the same order as the narrow tile, so either gives the same bits. */
__attribute__((target("avx512f,avx512vl,avx2,fma"))) CK_CONTRACT static void ck_pm_wide_avx512(
    int64_t kc, const float *restrict ap, int64_t as, const int64_t *restrict aoff, const float *restrict wp,
    int64_t ws, float *restrict c, int64_t ldc, int accumulate) {
  typedef float vec __attribute__((vector_size(16 * sizeof(float))));
  const float *restrict wq = wp + ws;
  vec acc[CK_PM_MR][3];
  int64_t p;
  int i, v;
  for (i = 0; i < CK_PM_MR; ++i)
    for (v = 0; v < 3; ++v) {
      acc[i][v] = (vec){0};
      if (accumulate) memcpy(&acc[i][v], c + i * ldc + v * 16, sizeof acc[i][v]);
    }
  for (p = 0; p < kc; ++p) {
    const float *restrict a_ = aoff == NULL ? ap + p * as : ap + aoff[p];
    vec w[3];
    memcpy(&w[0], wp + p * CK_M_QUANTUM, sizeof w[0]);
    CK_LOAD_JOINED(w[1], wp + p * CK_M_QUANTUM + 16, wq + p * CK_M_QUANTUM)
    memcpy(&w[2], wq + p * CK_M_QUANTUM + 8, sizeof w[2]);
    for (i = 0; i < CK_PM_MR; ++i) {
      CK_SPLAT(vec, 16, ai, a_[i]);
      for (v = 0; v < 3; ++v) acc[i][v] = acc[i][v] + ai * w[v];
    }
  }
  for (i = 0; i < CK_PM_MR; ++i)
    for (v = 0; v < 3; ++v) memcpy(c + i * ldc + v * 16, &acc[i][v], sizeof acc[i][v]);
}

/* The pixel-major tile over the first 16 or 32 channels of a sliver pair (ck_micro_kernel.pixel_major_part):
 * where a share's last slivers hold fewer real channels than the 48 of the wide tile (ResNet-50's 256
 * channels are 10 slivers and 16 channels of an eleventh, 512 are 21 and 8 of a 22nd), one or two 512-bit
 * vectors per pixel instead of the wide tile on zero channels or the 256-bit tile's 21 FMAs per tap. The
 * second vector of the 32-channel tile is the first sliver's last 8 and the second's first 8 channels, as in
 * the wide tile; the same products in the same order per lane, so the same bits. */
#define CK_DEFINE_PM_PART(NAME, NV)                                                                   \
  __attribute__((target("avx512f,avx512vl,avx2,fma"))) CK_CONTRACT static void NAME(                  \
      int64_t kc, const float *restrict ap, int64_t as, const int64_t *restrict aoff,                  \
      const float *restrict wp, int64_t ws, float *restrict c, int64_t ldc, int accumulate) {          \
    typedef float vec __attribute__((vector_size(16 * sizeof(float))));                              \
    const float *restrict wq = wp + ws;                                                              \
    vec acc[CK_PM_MR][NV];                                                                          \
    int64_t p;                                                                                      \
    int i, v;                                                                                       \
    for (i = 0; i < CK_PM_MR; ++i)                                                                  \
      for (v = 0; v < (NV); ++v) {                                                                  \
        acc[i][v] = (vec){0};                                                                       \
        if (accumulate) memcpy(&acc[i][v], c + i * ldc + v * 16, sizeof acc[i][v]);                 \
      }                                                                                             \
    for (p = 0; p < kc; ++p) {                                                                      \
      const float *restrict a_ = aoff == NULL ? ap + p * as : ap + aoff[p];                        \
      vec w[NV];                                                                                    \
      memcpy(&w[0], wp + p * CK_M_QUANTUM, sizeof w[0]);                                            \
      if ((NV) > 1) CK_LOAD_JOINED(w[(NV) - 1], wp + p * CK_M_QUANTUM + 16, wq + p * CK_M_QUANTUM)   \
      for (i = 0; i < CK_PM_MR; ++i) {                                                              \
        CK_SPLAT(vec, 16, ai, a_[i]);                                                               \
        for (v = 0; v < (NV); ++v) acc[i][v] = acc[i][v] + ai * w[v];                               \
      }                                                                                             \
    }                                                                                               \
    for (i = 0; i < CK_PM_MR; ++i)                                                                  \
      for (v = 0; v < (NV); ++v) memcpy(c + i * ldc + v * 16, &acc[i][v], sizeof acc[i][v]);        \
  }
CK_DEFINE_PM_PART(ck_pm_16_avx512, 1)
CK_DEFINE_PM_PART(ck_pm_32_avx512, 2)

/* (ck_micro_kernel.pixel_major_part) the tile for the first `channels` (16 or 32) channels of a pair. */
static ck_pm_fn ck_pm_part_avx512(int32_t channels) { return channels <= 16 ? ck_pm_16_avx512 : ck_pm_32_avx512; }

static int ck_cpu_has_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

static int ck_cpu_has_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && ck_cpu_has_avx2();
}
#endif

#else /* not gcc/clang: portable C with fixed trip counts */
static void ck_micro_baseline(int64_t kc, const float *restrict ap, int64_t as, const float *restrict bp,
                              int64_t bs, float *restrict c, int64_t ldc, int accumulate,
                              const float *restrict row_bias, const float *restrict residual, int32_t activation) {
  float acc[CK_MR][CK_NR];
  int64_t p;
  int i, j;
  for (i = 0; i < CK_MR; ++i)
    for (j = 0; j < CK_NR; ++j) acc[i][j] = accumulate ? c[i * ldc + j] : 0.0f; /* the chain goes on from C */
  for (p = 0; p < kc; ++p)
    for (i = 0; i < CK_MR; ++i)
      for (j = 0; j < CK_NR; ++j) acc[i][j] += ap[p * as + i] * bp[p * bs + j];
  for (i = 0; i < CK_MR; ++i) {
    for (j = 0; j < CK_NR; ++j) {
      c[i * ldc + j] = acc[i][j];
      if (row_bias != NULL) c[i * ldc + j] += row_bias[i];
      if (residual != NULL) c[i * ldc + j] += residual[i * ldc + j];
    }
    ck_activate(activation, CK_NR, c + i * ldc);
  }
}

static void ck_gemv_baseline(int64_t n, int64_t k, const float *restrict a, const float *b, int64_t cs,
                             float *restrict c) {
  int64_t j, p;
  for (j = 0; j < n; ++j) {
    float lanes[8] = {0}, sum = 0.0f;
    int l;
    for (p = 0; p + 8 <= k; p += 8)
      for (l = 0; l < 8; ++l) lanes[l] += a[p + l] * b[j * cs + p + l];
    for (l = 0; l < 8; ++l) sum += lanes[l];
    for (; p < k; ++p) sum += a[p] * b[j * cs + p];
    c[j] = sum;
  }
}
#endif

#define CK_STR2(x) #x
#define CK_STR(x) CK_STR2(x)

/* Best first; the baseline (what the compiler flags allow) always runs. */
static const ck_micro_kernel ck_kernels[] = {
#if defined(CK_DISPATCH)
    {"avx512-8x32", 8, 32, ck_micro_avx512, ck_micro_avx512_half, ck_gemv_avx512, ck_dw3x3_avx512, ck_pm_avx512,
     ck_pm_wide_avx512, ck_pm_part_avx512, ck_cpu_has_avx512, ck_micro_avx512_tall, ck_micro_avx512_half_tall},
    {"avx2-6x16", 6, 16, ck_micro_avx2, ck_micro_avx2_half, ck_gemv_avx2, ck_dw3x3_avx2, ck_pm_avx2, NULL, NULL,
     ck_cpu_has_avx2, NULL, NULL},
#endif
    {"baseline-" CK_STR(CK_MR) "x" CK_STR(CK_NR), CK_MR, CK_NR, ck_micro_baseline, NULL, ck_gemv_baseline,
     ck_dw3x3_baseline, NULL, NULL, NULL, NULL, NULL, NULL},
};
#define CK_NUM_KERNELS ((int32_t)(sizeof ck_kernels / sizeof ck_kernels[0]))

/* Written once on first use (same value from any thread that races here). */
static const ck_micro_kernel *ck_current_kernel = NULL;

static int ck_kernel_runs_here(const ck_micro_kernel *kernel) {
  return kernel->cpu_has == NULL || kernel->cpu_has();
}

const ck_micro_kernel *ck_micro_kernel_current(void) {
  if (ck_current_kernel == NULL) {
    int32_t i;
    for (i = 0; i < CK_NUM_KERNELS && !ck_kernel_runs_here(&ck_kernels[i]); ++i) {
    }
    ck_current_kernel = &ck_kernels[i < CK_NUM_KERNELS ? i : CK_NUM_KERNELS - 1];
  }
  return ck_current_kernel;
}

const char *ck_gemm_kernel_name(void) { return ck_micro_kernel_current()->name; }

int32_t ck_micro_kernel_isa(void) {
  const char *name = ck_micro_kernel_current()->name;
  if (strncmp(name, "avx512", 6) == 0) return CK_ISA_AVX512;
  if (strncmp(name, "avx2", 4) == 0) return CK_ISA_AVX2;
  return CK_ISA_BASELINE;
}

const char *ck_gemm_kernel_at(int32_t index) {
  return index >= 0 && index < CK_NUM_KERNELS ? ck_kernels[index].name : NULL;
}

int32_t ck_gemm_use_kernel(const char *name) {
  int32_t i;
  if (name == NULL) return CK_EBADPARAM;
  for (i = 0; i < CK_NUM_KERNELS; ++i) {
    if (strcmp(ck_kernels[i].name, name) == 0) {
      if (!ck_kernel_runs_here(&ck_kernels[i])) return CK_EBADPARAM;
      ck_current_kernel = &ck_kernels[i];
      return CK_OK;
    }
  }
  return CK_EBADPARAM;
}
