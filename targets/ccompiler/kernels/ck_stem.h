/* ck_stem.h - internal: convolutions over few input channels at stride 2 (a CNN's stem: ResNet-50's 7x7/2 on 3
 * channels, MobileNet's 3x3/2) as a direct kernel over a column-split copy of the input (ck_stem.c;
 * ck_conv2d.c dispatches to it). */
#ifndef BYOC_CK_STEM_H_
#define BYOC_CK_STEM_H_

#include "ck_internal.h"

#define CK_STEM_MAX_CHANNELS 4

/* 1 when ck_conv_stem computes this convolution (from the shape alone): one group of 2 to
 * CK_STEM_MAX_CHANNELS input channels, a window wider than one pixel whose taps fit one K block (CK_KC),
 * stride_w 2, output rows of at least 16 pixels. */
int ck_stem_takes(const ck_conv2d_params *p);

/* Its workspace: the column-split copy of one image's input (any alignment). */
size_t ck_stem_workspace_bytes(const ck_conv2d_params *p);

/* conv2d (+ bias, + residual, activation) on weight (OIHW) or packed (ck_conv2d_pack_weight's layout). */
int32_t ck_conv_stem(const ck_conv2d_params *p, const float *data, const float *weight, const float *packed,
                     const float *bias, const float *residual, int32_t activation, float *out, void *workspace);

#endif /* BYOC_CK_STEM_H_ */
