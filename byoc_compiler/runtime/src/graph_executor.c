/* Graph executor: validates a TVM-layout graph.json and a params blob, checks and allocates the storage
 * plan graph.json carries (storage_id per entry), runs tvm_op nodes in order through packed functions.
 * All allocation happens in byoc_graph_create. */
#include "byoc/graph_executor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "params.h"

#define MAX_NODES (1 << 22)
#define MAX_NDIM 32
#define STORAGE_ALIGN 64u /* = backend/memory_plan.py ALIGNMENT: the build reports what this allocates */

typedef struct {
  int is_op;
  char* name;
  const ByocFuncEntry* fn;
  int32_t num_inputs, num_outputs;
  int32_t param; /* index into params, -1 if none (null nodes) */
  ByocValue* args;
  int32_t* codes;
} Node;

struct ByocGraph {
  int32_t n_nodes;
  Node* nodes;
  int32_t* row_ptr; /* n_nodes + 1 */
  int32_t n_entries;
  DLTensor* tensors; /* one per entry */
  int64_t* shapes;   /* n_entries * MAX_NDIM */
  size_t* nbytes;
  int32_t* storage_id; /* one per entry, from graph.json */
  int32_t n_inputs;
  int32_t* input_nodes;
  int32_t n_outputs;
  int32_t* output_eids;
  ByocParams params;
  void* storage_raw;
  uint64_t workspace;
};

/* ---- override hook (runner --graph/--params) ------------------------------------------------ */
static struct {
  const char* json;
  size_t json_len;
  const unsigned char* params;
  size_t params_len;
  const ByocModelDesc* expect;
} g_override;

void byoc_graph_set_override(const char* json, size_t json_len, const unsigned char* params, size_t params_len,
                             const ByocModelDesc* expect) {
  g_override.json = json;
  g_override.json_len = json_len;
  g_override.params = params;
  g_override.params_len = params_len;
  g_override.expect = expect;
}

void byoc_graph_clear_override(void) { memset(&g_override, 0, sizeof(g_override)); }

/* ---- typed field access with messages naming the JSON path ---------------------------------- */
static const ByocJsonValue* field(const ByocJsonDoc* d, const ByocJsonValue* obj, const char* key,
                                  ByocJsonType type, const char* path) {
  const ByocJsonValue* v = byoc_json_get(d, obj, key);
  if (v == NULL) {
    byoc_set_last_error("graph.json: %s is missing field \"%s\"", path, key);
    return NULL;
  }
  if (v->type != type) {
    byoc_set_last_error("graph.json: %s.%s must be %s %s, got %s", path, key,
                        type == BYOC_JSON_ARRAY || type == BYOC_JSON_OBJECT ? "an" : "a", byoc_json_type_name(type),
                        byoc_json_type_name(v->type));
    return NULL;
  }
  return v;
}

/* Integer in [lo, hi] from a JSON integer or (TVM style) a decimal string. */
static int int_value(const ByocJsonValue* v, int64_t lo, int64_t hi, const char* path, int64_t* out) {
  int64_t x = 0;
  if (v->type == BYOC_JSON_NUMBER && v->is_int) {
    x = v->i;
  } else if (v->type == BYOC_JSON_STRING && v->len > 0 && v->len <= 18) {
    size_t k;
    for (k = 0; k < v->len; ++k) {
      if (v->str[k] < '0' || v->str[k] > '9') break;
      x = x * 10 + (v->str[k] - '0');
    }
    if (k != v->len) {
      byoc_set_last_error("graph.json: %s must be an integer, got \"%.40s\"", path, v->str);
      return -1;
    }
  } else {
    byoc_set_last_error("graph.json: %s must be an integer%s, got %s", path,
                        v->type == BYOC_JSON_NUMBER ? " that fits in 64 bits" : "", byoc_json_type_name(v->type));
    return -1;
  }
  if (x < lo || x > hi) {
    byoc_set_last_error("graph.json: %s = %lld is out of range [%lld, %lld]", path, (long long)x, (long long)lo,
                        (long long)hi);
    return -1;
  }
  *out = x;
  return 0;
}

/* attrs[key] of node `path` as an integer in [lo, hi]; absent is an error only if required. */
static int int_attr(const ByocJsonDoc* d, const ByocJsonValue* attrs, const char* key, int required, int64_t lo,
                    int64_t hi, const char* path, int64_t* out) {
  const ByocJsonValue* v = byoc_json_get(d, attrs, key);
  char sub[160];
  if (v == NULL) {
    if (!required) return 0;
    byoc_set_last_error("graph.json: %s.attrs is missing field \"%s\"", path, key);
    return -1;
  }
  snprintf(sub, sizeof(sub), "%s.attrs.%s", path, key);
  return int_value(v, lo, hi, sub, out);
}

/* A "list_xxx" attribute: ["list_xxx", [ ...n items ]] */
static const ByocJsonValue* tagged_list(const ByocJsonDoc* d, const ByocJsonValue* attrs, const char* key,
                                        const char* tag, int32_t n) {
  const ByocJsonValue* v = field(d, attrs, key, BYOC_JSON_ARRAY, "attrs");
  const ByocJsonValue* t;
  const ByocJsonValue* list;
  if (v == NULL) return NULL;
  t = byoc_json_child(d, v);
  if (v->count != 2 || t == NULL || t->type != BYOC_JSON_STRING || strcmp(t->str, tag) != 0) {
    byoc_set_last_error("graph.json: attrs.%s must be [\"%s\", [...]]", key, tag);
    return NULL;
  }
  list = byoc_json_next(d, t);
  if (list == NULL || list->type != BYOC_JSON_ARRAY) {
    byoc_set_last_error("graph.json: attrs.%s must be [\"%s\", [...]]", key, tag);
    return NULL;
  }
  if (list->count != n) {
    byoc_set_last_error("graph.json: attrs.%s must list %d entries (one per node output), got %d", key, (int)n,
                        (int)list->count);
    return NULL;
  }
  return list;
}

/* [nid, index] or [nid, index, version] -> entry id */
static int32_t entry_ref(const ByocGraph* g, const ByocJsonDoc* d, const ByocJsonValue* v, int32_t max_nid,
                         const char* path) {
  const ByocJsonValue* a;
  int64_t nid, index;
  if (v->type != BYOC_JSON_ARRAY || v->count < 2 || v->count > 3) {
    byoc_set_last_error("graph.json: %s must be [node_id, output_index] or [node_id, output_index, version]", path);
    return -1;
  }
  a = byoc_json_child(d, v);
  if (int_value(a, 0, max_nid, path, &nid) != 0) return -1;
  if (int_value(byoc_json_next(d, a), 0, INT32_MAX, path, &index) != 0) return -1;
  if (index >= g->nodes[nid].num_outputs) {
    byoc_set_last_error("graph.json: %s refers to output %lld of node %lld, which has %d output(s)", path,
                        (long long)index, (long long)nid, (int)g->nodes[nid].num_outputs);
    return -1;
  }
  return g->row_ptr[nid] + (int32_t)index;
}

static char* dup_str(const char* s, size_t n) {
  char* r = (char*)malloc(n + 1);
  if (r != NULL) {
    memcpy(r, s, n);
    r[n] = '\0';
  }
  return r;
}

static void* checked_calloc(size_t n, size_t size) {
  void* p = calloc(n ? n : 1u, size);
  if (p == NULL) byoc_set_last_error("graph executor: out of memory");
  return p;
}

void byoc_graph_destroy(ByocGraph* g) {
  int32_t i;
  if (g == NULL) return;
  for (i = 0; g->nodes != NULL && i < g->n_nodes; ++i) {
    free(g->nodes[i].name);
    free(g->nodes[i].args);
    free(g->nodes[i].codes);
  }
  free(g->nodes);
  free(g->row_ptr);
  free(g->tensors);
  free(g->shapes);
  free(g->nbytes);
  free(g->storage_id);
  free(g->input_nodes);
  free(g->output_eids);
  byoc_params_free(&g->params);
  free(g->storage_raw);
  free(g);
}

/* ---- parsing stages -------------------------------------------------------------------------- */
static int32_t parse_nodes(ByocGraph* g, const ByocJsonDoc* d, const ByocJsonValue* nodes,
                           const ByocFuncEntry* funcs, int32_t n_funcs) {
  const ByocJsonValue* n;
  int32_t i = 0;
  char path[96];
  g->n_nodes = nodes->count;
  g->nodes = (Node*)checked_calloc((size_t)g->n_nodes, sizeof(Node));
  if (g->nodes == NULL) return -1;
  for (n = byoc_json_child(d, nodes); n != NULL; n = byoc_json_next(d, n), ++i) {
    const ByocJsonValue *op, *name, *inputs, *attrs;
    Node* node = &g->nodes[i];
    node->param = -1;
    snprintf(path, sizeof(path), "nodes[%d]", (int)i);
    if (n->type != BYOC_JSON_OBJECT) {
      byoc_set_last_error("graph.json: %s must be an object, got %s", path, byoc_json_type_name(n->type));
      return -1;
    }
    if ((op = field(d, n, "op", BYOC_JSON_STRING, path)) == NULL) return -1;
    if ((name = field(d, n, "name", BYOC_JSON_STRING, path)) == NULL) return -1;
    if ((inputs = field(d, n, "inputs", BYOC_JSON_ARRAY, path)) == NULL) return -1;
    node->name = dup_str(name->str, name->len);
    if (node->name == NULL) {
      byoc_set_last_error("graph executor: out of memory");
      return -1;
    }
    if (strcmp(op->str, "null") == 0) {
      node->num_outputs = 1;
      if (inputs->count != 0) {
        byoc_set_last_error("graph.json: %s ('%.100s') is a \"null\" node but has inputs", path, node->name);
        return -1;
      }
    } else if (strcmp(op->str, "tvm_op") == 0) {
      const ByocJsonValue* fname;
      int64_t x;
      char sub[128];
      node->is_op = 1;
      if ((attrs = field(d, n, "attrs", BYOC_JSON_OBJECT, path)) == NULL) return -1;
      snprintf(sub, sizeof(sub), "%s.attrs", path);
      if ((fname = field(d, attrs, "func_name", BYOC_JSON_STRING, sub)) == NULL) return -1;
      if (int_attr(d, attrs, "num_inputs", 1, 0, 1 << 20, path, &x) != 0) return -1;
      node->num_inputs = (int32_t)x;
      if (int_attr(d, attrs, "num_outputs", 1, 1, 1 << 20, path, &x) != 0) return -1;
      node->num_outputs = (int32_t)x;
      if (int_attr(d, attrs, "flatten_data", 0, 0, 1, path, &x) != 0) return -1;
      if (inputs->count != node->num_inputs) {
        byoc_set_last_error("graph.json: %s ('%.100s') has num_inputs %d but lists %d inputs", path, node->name,
                            (int)node->num_inputs, (int)inputs->count);
        return -1;
      }
      node->fn = byoc_lookup_function(funcs, n_funcs, fname->str);
      if (node->fn == NULL || node->fn->fn == NULL) {
        byoc_set_last_error("graph.json: %s ('%.100s') calls func_name '%.100s', which is not in the model's "
                            "function table (%d functions)", path, node->name, fname->str, (int)n_funcs);
        return -1;
      }
    } else {
      byoc_set_last_error("graph.json: %s.op must be \"null\" or \"tvm_op\", got \"%.40s\"", path, op->str);
      return -1;
    }
  }
  return 0;
}

static int32_t parse_row_ptr(ByocGraph* g, const ByocJsonDoc* d, const ByocJsonValue* root) {
  const ByocJsonValue* rp = field(d, root, "node_row_ptr", BYOC_JSON_ARRAY, "the top level");
  const ByocJsonValue* v;
  int32_t i = 0;
  int64_t total = 0;
  if (rp == NULL) return -1;
  if (rp->count != g->n_nodes + 1) {
    byoc_set_last_error("graph.json: node_row_ptr must have %d entries (nodes + 1), got %d", (int)g->n_nodes + 1,
                        (int)rp->count);
    return -1;
  }
  g->row_ptr = (int32_t*)checked_calloc((size_t)g->n_nodes + 1, sizeof(int32_t));
  if (g->row_ptr == NULL) return -1;
  for (v = byoc_json_child(d, rp); v != NULL; v = byoc_json_next(d, v), ++i) {
    int64_t x;
    char path[64];
    snprintf(path, sizeof(path), "node_row_ptr[%d]", (int)i);
    if (int_value(v, 0, INT32_MAX, path, &x) != 0) return -1;
    if (x != total) {
      byoc_set_last_error("graph.json: node_row_ptr[%d] = %lld but the nodes before it have %lld outputs", (int)i,
                          (long long)x, (long long)total);
      return -1;
    }
    g->row_ptr[i] = (int32_t)x;
    if (i < g->n_nodes) total += g->nodes[i].num_outputs;
    if (total > MAX_NODES) {
      byoc_set_last_error("graph.json: too many node outputs (> %d)", MAX_NODES);
      return -1;
    }
  }
  g->n_entries = (int32_t)total;
  return 0;
}

static int32_t parse_attrs(ByocGraph* g, const ByocJsonDoc* d, const ByocJsonValue* root) {
  const ByocJsonValue* attrs = field(d, root, "attrs", BYOC_JSON_OBJECT, "the top level");
  const ByocJsonValue *dl, *sh, *sid, *v;
  int32_t e;
  char path[64];
  if (attrs == NULL) return -1;
  if ((dl = tagged_list(d, attrs, "dltype", "list_str", g->n_entries)) == NULL) return -1;
  if ((sh = tagged_list(d, attrs, "shape", "list_shape", g->n_entries)) == NULL) return -1;
  if (byoc_json_get(d, attrs, "storage_id") == NULL) {
    byoc_set_last_error("graph.json: attrs is missing field \"storage_id\" (the storage plan: one id per entry, "
                        "as TVM writes it); build the model again to write a graph.json that has one");
    return -1;
  }
  if ((sid = tagged_list(d, attrs, "storage_id", "list_int", g->n_entries)) == NULL) return -1;
  g->tensors = (DLTensor*)checked_calloc((size_t)g->n_entries, sizeof(DLTensor));
  g->shapes = (int64_t*)checked_calloc((size_t)g->n_entries * MAX_NDIM, sizeof(int64_t));
  g->nbytes = (size_t*)checked_calloc((size_t)g->n_entries, sizeof(size_t));
  g->storage_id = (int32_t*)checked_calloc((size_t)g->n_entries, sizeof(int32_t));
  if (g->tensors == NULL || g->shapes == NULL || g->nbytes == NULL || g->storage_id == NULL) return -1;
  for (e = 0, v = byoc_json_child(d, dl); v != NULL; v = byoc_json_next(d, v), ++e) {
    DLTensor* t = &g->tensors[e];
    if (v->type != BYOC_JSON_STRING || byoc_dtype_parse(v->str, v->len, &t->dtype) != 0 ||
        (t->dtype.bits % 8 != 0 && !(t->dtype.bits == 1 && t->dtype.code == kDLUInt))) {
      byoc_set_last_error("graph.json: attrs.dltype[%d] must be a dtype string such as \"float32\", got %s%.40s%s",
                          (int)e, v->type == BYOC_JSON_STRING ? "\"" : "",
                          v->type == BYOC_JSON_STRING ? v->str : byoc_json_type_name(v->type),
                          v->type == BYOC_JSON_STRING ? "\"" : "");
      return -1;
    }
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;
    t->shape = &g->shapes[(size_t)e * MAX_NDIM];
  }
  for (e = 0, v = byoc_json_child(d, sh); v != NULL; v = byoc_json_next(d, v), ++e) {
    DLTensor* t = &g->tensors[e];
    const ByocJsonValue* dim;
    int64_t numel;
    int32_t k = 0;
    if (v->type != BYOC_JSON_ARRAY || v->count > MAX_NDIM) {
      byoc_set_last_error("graph.json: attrs.shape[%d] must be an array of at most %d dimensions", (int)e, MAX_NDIM);
      return -1;
    }
    for (dim = byoc_json_child(d, v); dim != NULL; dim = byoc_json_next(d, dim), ++k) {
      snprintf(path, sizeof(path), "attrs.shape[%d][%d]", (int)e, (int)k);
      if (dim->type != BYOC_JSON_NUMBER) {
        byoc_set_last_error("graph.json: %s must be an integer, got %s", path, byoc_json_type_name(dim->type));
        return -1;
      }
      if (int_value(dim, 0, INT32_MAX, path, &t->shape[k]) != 0) return -1;
    }
    t->ndim = k;
    numel = byoc_shape_numel(t->ndim, t->shape);
    if (numel < 0 || (uint64_t)numel > (uint64_t)(SIZE_MAX / 2) / (byoc_dtype_bytes(t->dtype) + 1)) {
      byoc_set_last_error("graph.json: attrs.shape[%d] is too large", (int)e);
      return -1;
    }
    g->nbytes[e] = (size_t)numel * byoc_dtype_bytes(t->dtype);
  }
  for (e = 0, v = byoc_json_child(d, sid); v != NULL; v = byoc_json_next(d, v), ++e) {
    int64_t x;
    snprintf(path, sizeof(path), "attrs.storage_id[%d]", (int)e);
    if (v->type != BYOC_JSON_NUMBER) {
      byoc_set_last_error("graph.json: %s must be an integer, got %s", path, byoc_json_type_name(v->type));
      return -1;
    }
    /* at most one storage id per entry: ids index per-id tables sized by the entries */
    if (int_value(v, 0, g->n_entries - 1, path, &x) != 0) return -1;
    g->storage_id[e] = (int32_t)x;
  }
  return 0;
}

static int32_t parse_edges(ByocGraph* g, const ByocJsonDoc* d, const ByocJsonValue* nodes) {
  const ByocJsonValue* n;
  int32_t i = 0;
  char path[96];
  for (n = byoc_json_child(d, nodes); n != NULL; n = byoc_json_next(d, n), ++i) {
    Node* node = &g->nodes[i];
    const ByocJsonValue* in;
    int32_t k = 0, nargs;
    if (!node->is_op) continue;
    nargs = node->num_inputs + node->num_outputs;
    node->args = (ByocValue*)checked_calloc((size_t)nargs, sizeof(ByocValue));
    node->codes = (int32_t*)checked_calloc((size_t)nargs, sizeof(int32_t));
    if (node->args == NULL || node->codes == NULL) return -1;
    for (in = byoc_json_child(d, byoc_json_get(d, n, "inputs")); in != NULL; in = byoc_json_next(d, in), ++k) {
      int32_t eid;
      if (i == 0) break;
      snprintf(path, sizeof(path), "nodes[%d].inputs[%d]", (int)i, (int)k);
      /* inputs must come from earlier nodes: the node order is the execution order */
      eid = entry_ref(g, d, in, i - 1, path);
      if (eid < 0) return -1;
      node->args[k].v_handle = &g->tensors[eid];
      node->codes[k] = BYOC_ARG_DLTENSOR;
    }
    if (k != node->num_inputs) {
      byoc_set_last_error("graph.json: nodes[%d] (first node) cannot have inputs", (int)i);
      return -1;
    }
    for (k = 0; k < node->num_outputs; ++k) {
      node->args[node->num_inputs + k].v_handle = &g->tensors[g->row_ptr[i] + k];
      node->codes[node->num_inputs + k] = BYOC_ARG_DLTENSOR;
    }
  }
  return 0;
}

typedef struct {
  const char* name;
  int32_t node;
} NamedNode;

static int cmp_named(const void* a, const void* b) {
  const NamedNode* x = (const NamedNode*)a;
  const NamedNode* y = (const NamedNode*)b;
  int c = strcmp(x->name, y->name);
  return c != 0 ? c : (x->node > y->node) - (x->node < y->node);
}

/* Binds every params tensor to the "null" node of the same name (sorted names: big graphs stay fast). */
static int32_t parse_params(ByocGraph* g, const unsigned char* blob, size_t len) {
  uint32_t p;
  int32_t i, n_null = 0, rc = -1;
  char a[40], b[40];
  NamedNode* index;
  if (blob == NULL && len == 0) return 0; /* a model without params */
  if (byoc_params_load(blob, len, &g->params) != 0) return -1;
  index = (NamedNode*)checked_calloc((size_t)g->n_nodes, sizeof(NamedNode));
  if (index == NULL) return -1;
  for (i = 0; i < g->n_nodes; ++i) {
    if (!g->nodes[i].is_op) {
      index[n_null].name = g->nodes[i].name;
      index[n_null++].node = i;
    }
  }
  qsort(index, (size_t)n_null, sizeof(NamedNode), cmp_named);
  for (p = 0; p < g->params.count; ++p) {
    const ByocParam* t = &g->params.items[p];
    int32_t lo = 0, hi = n_null, found;
    DLTensor* e;
    while (lo < hi) { /* first entry with name >= t->name */
      int32_t mid = lo + (hi - lo) / 2;
      if (strcmp(index[mid].name, t->name) < 0) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= n_null || strcmp(index[lo].name, t->name) != 0) {
      byoc_set_last_error("params blob: tensor '%.100s' matches no \"null\" node of graph.json", t->name);
      goto done;
    }
    found = index[lo].node;
    if (lo + 1 < n_null && strcmp(index[lo + 1].name, t->name) == 0) {
      byoc_set_last_error("graph.json: nodes %d and %d are both named '%.100s'", (int)found, (int)index[lo + 1].node,
                          t->name);
      goto done;
    }
    if (g->nodes[found].param >= 0) {
      byoc_set_last_error("params blob: tensor name '%.100s' appears twice", t->name);
      goto done;
    }
    e = &g->tensors[g->row_ptr[found]];
    if (!byoc_dtype_equal(e->dtype, t->dtype)) {
      byoc_set_last_error("params blob: tensor '%.100s' has dtype %s but graph.json says %s", t->name,
                          byoc_dtype_str(t->dtype, a, sizeof(a)), byoc_dtype_str(e->dtype, b, sizeof(b)));
      goto done;
    }
    if (e->ndim != t->ndim || memcmp(e->shape, t->shape, (size_t)t->ndim * sizeof(int64_t)) != 0) {
      char sa[160], sb[160];
      byoc_set_last_error("params blob: tensor '%.100s' has shape %s but graph.json says %s", t->name,
                          byoc_shape_str(t->ndim, t->shape, sa, sizeof(sa)),
                          byoc_shape_str(e->ndim, e->shape, sb, sizeof(sb)));
      goto done;
    }
    g->nodes[found].param = (int32_t)p;
    e->data = t->data;
  }
  rc = 0;
done:
  free(index);
  return rc;
}

static int32_t parse_io(ByocGraph* g, const ByocJsonDoc* d, const ByocJsonValue* root) {
  const ByocJsonValue* args = field(d, root, "arg_nodes", BYOC_JSON_ARRAY, "the top level");
  const ByocJsonValue* heads = field(d, root, "heads", BYOC_JSON_ARRAY, "the top level");
  const ByocJsonValue* v;
  unsigned char* seen;
  int32_t i, k = 0;
  char path[64];
  if (args == NULL || heads == NULL) return -1;
  seen = (unsigned char*)checked_calloc((size_t)g->n_nodes, 1);
  g->input_nodes = (int32_t*)checked_calloc((size_t)args->count, sizeof(int32_t));
  g->output_eids = (int32_t*)checked_calloc((size_t)heads->count, sizeof(int32_t));
  if (seen == NULL || g->input_nodes == NULL || g->output_eids == NULL) {
    free(seen);
    return -1;
  }
  for (v = byoc_json_child(d, args); v != NULL; v = byoc_json_next(d, v), ++k) {
    int64_t nid;
    snprintf(path, sizeof(path), "arg_nodes[%d]", (int)k);
    if (v->type != BYOC_JSON_NUMBER || int_value(v, 0, g->n_nodes - 1, path, &nid) != 0) {
      if (v->type != BYOC_JSON_NUMBER) byoc_set_last_error("graph.json: %s must be a node id", path);
      free(seen);
      return -1;
    }
    if (g->nodes[nid].is_op || seen[nid]) {
      byoc_set_last_error("graph.json: %s = %lld must name a distinct \"null\" node", path, (long long)nid);
      free(seen);
      return -1;
    }
    seen[nid] = 1;
    if (g->nodes[nid].param < 0) g->input_nodes[g->n_inputs++] = (int32_t)nid;
  }
  for (i = 0; i < g->n_nodes; ++i) {
    if (!g->nodes[i].is_op && !seen[i]) {
      byoc_set_last_error("graph.json: \"null\" node %d ('%.100s') is missing from arg_nodes", (int)i,
                          g->nodes[i].name);
      free(seen);
      return -1;
    }
  }
  free(seen);
  if (heads->count == 0) {
    byoc_set_last_error("graph.json: heads is empty (the graph has no outputs)");
    return -1;
  }
  for (k = 0, v = byoc_json_child(d, heads); v != NULL; v = byoc_json_next(d, v), ++k) {
    int32_t eid;
    snprintf(path, sizeof(path), "heads[%d]", (int)k);
    eid = entry_ref(g, d, v, g->n_nodes - 1, path);
    if (eid < 0) return -1;
    g->output_eids[g->n_outputs++] = eid;
  }
  return 0;
}

/* ---- storage: the plan of graph.json, checked, then allocated ---------------------------------
 * Each storage id of an intermediate is one STORAGE_ALIGN-aligned block as large as its largest entry,
 * laid out in id order (TVM's graph executor does the same per id). An input's or a param's id is its
 * own (its data is bound, never allocated). Two entries on one id must not be live at once: an entry is
 * live from the node writing it to the last node reading it, a head to the end. Checked in one pass in
 * node order: the id's previous entry must be dead before the next one is written. */
enum { SID_UNUSED = 0, SID_BOUND = 1, SID_STORAGE = 2 };

static int32_t check_storage(ByocGraph* g, const int32_t* last_use, size_t* sid_bytes) {
  int32_t* owner = (int32_t*)checked_calloc((size_t)g->n_entries, sizeof(int32_t));
  unsigned char* kind = (unsigned char*)checked_calloc((size_t)g->n_entries, 1);
  int32_t i, k, rc = -1;
  if (owner == NULL || kind == NULL) goto done;
  for (i = 0; i < g->n_nodes; ++i) {
    const Node* n = &g->nodes[i];
    for (k = 0; k < n->num_outputs; ++k) {
      int32_t eid = g->row_ptr[i] + k, s = g->storage_id[eid], prev = owner[s];
      if (kind[s] == SID_BOUND || (kind[s] == SID_STORAGE && !n->is_op)) {
        byoc_set_last_error("graph.json: attrs.storage_id[%d] = %d is also the storage of entry %d, and one of "
                            "them is an input or a param, which needs a storage id of its own", (int)eid, (int)s,
                            (int)prev);
        goto done;
      }
      if (kind[s] == SID_STORAGE && last_use[prev] >= i) {
        byoc_set_last_error("graph.json: entries %d and %d share storage_id %d while both are live (node %d "
                            "writes entry %d, entry %d is still %s node %d); the storage plan is wrong",
                            (int)prev, (int)eid, (int)s, (int)i, (int)eid, (int)prev,
                            last_use[prev] >= g->n_nodes ? "an output after" : "read by",
                            (int)(last_use[prev] >= g->n_nodes ? g->n_nodes - 1 : last_use[prev]));
        goto done;
      }
      owner[s] = eid;
      kind[s] = n->is_op ? SID_STORAGE : SID_BOUND;
      if (n->is_op && g->nbytes[eid] > sid_bytes[s]) sid_bytes[s] = g->nbytes[eid];
    }
  }
  for (i = 0; i < g->n_entries; ++i) {
    if (kind[i] != SID_STORAGE) sid_bytes[i] = (size_t)-1; /* no block for this id */
  }
  rc = 0;
done:
  free(owner);
  free(kind);
  return rc;
}

static int32_t bind_storage(ByocGraph* g) {
  int32_t* last_use = (int32_t*)checked_calloc((size_t)g->n_entries, sizeof(int32_t));
  size_t* sid_bytes = (size_t*)checked_calloc((size_t)g->n_entries, sizeof(size_t)); /* then: offsets */
  int32_t i, k, rc = -1;
  size_t total = 0;
  unsigned char* base;
  if (last_use == NULL || sid_bytes == NULL) goto done;
  for (i = 0; i < g->n_nodes; ++i) {
    const Node* n = &g->nodes[i];
    for (k = 0; n->is_op && k < n->num_inputs; ++k) last_use[(DLTensor*)n->args[k].v_handle - g->tensors] = i;
    for (k = 0; k < n->num_outputs; ++k) last_use[g->row_ptr[i] + k] = i; /* written here (maybe never read) */
  }
  for (k = 0; k < g->n_outputs; ++k) last_use[g->output_eids[k]] = g->n_nodes; /* live to the end */
  if (check_storage(g, last_use, sid_bytes) != 0) goto done;
  for (i = 0; i < g->n_entries; ++i) {
    size_t aligned;
    if (sid_bytes[i] == (size_t)-1) continue;
    aligned = (sid_bytes[i] + STORAGE_ALIGN - 1) / STORAGE_ALIGN * STORAGE_ALIGN;
    if (aligned < sid_bytes[i] || total > SIZE_MAX - aligned - STORAGE_ALIGN) {
      byoc_set_last_error("graph executor: storage size overflows");
      goto done;
    }
    sid_bytes[i] = total;
    total += aligned;
  }
  g->workspace = total;
  g->storage_raw = malloc(total + STORAGE_ALIGN);
  if (g->storage_raw == NULL) {
    byoc_set_last_error("graph executor: cannot allocate %llu bytes of storage", (unsigned long long)total);
    goto done;
  }
  byoc_advise_huge_pages(g->storage_raw, total + STORAGE_ALIGN); /* read through on every run, not yet written */
  base = (unsigned char*)g->storage_raw;
  base += (STORAGE_ALIGN - (uintptr_t)base % STORAGE_ALIGN) % STORAGE_ALIGN;
  for (i = 0; i < g->n_nodes; ++i) {
    for (k = 0; g->nodes[i].is_op && k < g->nodes[i].num_outputs; ++k) {
      int32_t eid = g->row_ptr[i] + k;
      g->tensors[eid].data = base + sid_bytes[g->storage_id[eid]];
    }
  }
  rc = 0;
done:
  free(last_use);
  free(sid_bytes);
  return rc;
}

static int32_t create_from(const char* json, size_t json_len, const unsigned char* params, size_t params_len,
                           const ByocFuncEntry* funcs, int32_t n_funcs, ByocGraph** out_graph) {
  ByocJsonDoc doc;
  const ByocJsonValue *root, *nodes;
  ByocGraph* g;
  int32_t rc = -1;
  if (byoc_json_parse(json, json_len, &doc) != 0) return -1;
  root = &doc.values[0];
  g = (ByocGraph*)checked_calloc(1, sizeof(ByocGraph));
  if (g == NULL) goto done;
  if (root->type != BYOC_JSON_OBJECT) {
    byoc_set_last_error("graph.json: the top level must be an object, got %s", byoc_json_type_name(root->type));
    goto done;
  }
  if ((nodes = field(&doc, root, "nodes", BYOC_JSON_ARRAY, "the top level")) == NULL) goto done;
  if (nodes->count == 0 || nodes->count > MAX_NODES) {
    byoc_set_last_error("graph.json: nodes must list 1..%d nodes, got %d", MAX_NODES, (int)nodes->count);
    goto done;
  }
  if (parse_nodes(g, &doc, nodes, funcs, n_funcs) != 0) goto done;
  if (parse_row_ptr(g, &doc, root) != 0) goto done;
  if (parse_attrs(g, &doc, root) != 0) goto done;
  if (parse_edges(g, &doc, nodes) != 0) goto done;
  if (parse_params(g, params, params_len) != 0) goto done;
  if (parse_io(g, &doc, root) != 0) goto done;
  if (bind_storage(g) != 0) goto done;
  rc = 0;
done:
  byoc_json_free(&doc);
  if (rc != 0) {
    byoc_graph_destroy(g);
    g = NULL;
  }
  *out_graph = g;
  return rc;
}

int32_t byoc_graph_create(const char* json, size_t json_len, const unsigned char* params, size_t params_len,
                          const ByocFuncEntry* funcs, int32_t n_funcs, ByocGraph** out_graph) {
  const ByocModelDesc* expect = g_override.expect;
  if (out_graph == NULL) {
    byoc_set_last_error("byoc_graph_create: out_graph is NULL");
    return -1;
  }
  *out_graph = NULL;
  if (g_override.json != NULL) {
    json = g_override.json;
    json_len = g_override.json_len;
  }
  if (g_override.params != NULL) {
    params = g_override.params;
    params_len = g_override.params_len;
  }
  if (create_from(json, json_len, params, params_len, funcs, n_funcs, out_graph) != 0) return -1;
  if (expect != NULL && byoc_graph_check_signature(*out_graph, expect) != 0) {
    byoc_graph_destroy(*out_graph);
    *out_graph = NULL;
    return -1;
  }
  return 0;
}

int32_t byoc_graph_run(ByocGraph* g, void* const* inputs, void* const* outputs) {
  int32_t i, step;
  if (g == NULL) {
    byoc_set_last_error("byoc_graph_run: graph is NULL (init failed or was not called)");
    return -1;
  }
  for (i = 0; i < g->n_inputs; ++i) {
    if (inputs == NULL || inputs[i] == NULL) {
      byoc_set_last_error("byoc_graph_run: input %d ('%.100s') is NULL", (int)i, g->nodes[g->input_nodes[i]].name);
      return -1;
    }
    g->tensors[g->row_ptr[g->input_nodes[i]]].data = inputs[i];
  }
  for (i = 0; i < g->n_outputs; ++i) {
    if (outputs == NULL || outputs[i] == NULL) {
      byoc_set_last_error("byoc_graph_run: output %d is NULL", (int)i);
      return -1;
    }
  }
  for (i = 0, step = 0; i < g->n_nodes; ++i) {
    const Node* n = &g->nodes[i];
    const ByocNodeObserver* obs = byoc_node_observer;
    if (!n->is_op) continue;
    if (obs != NULL && obs->enter != NULL) obs->enter(obs->ctx, step, n->name);
    if (n->fn->fn(n->args, n->codes, n->num_inputs + n->num_outputs, n->fn->resource) != 0) {
      char why[BYOC_LAST_ERROR_SIZE];
      memcpy(why, byoc_get_last_error(), sizeof(why));
      why[sizeof(why) - 1] = '\0';
      byoc_set_last_error("node %d ('%.100s', func %.100s) failed: %s", (int)i, n->name, n->fn->name, why);
      return -1;
    }
    /* a node's outputs are consecutive entries (node_row_ptr) */
    if (obs != NULL && obs->exit != NULL) {
      obs->exit(obs->ctx, step, n->name, n->num_outputs, &g->tensors[g->row_ptr[i]]);
    }
    ++step;
  }
  for (i = 0; i < g->n_outputs; ++i) {
    int32_t eid = g->output_eids[i];
    if (g->nbytes[eid] != 0 && outputs[i] != g->tensors[eid].data) {
      memmove(outputs[i], g->tensors[eid].data, g->nbytes[eid]);
    }
  }
  return 0;
}

int32_t byoc_graph_num_inputs(const ByocGraph* g) { return g == NULL ? 0 : g->n_inputs; }
int32_t byoc_graph_num_outputs(const ByocGraph* g) { return g == NULL ? 0 : g->n_outputs; }
uint64_t byoc_graph_workspace_bytes(const ByocGraph* g) { return g == NULL ? 0 : g->workspace; }

static void entry_info(const ByocGraph* g, int32_t eid, const char* name, ByocTensorInfo* info) {
  info->name = name;
  info->ndim = g->tensors[eid].ndim;
  info->shape = g->tensors[eid].shape;
  info->dtype = g->tensors[eid].dtype;
}

int32_t byoc_graph_input_info(const ByocGraph* g, int32_t i, ByocTensorInfo* info) {
  if (g == NULL || info == NULL || i < 0 || i >= g->n_inputs) return -1;
  entry_info(g, g->row_ptr[g->input_nodes[i]], g->nodes[g->input_nodes[i]].name, info);
  return 0;
}

int32_t byoc_graph_output_info(const ByocGraph* g, int32_t i, ByocTensorInfo* info) {
  if (g == NULL || info == NULL || i < 0 || i >= g->n_outputs) return -1;
  entry_info(g, g->output_eids[i], NULL, info);
  return 0;
}

static int32_t check_one(const char* kind, int32_t i, const ByocTensorInfo* want, const ByocTensorInfo* got) {
  char a[40], b[40];
  if (want->name != NULL && got->name != NULL && strcmp(want->name, got->name) != 0) {
    byoc_set_last_error("graph.json: %s %d is '%.100s' but the model descriptor says '%.100s'", kind, (int)i,
                        got->name, want->name);
    return -1;
  }
  if (!byoc_dtype_equal(want->dtype, got->dtype)) {
    byoc_set_last_error("graph.json: %s %d has dtype %s but the model descriptor says %s", kind, (int)i,
                        byoc_dtype_str(got->dtype, a, sizeof(a)), byoc_dtype_str(want->dtype, b, sizeof(b)));
    return -1;
  }
  if (want->ndim != got->ndim ||
      (want->ndim > 0 && memcmp(want->shape, got->shape, (size_t)want->ndim * sizeof(int64_t)) != 0)) {
    byoc_set_last_error("graph.json: %s %d has a different shape (ndim %d) from the model descriptor's (ndim %d)",
                        kind, (int)i, (int)got->ndim, (int)want->ndim);
    return -1;
  }
  return 0;
}

int32_t byoc_graph_check_signature(const ByocGraph* g, const ByocModelDesc* desc) {
  int32_t i;
  ByocTensorInfo info;
  if (g == NULL || desc == NULL) {
    byoc_set_last_error("byoc_graph_check_signature: NULL argument");
    return -1;
  }
  if (g->n_inputs != desc->num_inputs || g->n_outputs != desc->num_outputs) {
    byoc_set_last_error("graph.json: has %d inputs and %d outputs but the model descriptor has %d and %d",
                        (int)g->n_inputs, (int)g->n_outputs, (int)desc->num_inputs, (int)desc->num_outputs);
    return -1;
  }
  for (i = 0; i < g->n_inputs; ++i) {
    byoc_graph_input_info(g, i, &info);
    if (check_one("input", i, &desc->inputs[i], &info) != 0) return -1;
  }
  for (i = 0; i < g->n_outputs; ++i) {
    byoc_graph_output_info(g, i, &info);
    if (check_one("output", i, &desc->outputs[i], &info) != 0) return -1;
  }
  return 0;
}
