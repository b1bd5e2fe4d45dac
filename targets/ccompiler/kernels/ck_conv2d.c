/* ck_conv2d.c - nn.conv2d (NCHW / OIHW) on the gemm core.
 *
 * Per image and group: out[o, pixel] = sum over (c, kh, kw) of weight[o, (c, kh, kw)] * patch.
 * The weights are A (row-major, K contiguous); B is an implicit im2col packed straight from the
 * input (no im2col buffer), or the input itself for a 1x1 stride-1 unpadded convolution. One
 * input channel per group (depthwise) has no reduction worth a gemm: a direct kernel that
 * vectorizes along output rows instead; the common 3x3 stride 1/2 case computes each output row in
 * one pass with the nine taps in registers (the row kernel of the CPU's instruction set).
 */
#include <string.h>

#include "ck_depthwise.h"
#include "ck_internal.h"
#include "ck_stem.h"

int32_t ck_conv2d_output_hw(const ck_conv2d_params *p, int64_t *out_h, int64_t *out_w) {
  int64_t span_h, span_w;
  if (p == NULL || out_h == NULL || out_w == NULL) return CK_EBADPARAM;
  if (p->batch < 0 || p->channels < 1 || p->height < 1 || p->width < 1 || p->out_channels < 1 ||
      p->kernel_h < 1 || p->kernel_w < 1 || p->stride_h < 1 || p->stride_w < 1 || p->dilation_h < 1 ||
      p->dilation_w < 1 || p->groups < 1 || p->pad_top < 0 || p->pad_left < 0 || p->pad_bottom < 0 ||
      p->pad_right < 0 || p->channels % p->groups != 0 || p->out_channels % p->groups != 0)
    return CK_EBADPARAM;
  span_h = p->height + p->pad_top + p->pad_bottom - p->dilation_h * (p->kernel_h - 1) - 1;
  span_w = p->width + p->pad_left + p->pad_right - p->dilation_w * (p->kernel_w - 1) - 1;
  if (span_h < 0 || span_w < 0) return CK_EBADPARAM;
  *out_h = span_h / p->stride_h + 1;
  *out_w = span_w / p->stride_w + 1;
  return CK_OK;
}

static int ck_is_pointwise(const ck_conv2d_params *p) {
  return p->kernel_h == 1 && p->kernel_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_top == 0 &&
         p->pad_left == 0 && p->pad_bottom == 0 && p->pad_right == 0;
}

/* 3x3 one-input-channel convolutions read a zero-bordered copy of each input plane (in the
 * workspace), so the row kernel runs over whole output rows: no edge columns, no padded rows. */
static int ck_is_dw3x3(const ck_conv2d_params *p) {
  return p->channels == p->groups && p->kernel_h == 3 && p->kernel_w == 3 && p->dilation_h == 1 &&
         p->dilation_w == 1 && (p->stride_w == 1 || p->stride_w == 2);
}

/* Other one-input-channel windows with a zero-bordered copy: ck_depthwise.c. */
static int ck_uses_padded_plane(const ck_conv2d_params *p) { return ck_is_dw3x3(p) || ck_dw_any_takes(p); }

static int64_t ck_padded_plane_floats(const ck_conv2d_params *p) {
  return (p->height + p->pad_top + p->pad_bottom) * (p->width + p->pad_left + p->pad_right);
}

/* Stride 1 over narrow rows: one flat pass over the whole plane in padded coordinates (the two
 * columns past each row's end are computed and dropped), so short rows still fill vectors. */
#define CK_DW_FLAT_BELOW 32

static int64_t ck_round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

/* Pixel-major tiles pay where the plane is small and 32-pixel slivers (and a 16-pixel half one for a
 * short tail) would compute many padding pixels, e.g. 49 -> 64; seven-pixel tiles and 24-channel slivers
 * pad less. Where they read the bordered input in place (by_offsets: no im2col packing, which was 15-25% of a
 * 3x3 convolution on 56x56 and 28x28 planes) they pay on planes up to CK_PM_MAX_OFFSET_PIXELS unless they
 * would compute more channels: a share's last channels run a 16- or 32-channel tile, so 64 and 128 channels
 * cost no more than on the channel-major tiles (ResNet-50's 3x3 convolutions on 56x56 and 28x28 went from
 * 104 and 121 to 117 and 137 GFLOP/s, `bench/kernels.py`, one thread, this Xeon). Decided from the shape
 * alone (the workspace must not depend on the CPU). */
static int ck_pixel_major_pays(int64_t og, int64_t pixels, int by_offsets) {
  const int64_t tail = pixels % 32;
  const int64_t cm = tail == 0 ? pixels : tail <= 16 ? pixels - tail + 16 : pixels - tail + 32;
  const int64_t pm_pixels = ck_round_up(pixels, CK_PM_MR), pm_channels = ck_round_up(og, CK_M_QUANTUM);
  const int64_t cm_channels = ck_round_up(og, 8);
  if (by_offsets)
    return pixels <= CK_PM_MAX_OFFSET_PIXELS && pm_pixels * ck_round_up(og, 16) <= cm * cm_channels;
  /* padded work of each, compared with 10% in favour of the channel-major tiles (no transposed store) */
  return pixels <= CK_PM_MAX_PIXELS && 100 * pm_pixels * pm_channels < 90 * cm * cm_channels;
}

/* Scratch of the pixel-major path: one K block of pixel slivers (unless the tiles read the input in place:
 * by_offsets) and the pixels x channels result. */
static int64_t ck_pixel_major_floats(int64_t og, int64_t pixels, int64_t kdim, int by_offsets) {
  const int64_t pm_pixels = ck_round_up(pixels, CK_PM_MR);
  return (by_offsets ? 0 : pm_pixels * (kdim < CK_KC ? kdim : CK_KC)) + pm_pixels * ck_round_up(og, CK_M_QUANTUM);
}

/* Windows wider than one pixel pack their im2col from a zero-bordered copy of the group's input, made
 * once per call at the end of the workspace (ck_pack_b_conv_padded): a copy of the input is a ninth of
 * a 3x3 im2col, and the packing then needs no bounds per row. */
static int ck_im2col_bordered(const ck_conv2d_params *p) {
  return p->channels != p->groups && p->kernel_h * p->kernel_w > 1;
}

/* Pixel-major tiles read the bordered copy where it lies, through one offset per tap (no im2col packing),
 * when a window wider than one pixel moves by one or two columns and the output rows are whole 7-pixel slivers
 * (7x7, 14x14, 28x28 planes): a sliver's seven pixels are then neighbours in one row of the copy (at stride 2 a
 * copy whose rows hold their even columns, then their odd ones: ck_pm_split). */
static int ck_pm_by_offsets(const ck_conv2d_params *p, int64_t ow) {
  return ck_im2col_bordered(p) && (p->stride_w == 1 || p->stride_w == 2) && ow % CK_PM_MR == 0;
}

/* At stride 2 the pixel-major tiles read a bordered copy whose rows hold their even columns, then their odd ones
 * (padded column 2k at k, 2k + 1 at (padded_w + 1) / 2 + k): seven neighbouring output pixels of a tap are then
 * seven neighbouring floats, as at stride 1, and no im2col is packed (the 3x3/2 convolutions of ResNet v1.5,
 * torchvision's ResNet-50, onto 28x28, 14x14 and 7x7 took 0.78-0.91 of the time of packing it, one thread; the
 * zoo's resnet50 strides the first 1x1 of a stage instead). Same size as the plain copy. */
static int ck_pm_split(const ck_conv2d_params *p, int64_t ow) { return p->stride_w == 2 && ck_pm_by_offsets(p, ow); }

/* A 1x1 stride-1 convolution that reduces its channels at least twofold (K >= 2 x output channels) on a plane of
 * whole 7-pixel slivers up to CK_PM_REDUCE_PIXELS runs on the pixel-major tiles, reading its input where it lies
 * (no packing, one parallel region, each thread its own pixels): ResNet-50's 1x1 1024->256 and 1024->512 on
 * 14x14 (196 pixels: 6 x 32 + 4, whose 4-column tail ran the 16-wide half tile, some 10% of the call; 196 = 28 x
 * 7 exactly here, 256 channels 5 pairs + a 16-channel tile). In-process A/B against the channel-major tiles
 * (this Xeon): 0.88-0.94 of the time at one thread, 0.82 (1024->256) at two. The expansions (256->1024) and
 * larger planes (512->128 on 28x28) measured slower or no faster: their transposed store weighs more. */
static int ck_pm_takes(const ck_conv2d_params *p, int64_t og, int64_t pixels, int64_t ow) {
  const int64_t kdim = p->channels / p->groups;
  if (ck_is_pointwise(p) && pixels % CK_PM_MR == 0 && pixels <= CK_PM_REDUCE_PIXELS && kdim >= 2 * og) return 1;
  return ck_pixel_major_pays(og, pixels, ck_pm_by_offsets(p, ow));
}

/* One input channel per group: tasks of CK_DW_TASK_GROUPS groups (of every image), each thread with its
 * own zero-bordered plane and flat row in its slot of the workspace; 8 or 16 groups where 4 groups' output
 * planes would not end on a cache line (49-pixel planes: 4 x 196 bytes), since neighbouring tasks run on
 * different threads: 7x7 depthwise layers gained 1.0-1.2x from a second thread with a line written by both
 * at every task boundary. */
#define CK_DW_TASK_GROUPS 4

static int64_t ck_dw_task_groups(const ck_conv2d_params *p) {
  int64_t oh, ow, floats;
  if (ck_conv2d_output_hw(p, &oh, &ow) != CK_OK) return CK_DW_TASK_GROUPS;
  floats = p->out_channels / p->groups * oh * ow; /* one group's output */
  return floats % 4 == 0 ? CK_DW_TASK_GROUPS : floats % 2 == 0 ? 2 * CK_DW_TASK_GROUPS : 4 * CK_DW_TASK_GROUPS;
}

static int64_t ck_dw_tasks(const ck_conv2d_params *p) {
  return (p->batch * p->groups + ck_dw_task_groups(p) - 1) / ck_dw_task_groups(p);
}

static int64_t ck_dw_slots(const ck_conv2d_params *p) {
  const int64_t tasks = ck_dw_tasks(p);
  return tasks < BYOC_MAX_THREADS ? tasks : BYOC_MAX_THREADS;
}

static size_t ck_dw_slot_bytes(const ck_conv2d_params *p) {
  return CK_ALIGN + 2 * sizeof(float) * (size_t)ck_padded_plane_floats(p);
}

/* Workspace bytes of the gemm (or pixel-major) part, before the bordered copy. */
static size_t ck_conv_gemm_bytes(const ck_conv2d_params *p, int64_t oh, int64_t ow) {
  const int64_t cg = p->channels / p->groups, og = p->out_channels / p->groups;
  const int64_t kdim = cg * p->kernel_h * p->kernel_w;
  const size_t gemm = ck_gemm_workspace_bytes(og, oh * ow, kdim);
  if (ck_pm_takes(p, og, oh * ow, ow)) {
    const size_t pm = CK_ALIGN + sizeof(float) * (size_t)ck_pixel_major_floats(og, oh * ow, kdim, ck_pm_by_offsets(p, ow));
    if (pm > gemm) return pm;
  }
  return gemm;
}

size_t ck_conv2d_workspace_bytes(const ck_conv2d_params *p) {
  int64_t oh, ow;
  size_t bytes;
  if (ck_conv2d_output_hw(p, &oh, &ow) != CK_OK) return 0;
  /* one input channel per group: direct kernels; the 3x3 and ck_depthwise.c ones read a zero-bordered
   * copy of the plane */
  if (p->channels == p->groups)
    return ck_uses_padded_plane(p) ? (size_t)ck_dw_slots(p) * ck_dw_slot_bytes(p) : 0;
  if (ck_stem_takes(p)) return ck_stem_workspace_bytes(p); /* few input channels at stride 2: ck_stem.c */
  bytes = ck_conv_gemm_bytes(p, oh, ow);
  if (ck_im2col_bordered(p))
    bytes += CK_ALIGN + sizeof(float) * (size_t)(p->channels / p->groups * ck_padded_plane_floats(p));
  return bytes;
}

/* Input planes [c0, c1) of one group into the zero-bordered copy (split: each padded row as its even
 * columns, then its odd ones, for the pixel-major tiles at stride 2). */
typedef struct {
  const ck_conv2d_params *p;
  const float *in;
  float *out;
  int split;
} ck_border_job;

static void ck_split_half(float *restrict dst, int64_t n, int64_t lo, int64_t hi, const float *restrict src,
                          int64_t shift);

static void ck_border_planes(void *ctx, int64_t c0, int64_t c1) {
  const ck_border_job *job = (const ck_border_job *)ctx;
  const ck_conv2d_params *p = job->p;
  const int64_t pw = p->width + p->pad_left + p->pad_right, w = p->width, pl = p->pad_left;
  const int64_t plane = ck_padded_plane_floats(p), odd = (pw + 1) / 2;
  int64_t c, y;
  for (c = c0; c < c1; ++c) {
    float *restrict dst = job->out + c * plane;
    const float *restrict src = job->in + c * p->height * w;
    memset(dst, 0, sizeof(float) * (size_t)(p->pad_top * pw));
    for (y = 0; y < p->height; ++y) {
      float *restrict row = dst + (p->pad_top + y) * pw;
      if (job->split) { /* padded column 2k: row[k], 2k + 1: row[odd + k] (as ck_pad_plane) */
        ck_split_half(row, odd, (pl + 1) / 2, (pl + w + 1) / 2, src + y * w, -pl);
        ck_split_half(row + odd, pw - odd, pl / 2, (pl + w) / 2, src + y * w, 1 - pl);
        continue;
      }
      memset(row, 0, sizeof(float) * (size_t)pl);
      memcpy(row + pl, src + y * w, sizeof(float) * (size_t)w);
      memset(row + pl + w, 0, sizeof(float) * (size_t)p->pad_right);
    }
    memset(dst + (p->pad_top + p->height) * pw, 0, sizeof(float) * (size_t)(p->pad_bottom * pw));
  }
}

/* The cg input planes of one group into the zero-bordered copy, in ranges of planes on the pool: the first
 * read of the input (from L3 where it outgrows L2: 64 x 56 x 56 floats) is a few percent of a 3x3 conv and
 * ran on one thread while the other waited. */
static void ck_border_group(const ck_conv2d_params *p, int64_t cg, const float *in, float *out, int split) {
  ck_border_job job;
  job.p = p;
  job.in = in;
  job.out = out;
  job.split = split;
  ck_parallel_range(cg, ck_grain(ck_padded_plane_floats(p)), ck_border_planes, &job);
}

/* One output plane of a one-input-channel convolution: rows of the output accumulate
 * weight * shifted input row over the taps whose input column range is computed up front. */
static void ck_conv_direct_plane(const ck_conv2d_params *p, int64_t oh_n, int64_t ow_n, const float *in,
                                 const float *w, float bias, int32_t activation, float *restrict out) {
  int64_t oh, kh, kw, x;
  for (oh = 0; oh < oh_n; ++oh) {
    float *restrict orow = out + oh * ow_n;
    for (x = 0; x < ow_n; ++x) orow[x] = bias;
    for (kh = 0; kh < p->kernel_h; ++kh) {
      const int64_t ih = oh * p->stride_h - p->pad_top + kh * p->dilation_h;
      const float *irow;
      if (ih < 0 || ih >= p->height) continue;
      irow = in + ih * p->width;
      for (kw = 0; kw < p->kernel_w; ++kw) {
        const float wv = w[kh * p->kernel_w + kw];
        const int64_t shift = kw * p->dilation_w - p->pad_left; /* iw = x * stride + shift */
        /* first x with iw >= 0, and one past the last x with iw < width */
        int64_t lo = shift >= 0 ? 0 : (-shift + p->stride_w - 1) / p->stride_w;
        int64_t hi = p->width - 1 - shift < 0 ? 0 : (p->width - 1 - shift) / p->stride_w + 1;
        if (hi > ow_n) hi = ow_n;
        if (p->stride_w == 1) {
          for (x = lo; x < hi; ++x) orow[x] = CK_FMA(wv, irow[x + shift], orow[x]);
        } else {
          for (x = lo; x < hi; ++x) orow[x] = CK_FMA(wv, irow[x * p->stride_w + shift], orow[x]);
        }
      }
    }
    ck_activate(activation, ow_n, orow);
  }
}

/* Floats from a padded row's start to its odd columns: stride 2 stores each padded row as its even
 * columns, then its odd ones (0: stride 1, rows as they are). */
static int64_t ck_odd_offset(const ck_conv2d_params *p) {
  return p->stride_w == 2 ? (p->width + p->pad_left + p->pad_right + 1) / 2 : 0;
}

/* dst[k] = src[2k + shift] for k in [lo, hi) (clamped to [0, n)), nothing else written. */
static void ck_split_copy(float *restrict dst, int64_t n, int64_t lo, int64_t hi, const float *restrict src,
                          int64_t shift) {
  int64_t k;
  if (hi > n) hi = n;
  for (k = lo; k < hi; ++k) dst[k] = src[2 * k + shift];
}

/* The same, zero elsewhere in [0, n). */
static void ck_split_half(float *restrict dst, int64_t n, int64_t lo, int64_t hi, const float *restrict src,
                          int64_t shift) {
  int64_t k;
  if (hi > n) hi = n;
  if (lo > hi) lo = hi;
  for (k = 0; k < lo; ++k) dst[k] = 0.0f;
  ck_split_copy(dst, n, lo, hi, src, shift);
  for (k = hi; k < n; ++k) dst[k] = 0.0f;
}

/* The input plane into the zero-bordered copy (its border rows and columns are zeroed once per call).
 * This is the plane's first read, and on layers whose input outgrows L2 it is most of a stride-2 3x3 layer's
 * time (96 planes of 112x112: 667 us with the copy, 231 us with stale planes, timing only; perf puts it on the
 * first load of each input line), bound by where the input comes from, not by the instruction set: an AVX2
 * and an AVX-512 deinterleave (vpermt2ps) of the stride-2 rows and a prefetch of the next plane while this
 * one is computed all measured no faster (1.0-1.15x the time, load ~7), so the copy stays portable C. */
static void ck_pad_plane(const ck_conv2d_params *p, const float *in, float *restrict padded) {
  const int64_t pw = p->width + p->pad_left + p->pad_right, pl = p->pad_left, w = p->width;
  const int64_t odd = ck_odd_offset(p);
  int64_t y;
  for (y = 0; y < p->height; ++y) {
    float *restrict row = padded + (y + p->pad_top) * pw;
    const float *restrict src = in + y * w;
    if (odd == 0) {
      memcpy(row + pl, src, (size_t)w * sizeof(float));
      continue;
    }
    /* padded column c = 2k (even half) or 2k + 1 (odd half) is src[c - pl] inside [pl, pl + w), zero
     * outside (left as the call cleared it: zeroing it per row was two memset calls per row from gcc, about 8%
     * of a stride-2 layer on 112x112 planes): per half, a stride-2 copy */
    ck_split_copy(row, odd, (pl + 1) / 2, (pl + w + 1) / 2, src, -pl);
    ck_split_copy(row + odd, pw - odd, pl / 2, (pl + w) / 2, src, 1 - pl);
  }
}

/* One output plane of a 3x3 one-input-channel convolution (stride_w 1 or 2, no dilation) from the
 * zero-bordered copy of its input plane. */
static void ck_dw3x3_plane(const ck_conv2d_params *p, int64_t oh_n, int64_t ow_n, const float *padded,
                           const float *w, float bias, int32_t activation, float *restrict out,
                           ck_dw3x3_row_fn row_fn, float *restrict flat) {
  const int64_t pw = p->width + p->pad_left + p->pad_right;
  int64_t oh;
  if (p->stride_h == 1 && p->stride_w == 1 && ow_n < CK_DW_FLAT_BELOW) {
    /* flat[t] for t = oh * pw + x reads padded[t + i * pw + j]: in bounds as ow_n = pw - 2 */
    row_fn((oh_n - 1) * pw + ow_n, 0, padded, padded + pw, padded + 2 * pw, w, bias, activation, flat);
    for (oh = 0; oh < oh_n; ++oh) memcpy(out + oh * ow_n, flat + oh * pw, (size_t)ow_n * sizeof(float));
    return;
  }
  for (oh = 0; oh < oh_n; ++oh) {
    const float *r0 = padded + oh * p->stride_h * pw;
    row_fn(ow_n, ck_odd_offset(p), r0, r0 + pw, r0 + 2 * pw, w, bias, activation, out + oh * ow_n);
  }
}

static int64_t ck_packed_group_floats(const ck_conv2d_params *p) {
  const int64_t og = p->out_channels / p->groups;
  return (og + CK_M_QUANTUM - 1) / CK_M_QUANTUM * CK_M_QUANTUM * (p->channels / p->groups) * p->kernel_h *
         p->kernel_w;
}

size_t ck_conv2d_packed_weight_bytes(const ck_conv2d_params *p) {
  int64_t oh, ow;
  if (ck_conv2d_output_hw(p, &oh, &ow) != CK_OK || p->channels == p->groups) return 0;
  return sizeof(float) * (size_t)(p->groups * ck_packed_group_floats(p));
}

int32_t ck_conv2d_pack_weight(const ck_conv2d_params *p, const float *weight, float *packed) {
  int64_t g, og, kdim;
  if (ck_conv2d_packed_weight_bytes(p) == 0 || weight == NULL || packed == NULL) return CK_EBADPARAM;
  og = p->out_channels / p->groups;
  kdim = p->channels / p->groups * p->kernel_h * p->kernel_w;
  for (g = 0; g < p->groups; ++g)
    ck_pack_a_ahead(og, kdim, weight + g * og * kdim, kdim, packed + g * ck_packed_group_floats(p));
  return CK_OK;
}

static int32_t ck_conv2d_any(const ck_conv2d_params *p, const float *data, const float *weight,
                             const float *packed, const float *bias, const float *residual, int32_t activation,
                             float *out, void *workspace);

/* One group on pixel-major tiles: per K block, the pixel slivers of B (im2col or the input) are packed,
 * then every 24-channel sliver of the packed weight (read where it lies) meets every pixel sliver, into
 * C' [pixels][channels] in the workspace; at the end C' goes to out [channels][pixels], transposed in
 * blocks of 16 channels, with the bias and the activation.
 * In parallel: each thread a share of the output tiles -- whole 24-channel weight slivers (each task reading its
 * own part of the weight, the large operand of these small planes), or whole 7-pixel slivers where those split
 * more evenly (14x14: 28 pixel slivers against 11 channel slivers of 256 channels). A pixel share is one task; a
 * channel share is a task of its first units and tasks of one unit for its last ones (ck_pm_tasks), which a
 * thread done with its own share takes from the back of the other's: cores run at speeds that differ (on the
 * bench machine, a 2-vCPU VM, by up to 40% for seconds at a time), and with one static task each the faster one
 * waited for the other (0.2-0.5 ms per 3x3 512-channel layer at 7x7 there, bench/pool_balance.py). Every element is one chain over
 * K on the same tile whichever task computes it, so the split (and the thread count it follows) never changes
 * the bits. Where the pixels are read where they lie
 * (a 1x1 input, or the bordered copy through tap offsets) a task runs every K block of its share and then
 * its transposition: one parallel region per convolution (a region per K block, 18 on a 3x3 512-channel
 * conv, paid a wake-up and an uneven share each). Packed pixel slivers are shared by the tasks, so those
 * calls keep a region per K block after packing it. */
typedef struct {
  const ck_b_source *src;
  int64_t og, pixels, kdim, m24, pm_pixels;
  const float *packed, *bias, *residual;
  int32_t activation;
  float *out, *slivers, *result;
  ck_pm_fn tile, wide; /* the 24- and 48-channel tiles (wide: NULL where the CPU has none) */
  ck_pm_fn (*part)(int32_t channels); /* the 16- and 32-channel ones (NULL: none) */
  int direct, by_offsets;
  int by_pixels; /* the tasks share out pixel slivers (else channel slivers) */
  int64_t parts, singles; /* channel shares: per participant, one task of its first units and `singles` of one */
  int64_t pc;    /* the K block of a packed pass */
} ck_pm_job;

/* One task's share of the output: channels [c0, c1) of m24 and pixels [s0, s1) of pm_pixels. */
typedef struct {
  int64_t c0, c1, s0, s1;
} ck_pm_share;

/* The offsets of taps [pc, pc + kc), (channel, kh, kw) each, counted up from one division: once per K block
 * (computed per tile with two divisions per tap, they took 15% of a 3x3 conv on 7x7 planes). */
static void ck_pm_tap_offsets(const ck_conv_view *v, int64_t pc, int64_t kc, int64_t *restrict aoff) {
  const int64_t taps = v->kernel_h * v->kernel_w;
  /* stride 2: column d of a tap lies in the even half at d / 2 (d even) or in the odd one (ck_pm_split) */
  const int64_t odd = v->stride_w == 2 ? (v->padded_w + 1) / 2 : 0;
  int64_t channel = pc / taps, kh = pc % taps / v->kernel_w, kw = pc % taps % v->kernel_w, o;
  for (o = 0; o < kc; ++o) {
    const int64_t d = kw * v->dilation_w;
    aoff[o] = channel * v->padded_plane + kh * v->dilation_h * v->padded_w + (odd == 0 ? d : d % 2 * odd + d / 2);
    if (++kw == v->kernel_w) {
      kw = 0;
      if (++kh == v->kernel_h) {
        kh = 0;
        ++channel;
      }
    }
  }
}

/* The tiles of a share over K block pc (aoff: its tap offsets when by_offsets), in steps of ck_pm_kstep taps: a
 * step of a 48-channel weight pair (24 KB) stays in L1 while every pixel sliver passes (a whole 256-tap
 * block, 48 KB, did not). A 1x1 input read in place (direct) adds its rows of every pixel of the share: 128 rows
 * of a 7x7 plane are 25 KB more, and the step halves (ResNet-50's 1x1 512->2048 on 7x7, `bench/kernels.py`, a
 * Zen 3, one thread, alternated: 0.66-0.71 -> 0.72-0.84 of onnxruntime's speed). */
#define CK_PM_KC 128
static int64_t ck_pm_kstep(int direct) { return direct ? CK_PM_KC / 2 : CK_PM_KC; }
/* The tile for the share's channels from cs: two slivers at once where the CPU has the wide tile (same bits as
 * two narrow ones); where 32 or fewer real channels (below og) are left, the tile for just those where the CPU
 * has one (the channels past them are never read from C'); *width: the channels of m24 it moves on by. */
static ck_pm_fn ck_pm_tile_at(const ck_pm_job *job, const ck_pm_share *sh, int64_t cs, int64_t *width) {
  const int64_t real = (sh->c1 < job->og ? sh->c1 : job->og) - cs;
  const int pair = cs + 2 * CK_M_QUANTUM <= sh->c1;
  *width = pair ? 2 * CK_M_QUANTUM : CK_M_QUANTUM;
  /* 32 channels read the second sliver's first 8: there only where that sliver holds a real channel */
  if (job->part != NULL && (real <= 16 || (real <= 32 && real > CK_M_QUANTUM)))
    return job->part((int32_t)real);
  return pair && job->wide != NULL ? job->wide : (*width = CK_M_QUANTUM, job->tile);
}

/* Input read in place: the next step's channels of the share's pixels, asked for ahead (one line at a time). */
static void ck_pm_prefetch(const ck_pm_job *job, int64_t k0, const ck_pm_share *sh) {
#if defined(__GNUC__) || defined(__clang__)
  const int64_t step = ck_pm_kstep(job->direct), k1 = k0 + step < job->kdim ? k0 + step : job->kdim;
  const int64_t s1 = sh->s1 < job->pixels ? sh->s1 : job->pixels;
  int64_t k;
  for (k = k0; k < k1; ++k) {
    const float *row = job->src->base + k * job->src->row_stride;
    uintptr_t at = (uintptr_t)(row + sh->s0) & ~(uintptr_t)(CK_ALIGN - 1);
    for (; at < (uintptr_t)(row + s1); at += CK_ALIGN) __builtin_prefetch((const void *)at, 0, 3);
  }
#else
  (void)job;
  (void)k0;
  (void)sh;
#endif
}

static void ck_pm_block(const ck_pm_job *job, int64_t pc, const int64_t *aoff, const ck_pm_share *sh) {
  const ck_conv_view *v = job->src->conv;
  const int64_t kc = job->kdim - pc < CK_KC ? job->kdim - pc : CK_KC, m24 = job->m24;
  const float *a = job->direct ? job->src->base + pc * job->src->row_stride : job->slivers;
  const int64_t as = job->direct ? job->src->row_stride : CK_PM_MR, step = job->direct ? 1 : kc;
  const int64_t kstep = ck_pm_kstep(job->direct);
  int64_t cs, s, q, width = CK_M_QUANTUM;
  for (cs = sh->c0; cs < sh->c1; cs += width) {
    const ck_pm_fn tile = ck_pm_tile_at(job, sh, cs, &width);
    for (q = 0; q < kc; q += kstep) {
      const int64_t kq = kc - q < kstep ? kc - q : kstep, ws = kc * CK_M_QUANTUM;
      const float *w = job->packed + pc * m24 + cs * kc + q * CK_M_QUANTUM;
      const int accumulate = pc > 0 || q > 0;
      if (job->direct && cs == sh->c0) ck_pm_prefetch(job, pc + q + kq, sh);
      if (job->by_offsets) {
        for (s = sh->s0; s < sh->s1; s += CK_PM_MR) /* pixel s: output row s / out_w, column s % out_w */
          tile(kq, v->padded + s / v->out_w * v->stride_h * v->padded_w + s % v->out_w, 0, aoff + q, w, ws,
               job->result + s * m24 + cs, m24, accumulate);
      } else {
        for (s = sh->s0; s < sh->s1; s += CK_PM_MR)
          tile(kq, a + s * step + q * as, as, NULL, w, ws, job->result + s * m24 + cs, m24, accumulate);
      }
    }
  }
}

/* C' -> out for a share's channels below og and pixels below `pixels`: transposed, + bias, + residual,
 * activation. In blocks of 16 channels x 16 pixels through a local tile, so out and the residual are read and
 * written in runs of 16 pixels of a channel (one pixel at a time, each of its 16 channels a float on another
 * row of out, this store was 6% of a 1x1 1024->256 on 14x14 and 20% of a 256->1024, one thread). The same
 * operations per element in the same order: the same bits. */
static void ck_pm_finish(const ck_pm_job *job, const ck_pm_share *sh) {
  const int64_t pixels = job->pixels, m24 = job->m24, c1 = sh->c1 < job->og ? sh->c1 : job->og;
  const int64_t j1 = sh->s1 < pixels ? sh->s1 : pixels;
  float t[16][16]; /* t[o][j]: channel o0 + o of pixel j0 + j */
  int64_t o0, j0, o, j;
  for (o0 = sh->c0; o0 < c1; o0 += 16) {
    const int64_t oc = c1 - o0 < 16 ? c1 - o0 : 16;
    for (j0 = sh->s0; j0 < j1; j0 += 16) {
      const int64_t jn = j1 - j0 < 16 ? j1 - j0 : 16;
      for (j = 0; j < jn; ++j)
        for (o = 0; o < oc; ++o) t[o][j] = job->result[(j0 + j) * m24 + o0 + o];
      for (o = 0; o < oc; ++o) {
        const float bias = job->bias != NULL ? job->bias[o0 + o] : 0.0f;
        float *restrict dst = job->out + (o0 + o) * pixels + j0;
        for (j = 0; j < jn; ++j) dst[j] = t[o][j] + bias;
        if (job->residual != NULL) {
          const float *restrict res = job->residual + (o0 + o) * pixels + j0;
          for (j = 0; j < jn; ++j) dst[j] += res[j];
        }
        ck_activate(job->activation, jn, dst);
      }
    }
  }
}

/* Task `task` of n_tasks: an even share of whole slivers (channel or pixel ones). */
/* Channel shares, where the CPU has the part tiles, are whole 48-channel pairs (the last one shorter): cut at odd
 * slivers, 512 channels (21 slivers and 8 channels of a 22nd) left one share a lone 24-channel sliver on the
 * 256-bit tile and the other its 16-channel tile, 126 against 112 FMAs per tap and 7 pixels; in pairs 105 and 119. */
static int64_t ck_pm_share_unit(const ck_pm_job *job) {
  return job->by_pixels ? CK_PM_MR : job->part != NULL ? 2 * CK_M_QUANTUM : CK_M_QUANTUM;
}

static ck_pm_share ck_pm_share_of(const ck_pm_job *job, int32_t task, int32_t n_tasks) {
  ck_pm_share sh;
  const int64_t unit = ck_pm_share_unit(job), extent = job->by_pixels ? job->pm_pixels : job->m24;
  const int64_t units = (extent + unit - 1) / unit;
  int64_t lo = units * task / n_tasks * unit, end = units * (task + 1) / n_tasks * unit, hi;
  if (!job->by_pixels && job->singles > 0) { /* see ck_pm_tasks */
    const int64_t per = 1 + job->singles, part = task / per, j = task % per;
    const int64_t a = units * part / job->parts, b = units * (part + 1) / job->parts;
    lo = (j == 0 ? a : b - job->singles + j - 1) * unit;
    end = (j == 0 ? b - job->singles : b - job->singles + j) * unit;
  }
  hi = end < extent ? end : extent;
  sh.c0 = job->by_pixels ? 0 : lo;
  sh.c1 = job->by_pixels ? job->m24 : hi;
  sh.s0 = job->by_pixels ? lo : 0;
  sh.s1 = job->by_pixels ? hi : job->pm_pixels;
  return sh;
}

static void ck_pm_task_block(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_pm_job *job = (const ck_pm_job *)ctx;
  const ck_pm_share sh = ck_pm_share_of(job, task, n_tasks);
  ck_pm_block(job, job->pc, NULL, &sh); /* (packed slivers: no tap offsets) */
}

static void ck_pm_task_finish(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_pm_job *job = (const ck_pm_job *)ctx;
  const ck_pm_share sh = ck_pm_share_of(job, task, n_tasks);
  ck_pm_finish(job, &sh);
}

/* A share's every K block (pixels read where they lie), then its transposition. */
static void ck_pm_task_whole(int32_t task, int32_t n_tasks, void *ctx) {
  const ck_pm_job *job = (const ck_pm_job *)ctx;
  const ck_pm_share sh = ck_pm_share_of(job, task, n_tasks);
  int64_t pc, aoff[CK_KC];
  for (pc = 0; pc < job->kdim; pc += CK_KC) {
    if (job->by_offsets)
      ck_pm_tap_offsets(job->src->conv, pc, job->kdim - pc < CK_KC ? job->kdim - pc : CK_KC, aoff);
    ck_pm_block(job, pc, aoff, &sh);
  }
  ck_pm_finish(job, &sh);
}

#ifndef CK_PM_SINGLES_PERCENT
#define CK_PM_SINGLES_PERCENT 40
#endif
/* Tasks: one per thread, at most one per sliver; pixel slivers where they share out more evenly. */
static int32_t ck_pm_tasks(ck_pm_job *job) {
  const int64_t threads = byoc_get_num_threads(), ps = job->pm_pixels / CK_PM_MR;
  /* channel shares in units of 1 or 2 slivers (ck_pm_share_unit with by_pixels 0) */
  const int64_t per = job->part != NULL ? 2 : 1, cu = (job->m24 / CK_M_QUANTUM + per - 1) / per;
  /* the largest share, in slivers times the other side's extent */
  const int64_t by_c = (cu + threads - 1) / threads * per * job->pm_pixels;
  const int64_t by_p = (ps + threads - 1) / threads * job->m24;
  job->by_pixels = CK_PM_MR * by_p < CK_M_QUANTUM * by_c;
  job->parts = threads < cu ? threads : cu;
  job->singles = 0;
  if (job->by_pixels) return (int32_t)(threads < ps ? threads : ps);
  /* Channel shares on two threads and more: a participant's first units in one task (K blocks outermost over all of
   * them), its last CK_PM_SINGLES_PERCENT of one unit each, which the pool's other participants take from the back
   * of its share when they are done with theirs (the pool's shares of parts * (1 + singles) tasks are exactly these
   * runs). A task of one unit reads the K blocks' pixels again for itself: with every unit its own task the waits
   * were gone and about as much time went into that (ResNet-50 at 2 threads 0.976-0.986 per round, no better by the
   * medians, bench/threads_ab.py); with the last 40% of them, 0.981-0.982 per round and 0.95-0.98 by the medians. */
  if (job->parts > 1) job->singles = cu / job->parts * CK_PM_SINGLES_PERCENT / 100;
  return (int32_t)(job->parts * (1 + job->singles));
}
static void ck_conv_pixel_major(const ck_b_source *src, int64_t og, int64_t pixels, int64_t kdim,
                                const float *packed, const float *bias, const float *residual, int32_t activation,
                                float *out, void *workspace, ck_pm_fn tile) {
  const ck_conv_view *v = src->conv;
  ck_pm_job job;
  int32_t tasks;
  job.src = src;
  job.og = og;
  job.pixels = pixels;
  job.kdim = kdim;
  job.m24 = ck_round_up(og, CK_M_QUANTUM);
  job.pm_pixels = ck_round_up(pixels, CK_PM_MR);
  job.packed = packed;
  job.bias = bias;
  job.residual = residual;
  job.activation = activation;
  job.out = out;
  job.slivers = (float *)(void *)(((uintptr_t)workspace + (CK_ALIGN - 1)) & ~(uintptr_t)(CK_ALIGN - 1));
  job.tile = tile;
  job.wide = tile == ck_micro_kernel_current()->pixel_major ? ck_micro_kernel_current()->pixel_major_wide : NULL;
  job.part = job.wide != NULL ? ck_micro_kernel_current()->pixel_major_part : NULL;
  /* a 1x1 stride-1 input is read as it lies when its plane is whole slivers (no row past the end) */
  job.direct = src->conv == NULL && pixels == job.pm_pixels;
  /* the bordered copy read as it lies (ck_pm_by_offsets; the copy exists for exactly those windows, split at
   * stride 2: ck_pm_split) */
  job.by_offsets = v != NULL && v->padded != NULL && (v->stride_w == 1 || v->stride_w == 2) && v->out_w % CK_PM_MR == 0;
  job.result = job.slivers + (job.by_offsets ? 0 : job.pm_pixels * (kdim < CK_KC ? kdim : CK_KC)); /* (no slivers) */
  tasks = ck_pm_tasks(&job);
  if (job.direct || job.by_offsets) {
    /* within a task, K blocks outermost: a block's pixels stay in L1 while the task's channel slivers pass
     * (channel slivers outermost re-read the input from L2 per sliver pair: some 7% slower on one thread) */
    byoc_parallel_for(tasks, ck_pm_task_whole, &job);
    return;
  }
  for (job.pc = 0; job.pc < kdim; job.pc += CK_KC) {
    ck_pack_b(src, job.pc, kdim - job.pc < CK_KC ? kdim - job.pc : CK_KC, 0, pixels, pixels, CK_PM_MR, job.slivers);
    byoc_parallel_for(tasks, ck_pm_task_block, &job);
  }
  byoc_parallel_for(tasks, ck_pm_task_finish, &job);
}

int32_t ck_conv2d(const ck_conv2d_params *p, const float *data, const float *weight,
                  const float *bias, int32_t activation, float *out, void *workspace) {
  if (weight == NULL) return CK_EBADPARAM;
  return ck_conv2d_any(p, data, weight, NULL, bias, NULL, activation, out, workspace);
}

int32_t ck_conv2d_prepacked(const ck_conv2d_params *p, const float *data, const float *packed_weight,
                            const float *bias, int32_t activation, float *out, void *workspace) {
  if (packed_weight == NULL || ck_conv2d_packed_weight_bytes(p) == 0) return CK_EBADPARAM;
  return ck_conv2d_any(p, data, NULL, packed_weight, bias, NULL, activation, out, workspace);
}

int32_t ck_conv2d_prepacked_add(const ck_conv2d_params *p, const float *data, const float *packed_weight,
                                const float *bias, const float *residual, int32_t activation, float *out,
                                void *workspace) {
  if (packed_weight == NULL || residual == NULL || ck_conv2d_packed_weight_bytes(p) == 0) return CK_EBADPARAM;
  return ck_conv2d_any(p, data, NULL, packed_weight, bias, residual, activation, out, workspace);
}

typedef struct {
  const ck_conv2d_params *p;
  const float *data, *weight, *bias;
  int32_t activation;
  float *out;
  ck_dw3x3_row_fn row_fn;
  char *workspace; /* NULL: no bordered plane */
  int64_t oh, ow;
} ck_dw_job;

/* Groups [chunk * ck_dw_task_groups, ...) of every image, on the bordered plane of `slot`. */
static void ck_dw_task(int32_t chunk, int32_t slot, void *ctx) {
  const ck_dw_job *job = (const ck_dw_job *)ctx;
  const ck_conv2d_params *p = job->p;
  const int64_t og = p->out_channels / p->groups, kdim = p->kernel_h * p->kernel_w, pixels = job->oh * job->ow;
  const int64_t per_task = ck_dw_task_groups(p), first = (int64_t)chunk * per_task, total = p->batch * p->groups;
  const int64_t end = first + per_task < total ? first + per_task : total;
  const uintptr_t base = job->workspace == NULL ? 0 : (uintptr_t)job->workspace + (size_t)slot * ck_dw_slot_bytes(p);
  float *padded = base == 0 ? NULL : (float *)(void *)((base + (CK_ALIGN - 1)) & ~(uintptr_t)(CK_ALIGN - 1));
  float *flat = padded != NULL ? padded + ck_padded_plane_floats(p) : NULL;
  int64_t i, o;
  if (job->row_fn != NULL && padded != NULL && ck_dw3x3_flat_takes(p)) {
    ck_dw3x3_flat_groups(p, first, end, job->data, job->weight, job->bias, job->activation, job->out, padded);
    return;
  }
  if (job->row_fn == NULL && padded != NULL && ck_dw_flat_takes(p)) {
    ck_dw_flat_groups(p, first, end, job->data, job->weight, job->bias, job->activation, job->out, padded);
    return;
  }
  for (i = first; i < end; ++i) {
    const int64_t n = i / p->groups, g = i % p->groups;
    const float *in_g = job->data + (n * p->channels + g) * p->height * p->width;
    const float *w_g = job->weight + g * og * kdim;
    float *out_g = job->out + (n * p->out_channels + g * og) * pixels;
    if (padded != NULL) ck_pad_plane(p, in_g, padded);
    for (o = 0; o < og; ++o) {
      const float b = job->bias != NULL ? job->bias[g * og + o] : 0.0f;
      if (job->row_fn == NULL && padded != NULL)
        ck_dw_plane(p, job->oh, job->ow, padded, ck_odd_offset(p), w_g + o * kdim, b, job->activation,
                    out_g + o * pixels, flat);
      else if (job->row_fn != NULL)
        ck_dw3x3_plane(p, job->oh, job->ow, padded, w_g + o * kdim, b, job->activation, out_g + o * pixels,
                       job->row_fn, flat);
      else
        ck_conv_direct_plane(p, job->oh, job->ow, in_g, w_g + o * kdim, b, job->activation, out_g + o * pixels);
    }
  }
}

/* One input channel per group (depthwise): direct kernels, in parallel over groups. */
static int32_t ck_conv_one_channel_groups(const ck_conv2d_params *p, const float *data, const float *weight,
                                          const float *bias, int32_t activation, float *out, ck_dw3x3_row_fn row_fn,
                                          void *workspace) {
  ck_dw_job job;
  const int64_t slots = ck_dw_slots(p);
  int64_t used, s;
  if (weight == NULL) return CK_EBADPARAM; /* (never packed) */
  job.p = p;
  job.data = data;
  job.weight = weight;
  job.bias = bias;
  job.activation = activation;
  job.out = out;
  job.row_fn = row_fn;
  job.workspace = ck_uses_padded_plane(p) ? (char *)workspace : NULL;
  ck_conv2d_output_hw(p, &job.oh, &job.ow);
  /* the borders stay zero: cleared once per call in every slot this call can use */
  used = byoc_get_num_threads() < slots ? byoc_get_num_threads() : slots;
  for (s = 0; job.workspace != NULL && s < used; ++s) {
    const uintptr_t base = (uintptr_t)(job.workspace + (size_t)s * ck_dw_slot_bytes(p));
    memset((void *)((base + (CK_ALIGN - 1)) & ~(uintptr_t)(CK_ALIGN - 1)), 0,
           sizeof(float) * (size_t)ck_padded_plane_floats(p));
  }
  if (byoc_parallel_chunks((int32_t)ck_dw_tasks(p), (int32_t)slots, ck_dw_task, &job) != 0) return CK_EBADPARAM;
  return CK_OK;
}

/* weight (OIHW) or packed (ck_conv2d_pack_weight) */
static int32_t ck_conv2d_any(const ck_conv2d_params *p, const float *data, const float *weight,
                             const float *packed, const float *bias, const float *residual, int32_t activation,
                             float *out, void *workspace) {
  int64_t oh, ow, cg, og, kdim, pixels, n, g;
  ck_dw3x3_row_fn row_fn;
  ck_pm_fn pm_tile;
  float *bordered = NULL;
  if (ck_conv2d_output_hw(p, &oh, &ow) != CK_OK) return CK_EBADPARAM;
  if (data == NULL || out == NULL) return CK_EBADPARAM;
  if (!CK_VALID_ACTIVATION(activation)) return CK_EBADPARAM;
  cg = p->channels / p->groups;
  og = p->out_channels / p->groups;
  kdim = cg * p->kernel_h * p->kernel_w;
  pixels = oh * ow;
  row_fn = ck_is_dw3x3(p) ? ck_micro_kernel_current()->dw3x3_row : NULL;
  /* pixel-major tiles read the weight as packed: prepacked weights only */
  pm_tile = cg != 1 && packed != NULL && ck_pm_takes(p, og, pixels, ow)
                ? ck_micro_kernel_current()->pixel_major
                : NULL;
  if ((cg != 1 || ck_uses_padded_plane(p)) && workspace == NULL) return CK_EBADPARAM;
  if (ck_im2col_bordered(p)) {
    const uintptr_t end = (uintptr_t)workspace + ck_conv_gemm_bytes(p, oh, ow);
    bordered = (float *)(void *)((end + (CK_ALIGN - 1)) & ~(uintptr_t)(CK_ALIGN - 1));
  }
  if (cg == 1) return ck_conv_one_channel_groups(p, data, weight, bias, activation, out, row_fn, workspace);
  if (ck_stem_takes(p)) return ck_conv_stem(p, data, weight, packed, bias, residual, activation, out, workspace);
  for (n = 0; n < p->batch; ++n) {
    for (g = 0; g < p->groups; ++g) {
      const float *in_g = data + (n * p->channels + g * cg) * p->height * p->width;
      const float *w_g = weight != NULL ? weight + g * og * kdim : NULL;
      const float *packed_g = packed != NULL ? packed + g * ck_packed_group_floats(p) : NULL;
      float *out_g = out + (n * p->out_channels + g * og) * pixels;
      /* (never with one input channel per group: those weights are not packed) */
      const float *residual_g = residual != NULL ? residual + (n * p->out_channels + g * og) * pixels : NULL;
      {
        ck_conv_view view;
        ck_b_source source;
        ck_epilogue epilogue;
        int32_t status;
        epilogue.bias = bias != NULL ? bias + g * og : NULL;
        epilogue.bias_per_row = 1;
        epilogue.activation = activation;
        source.conv = NULL;
        source.packed = NULL;
        if (ck_is_pointwise(p)) {
          source.base = in_g;
          source.row_stride = p->height * p->width;
          source.col_stride = 1;
        } else {
          view.data = in_g;
          view.height = p->height;
          view.width = p->width;
          view.kernel_h = p->kernel_h;
          view.kernel_w = p->kernel_w;
          view.stride_h = p->stride_h;
          view.stride_w = p->stride_w;
          view.pad_top = p->pad_top;
          view.pad_left = p->pad_left;
          view.dilation_h = p->dilation_h;
          view.dilation_w = p->dilation_w;
          view.out_w = ow;
          view.padded = NULL;
          view.padded_w = p->width + p->pad_left + p->pad_right;
          view.padded_plane = ck_padded_plane_floats(p);
          if (bordered != NULL) {
            ck_border_group(p, cg, in_g, bordered, pm_tile != NULL && ck_pm_split(p, ow));
            view.padded = bordered;
          }
          source.base = NULL;
          source.row_stride = source.col_stride = 0;
          source.conv = &view;
        }
        if (pm_tile != NULL) {
          ck_conv_pixel_major(&source, og, pixels, kdim, packed_g, epilogue.bias, residual_g, activation, out_g,
                              workspace, pm_tile);
          continue;
        }
        status = ck_gemm_core(og, pixels, kdim, w_g, kdim, 1, packed_g, &source, out_g, pixels, &epilogue,
                              residual_g, workspace);
        if (status != CK_OK) return status;
      }
    }
  }
  return CK_OK;
}
