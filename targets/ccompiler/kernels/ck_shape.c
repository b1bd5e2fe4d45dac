/* ck_shape.c - reshape (a copy), transpose of any rank, concatenate on any axis. */
#include <string.h>

#include "ck_internal.h"

int32_t ck_copy(int64_t n, const float *in, float *out) {
  if (in == NULL || out == NULL || n < 0) return CK_EBADPARAM;
  if (in != out && n > 0) memmove(out, in, (size_t)n * sizeof(float));
  return CK_OK;
}

int32_t ck_transpose(int32_t ndim, const int64_t *in_shape, const int32_t *axes, const float *in, float *out) {
  int64_t in_strides[CK_MAX_RANK], size[CK_MAX_RANK], stride[CK_MAX_RANK], index[CK_MAX_RANK];
  int64_t total = 1, rows, inner, inner_stride, r, i, offset = 0;
  int32_t d, nd = 0, seen = 0;
  if (in == NULL || out == NULL || ndim < 0 || ndim > CK_MAX_RANK) return CK_EBADPARAM;
  for (d = ndim - 1; d >= 0; --d) {
    if (in_shape[d] < 0) return CK_EBADPARAM;
    in_strides[d] = total;
    total *= in_shape[d];
  }
  for (d = 0; d < ndim; ++d) {
    if (axes[d] < 0 || axes[d] >= ndim || (seen >> axes[d]) & 1) return CK_EBADPARAM;
    seen |= 1 << axes[d];
  }
  if (total == 0) return CK_OK;
  /* output dims in order, with their input strides; unit dims dropped, runs that stay
   * contiguous in the input merged */
  for (d = 0; d < ndim; ++d) {
    const int64_t n = in_shape[axes[d]], s = in_strides[axes[d]];
    if (n == 1) continue;
    if (nd > 0 && stride[nd - 1] == s * n) {
      size[nd - 1] *= n;
      stride[nd - 1] = s;
      continue;
    }
    size[nd] = n;
    stride[nd] = s;
    ++nd;
  }
  if (nd == 0) {
    out[0] = in[0];
    return CK_OK;
  }
  inner = size[nd - 1];
  inner_stride = stride[nd - 1];
  rows = total / inner;
  for (d = 0; d < nd; ++d) index[d] = 0;
  for (r = 0; r < rows; ++r) {
    float *restrict o = out + r * inner;
    const float *restrict src = in + offset;
    if (inner_stride == 1)
      memcpy(o, src, (size_t)inner * sizeof(float));
    else
      for (i = 0; i < inner; ++i) o[i] = src[i * inner_stride];
    for (d = nd - 2; d >= 0; --d) {
      offset += stride[d];
      if (++index[d] < size[d]) break;
      offset -= stride[d] * size[d];
      index[d] = 0;
    }
  }
  return CK_OK;
}

int32_t ck_concatenate(int32_t num_inputs, const float *const *inputs, const int64_t *sizes,
                       int64_t outer, int64_t inner, float *out) {
  int64_t total = 0, o;
  int32_t t;
  if (inputs == NULL || sizes == NULL || out == NULL || num_inputs < 1 || outer < 0 || inner < 0)
    return CK_EBADPARAM;
  for (t = 0; t < num_inputs; ++t) {
    if (inputs[t] == NULL || sizes[t] < 0) return CK_EBADPARAM;
    total += sizes[t];
  }
  for (o = 0; o < outer; ++o) {
    float *dst = out + o * total * inner;
    for (t = 0; t < num_inputs; ++t) {
      const int64_t chunk = sizes[t] * inner;
      if (chunk > 0) memcpy(dst, inputs[t] + o * chunk, (size_t)chunk * sizeof(float));
      dst += chunk;
    }
  }
  return CK_OK;
}
