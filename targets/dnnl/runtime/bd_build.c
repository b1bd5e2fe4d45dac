/* Validated nodes -> oneDNN primitives, once per module.
 *
 * Every value has a memory descriptor chosen by its producer: region inputs and constants are
 * plain (row-major), convolution/inner-product/pooling/concat outputs are whatever oneDNN picked
 * for format_tag any (blocked layouts), and layout-preserving ops keep their input's. A consumer
 * that needs another layout gets a reorder: at build time for constants (weights are reordered
 * once), as a step of every run otherwise. Outputs are reordered into the caller's buffers, so
 * plain layouts are seen only at the region's boundary. Weights are allocated here; every value a
 * step writes is an activation placed by bd_plan.c in one arena, bytes shared between values whose
 * lives do not overlap. A run only sets the data handles of inputs and outputs and executes the steps. */
#include <stdlib.h>
#include <string.h>

#include "bd_internal.h"

#define CHECK(call, node, what)                                                                      \
  do {                                                                                               \
    dnnl_status_t st_ = (call);                                                                      \
    if (st_ != dnnl_success) return bd_fail(m, (node), "oneDNN %s failed: %s", (what), status_text(st_)); \
  } while (0)

static const char* status_text(dnnl_status_t st) {
  switch (st) {
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "no implementation for these shapes and attributes";
    case dnnl_runtime_error: return "runtime error";
    default: return "error";
  }
}

static dnnl_format_tag_t plain_tag(int32_t ndim) {
  static const dnnl_format_tag_t tags[BD_MAX_NDIM + 1] = {dnnl_a, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd, dnnl_abcde};
  return tags[ndim];
}

static int32_t own(BdModule* m, dnnl_memory_t mem, int32_t node) {
  if (m->num_owned == m->cap_owned) {
    int32_t cap = m->cap_owned ? m->cap_owned * 2 : 64;
    dnnl_memory_t* grown = (dnnl_memory_t*)realloc(m->owned, (size_t)cap * sizeof(*grown));
    if (grown == NULL) {
      dnnl_memory_destroy(mem);
      return bd_fail(m, node, "out of memory");
    }
    m->owned = grown;
    m->cap_owned = cap;
  }
  m->owned[m->num_owned++] = mem;
  return 0;
}

/* A memory object owned by the module: handle DNNL_MEMORY_ALLOCATE, DNNL_MEMORY_NONE or a buffer. */
int32_t bd_new_memory(BdModule* m, const dnnl_memory_desc_t* md, void* handle, dnnl_memory_t* out, int32_t node) {
  CHECK(dnnl_memory_create(out, md, m->engine, handle), node, "memory_create");
  return own(m, *out, node);
}

static int32_t add_step(BdModule* m, dnnl_primitive_t prim, int32_t nargs, const dnnl_exec_arg_t* args, int32_t node) {
  BdStep* s;
  if (m->num_steps == m->cap_steps) {
    int32_t cap = m->cap_steps ? m->cap_steps * 2 : 32;
    BdStep* grown = (BdStep*)realloc(m->steps, (size_t)cap * sizeof(*grown));
    if (grown == NULL) {
      dnnl_primitive_destroy(prim);
      return bd_fail(m, node, "out of memory");
    }
    m->steps = grown;
    m->cap_steps = cap;
  }
  s = &m->steps[m->num_steps++];
  s->prim = prim;
  s->kernel = NULL;
  s->params = NULL;
  s->nargs = nargs;
  memcpy(s->args, args, (size_t)nargs * sizeof(dnnl_exec_arg_t));
  return 0;
}

int32_t bd_kernel_step(BdModule* m, BdKernel kernel, void* params, int32_t nargs, const dnnl_exec_arg_t* args,
                       int32_t node) {
  BdStep* s;
  if (add_step(m, NULL, nargs, args, node) != 0) {
    free(params);
    return -1;
  }
  s = &m->steps[m->num_steps - 1];
  s->kernel = kernel;
  s->params = params;
  return 0;
}

static int32_t run_zero(const BdStep* s) {
  const dnnl_memory_desc_t* md = NULL;
  void* data = NULL;
  if (dnnl_memory_get_memory_desc(s->args[0].memory, &md) != dnnl_success ||
      dnnl_memory_get_data_handle(s->args[0].memory, &data) != dnnl_success || data == NULL) {
    byoc_set_last_error("dnnl: a zeroing step's buffer is not set");
    return -1;
  }
  memset(data, 0, dnnl_memory_desc_get_size(md));
  return 0;
}

int32_t bd_zero_step(BdModule* m, int32_t node, dnnl_memory_t mem) {
  dnnl_exec_arg_t arg;
  arg.arg = DNNL_ARG_DST;
  arg.memory = mem;
  return bd_kernel_step(m, run_zero, NULL, 1, &arg, node);
}

/* Reorder src -> dst: executed now (constants: once) or added as a step of every run. */
static int32_t reorder(BdModule* m, dnnl_memory_t src, dnnl_memory_t dst, int now, int32_t node) {
  const dnnl_memory_desc_t *smd, *dmd;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  dnnl_exec_arg_t args[2];
  dnnl_status_t st;
  CHECK(dnnl_memory_get_memory_desc(src, &smd), node, "memory_get_memory_desc");
  CHECK(dnnl_memory_get_memory_desc(dst, &dmd), node, "memory_get_memory_desc");
  CHECK(dnnl_reorder_primitive_desc_create(&pd, smd, m->engine, dmd, m->engine, NULL), node, "reorder");
  st = dnnl_primitive_create(&prim, pd);
  dnnl_primitive_desc_destroy(pd);
  CHECK(st, node, "reorder primitive_create");
  args[0].arg = DNNL_ARG_FROM;
  args[0].memory = src;
  args[1].arg = DNNL_ARG_TO;
  args[1].memory = dst;
  if (!now) return add_step(m, prim, 2, args, node);
  st = dnnl_primitive_execute(prim, m->stream, 2, args);
  if (st == dnnl_success) st = dnnl_stream_wait(m->stream);
  dnnl_primitive_destroy(prim);
  CHECK(st, node, "reorder of a constant");
  return 0;
}

/* The value of node `id` in layout `want`: its own memory if the layout matches, else a new buffer
 * filled by a reorder (once for constants, every run otherwise). */
static int32_t value_as(BdModule* m, int32_t id, const dnnl_memory_desc_t* want, dnnl_memory_t* out, int32_t node) {
  BdNode* v = &m->nodes[id];
  if (dnnl_memory_desc_equal(&v->md, want)) {
    *out = v->mem;
    return 0;
  }
  if (v->kind == BD_CONST) {
    if (bd_new_memory(m, want, DNNL_MEMORY_ALLOCATE, out, node) != 0) return -1;
  } else if (bd_activation(m, want, out, node) != 0) {
    return -1;
  }
  return reorder(m, v->mem, *out, v->kind == BD_CONST, node);
}

static int32_t view_of(BdModule* m, int32_t id, dnnl_memory_t base, size_t at, const dnnl_memory_desc_t* md,
                       dnnl_memory_t* out, int32_t node);

/* The value of `id` row-major, seen with dims `dims`/`tag` (same bytes): for views and plain-only ops.
 * A region input's bytes are the caller's, so its view is an alias whose handle each run sets. */
static int32_t value_view(BdModule* m, int32_t id, int32_t ndim, const dnnl_dims_t dims, dnnl_format_tag_t tag,
                          dnnl_memory_t* out, dnnl_memory_desc_t* out_md, int32_t node) {
  BdNode* v = &m->nodes[id];
  dnnl_memory_desc_t plain;
  dnnl_memory_t mem;
  CHECK(dnnl_memory_desc_init_by_tag(&plain, v->ndim, v->shape, dnnl_f32, plain_tag(v->ndim)), node, "memory_desc_init");
  if (value_as(m, id, &plain, &mem, node) != 0) return -1;
  CHECK(dnnl_memory_desc_init_by_tag(out_md, ndim, dims, dnnl_f32, tag), node, "memory_desc_init");
  return view_of(m, id, mem, 0, out_md, out, node);
}

/* A memory object `md` over the bytes of `base` from byte `at` on, base being node `id`'s memory or a buffer
 * made from it. A region input's bytes are the caller's: its view is an alias whose handle each run sets. */
static int32_t view_of(BdModule* m, int32_t id, dnnl_memory_t base, size_t at, const dnnl_memory_desc_t* md,
                       dnnl_memory_t* out, int32_t node) {
  BdNode* v = &m->nodes[id];
  if (base == v->mem && v->kind == BD_INPUT) {
    BdAlias* al;
    if (bd_new_memory(m, md, DNNL_MEMORY_NONE, out, node) != 0) return -1;
    if (m->num_aliases == m->cap_aliases) {
      int32_t cap = m->cap_aliases ? m->cap_aliases * 2 : 8;
      BdAlias* grown = (BdAlias*)realloc(m->aliases, (size_t)cap * sizeof(*grown));
      if (grown == NULL) return bd_fail(m, node, "out of memory");
      m->aliases = grown;
      m->cap_aliases = cap;
    }
    al = &m->aliases[m->num_aliases++];
    al->view = *out;
    al->input = v->mem;
    al->at = at;
    return 0;
  }
  return bd_view_at(m, base, at, md, out, node);
}

/* A step running pd's primitive on args + dst + its scratchpad (data set once all are known); pd is kept. */
static int32_t step_of(BdModule* m, int32_t id, dnnl_primitive_desc_t pd, dnnl_exec_arg_t* args, int32_t nargs,
                       dnnl_memory_t dst) {
  const dnnl_memory_desc_t* scratch = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  dnnl_primitive_t prim;
  size_t bytes = scratch ? dnnl_memory_desc_get_size(scratch) : 0;
  args[nargs].arg = DNNL_ARG_DST;
  args[nargs++].memory = dst;
  if (bytes > 0) {
    dnnl_memory_t sm;
    if (bd_scratchpad(m, scratch, &sm, id) != 0) return -1;
    args[nargs].arg = DNNL_ARG_SCRATCHPAD;
    args[nargs++].memory = sm;
  }
  CHECK(dnnl_primitive_create(&prim, pd), id, "primitive_create");
  return add_step(m, prim, nargs, args, id);
}

/* Creates the primitive of pd, its scratchpad memory, adds the step, and gives the node its output memory
 * `dst_md` (allocated) unless dst is passed. Destroys pd. */
static int32_t finish(BdModule* m, int32_t id, dnnl_primitive_desc_t pd, dnnl_exec_arg_t* args, int32_t nargs,
                      dnnl_memory_t dst) {
  BdNode* n = &m->nodes[id];
  int32_t st = 0;
  if (dst == NULL) {
    const dnnl_memory_desc_t* dst_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    n->md = *dst_md;
    st = bd_activation(m, dst_md, &n->mem, id);
    dst = n->mem;
  }
  if (st == 0) st = step_of(m, id, pd, args, nargs, dst);
  dnnl_primitive_desc_destroy(pd);
  return st;
}

/* Which of the node's post-ops a primitive takes. */
/* BD_SUM_FIRST: a sum in front of the node's relu or clip whether or not the node has one (a primitive adding into
 * what an earlier one wrote). */
typedef enum { BD_ALL_POST_OPS, BD_NO_POST_OPS, BD_ALL_BUT_SUM, BD_SUM_FIRST } BdPostOps;

/* An attribute with a user scratchpad and the node's post-ops (`which` of them). */
static int32_t make_attr(BdModule* m, int32_t id, BdPostOps which, dnnl_primitive_attr_t* attr) {
  const BdAttrs* a = &m->nodes[id].a;
  const int sum = (a->post_sum && which == BD_ALL_POST_OPS) || which == BD_SUM_FIRST;
  const int relu = a->post_relu && which != BD_NO_POST_OPS, clip = a->post_clip && which != BD_NO_POST_OPS;
  dnnl_post_ops_t po = NULL;
  dnnl_status_t st;
  CHECK(dnnl_primitive_attr_create(attr), id, "primitive_attr_create");
  st = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
  if (st == dnnl_success && (sum || relu || clip)) {
    st = dnnl_post_ops_create(&po);
    if (st == dnnl_success && sum) st = dnnl_post_ops_append_sum(po, 1.0f);
    if (st == dnnl_success && relu) st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
    if (st == dnnl_success && clip) {
      st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, (float)a->clip_lo, (float)a->clip_hi);
    }
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(*attr, po);
    if (po != NULL) dnnl_post_ops_destroy(po);
  }
  if (st != dnnl_success) {
    dnnl_primitive_attr_destroy(*attr);
    *attr = NULL;
  }
  CHECK(st, id, "primitive attributes");
  return 0;
}

static int32_t pd_with_post_ops(BdModule* m, int32_t id, BdPostOps which, const void* desc, dnnl_primitive_desc_t* pd) {
  dnnl_primitive_attr_t attr;
  dnnl_status_t st;
  if (make_attr(m, id, which, &attr) != 0) return -1;
  st = dnnl_primitive_desc_create(pd, desc, attr, m->engine, NULL);
  dnnl_primitive_attr_destroy(attr);
  CHECK(st, id, "primitive_desc_create");
  return 0;
}

static int32_t pd_with_attr(BdModule* m, int32_t id, const void* desc, dnnl_primitive_desc_t* pd) {
  return pd_with_post_ops(m, id, BD_ALL_POST_OPS, desc, pd);
}

static int32_t plain_md(BdModule* m, int32_t id, int32_t ndim, const dnnl_dims_t dims, dnnl_memory_desc_t* md) {
  CHECK(dnnl_memory_desc_init_by_tag(md, ndim, dims, dnnl_f32, plain_tag(ndim)), id, "memory_desc_init");
  return 0;
}

static int32_t any_md(BdModule* m, int32_t id, int32_t ndim, const dnnl_dims_t dims, dnnl_memory_desc_t* md) {
  CHECK(dnnl_memory_desc_init_by_tag(md, ndim, dims, dnnl_f32, dnnl_format_tag_any), id, "memory_desc_init");
  return 0;
}

/* Arguments of a primitive in the layouts its pd asks for: (DNNL arg, node id, query) triples. */
static int32_t bind_arg(BdModule* m, int32_t id, dnnl_primitive_desc_t pd, dnnl_query_t q, int index, int32_t src,
                        int arg, dnnl_exec_arg_t* args, int32_t* nargs) {
  const dnnl_memory_desc_t* want = dnnl_primitive_desc_query_md(pd, q, index);
  dnnl_memory_t mem;
  if (value_as(m, src, want, &mem, id) != 0) return -1;
  args[*nargs].arg = arg;
  args[(*nargs)++].memory = mem;
  return 0;
}

/* Whether the sum post-op of conv `id` may accumulate into its summand's own bytes: the summand is a
 * value this region computed (an activation, not an input, a constant or a view of either), read by
 * no later step (this conv is its last use, views of it included), not one of the conv's other
 * operands, and already in the layout the conv writes. Else the summand is copied into dst first. */
static int in_place_summand(const BdModule* m, int32_t id, const dnnl_memory_desc_t* dst_md) {
  const BdNode* n = &m->nodes[id];
  int32_t r = n->inputs[n->num_inputs - 1], i;
  const BdNode* s = &m->nodes[r];
  if (s->kind != BD_KERNEL || s->op == BD_RESHAPE || s->op == BD_BATCH_FLATTEN) return 0;
  if (m->last_use[r] != id || bd_buffer_of(m, s->mem) < 0 || !dnnl_memory_desc_equal(&s->md, dst_md)) return 0;
  for (i = 0; i < n->num_inputs - 1; ++i) {
    if (n->inputs[i] == r) return 0;
  }
  return 1;
}

/* The conv's destination. NCHW: the value in the layout oneDNN picked. NHWC: the value is row-major
 * NHWC and the primitive writes it through an nhwc-tagged view. With a sum post-op, dst starts as
 * the summand: its own bytes when in_place_summand allows, else a copy made at the start of each run. */
static int32_t conv_dst(BdModule* m, int32_t id, const dnnl_memory_desc_t* pd_dst, dnnl_memory_t* dst) {
  BdNode* n = &m->nodes[id];
  dnnl_memory_desc_t value_md;
  int32_t summand = n->a.post_sum ? n->inputs[n->num_inputs - 1] : -1;
  int in_place;
  if (n->a.nhwc) {
    if (plain_md(m, id, 4, n->shape, &value_md) != 0) return -1;
  } else {
    value_md = *pd_dst;
  }
  in_place = summand >= 0 && in_place_summand(m, id, &value_md);
  n->md = value_md;
  if (in_place) {
    n->mem = m->nodes[summand].mem;
  } else if (bd_activation(m, &value_md, &n->mem, id) != 0) {
    return -1;
  }
  *dst = n->mem;
  if (n->a.nhwc && bd_view(m, n->mem, pd_dst, dst, id) != 0) return -1;
  /* the copy is made in the value's dims (the NHWC view has oneDNN's NCHW dims over the same bytes) */
  if (summand >= 0 && !in_place) return reorder(m, m->nodes[summand].mem, n->mem, 0, id);
  return 0;
}

/* Whether conv `id` is a strided 1x1 convolution without padding (ResNet's downsampling) over a value
 * in a layout without inner blocks (nhwc as oneDNN picks it here, nchw): such a conv reads one pixel
 * in stride^2, and oneDNN's 1x1 kernels run up to 1.5x slower on the strided input than on a compact
 * copy of the pixels they read (ResNet-50's 512-channel 28x28 -> 14x14 convs, oneDNN 2.6, AVX-512);
 * the copy costs microseconds. If so, `view` is those pixels in place: the input's strides times the
 * conv's, which oneDNN must accept as a layout (it refuses views whose rows it deems to overlap).
 * NCHW only: NHWC convs read their input where it is. */
static int subsampled_1x1(const BdModule* m, int32_t id, const BdNode* w, dnnl_memory_desc_t* view) {
  const BdNode* n = &m->nodes[id];
  const dnnl_memory_desc_t* x = &m->nodes[n->inputs[0]].md;
  const BdAttrs* a = &n->a;
  dnnl_dims_t dims = {0}, strides = {0};
  int i;
  if (a->nhwc || a->groups != 1 || w->shape[2] != 1 || w->shape[3] != 1) return 0;
  if (a->strides[0] == 1 && a->strides[1] == 1) return 0;
  for (i = 0; i < 4; ++i) {
    if (a->padding[i] != 0) return 0;
  }
  if (x->format_kind != dnnl_blocked || x->format_desc.blocking.inner_nblks != 0 || x->ndims != 4 || x->offset0 != 0) {
    return 0;
  }
  for (i = 0; i < 4; ++i) {
    dims[i] = i < 2 ? x->dims[i] : n->shape[i];
    strides[i] = x->format_desc.blocking.strides[i] * (i < 2 ? 1 : a->strides[i - 2]);
  }
  return dnnl_memory_desc_init_by_strides(view, 4, dims, dnnl_f32, strides) == dnnl_success;
}

/* The source of a subsampled conv: `view_md` over its input's bytes, reordered each run into the
 * layout the conv asked for. */
static int32_t bind_subsampled(BdModule* m, int32_t id, dnnl_primitive_desc_t pd, const dnnl_memory_desc_t* view_md,
                               dnnl_exec_arg_t* args, int32_t* nargs) {
  const BdNode* n = &m->nodes[id];
  dnnl_memory_t view, compact;
  if (view_of(m, n->inputs[0], m->nodes[n->inputs[0]].mem, 0, view_md, &view, id) != 0) return -1;
  if (bd_activation(m, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), &compact, id) != 0) return -1;
  if (reorder(m, view, compact, 0, id) != 0) return -1;
  args[*nargs].arg = DNNL_ARG_SRC;
  args[(*nargs)++].memory = compact;
  return 0;
}

/* The name of the implementation oneDNN chose for pd (as ONEDNN_VERBOSE prints it), "" if it gives none. */
static const char* implementation(dnnl_primitive_desc_t pd) {
  const char* impl = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, (void*)&impl) != dnnl_success || impl == NULL) return "";
  return impl;
}

/* Whether oneDNN implements pd by its gemm-based convolution: what it picks where a grouped convolution's
 * channels per group do not fill its vector blocks, over plain layouts. That implementation applies a sum
 * post-op at a fraction of its own speed: ShuffleNet's 60 -> 240 channel convolutions in 3 groups on 28x28 took
 * 3.7 ms with the sum and 0.25 ms without (oneDNN 2.6, AVX2; the zoo's shufflenet 20-24 -> 11-14 ms split). */
static int gemm_convolution(dnnl_primitive_desc_t pd) { return strstr(implementation(pd), "gemm") != NULL; }

/* The conv of pd (built without post-ops) into a value of its own, then the sum as a binary add with the
 * node's other post-ops (relu, clip) into the node's value, the summand read in the conv's layout. */
static int32_t finish_split_sum(BdModule* m, int32_t id, dnnl_primitive_desc_t pd, dnnl_exec_arg_t* args,
                                int32_t nargs) {
  const BdNode* n = &m->nodes[id];
  const dnnl_memory_desc_t md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  dnnl_memory_t conv_out, summand;
  dnnl_binary_desc_t d;
  dnnl_primitive_desc_t add_pd;
  dnnl_exec_arg_t add_args[BD_MAX_ARGS];
  if (bd_activation(m, &md, &conv_out, id) != 0) {
    dnnl_primitive_desc_destroy(pd);
    return -1;
  }
  if (finish(m, id, pd, args, nargs, conv_out) != 0) return -1;
  if (value_as(m, n->inputs[n->num_inputs - 1], &md, &summand, id) != 0) return -1;
  CHECK(dnnl_binary_desc_init(&d, dnnl_binary_add, &md, &md, &md), id, "binary_desc_init");
  if (pd_with_post_ops(m, id, BD_ALL_BUT_SUM, &d, &add_pd) != 0) return -1;
  add_args[0].arg = DNNL_ARG_SRC_0;
  add_args[0].memory = conv_out;
  add_args[1].arg = DNNL_ARG_SRC_1;
  add_args[1].memory = summand;
  return finish(m, id, add_pd, add_args, 2, NULL);
}

/* The eltwise post-ops (relu, clip) of node `id` as eltwise steps over its value, in place. For the gemm-based
 * convolution: oneDNN 2.6 applies its eltwise post-ops in a scalar loop with a branch per element, which
 * real activations mispredict about every other time (perf on ShuffleNet through dnnl: 5% of the run in that
 * loop for four relu convs); its eltwise primitive runs them in vector registers. */
static int32_t eltwise_steps(BdModule* m, int32_t id) {
  const BdNode* n = &m->nodes[id];
  const struct { int on; dnnl_alg_kind_t alg; float alpha, beta; } ops[] = {
      {n->a.post_relu, dnnl_eltwise_relu, 0.0f, 0.0f},
      {n->a.post_clip, dnnl_eltwise_clip, (float)n->a.clip_lo, (float)n->a.clip_hi},
  };
  size_t i;
  for (i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
    dnnl_eltwise_desc_t d;
    dnnl_primitive_desc_t pd;
    dnnl_exec_arg_t args[BD_MAX_ARGS];
    if (!ops[i].on) continue;
    CHECK(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, ops[i].alg, &n->md, ops[i].alpha, ops[i].beta), id,
          "eltwise_forward_desc_init");
    if (pd_with_post_ops(m, id, BD_NO_POST_OPS, &d, &pd) != 0) return -1;
    args[0].arg = DNNL_ARG_SRC;
    args[0].memory = n->mem;
    if (finish(m, id, pd, args, 1, n->mem) != 0) return -1;
  }
  return 0;
}

/* A conv node's strides, dilation (oneDNN counts the gaps) and padding (top/left, bottom/right) as oneDNN's dims. */
static void conv_geometry(const BdAttrs* a, dnnl_dims_t strides, dnnl_dims_t dil, dnnl_dims_t pl, dnnl_dims_t pr) {
  int i;
  for (i = 0; i < 2; ++i) {
    strides[i] = a->strides[i];
    dil[i] = a->dilation[i] - 1;
    pl[i] = a->padding[i];
    pr[i] = a->padding[i + 2];
  }
}

/* md's tag among the layouts in which, for a batch of one, a range of channels starting at a multiple of
 * `channels` is a dense tensor of its own: plain NCHW, and channels in blocks of 8 or 16 that divide `channels`.
 * dnnl_format_tag_undef if none. */
static const struct {
  dnnl_format_tag_t tag;
  int64_t block; /* channels per block */
} SLICEABLE[] = {{dnnl_nChw16c, 16}, {dnnl_nChw8c, 8}, {dnnl_nchw, 1}}; /* the widest blocks first; plain last */
#define BD_SLICEABLE (sizeof SLICEABLE / sizeof SLICEABLE[0])

static dnnl_format_tag_t sliceable_tag(const dnnl_memory_desc_t* md, int64_t channels) {
  size_t i;
  for (i = 0; i < BD_SLICEABLE; ++i) {
    dnnl_memory_desc_t t;
    if (channels % SLICEABLE[i].block != 0) continue;
    if (dnnl_memory_desc_init_by_tag(&t, 4, md->dims, dnnl_f32, SLICEABLE[i].tag) == dnnl_success &&
        dnnl_memory_desc_equal(&t, md)) {
      return SLICEABLE[i].tag;
    }
  }
  return dnnl_format_tag_undef;
}

/* The channels each group's primitive reads when a group's input channels do not fill whole blocks of `block`
 * lanes: the narrowest width, a multiple of block, whose block-aligned windows each hold one group's channels
 * (ShuffleNet's 3 groups of 20 channels over 8-lane blocks: [0, 24), [16, 40), [40, 64)). */
static int64_t group_window(int64_t cg, int64_t groups, int64_t block) {
  int64_t j, width = 0;
  for (j = 0; j < groups; ++j) {
    const int64_t first = j * cg / block * block, end = ((j + 1) * cg + block - 1) / block * block;
    if (end - first > width) width = end - first;
  }
  return width;
}

/* Where group j's window starts: its first channel's block, moved back where the window would pass the value's
 * last block (the channels past the value's count in that block are the layout's padding, which oneDNN keeps
 * zero). */
static int64_t window_start(int64_t j, int64_t cg, int64_t width, int64_t channels, int64_t block) {
  const int64_t first = j * cg / block * block, blocks_end = (channels + block - 1) / block * block;
  return first + width > blocks_end ? blocks_end - width : first;
}

/* Group j's weights over its windows, in OIHW: rows [out_at, out_at + og) and columns [in_at, in_at + cg) are the
 * group's, the rest zero. A constant of the step. */
static int32_t window_weights(BdModule* m, int32_t id, const BdNode* w, int64_t j, int64_t og, int64_t cg,
                              int64_t out_at, int64_t in_at, const dnnl_memory_desc_t* md, dnnl_memory_t* out) {
  const int64_t rows = md->dims[0], width = md->dims[1], taps = md->dims[2] * md->dims[3];
  const float* from = (const float*)w->data;
  float* to = NULL;
  int64_t o;
  if (bd_new_memory(m, md, DNNL_MEMORY_ALLOCATE, out, id) != 0) return -1;
  CHECK(dnnl_memory_get_data_handle(*out, (void**)&to), id, "memory_get_data_handle");
  memset(to, 0, (size_t)(rows * width * taps) * sizeof(float));
  for (o = 0; o < og; ++o) {
    memcpy(to + ((out_at + o) * width + in_at) * taps, from + (j * og + o) * cg * taps,
           (size_t)(cg * taps) * sizeof(float));
  }
  return 0;
}

/* Group j's bias over its output window (zero for the other channels): a constant of the step. */
static int32_t window_bias(BdModule* m, int32_t id, const BdNode* b, int64_t j, int64_t og, int64_t out_at,
                           const dnnl_memory_desc_t* md, dnnl_memory_t* out) {
  float* to = NULL;
  if (bd_new_memory(m, md, DNNL_MEMORY_ALLOCATE, out, id) != 0) return -1;
  CHECK(dnnl_memory_get_data_handle(*out, (void**)&to), id, "memory_get_data_handle");
  memset(to, 0, (size_t)md->dims[0] * sizeof(float));
  memcpy(to + out_at, (const float*)b->data + j * og, (size_t)og * sizeof(float));
  return 0;
}

static int64_t lanes_of(dnnl_format_tag_t tag) { return tag == dnnl_nChw16c ? 16 : tag == dnnl_nChw8c ? 8 : 1; }

/* Where group j's channels lie in the value and in its primitive's view: the view starts at `first`. */
static int32_t group_view_start(BdModule* m, int32_t id, int64_t j, int64_t per_group, int64_t width,
                                int64_t channels, int64_t lanes, int64_t* first) {
  *first = width == per_group ? j * per_group : window_start(j, per_group, width, channels, lanes);
  /* the window holds the group's channels and lies within the value's blocks */
  if (*first < 0 || *first > j * per_group || *first + width < (j + 1) * per_group ||
      *first + width > (channels + lanes - 1) / lanes * lanes) {
    return bd_fail(m, id, "group %lld's channel window [%lld, %lld) misses its channels or the value", (long long)j,
                   (long long)*first, (long long)(*first + width));
  }
  return 0;
}

/* A grouped convolution as one ungrouped primitive per group. oneDNN 2.6 runs a grouped convolution on its generic
 * direct kernel (ShuffleNet's 1x1 convs in 3 groups of 40-320 channels: jit:avx2, about 16 GFLOP/s) and the same
 * shapes without groups on its 1x1 kernel at several times that. With a batch of one, a group's input and output
 * channels are dense slices of the values (NCHW, or channel blocks dividing the group), so each group's step reads
 * and writes its slices in place: one primitive (created once per group from one descriptor), the group's weights
 * reordered once, its bias a slice of the constant. The sum and relu post-ops are per element, as in one primitive.
 * Where a group's channels do not fill 8-channel blocks (ShuffleNet's convs in 3 groups of 20 channels, which
 * oneDNN otherwise runs on its gemm-based kernel over plain copies of the values), the group's primitive reads or
 * writes a block-aligned window around them (group_window), with zero weights (and bias) for the window's other
 * channels. Output windows overlap, so they accumulate: the value is zeroed each run and every group adds into it
 * (a sum post-op before the relu or clip, which leave the channels an earlier group finished as they were, and
 * zeros zero); not where the node itself sums a residual or clips to a range without 0.
 * Returns 1 if the node was built so, 0 if it does not qualify (build_conv builds one grouped primitive), -1 on
 * failure. */
static int32_t build_conv_per_group(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode *x = &m->nodes[n->inputs[0]], *w = &m->nodes[n->inputs[1]];
  const BdNode* b = n->a.bias ? &m->nodes[n->inputs[2]] : NULL;
  const BdAttrs* a = &n->a;
  const int64_t g = a->groups;
  int64_t cg, og, cw = 0, ow = 0, j;
  dnnl_dims_t src_dims = {0}, dst_dims = {0}, w_dims = {0}, strides = {0}, dil = {0}, pl = {0}, pr = {0};
  dnnl_dims_t bias_dims = {0}, full_dims = {0};
  dnnl_memory_desc_t src_md, w_md, b_md, dst_md, full_src, full_dst, w_user_md;
  const dnnl_memory_desc_t *pd_src, *pd_dst, *pd_w;
  dnnl_convolution_desc_t d;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_format_tag_t src_tag = dnnl_format_tag_undef, dst_tag = dnnl_format_tag_undef;
  dnnl_memory_t src, dst;
  size_t in_plane, out_plane;
  int attempt;
  if (g <= 1 || a->nhwc || x->ndim != 4 || x->shape[0] != 1 || w->kind != BD_CONST || (b != NULL && b->kind != BD_CONST)) {
    return 0;
  }
  cg = x->shape[1] / g;
  og = w->shape[0] / g;
  if (cg == 1) return 0; /* depthwise: oneDNN's own depthwise kernel */
  src_dims[0] = dst_dims[0] = 1;
  src_dims[2] = x->shape[2];
  src_dims[3] = x->shape[3];
  dst_dims[2] = n->shape[2];
  dst_dims[3] = n->shape[3];
  w_dims[2] = w->shape[2];
  w_dims[3] = w->shape[3];
  conv_geometry(a, strides, dil, pl, pr);
  /* the groups' own channels; else 8-channel windows on the side(s) whose groups straddle blocks */
  for (attempt = 0; attempt < 2; ++attempt) {
    cw = attempt == 1 && cg % 8 != 0 ? group_window(cg, g, 8) : cg;
    ow = attempt == 1 && og % 8 != 0 ? group_window(og, g, 8) : og;
    /* accumulating windows need an activation that keeps 0 and what it already gave (relu; clip around 0) */
    if (attempt == 1 && ((cw == cg && ow == og) ||
                         (ow != og && (a->post_sum || (a->post_clip && (a->clip_lo > 0.0 || a->clip_hi < 0.0)))))) {
      break;
    }
    src_dims[1] = w_dims[1] = cw;
    dst_dims[1] = w_dims[0] = bias_dims[0] = ow;
    if (any_md(m, id, 4, src_dims, &src_md) || any_md(m, id, 4, dst_dims, &dst_md) ||
        any_md(m, id, 4, w_dims, &w_md) || (b != NULL && plain_md(m, id, 1, bias_dims, &b_md)) ||
        plain_md(m, id, 4, w_dims, &w_user_md)) {
      return -1;
    }
    CHECK(dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, &src_md,
                                                     &w_md, b != NULL ? &b_md : NULL, &dst_md, strides, dil, pl, pr),
          id, "convolution_forward_desc_init");
    if (pd_with_post_ops(m, id, ow == og ? BD_ALL_POST_OPS : BD_SUM_FIRST, &d, &pd) != 0) return -1;
    src_tag = sliceable_tag(dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), cw);
    dst_tag = sliceable_tag(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), ow);
    /* gemm-based: no faster without groups, and its sum post-op is slow (finish_split_sum) */
    if (src_tag != dnnl_format_tag_undef && dst_tag != dnnl_format_tag_undef && !gemm_convolution(pd) &&
        (cw == cg || lanes_of(src_tag) == 8) && (ow == og || lanes_of(dst_tag) == 8)) {
      break;
    }
    dnnl_primitive_desc_destroy(pd);
    pd = NULL;
  }
  if (pd == NULL) return 0;
  pd_src = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  pd_dst = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  pd_w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  full_dims[0] = 1;
  full_dims[1] = x->shape[1];
  full_dims[2] = src_dims[2];
  full_dims[3] = src_dims[3];
  if (dnnl_memory_desc_init_by_tag(&full_src, 4, full_dims, dnnl_f32, src_tag) != dnnl_success) {
    dnnl_primitive_desc_destroy(pd);
    return 0;
  }
  full_dims[1] = w->shape[0];
  full_dims[2] = dst_dims[2];
  full_dims[3] = dst_dims[3];
  if (dnnl_memory_desc_init_by_tag(&full_dst, 4, full_dims, dnnl_f32, dst_tag) != dnnl_success) {
    dnnl_primitive_desc_destroy(pd);
    return 0;
  }
  /* a channel's plane, and with it a block's lanes, starts at channel * H * W floats in NCHW and blocked layouts */
  in_plane = (size_t)(src_dims[2] * src_dims[3]) * sizeof(float);
  out_plane = (size_t)(dst_dims[2] * dst_dims[3]) * sizeof(float);
  if (value_as(m, n->inputs[0], &full_src, &src, id) != 0 || conv_dst(m, id, &full_dst, &dst) != 0) goto fail;
  if (ow != og && bd_zero_step(m, id, dst) != 0) goto fail;
  for (j = 0; j < g; ++j) {
    dnnl_exec_arg_t args[BD_MAX_ARGS];
    dnnl_memory_t src_j, dst_j, w_user, w_j, b_j;
    int64_t in_first, out_first;
    int32_t nargs = 0;
    if (group_view_start(m, id, j, cg, cw, x->shape[1], lanes_of(src_tag), &in_first) != 0 ||
        group_view_start(m, id, j, og, ow, w->shape[0], lanes_of(dst_tag), &out_first) != 0 ||
        view_of(m, n->inputs[0], src, (size_t)in_first * in_plane, pd_src, &src_j, id) != 0 ||
        bd_view_at(m, dst, (size_t)out_first * out_plane, pd_dst, &dst_j, id) != 0 ||
        (cw == cg && ow == og
             ? bd_view_at(m, w->mem, (size_t)(j * og * cg * w_dims[2] * w_dims[3]) * sizeof(float), &w_user_md,
                          &w_user, id)
             : window_weights(m, id, w, j, og, cg, j * og - out_first, j * cg - in_first, &w_user_md, &w_user)) != 0 ||
        bd_new_memory(m, pd_w, DNNL_MEMORY_ALLOCATE, &w_j, id) != 0 || reorder(m, w_user, w_j, 1, id) != 0) {
      goto fail;
    }
    args[nargs].arg = DNNL_ARG_SRC;
    args[nargs++].memory = src_j;
    args[nargs].arg = DNNL_ARG_WEIGHTS;
    args[nargs++].memory = w_j;
    if (b != NULL) {
      if ((ow == og ? bd_view_at(m, b->mem, (size_t)(j * og) * sizeof(float), &b_md, &b_j, id)
                    : window_bias(m, id, b, j, og, j * og - out_first, &b_md, &b_j)) != 0) {
        goto fail;
      }
      args[nargs].arg = DNNL_ARG_BIAS;
      args[nargs++].memory = b_j;
    }
    if (step_of(m, id, pd, args, nargs, dst_j) != 0) goto fail;
  }
  dnnl_primitive_desc_destroy(pd);
  return 1;
fail:
  dnnl_primitive_desc_destroy(pd);
  return -1;
}

static int32_t build_conv(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode *x = &m->nodes[n->inputs[0]], *w = &m->nodes[n->inputs[1]];
  const BdAttrs* a = &n->a;
  dnnl_memory_desc_t src_md, w_md, b_md, dst_md, sub_md;
  dnnl_convolution_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  int32_t nargs = 0;
  int64_t g = a->groups;
  int64_t o = a->nhwc ? w->shape[3] : w->shape[0];
  dnnl_dims_t src_dims = {0}, dst_dims = {0}, w_dims = {0}, strides = {0}, dil = {0}, pl = {0}, pr = {0}, bias_dims = {0};
  dnnl_memory_t dst = NULL, wmem;
  int subsample, split_sum, split_eltwise;
  int32_t per_group = build_conv_per_group(m, id);
  if (per_group != 0) return per_group < 0 ? -1 : 0;
  src_dims[0] = x->shape[0];
  src_dims[1] = a->nhwc ? x->shape[3] : x->shape[1];
  src_dims[2] = a->nhwc ? x->shape[1] : x->shape[2];
  src_dims[3] = a->nhwc ? x->shape[2] : x->shape[3];
  dst_dims[0] = n->shape[0];
  dst_dims[1] = o;
  dst_dims[2] = a->nhwc ? n->shape[1] : n->shape[2];
  dst_dims[3] = a->nhwc ? n->shape[2] : n->shape[3];
  conv_geometry(a, strides, dil, pl, pr);
  subsample = subsampled_1x1(m, id, w, &sub_md);
  if (subsample) {
    /* the conv reads a compact copy of every stride-th pixel (made each run) with unit strides */
    src_dims[2] = dst_dims[2];
    src_dims[3] = dst_dims[3];
    strides[0] = strides[1] = 1;
  }
  if (a->nhwc) {
    /* NHWC values stay row-major NHWC: the primitive reads and writes them where they are */
    CHECK(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, dnnl_f32, dnnl_nhwc), id, "memory_desc_init");
    CHECK(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dnnl_f32, dnnl_nhwc), id, "memory_desc_init");
  } else if (any_md(m, id, 4, src_dims, &src_md) || any_md(m, id, 4, dst_dims, &dst_md)) {
    return -1;
  }
  if (g == 1) {
    w_dims[0] = o;
    w_dims[1] = src_dims[1];
    w_dims[2] = a->nhwc ? w->shape[0] : w->shape[2];
    w_dims[3] = a->nhwc ? w->shape[1] : w->shape[3];
    if (any_md(m, id, 4, w_dims, &w_md)) return -1;
  } else {
    w_dims[0] = g;
    w_dims[1] = o / g;
    w_dims[2] = w->shape[1];
    w_dims[3] = w->shape[2];
    w_dims[4] = w->shape[3];
    if (any_md(m, id, 5, w_dims, &w_md)) return -1;
  }
  bias_dims[0] = o;
  if (a->bias && plain_md(m, id, 1, bias_dims, &b_md)) return -1;
  CHECK(dnnl_dilated_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &w_md,
                                                   a->bias ? &b_md : NULL, &dst_md, strides, dil, pl, pr),
        id, "convolution_forward_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  split_sum = a->post_sum && !a->nhwc && gemm_convolution(pd);
  split_eltwise = !a->post_sum && (a->post_relu || a->post_clip) && gemm_convolution(pd);
  if (split_sum || split_eltwise) {
    dnnl_primitive_desc_destroy(pd);
    if (pd_with_post_ops(m, id, BD_NO_POST_OPS, &d, &pd) != 0) return -1;
  }
  /* src: NHWC data is a view of the row-major value; NCHW data is taken in any layout (reordered if needed) */
  if (a->nhwc) {
    dnnl_memory_desc_t view_md;
    dnnl_memory_t view;
    if (value_view(m, n->inputs[0], 4, src_dims, dnnl_nhwc, &view, &view_md, id) != 0) goto fail;
    args[nargs].arg = DNNL_ARG_SRC;
    args[nargs++].memory = view;
  } else if (subsample) {
    if (bind_subsampled(m, id, pd, &sub_md, args, &nargs) != 0) goto fail;
  } else if (bind_arg(m, id, pd, dnnl_query_src_md, 0, n->inputs[0], DNNL_ARG_SRC, args, &nargs) != 0) {
    goto fail;
  }
  /* weights: the node's value seen with oneDNN's dims (goihw for groups), reordered into pd's layout:
   * once for constants */
  {
    dnnl_memory_desc_t view_md;
    dnnl_memory_t user;
    if (value_view(m, n->inputs[1], g == 1 ? 4 : 5, w_dims, g == 1 ? (a->nhwc ? dnnl_hwio : dnnl_oihw) : dnnl_goihw,
                   &user, &view_md, id) != 0) {
      goto fail;
    }
    if (m->nodes[n->inputs[1]].kind == BD_CONST
            ? bd_new_memory(m, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), DNNL_MEMORY_ALLOCATE, &wmem, id)
            : bd_activation(m, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &wmem, id)) {
      goto fail;
    }
    if (reorder(m, user, wmem, m->nodes[n->inputs[1]].kind == BD_CONST, id) != 0) goto fail;
    args[nargs].arg = DNNL_ARG_WEIGHTS;
    args[nargs++].memory = wmem;
  }
  if (a->bias && bind_arg(m, id, pd, dnnl_query_weights_md, 1, n->inputs[2], DNNL_ARG_BIAS, args, &nargs) != 0) goto fail;
  if (split_sum) return finish_split_sum(m, id, pd, args, nargs);
  if (conv_dst(m, id, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &dst) != 0) goto fail;
  if (finish(m, id, pd, args, nargs, dst) != 0) return -1;
  return split_eltwise ? eltwise_steps(m, id) : 0;
fail:
  dnnl_primitive_desc_destroy(pd);
  return -1;
}

static int32_t build_dense(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode* w = &m->nodes[n->inputs[1]];
  dnnl_memory_desc_t src_md, w_md, b_md, dst_md;
  dnnl_inner_product_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  int32_t nargs = 0;
  dnnl_dims_t units = {0};
  units[0] = w->shape[0];
  if (any_md(m, id, 2, m->nodes[n->inputs[0]].shape, &src_md) ||
      any_md(m, id, 2, w->shape, &w_md) || any_md(m, id, 2, n->shape, &dst_md) ||
      (n->a.bias && plain_md(m, id, 1, units, &b_md))) {
    return -1;
  }
  CHECK(dnnl_inner_product_forward_desc_init(&d, dnnl_forward_inference, &src_md, &w_md, n->a.bias ? &b_md : NULL, &dst_md),
        id, "inner_product_forward_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  if (bind_arg(m, id, pd, dnnl_query_src_md, 0, n->inputs[0], DNNL_ARG_SRC, args, &nargs) ||
      bind_arg(m, id, pd, dnnl_query_weights_md, 0, n->inputs[1], DNNL_ARG_WEIGHTS, args, &nargs) ||
      (n->a.bias && bind_arg(m, id, pd, dnnl_query_weights_md, 1, n->inputs[2], DNNL_ARG_BIAS, args, &nargs))) {
    dnnl_primitive_desc_destroy(pd);
    return -1;
  }
  return finish(m, id, pd, args, nargs, NULL);
}

static int32_t build_matmul(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode *x = &m->nodes[n->inputs[0]], *w = &m->nodes[n->inputs[1]];
  dnnl_memory_desc_t a_md, b_md, dst_md;
  dnnl_matmul_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  dnnl_memory_t am, bm;
  int32_t nargs = 0;
  dnnl_dims_t a_dims = {0}, b_dims = {0};
  a_dims[0] = n->shape[0];
  a_dims[1] = n->a.transpose_a ? x->shape[0] : x->shape[1];
  b_dims[0] = a_dims[1];
  b_dims[1] = n->shape[1];
  (void)w;
  if (value_view(m, n->inputs[0], 2, a_dims, n->a.transpose_a ? dnnl_ba : dnnl_ab, &am, &a_md, id) ||
      value_view(m, n->inputs[1], 2, b_dims, n->a.transpose_b ? dnnl_ba : dnnl_ab, &bm, &b_md, id) ||
      plain_md(m, id, 2, n->shape, &dst_md)) {
    return -1;
  }
  CHECK(dnnl_matmul_desc_init(&d, &a_md, &b_md, NULL, &dst_md), id, "matmul_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  args[nargs].arg = DNNL_ARG_SRC;
  args[nargs++].memory = am;
  args[nargs].arg = DNNL_ARG_WEIGHTS;
  args[nargs++].memory = bm;
  return finish(m, id, pd, args, nargs, NULL);
}

static int32_t build_eltwise(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode* x = &m->nodes[n->inputs[0]];
  dnnl_alg_kind_t alg = dnnl_eltwise_relu;
  float alpha = 0.0f, beta = 0.0f;
  dnnl_eltwise_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  switch (n->op) {
    case BD_RELU: break;
    case BD_LEAKY_RELU: alpha = (float)n->a.alpha; break;
    case BD_CLIP: alg = dnnl_eltwise_clip; alpha = (float)n->a.a_min; beta = (float)n->a.a_max; break;
    case BD_SIGMOID: alg = dnnl_eltwise_logistic; break;
    case BD_TANH: alg = dnnl_eltwise_tanh; break;
    case BD_EXP: alg = dnnl_eltwise_exp; break;
    default: alg = dnnl_eltwise_sqrt; break;
  }
  CHECK(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &x->md, alpha, beta), id, "eltwise_forward_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  args[0].arg = DNNL_ARG_SRC;
  args[0].memory = x->mem;
  return finish(m, id, pd, args, 1, NULL);
}

static int32_t build_binary(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  int32_t full = n->inputs[0], other = n->inputs[1], i;
  dnnl_memory_desc_t d1;
  dnnl_binary_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  dnnl_memory_t m1;
  dnnl_dims_t dims = {0};
  if (m->nodes[full].ndim != n->ndim || memcmp(m->nodes[full].shape, n->shape, sizeof(n->shape)) != 0) {
    full = n->inputs[1]; /* add and multiply commute */
    other = n->inputs[0];
  }
  if (m->nodes[full].ndim != n->ndim || memcmp(m->nodes[full].shape, n->shape, sizeof(n->shape)) != 0) {
    return bd_fail(m, id, "neither operand has the result's shape; oneDNN broadcasts only the second operand");
  }
  if (m->nodes[other].numel == n->numel && m->nodes[other].ndim == n->ndim) {
    if (value_as(m, other, &m->nodes[full].md, &m1, id) != 0) return -1;
    d1 = m->nodes[full].md;
  } else {
    const BdNode* o = &m->nodes[other];
    for (i = 0; i < n->ndim; ++i) dims[i] = i < n->ndim - o->ndim ? 1 : o->shape[i - (n->ndim - o->ndim)];
    if (value_view(m, other, n->ndim, dims, plain_tag(n->ndim), &m1, &d1, id) != 0) return -1;
  }
  CHECK(dnnl_binary_desc_init(&d, n->op == BD_ADD ? dnnl_binary_add : dnnl_binary_mul, &m->nodes[full].md, &d1,
                              &m->nodes[full].md),
        id, "binary_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  args[0].arg = DNNL_ARG_SRC_0;
  args[0].memory = m->nodes[full].mem;
  args[1].arg = DNNL_ARG_SRC_1;
  args[1].memory = m1;
  return finish(m, id, pd, args, 2, NULL);
}

static int32_t build_batch_norm(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode* x = &m->nodes[n->inputs[0]];
  static const int ARGS[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  unsigned flags = dnnl_use_global_stats | (n->a.scale ? dnnl_use_scale : 0u) | (n->a.center ? dnnl_use_shift : 0u);
  dnnl_batch_normalization_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  int32_t nargs = 1, i;
  CHECK(dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_inference, &x->md, (float)n->a.epsilon, flags), id,
        "batch_normalization_forward_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  args[0].arg = DNNL_ARG_SRC;
  args[0].memory = x->mem;
  for (i = 0; i < 4; ++i) {
    const BdNode* v = &m->nodes[n->inputs[1 + i]];
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;
    if ((i == 0 && !n->a.scale) || (i == 1 && !n->a.center)) continue;
    dnnl_dims_t len = {0};
    len[0] = v->numel;
    if (value_view(m, n->inputs[1 + i], 1, len, dnnl_a, &mem, &md, id) != 0) {
      dnnl_primitive_desc_destroy(pd);
      return -1;
    }
    args[nargs].arg = ARGS[i];
    args[nargs++].memory = mem;
  }
  return finish(m, id, pd, args, nargs, NULL);
}

static int jit_implementation(dnnl_primitive_desc_t pd) { return strncmp(implementation(pd), "jit", 3) == 0; }

/* A pooling over a plain (NCHW) value runs oneDNN's simple loops: ShuffleNet's 3x3/2 average pool over 240
 * channels of 28x28 took 1.2-1.8 ms (oneDNN 2.6, AVX2), its jit kernel over a blocked copy 0.05 ms and the
 * copy 0.2 ms. Where a blocked layout (16 channels, then 8) has a jit kernel, *pd becomes that pooling and the
 * value is reordered into its layout each run; otherwise *pd stays. */
static int32_t blocked_pool(BdModule* m, int32_t id, dnnl_alg_kind_t alg, const dnnl_memory_desc_t* dst_md,
                            const dnnl_dims_t strides, const dnnl_dims_t kernel, const dnnl_dims_t dil,
                            const dnnl_dims_t pl, const dnnl_dims_t pr, dnnl_primitive_desc_t* pd) {
  static const dnnl_format_tag_t tags[2] = {dnnl_aBcd16b, dnnl_aBcd8b};
  const BdNode* x = &m->nodes[m->nodes[id].inputs[0]];
  int t;
  for (t = 0; t < 2; ++t) {
    dnnl_memory_desc_t src_md;
    dnnl_pooling_v2_desc_t d;
    dnnl_primitive_desc_t blocked;
    if (x->ndim != 4 || x->shape[1] % 8 != 0) return 0;
    CHECK(dnnl_memory_desc_init_by_tag(&src_md, 4, x->shape, dnnl_f32, tags[t]), id, "memory_desc_init");
    CHECK(dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &src_md, dst_md, strides, kernel, dil, pl,
                                            pr),
          id, "pooling_forward_desc_init");
    if (pd_with_attr(m, id, &d, &blocked) != 0) return -1;
    if (jit_implementation(blocked)) {
      dnnl_primitive_desc_destroy(*pd);
      *pd = blocked;
      return 0;
    }
    dnnl_primitive_desc_destroy(blocked);
  }
  return 0;
}

static int32_t build_pool(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode* x = &m->nodes[n->inputs[0]];
  const BdAttrs* a = &n->a;
  dnnl_dims_t kernel = {0}, strides = {0}, dil = {0}, pl = {0}, pr = {0};
  dnnl_alg_kind_t alg = dnnl_pooling_max;
  dnnl_memory_desc_t dst_md;
  dnnl_pooling_v2_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  BdPoolShape shape;
  int32_t i;
  for (i = 0; i < 2; ++i) {
    if (n->op == BD_GLOBAL_AVG_POOL) {
      kernel[i] = x->shape[2 + i];
      strides[i] = 1;
      dil[i] = pl[i] = pr[i] = 0;
      continue;
    }
    kernel[i] = a->pool_size[i];
    strides[i] = a->strides[i];
    dil[i] = a->dilation[i] - 1;
    pl[i] = a->padding[i];
    /* ceil mode: the trailing padding that gives the declared output size */
    pr[i] = (n->shape[2 + i] - 1) * a->strides[i] + a->dilation[i] * (a->pool_size[i] - 1) + 1 - x->shape[2 + i] - pl[i];
    if (pr[i] < 0) pr[i] = 0;
  }
  if (n->op == BD_AVG_POOL) alg = a->count_include_pad ? dnnl_pooling_avg_include_padding : dnnl_pooling_avg_exclude_padding;
  if (n->op == BD_GLOBAL_AVG_POOL) alg = dnnl_pooling_avg_exclude_padding;
  if (any_md(m, id, 4, n->shape, &dst_md)) return -1;
  CHECK(dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &x->md, &dst_md, strides, kernel, dil, pl, pr),
        id, "pooling_forward_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  if (!jit_implementation(pd) && blocked_pool(m, id, alg, &dst_md, strides, kernel, dil, pl, pr, &pd) != 0) return -1;
  if (bd_pool_shape(pd, alg == dnnl_pooling_max, alg == dnnl_pooling_avg_include_padding, strides, kernel, dil, pl,
                    &shape)) {
    dnnl_memory_t src;
    n->md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    i = value_as(m, n->inputs[0], dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), &src, id);
    dnnl_primitive_desc_destroy(pd);
    if (i != 0 || bd_activation(m, &n->md, &n->mem, id) != 0) return -1;
    return bd_pool_step(m, id, &shape, src, n->mem);
  }
  args[0].arg = DNNL_ARG_SRC;
  if (value_as(m, n->inputs[0], dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), &args[0].memory, id) != 0) {
    dnnl_primitive_desc_destroy(pd);
    return -1;
  }
  if (n->op == BD_MAX_POOL) {
    /* inference max pooling needs no workspace; should an implementation ask, give it one */
    const dnnl_memory_desc_t* ws = dnnl_primitive_desc_query_md(pd, dnnl_query_workspace_md, 0);
    if (ws != NULL && dnnl_memory_desc_get_size(ws) > 0) {
      dnnl_memory_t wm;
      if (bd_new_memory(m, ws, DNNL_MEMORY_ALLOCATE, &wm, id) != 0) {
        dnnl_primitive_desc_destroy(pd);
        return -1;
      }
      args[1].arg = DNNL_ARG_WORKSPACE;
      args[1].memory = wm;
      return finish(m, id, pd, args, 2, NULL);
    }
  }
  return finish(m, id, pd, args, 1, NULL);
}

/* A channel concatenation over a batch of one as one copy per operand into its channel slice of the value (a
 * reorder into a view at a byte offset; the slices start on channel blocks). oneDNN 2.6's concat primitive took
 * 0.15-0.5 ms for ShuffleNet's 2 x 240 and 2 x 480 channel concats in 8-channel blocks (14x14, 7x7, AVX2), and its
 * reference loops for operands in different layouts; a copy is a pass over the bytes. The value takes the blocked
 * layout of the operands when every operand's channels fill its blocks, else plain NCHW. Returns 1 if built so, 0
 * if the node does not qualify (build_concat builds oneDNN's concat), -1 on failure. */
static int32_t build_concat_by_copies(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const int64_t axis = n->a.axis < 0 ? n->a.axis + n->ndim : n->a.axis, plane = n->shape[2] * n->shape[3];
  dnnl_format_tag_t tag = dnnl_nchw;
  size_t k, at = 0;
  int32_t i;
  if (axis != 1 || n->ndim != 4 || n->shape[0] != 1 || n->a.post_relu || n->a.post_clip) return 0;
  for (k = 0; k + 1 < BD_SLICEABLE; ++k) { /* the blocked layouts */
    int used = 0, fits = 1;
    for (i = 0; i < n->num_inputs; ++i) {
      const BdNode* x = &m->nodes[n->inputs[i]];
      used |= sliceable_tag(&x->md, x->shape[1]) == SLICEABLE[k].tag;
      fits &= x->shape[1] % SLICEABLE[k].block == 0;
    }
    if (used && fits) {
      tag = SLICEABLE[k].tag;
      break;
    }
  }
  {
    dnnl_memory_desc_t md;
    CHECK(dnnl_memory_desc_init_by_tag(&md, 4, n->shape, dnnl_f32, tag), id, "memory_desc_init");
    n->md = md;
    if (bd_activation(m, &n->md, &n->mem, id) != 0) return -1;
  }
  for (i = 0; i < n->num_inputs; ++i) {
    const BdNode* x = &m->nodes[n->inputs[i]];
    dnnl_memory_desc_t slice_md;
    dnnl_memory_t slice;
    CHECK(dnnl_memory_desc_init_by_tag(&slice_md, 4, x->shape, dnnl_f32, tag), id, "memory_desc_init");
    if (bd_view_at(m, n->mem, at, &slice_md, &slice, id) != 0 || reorder(m, x->mem, slice, 0, id) != 0) return -1;
    at += (size_t)(x->shape[1] * plane) * sizeof(float);
  }
  return 1;
}

static int32_t build_concat(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  dnnl_memory_desc_t srcs[BD_MAX_INPUTS], dst_md;
  dnnl_primitive_desc_t pd;
  dnnl_primitive_attr_t attr;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  dnnl_status_t st;
  int32_t i, axis = (int32_t)(n->a.axis < 0 ? n->a.axis + n->ndim : n->a.axis);
  int32_t by_copies = build_concat_by_copies(m, id);
  if (by_copies != 0) return by_copies < 0 ? -1 : 0;
  for (i = 0; i < n->num_inputs; ++i) srcs[i] = m->nodes[n->inputs[i]].md;
  if (any_md(m, id, n->ndim, n->shape, &dst_md)) return -1;
  if (make_attr(m, id, BD_ALL_POST_OPS, &attr) != 0) return -1;
  st = dnnl_concat_primitive_desc_create(&pd, &dst_md, n->num_inputs, axis, srcs, attr, m->engine);
  dnnl_primitive_attr_destroy(attr);
  CHECK(st, id, "concat_primitive_desc_create");
  for (i = 0; i < n->num_inputs; ++i) {
    args[i].arg = DNNL_ARG_MULTIPLE_SRC + i;
    args[i].memory = m->nodes[n->inputs[i]].mem;
  }
  return finish(m, id, pd, args, n->num_inputs, NULL);
}

static int32_t build_softmax(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  dnnl_memory_desc_t md;
  dnnl_memory_t in;
  dnnl_softmax_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  int axis = (int)(n->a.axis < 0 ? n->a.axis + n->ndim : n->a.axis);
  /* softmax runs on the row-major value: blocked layouts along the reduced axis gain nothing here */
  if (value_view(m, n->inputs[0], n->ndim, n->shape, plain_tag(n->ndim), &in, &md, id) != 0) return -1;
  CHECK(dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &md, axis), id, "softmax_forward_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  args[0].arg = DNNL_ARG_SRC;
  args[0].memory = in;
  return finish(m, id, pd, args, 1, NULL);
}

static int32_t build_lrn(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode* x = &m->nodes[n->inputs[0]];
  dnnl_lrn_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  CHECK(dnnl_lrn_forward_desc_init(&d, dnnl_forward_inference, dnnl_lrn_across_channels, &x->md, n->a.size,
                                   (float)n->a.alpha, (float)n->a.beta, (float)n->a.k),
        id, "lrn_forward_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  args[0].arg = DNNL_ARG_SRC;
  args[0].memory = x->mem;
  return finish(m, id, pd, args, 1, NULL);
}

/* ShuffleNet's channel shuffle (axis split into `groups` x c/groups, transposed) as oneDNN's shuffle, on the
 * value in the layout its producer chose: no reorder. oneDNN's group_size is the length of the second factor
 * of the split it transposes, c / groups here. */
static int32_t build_shuffle(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  const BdNode* x = &m->nodes[n->inputs[0]];
  const int axis = (int)(n->a.axis < 0 ? n->a.axis + n->ndim : n->a.axis);
  dnnl_shuffle_desc_t d;
  dnnl_primitive_desc_t pd;
  dnnl_exec_arg_t args[BD_MAX_ARGS];
  CHECK(dnnl_shuffle_forward_desc_init(&d, dnnl_forward_inference, &x->md, axis, x->shape[axis] / n->a.groups),
        id, "shuffle_forward_desc_init");
  if (pd_with_attr(m, id, &d, &pd) != 0) return -1;
  args[0].arg = DNNL_ARG_SRC;
  args[0].memory = x->mem;
  return finish(m, id, pd, args, 1, NULL);
}

/* reshape / batch_flatten: the row-major bytes of the input, seen with the node's shape (no step
 * unless the input was in a blocked layout). */
static int32_t build_view(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  return value_view(m, n->inputs[0], n->ndim, n->shape, plain_tag(n->ndim), &n->mem, &n->md, id);
}

static int32_t build_leaf(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  if (plain_md(m, id, n->ndim, n->shape, &n->md) != 0) return -1;
  /* inputs: the handle is the caller's buffer, set on every run; constants: the model's data (read only:
   * it is only ever a reorder's source) */
  return bd_new_memory(m, &n->md, n->kind == BD_INPUT ? DNNL_MEMORY_NONE : (void*)(uintptr_t)n->data, &n->mem, id);
}

static int32_t build_kernel(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  switch (n->op) {
    case BD_CONV2D: return build_conv(m, id);
    case BD_DENSE: return build_dense(m, id);
    case BD_MATMUL: return build_matmul(m, id);
    case BD_ADD:
    case BD_MULTIPLY: return build_binary(m, id);
    case BD_BATCH_NORM: return build_batch_norm(m, id);
    case BD_MAX_POOL:
    case BD_AVG_POOL:
    case BD_GLOBAL_AVG_POOL: return build_pool(m, id);
    case BD_CONCAT: return build_concat(m, id);
    case BD_SOFTMAX: return build_softmax(m, id);
    case BD_LRN: return build_lrn(m, id);
    case BD_CHANNEL_SHUFFLE: return build_shuffle(m, id);
    case BD_RESHAPE:
    case BD_BATCH_FLATTEN: return build_view(m, id);
    default: return build_eltwise(m, id);
  }
}

static int32_t build_node(BdModule* m, int32_t id) {
  BdNode* n = &m->nodes[id];
  dnnl_memory_desc_t plain;
  if ((n->kind == BD_KERNEL ? build_kernel(m, id) : build_leaf(m, id)) != 0) return -1;
  if (plain_md(m, id, n->ndim, n->shape, &plain) != 0) return -1;
  n->plain = dnnl_memory_desc_equal(&n->md, &plain);
  return 0;
}

/* The last kernel reading each node (INT32_MAX for region outputs); a view's readers count for the
 * node it views, since they read its bytes. */
static int32_t last_uses(BdModule* m) {
  int32_t i, k;
  m->last_use = (int32_t*)malloc((size_t)m->num_nodes * sizeof(int32_t));
  if (m->last_use == NULL) return bd_fail(m, -1, "out of memory");
  for (i = 0; i < m->num_nodes; ++i) m->last_use[i] = -1;
  for (i = 0; i < m->num_nodes; ++i) {
    for (k = 0; k < m->nodes[i].num_inputs; ++k) m->last_use[m->nodes[i].inputs[k]] = i;
  }
  for (i = 0; i < m->num_outputs; ++i) m->last_use[m->heads[i]] = INT32_MAX;
  for (i = m->num_nodes - 1; i >= 0; --i) {
    const BdNode* n = &m->nodes[i];
    if (n->kind == BD_KERNEL && (n->op == BD_RESHAPE || n->op == BD_BATCH_FLATTEN) &&
        m->last_use[i] > m->last_use[n->inputs[0]]) {
      m->last_use[n->inputs[0]] = m->last_use[i];
    }
  }
  return 0;
}

int32_t bd_build(BdModule* m) {
  int32_t i;
  if (m->num_bound != m->num_consts) {
    for (i = 0; i < m->num_nodes; ++i) {
      if (m->nodes[i].kind == BD_CONST && m->nodes[i].data == NULL) {
        return bd_fail(m, i, "no constant named '%.200s' was bound (the model's data lacks it)", m->nodes[i].name);
      }
    }
  }
  if (last_uses(m) != 0) return -1;
  m->scratch_buffer = -1;
  CHECK(dnnl_engine_create(&m->engine, dnnl_cpu, 0), -1, "engine_create");
  CHECK(dnnl_stream_create(&m->stream, m->engine, dnnl_stream_default_flags), -1, "stream_create");
  for (i = 0; i < m->num_nodes; ++i) {
    if (build_node(m, i) != 0) return -1;
  }
  m->out_mems = (dnnl_memory_t*)calloc((size_t)m->num_outputs, sizeof(dnnl_memory_t));
  if (m->out_mems == NULL) return bd_fail(m, -1, "out of memory");
  for (i = 0; i < m->num_outputs; ++i) {
    const BdNode* h = &m->nodes[m->heads[i]];
    dnnl_memory_desc_t md;
    if (plain_md(m, m->heads[i], h->ndim, h->shape, &md) != 0) return -1;
    if (bd_new_memory(m, &md, DNNL_MEMORY_NONE, &m->out_mems[i], m->heads[i]) != 0) return -1;
    if (reorder(m, h->mem, m->out_mems[i], 0, m->heads[i]) != 0) return -1;
  }
  free(m->last_use);
  m->last_use = NULL;
  if (bd_plan(m) != 0) return -1;
  m->built = 1;
  return 0;
}

void bd_free(BdModule* m) {
  int32_t i;
  if (m == NULL) return;
  for (i = 0; i < m->num_steps; ++i) {
    if (m->steps[i].prim != NULL) dnnl_primitive_destroy(m->steps[i].prim);
    free(m->steps[i].params);
  }
  for (i = 0; i < m->num_owned; ++i) dnnl_memory_destroy(m->owned[i]);
  if (m->stream != NULL) dnnl_stream_destroy(m->stream);
  if (m->engine != NULL) dnnl_engine_destroy(m->engine);
  free(m->steps);
  free(m->owned);
  free(m->out_mems);
  free(m->aliases);
  free(m->buffers);
  free(m->placed);
  free(m->arena);
  free(m->last_use);
  free(m->nodes);
  free(m->input_nodes);
  free(m->heads);
  free(m->text);
  free(m);
}
