/* ck_depthwise.h - internal: depthwise convolutions of any window up to CK_DW_MAX_TAPS taps on a
 * zero-bordered copy of the input plane (ck_depthwise.c; ck_conv2d.c dispatches to it). */
#ifndef BYOC_CK_DEPTHWISE_H_
#define BYOC_CK_DEPTHWISE_H_

#include <float.h>

#include "ck_internal.h"

/* Outputs per vector of the flat passes (ck_depthwise.c, ck_dw_flat.c): a generic vector of 16 floats; the
 * tables of column masks hold CK_DW_BLOCK entries past a period, so a pass may use fewer lanes. */
#define CK_DW_BLOCK 16
/* The AVX2 passes' vectors: 8 floats, one register. gcc 12 made 16-float generic vectors under target("avx2")
 * into pairs of halves shuffled through the stack (the masks' int casts most of all): the 5x5 flat pass was
 * 53% of efficientnet_lite's run on a Zen 3. Every output is the same sum in the same order at any width. */
#define CK_DW_BLOCK_AVX2 8
/* A vector of copies of one float: scalar - vector splats (x - 0 == x, even -0); where float math runs in
 * double (FLT_EVAL_METHOD != 0) that would narrow, so fill the lanes (gcc makes 16 masked broadcasts of that
 * on AVX-512, which is why it is not the only form). */
#if FLT_EVAL_METHOD == 0
#define CK_DW_SPLAT(V, VALUE) ((V) = (VALUE) - (vec){0})
#else
#define CK_DW_SPLAT(V, VALUE)                                                                         \
  do {                                                                                                \
    int lane_;                                                                                        \
    for (lane_ = 0; lane_ < (int)(sizeof(V) / sizeof(float)); ++lane_) (V)[lane_] = (VALUE);       \
  } while (0)
#endif

#define CK_DW_MAX_TAPS 64

/* 1 when ck_dw_plane computes this convolution: one input channel per group, no dilation,
 * stride_w 1 or 2, at most CK_DW_MAX_TAPS taps; 3x3 has its own row kernels (ck_microkernel.c). */
int ck_dw_any_takes(const ck_conv2d_params *p);

/* One output plane [oh_n, ow_n] from `padded`, the input plane with its zero border (stride_w 2:
 * each padded row stored as its even columns, then, `odd` floats on, its odd ones); `flat` is
 * scratch of as many floats as the padded plane. */
void ck_dw_plane(const ck_conv2d_params *p, int64_t oh_n, int64_t ow_n, const float *padded, int64_t odd,
                 const float *w, float bias, int32_t activation, float *out, float *flat);

/* 3x3 with padding 1, stride 1 on rows narrower than 32 or stride 2 on even planes with rows narrower than 64
 * (MobileNet's narrow depthwise layers): whole planes as one flat pass read in place (ck_depthwise.c); takes:
 * whether it computes this convolution (GCC-compatible compilers, planes of at least 16 outputs). groups: the
 * (image, group) items [first, end) of a task; slot: its thread's slot. */
int ck_dw3x3_flat_takes(const ck_conv2d_params *p);
void ck_dw3x3_flat_groups(const ck_conv2d_params *p, int64_t first, int64_t end, const float *data,
                          const float *weight, const float *bias, int32_t activation, float *out, float *slot);

/* An H x W plane's four quarters (even rows' even columns, odd rows' even columns, even rows' odd columns, odd
 * rows' odd columns), each H/2 x W/2 rows of W/2 (H, W even). */
void ck_dw3x3_quarters(int64_t h, int64_t w_n, const float *in, float *ee, float *eo, float *oe, float *oo);

/* The same flat pass for square windows of odd size 5 or 7 with "same" padding ((k - 1) / 2 on every side):
 * EfficientNet's 5x5 depthwise layers (ck_dw_flat.c). */
int ck_dw_flat_takes(const ck_conv2d_params *p);
void ck_dw_flat_groups(const ck_conv2d_params *p, int64_t first, int64_t end, const float *data,
                       const float *weight, const float *bias, int32_t activation, float *out, float *slot);

#endif /* BYOC_CK_DEPTHWISE_H_ */
