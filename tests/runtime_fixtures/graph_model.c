/* Hand-written graph-executor model for the runtime tests (stands in for generated code).
 * graph_model_data.h (written by the tests) defines kGraphJson and kParams.
 *   out0 = relu(x + y + p0) ; out1 = -relu(x + y + p0); relu fails on NaN (to test run errors). */
#include <string.h>

#include "byoc/graph_executor.h"
#include "byoc/runtime.h"
#include "graph_model_data.h"

static const int64_t kShape23[2] = {2, 3};
static const int64_t kShape3[1] = {3};

static int32_t check_args(const char* f, const ByocValue* args, const int32_t* codes, int32_t n, int32_t want,
                          const int64_t* const* shapes, const int32_t* ndims) {
  int32_t i;
  char what[64];
  if (byoc_check_packed_args(f, codes, n, want) != 0) return -1;
  for (i = 0; i < n; ++i) {
    strcpy(what, f);
    strcat(what, " argument");
    if (byoc_check_dltensor((const DLTensor*)args[i].v_handle, what, ndims[i], shapes[i], BYOC_DTYPE_FLOAT32) != 0)
      return -1;
  }
  return 0;
}

#define DATA(i) ((float*)((const DLTensor*)args[i].v_handle)->data)

static int32_t k_add(const ByocValue* args, const int32_t* codes, int32_t n, void* res) {
  static const int64_t* const shapes[3] = {kShape23, kShape23, kShape23};
  static const int32_t ndims[3] = {2, 2, 2};
  int i;
  (void)res;
  if (check_args("k_add", args, codes, n, 3, shapes, ndims) != 0) return -1;
  for (i = 0; i < 6; ++i) DATA(2)[i] = DATA(0)[i] + DATA(1)[i];
  return 0;
}

static int32_t k_bias_add(const ByocValue* args, const int32_t* codes, int32_t n, void* res) {
  static const int64_t* const shapes[3] = {kShape23, kShape3, kShape23};
  static const int32_t ndims[3] = {2, 1, 2};
  int i;
  (void)res;
  if (check_args("k_bias_add", args, codes, n, 3, shapes, ndims) != 0) return -1;
  for (i = 0; i < 6; ++i) DATA(2)[i] = DATA(0)[i] + DATA(1)[i % 3];
  return 0;
}

static int32_t k_relu(const ByocValue* args, const int32_t* codes, int32_t n, void* res) {
  static const int64_t* const shapes[2] = {kShape23, kShape23};
  static const int32_t ndims[2] = {2, 2};
  int i;
  (void)res;
  if (check_args("k_relu", args, codes, n, 2, shapes, ndims) != 0) return -1;
  for (i = 0; i < 6; ++i) {
    float v = DATA(0)[i];
    if (v != v) {
      byoc_set_last_error("k_relu: NaN at element %d", i);
      return -1;
    }
    DATA(1)[i] = v > 0.0f ? v : 0.0f;
  }
  return 0;
}

/* one input, two outputs: (2a, -a) */
static int32_t k_split2(const ByocValue* args, const int32_t* codes, int32_t n, void* res) {
  static const int64_t* const shapes[3] = {kShape23, kShape23, kShape23};
  static const int32_t ndims[3] = {2, 2, 2};
  int i;
  (void)res;
  if (check_args("k_split2", args, codes, n, 3, shapes, ndims) != 0) return -1;
  for (i = 0; i < 6; ++i) {
    DATA(1)[i] = 2.0f * DATA(0)[i];
    DATA(2)[i] = -DATA(0)[i];
  }
  return 0;
}

static const ByocFuncEntry kFuncs[] = {
    {"k_add", k_add, NULL}, {"k_bias_add", k_bias_add, NULL}, {"k_relu", k_relu, NULL}, {"k_split2", k_split2, NULL}};

static const ByocTensorInfo kInputs[] = {{"x", 2, kShape23, {kDLFloat, 32, 1}}, {"y", 2, kShape23, {kDLFloat, 32, 1}}};
static const ByocTensorInfo kOutputs[] = {{"out0", 2, kShape23, {kDLFloat, 32, 1}},
                                          {"out1", 2, kShape23, {kDLFloat, 32, 1}}};
static ByocGraph* g_graph;
static const ByocModelDesc kDesc;

static int32_t model_init(void) {
  if (g_graph != NULL) return 0;
  if (byoc_graph_create(kGraphJson, sizeof(kGraphJson) - 1, kParams, sizeof(kParams), kFuncs,
                        (int32_t)(sizeof(kFuncs) / sizeof(kFuncs[0])), &g_graph) != 0)
    return -1;
  if (byoc_graph_check_signature(g_graph, &kDesc) != 0) {
    byoc_graph_destroy(g_graph);
    g_graph = NULL;
    return -1;
  }
  return 0;
}

static int32_t model_run(void* const* inputs, void* const* outputs) { return byoc_graph_run(g_graph, inputs, outputs); }

static void model_deinit(void) {
  byoc_graph_destroy(g_graph);
  g_graph = NULL;
}

static const ByocModelDesc kDesc = {"graph_fixture", "graph", "packed", 2, kInputs, 2, kOutputs, 192,
                                    model_init, model_run, model_deinit, NULL, NULL, NULL, NULL};

const ByocModelDesc* byoc_model_desc(void) { return &kDesc; }
