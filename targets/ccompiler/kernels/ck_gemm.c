/* ck_gemm.c - the one matrix-multiply core behind dense, matmul and conv2d.
 *
 * Goto/BLIS structure: for each KC x NC block of B (packed into NR-wide slivers, kept in L2) and
 * each MC x KC block of A (packed into MR-tall slivers; each sliver in turn held in L1 while the
 * block of B streams past it), a register-tiled MR x NR micro-kernel
 * (ck_microkernel.c; MR, NR from the kernel chosen for this CPU) runs over the packed data with
 * unit-stride loads only. Edge slivers are zero-padded when packed, so the micro-kernel never
 * branches; only the store of an edge tile is bounded. A constant B (dense/matmul weights) can be
 * packed once ahead of time (ck_gemm_pack_b) in 32-column slivers every kernel reads in place.
 */
#include <stdint.h>
#include <string.h>

#include "ck_internal.h"

#if defined(__SSE2__)
#include <xmmintrin.h> /* _MM_TRANSPOSE4_PS: ck_pack_a's row-major A */
#endif

static int64_t ck_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ck_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ck_round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

/* ---- the split into tasks -------------------------------------------------------------------
 * C is cut into column chunks of at most CK_N_CHUNK columns, all as wide as one another up to the 32-column
 * grid (a multiple of every NR and of 16 floats: chunk boundaries fall on cache lines of rows that start on
 * one; 3136 columns are 800 + 800 + 800 + 736, not 1024 x 3 + 64, which left one of two threads a third
 * idle on ResNet-50's 56x56 layers) and, when there are fewer than CK_MIN_TASKS chunks and more than one
 * CK_MC block of rows, row groups of whole 24-row slivers (CK_M_QUANTUM: a packed weight's sliver), about
 * CK_ROW_TASKS tasks in all, as even as those allow (whole 96-row blocks made 128 rows 96 + 32 and 256 rows
 * 96 + 96 + 64: 1.33x on two threads at best). The split depends on the shape alone, never on the thread
 * count, and every element of
 * C is computed by one task in one fixed order (micro-tiles on the same 8-row and 32-column grid, one chain
 * over K): results are the same for every count.
 * Each task packs its own panel of B (KC x its chunk) into its thread's slot of the workspace and runs
 * every row block of its group over it (with row groups, B is packed once ahead for all of them).
 * Chunks as wide as one thread's old NC block keep its speed: 128-column chunks re-read the A blocks
 * (weights) per chunk and cut C's store streams short, and ran ResNet-50's 1x1 64->256 @56 at 0.37x, its
 * 1x1/2 512->1024 @28 at 0.8x of one 1024-column block. */
#ifndef CK_N_CHUNK /* (set on the command line: block-size experiments) */
#define CK_N_CHUNK 1024
#endif
#define CK_MIN_TASKS 8
/* Row groups aim at this many tasks: 16 small ones balance two threads to within a few percent where 8 left
 * one with 4.5 of them against 3.5 (ResNet-50's 1x1 256->1024 at 14x14: 1.78x at best on two threads, now
 * 1.97x), while each group still runs over a B panel that stays in L2 on those layers. */
#define CK_ROW_TASKS 16

/* Two row blocks (97-192 rows: ResNet-50's 512->128 at 28x28, 256->128 stride 2 at 56x56) over at least this many
 * columns are cut into about CK_ROW_TASKS column chunks instead: their row groups were 6 slivers, the last one a
 * third full, each group reading all of a B packed ahead (1.6 MB on 512 x 784) that a thread had half packed for the
 * other, and two threads ran them 1.17x as fast as one. Chunks of 64 columns, each packing its own panel of B once
 * for all 128 rows: 0.75-0.82 of the row groups' time on two threads, 0.97-0.99 on one (alone, in one process). */
#define CK_NARROW_MIN_COLS 512

typedef struct {
  int64_t n_chunks, chunk_cols, row_groups, group_rows;
} ck_gemm_split;

/* One row block (at most CK_MC rows: MobileNet's projection 1x1 convs, 24-96 channels at 28x28 and 14x14) and
 * one chunk: the columns are cut into about CK_MIN_TASKS chunks on the 32-column grid (784 columns: 7 of 128,
 * 196: 7 of 32), each packing its own panel of B. One chunk of 784 or 196 columns was one task, which a second
 * thread could not share: those layers ran 0.75-0.95x as fast on two threads as on one. The grid and each
 * element's chain over K are unchanged, so the bits are too. (Two or more chunks already share out.) */
static ck_gemm_split ck_gemm_split_of(int64_t m, int64_t n) {
  ck_gemm_split s;
  const int64_t blocks = (m + CK_MC - 1) / CK_MC, slivers = (m + CK_M_QUANTUM - 1) / CK_M_QUANTUM;
  int64_t per_group;
  s.n_chunks = (n + CK_N_CHUNK - 1) / CK_N_CHUNK;
  s.chunk_cols = ck_round_up((n + s.n_chunks - 1) / s.n_chunks, CK_N_QUANTUM);
  s.n_chunks = (n + s.chunk_cols - 1) / s.chunk_cols;
  if (s.n_chunks < CK_MIN_TASKS && blocks == 2 && n >= CK_NARROW_MIN_COLS) { /* see CK_NARROW_MIN_COLS */
    s.row_groups = 1;
    s.group_rows = blocks * CK_MC;
    s.chunk_cols = ck_round_up((n + CK_ROW_TASKS - 1) / CK_ROW_TASKS, CK_N_QUANTUM);
    s.n_chunks = (n + s.chunk_cols - 1) / s.chunk_cols;
    return s;
  }
  if (s.n_chunks >= CK_MIN_TASKS || blocks < 2) {
    s.row_groups = 1;
    s.group_rows = blocks * CK_MC;
    if (s.n_chunks == 1 && n > CK_N_QUANTUM) { /* one row block, one chunk: narrower chunks (above) */
      s.chunk_cols = ck_round_up((n + CK_MIN_TASKS - 1) / CK_MIN_TASKS, CK_N_QUANTUM);
      s.n_chunks = (n + s.chunk_cols - 1) / s.chunk_cols;
    }
    return s;
  }
  per_group = (slivers + ck_min(slivers, (CK_ROW_TASKS + s.n_chunks - 1) / s.n_chunks) - 1) /
              ck_min(slivers, (CK_ROW_TASKS + s.n_chunks - 1) / s.n_chunks);
  s.row_groups = (slivers + per_group - 1) / per_group;
  s.group_rows = per_group * CK_M_QUANTUM;
  return s;
}

/* On two threads and more, row groups read a B packed once ahead for all of them, so narrower column chunks
 * cost no scratch: a split of fewer than CK_FEW_TASKS tasks (6 row groups of 128 rows on a 28x28 plane, 0.89
 * of two threads at best; 11 of 256 rows, 0.94) has its chunks cut again, to about CK_ROW_TASKS tasks of at
 * least CK_MIN_CHUNK columns (18 and 22 tasks: 0.99 by the task sizes). Column chunks stay on the 32-column
 * grid and every element is still one chain over K on it, so the bits do not change. */
#define CK_FEW_TASKS 12
#define CK_MIN_CHUNK 128
static void ck_gemm_refine(ck_gemm_split *s, int64_t n) {
  const int64_t tasks = s->n_chunks * s->row_groups;
  int64_t factor;
  if (s->row_groups < 2 || tasks >= CK_FEW_TASKS) return;
  factor = (CK_ROW_TASKS + tasks - 1) / tasks;
  s->chunk_cols = ck_round_up((n + s->n_chunks * factor - 1) / (s->n_chunks * factor), CK_N_QUANTUM);
  if (s->chunk_cols < CK_MIN_CHUNK) s->chunk_cols = CK_MIN_CHUNK;
  s->n_chunks = (n + s->chunk_cols - 1) / s->chunk_cols;
}

/* Slots of per-thread scratch a call uses: the planned threads (BYOC_MAX_THREADS), at most one per task. */
static int64_t ck_gemm_slots(int64_t m, int64_t n) {
  const ck_gemm_split s = ck_gemm_split_of(m, n);
  return ck_min(BYOC_MAX_THREADS, s.n_chunks * s.row_groups);
}

/* One slot: A's block (unless packed ahead) and B's panel (unless packed ahead), aligned inside. */
static size_t ck_gemm_slot_bytes(int64_t m, int64_t n, int64_t k, int b_packed) {
  const int64_t kc = ck_min(CK_KC, k);
  const int64_t a_floats = ck_min(CK_MC, ck_round_up(m, CK_M_QUANTUM)) * kc;
  const int64_t b_floats = b_packed ? 0 : kc * ck_gemm_split_of(m, n).chunk_cols;
  return (size_t)CK_ALIGN + sizeof(float) * (size_t)(a_floats + b_floats);
}

/* Row groups would each pack the same panels of B (an im2col, a strided gather): then all of B is packed
 * once, before the tasks, in ck_pack_b_ahead's layout, and the tasks read it where it lies. */
static int ck_gemm_packs_whole_b(int64_t m, int64_t n) { return ck_gemm_split_of(m, n).row_groups > 1; }

static size_t ck_gemm_whole_b_bytes(int64_t n, int64_t k) {
  return (size_t)CK_ALIGN + sizeof(float) * (size_t)(ck_round_up(n, CK_N_QUANTUM) * k);
}

size_t ck_gemm_workspace_bytes(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  if (ck_gemm_packs_whole_b(m, n))
    return (size_t)ck_gemm_slots(m, n) * ck_gemm_slot_bytes(m, n, k, 1) + ck_gemm_whole_b_bytes(n, k);
  return (size_t)ck_gemm_slots(m, n) * ck_gemm_slot_bytes(m, n, k, 0);
}

/* ---- packing ------------------------------------------------------------------------------- */

/* A[0 .. mc, 0 .. kc] -> mr-tall slivers, each kc x mr (row of the sliver = one k). */
static void ck_pack_a(int64_t mc, int64_t kc, const float *a, int64_t rs, int64_t cs, int64_t mr_full,
                      float *restrict dst) {
  int64_t i0, i, p;
  for (i0 = 0; i0 < mc; i0 += mr_full) {
    const int64_t mr = ck_min(mr_full, mc - i0);
    if (cs == 1) { /* rows contiguous (weights, row-major data): mr read streams, one write stream */
      const float *restrict src = a + i0 * rs;
      p = 0;
#if defined(__SSE2__)
      /* 4 x 4 blocks transposed in registers: one element at a time, at a stride of rs per read, this copy was
       * 18% of bert_tiny's run (its dense and matmul activations are A) */
      if (mr % 4 == 0)
        for (; p + 4 <= kc; p += 4)
          for (i = 0; i < mr; i += 4) {
            __m128 r0 = _mm_loadu_ps(src + i * rs + p), r1 = _mm_loadu_ps(src + (i + 1) * rs + p);
            __m128 r2 = _mm_loadu_ps(src + (i + 2) * rs + p), r3 = _mm_loadu_ps(src + (i + 3) * rs + p);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(dst + p * mr_full + i, r0);
            _mm_storeu_ps(dst + (p + 1) * mr_full + i, r1);
            _mm_storeu_ps(dst + (p + 2) * mr_full + i, r2);
            _mm_storeu_ps(dst + (p + 3) * mr_full + i, r3);
          }
#endif
      for (; p < kc; ++p) {
        float *restrict d = dst + p * mr_full;
        for (i = 0; i < mr; ++i) d[i] = src[i * rs + p];
      }
    } else {
      for (p = 0; p < kc; ++p)
        for (i = 0; i < mr; ++i) dst[p * mr_full + i] = a[(i0 + i) * rs + p * cs];
    }
    for (i = mr; i < mr_full; ++i)
      for (p = 0; p < kc; ++p) dst[p * mr_full + i] = 0.0f;
    dst += kc * mr_full;
  }
}

void ck_pack_a_ahead(int64_t m, int64_t k, const float *a, int64_t lda, float *packed) {
  const int64_t m24 = ck_round_up(m, CK_M_QUANTUM);
  int64_t pc;
  for (pc = 0; pc < k; pc += CK_KC) {
    const int64_t kc = ck_min(CK_KC, k - pc);
    ck_pack_a(m, kc, a + pc, lda, 1, CK_M_QUANTUM, packed + pc * m24);
  }
}

/* Strided B[0 .. kc, 0 .. nc] -> nr-wide slivers, each kc x nr. */
static void ck_pack_b_strided(int64_t kc, int64_t nc, const float *b, int64_t rs, int64_t cs, int64_t nr_full,
                              float *restrict dst) {
  int64_t j0, j, p;
  if (cs == 1 && (nr_full == 16 || nr_full == 32) && nc >= nr_full) {
    /* Row by row of B: each row's columns are read as one stream the hardware prefetcher follows, and
     * written nr at a time into every whole sliver. Sliver by sliver, each row's 64 or 128 bytes came from a
     * new page (rows of a 56x56 plane lie 12.5 KB apart): a quarter to a third of ResNet-50's 1x1
     * 256->64 at 56x56 went to that packing (`perf`, Zen 3). */
    const int64_t whole = nc / nr_full * nr_full;
    for (p = 0; p < kc; ++p) {
      const float *restrict src = b + p * rs;
      float *restrict d = dst + p * nr_full;
      if (nr_full == 16) {
        for (j0 = 0; j0 < whole; j0 += 16) memcpy(d + j0 * kc, src + j0, 16 * sizeof(float));
      } else {
        for (j0 = 0; j0 < whole; j0 += 32) memcpy(d + j0 * kc, src + j0, 32 * sizeof(float));
      }
    }
    if (whole == nc) return;
    b += whole;
    dst += whole * kc;
    nc -= whole;
  }
  for (j0 = 0; j0 < nc; j0 += nr_full) {
    const int64_t nr = ck_min(nr_full, nc - j0);
    if (cs == 1 && nr == 32) { /* constant sizes: inline vector moves, not a memcpy call per row */
      for (p = 0; p < kc; ++p) memcpy(dst + p * nr_full, b + p * rs + j0, 32 * sizeof(float));
    } else if (cs == 1 && nr == 16) {
      for (p = 0; p < kc; ++p) memcpy(dst + p * nr_full, b + p * rs + j0, 16 * sizeof(float));
    } else if (cs == 1) {
      for (p = 0; p < kc; ++p) {
        const float *restrict src = b + p * rs + j0;
        for (j = 0; j < nr; ++j) dst[p * nr_full + j] = src[j];
      }
    } else if (rs == 1) {
      /* B^T stored row-major (dense weights): a transpose, eight columns at a time so each
       * row of the sliver gets eight neighbouring floats while the columns are read in order */
      for (j = 0; j + 8 <= nr; j += 8) {
        const float *restrict s = b + (j0 + j) * cs;
        for (p = 0; p < kc; ++p) {
          float *restrict d = dst + p * nr_full + j;
          int t;
          for (t = 0; t < 8; ++t) d[t] = s[t * cs + p];
        }
      }
      for (; j < nr; ++j) {
        const float *restrict src = b + (j0 + j) * cs;
        for (p = 0; p < kc; ++p) dst[p * nr_full + j] = src[p];
      }
    } else {
      for (p = 0; p < kc; ++p)
        for (j = 0; j < nr; ++j) dst[p * nr_full + j] = b[p * rs + (j0 + j) * cs];
    }
    if (nr < nr_full)
      for (p = 0; p < kc; ++p)
        for (j = nr; j < nr_full; ++j) dst[p * nr_full + j] = 0.0f;
    dst += kc * nr_full;
  }
}

void ck_pack_b_ahead(int64_t n, int64_t k, const float *b, int64_t rs, int64_t cs, float *packed) {
  const int64_t n32 = ck_round_up(n, CK_N_QUANTUM);
  int64_t pc;
  for (pc = 0; pc < k; pc += CK_KC) {
    const int64_t kc = ck_min(CK_KC, k - pc);
    ck_pack_b_strided(kc, n, b + pc * rs, rs, cs, CK_N_QUANTUM, packed + pc * n32);
  }
}

size_t ck_gemm_packed_b_bytes(int64_t n, int64_t k) {
  if (n <= 0 || k <= 0) return 0;
  return sizeof(float) * (size_t)(ck_round_up(n, CK_N_QUANTUM) * k);
}

int32_t ck_gemm_pack_b(int64_t n, int64_t k, const float *b, int64_t b_row_stride, int64_t b_col_stride,
                       float *packed) {
  if (n <= 0 || k <= 0 || b == NULL || packed == NULL) return CK_EBADPARAM;
  ck_pack_b_ahead(n, k, b, b_row_stride, b_col_stride, packed);
  return CK_OK;
}

size_t ck_gemm_prepacked_workspace_bytes(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  return (size_t)ck_gemm_slots(m, n) * ck_gemm_slot_bytes(m, n, k, 1);
}

/* dst[0 .. n) = src[0 .. n) for the short runs of the im2col packing (n <= a sliver): fixed-size
 * moves that overlap at the end instead of a tail loop, no library call per run. */
static void ck_copy_short(float *restrict dst, const float *restrict src, int64_t n) {
  int64_t i;
  if (n >= 8) {
    for (i = 0; i + 8 < n; i += 8) memcpy(dst + i, src + i, 8 * sizeof(float));
    memcpy(dst + n - 8, src + n - 8, 8 * sizeof(float));
  } else if (n >= 4) {
    memcpy(dst, src, 4 * sizeof(float));
    memcpy(dst + n - 4, src + n - 4, 4 * sizeof(float));
  } else {
    for (i = 0; i < n; ++i) dst[i] = src[i];
  }
}

/* A 1x1 window: every row of a sliver reads the same nr pixels of the next input plane. When all of them
 * lie inside the image (always, unless padded), the sliver is a gather through the nr offsets computed
 * once per sliver, not the per-row runs below (a stride-2 1x1 conv spent a fifth of its time on those).
 * Returns 0 (nothing written) when some pixel is padding or past n. */
static int ck_pack_b_pointwise_sliver(int64_t p0, int64_t kc, int64_t first, int64_t n_total, const ck_conv_view *v,
                                      int64_t nr_full, float *restrict dst) {
  int64_t off[CK_NR_MAX];
  const int64_t plane = v->height * v->width;
  int64_t j, p;
  if (n_total - first < nr_full) return 0;
  for (j = 0; j < nr_full; ++j) {
    const int64_t y = (first + j) / v->out_w * v->stride_h - v->pad_top;
    const int64_t x = (first + j) % v->out_w * v->stride_w - v->pad_left;
    if ((uint64_t)y >= (uint64_t)v->height || (uint64_t)x >= (uint64_t)v->width) return 0;
    off[j] = y * v->width + x;
  }
  for (p = 0; p < kc; ++p) {
    const float *restrict src = v->data + (p0 + p) * plane;
    float *restrict row = dst + p * nr_full;
    if (nr_full == 32) { /* a constant trip count: unrolled */
      for (j = 0; j < 32; ++j) row[j] = src[off[j]];
    } else {
      for (j = 0; j < nr_full; ++j) row[j] = src[off[j]];
    }
  }
  return 1;
}

/* Implicit im2col over the zero-bordered copy (v->padded): the nr pixels of a sliver split into runs on
 * one output line each, found once per sliver; every row of the sliver then copies each run from where
 * its tap puts it, no bounds to test (the unbordered packing below computes them per row and run, and
 * took about a fifth of a 3x3 convolution on 14x14 planes). Columns past n are zeros. */
static void ck_pack_b_conv_padded(int64_t p0, int64_t kc, int64_t j0_all, int64_t nc, int64_t n_total,
                                  const ck_conv_view *v, int64_t nr_full, float *restrict dst) {
  const int64_t taps = v->kernel_h * v->kernel_w, pw = v->padded_w, sw = v->stride_w;
  int64_t j0, j, p;
  for (j0 = 0; j0 < nc; j0 += nr_full) {
    int64_t start[CK_NR_MAX + 1], from[CK_NR_MAX]; /* run r: sliver columns [start[r], start[r+1]) */
    int64_t runs = 0, channel = p0 / taps, tap = p0 % taps;
    int64_t kh = tap / v->kernel_w, kw = tap % v->kernel_w;
    const int64_t first = j0_all + j0;
    int64_t oh = first / v->out_w, ow = first % v->out_w;
    const int64_t valid = ck_min(nr_full, n_total - first);
    for (j = 0; j < valid; ++runs) {
      start[runs] = j;
      from[runs] = oh * v->stride_h * pw + ow * sw; /* tap (0, 0) of the run's first pixel */
      j += ck_min(valid - j, v->out_w - ow);
      ow = 0;
      ++oh;
    }
    start[runs] = valid;
    for (p = 0; p < kc; ++p) {
      const float *src = v->padded + channel * v->padded_plane + kh * v->dilation_h * pw + kw * v->dilation_w;
      float *restrict row = dst + p * nr_full;
      int64_t r;
      for (r = 0; r < runs; ++r) {
        const int64_t a = start[r], len = start[r + 1] - a;
        const float *restrict s = src + from[r];
        if (sw == 1) {
          ck_copy_short(row + a, s, len);
        } else if (sw == 2) { /* a constant stride the compiler turns into vector shuffles */
          for (j = 0; j < len; ++j) row[a + j] = s[2 * j];
        } else {
          for (j = 0; j < len; ++j) row[a + j] = s[j * sw];
        }
      }
      for (j = valid; j < nr_full; ++j) row[j] = 0.0f;
      if (++kw == v->kernel_w) {
        kw = 0;
        if (++kh == v->kernel_h) { kh = 0; ++channel; }
      }
    }
    dst += kc * nr_full;
  }
}

/* A 1x1 window over up to CK_POINTWISE_COLUMNS columns at a time, row by row of B: each input plane's pixels are
 * read in order (a stride-2 conv reads every other one of every other line), through offsets computed once per
 * call, and written into their slivers. Sliver by sliver (ck_pack_b_pointwise_sliver) each row's few pixels came
 * from a plane 12.5 KB on from the last (56x56): ResNet-50's 1x1/2 256->512 at 56x56 spent a quarter of its time
 * packing (`perf`, Zen 3). Returns 0 (nothing written) when some pixel is padding. */
#define CK_POINTWISE_COLUMNS 1024
static int ck_pack_b_pointwise_rows(int64_t p0, int64_t kc, int64_t j0_all, int64_t nc, const ck_conv_view *v,
                                    int64_t nr_full, float *restrict dst) {
  int32_t off[CK_POINTWISE_COLUMNS], at[CK_POINTWISE_COLUMNS]; /* column j: input offset, place in its sliver */
  const int64_t plane = v->height * v->width, whole = (nc + nr_full - 1) / nr_full * nr_full;
  int64_t j, p, c0;
  if (plane > INT32_MAX || whole * kc > INT32_MAX) return 0;
  for (j = 0; j < nc; ++j) {
    const int64_t y = (j0_all + j) / v->out_w * v->stride_h - v->pad_top;
    const int64_t x = (j0_all + j) % v->out_w * v->stride_w - v->pad_left;
    if ((uint64_t)y >= (uint64_t)v->height || (uint64_t)x >= (uint64_t)v->width) return 0;
  }
  for (c0 = 0; c0 < nc; c0 += CK_POINTWISE_COLUMNS) {
    const int64_t cols = ck_min(CK_POINTWISE_COLUMNS, nc - c0);
    for (j = 0; j < cols; ++j) {
      const int64_t pixel = j0_all + c0 + j;
      off[j] = (int32_t)((pixel / v->out_w * v->stride_h - v->pad_top) * v->width + pixel % v->out_w * v->stride_w -
                         v->pad_left);
      at[j] = (int32_t)((c0 + j) / nr_full * kc * nr_full + (c0 + j) % nr_full);
    }
    for (p = 0; p < kc; ++p) {
      const float *restrict src = v->data + (p0 + p) * plane;
      float *restrict row = dst + p * nr_full;
      for (j = 0; j < cols; ++j) row[at[j]] = src[off[j]];
    }
  }
  for (j = nc; j < whole; ++j) /* the last sliver's columns past nc: zeros, not stale bytes (their results are dropped) */
    for (p = 0; p < kc; ++p) dst[j / nr_full * kc * nr_full + p * nr_full + j % nr_full] = 0.0f;
  return 1;
}

/* Implicit im2col: row k = (channel, kh, kw), column n = (oh, ow) of the output. The nr pixels
 * of a sliver split into runs on one output line each (a new run where ow wraps, and one for the
 * columns past n); per row of the sliver and run, the input columns inside the image form one
 * range, so each run is zeros, a (strided) copy, zeros: no branch per element. */
static void ck_pack_b_conv(int64_t p0, int64_t kc, int64_t j0_all, int64_t nc, int64_t n_total,
                           const ck_conv_view *v, int64_t nr_full, float *restrict dst) {
  const int64_t taps = v->kernel_h * v->kernel_w;
  const int64_t plane = v->height * v->width;
  const int64_t sw = v->stride_w;
  int64_t j0, j, p;
  if (taps == 1 && ck_pack_b_pointwise_rows(p0, kc, j0_all, nc, v, nr_full, dst)) return;
  for (j0 = 0; j0 < nc; j0 += nr_full) {
    /* run r covers sliver columns [start[r], start[r+1]); its first pixel reads (ih[r], iw[r]) at tap 0 */
    int64_t start[CK_NR_MAX + 2], ih[CK_NR_MAX + 1], iw[CK_NR_MAX + 1];
    int64_t runs = 0, channel = p0 / taps, tap = p0 % taps;
    int64_t kh = tap / v->kernel_w, kw = tap % v->kernel_w;
    const int64_t first = j0_all + j0;
    int64_t oh = first / v->out_w, ow = first % v->out_w;
    const int64_t valid = ck_min(nr_full, n_total - first);
    if (taps == 1 && ck_pack_b_pointwise_sliver(p0, kc, first, n_total, v, nr_full, dst)) {
      dst += kc * nr_full;
      continue;
    }
    j = 0;
    while (j < valid) {
      start[runs] = j;
      ih[runs] = oh * v->stride_h - v->pad_top;
      iw[runs] = ow * sw - v->pad_left;
      ++runs;
      j += ck_min(valid - j, v->out_w - ow);
      ow = 0;
      ++oh;
    }
    if (valid < nr_full) { /* columns past n: a run above the image for every kh, so zeros */
      start[runs] = valid;
      ih[runs] = -1 - v->dilation_h * v->kernel_h;
      iw[runs] = 0;
      ++runs;
    }
    start[runs] = nr_full;
    for (p = 0; p < kc; ++p) {
      const float *src = v->data + channel * plane;
      const int64_t dh = kh * v->dilation_h, dw = kw * v->dilation_w;
      float *restrict row = dst + p * nr_full;
      int64_t r;
      for (r = 0; r < runs; ++r) {
        const int64_t a = start[r], b = start[r + 1], y = ih[r] + dh, x0 = iw[r] + dw;
        int64_t lo = a, hi = a; /* sliver columns whose input column is inside [0, width) */
        if ((uint64_t)y < (uint64_t)v->height) {
          /* x0 + (j - a) * sw >= 0  and  < width; stride 1 needs no division (this runs per
           * row of every sliver), strides fit 32-bit division (widths are small) */
          if (sw == 1) {
            lo = a + (x0 >= 0 ? 0 : -x0);
            hi = v->width - x0 < 0 ? a : a + (v->width - x0);
          } else {
            const int32_t s32 = (int32_t)sw, x32 = (int32_t)x0, w32 = (int32_t)v->width;
            lo = a + (x32 >= 0 ? 0 : (-x32 + s32 - 1) / s32);
            hi = w32 - 1 - x32 < 0 ? a : a + (w32 - 1 - x32) / s32 + 1;
          }
          if (hi > b) hi = b;
          if (lo > hi) lo = hi;
        }
        for (j = a; j < lo; ++j) row[j] = 0.0f;
        if (hi > lo) {
          const float *restrict line = src + y * v->width; /* column j reads line[x0 + (j - a) * sw] */
          if (sw == 1) {
            ck_copy_short(row + lo, line + x0 + (lo - a), hi - lo);
          } else if (sw == 2) { /* a constant stride the compiler turns into vector shuffles */
            for (j = lo; j < hi; ++j) row[j] = line[x0 + (j - a) * 2];
          } else {
            for (j = lo; j < hi; ++j) row[j] = line[x0 + (j - a) * sw];
          }
        }
        for (j = hi; j < b; ++j) row[j] = 0.0f;
      }
      if (++kw == v->kernel_w) {
        kw = 0;
        if (++kh == v->kernel_h) { kh = 0; ++channel; }
      }
    }
    dst += kc * nr_full;
  }
}

void ck_activate(int32_t activation, int64_t n, float *out) {
  int64_t j;
  if (activation == CK_ACT_RELU) {
    for (j = 0; j < n; ++j) out[j] = out[j] > 0.0f ? out[j] : 0.0f;
  } else if (activation == CK_ACT_RELU6) {
    for (j = 0; j < n; ++j) { /* as ck_unary's CK_CLIP: NaN stays NaN */
      const float v = out[j] < 0.0f ? 0.0f : out[j];
      out[j] = v > 6.0f ? 6.0f : v;
    }
  }
}

/* Bias, residual (a tile of the same layout as C, or NULL) and activation on a finished tile of C
 * (after its last K block). */
static void ck_epilogue_tile(float *restrict c, int64_t ldc, int64_t mr, int64_t nr, const ck_epilogue *ep,
                             int64_t row0, int64_t col0, const float *restrict residual) {
  int64_t i, j;
  for (i = 0; i < mr; ++i) {
    float *restrict cr = c + i * ldc;
    if (ep->bias != NULL) {
      if (ep->bias_per_row) {
        const float bias = ep->bias[row0 + i];
        for (j = 0; j < nr; ++j) cr[j] += bias;
      } else {
        const float *restrict bias = ep->bias + col0;
        for (j = 0; j < nr; ++j) cr[j] += bias[j];
      }
    }
    if (residual != NULL)
      for (j = 0; j < nr; ++j) cr[j] += residual[i * ldc + j];
    ck_activate(ep->activation, nr, cr);
  }
}

/* The mr x nr corner of C into a zeroed local tile: an edge tile's chain goes on from C as a full tile's does. */
static void ck_load_tile(float *restrict tile, int64_t tile_ld, int64_t tile_rows, const float *restrict c,
                         int64_t ldc, int64_t mr, int64_t nr) {
  int64_t i;
  memset(tile, 0, sizeof(float) * (size_t)(tile_rows * tile_ld));
  for (i = 0; i < mr; ++i) memcpy(tile + i * tile_ld, c + i * ldc, sizeof(float) * (size_t)nr);
}

/* C[row0.., col0..] = tile within bounds, then the epilogue once the last K block is in. */
static void ck_store_tile(const float *restrict tile, int64_t tile_ld, float *restrict c, int64_t ldc,
                          int64_t mr, int64_t nr, const ck_epilogue *last, int64_t row0, int64_t col0,
                          const float *residual) {
  int64_t i;
  for (i = 0; i < mr; ++i) memcpy(c + i * ldc, tile + i * tile_ld, sizeof(float) * (size_t)nr);
  if (last != NULL) ck_epilogue_tile(c, ldc, mr, nr, last, row0, col0, residual);
}

/* C = epilogue(0) when K == 0. */
static void ck_fill_epilogue_only(int64_t m, int64_t n, float *c, int64_t ldc, const ck_epilogue *ep,
                                  const float *residual) {
  static const ck_epilogue none = {NULL, 0, CK_ACT_NONE};
  int64_t i, j;
  for (i = 0; i < m; ++i)
    for (j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
  if (ep != NULL || residual != NULL) ck_epilogue_tile(c, ldc, m, n, ep != NULL ? ep : &none, 0, 0, residual);
}

/* ---- M <= 2 (batch-1/2 dense, vector-matrix): no packing, memory-bound anyway --------------- */

/* c[0..n) = sum_p a[p*as] * b[p*rs + 0..n): rows of B are contiguous, so axpy per row. */
static void ck_gemv_axpy(int64_t n, int64_t k, const float *a, int64_t as, const float *b, int64_t rs,
                         float *restrict c) {
  int64_t j0, j, p;
  for (j0 = 0; j0 < n; j0 += 512) {
    const int64_t nb = ck_min(512, n - j0);
    float *restrict cb = c + j0;
    for (j = 0; j < nb; ++j) cb[j] = 0.0f;
    for (p = 0; p < k; ++p) {
      const float ap = a[p * as];
      const float *restrict br = b + p * rs + j0;
      for (j = 0; j < nb; ++j) cb[j] = CK_FMA(ap, br[j], cb[j]);
    }
  }
}

void ck_pack_b(const ck_b_source *b, int64_t pc, int64_t kc, int64_t j0, int64_t nc, int64_t n_total, int64_t nr,
               float *dst) {
  if (nc <= 0) return;
  if (b->conv != NULL && b->conv->padded != NULL)
    ck_pack_b_conv_padded(pc, kc, j0, nc, n_total, b->conv, nr, dst);
  else if (b->conv != NULL)
    ck_pack_b_conv(pc, kc, j0, nc, n_total, b->conv, nr, dst);
  else
    ck_pack_b_strided(kc, nc, b->base + pc * b->row_stride + j0 * b->col_stride, b->row_stride, b->col_stride, nr,
                      dst);
}

/* ---- driver ---------------------------------------------------------------------------------- */

/* What every task of one call reads. */
typedef struct {
  int64_t m, n, k;
  const float *a;
  int64_t a_row_stride, a_col_stride;
  const float *a_packed;
  const ck_b_source *b;
  float *c;
  int64_t ldc;
  const ck_epilogue *epilogue;
  const float *residual;
  const ck_micro_kernel *kernel;
  char *workspace;
  size_t slot_bytes;
  ck_gemm_split split;
} ck_gemm_job;

/* What the tiles of one packed A block (rows ic .. ic + mc) and B panel (columns jc .. jc + nc) share. */
typedef struct {
  const ck_gemm_job *job;
  int64_t ic, mc, jc, nc, nc_main, pc, kc, as;
  const float *a_block, *pack_b;
  const ck_epilogue *last; /* the epilogue when this is the last K block, else NULL */
} ck_gemm_block;

/* The tile of rows ir .. ir + mr_full, columns jr .. jr + sliver (the half sliver from nc_main on) of a block,
 * by `run` (an mr_full x sliver micro-kernel); a tile past the block's rows or columns goes through a local tile. */
static void ck_gemm_tile(const ck_gemm_block *blk, int64_t ir, int64_t mr_full, ck_micro_fn run, int64_t jr) {
  const ck_gemm_job *job = blk->job;
  const int64_t ldc = job->ldc, kc = blk->kc, as = blk->as, jc = blk->jc, pc = blk->pc;
  const int64_t n32 = ck_round_up(job->n, CK_N_QUANTUM); /* row length of a K block of a packed B */
  const int64_t sliver = jr >= blk->nc_main ? job->kernel->nr / 2 : job->kernel->nr;
  const int64_t mr = ck_min(mr_full, blk->mc - ir), nr = ck_min(sliver, blk->nc - jr);
  const ck_epilogue *last = blk->last;
  const float *packed = job->b->packed;
  const int accumulate = pc > 0;
  float tile[CK_M_QUANTUM * CK_NR_MAX]; /* up to a 24-row tile */
  /* this sliver of B: packed just now (sliver floats per k), or ahead of time, inside the
   * 32-column sliver that holds column jc + jr (CK_N_QUANTUM floats per k; jc is a multiple
   * of it, so are the K blocks' starts) */
  const float *bp = packed == NULL ? blk->pack_b + jr * kc
                                   : packed + pc * n32 + (jc + jr) / CK_N_QUANTUM * CK_N_QUANTUM * kc +
                                         (jc + jr) % CK_N_QUANTUM;
  const int64_t bs = packed == NULL ? sliver : CK_N_QUANTUM;
  const int64_t row0 = blk->ic + ir, col0 = jc + jr;
  float *c_tile = job->c + row0 * ldc + col0;
  const float *r_tile = last != NULL && job->residual != NULL ? job->residual + row0 * ldc + col0 : NULL;
  const float *ap = blk->a_block + (ir / as) * as * kc + ir % as; /* sliver of row ir, row in it */
  if (mr == mr_full && nr == sliver) {
    /* the epilogue in registers, unless the bias runs along columns (dense) */
    const int in_kernel = last != NULL && (last->bias == NULL || last->bias_per_row);
    run(kc, ap, as, bp, bs, c_tile, ldc, accumulate, in_kernel && last->bias != NULL ? last->bias + row0 : NULL,
        in_kernel ? r_tile : NULL, in_kernel ? last->activation : CK_ACT_NONE);
    if (last != NULL && !in_kernel) ck_epilogue_tile(c_tile, ldc, mr, nr, last, row0, col0, r_tile);
  } else { /* edge tile: through a local tile, stored within bounds */
    if (accumulate) ck_load_tile(tile, sliver, mr_full, c_tile, ldc, mr, nr);
    run(kc, ap, as, bp, bs, tile, sliver, accumulate, NULL, NULL, CK_ACT_NONE);
    ck_store_tile(tile, sliver, c_tile, ldc, mr, nr, last, row0, col0, r_tile);
  }
}

/* Rows ir .. ir + mr_full against every sliver of the block, the half sliver by run_half. */
static void ck_gemm_row(const ck_gemm_block *blk, int64_t ir, int64_t mr_full, ck_micro_fn run, ck_micro_fn run_half) {
  const int64_t nr_full = blk->job->kernel->nr;
  int64_t jr;
  for (jr = 0; jr < blk->nc_main; jr += nr_full) ck_gemm_tile(blk, ir, mr_full, run, jr);
  if (run_half != NULL && blk->nc_main < blk->nc) ck_gemm_tile(blk, ir, mr_full, run_half, blk->nc_main);
}

/* The micro-kernels over one packed A block (rows ic .. ic + mc) and B panel (columns jc .. jc + nc).
 * One A sliver (the broadcast operand, mr x kc) stays in L1 while every B sliver of the block streams past it
 * from L2, and C fills mr rows left to right: few store streams. The other order (B sliver outer) writes mc rows
 * at once, 128 bytes each, and lost a quarter of the speed on ResNet-50's 1x1 64->256 at 56x56 (K = 64: C traffic
 * dominates; no faster on its 1024-deep layers either, session 11).
 * A weight packed ahead in 24-row slivers runs whole slivers on the CPU's tall tiles where it has them: two 12 x 32
 * tiles (two B loads per 24 FMAs, against 16 on 8 x 32) and one 24 x 16 on a narrow last sliver (24 accumulators
 * where the 8 x 16 half tile's 8 ran at about half the full tile's rate: on 196 columns, 6 x 32 + 4, that tail
 * took a tenth of the call). Each element is the same chain over K on any tile, so the bits do not change. */
static void ck_gemm_tiles(const ck_gemm_job *job, int64_t ic, int64_t mc, int64_t jc, int64_t nc, int64_t nc_main,
                          int64_t pc, int64_t kc, const float *a_block, int64_t as, const float *pack_b) {
  const ck_micro_kernel *kernel = job->kernel;
  const int tall = as == CK_M_QUANTUM && kernel->run_tall != NULL;
  ck_gemm_block blk;
  int64_t ir = 0;
  blk.job = job;
  blk.ic = ic;
  blk.mc = mc;
  blk.jc = jc;
  blk.nc = nc;
  blk.nc_main = nc_main;
  blk.pc = pc;
  blk.kc = kc;
  blk.as = as;
  blk.a_block = a_block;
  blk.pack_b = pack_b;
  blk.last = pc + kc == job->k ? job->epilogue : NULL;
  for (; tall && ir + CK_M_QUANTUM <= mc; ir += CK_M_QUANTUM) {
    ck_gemm_row(&blk, ir, CK_MR_TALL, kernel->run_tall, NULL);
    ck_gemm_row(&blk, ir + CK_MR_TALL, CK_MR_TALL, kernel->run_tall, NULL);
    if (nc_main < nc) ck_gemm_tile(&blk, ir, CK_M_QUANTUM, kernel->run_half_tall, nc_main);
  }
  for (; ir < mc; ir += kernel->mr) ck_gemm_row(&blk, ir, kernel->mr, kernel->run, kernel->run_half);
}

/* Columns of a chunk's B packed and run at a time: the chunk cut evenly, on the 32-column grid, into panels of kc
 * rows within CK_PANEL_FLOATS each, where the task's rows of A (a conv's weights, packed ahead) fit in as much. A
 * chunk's whole panel (800 columns x 256 rows on a 56x56 plane: 800 KB) outgrew the 512 KB L2 of a Zen 3 core
 * and each A sliver streamed it from L3 again: ResNet-50's 1x1 256->64 at 56x56 ran in 0.85 of the time with
 * 384 KB panels, 512->128 at 28x28 and the stride-2 256->128 and 512->256 in 0.90-0.96 (one thread, in-process
 * A/B, Zen 3). Where A is larger (512 and 1024 output channels), going over all of it once per panel lost
 * (1x1/2 256->512 at 56x56: 1.04-1.14), so those keep the chunk's one panel. Every element is still one chain
 * over K on the same tile grid: the bits do not change. */
#ifndef CK_PANEL_FLOATS /* (set on the command line: block-size experiments) */
#define CK_PANEL_FLOATS (96 * 1024)
#endif
static int64_t ck_panel_cols(int64_t kc, int64_t nc) {
  const int64_t most = ck_max(CK_N_QUANTUM, CK_PANEL_FLOATS / kc / CK_N_QUANTUM * CK_N_QUANTUM);
  const int64_t panels = (nc + most - 1) / most;
  return ck_round_up((nc + panels - 1) / panels, CK_N_QUANTUM);
}

/* One task: columns of one chunk, rows of one group, on the scratch of `slot`. */
static void ck_gemm_task(int32_t task, int32_t slot, void *ctx) {
  const ck_gemm_job *job = (const ck_gemm_job *)ctx;
  const int64_t chunk = task % job->split.n_chunks, group = task / job->split.n_chunks;
  const int64_t jc = chunk * job->split.chunk_cols, nc = ck_min(job->split.chunk_cols, job->n - jc);
  const int64_t i0 = group * job->split.group_rows, i1 = ck_min(job->m, i0 + job->split.group_rows);
  const int64_t m24 = ck_round_up(job->m, CK_M_QUANTUM), nr_full = job->kernel->nr, k = job->k;
  /* A last sliver at most half full runs the half-width kernel: no work on padding columns */
  const int64_t tail = nc % nr_full;
  const int use_half = job->kernel->run_half != NULL && tail > 0 && tail <= nr_full / 2;
  const int64_t nc_main = use_half ? nc - tail : nc;
  const uintptr_t base = (uintptr_t)(job->workspace + (size_t)slot * job->slot_bytes);
  float *pack_a = (float *)(void *)((base + (CK_ALIGN - 1)) & ~(uintptr_t)(CK_ALIGN - 1));
  float *pack_b = pack_a + ck_min(CK_MC, m24) * ck_min(CK_KC, k); /* unused when packed */
  int64_t pc, ic, js;
  for (pc = 0; pc < k; pc += CK_KC) {
    const int64_t kc = ck_min(CK_KC, k - pc);
    const int64_t panel = job->b->packed == NULL && job->a_packed != NULL && (i1 - i0) * kc <= CK_PANEL_FLOATS
                              ? ck_panel_cols(kc, nc)
                              : nc; /* (an A packed per call would be packed again per panel) */
    for (js = 0; js < nc; js += panel) { /* B's panel of the chunk, a part that stays in L2 at a time */
      const int64_t ncs = ck_min(panel, nc - js), ncs_main = js + ncs == nc ? nc_main - js : ncs;
      if (job->b->packed == NULL) {
        ck_pack_b(job->b, pc, kc, jc + js, ncs_main, job->n, nr_full, pack_b);
        if (use_half && js + ncs == nc)
          ck_pack_b(job->b, pc, kc, jc + nc_main, tail, job->n, nr_full / 2, pack_b + ncs_main * kc);
      }
      for (ic = i0; ic < i1; ic += CK_MC) {
        const int64_t mc = ck_min(CK_MC, i1 - ic);
        /* A's slivers: packed now (mr apart), or ahead of time (CK_M_QUANTUM apart, ic a multiple of it) */
        if (job->a_packed == NULL) {
          ck_pack_a(mc, kc, job->a + ic * job->a_row_stride + pc * job->a_col_stride, job->a_row_stride,
                    job->a_col_stride, job->kernel->mr, pack_a);
          ck_gemm_tiles(job, ic, mc, jc + js, ncs, ncs_main, pc, kc, pack_a, job->kernel->mr, pack_b);
        } else {
          ck_gemm_tiles(job, ic, mc, jc + js, ncs, ncs_main, pc, kc, job->a_packed + pc * m24 + ic * kc,
                        CK_M_QUANTUM, pack_b);
        }
      }
    }
  }
}

/* All of B into ck_pack_b_ahead's layout (per K block, 32-column slivers), in parallel: tasks of one K
 * block and CK_WHOLE_B_COLUMNS columns, each writing its own slivers. */
#define CK_WHOLE_B_COLUMNS 256

typedef struct {
  const ck_b_source *b;
  int64_t n, k, col_tasks;
  float *dst;
} ck_whole_b_job;

static void ck_whole_b_task(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_whole_b_job *job = (const ck_whole_b_job *)ctx;
  const int64_t pc = task / job->col_tasks * CK_KC, j0 = task % job->col_tasks * CK_WHOLE_B_COLUMNS;
  const int64_t kc = ck_min(CK_KC, job->k - pc);
  (void)n_tasks;
  ck_pack_b(job->b, pc, kc, j0, ck_min(CK_WHOLE_B_COLUMNS, job->n - j0), job->n, CK_N_QUANTUM,
            job->dst + pc * ck_round_up(job->n, CK_N_QUANTUM) + j0 * kc);
}

static void ck_gemm_pack_whole_b(const ck_b_source *b, int64_t n, int64_t k, float *dst) {
  ck_whole_b_job job;
  job.b = b;
  job.n = n;
  job.k = k;
  job.col_tasks = (n + CK_WHOLE_B_COLUMNS - 1) / CK_WHOLE_B_COLUMNS;
  job.dst = dst;
  byoc_parallel_for((int32_t)(job.col_tasks * ((k + CK_KC - 1) / CK_KC)), ck_whole_b_task, &job);
}

/* One or two rows (batch-1/2 dense, vector-matrix) on a B that is not packed ahead: a pass over B per
 * row, no packing; packing B per call costs more than reading it twice (fc 2048->1000 at two rows:
 * 880 us packing, 270 us in two passes; at four rows the passes lose). */
static int ck_gemv_takes(int64_t m, const float *a_packed, const ck_b_source *b, int64_t a_col_stride) {
  return m <= 2 && b->conv == NULL && b->packed == NULL && a_packed == NULL &&
         (b->col_stride == 1 || (b->row_stride == 1 && a_col_stride == 1));
}

/* In parallel: columns in ranges of CK_GEMV_COLUMNS (a multiple of every kernel's vector width and of
 * ck_gemv_axpy's 512-column blocks, so each column is computed as in one call over all of them). */
#define CK_GEMV_COLUMNS 512

typedef struct {
  int64_t m, k;
  const float *a;
  int64_t a_row_stride, a_col_stride;
  const ck_b_source *b;
  float *c;
  int64_t ldc;
} ck_gemv_job;

static void ck_gemv_columns(void *ctx, int64_t j0, int64_t j1) {
  const ck_gemv_job *job = (const ck_gemv_job *)ctx;
  const ck_b_source *b = job->b;
  int64_t i;
  for (i = 0; i < job->m; ++i) {
    const float *a = job->a + i * job->a_row_stride;
    float *c = job->c + i * job->ldc + j0;
    if (b->row_stride == 1 && job->a_col_stride == 1)
      ck_micro_kernel_current()->gemv_dot(j1 - j0, job->k, a, b->base + j0 * b->col_stride, b->col_stride, c);
    else
      ck_gemv_axpy(j1 - j0, job->k, a, job->a_col_stride, b->base + j0 * b->col_stride, b->row_stride, c);
  }
}

static void ck_gemv_rows(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_row_stride, int64_t a_col_stride,
                         const ck_b_source *b, float *c, int64_t ldc) {
  ck_gemv_job job;
  job.m = m;
  job.k = k;
  job.a = a;
  job.a_row_stride = a_row_stride;
  job.a_col_stride = a_col_stride;
  job.b = b;
  job.c = c;
  job.ldc = ldc;
  ck_parallel_range(n, CK_GEMV_COLUMNS, ck_gemv_columns, &job);
}

int32_t ck_gemm_core(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_row_stride,
                     int64_t a_col_stride, const float *a_packed, const ck_b_source *b, float *c, int64_t ldc,
                     const ck_epilogue *epilogue, const float *residual, void *workspace) {
  static const ck_epilogue none = {NULL, 0, CK_ACT_NONE};
  ck_gemm_job job;
  ck_b_source whole;
  if (m < 0 || n < 0 || k < 0 || ldc < n || b == NULL) return CK_EBADPARAM;
  if (m == 0 || n == 0) return CK_OK;
  if (residual != NULL && epilogue == NULL) epilogue = &none; /* the residual rides on the epilogue */
  if (k == 0) {
    ck_fill_epilogue_only(m, n, c, ldc, epilogue, residual);
    return CK_OK;
  }
  if (ck_gemv_takes(m, a_packed, b, a_col_stride)) {
    ck_gemv_rows(m, n, k, a, a_row_stride, a_col_stride, b, c, ldc);
    if (epilogue != NULL) ck_epilogue_tile(c, ldc, m, n, epilogue, 0, 0, residual);
    return CK_OK;
  }
  if (workspace == NULL) return CK_EBADPARAM;
  job.m = m;
  job.n = n;
  job.k = k;
  job.a = a;
  job.a_row_stride = a_row_stride;
  job.a_col_stride = a_col_stride;
  job.a_packed = a_packed;
  job.b = b;
  job.c = c;
  job.ldc = ldc;
  job.epilogue = epilogue;
  job.residual = residual;
  job.kernel = ck_micro_kernel_current();
  job.workspace = (char *)workspace;
  job.split = ck_gemm_split_of(m, n);
  if (byoc_get_num_threads() == 1) {
    /* one thread: one row group, B packed per chunk right before its use (a whole B packed ahead has left
     * the cache by then: some 5% of ResNet-50). Every element is computed by the same micro-kernel steps
     * either way (tiles on the same MC and 32-column grid), so the bytes equal those of any thread count. */
    job.split.row_groups = 1;
    job.split.group_rows = ck_round_up(m, CK_MC);
  } else if (b->packed == NULL && ck_gemm_packs_whole_b(m, n)) {
    const uintptr_t end = (uintptr_t)workspace + (size_t)ck_gemm_slots(m, n) * ck_gemm_slot_bytes(m, n, k, 1);
    whole.base = NULL;
    whole.row_stride = whole.col_stride = 0;
    whole.conv = NULL;
    whole.packed = (const float *)(void *)((end + (CK_ALIGN - 1)) & ~(uintptr_t)(CK_ALIGN - 1));
    ck_gemm_pack_whole_b(b, n, k, (float *)(void *)(uintptr_t)whole.packed);
    job.b = b = &whole;
  }
  if (byoc_get_num_threads() > 1) ck_gemm_refine(&job.split, n); /* (B packed ahead: see ck_gemm_packs_whole_b) */
  job.slot_bytes = ck_gemm_slot_bytes(m, n, k, b->packed != NULL);
  if (byoc_parallel_chunks((int32_t)(job.split.n_chunks * job.split.row_groups), (int32_t)ck_gemm_slots(m, n),
                           ck_gemm_task, &job) != 0)
    return CK_EBADPARAM;
  return CK_OK;
}

int32_t ck_gemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t a_row_stride,
                int64_t a_col_stride, const float *b, int64_t b_row_stride, int64_t b_col_stride,
                float *c, int64_t ldc, const ck_epilogue *epilogue, void *workspace) {
  ck_b_source source;
  source.base = b;
  source.row_stride = b_row_stride;
  source.col_stride = b_col_stride;
  source.conv = NULL;
  source.packed = NULL;
  if (a == NULL || b == NULL || c == NULL) return CK_EBADPARAM;
  return ck_gemm_core(m, n, k, a, a_row_stride, a_col_stride, NULL, &source, c, ldc, epilogue, NULL, workspace);
}
