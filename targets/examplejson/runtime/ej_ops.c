/* The ExampleJSON op table: names, inputs, attributes, shape rules, kernels (one row per op). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ej_internal.h"

/* ---- attributes ---------------------------------------------------------------------------- */
const EjAttrSpec ej_attr_specs[] = {
    {"strides", EJ_ATTR_STRIDES, 1, 2, 0, offsetof(EjAttrs, strides)},
    {"padding", EJ_ATTR_PADDING, 1, 4, 0, offsetof(EjAttrs, padding)},
    {"dilation", EJ_ATTR_DILATION, 1, 2, 0, offsetof(EjAttrs, dilation)},
    {"pool_size", EJ_ATTR_POOL_SIZE, 1, 2, 0, offsetof(EjAttrs, pool_size)},
    {"groups", EJ_ATTR_GROUPS, 1, 1, 0, offsetof(EjAttrs, groups)},
    {"axis", EJ_ATTR_AXIS, 1, 1, 0, offsetof(EjAttrs, axis)},
    {"ceil_mode", EJ_ATTR_CEIL_MODE, 1, 1, 0, offsetof(EjAttrs, ceil_mode)},
    {"count_include_pad", EJ_ATTR_COUNT_INCLUDE_PAD, 1, 1, 0, offsetof(EjAttrs, count_include_pad)},
    {"a_min", EJ_ATTR_A_MIN, 1, 1, 1, offsetof(EjAttrs, a_min)},
    {"a_max", EJ_ATTR_A_MAX, 1, 1, 1, offsetof(EjAttrs, a_max)},
    {"alpha", EJ_ATTR_ALPHA, 1, 1, 1, offsetof(EjAttrs, alpha)},
};
const int32_t ej_num_attr_specs = (int32_t)(sizeof(ej_attr_specs) / sizeof(ej_attr_specs[0]));

const EjAttrSpec* ej_find_attr(const char* name, size_t len) {
  int32_t i;
  for (i = 0; i < ej_num_attr_specs; ++i) {
    if (strlen(ej_attr_specs[i].name) == len && memcmp(ej_attr_specs[i].name, name, len) == 0) {
      return &ej_attr_specs[i];
    }
  }
  return NULL;
}

void ej_default_attrs(EjAttrs* a) {
  memset(a, 0, sizeof(*a));
  a->strides[0] = a->strides[1] = 1;
  a->dilation[0] = a->dilation[1] = 1;
  a->pool_size[0] = a->pool_size[1] = 1;
  a->groups = 1;
  a->axis = 0; /* set per op in the parser: bias_add 1, softmax -1 */
  a->alpha = 0.01;
}

void ej_normalize_attr(const EjAttrSpec* spec, EjAttrs* attrs, int32_t count) {
  int64_t* v = (int64_t*)(void*)((char*)attrs + spec->offset);
  if (spec->is_float) return;
  if (spec->max_count == 2 && count == 1) v[1] = v[0];
  if (spec->max_count == 4 && count == 1) v[1] = v[2] = v[3] = v[0];
  if (spec->max_count == 4 && count == 2) {
    v[2] = v[0];
    v[3] = v[1];
  }
}

/* ---- shape rules ----------------------------------------------------------------------------- */
static void copy_shape(const EjTensor* t, int32_t* ndim, int64_t* shape) {
  *ndim = t->ndim;
  memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

static int32_t infer_same(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                          int64_t* shape, char* why, size_t why_len) {
  (void)n, (void)d, (void)why, (void)why_len;
  copy_shape(ins[0], ndim, shape);
  return 0;
}

static int32_t infer_broadcast(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                               int64_t* shape, char* why, size_t why_len) {
  const EjTensor* a = ins[0];
  const EjTensor* b = ins[1];
  int32_t r = a->ndim > b->ndim ? a->ndim : b->ndim, i;
  (void)n, (void)d;
  for (i = 0; i < r; ++i) {
    int32_t ia = i - (r - a->ndim), ib = i - (r - b->ndim);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      snprintf(why, why_len, "inputs do not broadcast: dim %d is %lld and %lld", (int)i, (long long)da,
               (long long)db);
      return -1;
    }
    shape[i] = da == 1 ? db : da;
  }
  *ndim = r;
  return 0;
}

static int32_t infer_clip(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                          int64_t* shape, char* why, size_t why_len) {
  if (!(n->attrs.a_min <= n->attrs.a_max)) {
    snprintf(why, why_len, "a_min %g must not exceed a_max %g", n->attrs.a_min, n->attrs.a_max);
    return -1;
  }
  return infer_same(n, ins, d, ndim, shape, why, why_len);
}

static int32_t infer_dense(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                           int64_t* shape, char* why, size_t why_len) {
  const EjTensor* x = ins[0];
  const EjTensor* w = ins[1];
  (void)n, (void)d;
  if (x->ndim < 1 || w->ndim != 2) {
    snprintf(why, why_len, "nn.dense needs data of rank >= 1 and a weight of rank 2 (got ranks %d and %d)",
             (int)x->ndim, (int)w->ndim);
    return -1;
  }
  if (x->shape[x->ndim - 1] != w->shape[1]) {
    snprintf(why, why_len, "nn.dense: data has %lld features but the weight [N, K] has K = %lld",
             (long long)x->shape[x->ndim - 1], (long long)w->shape[1]);
    return -1;
  }
  copy_shape(x, ndim, shape);
  shape[x->ndim - 1] = w->shape[0];
  return 0;
}

static int32_t normalize_axis(int64_t axis, int32_t ndim, int64_t* out, char* why, size_t why_len) {
  if (axis < -(int64_t)ndim || axis >= (int64_t)ndim) {
    snprintf(why, why_len, "axis %lld out of range for rank %d", (long long)axis, (int)ndim);
    return -1;
  }
  *out = axis < 0 ? axis + ndim : axis;
  return 0;
}

static int32_t infer_bias_add(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                              int64_t* shape, char* why, size_t why_len) {
  int64_t axis;
  (void)d;
  if (normalize_axis(n->attrs.axis, ins[0]->ndim, &axis, why, why_len) != 0) return -1;
  if (ins[1]->ndim != 1 || ins[1]->shape[0] != ins[0]->shape[axis]) {
    snprintf(why, why_len, "nn.bias_add: bias must be 1-D of length %lld (data dim %lld)",
             (long long)ins[0]->shape[axis], (long long)axis);
    return -1;
  }
  copy_shape(ins[0], ndim, shape);
  return 0;
}

static int32_t infer_conv2d(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                            int64_t* shape, char* why, size_t why_len) {
  const EjTensor* x = ins[0];
  const EjTensor* w = ins[1];
  const EjAttrs* a = &n->attrs;
  int64_t oh, ow;
  (void)d;
  if (x->ndim != 4 || w->ndim != 4) {
    snprintf(why, why_len, "nn.conv2d needs NCHW data and OIHW weight of rank 4 (got ranks %d and %d)",
             (int)x->ndim, (int)w->ndim);
    return -1;
  }
  if (x->shape[1] % a->groups != 0 || w->shape[0] % a->groups != 0 || w->shape[1] * a->groups != x->shape[1]) {
    snprintf(why, why_len,
             "nn.conv2d: %lld input channels, weight (%lld, %lld, ...) and groups %lld do not agree",
             (long long)x->shape[1], (long long)w->shape[0], (long long)w->shape[1], (long long)a->groups);
    return -1;
  }
  oh = (x->shape[2] + a->padding[0] + a->padding[2] - a->dilation[0] * (w->shape[2] - 1) - 1);
  ow = (x->shape[3] + a->padding[1] + a->padding[3] - a->dilation[1] * (w->shape[3] - 1) - 1);
  if (oh < 0 || ow < 0) {
    snprintf(why, why_len, "nn.conv2d: the dilated kernel is larger than the padded input");
    return -1;
  }
  *ndim = 4;
  shape[0] = x->shape[0];
  shape[1] = w->shape[0];
  shape[2] = oh / a->strides[0] + 1;
  shape[3] = ow / a->strides[1] + 1;
  return 0;
}

int64_t ej_pool_out_size(int64_t size, int64_t pad_before, int64_t pad_after, int64_t kernel, int64_t stride,
                         int64_t dilation, int64_t ceil_mode) {
  int64_t span = size + pad_before + pad_after - dilation * (kernel - 1) - 1, out;
  if (!ceil_mode) return span < 0 ? 0 : span / stride + 1;
  /* ceil(span / stride) + 1, also for a window longer than the input (negative span): C's
   * division truncates toward zero, which is ceil for negative spans. */
  out = span < 0 ? -((-span) / stride) + 1 : (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= size + pad_before) out -= 1;
  return out;
}

static int32_t infer_pool(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                          int64_t* shape, char* why, size_t why_len) {
  const EjTensor* x = ins[0];
  const EjAttrs* a = &n->attrs;
  int32_t axis;
  (void)d;
  if (x->ndim != 4) {
    snprintf(why, why_len, "%s needs NCHW data of rank 4 (got rank %d)", n->op->name, (int)x->ndim);
    return -1;
  }
  *ndim = 4;
  shape[0] = x->shape[0];
  shape[1] = x->shape[1];
  for (axis = 0; axis < 2; ++axis) {
    int64_t extent = a->dilation[axis] * (a->pool_size[axis] - 1) + 1;
    int64_t before = a->padding[axis], after = a->padding[axis + 2];
    int64_t out;
    if (before >= extent || after >= extent) {
      snprintf(why, why_len, "%s: padding must be smaller than the pool window (%lld)", n->op->name,
               (long long)extent);
      return -1;
    }
    out = ej_pool_out_size(x->shape[2 + axis], before, after, a->pool_size[axis], a->strides[axis],
                           a->dilation[axis], a->ceil_mode);
    if (out < 1) {
      snprintf(why, why_len, "%s: the input is smaller than the pool window", n->op->name);
      return -1;
    }
    shape[2 + axis] = out;
  }
  return 0;
}

static int32_t infer_global_pool(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                                 int64_t* shape, char* why, size_t why_len) {
  (void)n, (void)d;
  if (ins[0]->ndim != 4) {
    snprintf(why, why_len, "nn.global_avg_pool2d needs NCHW data of rank 4 (got rank %d)", (int)ins[0]->ndim);
    return -1;
  }
  *ndim = 4;
  shape[0] = ins[0]->shape[0];
  shape[1] = ins[0]->shape[1];
  shape[2] = shape[3] = 1;
  return 0;
}

static int32_t infer_reshape(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                             int64_t* shape, char* why, size_t why_len) {
  (void)n;
  if (ins[0]->numel != d->numel) {
    snprintf(why, why_len, "reshape: %lld elements cannot become %lld", (long long)ins[0]->numel,
             (long long)d->numel);
    return -1;
  }
  copy_shape(d, ndim, shape);
  return 0;
}

static int32_t infer_batch_flatten(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                                   int64_t* shape, char* why, size_t why_len) {
  (void)n, (void)d;
  if (ins[0]->ndim < 1) {
    snprintf(why, why_len, "nn.batch_flatten needs data of rank >= 1");
    return -1;
  }
  *ndim = 2;
  shape[0] = ins[0]->shape[0];
  shape[1] = ins[0]->numel / ins[0]->shape[0];
  return 0;
}

static int32_t infer_softmax(const EjNode* n, const EjTensor* const* ins, const EjTensor* d, int32_t* ndim,
                             int64_t* shape, char* why, size_t why_len) {
  int64_t axis;
  if (normalize_axis(n->attrs.axis, ins[0]->ndim, &axis, why, why_len) != 0) return -1;
  return infer_same(n, ins, d, ndim, shape, why, why_len);
}

/* ---- work estimates (multiply-adds of one run) ------------------------------------------------- */
static double work_out(const EjNode* n, const EjTensor* const* ins, const EjTensor* out) {
  (void)n, (void)ins;
  return (double)out->numel;
}

static double work_dense(const EjNode* n, const EjTensor* const* ins, const EjTensor* out) {
  (void)n;
  return (double)out->numel * (double)ins[1]->shape[1];
}

static double work_conv2d(const EjNode* n, const EjTensor* const* ins, const EjTensor* out) {
  (void)n;
  return (double)out->numel * (double)ins[1]->shape[1] * (double)ins[1]->shape[2] * (double)ins[1]->shape[3];
}

static double work_pool(const EjNode* n, const EjTensor* const* ins, const EjTensor* out) {
  (void)ins;
  return (double)out->numel * (double)n->attrs.pool_size[0] * (double)n->attrs.pool_size[1];
}

static double work_in(const EjNode* n, const EjTensor* const* ins, const EjTensor* out) {
  (void)n, (void)out;
  return (double)ins[0]->numel;
}

/* ---- the table -------------------------------------------------------------------------------- */
#define POOL_ATTRS (EJ_ATTR_POOL_SIZE | EJ_ATTR_STRIDES | EJ_ATTR_DILATION | EJ_ATTR_PADDING | EJ_ATTR_CEIL_MODE)

static const EjOpDef kOps[] = {
    {"add", 2, 0, 0, infer_broadcast, ej_kernel_binary, work_out, EJ_K_ADD},
    {"subtract", 2, 0, 0, infer_broadcast, ej_kernel_binary, work_out, EJ_K_SUB},
    {"multiply", 2, 0, 0, infer_broadcast, ej_kernel_binary, work_out, EJ_K_MUL},
    {"divide", 2, 0, 0, infer_broadcast, ej_kernel_binary, work_out, EJ_K_DIV},
    {"maximum", 2, 0, 0, infer_broadcast, ej_kernel_binary, work_out, EJ_K_MAX},
    {"minimum", 2, 0, 0, infer_broadcast, ej_kernel_binary, work_out, EJ_K_MIN},
    {"negative", 1, 0, 0, infer_same, ej_kernel_unary, work_out, EJ_K_NEG},
    {"abs", 1, 0, 0, infer_same, ej_kernel_unary, work_out, EJ_K_ABS},
    {"exp", 1, 0, 0, infer_same, ej_kernel_unary, work_out, EJ_K_EXP},
    {"log", 1, 0, 0, infer_same, ej_kernel_unary, work_out, EJ_K_LOG},
    {"sqrt", 1, 0, 0, infer_same, ej_kernel_unary, work_out, EJ_K_SQRT},
    {"tanh", 1, 0, 0, infer_same, ej_kernel_unary, work_out, EJ_K_TANH},
    {"sigmoid", 1, 0, 0, infer_same, ej_kernel_unary, work_out, EJ_K_SIGMOID},
    {"nn.relu", 1, 0, 0, infer_same, ej_kernel_unary, work_out, EJ_K_RELU},
    {"clip", 1, EJ_ATTR_A_MIN | EJ_ATTR_A_MAX, EJ_ATTR_A_MIN | EJ_ATTR_A_MAX, infer_clip, ej_kernel_unary, work_out,
     EJ_K_CLIP},
    {"nn.leaky_relu", 1, EJ_ATTR_ALPHA, 0, infer_same, ej_kernel_unary, work_out, EJ_K_LEAKY_RELU},
    {"nn.dense", 2, 0, 0, infer_dense, ej_kernel_dense, work_dense, 0},
    {"nn.bias_add", 2, EJ_ATTR_AXIS, 0, infer_bias_add, ej_kernel_bias_add, work_out, 0},
    {"nn.conv2d", 2, EJ_ATTR_STRIDES | EJ_ATTR_PADDING | EJ_ATTR_DILATION | EJ_ATTR_GROUPS, 0, infer_conv2d,
     ej_kernel_conv2d, work_conv2d, 0},
    {"nn.max_pool2d", 1, POOL_ATTRS, 0, infer_pool, ej_kernel_max_pool2d, work_pool, 0},
    {"nn.avg_pool2d", 1, POOL_ATTRS | EJ_ATTR_COUNT_INCLUDE_PAD, 0, infer_pool, ej_kernel_avg_pool2d, work_pool, 0},
    {"nn.global_avg_pool2d", 1, 0, 0, infer_global_pool, ej_kernel_global_avg_pool2d, work_in, 0},
    {"reshape", 1, 0, 0, infer_reshape, ej_kernel_copy, work_out, 0},
    {"nn.batch_flatten", 1, 0, 0, infer_batch_flatten, ej_kernel_copy, work_out, 0},
    {"nn.softmax", 1, EJ_ATTR_AXIS, 0, infer_softmax, ej_kernel_softmax, work_out, 0},
};

/* The guide writes `sub`; `mul` and `div` follow it. */
static const struct {
  const char* alias;
  const char* name;
} kAliases[] = {{"sub", "subtract"}, {"mul", "multiply"}, {"div", "divide"}};

static const EjOpDef* find_exact(const char* name, size_t len) {
  size_t i;
  for (i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (strlen(kOps[i].name) == len && memcmp(kOps[i].name, name, len) == 0) return &kOps[i];
  }
  return NULL;
}

const EjOpDef* ej_find_op(const char* name, size_t len) {
  size_t i;
  for (i = 0; i < sizeof(kAliases) / sizeof(kAliases[0]); ++i) {
    if (strlen(kAliases[i].alias) == len && memcmp(kAliases[i].alias, name, len) == 0) {
      return find_exact(kAliases[i].name, strlen(kAliases[i].name));
    }
  }
  return find_exact(name, len);
}
