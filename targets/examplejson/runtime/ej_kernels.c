/* ExampleJSON kernels: plain, correct float32 C (one loop nest per op; shapes were validated at create). */
#include <math.h>
#include <string.h>

#include "ej_internal.h"

/* ---- elementwise ---------------------------------------------------------------------------- */
static float binary(int32_t code, float a, float b) {
  switch (code) {
    case EJ_K_ADD: return a + b;
    case EJ_K_SUB: return a - b;
    case EJ_K_MUL: return a * b;
    case EJ_K_DIV: return a / b;
    case EJ_K_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
  }
}

void ej_kernel_binary(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  const EjTensor* a = ins[0];
  const EjTensor* b = ins[1];
  const int32_t code = node->op->code, r = out->ndim;
  int64_t sa[EJ_MAX_NDIM], sb[EJ_MAX_NDIM], idx[EJ_MAX_NDIM];
  int64_t i, oa = 0, ob = 0, stride_a = 1, stride_b = 1;
  int32_t d;
  if (a->numel == out->numel && b->numel == out->numel) {
    for (i = 0; i < out->numel; ++i) out->data[i] = binary(code, a->data[i], b->data[i]);
    return;
  }
  /* Strides of a and b over the output's index space (0 along broadcast dims). */
  for (d = r - 1; d >= 0; --d) {
    int32_t da = d - (r - a->ndim), db = d - (r - b->ndim);
    int64_t na = da >= 0 ? a->shape[da] : 1, nb = db >= 0 ? b->shape[db] : 1;
    sa[d] = na == 1 ? 0 : stride_a;
    sb[d] = nb == 1 ? 0 : stride_b;
    stride_a *= na;
    stride_b *= nb;
    idx[d] = 0;
  }
  for (i = 0; i < out->numel; ++i) {
    out->data[i] = binary(code, a->data[oa], b->data[ob]);
    for (d = r - 1; d >= 0; --d) { /* odometer step */
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < out->shape[d]) break;
      oa -= sa[d] * out->shape[d];
      ob -= sb[d] * out->shape[d];
      idx[d] = 0;
    }
  }
}

void ej_kernel_unary(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  const float* x = ins[0]->data;
  float* y = out->data;
  const int64_t n = out->numel;
  const float lo = (float)node->attrs.a_min, hi = (float)node->attrs.a_max, alpha = (float)node->attrs.alpha;
  int64_t i;
  switch (node->op->code) {
    case EJ_K_NEG: for (i = 0; i < n; ++i) y[i] = -x[i]; break;
    case EJ_K_ABS: for (i = 0; i < n; ++i) y[i] = fabsf(x[i]); break;
    case EJ_K_EXP: for (i = 0; i < n; ++i) y[i] = expf(x[i]); break;
    case EJ_K_LOG: for (i = 0; i < n; ++i) y[i] = logf(x[i]); break;
    case EJ_K_SQRT: for (i = 0; i < n; ++i) y[i] = sqrtf(x[i]); break;
    case EJ_K_TANH: for (i = 0; i < n; ++i) y[i] = tanhf(x[i]); break;
    case EJ_K_SIGMOID: for (i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i])); break;
    case EJ_K_RELU: for (i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f; break;
    case EJ_K_CLIP: for (i = 0; i < n; ++i) y[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]); break;
    default: for (i = 0; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : alpha * x[i]; break;
  }
}

/* ---- nn ------------------------------------------------------------------------------------- */
void ej_kernel_dense(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  const float* x = ins[0]->data;
  const float* w = ins[1]->data;
  const int64_t n = ins[1]->shape[0], k = ins[1]->shape[1], m = ins[0]->numel / k;
  int64_t i, j, p;
  (void)node;
  for (i = 0; i < m; ++i) {
    for (j = 0; j < n; ++j) {
      double acc = 0.0;
      for (p = 0; p < k; ++p) acc += (double)x[i * k + p] * (double)w[j * k + p];
      out->data[i * n + j] = (float)acc;
    }
  }
}

void ej_kernel_bias_add(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  const EjTensor* x = ins[0];
  const int64_t axis = node->attrs.axis < 0 ? node->attrs.axis + x->ndim : node->attrs.axis;
  int64_t outer = 1, inner = 1, c, o, i, d;
  for (d = 0; d < axis; ++d) outer *= x->shape[d];
  for (d = axis + 1; d < x->ndim; ++d) inner *= x->shape[d];
  c = x->shape[axis];
  for (o = 0; o < outer; ++o) {
    for (d = 0; d < c; ++d) {
      const float b = ins[1]->data[d];
      const int64_t base = (o * c + d) * inner;
      for (i = 0; i < inner; ++i) out->data[base + i] = x->data[base + i] + b;
    }
  }
}

void ej_kernel_conv2d(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  const EjTensor* x = ins[0];
  const EjTensor* w = ins[1];
  const EjAttrs* a = &node->attrs;
  const int64_t batch = x->shape[0], cin = x->shape[1], h = x->shape[2], wd = x->shape[3];
  const int64_t cout = w->shape[0], cpg = w->shape[1], kh = w->shape[2], kw = w->shape[3];
  const int64_t oh = out->shape[2], ow = out->shape[3], opg = cout / a->groups;
  int64_t n, o, y, z, c, p, q;
  for (n = 0; n < batch; ++n) {
    for (o = 0; o < cout; ++o) {
      const int64_t c0 = (o / opg) * cpg;
      for (y = 0; y < oh; ++y) {
        for (z = 0; z < ow; ++z) {
          double acc = 0.0;
          for (c = 0; c < cpg; ++c) {
            const float* xp = x->data + (n * cin + c0 + c) * h * wd;
            const float* wp = w->data + (o * cpg + c) * kh * kw;
            for (p = 0; p < kh; ++p) {
              const int64_t iy = y * a->strides[0] + p * a->dilation[0] - a->padding[0];
              if (iy < 0 || iy >= h) continue;
              for (q = 0; q < kw; ++q) {
                const int64_t ix = z * a->strides[1] + q * a->dilation[1] - a->padding[1];
                if (ix < 0 || ix >= wd) continue;
                acc += (double)xp[iy * wd + ix] * (double)wp[p * kw + q];
              }
            }
          }
          out->data[((n * cout + o) * oh + y) * ow + z] = (float)acc;
        }
      }
    }
  }
}

/* One pooling kernel: max, or average over the input positions (or input + declared padding). */
static void pool2d(const EjNode* node, const EjTensor* x, EjTensor* out, int is_max) {
  const EjAttrs* a = &node->attrs;
  const int64_t planes = x->shape[0] * x->shape[1], h = x->shape[2], w = x->shape[3];
  const int64_t oh = out->shape[2], ow = out->shape[3];
  int64_t pl, y, z, p, q;
  for (pl = 0; pl < planes; ++pl) {
    const float* xp = x->data + pl * h * w;
    float* yp = out->data + pl * oh * ow;
    for (y = 0; y < oh; ++y) {
      for (z = 0; z < ow; ++z) {
        double acc = 0.0, best = -INFINITY;
        int64_t in_input = 0, in_padding = 0;
        for (p = 0; p < a->pool_size[0]; ++p) {
          const int64_t iy = y * a->strides[0] + p * a->dilation[0] - a->padding[0];
          if (iy >= h + a->padding[2]) continue; /* ceil-mode overhang: never counted */
          for (q = 0; q < a->pool_size[1]; ++q) {
            const int64_t ix = z * a->strides[1] + q * a->dilation[1] - a->padding[1];
            if (ix >= w + a->padding[3]) continue;
            ++in_padding;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            ++in_input;
            acc += xp[iy * w + ix];
            if (xp[iy * w + ix] > best) best = xp[iy * w + ix];
          }
        }
        if (is_max) {
          yp[y * ow + z] = (float)best;
        } else {
          const int64_t count = a->count_include_pad ? in_padding : in_input;
          yp[y * ow + z] = (float)(acc / (double)(count > 0 ? count : 1));
        }
      }
    }
  }
}

void ej_kernel_max_pool2d(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  pool2d(node, ins[0], out, 1);
}

void ej_kernel_avg_pool2d(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  pool2d(node, ins[0], out, 0);
}

void ej_kernel_global_avg_pool2d(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  const EjTensor* x = ins[0];
  const int64_t planes = x->shape[0] * x->shape[1], hw = x->shape[2] * x->shape[3];
  int64_t pl, i;
  (void)node;
  for (pl = 0; pl < planes; ++pl) {
    double acc = 0.0;
    for (i = 0; i < hw; ++i) acc += x->data[pl * hw + i];
    out->data[pl] = (float)(acc / (double)hw);
  }
}

void ej_kernel_copy(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  (void)node;
  memmove(out->data, ins[0]->data, (size_t)out->numel * sizeof(float));
}

void ej_kernel_softmax(const EjNode* node, const EjTensor* const* ins, EjTensor* out) {
  const EjTensor* x = ins[0];
  const int64_t axis = node->attrs.axis < 0 ? node->attrs.axis + x->ndim : node->attrs.axis;
  int64_t outer = 1, inner = 1, n = x->shape[axis], o, i, k, d;
  for (d = 0; d < axis; ++d) outer *= x->shape[d];
  for (d = axis + 1; d < x->ndim; ++d) inner *= x->shape[d];
  for (o = 0; o < outer; ++o) {
    for (i = 0; i < inner; ++i) {
      const float* xp = x->data + o * n * inner + i;
      float* yp = out->data + o * n * inner + i;
      float top = xp[0];
      double sum = 0.0;
      for (k = 1; k < n; ++k) top = xp[k * inner] > top ? xp[k * inner] : top;
      for (k = 0; k < n; ++k) {
        yp[k * inner] = expf(xp[k * inner] - top);
        sum += yp[k * inner];
      }
      for (k = 0; k < n; ++k) yp[k * inner] = (float)(yp[k * inner] / sum);
    }
  }
}
