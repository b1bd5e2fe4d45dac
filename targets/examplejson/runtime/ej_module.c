/* ExampleJSON module: the ByocModuleKind the build links, packed calls of subgraphs, loading from files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ej_internal.h"

#define EJ_MAX_FILE_BYTES ((long)1 << 30)

int32_t examplejson_module_create(const char* text, size_t len, void** out_module) {
  EjModule* m = NULL;
  if (out_module == NULL) {
    byoc_set_last_error("examplejson_module_create: out_module is NULL");
    return -1;
  }
  *out_module = NULL;
  if (ej_parse_module(text, len, &m) != 0) return -1;
  *out_module = m;
  return 0;
}

void examplejson_module_destroy(void* module) { ej_free_module((EjModule*)module); }

static const EjSubgraph* find_subgraph(const EjModule* m, const char* symbol) {
  int32_t i;
  if (m == NULL || symbol == NULL) {
    byoc_set_last_error("examplejson: %s is NULL", m == NULL ? "module" : "symbol");
    return NULL;
  }
  for (i = 0; i < m->num_subgraphs; ++i) {
    if (strcmp(m->subgraphs[i].name, symbol) == 0) return &m->subgraphs[i];
  }
  byoc_set_last_error("examplejson: no subgraph '%.200s' in this module (it has %d, the first is '%.200s')", symbol,
                      (int)m->num_subgraphs, m->num_subgraphs > 0 ? m->subgraphs[0].name : "");
  return NULL;
}

/* The guide's Run: bind the inputs, run every node in order, copy the outputs out. */
static int32_t call_subgraph(const ByocValue* args, const int32_t* type_codes, int32_t num_args,
                             void* resource_handle) {
  EjSubgraph* s = (EjSubgraph*)resource_handle;
  EjTensor* t = NULL;
  const EjTensor* ins[EJ_MAX_OP_INPUTS];
  char what[320];
  int32_t i, j;
  if (s == NULL) {
    byoc_set_last_error("examplejson: subgraph function called without its resource handle");
    return -1;
  }
  if (byoc_check_packed_args(s->name, type_codes, num_args, s->num_inputs + s->num_outputs) != 0) return -1;
  if (args == NULL) {
    byoc_set_last_error("%s: argument array is NULL", s->name);
    return -1;
  }
  for (i = 0; i < num_args; ++i) {
    const DLTensor* dl = (const DLTensor*)args[i].v_handle;
    int is_out = i >= s->num_inputs;
    t = &s->tensors[is_out ? s->outputs[i - s->num_inputs] : s->inputs[i]];
    snprintf(what, sizeof(what), "%s %s %d", s->name, is_out ? "output" : "input",
             (int)(is_out ? i - s->num_inputs : i));
    if (byoc_check_dltensor(dl, what, t->ndim, t->shape, t->dtype) != 0) return -1;
  }
  for (i = 0; i < s->num_inputs; ++i) {
    const DLTensor* dl = (const DLTensor*)args[i].v_handle;
    s->tensors[s->inputs[i]].data = (float*)(void*)((char*)dl->data + dl->byte_offset);
  }
  for (i = 0; i < s->num_nodes; ++i) {
    const EjNode* n = &s->nodes[i];
    for (j = 0; j < n->num_inputs; ++j) ins[j] = &s->tensors[n->in[j]];
    n->op->kernel(n, ins, &s->tensors[n->out]);
  }
  for (i = 0; i < s->num_outputs; ++i) {
    const DLTensor* dl = (const DLTensor*)args[s->num_inputs + i].v_handle;
    t = &s->tensors[s->outputs[i]];
    memmove((char*)dl->data + dl->byte_offset, t->data, (size_t)t->numel * sizeof(float));
  }
  for (i = 0; i < s->num_inputs; ++i) s->tensors[s->inputs[i]].data = NULL; /* never keep a caller's pointer */
  return 0;
}

int32_t examplejson_module_get_function(void* module, const char* symbol, ByocPackedFunc* out_fn,
                                        void** out_resource) {
  const EjSubgraph* s;
  if (out_fn == NULL || out_resource == NULL) {
    byoc_set_last_error("examplejson_module_get_function: out_fn and out_resource must not be NULL");
    return -1;
  }
  *out_fn = NULL;
  *out_resource = NULL;
  s = find_subgraph((const EjModule*)module, symbol);
  if (s == NULL) return -1;
  *out_fn = call_subgraph;
  *out_resource = (void*)(uintptr_t)s;
  return 0;
}

int32_t examplejson_module_load_file(const char* path, void** out_module) {
  FILE* f;
  char* buf = NULL;
  size_t cap = 0, len = 0, got;
  int32_t rc;
  if (out_module == NULL || path == NULL) {
    byoc_set_last_error("examplejson_module_load_file: path and out_module must not be NULL");
    return -1;
  }
  *out_module = NULL;
  f = fopen(path, "rb");
  if (f == NULL) {
    byoc_set_last_error("examplejson: cannot open '%.400s': %s", path, strerror(errno));
    return -1;
  }
  do { /* read in growing chunks: works for pipes and files alike */
    if (len == cap) {
      char* bigger;
      cap = cap ? cap * 2 : 65536;
      if (cap > (size_t)EJ_MAX_FILE_BYTES) {
        byoc_set_last_error("examplejson: '%.400s' is larger than %ld bytes", path, EJ_MAX_FILE_BYTES);
        free(buf);
        fclose(f);
        return -1;
      }
      bigger = (char*)realloc(buf, cap);
      if (bigger == NULL) {
        byoc_set_last_error("examplejson: out of memory reading '%.400s'", path);
        free(buf);
        fclose(f);
        return -1;
      }
      buf = bigger;
    }
    got = fread(buf + len, 1, cap - len, f);
    len += got;
  } while (got > 0);
  if (ferror(f)) {
    byoc_set_last_error("examplejson: error reading '%.400s'", path);
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  rc = examplejson_module_create(buf, len, out_module);
  free(buf);
  if (rc != 0) {
    char msg[BYOC_LAST_ERROR_SIZE];
    snprintf(msg, sizeof(msg), "%s", byoc_get_last_error());
    byoc_set_last_error("%.300s: %s", path, msg);
  }
  return rc;
}

const char* examplejson_module_get_source(const void* module, size_t* len) {
  const EjModule* m = (const EjModule*)module;
  if (len != NULL) *len = m ? m->text_len : 0;
  return m ? m->text : NULL;
}

int32_t examplejson_module_num_subgraphs(const void* module) {
  return module ? ((const EjModule*)module)->num_subgraphs : 0;
}

const char* examplejson_module_subgraph_name(const void* module, int32_t index) {
  const EjModule* m = (const EjModule*)module;
  if (m == NULL || index < 0 || index >= m->num_subgraphs) return NULL;
  return m->subgraphs[index].name;
}

int32_t examplejson_module_num_inputs(const void* module, const char* symbol) {
  const EjSubgraph* s = find_subgraph((const EjModule*)module, symbol);
  return s ? s->num_inputs : -1;
}

int32_t examplejson_module_num_outputs(const void* module, const char* symbol) {
  const EjSubgraph* s = find_subgraph((const EjModule*)module, symbol);
  return s ? s->num_outputs : -1;
}

int32_t examplejson_module_tensor_info(const void* module, const char* symbol, int32_t is_output, int32_t index,
                                       ExampleJsonTensorInfo* out) {
  const EjSubgraph* s = find_subgraph((const EjModule*)module, symbol);
  const EjTensor* t;
  int32_t count;
  if (s == NULL) return -1;
  count = is_output ? s->num_outputs : s->num_inputs;
  if (out == NULL || index < 0 || index >= count) {
    byoc_set_last_error("examplejson: %s has %d %ss; index %d asked", s->name, (int)count,
                        is_output ? "output" : "input", (int)index);
    return -1;
  }
  t = &s->tensors[is_output ? s->outputs[index] : s->inputs[index]];
  out->ndim = t->ndim;
  out->shape = t->shape;
  out->dtype = t->dtype;
  return 0;
}

uint64_t examplejson_module_arena_bytes(const void* module) {
  return module ? ((const EjModule*)module)->arena_bytes : 0;
}

double examplejson_module_work(const void* module) { return module ? ((const EjModule*)module)->work : 0.0; }

const ByocModuleKind byoc_module_kind_examplejson = {
    "examplejson", examplejson_module_create, examplejson_module_get_function, examplejson_module_destroy,
    NULL /* constants travel in the text */};
