/* The dnnl JSON graph (targets/dnnl/FORMAT.md) -> validated nodes. Strict: every key is known, every
 * shape is re-derived from the node's inputs and attributes, and each error names the node. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bd_internal.h"
#include "json.h"

typedef struct {
  const char* name;
  int min_inputs, max_inputs;
  const char* const* attrs; /* the exact keys of its "attrs" object, NULL-terminated */
} BdOpInfo;

static const char* const NO_ATTRS[] = {NULL};
static const char* const CONV_ATTRS[] = {"strides", "padding", "dilation", "groups", "data_layout",
                                         "kernel_layout", "bias", "post_ops", NULL};
static const char* const DENSE_ATTRS[] = {"bias", "post_ops", NULL};
static const char* const MATMUL_ATTRS[] = {"transpose_a", "transpose_b", NULL};
static const char* const CLIP_ATTRS[] = {"a_min", "a_max", NULL};
static const char* const LEAKY_ATTRS[] = {"alpha", NULL};
static const char* const BN_ATTRS[] = {"epsilon", "center", "scale", NULL};
static const char* const MAXPOOL_ATTRS[] = {"pool_size", "strides", "dilation", "padding", "ceil_mode", NULL};
static const char* const AVGPOOL_ATTRS[] = {"pool_size", "strides", "dilation", "padding", "ceil_mode",
                                            "count_include_pad", NULL};
static const char* const AXIS_ATTRS[] = {"axis", NULL};
static const char* const LRN_ATTRS[] = {"size", "bias", "alpha", "beta", NULL};
static const char* const SHUFFLE_ATTRS[] = {"axis", "groups", NULL};

static const BdOpInfo OPS[BD_NUM_OPS] = {
    {"nn.conv2d", 2, 4, CONV_ATTRS},     {"nn.dense", 2, 3, DENSE_ATTRS},
    {"nn.matmul", 2, 2, MATMUL_ATTRS},   {"nn.relu", 1, 1, NO_ATTRS},
    {"clip", 1, 1, CLIP_ATTRS},          {"sigmoid", 1, 1, NO_ATTRS},
    {"tanh", 1, 1, NO_ATTRS},            {"nn.leaky_relu", 1, 1, LEAKY_ATTRS},
    {"exp", 1, 1, NO_ATTRS},             {"sqrt", 1, 1, NO_ATTRS},
    {"add", 2, 2, NO_ATTRS},             {"multiply", 2, 2, NO_ATTRS},
    {"nn.batch_norm", 5, 5, BN_ATTRS},   {"nn.max_pool2d", 1, 1, MAXPOOL_ATTRS},
    {"nn.avg_pool2d", 1, 1, AVGPOOL_ATTRS}, {"nn.global_avg_pool2d", 1, 1, NO_ATTRS},
    {"concatenate", 1, BD_MAX_INPUTS, AXIS_ATTRS}, {"nn.softmax", 1, 1, AXIS_ATTRS},
    {"nn.lrn", 1, 1, LRN_ATTRS},         {"reshape", 1, 1, NO_ATTRS},
    {"nn.batch_flatten", 1, 1, NO_ATTRS}, {"channel_shuffle", 1, 1, SHUFFLE_ATTRS},
};

const char* bd_op_name(BdOp op) { return (op >= 0 && op < BD_NUM_OPS) ? OPS[op].name : "?"; }

int32_t bd_fail(const BdModule* m, int32_t node, const char* fmt, ...) {
  char why[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  if (node < 0) {
    byoc_set_last_error("dnnl region %.200s: %s", m->symbol[0] ? m->symbol : "?", why);
  } else {
    const BdNode* n = &m->nodes[node];
    const char* what = n->kind == BD_KERNEL ? n->name : (n->kind == BD_INPUT ? "input" : "const");
    byoc_set_last_error("dnnl region %.200s: node %d (%.100s%s%.100s): %s", m->symbol[0] ? m->symbol : "?",
                        (int)node, what, n->kind == BD_KERNEL ? "" : " ", n->kind == BD_KERNEL ? "" : n->name,
                        why);
  }
  return -1;
}

/* ---- JSON helpers ------------------------------------------------------------------------------- */

typedef struct {
  const ByocJsonDoc* doc;
  BdModule* m;
  int32_t node; /* for messages; -1 at the top level */
} Ctx;

static const ByocJsonValue* member(Ctx* c, const ByocJsonValue* obj, const char* key, ByocJsonType type) {
  const ByocJsonValue* v = byoc_json_get(c->doc, obj, key);
  if (v == NULL) {
    bd_fail(c->m, c->node, "missing key \"%s\"", key);
    return NULL;
  }
  if (v->type != type) {
    bd_fail(c->m, c->node, "\"%s\" is %s, expected %s", key, byoc_json_type_name(v->type), byoc_json_type_name(type));
    return NULL;
  }
  return v;
}

/* Every key of obj is one of keys (NULL-terminated). */
static int32_t only_keys(Ctx* c, const ByocJsonValue* obj, const char* const* keys, const char* where) {
  const ByocJsonValue* v;
  for (v = byoc_json_child(c->doc, obj); v != NULL; v = byoc_json_next(c->doc, v)) {
    const char* const* k;
    int known = 0;
    for (k = keys; *k != NULL; ++k) {
      if (strlen(*k) == v->key_len && memcmp(*k, v->key, v->key_len) == 0) known = 1;
    }
    if (!known) return bd_fail(c->m, c->node, "unknown key \"%.60s\" in %s", v->key, where);
  }
  return 0;
}

static int32_t get_int(Ctx* c, const ByocJsonValue* obj, const char* key, int64_t lo, int64_t hi, int64_t* out) {
  const ByocJsonValue* v = member(c, obj, key, BYOC_JSON_NUMBER);
  if (v == NULL) return -1;
  if (!v->is_int || v->i < lo || v->i > hi) {
    return bd_fail(c->m, c->node, "\"%s\" must be an integer in [%lld, %lld]", key, (long long)lo, (long long)hi);
  }
  *out = v->i;
  return 0;
}

static int32_t get_flag(Ctx* c, const ByocJsonValue* obj, const char* key, int* out) {
  int64_t v = 0;
  if (get_int(c, obj, key, 0, 1, &v) != 0) return -1;
  *out = (int)v;
  return 0;
}

static int32_t get_float(Ctx* c, const ByocJsonValue* obj, const char* key, double* out) {
  const ByocJsonValue* v = member(c, obj, key, BYOC_JSON_NUMBER);
  if (v == NULL) return -1;
  if (!isfinite(v->d) || fabs(v->d) > 3.0e38) return bd_fail(c->m, c->node, "\"%s\" must be a finite float32", key);
  *out = v->d;
  return 0;
}

/* An array of exactly n integers in [lo, hi] (n < 0: 1 to BD_MAX_NDIM of them; the count goes to *count). */
static int32_t get_ints(Ctx* c, const ByocJsonValue* obj, const char* key, int32_t n, int64_t lo, int64_t hi,
                        int64_t* out, int32_t* count) {
  const ByocJsonValue* arr = member(c, obj, key, BYOC_JSON_ARRAY);
  const ByocJsonValue* v;
  int32_t i = 0;
  if (arr == NULL) return -1;
  if (n >= 0 ? arr->count != n : (arr->count < 1 || arr->count > BD_MAX_NDIM)) {
    if (n >= 0) return bd_fail(c->m, c->node, "\"%s\" must have %d entries, not %d", key, (int)n, (int)arr->count);
    return bd_fail(c->m, c->node, "\"%s\" must have 1 to %d entries, not %d", key, BD_MAX_NDIM, (int)arr->count);
  }
  for (v = byoc_json_child(c->doc, arr); v != NULL; v = byoc_json_next(c->doc, v), ++i) {
    if (v->type != BYOC_JSON_NUMBER || !v->is_int || v->i < lo || v->i > hi) {
      return bd_fail(c->m, c->node, "\"%s\"[%d] must be an integer in [%lld, %lld]", key, (int)i, (long long)lo,
                     (long long)hi);
    }
    out[i] = v->i;
  }
  if (count != NULL) *count = arr->count;
  return 0;
}

static int32_t get_string(Ctx* c, const ByocJsonValue* obj, const char* key, char* out, size_t cap) {
  const ByocJsonValue* v = member(c, obj, key, BYOC_JSON_STRING);
  if (v == NULL) return -1;
  if (v->len == 0 || v->len >= cap) return bd_fail(c->m, c->node, "\"%s\" must have 1 to %d characters", key, (int)cap - 1);
  memcpy(out, v->str, v->len);
  out[v->len] = '\0';
  return 0;
}

/* ---- attributes ----------------------------------------------------------------------------------- */

static const int64_t BIG = (int64_t)1 << 20; /* bound on strides, paddings, windows */

static int32_t parse_post_ops(Ctx* c, const ByocJsonValue* attrs, BdAttrs* a) {
  const ByocJsonValue* arr = member(c, attrs, "post_ops", BYOC_JSON_ARRAY);
  const ByocJsonValue* v;
  int32_t i = 0;
  if (arr == NULL) return -1;
  for (v = byoc_json_child(c->doc, arr); v != NULL; v = byoc_json_next(c->doc, v), ++i) {
    int is_sum = v->type == BYOC_JSON_STRING && strcmp(v->str, "sum") == 0;
    int is_relu = v->type == BYOC_JSON_STRING && strcmp(v->str, "relu") == 0;
    int is_clip = v->type == BYOC_JSON_OBJECT && v->count == 1 && byoc_json_get(c->doc, v, "clip") != NULL;
    /* the order oneDNN applies them in, each at most once: [sum] then one eltwise (relu or clip) */
    if (is_sum && i == 0) {
      a->post_sum = 1;
    } else if (is_relu && !a->post_relu && !a->post_clip) {
      a->post_relu = 1;
    } else if (is_clip && !a->post_relu && !a->post_clip) {
      double bounds[2];
      const ByocJsonValue* b = byoc_json_get(c->doc, v, "clip");
      const ByocJsonValue* e;
      int32_t k = 0;
      if (b->type != BYOC_JSON_ARRAY || b->count != 2) return bd_fail(c->m, c->node, "a clip post-op is {\"clip\": [min, max]}");
      for (e = byoc_json_child(c->doc, b); e != NULL; e = byoc_json_next(c->doc, e), ++k) {
        if (e->type != BYOC_JSON_NUMBER || !isfinite(e->d) || fabs(e->d) > 3.0e38) {
          return bd_fail(c->m, c->node, "a clip post-op's bounds must be finite float32 numbers");
        }
        bounds[k] = e->d;
      }
      if (bounds[0] > bounds[1]) return bd_fail(c->m, c->node, "a clip post-op's min %g is above its max %g", bounds[0], bounds[1]);
      a->post_clip = 1;
      a->clip_lo = bounds[0];
      a->clip_hi = bounds[1];
    } else {
      return bd_fail(c->m, c->node, "post_ops must be [], [\"sum\"], then at most one of \"relu\" or {\"clip\": [min, max]}");
    }
  }
  return 0;
}

static int32_t parse_attrs(Ctx* c, const ByocJsonValue* attrs, BdNode* n) {
  BdAttrs* a = &n->a;
  char text[16];
  if (only_keys(c, attrs, OPS[n->op].attrs, "attrs") != 0) return -1;
  a->groups = 1;
  switch (n->op) {
    case BD_CONV2D: {
      char kernel[16];
      if (get_ints(c, attrs, "strides", 2, 1, BIG, a->strides, NULL) || get_ints(c, attrs, "padding", 4, 0, BIG, a->padding, NULL) ||
          get_ints(c, attrs, "dilation", 2, 1, BIG, a->dilation, NULL) || get_int(c, attrs, "groups", 1, BIG, &a->groups) ||
          get_string(c, attrs, "data_layout", text, sizeof(text)) || get_string(c, attrs, "kernel_layout", kernel, sizeof(kernel)) ||
          get_flag(c, attrs, "bias", &a->bias) || parse_post_ops(c, attrs, a)) {
        return -1;
      }
      if (strcmp(text, "NCHW") == 0 && strcmp(kernel, "OIHW") == 0) {
        a->nhwc = 0;
      } else if (strcmp(text, "NHWC") == 0 && strcmp(kernel, "HWIO") == 0 && a->groups == 1) {
        a->nhwc = 1;
      } else {
        return bd_fail(c->m, c->node, "layouts %s/%s (groups %lld): takes NCHW/OIHW, or NHWC/HWIO with groups 1", text,
                       kernel, (long long)a->groups);
      }
      return 0;
    }
    case BD_DENSE:
      return get_flag(c, attrs, "bias", &a->bias) || parse_post_ops(c, attrs, a) ? -1 : 0;
    case BD_MATMUL:
      return get_flag(c, attrs, "transpose_a", &a->transpose_a) || get_flag(c, attrs, "transpose_b", &a->transpose_b) ? -1 : 0;
    case BD_CLIP:
      if (get_float(c, attrs, "a_min", &a->a_min) || get_float(c, attrs, "a_max", &a->a_max)) return -1;
      if (a->a_min > a->a_max) return bd_fail(c->m, c->node, "a_min %g is above a_max %g", a->a_min, a->a_max);
      return 0;
    case BD_LEAKY_RELU:
      return get_float(c, attrs, "alpha", &a->alpha);
    case BD_BATCH_NORM:
      if (get_float(c, attrs, "epsilon", &a->epsilon) || get_flag(c, attrs, "center", &a->center) ||
          get_flag(c, attrs, "scale", &a->scale)) {
        return -1;
      }
      return a->epsilon < 0 ? bd_fail(c->m, c->node, "epsilon must be >= 0") : 0;
    case BD_MAX_POOL:
    case BD_AVG_POOL: {
      int64_t ceil_mode = 0;
      if (get_ints(c, attrs, "pool_size", 2, 1, BIG, a->pool_size, NULL) || get_ints(c, attrs, "strides", 2, 1, BIG, a->strides, NULL) ||
          get_ints(c, attrs, "dilation", 2, 1, BIG, a->dilation, NULL) || get_ints(c, attrs, "padding", 4, 0, BIG, a->padding, NULL) ||
          get_int(c, attrs, "ceil_mode", 0, 1, &ceil_mode)) {
        return -1;
      }
      a->ceil_mode = (int)ceil_mode;
      return n->op == BD_AVG_POOL ? get_flag(c, attrs, "count_include_pad", &a->count_include_pad) : 0;
    }
    case BD_CONCAT:
    case BD_SOFTMAX:
      return get_int(c, attrs, "axis", -BD_MAX_NDIM, BD_MAX_NDIM - 1, &a->axis);
    case BD_CHANNEL_SHUFFLE:
      return get_int(c, attrs, "axis", -BD_MAX_NDIM, BD_MAX_NDIM - 1, &a->axis) ||
             get_int(c, attrs, "groups", 1, BIG, &a->groups);
    case BD_LRN:
      if (get_int(c, attrs, "size", 1, BIG, &a->size) || get_float(c, attrs, "bias", &a->k) ||
          get_float(c, attrs, "alpha", &a->alpha) || get_float(c, attrs, "beta", &a->beta)) {
        return -1;
      }
      return a->size % 2 == 0 ? bd_fail(c->m, c->node, "size %lld is even; oneDNN's LRN window is symmetric",
                                        (long long)a->size) : 0;
    default:
      return 0;
  }
}

/* ---- shapes --------------------------------------------------------------------------------------- */

static void shape_text(const int64_t* shape, int32_t ndim, char* buf, size_t cap) {
  byoc_shape_str(ndim, shape, buf, cap);
}

/* The output shape the op gives for its inputs and attributes; -1 (with the error) if they do not fit. */
static int32_t infer(BdModule* m, int32_t id, int64_t* out, int32_t* out_ndim) {
  BdNode* n = &m->nodes[id];
  const BdNode* x = &m->nodes[n->inputs[0]];
  const BdNode* w = n->num_inputs > 1 ? &m->nodes[n->inputs[1]] : NULL;
  const BdAttrs* a = &n->a;
  int32_t i;
  *out_ndim = x->ndim;
  memcpy(out, x->shape, sizeof(int64_t) * BD_MAX_NDIM);
  switch (n->op) {
    case BD_CONV2D: {
      int64_t c_in, kh, kw, o, i_per_group;
      int64_t hw[2];
      if (x->ndim != 4 || w->ndim != 4) return bd_fail(m, id, "data and weight must be 4-D");
      c_in = a->nhwc ? x->shape[3] : x->shape[1];
      o = a->nhwc ? w->shape[3] : w->shape[0];
      i_per_group = a->nhwc ? w->shape[2] : w->shape[1];
      kh = a->nhwc ? w->shape[0] : w->shape[2];
      kw = a->nhwc ? w->shape[1] : w->shape[3];
      if (c_in % a->groups || o % a->groups || i_per_group * a->groups != c_in) {
        return bd_fail(m, id, "weight has %lld input channels per group and %lld outputs; data has %lld channels, groups %lld",
                       (long long)i_per_group, (long long)o, (long long)c_in, (long long)a->groups);
      }
      for (i = 0; i < 2; ++i) {
        int64_t size = a->nhwc ? x->shape[1 + i] : x->shape[2 + i];
        int64_t k = i == 0 ? kh : kw;
        int64_t span = size + a->padding[i] + a->padding[i + 2] - a->dilation[i] * (k - 1) - 1;
        if (span < 0) return bd_fail(m, id, "the dilated kernel is larger than the padded input");
        hw[i] = span / a->strides[i] + 1;
      }
      if (a->bias && m->nodes[n->inputs[2]].numel != o) return bd_fail(m, id, "bias must have %lld elements", (long long)o);
      if (n->num_inputs != 2 + a->bias + a->post_sum) {
        return bd_fail(m, id, "takes %d inputs (data, weight%s%s), not %d", 2 + a->bias + a->post_sum,
                       a->bias ? ", bias" : "", a->post_sum ? ", summand" : "", (int)n->num_inputs);
      }
      out[0] = x->shape[0];
      out[a->nhwc ? 3 : 1] = o;
      out[a->nhwc ? 1 : 2] = hw[0];
      out[a->nhwc ? 2 : 3] = hw[1];
      break;
    }
    case BD_DENSE:
      if (x->ndim != 2 || w->ndim != 2 || x->shape[1] != w->shape[1]) return bd_fail(m, id, "data [M, K] and weight [N, K] needed");
      if (n->num_inputs != 2 + a->bias) return bd_fail(m, id, "takes %d inputs, not %d", 2 + a->bias, (int)n->num_inputs);
      if (a->post_sum) return bd_fail(m, id, "the sum post-op is for nn.conv2d only");
      if (a->bias && m->nodes[n->inputs[2]].numel != w->shape[0]) return bd_fail(m, id, "bias must have %lld elements", (long long)w->shape[0]);
      out[1] = w->shape[0];
      break;
    case BD_MATMUL: {
      int64_t mm, k1, k2, nn;
      if (x->ndim != 2 || w->ndim != 2) return bd_fail(m, id, "operands must be 2-D");
      mm = a->transpose_a ? x->shape[1] : x->shape[0];
      k1 = a->transpose_a ? x->shape[0] : x->shape[1];
      k2 = a->transpose_b ? w->shape[1] : w->shape[0];
      nn = a->transpose_b ? w->shape[0] : w->shape[1];
      if (k1 != k2) return bd_fail(m, id, "inner dimensions %lld and %lld differ", (long long)k1, (long long)k2);
      out[0] = mm;
      out[1] = nn;
      break;
    }
    case BD_ADD:
    case BD_MULTIPLY:
      /* numpy broadcasting; whether oneDNN can run it is checked when building */
      *out_ndim = x->ndim > w->ndim ? x->ndim : w->ndim;
      for (i = 1; i <= *out_ndim; ++i) {
        int64_t da = i <= x->ndim ? x->shape[x->ndim - i] : 1, db = i <= w->ndim ? w->shape[w->ndim - i] : 1;
        if (da != db && da != 1 && db != 1) return bd_fail(m, id, "operand shapes do not broadcast");
        out[*out_ndim - i] = da > db ? da : db;
      }
      break;
    case BD_BATCH_NORM:
      if (x->ndim < 2) return bd_fail(m, id, "data must have at least 2 dims");
      for (i = 1; i < 5; ++i) {
        if (m->nodes[n->inputs[i]].numel != x->shape[1]) {
          return bd_fail(m, id, "input %d must have %lld elements (the channels)", (int)i, (long long)x->shape[1]);
        }
      }
      break;
    case BD_MAX_POOL:
    case BD_AVG_POOL:
      if (x->ndim != 4) return bd_fail(m, id, "data must be 4-D (NCHW)");
      for (i = 0; i < 2; ++i) {
        int64_t ext = a->dilation[i] * (a->pool_size[i] - 1) + 1;
        int64_t size = x->shape[2 + i], before = a->padding[i], after = a->padding[i + 2];
        int64_t span = size + before + after - ext, o;
        if (before >= ext || after >= ext) return bd_fail(m, id, "padding must be smaller than the window");
        if (span < 0) return bd_fail(m, id, "the window is larger than the padded input");
        o = a->ceil_mode ? (span + a->strides[i] - 1) / a->strides[i] + 1 : span / a->strides[i] + 1;
        if (a->ceil_mode && (o - 1) * a->strides[i] >= size + before) --o;
        out[2 + i] = o;
      }
      break;
    case BD_GLOBAL_AVG_POOL:
      if (x->ndim != 4) return bd_fail(m, id, "data must be 4-D (NCHW)");
      out[2] = out[3] = 1;
      break;
    case BD_CONCAT: {
      int64_t axis = a->axis < 0 ? a->axis + x->ndim : a->axis;
      if (axis < 0 || axis >= x->ndim) return bd_fail(m, id, "axis %lld out of range", (long long)a->axis);
      out[axis] = 0;
      for (i = 0; i < n->num_inputs; ++i) {
        const BdNode* s = &m->nodes[n->inputs[i]];
        int32_t d;
        if (s->ndim != x->ndim) return bd_fail(m, id, "input %d has rank %d, not %d", (int)i, (int)s->ndim, (int)x->ndim);
        for (d = 0; d < x->ndim; ++d) {
          if (d != axis && s->shape[d] != x->shape[d]) return bd_fail(m, id, "input %d differs off the axis", (int)i);
        }
        out[axis] += s->shape[axis];
      }
      break;
    }
    case BD_SOFTMAX:
      if (a->axis < -x->ndim || a->axis >= x->ndim) return bd_fail(m, id, "axis %lld out of range", (long long)a->axis);
      break;
    case BD_LRN:
      if (x->ndim != 4) return bd_fail(m, id, "data must be 4-D");
      break;
    case BD_CHANNEL_SHUFFLE: {
      const int64_t axis = a->axis < 0 ? a->axis + x->ndim : a->axis;
      if (axis < 0 || axis >= x->ndim) return bd_fail(m, id, "axis %lld out of range", (long long)a->axis);
      if (x->shape[axis] % a->groups != 0) {
        return bd_fail(m, id, "%lld groups do not divide axis %lld's %lld channels", (long long)a->groups,
                       (long long)axis, (long long)x->shape[axis]);
      }
      break;
    }
    case BD_RESHAPE:
      *out_ndim = n->ndim; /* any shape with the same number of elements */
      memcpy(out, n->shape, sizeof(int64_t) * BD_MAX_NDIM);
      if (n->numel != x->numel) return bd_fail(m, id, "%lld elements, its input has %lld", (long long)n->numel, (long long)x->numel);
      break;
    case BD_BATCH_FLATTEN:
      *out_ndim = 2;
      out[1] = x->numel / x->shape[0];
      break;
    default:
      break;
  }
  return 0;
}

/* ---- nodes ---------------------------------------------------------------------------------------- */

static int32_t parse_node(Ctx* c, const ByocJsonValue* obj, int32_t id) {
  static const char* const INPUT_KEYS[] = {"id", "op", "name", "shape", "dtype", NULL};
  static const char* const KERNEL_KEYS[] = {"id", "op", "name", "inputs", "shape", "dtype", "attrs", NULL};
  BdModule* m = c->m;
  BdNode* n = &m->nodes[id];
  char kind[16], dtype[16];
  int64_t nid, shape[BD_MAX_NDIM];
  int32_t i;
  c->node = -1;
  if (obj->type != BYOC_JSON_OBJECT) return bd_fail(m, -1, "nodes[%d] is %s, expected object", (int)id, byoc_json_type_name(obj->type));
  if (get_int(c, obj, "id", 0, BD_MAX_NODES, &nid) != 0) return bd_fail(m, -1, "nodes[%d]: \"id\" must be %d", (int)id, (int)id);
  if (nid != id) return bd_fail(m, -1, "nodes[%d] has id %lld; ids count 0, 1, 2, ... in order", (int)id, (long long)nid);
  n->kind = BD_KERNEL;
  snprintf(n->name, sizeof(n->name), "?");
  c->node = id;
  if (get_string(c, obj, "op", kind, sizeof(kind)) != 0) return -1;
  if (strcmp(kind, "input") == 0 || strcmp(kind, "const") == 0) {
    n->kind = kind[0] == 'i' ? BD_INPUT : BD_CONST;
    if (only_keys(c, obj, INPUT_KEYS, "the node") != 0) return -1;
  } else if (strcmp(kind, "kernel") != 0) {
    return bd_fail(m, id, "op \"%s\" is not input, const or kernel", kind);
  } else if (only_keys(c, obj, KERNEL_KEYS, "the node") != 0) {
    return -1;
  }
  if (get_string(c, obj, "name", n->name, sizeof(n->name)) != 0) return -1;
  if (get_string(c, obj, "dtype", dtype, sizeof(dtype)) != 0) return -1;
  if (strcmp(dtype, "float32") != 0) return bd_fail(m, id, "dtype %s; the dnnl runtime computes float32", dtype);
  if (get_ints(c, obj, "shape", -1, 1, BD_MAX_NUMEL, shape, &n->ndim) != 0) return -1;
  n->numel = 1;
  for (i = 0; i < BD_MAX_NDIM; ++i) n->shape[i] = i < n->ndim ? shape[i] : 1;
  for (i = 0; i < n->ndim; ++i) {
    if (n->numel > BD_MAX_NUMEL / n->shape[i]) return bd_fail(m, id, "more than %lld elements", (long long)BD_MAX_NUMEL);
    n->numel *= n->shape[i];
  }
  if (n->kind == BD_INPUT) {
    m->input_nodes[m->num_inputs++] = id;
    return 0;
  }
  if (n->kind == BD_CONST) {
    for (i = 0; i < id; ++i) {
      if (m->nodes[i].kind == BD_CONST && strcmp(m->nodes[i].name, n->name) == 0) {
        return bd_fail(m, id, "a second const named '%.200s'", n->name);
      }
    }
    ++m->num_consts;
    return 0;
  }
  /* kernel */
  {
    const ByocJsonValue *ins, *attrs, *v;
    int64_t inferred[BD_MAX_NDIM];
    int32_t inferred_ndim, op;
    char got[96], want[96];
    for (op = 0; op < BD_NUM_OPS; ++op) {
      if (strcmp(OPS[op].name, n->name) == 0) break;
    }
    if (op == BD_NUM_OPS) return bd_fail(m, id, "unknown op; the dnnl runtime takes nn.conv2d, nn.dense, ... (FORMAT.md)");
    n->op = (BdOp)op;
    ins = member(c, obj, "inputs", BYOC_JSON_ARRAY);
    if (ins == NULL) return -1;
    if (ins->count < OPS[op].min_inputs || ins->count > OPS[op].max_inputs) {
      return bd_fail(m, id, "%d inputs; it takes %d to %d", (int)ins->count, OPS[op].min_inputs, OPS[op].max_inputs);
    }
    n->num_inputs = ins->count;
    i = 0;
    for (v = byoc_json_child(c->doc, ins); v != NULL; v = byoc_json_next(c->doc, v), ++i) {
      if (v->type != BYOC_JSON_NUMBER || !v->is_int || v->i < 0 || v->i >= id) {
        return bd_fail(m, id, "inputs[%d] must be the id of an earlier node", (int)i);
      }
      n->inputs[i] = (int32_t)v->i;
    }
    attrs = member(c, obj, "attrs", BYOC_JSON_OBJECT);
    if (attrs == NULL || parse_attrs(c, attrs, n) != 0) return -1;
    if (infer(m, id, inferred, &inferred_ndim) != 0) return -1;
    if (inferred_ndim != n->ndim || memcmp(inferred, n->shape, sizeof(int64_t) * (size_t)n->ndim) != 0) {
      shape_text(n->shape, n->ndim, got, sizeof(got));
      shape_text(inferred, inferred_ndim, want, sizeof(want));
      return bd_fail(m, id, "shape %s, but its inputs and attributes give %s", got, want);
    }
  }
  return 0;
}

int32_t bd_parse(const char* text, size_t len, BdModule* m) {
  static const char* const TOP_KEYS[] = {"format", "version", "symbol", "nodes", "heads", NULL};
  ByocJsonDoc doc;
  Ctx c;
  const ByocJsonValue *root, *nodes, *heads, *v;
  char format[32];
  int64_t version;
  int32_t i, rc = -1;
  memset(&doc, 0, sizeof(doc));
  if (text == NULL) return bd_fail(m, -1, "no JSON text given");
  if (byoc_json_parse(text, len, &doc) != 0) {
    char why[BYOC_LAST_ERROR_SIZE];
    const char* msg = byoc_get_last_error();
    snprintf(why, sizeof(why), "%s", strncmp(msg, "graph.json: ", 12) == 0 ? msg + 12 : msg);
    return bd_fail(m, -1, "the JSON text is malformed: %s", why);
  }
  c.doc = &doc;
  c.m = m;
  c.node = -1;
  root = &doc.values[0];
  if (root->type != BYOC_JSON_OBJECT) {
    bd_fail(m, -1, "the JSON is %s, expected an object", byoc_json_type_name(root->type));
    goto done;
  }
  if (get_string(&c, root, "symbol", m->symbol, sizeof(m->symbol)) != 0) goto done;
  if (only_keys(&c, root, TOP_KEYS, "the graph") != 0) goto done;
  if (get_string(&c, root, "format", format, sizeof(format)) != 0) goto done;
  if (strcmp(format, "byoc-dnnl") != 0) {
    bd_fail(m, -1, "format \"%s\" is not byoc-dnnl", format);
    goto done;
  }
  if (get_int(&c, root, "version", 1, 1, &version) != 0) goto done;
  nodes = member(&c, root, "nodes", BYOC_JSON_ARRAY);
  heads = member(&c, root, "heads", BYOC_JSON_ARRAY);
  if (nodes == NULL || heads == NULL) goto done;
  if (nodes->count < 1 || nodes->count > BD_MAX_NODES) {
    bd_fail(m, -1, "%d nodes; a graph has 1 to %d", (int)nodes->count, BD_MAX_NODES);
    goto done;
  }
  if (heads->count < 1 || heads->count > BD_MAX_NODES) {
    bd_fail(m, -1, "%d heads; a graph has at least one output", (int)heads->count);
    goto done;
  }
  m->nodes = (BdNode*)calloc((size_t)nodes->count, sizeof(BdNode));
  m->input_nodes = (int32_t*)calloc((size_t)nodes->count, sizeof(int32_t));
  m->heads = (int32_t*)calloc((size_t)heads->count, sizeof(int32_t));
  if (m->nodes == NULL || m->input_nodes == NULL || m->heads == NULL) {
    bd_fail(m, -1, "out of memory for %d nodes", (int)nodes->count);
    goto done;
  }
  m->num_nodes = nodes->count;
  i = 0;
  for (v = byoc_json_child(&doc, nodes); v != NULL; v = byoc_json_next(&doc, v), ++i) {
    if (parse_node(&c, v, i) != 0) goto done;
  }
  c.node = -1;
  i = 0;
  for (v = byoc_json_child(&doc, heads); v != NULL; v = byoc_json_next(&doc, v), ++i) {
    if (v->type != BYOC_JSON_NUMBER || !v->is_int || v->i < 0 || v->i >= m->num_nodes) {
      bd_fail(m, -1, "heads[%d] must be a node id below %d", (int)i, (int)m->num_nodes);
      goto done;
    }
    m->heads[i] = (int32_t)v->i;
  }
  m->num_outputs = heads->count;
  rc = 0;
done:
  byoc_json_free(&doc);
  return rc;
}
