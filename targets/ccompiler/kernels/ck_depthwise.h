/* ck_depthwise.h - internal: depthwise convolutions of any window up to CK_DW_MAX_TAPS taps on a
 * zero-bordered copy of the input plane (ck_depthwise.c; ck_conv2d.c dispatches to it). */
#ifndef BYOC_CK_DEPTHWISE_H_
#define BYOC_CK_DEPTHWISE_H_

#include "ck_internal.h"

#define CK_DW_MAX_TAPS 64

/* 1 when ck_dw_plane computes this convolution: one input channel per group, no dilation,
 * stride_w 1 or 2, at most CK_DW_MAX_TAPS taps; 3x3 has its own row kernels (ck_microkernel.c). */
int ck_dw_any_takes(const ck_conv2d_params *p);

/* One output plane [oh_n, ow_n] from `padded`, the input plane with its zero border (stride_w 2:
 * each padded row stored as its even columns, then, `odd` floats on, its odd ones); `flat` is
 * scratch of as many floats as the padded plane. */
void ck_dw_plane(const ck_conv2d_params *p, int64_t oh_n, int64_t ow_n, const float *padded, int64_t odd,
                 const float *w, float bias, int32_t activation, float *out, float *flat);

/* 3x3, stride 1, padding 1 (MobileNet's stride-1 depthwise): whole planes as one flat pass read in place
 * (ck_depthwise.c); takes: whether it computes this convolution (GCC-compatible compilers, planes of at least
 * 16 pixels). groups: the (image, group) items [first, end) of a task; slot: its thread's slot. */
int ck_dw3x3_flat_takes(const ck_conv2d_params *p);
void ck_dw3x3_flat_groups(const ck_conv2d_params *p, int64_t first, int64_t end, const float *data,
                          const float *weight, const float *bias, int32_t activation, float *out, float *slot);

#endif /* BYOC_CK_DEPTHWISE_H_ */
