/* Fuzz target: the graph executor's loader (graph.json via json.c + the params blob) and, for graphs that
 * load, one run. The input is graph.json followed by an optional params blob (split at the blob's magic
 * "BYOCPRM1"); func_name must be one of f0..f7 (tests/fuzz/seeds.py renames a real model's functions).
 * Each function reads and rewrites every byte of every tensor it is given, so a storage plan that hands
 * out too little or overlapping memory trips ASan. Load failures must say "graph.json"/"params blob". */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/graph_executor.h"

#define MAX_IO_BYTES ((size_t)1 << 16) /* small runs keep executions fast; the plan is checked all the same */
#define MAX_IO 64

static int32_t touch_all(const ByocValue* args, const int32_t* codes, int32_t n, void* resource) {
  int32_t i;
  (void)resource;
  for (i = 0; i < n; ++i) {
    const DLTensor* t = (const DLTensor*)args[i].v_handle;
    int64_t numel, k;
    size_t bytes;
    if (codes[i] != BYOC_ARG_DLTENSOR || t == NULL || t->data == NULL) abort();
    numel = byoc_dltensor_numel(t);
    if (numel < 0) abort();
    bytes = (size_t)numel * byoc_dtype_bytes(t->dtype);
    for (k = 0; k < (int64_t)bytes; ++k) ((unsigned char*)t->data)[k] ^= 0x5a;
  }
  return 0;
}

static const ByocFuncEntry kFuncs[] = {
    {"f0", touch_all, NULL}, {"f1", touch_all, NULL}, {"f2", touch_all, NULL}, {"f3", touch_all, NULL},
    {"f4", touch_all, NULL}, {"f5", touch_all, NULL}, {"f6", touch_all, NULL}, {"f7", touch_all, NULL},
};

static size_t info_bytes(const ByocTensorInfo* info) {
  int64_t n = byoc_shape_numel(info->ndim, info->shape);
  if (n < 0) abort();
  return (size_t)n * byoc_dtype_bytes(info->dtype);
}

static void run_once(ByocGraph* g) {
  void* ins[MAX_IO];
  void* outs[MAX_IO];
  int32_t n_in = byoc_graph_num_inputs(g), n_out = byoc_graph_num_outputs(g), i;
  size_t total = 0;
  if (n_in > MAX_IO || n_out > MAX_IO || byoc_graph_workspace_bytes(g) > MAX_IO_BYTES) return;
  memset(ins, 0, sizeof(ins));
  memset(outs, 0, sizeof(outs));
  for (i = 0; i < n_in + n_out; ++i) {
    ByocTensorInfo info;
    size_t bytes;
    if ((i < n_in ? byoc_graph_input_info(g, i, &info) : byoc_graph_output_info(g, i - n_in, &info)) != 0) abort();
    bytes = info_bytes(&info);
    total += bytes;
    if (total > MAX_IO_BYTES) goto done;
    /* exact-size buffers (at least one byte so malloc never returns NULL for an empty tensor) */
    if (i < n_in) {
      ins[i] = calloc(bytes ? bytes : 1, 1);
    } else {
      outs[i - n_in] = calloc(bytes ? bytes : 1, 1);
    }
  }
  if (byoc_graph_run(g, ins, outs) != 0) abort(); /* every function succeeds: so must the run */
done:
  for (i = 0; i < MAX_IO; ++i) {
    free(ins[i]);
    free(outs[i]);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char kMagic[] = "BYOCPRM1";
  size_t json_len = size, i;
  ByocGraph* g = NULL;
  char* json;
  for (i = 0; i + 8 <= size; ++i) {
    if (memcmp(data + i, kMagic, 8) == 0) {
      json_len = i;
      break;
    }
  }
  /* a private copy of exactly json_len bytes: ASan sees any read past the end of the text */
  json = (char*)malloc(json_len ? json_len : 1);
  if (json == NULL) return 0;
  memcpy(json, data, json_len);
  if (byoc_graph_create(json, json_len, json_len < size ? data + json_len : NULL, size - json_len, kFuncs,
                        (int32_t)(sizeof(kFuncs) / sizeof(kFuncs[0])), &g) != 0) {
    const char* why = byoc_get_last_error();
    if (g != NULL) abort();
    if (strstr(why, "graph.json") == NULL && strstr(why, "params blob") == NULL &&
        strstr(why, "graph executor") == NULL) {
      abort(); /* every load error names the file it is about */
    }
  } else {
    run_once(g);
    byoc_graph_destroy(g);
  }
  free(json);
  return 0;
}

#include "byoc/fuzz_main.h"
