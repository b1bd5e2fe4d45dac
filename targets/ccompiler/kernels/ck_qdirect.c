/* ck_qdirect.c - ck_qconv2d_params.channels_last: a convolution of one group summed directly over a channels-last
 * copy of its input, the output channels in the vector lanes.
 *
 * The GEMM core puts output pixels in the lanes (a 32-pixel panel of the input packed per k-step, one weight
 * broadcast per output channel), which gives NCHW rows straight from its registers. Here the lanes hold output
 * channels instead: the input is copied once into [row][column][channel] bytes bordered with the zero point, each
 * tile sums 6 output pixels x 64 output channels (24 accumulators) and each k-step (4 input channels of one tap)
 * reads four 64-byte vectors of the packed weight and one 4-byte broadcast per pixel, straight from the copy: no
 * im2col, no packed panels, and 10 loads per 24 vpdpbusd where the 8 x 32 tile takes 10 per 16. On a Xeon with
 * AVX512-VNNI (family 6 model 207) ResNet-50's 3x3 layers ran at 330-340 G multiply-adds/s of one thread this way
 * against the panel tile's 220-245, measured outside the library in one process (docs/quantization.md).
 * Into a channels-last output (layout bit 4, what the codegen keeps between such convolutions) the tile requantizes
 * from its registers (byoc's float32 rounding, ck_qparams.rounding 0; a residual add of rounding 0 in the same
 * registers), a pixel's 64 channels one store. Into an NCHW output, or with another residual add, the sums go to a
 * task's int32 scratch as [pixel][channel], requantized 16 pixels x 16 channels at a time and the bytes transposed
 * into channel rows. A channels-last input (bit 2) is copied by rows into the bordered copy, or read where it is when
 * unpadded uint8 in whole 4-channel steps. Without VNNI (or with the portable GEMM kernel forced) the same sums run in
 * portable C and ck_qrequant_row requantizes them: the same bytes.
 * Weight: per block of 64 output channels, per tap, per 4 input channels, 64 x 4 bytes (channel-major within the
 * step), zeros past the channels of either side. */
#include <string.h>

#include "ck_qinternal.h"
#include "byoc/parallel.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(CK_NO_DISPATCH)
#define CK_QDL_X86 1
#include <immintrin.h>
#define CK_QDL_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#endif

#define CK_QDL_OC 64   /* output channels per block: the lanes of a pixel's 4 accumulators */
#define CK_QDL_PX 6 /* output pixels per tile: 24 accumulators, the 4 weight vectors and a broadcast in registers */
#define CK_QDL_BAND_MAX 96 /* output pixels per task at most (the image split into bands of whole tiles) */

/* ck_qconv2d_params.channels_last's bits past the first: the input, the output (and the residual) channels-last */
#define CK_QDL_IN_NHWC 2
#define CK_QDL_OUT_NHWC 4

static int64_t ck_qdl_cs(const ck_conv2d_params *c) { return ck_qround_up(c->channels, 4); }
static int64_t ck_qdl_blocks(const ck_conv2d_params *c) { return (c->out_channels + CK_QDL_OC - 1) / CK_QDL_OC; }
static int64_t ck_qdl_ph(const ck_conv2d_params *c) { return c->height + c->pad_top + c->pad_bottom; }
static int64_t ck_qdl_pw(const ck_conv2d_params *c) { return c->width + c->pad_left + c->pad_right; }

int ck_qdirect_takes(const ck_qconv2d_params *p) {
  const ck_conv2d_params *c = &p->conv;
  return (p->channels_last & ~(CK_QDL_IN_NHWC | CK_QDL_OUT_NHWC)) == 1 && c->groups == 1 &&
         !(c->channels == 1 && c->out_channels == 1) && p->q.rounding == 0 &&
         p->im2col_columns <= 0 && p->winograd == 0 && p->pairs == 0 && p->channel_order == NULL;
}

size_t ck_qdirect_weight_bytes(const ck_qconv2d_params *p) {
  const ck_conv2d_params *c = &p->conv;
  return (size_t)(ck_qdl_blocks(c) * CK_QDL_OC * c->kernel_h * c->kernel_w * ck_qdl_cs(c));
}

void ck_qdirect_pack_weight(const ck_qconv2d_params *p, const int8_t *weight, int8_t *packed) {
  const ck_conv2d_params *c = &p->conv;
  const int64_t taps = c->kernel_h * c->kernel_w, steps = ck_qdl_cs(c) / 4;
  int64_t o, ch, t;
  memset(packed, 0, ck_qdirect_weight_bytes(p));
  for (o = 0; o < c->out_channels; ++o)
    for (ch = 0; ch < c->channels; ++ch)
      for (t = 0; t < taps; ++t)
        packed[(((o / CK_QDL_OC) * taps + t) * steps + ch / 4) * CK_QDL_OC * 4 + (o % CK_QDL_OC) * 4 + ch % 4] =
            weight[(o * c->channels + ch) * taps + t];
}

static int64_t ck_qdl_copy_bytes(const ck_conv2d_params *c) {
  return ck_qround_up(ck_qdl_ph(c) * ck_qdl_pw(c) * ck_qdl_cs(c) + 64, CK_QALIGN);
}

/* Output pixels per band: the image in as few bands of at most CK_QDL_BAND_MAX as can be, evened out and rounded up
 * to whole tiles (ResNet-50's 7x7 outputs one band of 54, 14x14 three of 66, 66 and 64: no band of a few pixels
 * that reads the whole weight block for them) */
static int64_t ck_qdl_band(int64_t n) {
  const int64_t bands = (n + CK_QDL_BAND_MAX - 1) / CK_QDL_BAND_MAX;
  return ck_qround_up((n + bands - 1) / bands, CK_QDL_PX);
}

static int64_t ck_qdl_tasks(const ck_conv2d_params *c, int64_t oh, int64_t ow) {
  const int64_t band = ck_qdl_band(oh * ow);
  return (oh * ow + band - 1) / band * ck_qdl_blocks(c);
}

static int64_t ck_qdl_slots(const ck_conv2d_params *c, int64_t oh, int64_t ow) {
  const int64_t tasks = ck_qdl_tasks(c, oh, ow);
  return tasks < BYOC_MAX_THREADS ? tasks : BYOC_MAX_THREADS;
}

#define CK_QDL_SLOT_BYTES (ck_qround_up(CK_QDL_BAND_MAX, CK_QDL_PX) * CK_QDL_OC * 4)

size_t ck_qdirect_workspace_bytes(const ck_qconv2d_params *p, int64_t oh, int64_t ow) {
  return (size_t)(CK_QALIGN + ck_qdl_copy_bytes(&p->conv) + ck_qdl_slots(&p->conv, oh, ow) * CK_QDL_SLOT_BYTES);
}

/* ---- the channels-last copy ---------------------------------------------------------------------------------- */

typedef struct {
  const ck_conv2d_params *c;
  const uint8_t *in; /* one image, NCHW */
  uint8_t *copy;
  uint8_t zp, flip;  /* the border's byte (already in uint8), int8 -> uint8 */
} ck_qdl_copy_job;

/* An input already channels-last ([row][column][channel]): each row's pixels into the copy, channels flipped into
 * uint8 (SSE2 16 bytes a step) */
static void ck_qdl_copy_nhwc_rows(void *ctx, int64_t y0, int64_t y1) {
  const ck_qdl_copy_job *j = (const ck_qdl_copy_job *)ctx;
  const ck_conv2d_params *c = j->c;
  const int64_t cs = ck_qdl_cs(c), row = c->width * c->channels;
  int64_t y, x, i;
  for (y = y0; y < y1; ++y) {
    const uint8_t *src = j->in + y * row;
    uint8_t *dst = j->copy + ((y + c->pad_top) * ck_qdl_pw(c) + c->pad_left) * cs;
    if (cs == c->channels && j->flip == 0) {
      memcpy(dst, src, (size_t)row);
      continue;
    }
    for (x = 0; x < c->width; ++x, src += c->channels, dst += cs) {
      i = 0;
#if defined(__SSE2__)
      for (; i + 16 <= c->channels; i += 16)
        _mm_storeu_si128((__m128i *)(void *)(dst + i),
                         _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(src + i)),
                                       _mm_set1_epi8((char)j->flip)));
#endif
      for (; i < c->channels; ++i) dst[i] = (uint8_t)(src[i] ^ j->flip);
    }
  }
}

/* Where input pixel f (row-major over the image) lies in the copy */
static uint8_t *ck_qdl_pixel(const ck_qdl_copy_job *j, int64_t f) {
  const ck_conv2d_params *c = j->c;
  return j->copy + ((f / c->width + c->pad_top) * ck_qdl_pw(c) + f % c->width + c->pad_left) * ck_qdl_cs(c);
}

/* Padded rows [y0, y1) of the copy: the zero point wherever no input byte goes (border rows and columns, and the
 * channels past the input's up to a multiple of 4) */
static void ck_qdl_border_rows(void *ctx, int64_t y0, int64_t y1) {
  const ck_qdl_copy_job *j = (const ck_qdl_copy_job *)ctx;
  const ck_conv2d_params *c = j->c;
  const int64_t cs = ck_qdl_cs(c), pw = ck_qdl_pw(c);
  int64_t y, x;
  for (y = y0; y < y1; ++y) {
    uint8_t *row = j->copy + y * pw * cs;
    if (y < c->pad_top || y >= c->pad_top + c->height) {
      memset(row, j->zp, (size_t)(pw * cs));
      continue;
    }
    memset(row, j->zp, (size_t)(c->pad_left * cs));
    memset(row + (c->pad_left + c->width) * cs, j->zp, (size_t)(c->pad_right * cs));
    if (cs > c->channels)
      for (x = 0; x < c->width; ++x)
        memset(row + (c->pad_left + x) * cs + c->channels, j->zp, (size_t)(cs - c->channels));
  }
}

#if defined(CK_QDL_X86)
/* r[j] = byte j of each of the 16 rows r[0..16) as they came in: four rounds of interleaving row i with row i + 8
 * transpose 16 x 16 bytes (SSE2) */
static void ck_qdl_transpose16(__m128i *r) {
  __m128i t[16];
  int i, round;
  for (round = 0; round < 4; ++round) {
    for (i = 0; i < 8; ++i) {
      t[2 * i] = _mm_unpacklo_epi8(r[i], r[i + 8]);
      t[2 * i + 1] = _mm_unpackhi_epi8(r[i], r[i + 8]);
    }
    memcpy(r, t, sizeof t);
  }
}
#endif

/* Input pixels [16 f0, 16 f1) of the image (row-major over its rows, so a block may span rows) into the copy: blocks
 * of 16 pixels x 16 channels transposed in registers, each pixel's 16 channels one 16-byte store; the rest byte by
 * byte. The whole image at once: rows of 7 or 14 pixels (ResNet's last stages) are no shorter than any other. */
static void ck_qdl_copy_pixels(void *ctx, int64_t f0, int64_t f1) {
  const ck_qdl_copy_job *j = (const ck_qdl_copy_job *)ctx;
  const ck_conv2d_params *c = j->c;
  const int64_t plane = c->height * c->width, last = 16 * f1 < plane ? 16 * f1 : plane;
  int64_t f, ch, i;
  for (f = 16 * f0; f < last; f += 16) {
    const int64_t pixels = last - f < 16 ? last - f : 16;
    uint8_t *dst[16];
    for (i = 0; i < pixels; ++i) dst[i] = ck_qdl_pixel(j, f + i);
    ch = 0;
#if defined(CK_QDL_X86)
    if (pixels == 16) {
      const __m128i flip = _mm_set1_epi8((char)j->flip);
      for (; ch + 16 <= c->channels; ch += 16) {
        __m128i r[16];
        for (i = 0; i < 16; ++i) r[i] = _mm_loadu_si128((const __m128i *)(const void *)(j->in + (ch + i) * plane + f));
        ck_qdl_transpose16(r);
        for (i = 0; i < 16; ++i) _mm_storeu_si128((__m128i *)(void *)(dst[i] + ch), _mm_xor_si128(r[i], flip));
      }
    }
#endif
    for (; ch < c->channels; ++ch) {
      const uint8_t *src = j->in + ch * plane + f;
      for (i = 0; i < pixels; ++i) dst[i][ch] = (uint8_t)(src[i] ^ j->flip);
    }
  }
}

/* ---- tiles: 6 output pixels x 64 output channels ------------------------------------------------------------- */

/* What a tile reads: pixel i's window starts at px[i] in the copy; tap (ky, kx) lies ky * row_step + kx * col_step
 * further, its channels in steps of 4 bytes; w: the block's packed weight. */
typedef struct {
  int64_t kh, kw, row_step, col_step, steps;
  const uint8_t *px[CK_QDL_PX];
  const int8_t *w;
} ck_qdl_tile_args;

/* acc[i * 64 + o] = sum over taps and channels of pixel i's bytes x weight (exact int32) */
static void ck_qdl_tile_portable(const ck_qdl_tile_args *a, int32_t *acc) {
  const int8_t *w = a->w;
  int64_t ky, kx, s, i, o, t;
  memset(acc, 0, CK_QDL_PX * CK_QDL_OC * sizeof *acc);
  for (ky = 0; ky < a->kh; ++ky)
    for (kx = 0; kx < a->kw; ++kx)
      for (s = 0; s < a->steps; ++s, w += CK_QDL_OC * 4)
        for (i = 0; i < CK_QDL_PX; ++i) {
          const uint8_t *b = a->px[i] + ky * a->row_step + kx * a->col_step + 4 * s;
          for (o = 0; o < CK_QDL_OC; ++o)
            for (t = 0; t < 4; ++t) acc[i * CK_QDL_OC + o] += (int32_t)b[t] * (int32_t)w[o * 4 + t];
        }
}

#if defined(CK_QDL_X86)
#define CK_QDL_DECL(I) __m512i c##I##0 = i0, c##I##1 = i1, c##I##2 = i2, c##I##3 = i3
#define CK_QDL_PIXEL(I)                                                   \
  do {                                                                    \
    int32_t v_;                                                           \
    __m512i b_;                                                           \
    memcpy(&v_, p##I + 4 * s, 4);                                         \
    b_ = _mm512_set1_epi32(v_);                                           \
    c##I##0 = _mm512_dpbusd_epi32(c##I##0, b_, w0);                       \
    c##I##1 = _mm512_dpbusd_epi32(c##I##1, b_, w1);                       \
    c##I##2 = _mm512_dpbusd_epi32(c##I##2, b_, w2);                       \
    c##I##3 = _mm512_dpbusd_epi32(c##I##3, b_, w3);                       \
  } while (0)
#define CK_QDL_STORE(I)                                                              \
  do {                                                                               \
    _mm512_storeu_si512((void *)(acc + (I) * CK_QDL_OC), c##I##0);                   \
    _mm512_storeu_si512((void *)(acc + (I) * CK_QDL_OC + 16), c##I##1);              \
    _mm512_storeu_si512((void *)(acc + (I) * CK_QDL_OC + 32), c##I##2);              \
    _mm512_storeu_si512((void *)(acc + (I) * CK_QDL_OC + 48), c##I##3);              \
  } while (0)

/* The k-loop of a tile: 6 pixels x 4 vectors of 16 channels summed into c00 .. c53, each pixel's from i0 .. i3 */
#define CK_QDL_ACCUMULATE()                                                                                        \
  const int8_t *w = a->w;                                                                                          \
  int64_t ky, kx, s;                                                                                               \
  CK_QDL_DECL(0);                                                                                                  \
  CK_QDL_DECL(1);                                                                                                  \
  CK_QDL_DECL(2);                                                                                                  \
  CK_QDL_DECL(3);                                                                                                  \
  CK_QDL_DECL(4);                                                                                                  \
  CK_QDL_DECL(5);                                                                                                  \
  for (ky = 0; ky < a->kh; ++ky)                                                                                   \
    for (kx = 0; kx < a->kw; ++kx) {                                                                               \
      const int64_t off = ky * a->row_step + kx * a->col_step;                                                     \
      const uint8_t *p0 = a->px[0] + off, *p1 = a->px[1] + off, *p2 = a->px[2] + off, *p3 = a->px[3] + off;       \
      const uint8_t *p4 = a->px[4] + off, *p5 = a->px[5] + off;                                                    \
      for (s = 0; s < a->steps; ++s, w += CK_QDL_OC * 4) {                                                         \
        const __m512i w0 = _mm512_loadu_si512((const void *)w), w1 = _mm512_loadu_si512((const void *)(w + 64));   \
        const __m512i w2 = _mm512_loadu_si512((const void *)(w + 128));                                            \
        const __m512i w3 = _mm512_loadu_si512((const void *)(w + 192));                                            \
        CK_QDL_PIXEL(0);                                                                                           \
        CK_QDL_PIXEL(1);                                                                                           \
        CK_QDL_PIXEL(2);                                                                                           \
        CK_QDL_PIXEL(3);                                                                                           \
        CK_QDL_PIXEL(4);                                                                                           \
        CK_QDL_PIXEL(5);                                                                                           \
      }                                                                                                            \
    }

CK_QDL_TARGET static void ck_qdl_tile_vnni(const ck_qdl_tile_args *a, int32_t *acc) {
  const __m512i i0 = _mm512_setzero_si512(), i1 = i0, i2 = i0, i3 = i0;
  CK_QDL_ACCUMULATE();
  CK_QDL_STORE(0);
  CK_QDL_STORE(1);
  CK_QDL_STORE(2);
  CK_QDL_STORE(3);
  CK_QDL_STORE(4);
  CK_QDL_STORE(5);
}

/* What the channels-last epilogue needs for a block of output channels: its constants and the output's layout */
typedef struct {
  const int32_t *bias;
  const float *scale;
  int64_t rows;      /* channels of the block (the last block's may be fewer than 64) */
  int64_t ldo;       /* bytes from one output pixel to the next: the output's channels */
  int out_signed;
  __m512i zp;
  __m512 lo, hi;     /* the clamp, less the zero point */
  const ck_qadd_params *add; /* NULL, or a residual add of rounding 0 */
  int conv_is_rhs;
  __m512 r_conv, r_res, fixed, add_lo, add_hi;
} ck_qdl_epilogue;

/* 16 channels of one pixel requantized (ck_requant1 lane by lane, rounding 0: the block's constants vbias, vscale),
 * the residual's 16 bytes at res added if e->add (ck_qadd_avx512's float32 steps: fmaf(lhs, ratio_a, fmaf(rhs,
 * ratio_b, fixed)), clamped, ties to even): the bytes' values as int32 */
CK_QDL_TARGET static inline __m512i ck_qdl_requant16(__m512i acc, __m512i vbias, __m512 vscale,
                                                     const ck_qdl_epilogue *e, __mmask16 cmask, const uint8_t *res,
                                                     int64_t at) {
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc, vbias)), vscale);
  __m512i r;
  f = _mm512_min_ps(_mm512_max_ps(f, e->lo), e->hi);
  r = _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), e->zp);
  if (e->add != NULL) {
    const __m128i b8 = _mm_maskz_loadu_epi8(cmask, (const void *)(res + at));
    const __m512 b = _mm512_cvtepi32_ps(e->add->is_signed ? _mm512_cvtepi8_epi32(b8) : _mm512_cvtepu8_epi32(b8));
    const __m512 a = _mm512_cvtepi32_ps(r);
    __m512 v = e->conv_is_rhs ? _mm512_fmadd_ps(b, e->r_res, _mm512_fmadd_ps(a, e->r_conv, e->fixed))
                              : _mm512_fmadd_ps(a, e->r_conv, _mm512_fmadd_ps(b, e->r_res, e->fixed));
    v = _mm512_min_ps(_mm512_max_ps(v, e->add_lo), e->add_hi);
    r = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  return r;
}

/* A block's 4 groups of requantized values (each in its output type's range) as 64 bytes in channel order: the packs
 * interleave 4-byte groups across the 128-bit lanes, the dword permutation puts them back */
CK_QDL_TARGET static inline void ck_qdl_store64(__m512i r0, __m512i r1, __m512i r2, __m512i r3, int is_signed,
                                                uint8_t *out) {
  const __m512i w01 = _mm512_packs_epi32(r0, r1), w23 = _mm512_packs_epi32(r2, r3);
  const __m512i b = is_signed ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm512_storeu_si512((void *)out, _mm512_permutexvar_epi32(order, b));
}

/* Pixel I's channels: a whole block as one 64-byte store, a last block's groups under masks */
#define CK_QDL_REQUANT(I)                                                                                          \
  do {                                                                                                             \
    if ((I) < npx) {                                                                                               \
      uint8_t *o_ = out + (I) * e->ldo;                                                                            \
      const uint8_t *r_ = res != NULL ? res + (I) * e->ldo : NULL; /* read only with e->add */                    \
      if (e->rows == CK_QDL_OC) {                                                                                  \
        ck_qdl_store64(ck_qdl_requant16(c##I##0, vb0, vs0, e, 0xFFFF, r_, 0),                                     \
                       ck_qdl_requant16(c##I##1, vb1, vs1, e, 0xFFFF, r_, 16),                                     \
                       ck_qdl_requant16(c##I##2, vb2, vs2, e, 0xFFFF, r_, 32),                                     \
                       ck_qdl_requant16(c##I##3, vb3, vs3, e, 0xFFFF, r_, 48), out_signed, o_);                    \
      } else {                                                                                                     \
        CK_QDL_GROUP(I, 0);                                                                                        \
        if (e->rows > 16) CK_QDL_GROUP(I, 1);                                                                      \
        if (e->rows > 32) CK_QDL_GROUP(I, 2);                                                                      \
        if (e->rows > 48) CK_QDL_GROUP(I, 3);                                                                      \
      }                                                                                                            \
    }                                                                                                              \
  } while (0)
#define CK_QDL_GROUP(I, G)                                                                                         \
  _mm_mask_storeu_epi8((void *)(o_ + 16 * (G)), cm##G,                                                             \
                       _mm512_cvtepi32_epi8(ck_qdl_requant16(c##I##G, vb##G, vs##G, e, cm##G, r_, 16 * (G))))
#define CK_QDL_CONSTANTS(G)                                                                                        \
  const __mmask16 cm##G = ck_qdl_group_mask(e->rows, G);                                                           \
  const __m512i vb##G = _mm512_maskz_loadu_epi32(cm##G, (const void *)(e->bias + 16 * (G)));                       \
  const __m512 vs##G = _mm512_maskz_loadu_ps(cm##G, (const void *)(e->scale + 16 * (G)))

/* the same, the bias already in the sums */
#define CK_QDL_SCALES(G)                                                                                           \
  const __mmask16 cm##G = ck_qdl_group_mask(e->rows, G);                                                           \
  const __m512i vb##G = _mm512_setzero_si512();                                                                    \
  const __m512 vs##G = _mm512_maskz_loadu_ps(cm##G, (const void *)(e->scale + 16 * (G)))

/* the lanes of group g (16 channels) among a block's first `rows` */
static inline __mmask16 ck_qdl_group_mask(int64_t rows, int64_t g) {
  const int64_t chans = rows - 16 * g;
  return (__mmask16)(chans >= 16 ? 0xFFFFu : chans <= 0 ? 0u : (1u << chans) - 1u);
}

/* The tile requantized from its registers into a channels-last output: pixel i of the first npx at out + i * ldo
 * (the residual at res + i * ldo, when e->add) */
CK_QDL_TARGET static void ck_qdl_tile_nhwc_vnni(const ck_qdl_tile_args *a, const ck_qdl_epilogue *e, int64_t npx,
                                                uint8_t *out, const uint8_t *res) {
  const int out_signed = e->add != NULL ? e->add->is_signed : e->out_signed;
  const __m512i i0 = _mm512_maskz_loadu_epi32(ck_qdl_group_mask(e->rows, 0), (const void *)e->bias);
  const __m512i i1 = _mm512_maskz_loadu_epi32(ck_qdl_group_mask(e->rows, 1), (const void *)(e->bias + 16));
  const __m512i i2 = _mm512_maskz_loadu_epi32(ck_qdl_group_mask(e->rows, 2), (const void *)(e->bias + 32));
  const __m512i i3 = _mm512_maskz_loadu_epi32(ck_qdl_group_mask(e->rows, 3), (const void *)(e->bias + 48));
  CK_QDL_ACCUMULATE(); /* the sums start at the bias (int32 wrap-around either way, as ck_requant1's add) */
  {
    CK_QDL_SCALES(0);
    CK_QDL_SCALES(1);
    CK_QDL_SCALES(2);
    CK_QDL_SCALES(3);
    CK_QDL_REQUANT(0);
  CK_QDL_REQUANT(1);
  CK_QDL_REQUANT(2);
  CK_QDL_REQUANT(3);
  CK_QDL_REQUANT(4);
    CK_QDL_REQUANT(5);
  }
}

/* The epilogue's constants for the block at o0 of a job's convolution (add: NULL or a rounding-0 residual add) */
CK_QDL_TARGET static void ck_qdl_epilogue_init(ck_qdl_epilogue *e, const ck_qconv2d_params *p, const int32_t *bias,
                                               const float *scale, int64_t rows, const ck_qadd_params *add,
                                               int conv_is_rhs) {
  const ck_qparams *q = &p->q;
  const int sign = add != NULL && add->is_signed;
  e->bias = bias;
  e->scale = scale;
  e->rows = rows;
  e->ldo = p->conv.out_channels;
  e->out_signed = q->output_signed;
  e->zp = _mm512_set1_epi32(q->output_zero_point);
  e->lo = _mm512_set1_ps((float)(q->out_min - q->output_zero_point));
  e->hi = _mm512_set1_ps((float)(q->out_max - q->output_zero_point));
  e->add = add;
  e->conv_is_rhs = conv_is_rhs;
  e->r_conv = _mm512_set1_ps(add == NULL ? 0.0f : conv_is_rhs ? add->ratio_b : add->ratio_a);
  e->r_res = _mm512_set1_ps(add == NULL ? 0.0f : conv_is_rhs ? add->ratio_a : add->ratio_b);
  e->fixed = _mm512_set1_ps(add == NULL ? 0.0f : add->fixed);
  e->add_lo = _mm512_set1_ps(sign ? -128.0f : 0.0f);
  e->add_hi = _mm512_set1_ps(sign ? 127.0f : 255.0f);
}

/* cnt pixels of the task's sums ([pixel][64 channels]) into an NCHW output (rows of ldo bytes; e->add NULL):
 * 16 pixels x 16 channels at a time requantized in the channels' lanes, the bytes transposed to [channel][pixel] */
CK_QDL_TARGET static void ck_qdl_store_vnni(const int32_t *sums, int64_t cnt, const ck_qdl_epilogue *e, uint8_t *out,
                                            int64_t ldo) {
  int64_t g, p0, r;
  for (g = 0; g * 16 < e->rows; ++g) {
    const __mmask16 cm = ck_qdl_group_mask(e->rows, g);
    const __m512i vb = _mm512_maskz_loadu_epi32(cm, (const void *)(e->bias + 16 * g));
    const __m512 vs = _mm512_maskz_loadu_ps(cm, (const void *)(e->scale + 16 * g));
    for (p0 = 0; p0 < cnt; p0 += 16) {
      const int64_t pix = cnt - p0 < 16 ? cnt - p0 : 16;
      __m128i block[16];
      for (r = 0; r < 16; ++r)
        block[r] = _mm512_cvtepi32_epi8(ck_qdl_requant16(
            r < pix ? _mm512_loadu_si512((const void *)(sums + (p0 + r) * CK_QDL_OC + 16 * g)) : _mm512_setzero_si512(),
            vb, vs, e, cm, NULL, 0));
      ck_qdl_transpose16(block);
      for (r = 0; 16 * g + r < e->rows && r < 16; ++r)
        _mm_mask_storeu_epi8((void *)(out + (16 * g + r) * ldo + p0), ck_qdl_group_mask(pix, 0), block[r]);
    }
  }
}
#endif

#if defined(CK_QDL_X86)
/* A task's sums ([pixel][64 channels]) requantized into a channels-last output (e->add NULL) */
CK_QDL_TARGET static void ck_qdl_store_nhwc_vnni(const int32_t *sums, int64_t cnt, const ck_qdl_epilogue *e,
                                                 uint8_t *out) {
  int64_t p, g;
  for (g = 0; 16 * g < e->rows; ++g) {
    const __mmask16 cm = ck_qdl_group_mask(e->rows, g);
    const __m512i vb = _mm512_maskz_loadu_epi32(cm, (const void *)(e->bias + 16 * g));
    const __m512 vs = _mm512_maskz_loadu_ps(cm, (const void *)(e->scale + 16 * g));
    for (p = 0; p < cnt; ++p)
      _mm_mask_storeu_epi8((void *)(out + p * e->ldo + 16 * g), cm,
                           _mm512_cvtepi32_epi8(ck_qdl_requant16(
                               _mm512_loadu_si512((const void *)(sums + p * CK_QDL_OC + 16 * g)), vb, vs, e, cm, NULL,
                               0)));
  }
}
#endif

/* The portable epilogues: ck_qrequant_row over channel o's sums gathered into a row (NCHW), or value by value */
static void ck_qdl_store_nhwc_rows(const int32_t *sums, int64_t cnt, int64_t rows, const int32_t *bias,
                                   const float *scale, const ck_qparams *q, uint8_t *out, int64_t ldo) {
  int64_t o, p;
  for (p = 0; p < cnt; ++p)
    for (o = 0; o < rows; ++o) ck_qrequant_row(1, sums + p * CK_QDL_OC + o, bias[o], scale[o], q, out + p * ldo + o);
}

static void ck_qdl_store_rows(const int32_t *sums, int64_t cnt, int64_t rows, const int32_t *bias, const float *scale,
                              const ck_qparams *q, uint8_t *out, int64_t ldo) {
  int32_t row[CK_QDL_BAND_MAX + CK_QDL_PX];
  int64_t o, p;
  for (o = 0; o < rows; ++o) {
    for (p = 0; p < cnt; ++p) row[p] = sums[p * CK_QDL_OC + o];
    ck_qrequant_row(cnt, row, bias[o], scale[o], q, out + o * ldo);
  }
}

/* ---- tasks: a band of output pixels x a block of output channels --------------------------------------------- */

typedef struct {
  const ck_qconv2d_params *p;
  int64_t oh, ow;
  const uint8_t *copy;
  int64_t copy_pw; /* pixels per row of the copy (the input's own when read in place) */
  const int8_t *weight;
  const int32_t *bias;
  const float *scale;
  uint8_t *out; /* the image's */
  uint8_t *slots;
  const ck_qpost *post;
  const uint8_t *out_base; /* the whole output (post->residual is laid out as it) */
  int vnni, out_nhwc;
} ck_qdl_job;

/* The tile's pixels [p0, p0 + 6) of a band of cnt (past its end: its last pixel again, never stored); (y, x): the
 * output row and column of pixel p0, stepped along (a division per pixel cost 4% of the run) */
static void ck_qdl_pixels(const ck_qdl_job *j, ck_qdl_tile_args *a, int64_t p0, int64_t cnt, int64_t *y, int64_t *x) {
  const ck_conv2d_params *c = &j->p->conv;
  const int64_t cs = ck_qdl_cs(c);
  int i;
  for (i = 0; i < CK_QDL_PX; ++i) {
    if (p0 + i >= cnt) {
      a->px[i] = a->px[i - 1];
      continue;
    }
    a->px[i] = j->copy + (*y * c->stride_h * j->copy_pw + *x * c->stride_w) * cs;
    if (++*x == j->ow) {
      *x = 0;
      ++*y;
    }
  }
}

static void ck_qdl_task(int32_t task, int32_t slot, void *ctx) {
  const ck_qdl_job *j = (const ck_qdl_job *)ctx;
  const ck_conv2d_params *c = &j->p->conv;
  const int64_t blocks = ck_qdl_blocks(c), block = task % blocks, band = task / blocks;
  const int64_t n = j->oh * j->ow, size = ck_qdl_band(n), n0 = band * size, cnt = n - n0 < size ? n - n0 : size;
  const int64_t o0 = block * CK_QDL_OC, rows = c->out_channels - o0 < CK_QDL_OC ? c->out_channels - o0 : CK_QDL_OC;
  const int64_t cs = ck_qdl_cs(c), pw = j->copy_pw, taps = c->kernel_h * c->kernel_w;
  int32_t *sums = (int32_t *)(void *)(j->slots + (int64_t)slot * CK_QDL_SLOT_BYTES);
  uint8_t *o = j->out_nhwc ? j->out + n0 * c->out_channels + o0 : j->out + o0 * n + n0;
  ck_qdl_tile_args a;
  int64_t p0, y, x;
  a.kh = c->kernel_h;
  a.kw = c->kernel_w;
  a.row_step = c->dilation_h * pw * cs;
  a.col_step = c->dilation_w * cs;
  a.steps = cs / 4;
  a.w = j->weight + block * taps * cs * CK_QDL_OC;
#if defined(CK_QDL_X86)
  if (j->vnni && j->out_nhwc && (j->post == NULL || j->post->add->rounding == 0)) {
    ck_qdl_epilogue e; /* the sums go from the tile's registers straight to the output: no scratch, no second pass */
    ck_qdl_epilogue_init(&e, j->p, j->bias + o0, j->scale + o0, rows, j->post != NULL ? j->post->add : NULL,
                         j->post != NULL && j->post->conv_is_rhs);
    y = n0 / j->ow;
    x = n0 % j->ow;
    for (p0 = 0; p0 < cnt; p0 += CK_QDL_PX) {
      const int64_t npx = cnt - p0 < CK_QDL_PX ? cnt - p0 : CK_QDL_PX;
      uint8_t *out_px = o + p0 * c->out_channels;
      ck_qdl_pixels(j, &a, p0, cnt, &y, &x);
      ck_qdl_tile_nhwc_vnni(&a, &e, npx, out_px,
                            j->post != NULL ? j->post->residual + (out_px - j->out_base) : NULL);
    }
    return;
  }
#endif
  y = n0 / j->ow;
  x = n0 % j->ow;
  for (p0 = 0; p0 < cnt; p0 += CK_QDL_PX) {
    ck_qdl_pixels(j, &a, p0, cnt, &y, &x);
#if defined(CK_QDL_X86)
    if (j->vnni) {
      ck_qdl_tile_vnni(&a, sums + p0 * CK_QDL_OC);
      continue;
    }
#endif
    ck_qdl_tile_portable(&a, sums + p0 * CK_QDL_OC);
  }
  if (j->out_nhwc) {
#if defined(CK_QDL_X86)
    if (j->vnni) {
      ck_qdl_epilogue e;
      ck_qdl_epilogue_init(&e, j->p, j->bias + o0, j->scale + o0, rows, NULL, 0);
      ck_qdl_store_nhwc_vnni(sums, cnt, &e, o);
    } else
#endif
      ck_qdl_store_nhwc_rows(sums, cnt, rows, j->bias + o0, j->scale + o0, &j->p->q, o, c->out_channels);
  } else {
#if defined(CK_QDL_X86)
    if (j->vnni) {
      ck_qdl_epilogue e;
      ck_qdl_epilogue_init(&e, j->p, j->bias + o0, j->scale + o0, rows, NULL, 0);
      ck_qdl_store_vnni(sums, cnt, &e, o, n);
    } else
#endif
      ck_qdl_store_rows(sums, cnt, rows, j->bias + o0, j->scale + o0, &j->p->q, o, n);
  }
  if (j->post != NULL) { /* the residual laid out as the output: rows of channels (NCHW) or of pixels */
    const uint8_t *r = j->post->residual + (o - j->out_base);
    const int64_t lines = j->out_nhwc ? cnt : rows, width = j->out_nhwc ? rows : cnt;
    const int64_t stride = j->out_nhwc ? c->out_channels : n;
    if (j->post->conv_is_rhs)
      ck_qadd_rows(j->post->add, lines, width, stride, r, o, o);
    else
      ck_qadd_rows(j->post->add, lines, width, stride, o, r, o);
  }
}

/* A channels-last uint8 input with no padding and channels in whole 4-byte steps is read where it is */
static int ck_qdl_in_place(const ck_qconv2d_params *p) {
  const ck_conv2d_params *c = &p->conv;
  return (p->channels_last & CK_QDL_IN_NHWC) && !p->q.input_signed && ck_qdl_cs(c) == c->channels &&
         c->pad_top == 0 && c->pad_left == 0 && c->pad_bottom == 0 && c->pad_right == 0;
}

void ck_qdirect_run(const ck_qconv2d_params *p, int64_t oh, int64_t ow, const uint8_t *data, const int8_t *weight,
                    const int32_t *bias, const float *scale, uint8_t *out, uint8_t *ws, const ck_qpost *post) {
  const ck_conv2d_params *c = &p->conv;
  const int64_t n = oh * ow, ph = ck_qdl_ph(c), row_bytes = ck_qdl_pw(c) * ck_qdl_cs(c);
  const int64_t blocks = (c->height * c->width + 15) / 16, block_bytes = 16 * c->channels;
  ck_qdl_copy_job copy;
  ck_qdl_job job;
  int64_t b;
  copy.c = c;
  copy.copy = ws;
  copy.flip = p->q.input_signed ? 0x80 : 0;
  copy.zp = (uint8_t)((uint8_t)p->q.input_zero_point ^ copy.flip);
  job.p = p;
  job.oh = oh;
  job.ow = ow;
  job.copy = ws;
  job.weight = weight;
  job.bias = bias;
  job.scale = scale;
  job.slots = ws + ck_qdl_copy_bytes(c);
  job.post = post;
  job.out_base = out;
  job.vnni = ck_qdirect_vnni();
  job.out_nhwc = (p->channels_last & CK_QDL_OUT_NHWC) != 0;
  job.copy_pw = ck_qdl_pw(c);
  for (b = 0; b < c->batch; ++b) {
    copy.in = data + b * c->channels * c->height * c->width;
    if (!(p->channels_last & CK_QDL_IN_NHWC)) {
      ck_parallel_range(ph, row_bytes >= 65536 ? 1 : 65536 / row_bytes, ck_qdl_border_rows, &copy);
      ck_parallel_range(blocks, block_bytes >= 65536 ? 1 : 65536 / block_bytes, ck_qdl_copy_pixels, &copy);
    } else if (ck_qdl_in_place(p)) { /* the input is the copy */
      job.copy = copy.in;
    } else {
      const int64_t in_row = c->width * c->channels;
      ck_parallel_range(ph, row_bytes >= 65536 ? 1 : 65536 / row_bytes, ck_qdl_border_rows, &copy);
      ck_parallel_range(c->height, in_row >= 65536 ? 1 : 65536 / in_row, ck_qdl_copy_nhwc_rows, &copy);
    }
    job.out = out + b * c->out_channels * n;
    byoc_parallel_chunks((int32_t)ck_qdl_tasks(c, oh, ow), (int32_t)ck_qdl_slots(c, oh, ow), ck_qdl_task, &job);
  }
}
