/* ck_qconv.c - qnn.conv2d + bias + requantize (+ clip) on int8/uint8 NCHW data, int8 OIHW weights.
 *
 * Grouped and ordinary convolutions are GEMMs per image and group (ck_qgemm_core): the packed
 * weight is A [out/groups, K], B [K, OH*OW] is the input itself for 1x1 stride-1 unpadded
 * convolutions and otherwise an im2col copy in the workspace (rows of contiguous bytes, padding
 * filled with the input zero point, so padded taps contribute exactly zero after the folded bias).
 * The im2col covers the whole output image, or (params.im2col_columns > 0) a chunk of that many
 * output pixels at a time, each chunk a GEMM over those columns only: the scratch is bounded for
 * small memories and every output element is the same sum of the same products either way (CMSIS-NN
 * bounds its scratch the same way, two output pixels at a time).
 * Depthwise convolutions (one input and one output channel per group, MobileNet's 3x3 and the
 * global average pool the importer writes as a depthwise sum) run directly: each input plane is
 * copied into a border of the zero point, each output row sums its taps into int32 lanes and
 * requantizes (ck_qdw_row: AVX-512 where the CPU has it, portable C otherwise).
 */
#include <string.h>

#include "ck_qinternal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static int ck_qconv_is_depthwise(const ck_conv2d_params *c) {
  return c->groups == c->channels && c->groups == c->out_channels;
}

static int ck_qdw_whole_plane(const ck_qconv2d_params *p);

static int ck_qconv_valid(const ck_qconv2d_params *p, int64_t *oh, int64_t *ow) {
  return p != NULL && ck_conv2d_output_hw(&p->conv, oh, ow) == CK_OK && ck_qparams_valid(&p->q) &&
         (p->winograd == 0 || (p->winograd == 1 && ck_qwinograd_takes(p))) &&
         (p->channels_last == 0 || ck_qdirect_takes(p) ||
          (p->channels_last == 2 && ck_qconv_is_depthwise(&p->conv) && ck_qdw_whole_plane(p))) &&
         (p->pairs == 0 || (p->pairs == 1 && p->winograd == 0 && p->im2col_columns <= 0 &&
                            !ck_qconv_is_depthwise(&p->conv))) &&
         (p->channel_order == NULL || (p->pairs == 1 && p->conv.kernel_h == 1 && p->conv.kernel_w == 1 &&
                                       p->conv.groups == 1));
}

static int ck_qconv_is_pointwise(const ck_conv2d_params *c) {
  return c->kernel_h == 1 && c->kernel_w == 1 && c->stride_h == 1 && c->stride_w == 1 && c->pad_top == 0 &&
         c->pad_left == 0 && c->pad_bottom == 0 && c->pad_right == 0;
}

static int64_t ck_qconv_depth(const ck_conv2d_params *c) {
  return c->channels / c->groups * c->kernel_h * c->kernel_w;
}

/* Rows of the packed weight (every group's, padded to CK_QMR) and its bytes without a correction table */
static int64_t ck_qpacked_rows(const ck_conv2d_params *c) {
  return c->groups * ck_qround_up(c->out_channels / c->groups, CK_QMR);
}

static int64_t ck_qpacked_plain_bytes(const ck_conv2d_params *c) {
  return ck_qpacked_rows(c) * ck_qround_up(ck_qconv_depth(c), 4) + CK_QKB;
}

size_t ck_qconv2d_packed_weight_bytes(const ck_qconv2d_params *p) {
  int64_t oh, ow;
  if (!ck_qconv_valid(p, &oh, &ow) || ck_qconv_is_depthwise(&p->conv)) return 0;
  if (p->winograd) return ck_qwinograd_weight_bytes(p);
  if (p->channels_last) return ck_qdirect_weight_bytes(p);
  if (p->pairs) /* at most one entry per row and k-step */
    return (size_t)(ck_qpacked_plain_bytes(&p->conv) + 4 * (ck_qpacked_rows(&p->conv) + 1) +
                    8 * ck_qpacked_rows(&p->conv) * (ck_qround_up(ck_qconv_depth(&p->conv), 4) / 4));
  return (size_t)ck_qpacked_plain_bytes(&p->conv);
}

static void ck_qput_le32(uint8_t *p, int32_t v) {
  const uint32_t u = (uint32_t)v;
  p[0] = (uint8_t)u;
  p[1] = (uint8_t)(u >> 8);
  p[2] = (uint8_t)(u >> 16);
  p[3] = (uint8_t)(u >> 24);
}

/* The pair (w[0], w[1]) made pair-safe in place, what was taken out in r[0], r[1] (ck_qnn.h: same-sign pairs summing
 * past +-128 lose the excess from the larger magnitude, the first on a tie) */
static void ck_qsafe_pair(int8_t *w, int8_t *r) {
  const int32_t sum = (int32_t)w[0] + (int32_t)w[1];
  const int32_t excess = w[0] > 0 && w[1] > 0 && sum > 128     ? sum - 128
                         : w[0] < 0 && w[1] < 0 && sum < -128 ? sum + 128
                                                              : 0;
  const int larger = excess > 0 ? (w[1] > w[0]) : (w[1] < w[0]);
  r[0] = r[1] = 0;
  if (excess == 0) return;
  w[larger] = (int8_t)(w[larger] - excess);
  r[larger] = (int8_t)excess;
}

/* Every row's k-steps made pair-safe, the correction table after the rows (ck_qnn.h's layout) */
static void ck_qpack_pairs(const ck_conv2d_params *c, int8_t *packed) {
  const int64_t rows = ck_qpacked_rows(c), steps = ck_qround_up(ck_qconv_depth(c), 4) / 4;
  uint8_t *row_start = (uint8_t *)packed + ck_qpacked_plain_bytes(c), *entries = row_start + 4 * (rows + 1);
  int64_t r, s, n = 0;
  for (r = 0; r < rows; ++r) {
    ck_qput_le32(row_start + 4 * r, (int32_t)n);
    for (s = 0; s < steps; ++s) {
      int8_t *w = packed + (r * steps + s) * 4, taken[4];
      ck_qsafe_pair(w, taken);
      ck_qsafe_pair(w + 2, taken + 2);
      if ((taken[0] | taken[1] | taken[2] | taken[3]) == 0) continue;
      ck_qput_le32(entries + 8 * n, (int32_t)(s << 3 | (r & 7)));
      memcpy(entries + 8 * n + 4, taken, 4);
      ++n;
    }
  }
  ck_qput_le32(row_start + 4 * rows, (int32_t)n);
}

/* Whether order[0, n) is a permutation of [0, n), marked in seen[0, n) (zeroed first) */
static int ck_qis_permutation(const int32_t *order, int64_t n, uint8_t *seen) {
  int64_t i;
  memset(seen, 0, (size_t)n);
  for (i = 0; i < n; ++i) {
    if (order[i] < 0 || order[i] >= n || seen[order[i]]) return 0;
    seen[order[i]] = 1;
  }
  return 1;
}

int32_t ck_qconv2d_pack_weight(const ck_qconv2d_params *p, const int8_t *weight, int8_t *packed) {
  const size_t bytes = ck_qconv2d_packed_weight_bytes(p);
  int64_t g, r, c;
  if (bytes == 0 || weight == NULL || packed == NULL) return CK_EBADPARAM;
  if (p->winograd) {
    ck_qwinograd_pack_weight(p, weight, (int16_t *)(void *)packed);
    return CK_OK;
  }
  if (p->channels_last) {
    ck_qdirect_pack_weight(p, weight, packed);
    return CK_OK;
  }
  {   /* per group [round_up(og, 8)][round_up(K, 4)] row-major, zeros past the ends; CK_QKB bytes of slack */
    const int64_t og = p->conv.out_channels / p->conv.groups, k = ck_qconv_depth(&p->conv);
    const int64_t k4 = ck_qround_up(k, 4), group_bytes = ck_qround_up(og, CK_QMR) * k4;
    const int32_t *order = p->channel_order;
    /* the packed rows (8 x k4 bytes at least) are the permutation check's scratch before they are written */
    if (order != NULL && !ck_qis_permutation(order, k, (uint8_t *)packed)) return CK_EBADPARAM;
    memset(packed, 0, bytes);
    for (g = 0; g < p->conv.groups; ++g)
      for (r = 0; r < og; ++r) {
        const int8_t *w = weight + (g * og + r) * k;
        int8_t *dst = packed + g * group_bytes + r * k4;
        if (order == NULL)
          memcpy(dst, w, (size_t)k);
        else /* one group, a 1x1 kernel: k is the input channel */
          for (c = 0; c < k; ++c) dst[c] = w[order[c]];
      }
  }
  if (p->pairs) ck_qpack_pairs(&p->conv, packed);
  return CK_OK;
}

static int64_t ck_qpadded_plane(const ck_conv2d_params *c) {
  return (c->height + c->pad_top + c->pad_bottom) * (c->width + c->pad_left + c->pad_right);
}

/* Output pixels per GEMM: the whole image, or (when it is im2col'd) im2col_columns rounded up to whole
 * B panels. */
static int64_t ck_qconv_chunk(const ck_qconv2d_params *p, int64_t n) {
  const int64_t c = p->im2col_columns > 0 ? ck_qround_up(p->im2col_columns, CK_QNR) : n;
  return ck_qconv_is_pointwise(&p->conv) || c > n ? n : c;
}

/* im2col_columns 0 (no bound asked) and a window wider than one pixel: the panels come from a bordered copy of
 * the input (ck_qpack_bordered), no im2col rows */
static int ck_qconv_bordered(const ck_qconv2d_params *p) {
  return p->im2col_columns <= 0 && p->conv.kernel_h * p->conv.kernel_w > 1;
}

static int64_t ck_qbordered_bytes(const ck_conv2d_params *c, int64_t cg);
static int64_t ck_qdw_slot_bytes(const ck_conv2d_params *c, int64_t oh, int64_t ow);
static int64_t ck_qdw_slots(const ck_conv2d_params *c);

size_t ck_qconv2d_workspace_bytes(const ck_qconv2d_params *p) {
  int64_t oh, ow, k, chunk;
  if (!ck_qconv_valid(p, &oh, &ow)) return 0;
  if (p->winograd) return ck_qwinograd_workspace_bytes(p, oh, ow);
  if (p->channels_last && !ck_qconv_is_depthwise(&p->conv)) return ck_qdirect_workspace_bytes(p, oh, ow);
  if (ck_qconv_is_depthwise(&p->conv))
    return (size_t)(CK_QALIGN + ck_qdw_slots(&p->conv) * ck_qdw_slot_bytes(&p->conv, oh, ow));
  k = ck_qconv_depth(&p->conv);
  if (ck_qconv_bordered(p))
    return (size_t)(CK_QALIGN + ck_qgemm_slots(oh * ow) * ck_qgemm_panel_stride(k) +
                    ck_qbordered_bytes(&p->conv, p->conv.channels / p->conv.groups));
  chunk = ck_qconv_chunk(p, oh * ow);
  if (chunk == CK_QNR && !ck_qconv_is_pointwise(&p->conv)) /* the im2col is the one B panel */
    return (size_t)(CK_QALIGN + ck_qgemm_panel_bytes(k));
  return (size_t)(CK_QALIGN + ck_qgemm_slots(chunk) * ck_qgemm_panel_stride(k) +
                  (ck_qconv_is_pointwise(&p->conv) ? 0 : k * chunk));
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
/* ck_qgather at stride 2, 64 bytes a step through masked loads and stores: no scalar tail (ResNet-50's strided
 * 1x1 convolutions gather rows of 28, 14 and 7 pixels, which the SSE2 loop left wholly or mostly to it) */
__attribute__((target("avx512f,avx512bw"))) static void ck_qgather2_avx512(uint8_t *dst, const uint8_t *src,
                                                                            int64_t n) {
  int64_t x;
  for (x = 0; x < n; x += 64) {
    const int64_t m = n - x < 64 ? n - x : 64;
    _mm512_mask_storeu_epi8((void *)(dst + x), ck_qbits(0, m), ck_qeven_bytes((uintptr_t)(src + 2 * x), 0, m));
  }
}
#endif

/* dst[x] = src[x * s] for x < n: memcpy for stride 1; stride 2 (ResNet's stem and downsampling)
 * keeps the even bytes of 32-byte loads (SSE2; AVX-512 beside the VNNI or AMX kernel), never reading past
 * src[(n - 1) * 2]. */
static void ck_qgather(uint8_t *restrict dst, const uint8_t *restrict src, int64_t n, int64_t s) {
  int64_t x = 0;
  if (s == 1) {
    memcpy(dst, src, (size_t)n);
    return;
  }
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
  if (s == 2 && ck_qvbmi()) {
    ck_qgather2_avx512(dst, src, n);
    return;
  }
#endif
#if defined(__SSE2__)
  if (s == 2) {
    const __m128i even = _mm_set1_epi16(0x00FF);
    for (; x + 16 < n; x += 16) {
      const __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * x)), even);
      const __m128i b = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * x + 16)), even);
      _mm_storeu_si128((__m128i *)(void *)(dst + x), _mm_packus_epi16(a, b));
    }
  }
#endif
  for (; x < n; ++x) dst[x] = src[x * s];
}

/* For output pixels q in [first, first + n) (q = y * ow + x) and channels [ch0, ch1):
 * rows[(c * kh + i) * kw + j][q - first] = input[c, y*sh - pt + i*dh, x*sw - pl + j*dw] or zp. */
static void ck_qim2col_channels(const ck_conv2d_params *c, const int32_t *order, int64_t ch0, int64_t ch1,
                                int64_t ow_n, int64_t first, int64_t n, const uint8_t *in, uint8_t zp,
                                uint8_t *rows) {
  int64_t ch, i, j, q;
  if (c->kernel_h == 1 && c->kernel_w == 1 && c->pad_top == 0 && c->pad_left == 0 && c->pad_bottom == 0 &&
      c->pad_right == 0 && first % ow_n == 0 &&
      n % ow_n == 0) {   /* a strided 1x1 window over whole output rows: every tap inside, one gather per row */
    for (ch = ch0; ch < ch1; ++ch)
      for (q = 0; q < n; q += ow_n)
        ck_qgather(rows + ch * n + q,
                   in + ((order != NULL ? order[ch] : ch) * c->height + (first + q) / ow_n * c->stride_h) * c->width,
                   ow_n, c->stride_w);
    return;
  }
  for (ch = ch0; ch < ch1; ++ch) {
    const uint8_t *plane = in + (order != NULL ? order[ch] : ch) * c->height * c->width;
    for (i = 0; i < c->kernel_h; ++i) {
      for (j = 0; j < c->kernel_w; ++j) {
        uint8_t *row = rows + ((ch * c->kernel_h + i) * c->kernel_w + j) * n;
        const int64_t shift = j * c->dilation_w - c->pad_left, s = c->stride_w;
        /* output columns [lo, hi) read inside the image */
        int64_t lo = shift >= 0 ? 0 : (-shift + s - 1) / s;
        int64_t hi = c->width - 1 - shift < 0 ? 0 : (c->width - 1 - shift) / s + 1;
        if (hi > ow_n) hi = ow_n;
        if (lo > hi) lo = hi;
        for (q = first; q < first + n;) {   /* the chunk's part of one output row [x0, x1) per pass */
          const int64_t y = q / ow_n, x0 = q - y * ow_n;
          const int64_t x1 = ow_n - x0 < first + n - q ? ow_n : x0 + (first + n - q);
          const int64_t ih = y * c->stride_h - c->pad_top + i * c->dilation_h;
          const int64_t a = lo < x0 ? x0 : (lo < x1 ? lo : x1), b = hi < a ? a : (hi < x1 ? hi : x1);
          uint8_t *dst = row + (q - first);   /* pixel (y, x0) */
          if (ih < 0 || ih >= c->height) {
            memset(dst, zp, (size_t)(x1 - x0));
          } else {
            memset(dst, zp, (size_t)(a - x0));
            ck_qgather(dst + (a - x0), plane + ih * c->width + a * s + shift, b - a, s);
            memset(dst + (b - x0), zp, (size_t)(x1 - b));
          }
          q += x1 - x0;
        }
      }
    }
  }
}

/* The smallest scratch (chunks of CK_QNR pixels): the chunk's im2col written straight into the B panel
 * (ck_qgemm_panel's layout, flipped into uint8), one byte at a time: no rows buffer beside the panel. */
static void ck_qim2col_panel(const ck_conv2d_params *c, int64_t cg, int64_t ow_n, int64_t first, int64_t n,
                             const uint8_t *in, uint8_t zp, uint8_t flip, uint8_t *panel) {
  const int64_t k = cg * c->kernel_h * c->kernel_w, k4 = ck_qround_up(k, 4);
  int64_t ch, i, j, q;
  if (n < CK_QNR || k4 != k) memset(panel, 0, (size_t)(k4 * CK_QNR));
  for (ch = 0; ch < cg; ++ch) {
    for (i = 0; i < c->kernel_h; ++i) {
      for (j = 0; j < c->kernel_w; ++j) {
        const int64_t t = (ch * c->kernel_h + i) * c->kernel_w + j;
        uint8_t *dst = panel + (t / 4) * 4 * CK_QNR + t % 4;
        for (q = 0; q < n; ++q) {
          const int64_t y = (first + q) / ow_n, x = first + q - y * ow_n;
          const int64_t ih = y * c->stride_h - c->pad_top + i * c->dilation_h;
          const int64_t iw = x * c->stride_w - c->pad_left + j * c->dilation_w;
          const int inside = ih >= 0 && ih < c->height && iw >= 0 && iw < c->width;
          dst[q * 4] = (uint8_t)((inside ? in[(ch * c->height + ih) * c->width + iw] : zp) ^ flip);
        }
      }
    }
  }
}

/* The im2col in parallel: tasks of CK_QIM2COL_CHANNELS input channels, each writing its own rows. */
#define CK_QIM2COL_CHANNELS 4

typedef struct {
  const ck_conv2d_params *c;
  const int32_t *order; /* NULL, or the input channel of each im2col channel (ck_qconv2d_params.channel_order) */
  int64_t cg, ow_n, first, n;
  const uint8_t *in;
  uint8_t zp;
  uint8_t *rows;
} ck_qim2col_job;

static void ck_qim2col_task(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_qim2col_job *job = (const ck_qim2col_job *)ctx;
  const int64_t ch0 = (int64_t)task * CK_QIM2COL_CHANNELS;
  (void)n_tasks;
  ck_qim2col_channels(job->c, job->order, ch0, ch0 + CK_QIM2COL_CHANNELS < job->cg ? ch0 + CK_QIM2COL_CHANNELS : job->cg,
                      job->ow_n, job->first, job->n, job->in, job->zp, job->rows);
}

static void ck_qim2col(const ck_conv2d_params *c, const int32_t *order, int64_t cg, int64_t ow_n, int64_t first,
                       int64_t n, const uint8_t *in, uint8_t zp, uint8_t *rows) {
  ck_qim2col_job job;
  job.c = c;
  job.order = order;
  job.cg = cg;
  job.ow_n = ow_n;
  job.first = first;
  job.n = n;
  job.in = in;
  job.zp = zp;
  job.rows = rows;
  byoc_parallel_for((int32_t)((cg + CK_QIM2COL_CHANNELS - 1) / CK_QIM2COL_CHANNELS), ck_qim2col_task, &job);
}

/* ---- the hosted path (im2col_columns 0): B panels packed straight from a bordered copy ---------- */

/* The group's input planes copied into a border of the zero point, every byte flipped into uint8 (int8 data
 * offset by 128, as the panels hold it), 4 * CK_QNR bytes of slack after the last plane (the window gather
 * reads 128 bytes from a panel's first pixel; the stride-2 gather
 * reads 32 bytes for 16). */
typedef struct {
  const ck_conv2d_params *c;
  const uint8_t *pad;      /* cg planes of ph x pw */
  int64_t ph, pw, ow;
  int vbmi;                /* ck_qvbmi(): interleave with AVX512-VBMI */
} ck_qbordered;

static int64_t ck_qbordered_bytes(const ck_conv2d_params *c, int64_t cg) {
  return ck_qround_up(cg * ck_qpadded_plane(c) + 4 * CK_QNR, CK_QALIGN);
}

typedef struct {
  const ck_conv2d_params *c;
  const uint8_t *in;
  uint8_t fill, flip;
  uint8_t *pad;
} ck_qborder_job;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
/* A plane's rows between its top and bottom borders, 64 bytes of the bordered row a step: one masked load takes the
 * row's bytes and the zero point around them (lanes outside the row merge it in), no byte read outside the row, no
 * memset per row (ResNet's 14x14 and 7x7 rows went byte by byte through the SSE2 loop) */
__attribute__((target("avx512f,avx512bw"))) static void ck_qborder_rows_avx512(const ck_conv2d_params *c,
                                                                                const uint8_t *src, uint8_t zp,
                                                                                uint8_t flip, uint8_t *dst) {
  const int64_t pw = c->width + c->pad_left + c->pad_right;
  const __m512i vzp = _mm512_set1_epi8((char)zp), vflip = _mm512_set1_epi8((char)flip);
  int64_t y, x0;
  for (y = 0; y < c->height; ++y, src += c->width, dst += pw)
    for (x0 = 0; x0 < pw; x0 += 64) {
      const int64_t m = pw - x0 < 64 ? pw - x0 : 64;
      const int64_t a = c->pad_left > x0 ? c->pad_left - x0 : 0;
      const int64_t b = c->pad_left + c->width - x0 < m ? c->pad_left + c->width - x0 : m;
      const uintptr_t from = (uintptr_t)src + (uintptr_t)(x0 - c->pad_left);   /* column x0's byte (an address) */
      const __m512i v = _mm512_mask_loadu_epi8(vzp, ck_qbits(a, b > a ? b : a), (const void *)from);
      _mm512_mask_storeu_epi8((void *)(dst + x0), ck_qbits(0, m), _mm512_xor_si512(v, vflip));
    }
}
#endif

/* planes [first, last) of the copy: each plane's border filled, its rows flipped in */
static void ck_qborder_planes(void *ctx, int64_t first, int64_t last) {
  const ck_qborder_job *j = (const ck_qborder_job *)ctx;
  const ck_conv2d_params *c = j->c;
  const int64_t pw = c->width + c->pad_left + c->pad_right, plane = ck_qpadded_plane(c);
  int64_t ch, y, x;
#if defined(__SSE2__)
  const __m128i vflip = _mm_set1_epi8((char)j->flip);
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
  if (ck_qvbmi()) {
    for (ch = first; ch < last; ++ch) {
      uint8_t *p = j->pad + ch * plane;
      memset(p, j->fill, (size_t)(c->pad_top * pw));
      memset(p + (c->pad_top + c->height) * pw, j->fill, (size_t)(c->pad_bottom * pw));
      ck_qborder_rows_avx512(c, j->in + ch * c->height * c->width, (uint8_t)(j->fill ^ j->flip), j->flip,
                             p + c->pad_top * pw);
    }
    return;
  }
#endif
  for (ch = first; ch < last; ++ch) {
    uint8_t *p = j->pad + ch * plane;
    memset(p, j->fill, (size_t)(c->pad_top * pw + c->pad_left));
    memset(p + (c->pad_top + c->height) * pw - c->pad_right, j->fill, (size_t)(c->pad_bottom * pw + c->pad_right));
    for (y = 0; y < c->height; ++y) {
      const uint8_t *src = j->in + (ch * c->height + y) * c->width;
      uint8_t *dst = p + (y + c->pad_top) * pw + c->pad_left;
      if (y > 0) memset(dst - c->pad_left - c->pad_right, j->fill, (size_t)(c->pad_left + c->pad_right));
      x = 0;
#if defined(__SSE2__)
      for (; x + 16 <= c->width; x += 16)
        _mm_storeu_si128((__m128i *)(void *)(dst + x),
                         _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + x)), vflip));
#endif
      for (; x < c->width; ++x) dst[x] = (uint8_t)(src[x] ^ j->flip);
    }
  }
}

/* the copy in parallel, planes in ranges of about CK_QBORDER_GRAIN bytes (fixed by their size): 16 KiB, so that
 * ResNet's 14x14 and 7x7 copies (256 and 81 bytes a plane) make 4 and 3 ranges, not one on the caller */
#define CK_QBORDER_GRAIN 16384
static void ck_qborder_copy(const ck_conv2d_params *c, int64_t cg, const uint8_t *in, uint8_t zp, uint8_t flip,
                            uint8_t *pad) {
  const int64_t plane = ck_qpadded_plane(c);
  ck_qborder_job j;
  j.c = c;
  j.in = in;
  j.fill = (uint8_t)(zp ^ flip);
  j.flip = flip;
  j.pad = pad;
  memset(pad + cg * plane, j.fill, (size_t)(ck_qbordered_bytes(c, cg) - cg * plane));   /* the slack */
  ck_parallel_range(cg, plane >= CK_QBORDER_GRAIN ? 1 : CK_QBORDER_GRAIN / plane, ck_qborder_planes, &j);
}

/* The panel's output pixels n0..n0 + cols as runs within output rows: run r starts at column dst[r] of the
 * panel and at src[r] in a bordered plane (tap (0, 0)), len[r] pixels long. */
typedef struct {
  int64_t runs, dst[CK_QNR], src[CK_QNR], len[CK_QNR];
} ck_qruns;

static void ck_qpanel_runs(const ck_qbordered *s, int64_t n0, int64_t cols, ck_qruns *r) {
  int64_t q = n0;
  r->runs = 0;
  while (q < n0 + cols) {
    const int64_t y = q / s->ow, x0 = q - y * s->ow;
    const int64_t len = s->ow - x0 < n0 + cols - q ? s->ow - x0 : n0 + cols - q;
    r->dst[r->runs] = q - n0;
    r->src[r->runs] = y * s->c->stride_h * s->pw + x0 * s->c->stride_w;
    r->len[r->runs++] = len;
    q += len;
  }
}

/* One B row (the tap at offset `tap` of the bordered copy): a pointer into the copy when the pixels are one
 * run of CK_QNR at stride 1, else gathered into tmp (zeros past cols). */
static const uint8_t *ck_qtap_row(const ck_qbordered *s, const ck_qruns *r, int64_t tap, int64_t cols,
                                  uint8_t *tmp) {
  int64_t i;
  if (r->runs == 1 && cols == CK_QNR && s->c->stride_w == 1) return s->pad + tap + r->src[0];
  for (i = 0; i < r->runs; ++i) {
#if defined(__SSE2__)
    if (s->c->stride_w == 1) {   /* 16 at a time, reading into the copy's slack and writing into tmp's */
      const uint8_t *src = s->pad + tap + r->src[i];
      int64_t x;
      for (x = 0; x < r->len[i]; x += 16)
        _mm_storeu_si128((__m128i *)(void *)(tmp + r->dst[i] + x),
                         _mm_loadu_si128((const __m128i *)(const void *)(src + x)));
      continue;
    }
    if (s->c->stride_w == 2) {   /* the same, the even bytes of 32 */
      const __m128i even = _mm_set1_epi16(0x00FF);
      const uint8_t *src = s->pad + tap + r->src[i];
      int64_t x;
      for (x = 0; x < r->len[i]; x += 16) {
        const __m128i lo = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * x)), even);
        const __m128i hi = _mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * x + 16)), even);
        _mm_storeu_si128((__m128i *)(void *)(tmp + r->dst[i] + x), _mm_packus_epi16(lo, hi));
      }
      continue;
    }
#endif
    ck_qgather(tmp + r->dst[i], s->pad + tap + r->src[i], r->len[i], s->c->stride_w);
  }
  if (cols < CK_QNR) memset(tmp + cols, 0, (size_t)(CK_QNR - cols));
  return tmp;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
#define CK_QCONV_VBMI 1
#include <immintrin.h>
/* ck_qinterleave4 (no flip) in two vpermt2b: rows 0 and 1 in a (256 bits each), rows 2 and 3 in b */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static inline void ck_qinterleave4_vbmi_regs(__m512i a, __m512i b,
                                                                                                   uint8_t *dst) {
  /* byte 4j + r of the output: row r's column j (row r at 32 r of a:b); hi: columns 16..31 */
  static const uint8_t lo[64] = {
    0, 32, 64, 96, 1, 33, 65, 97, 2, 34, 66, 98, 3, 35, 67, 99,
    4, 36, 68, 100, 5, 37, 69, 101, 6, 38, 70, 102, 7, 39, 71, 103,
    8, 40, 72, 104, 9, 41, 73, 105, 10, 42, 74, 106, 11, 43, 75, 107,
    12, 44, 76, 108, 13, 45, 77, 109, 14, 46, 78, 110, 15, 47, 79, 111};
  static const uint8_t hi[64] = {
    16, 48, 80, 112, 17, 49, 81, 113, 18, 50, 82, 114, 19, 51, 83, 115,
    20, 52, 84, 116, 21, 53, 85, 117, 22, 54, 86, 118, 23, 55, 87, 119,
    24, 56, 88, 120, 25, 57, 89, 121, 26, 58, 90, 122, 27, 59, 91, 123,
    28, 60, 92, 124, 29, 61, 93, 125, 30, 62, 94, 126, 31, 63, 95, 127};
  _mm512_storeu_si512((void *)dst, _mm512_permutex2var_epi8(a, _mm512_loadu_si512((const void *)lo), b));
  _mm512_storeu_si512((void *)(dst + 64), _mm512_permutex2var_epi8(a, _mm512_loadu_si512((const void *)hi), b));
}

__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void ck_qinterleave4_vbmi(
    const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3, uint8_t *dst) {
  ck_qinterleave4_vbmi_regs(
      _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)r0)),
                         _mm256_loadu_si256((const __m256i *)(const void *)r1), 1),
      _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)r2)),
                         _mm256_loadu_si256((const __m256i *)(const void *)r3), 1),
      dst);
}

/* One tap's bytes of the panel's pixels, gathered from the 128 bytes at p (the tap of the first pixel)
 * through index (ck_qpanel_window's), zeros past the valid columns: the low 256 bits */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static inline __m512i ck_qgather_window(const uint8_t *p, __m512i index,
                                                                                             __mmask64 valid) {
  return _mm512_maskz_permutex2var_epi8(valid, _mm512_loadu_si512((const void *)p), index,
                                        _mm512_loadu_si512((const void *)(p + 64)));
}

/* Four taps (offsets tap[r] in the bordered copy, -1: a zero row past k) of a panel whose pixels lie within 128
 * bytes of base: gathered by vpermt2b and interleaved in registers, no row copies */
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) static void ck_qpack4_window(const uint8_t *base, const int64_t *tap,
                                                                                   const uint8_t *index, int64_t cols,
                                                                                   uint8_t *dst) {
  const __m512i idx = _mm512_loadu_si512((const void *)index);
  const __mmask64 valid = cols >= CK_QNR ? (__mmask64)0xFFFFFFFFu : ((__mmask64)1 << cols) - 1u;
  __m512i g[4];
  int r;
  for (r = 0; r < 4; ++r) g[r] = tap[r] < 0 ? _mm512_setzero_si512() : ck_qgather_window(base + tap[r], idx, valid);
  ck_qinterleave4_vbmi_regs(_mm512_inserti64x4(g[0], _mm512_castsi512_si256(g[1]), 1),
                            _mm512_inserti64x4(g[2], _mm512_castsi512_si256(g[3]), 1), dst);
}
#endif

#if defined(CK_QCONV_VBMI)
/* index[j] = the byte offset of the panel's pixel j from its first (the same for every tap), 0 past the runs;
 * 1 when every offset is below 128 (two 64-byte loads hold a tap's bytes of the whole panel) */
static int ck_qpanel_window(const ck_qruns *r, int64_t stride_w, uint8_t *index) {
  int64_t i, x, j = 0;
  for (i = 0; i < r->runs; ++i)
    for (x = 0; x < r->len[i]; ++x, ++j) {
      const int64_t off = r->src[i] + x * stride_w - r->src[0];
      if (off > 127) return 0;
      index[j] = (uint8_t)off;
    }
  for (; j < 64; ++j) index[j] = 0;
  return 1;
}
#endif

/* ck_qpack_b's panel of the taps (channel, i, j) in k order, read from the bordered copy */
static void ck_qpack_bordered(const ck_qb_source *b, int64_t k, int64_t n0, int64_t cols, uint8_t *panel) {
  const ck_qbordered *s = (const ck_qbordered *)b->ctx;
  const ck_conv2d_params *c = s->c;
  static const uint8_t zeros[CK_QNR];
  uint8_t tmp[4][CK_QNR + 16];   /* + 16: the gathers' last 16-byte store */
  const uint8_t *rows[4];
  ck_qruns runs;
  int64_t t = 0, ch = 0, i = 0, j = 0, r;
#if defined(CK_QCONV_VBMI)
  uint8_t index[64];
  int window;
#endif
  ck_qpanel_runs(s, n0, cols, &runs);
#if defined(CK_QCONV_VBMI)
  /* pixels that a tap row would gather (several runs, or stride > 1) come through a byte permutation */
  window = s->vbmi && (runs.runs > 1 || c->stride_w != 1) && ck_qpanel_window(&runs, c->stride_w, index);
#endif
  while (t < k) {
    int64_t tap[4];
    for (r = 0; r < 4; ++r, ++t) {
      if (t >= k) {
        tap[r] = -1;
        continue;
      }
      tap[r] = ch * s->ph * s->pw + i * c->dilation_h * s->pw + j * c->dilation_w;
      if (++j == c->kernel_w) {   /* the next tap in k order */
        j = 0;
        if (++i == c->kernel_h) {
          i = 0;
          ++ch;
        }
      }
    }
#if defined(CK_QCONV_VBMI)
    if (window) {
      ck_qpack4_window(s->pad + runs.src[0], tap, index, cols, panel + (t - 4) * CK_QNR);
      continue;
    }
#endif
    for (r = 0; r < 4; ++r) rows[r] = tap[r] < 0 ? zeros : ck_qtap_row(s, &runs, tap[r], cols, tmp[r]);
#if defined(CK_QCONV_VBMI)
    if (s->vbmi) {
      ck_qinterleave4_vbmi(rows[0], rows[1], rows[2], rows[3], panel + (t - 4) * CK_QNR);
      continue;
    }
#endif
    ck_qinterleave4(rows[0], rows[1], rows[2], rows[3], 0, panel + (t - 4) * CK_QNR);
  }
}

/* ---- depthwise: one task per plane on the runtime's pool, each in its thread's slot of scratch ---- */

/* A slot: the plane bordered with the zero point (+ 64 bytes the vector kernels may read past it), an int32
 * row for the row kernels, the flat pass's output (ck_qdw_plane). */
static int64_t ck_qdw_slot_bytes(const ck_conv2d_params *c, int64_t oh, int64_t ow) {
  const int64_t pw = c->width + c->pad_left + c->pad_right;
  return ck_qround_up(ck_qpadded_plane(c) + 64, CK_QALIGN) + ck_qround_up(4 * ow, CK_QALIGN) +
         ck_qround_up(oh * pw + 16, CK_QALIGN);
}

static int64_t ck_qdw_slots(const ck_conv2d_params *c) {
  const int64_t planes = c->batch * c->channels;
  return planes < BYOC_MAX_THREADS ? planes : BYOC_MAX_THREADS;
}

typedef struct {
  const ck_qconv2d_params *p;
  int64_t oh, ow;
  const uint8_t *data;
  const int8_t *weight;
  const int32_t *bias;
  const float *scale;
  uint8_t *out, *ws;
  uint8_t index[128];   /* ck_qdw_plane_index */
} ck_qdw_job;

/* Planes per chunk (a task's claim): enough outputs that claiming a chunk -- an atomic operation on a line the
 * other threads write too -- costs little beside it (MobileNetV2's 7 x 7 planes: 83 per chunk, not 1: at 2 threads
 * one chunk per 49-byte plane made its 960-plane layers slower than at 1). A function of the shape alone. */
#define CK_QDW_CHUNK_OUTPUTS 4096

static int64_t ck_qdw_chunk_planes(int64_t oh, int64_t ow) {
  return oh * ow >= CK_QDW_CHUNK_OUTPUTS ? 1 : CK_QDW_CHUNK_OUTPUTS / (oh * ow);
}

static void ck_qdw_plane_task(int64_t task, int32_t slot, const ck_qdw_job *job);

static void ck_qdw_task(int32_t chunk, int32_t slot, void *ctx) {
  const ck_qdw_job *job = (const ck_qdw_job *)ctx;
  const int64_t per = ck_qdw_chunk_planes(job->oh, job->ow), planes = job->p->conv.batch * job->p->conv.channels;
  int64_t t;
  for (t = (int64_t)chunk * per; t < planes && t < ((int64_t)chunk + 1) * per; ++t) ck_qdw_plane_task(t, slot, job);
}

/* One plane (image b, channel c: task b * channels + c) into its output plane, in the thread's slot */
static void ck_qdw_plane_task(int64_t task, int32_t slot, const ck_qdw_job *job) {
  const ck_conv2d_params *c = &job->p->conv;
  const ck_qparams *q = &job->p->q;
  const int64_t pw = c->width + c->pad_left + c->pad_right, ch = task % c->channels;
  const int64_t oh = job->oh, ow = job->ow;
  uint8_t *pad = job->ws + slot * ck_qdw_slot_bytes(c, oh, ow);
  int32_t *acc = (int32_t *)(void *)(pad + ck_qround_up(ck_qpadded_plane(c) + 64, CK_QALIGN));
  uint8_t *flat = (uint8_t *)acc + ck_qround_up(4 * ow, CK_QALIGN);
  const uint8_t *plane = job->data + task * c->height * c->width;
  uint8_t *o = job->out + task * oh * ow;
  const int8_t *w = job->weight + ch * c->kernel_h * c->kernel_w;
  const float *sc = ck_qchannel_scale(q, job->scale, ch);
  int64_t y;
  ck_qfill(pad, (uint8_t)q->input_zero_point, ck_qpadded_plane(c) + 64);
  for (y = 0; y < c->height; ++y)
    ck_qcopy_row(pad + (y + c->pad_top) * pw + c->pad_left, plane + y * c->width, c->width);
  if (ck_qdw_plane(c, job->index, pad, pw, oh, ow, w, job->bias[ch], sc, q, o, flat)) return;
  for (y = 0; y < oh; ++y) {
    if (q->rounding == 1)
      ck_qdw_row_tfl(ow, pad + y * c->stride_h * pw, c->dilation_h * pw, c->stride_w, c->dilation_w, c->kernel_h,
                     c->kernel_w, w, job->bias[ch], (const int32_t *)(const void *)sc, q, o + y * ow, acc);
    else
      ck_qdw_row(ow, pad + y * c->stride_h * pw, c->dilation_h * pw, c->stride_w, c->dilation_w, c->kernel_h,
                 c->kernel_w, w, job->bias[ch], *sc, q, o + y * ow, acc);
  }
}

/* ---- a window over the whole plane (the global average pool the importer writes as a depthwise sum): one
 * output per plane, a dot product of its bytes with the weights, no bordered copy. ResNet-50's 2048 planes of
 * 7 x 7 took 0.2 ms through the plane tasks (a 113-byte border filled and copied per 49 bytes), 0.02 ms so.
 * Its input may be channels-last (channels_last 2: what the last channels-last convolution wrote), a plane's bytes
 * then one per pixel at a stride of the channels; the output (one value per channel) is laid out alike either way. */

static int ck_qdw_whole_plane(const ck_qconv2d_params *p) {
  const ck_conv2d_params *c = &p->conv;
  return p->q.rounding == 0 && c->kernel_h == c->height && c->kernel_w == c->width && c->pad_top == 0 &&
         c->pad_left == 0 && c->pad_bottom == 0 && c->pad_right == 0 && c->dilation_h == 1 && c->dilation_w == 1;
}

static void ck_qdw_dot_planes(void *ctx, int64_t first, int64_t last) {
  const ck_qdw_job *job = (const ck_qdw_job *)ctx;
  const ck_conv2d_params *c = &job->p->conv;
  const int64_t taps = c->height * c->width;
  int64_t t, plane;
  for (plane = first; plane < last; ++plane) {
    const int64_t ch = plane % c->channels, step = job->p->channels_last == 2 ? c->channels : 1;
    const uint8_t *x = job->data + (step == 1 ? plane * taps : (plane - ch) * taps + ch);
    const int8_t *w = job->weight + ch * taps;
    int32_t acc = 0;
    if (job->p->q.input_signed)
      for (t = 0; t < taps; ++t) acc += (int32_t)w[t] * (int32_t)(int8_t)x[t * step];
    else
      for (t = 0; t < taps; ++t) acc += (int32_t)w[t] * (int32_t)x[t * step];
    ck_qrequant_row(1, &acc, job->bias[ch], job->scale[ch], &job->p->q, job->out + plane);
  }
}

static void ck_qconv_depthwise(const ck_qconv2d_params *p, int64_t oh_n, int64_t ow_n, const uint8_t *data,
                               const int8_t *weight, const int32_t *bias, const float *scale, uint8_t *out,
                               uint8_t *ws) {
  ck_qdw_job job;
  job.p = p;
  job.oh = oh_n;
  job.ow = ow_n;
  job.data = data;
  job.weight = weight;
  job.bias = bias;
  job.scale = scale;
  job.out = out;
  job.ws = ws;
  if (ck_qdw_whole_plane(p)) {   /* planes of 64 Ki bytes a range, as the other int8 byte kernels */
    const int64_t plane = p->conv.height * p->conv.width;
    ck_parallel_range(p->conv.batch * p->conv.channels, plane >= 65536 ? 1 : 65536 / plane, ck_qdw_dot_planes, &job);
    return;
  }
  ck_qdw_plane_index(&p->conv, job.index);
  {
    const int64_t per = ck_qdw_chunk_planes(oh_n, ow_n);
    byoc_parallel_chunks((int32_t)((p->conv.batch * p->conv.channels + per - 1) / per), (int32_t)ck_qdw_slots(&p->conv),
                         ck_qdw_task, &job);
  }
}

/* The residual add of ck_qconv2d_add on rows x cols of a GEMM's output o (row stride n), right after them */
static void ck_qconv_add_rows(const ck_qpost *post, const uint8_t *out, uint8_t *o, int64_t rows, int64_t cols,
                              int64_t n) {
  const uint8_t *r = post->residual + (o - out);
  if (post->conv_is_rhs)
    ck_qadd_rows(post->add, rows, cols, n, r, o, o);
  else
    ck_qadd_rows(post->add, rows, cols, n, o, r, o);
}

/* The GEMMs of a grouped or ordinary convolution, per image, group and chunk of output pixels; `post` (or NULL): a
 * residual add laid out as `out`, done by each task on its part (ck_qgemm_core_post) */
static void ck_qconv_gemms(const ck_qconv2d_params *p, int64_t oh, int64_t ow, const uint8_t *data,
                           const int8_t *weight, const int32_t *bias, const float *scale, uint8_t *out, uint8_t *ws,
                           const ck_qpost *post) {
  const ck_conv2d_params *c = &p->conv;
  const int64_t cg = c->channels / c->groups, og = c->out_channels / c->groups, k = ck_qconv_depth(c);
  const int64_t k4 = ck_qround_up(k, 4), n = oh * ow;
  const int64_t group_bytes = ck_qround_up(og, CK_QMR) * k4;
  const int pointwise = ck_qconv_is_pointwise(c);
  const int64_t chunk = ck_qconv_chunk(p, n);
  uint8_t *panel = ws, *rows = ws + ck_qgemm_slots(chunk) * ck_qgemm_panel_stride(k);
  ck_qb_source src;
  ck_qbordered bordered;
  ck_qfix fix;
  int64_t b, g, q0;
  src.flip = p->q.input_signed ? 0x80 : 0;
  src.col_stride = 1;
  src.rows = NULL;
  src.pack = NULL;
  src.ctx = NULL;
  bordered.c = c;
  bordered.ph = c->height + c->pad_top + c->pad_bottom;
  bordered.pw = c->width + c->pad_left + c->pad_right;
  bordered.ow = ow;
  bordered.vbmi = ck_qvbmi();
  for (b = 0; b < c->batch; ++b) {
    for (g = 0; g < c->groups; ++g) {
      const uint8_t *in = data + (b * c->channels + g * cg) * c->height * c->width;
      uint8_t *o = out + (b * c->out_channels + g * og) * n;
      for (q0 = 0; q0 < n; q0 += chunk) {   /* output pixels [q0, q0 + cols): one GEMM over them */
        const int64_t cols = n - q0 < chunk ? n - q0 : chunk;
        ck_qpost part;
        if (!pointwise && chunk == CK_QNR) {
          ck_qim2col_panel(c, cg, ow, q0, cols, in, (uint8_t)p->q.input_zero_point, src.flip, panel);
          ck_qgemm_panel(og, cols, k, weight + g * group_bytes, panel, bias + g * og,
                         ck_qchannel_scale(&p->q, scale, g * og), &p->q, o + q0, n);
          if (post != NULL) ck_qconv_add_rows(post, out, o + q0, og, cols, n);
          continue;
        }
        if (ck_qconv_bordered(p)) {
          ck_qborder_copy(c, cg, in, (uint8_t)p->q.input_zero_point, src.flip, rows);
          bordered.pad = rows;
          src.pack = ck_qpack_bordered;
          src.ctx = &bordered;
        } else if (pointwise) {
          src.base = in;
          src.row_stride = c->height * c->width;
          src.rows = p->channel_order;
        } else {
          ck_qim2col(c, p->channel_order, cg, ow, q0, cols, in, (uint8_t)p->q.input_zero_point, rows);
          src.base = rows;
          src.row_stride = cols;
        }
        if (post != NULL) {
          part = *post;
          part.residual = post->residual + (o + q0 - out);
        }
        fix.row_start = (const uint8_t *)weight + ck_qpacked_plain_bytes(c) + 4 * g * ck_qround_up(og, CK_QMR);
        fix.entries = (const uint8_t *)weight + ck_qpacked_plain_bytes(c) + 4 * (ck_qpacked_rows(c) + 1);
        ck_qgemm_core_post(og, cols, k, weight + g * group_bytes, &src, bias + g * og,
                           ck_qchannel_scale(&p->q, scale, g * og), &p->q, o + q0, n, 1, panel,
                           post != NULL ? &part : NULL, p->pairs ? &fix : NULL);
      }
    }
  }
}

static int32_t ck_qconv2d_run(const ck_qconv2d_params *p, const void *data, const int8_t *weight, const int32_t *bias,
                              const float *scale, void *out, void *workspace, const ck_qpost *post) {
  int64_t oh, ow;
  uint8_t *ws;
  if (!ck_qconv_valid(p, &oh, &ow) || data == NULL || weight == NULL || bias == NULL || scale == NULL ||
      out == NULL || workspace == NULL)
    return CK_EBADPARAM;
  ws = (uint8_t *)workspace + (CK_QALIGN - (uintptr_t)workspace % CK_QALIGN) % CK_QALIGN;
  if (ck_qconv_is_depthwise(&p->conv)) {
    ck_qconv_depthwise(p, oh, ow, (const uint8_t *)data, weight, bias, scale, (uint8_t *)out, ws);
    if (post != NULL)   /* afterwards, over the whole output (the depthwise tasks are planes) */
      ck_qadd(post->add, p->conv.batch * p->conv.out_channels * oh * ow, post->conv_is_rhs ? post->residual : out,
              post->conv_is_rhs ? out : post->residual, out);
    return CK_OK;
  }
  if (p->winograd) {
    ck_qwinograd_run(p, oh, ow, (const uint8_t *)data, (const int16_t *)(const void *)weight, bias, scale,
                     (uint8_t *)out, ws, post);
    return CK_OK;
  }
  if (p->channels_last) {
    ck_qdirect_run(p, oh, ow, (const uint8_t *)data, weight, bias, scale, (uint8_t *)out, ws, post);
    return CK_OK;
  }
  ck_qconv_gemms(p, oh, ow, (const uint8_t *)data, weight, bias, scale, (uint8_t *)out, ws, post);
  return CK_OK;
}

int32_t ck_qconv2d(const ck_qconv2d_params *p, const void *data, const int8_t *weight, const int32_t *bias,
                   const float *scale, void *out, void *workspace) {
  return ck_qconv2d_run(p, data, weight, bias, scale, out, workspace, NULL);
}

int32_t ck_qconv2d_add(const ck_qconv2d_params *p, const ck_qadd_params *add, int32_t conv_is_rhs, const void *data,
                       const int8_t *weight, const int32_t *bias, const float *scale, const void *residual, void *out,
                       void *workspace) {
  ck_qpost post;
  if (!ck_qadd_params_valid(add) || residual == NULL || residual == out) return CK_EBADPARAM;
  post.add = add;
  post.residual = (const uint8_t *)residual;
  post.conv_is_rhs = conv_is_rhs != 0;
  return ck_qconv2d_run(p, data, weight, bias, scale, out, workspace, &post);
}
