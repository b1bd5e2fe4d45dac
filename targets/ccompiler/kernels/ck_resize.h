/* ck_resize.h - the kernel library's resampling (ck_resize.c); included by byoc_ck.h.
 * Same conventions: float32, contiguous row-major, 0 on success, CK_EBADPARAM on bad parameters. */
#ifndef BYOC_CK_RESIZE_H_
#define BYOC_CK_RESIZE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CK_RESIZE_NEAREST = 0, CK_RESIZE_LINEAR = 1 } ck_resize_method;
/* ONNX Resize's coordinate_transformation_mode: where output position o samples the input axis. */
typedef enum {
  CK_COORD_HALF_PIXEL = 0, CK_COORD_HALF_PIXEL_SYMMETRIC = 1, CK_COORD_PYTORCH_HALF_PIXEL = 2,
  CK_COORD_ALIGN_CORNERS = 3, CK_COORD_ASYMMETRIC = 4, CK_COORD_TF_CROP_AND_RESIZE = 5
} ck_coordinate_mode;
/* ONNX Resize's nearest_mode: which neighbour a fractional source coordinate picks. */
typedef enum {
  CK_ROUND_PREFER_FLOOR = 0, CK_ROUND_PREFER_CEIL = 1, CK_NEAREST_FLOOR = 2, CK_NEAREST_CEIL = 3
} ck_nearest_mode;

/* image.resize, nearest or (multi)linear, of an ndim-D tensor (1 <= ndim <= CK_MAX_RANK) from in_shape
 * to out_shape. scales[i] > 0 is the axis' scale (ONNX uses it, not out/in, in the coordinate formulas);
 * roi holds ndim starts then ndim ends (tf_crop_and_resize only; NULL otherwise). Every axis samples
 * input positions clamped to the axis; an axis whose size and scale (within 1e-9) do not change and whose
 * roi is [0, 1] copies. With tf_crop_and_resize an output position whose source coordinate lies outside
 * an axis gets extrapolation_value. Coordinates and weights are computed in double and each output is
 * rounded once. No scratch. out must not alias in. */
int32_t ck_resize(int32_t ndim, const int64_t *in_shape, const int64_t *out_shape, const double *scales,
                  const double *roi, int32_t method, int32_t coordinate_mode, int32_t nearest_mode,
                  float extrapolation_value, const float *in, float *out);

#ifdef __cplusplus
}
#endif

#endif /* BYOC_CK_RESIZE_H_ */
