/* The dnnl ByocModuleKind: create (parse), bind_constants (by name), get_function (build once), the packed call. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bd_internal.h"
#include "byoc/parallel.h"

/* oneDNN's OpenMP threads follow the runtime's count (byoc_get_num_threads), so a model with both never
 * runs more threads than asked. omp_set_num_threads sets the calling thread's own count, so it is called
 * on the thread that runs the region, whenever that thread's count differs from the runtime's. Looked up
 * at run time: Debian's libdnnl brings its OpenMP runtime, which the model does not link itself. */
static void bd_follow_thread_count(void) {
  static __thread int32_t set_here;
  const int32_t want = byoc_get_num_threads();
  if (set_here != want) {
    void (*set)(int) = NULL;
    *(void**)(&set) = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (set != NULL) set((int)want);
    set_here = want;
  }
}

int32_t byoc_dnnl_module_create(const char* json, size_t len, void** out_module) {
  BdModule* m;
  if (out_module == NULL) {
    byoc_set_last_error("byoc_dnnl_module_create: out_module is NULL");
    return -1;
  }
  *out_module = NULL;
  m = (BdModule*)calloc(1, sizeof(BdModule));
  if (m == NULL) {
    byoc_set_last_error("dnnl: out of memory");
    return -1;
  }
  if (bd_parse(json, len, m) != 0) {
    bd_free(m);
    return -1;
  }
  *out_module = m;
  return 0;
}

void byoc_dnnl_module_destroy(void* module) { bd_free((BdModule*)module); }

int32_t byoc_dnnl_module_bind_constants(void* module, const ByocConstant* consts, int32_t num_consts) {
  BdModule* m = (BdModule*)module;
  int32_t i, j;
  if (m == NULL || (consts == NULL && num_consts > 0) || num_consts < 0) {
    byoc_set_last_error("byoc_dnnl_module_bind_constants: module and constants must not be NULL");
    return -1;
  }
  if (m->built) return bd_fail(m, -1, "constants bound after the primitives were built");
  for (j = 0; j < num_consts; ++j) {
    int found = 0;
    if (consts[j].name == NULL || consts[j].data == NULL) return bd_fail(m, -1, "constant %d has no name or data", (int)j);
    for (i = 0; i < m->num_nodes; ++i) {
      BdNode* n = &m->nodes[i];
      if (n->kind != BD_CONST || strcmp(n->name, consts[j].name) != 0) continue;
      found = 1;
      if (consts[j].nbytes != (uint64_t)n->numel * sizeof(float)) {
        return bd_fail(m, i, "bound to %llu bytes, but its shape needs %llu", (unsigned long long)consts[j].nbytes,
                       (unsigned long long)n->numel * sizeof(float));
      }
      if (n->data == NULL) ++m->num_bound;
      n->data = consts[j].data;
    }
    if (!found) return bd_fail(m, -1, "the model binds constant '%.200s', which no const node names", consts[j].name);
  }
  return 0;
}

/* The packed function: inputs then outputs as DLTensors, checked; handles set; the steps executed. */
static int32_t call_region(const ByocValue* args, const int32_t* type_codes, int32_t num_args, void* resource_handle) {
  BdModule* m = (BdModule*)resource_handle;
  char what[320];
  int32_t i;
  if (m == NULL || !m->built) {
    byoc_set_last_error("dnnl: region function called without its module");
    return -1;
  }
  if (byoc_check_packed_args(m->symbol, type_codes, num_args, m->num_inputs + m->num_outputs) != 0) return -1;
  if (args == NULL) {
    byoc_set_last_error("%s: argument array is NULL", m->symbol);
    return -1;
  }
  for (i = 0; i < num_args; ++i) {
    const DLTensor* dl = (const DLTensor*)args[i].v_handle;
    int is_out = i >= m->num_inputs;
    const BdNode* n = &m->nodes[is_out ? m->heads[i - m->num_inputs] : m->input_nodes[i]];
    snprintf(what, sizeof(what), "%s %s %d", m->symbol, is_out ? "output" : "input",
             (int)(is_out ? i - m->num_inputs : i));
    if (byoc_check_dltensor(dl, what, n->ndim, n->shape, BYOC_DTYPE_FLOAT32) != 0) return -1;
  }
  for (i = 0; i < num_args; ++i) {
    const DLTensor* dl = (const DLTensor*)args[i].v_handle;
    void* data = (char*)dl->data + dl->byte_offset;
    dnnl_memory_t mem = i < m->num_inputs ? m->nodes[m->input_nodes[i]].mem : m->out_mems[i - m->num_inputs];
    if (dnnl_memory_set_data_handle(mem, data) != dnnl_success) {
      byoc_set_last_error("%s: oneDNN rejected the buffer of argument %d", m->symbol, (int)i);
      return -1;
    }
  }
  for (i = 0; i < m->num_aliases; ++i) {
    void* data = NULL;
    if (dnnl_memory_get_data_handle(m->aliases[i].input, &data) != dnnl_success ||
        dnnl_memory_set_data_handle(m->aliases[i].view, (char*)data + m->aliases[i].at) != dnnl_success) {
      byoc_set_last_error("%s: oneDNN rejected a view of an input", m->symbol);
      return -1;
    }
  }
  bd_follow_thread_count();
  for (i = 0; i < m->num_steps; ++i) {
    const BdStep* s = &m->steps[i];
    if (s->prim == NULL) {
      /* oneDNN's CPU primitives have returned by now (an in-order stream over OpenMP runs them in the call) */
      if (s->kernel(s) != 0) return -1;
      continue;
    }
    if (dnnl_primitive_execute(s->prim, m->stream, s->nargs, s->args) != dnnl_success) {
      byoc_set_last_error("%s: oneDNN failed executing step %d", m->symbol, (int)i);
      return -1;
    }
  }
  if (dnnl_stream_wait(m->stream) != dnnl_success) {
    byoc_set_last_error("%s: oneDNN stream wait failed", m->symbol);
    return -1;
  }
  return 0;
}

int32_t byoc_dnnl_module_get_function(void* module, const char* symbol, ByocPackedFunc* out_fn, void** out_resource) {
  BdModule* m = (BdModule*)module;
  if (out_fn == NULL || out_resource == NULL || m == NULL || symbol == NULL) {
    byoc_set_last_error("byoc_dnnl_module_get_function: module, symbol, out_fn and out_resource must not be NULL");
    return -1;
  }
  *out_fn = NULL;
  *out_resource = NULL;
  if (strcmp(symbol, m->symbol) != 0) {
    byoc_set_last_error("dnnl: no region '%.200s' in this module (it holds '%.200s')", symbol, m->symbol);
    return -1;
  }
  if (!m->built && bd_build(m) != 0) return -1;
  *out_fn = call_region;
  *out_resource = m;
  return 0;
}

int32_t byoc_dnnl_module_num_inputs(const void* module) { return module ? ((const BdModule*)module)->num_inputs : 0; }

int32_t byoc_dnnl_module_num_outputs(const void* module) { return module ? ((const BdModule*)module)->num_outputs : 0; }

int32_t byoc_dnnl_module_tensor_shape(const void* module, int32_t is_output, int32_t index, int32_t* ndim,
                                      const int64_t** shape) {
  const BdModule* m = (const BdModule*)module;
  const BdNode* n;
  if (m == NULL || ndim == NULL || shape == NULL || index < 0 || index >= (is_output ? m->num_outputs : m->num_inputs)) {
    byoc_set_last_error("dnnl: no %s %d", is_output ? "output" : "input", (int)index);
    return -1;
  }
  n = &m->nodes[is_output ? m->heads[index] : m->input_nodes[index]];
  *ndim = n->ndim;
  *shape = n->shape;
  return 0;
}

int32_t byoc_dnnl_module_num_constants(const void* module) { return module ? ((const BdModule*)module)->num_consts : 0; }

const char* byoc_dnnl_module_constant(const void* module, int32_t index, uint64_t* nbytes) {
  const BdModule* m = (const BdModule*)module;
  int32_t i, k = 0;
  if (m == NULL) return NULL;
  for (i = 0; i < m->num_nodes; ++i) {
    if (m->nodes[i].kind != BD_CONST) continue;
    if (k++ == index) {
      if (nbytes != NULL) *nbytes = (uint64_t)m->nodes[i].numel * sizeof(float);
      return m->nodes[i].name;
    }
  }
  return NULL;
}

int32_t byoc_dnnl_module_num_steps(const void* module) { return module ? ((const BdModule*)module)->num_steps : 0; }

const ByocModuleKind byoc_module_kind_dnnl = {"dnnl", byoc_dnnl_module_create, byoc_dnnl_module_get_function,
                                             byoc_dnnl_module_destroy, byoc_dnnl_module_bind_constants};
