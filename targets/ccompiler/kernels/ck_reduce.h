/* ck_reduce.h - the kernel library's reductions (ck_reduce.c); included by byoc_ck.h.
 * Same conventions: float32, contiguous row-major, 0 on success, CK_EBADPARAM on bad parameters. */
#ifndef BYOC_CK_REDUCE_H_
#define BYOC_CK_REDUCE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CK_REDUCE_SUM = 0, CK_REDUCE_MEAN = 1, CK_REDUCE_MAX = 2, CK_REDUCE_MIN = 3, CK_REDUCE_PROD = 4 } ck_reduce_op;

/* sum, mean, max, min, prod of in (ndim dims of shape, 0 <= ndim <= CK_MAX_RANK) over the axes i with
 * reduce[i] != 0 (any set: none, some, all); out holds the kept axes in order (keepdims only changes the
 * output's shape, not its bytes). Sums, means and products accumulate in double and round once; max and
 * min propagate NaN. Over no elements (a reduced axis of size 0): 0, NaN, -inf, +inf, 1. With no axis
 * reduced out is a copy of in. No scratch. out must not alias in. */
int32_t ck_reduce(int32_t op, int32_t ndim, const int64_t *shape, const int32_t *reduce, const float *in,
                  float *out);

#ifdef __cplusplus
}
#endif

#endif /* BYOC_CK_REDUCE_H_ */
