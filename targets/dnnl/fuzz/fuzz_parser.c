/* Fuzz target over the dnnl runtime module: create a module from arbitrary bytes (the JSON parser and
 * its checks) and, when the graph is small, bind zero-filled constants of the right sizes, build the
 * oneDNN primitives and run the region once. Malformed text must fail with a message naming the
 * region ("dnnl region ..."); nothing may crash, leak, or trip ASan/UBSan.
 *
 * Built two ways (tests/test_target_fuzz.py):
 *   libFuzzer:   clang -fsanitize=fuzzer,address,undefined ... fuzz_parser.c <runtime sources> -ldnnl
 *   standalone:  cc -DBYOC_FUZZ_STANDALONE -fsanitize=address,undefined ...: runs the files given on the
 *                command line, or `--mutate SECONDS SEED FILE...`, a deterministic mutation loop for
 *                machines without libFuzzer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc_dnnl.h"

#define MAX_RUN_ELEMENTS ((int64_t)1 << 16) /* per tensor: building and running stays fast */
#define MAX_ARGS 16
#define MAX_CONSTS 64

static int small_enough(void* module, int32_t n_in, int32_t n_out) {
  int32_t i, d, ndim;
  const int64_t* shape;
  for (i = 0; i < n_in + n_out; ++i) {
    int64_t numel = 1;
    if (byoc_dnnl_module_tensor_shape(module, i >= n_in, i >= n_in ? i - n_in : i, &ndim, &shape) != 0) return 0;
    for (d = 0; d < ndim; ++d) numel *= shape[d];
    if (numel > MAX_RUN_ELEMENTS) return 0;
  }
  for (i = 0; i < byoc_dnnl_module_num_constants(module); ++i) {
    uint64_t nbytes = 0;
    byoc_dnnl_module_constant(module, i, &nbytes);
    if (nbytes > (uint64_t)MAX_RUN_ELEMENTS * sizeof(float)) return 0;
  }
  return n_in + n_out <= MAX_ARGS && byoc_dnnl_module_num_constants(module) <= MAX_CONSTS;
}

static void build_and_run(void* module) {
  int32_t n_in = byoc_dnnl_module_num_inputs(module), n_out = byoc_dnnl_module_num_outputs(module);
  int32_t n = n_in + n_out, nc = byoc_dnnl_module_num_constants(module), i, d, ndim;
  DLTensor tensors[MAX_ARGS];
  ByocValue args[MAX_ARGS];
  int32_t codes[MAX_ARGS];
  ByocConstant consts[MAX_CONSTS];
  void* const_data[MAX_CONSTS];
  ByocPackedFunc fn = NULL;
  void* res = NULL;
  const int64_t* shape;
  if (!small_enough(module, n_in, n_out)) return;
  memset(tensors, 0, sizeof(tensors));
  memset(const_data, 0, sizeof(const_data));
  for (i = 0; i < nc; ++i) {
    uint64_t nbytes = 0;
    consts[i].name = byoc_dnnl_module_constant(module, i, &nbytes);
    const_data[i] = calloc(1, nbytes ? (size_t)nbytes : 1);
    consts[i].data = const_data[i];
    consts[i].nbytes = nbytes;
    if (const_data[i] == NULL) goto done;
  }
  if (nc > 0 && byoc_dnnl_module_bind_constants(module, consts, nc) != 0) abort(); /* names and sizes match */
  for (i = 0; i < n; ++i) {
    int64_t numel = 1, k;
    byoc_dnnl_module_tensor_shape(module, i >= n_in, i >= n_in ? i - n_in : i, &ndim, &shape);
    for (d = 0; d < ndim; ++d) numel *= shape[d];
    tensors[i].data = malloc((size_t)numel * sizeof(float));
    if (tensors[i].data == NULL) goto done;
    for (k = 0; k < numel; ++k) ((float*)tensors[i].data)[k] = (float)((k * 7) % 13 - 6) * 0.25f;
    tensors[i].ndim = ndim;
    tensors[i].shape = (int64_t*)(uintptr_t)shape;
    tensors[i].dtype = BYOC_DTYPE_FLOAT32;
    tensors[i].device.device_type = kDLCPU;
    args[i].v_handle = &tensors[i];
    codes[i] = BYOC_ARG_DLTENSOR;
  }
  /* building may refuse what oneDNN has no implementation for (with a message); a built region must run */
  if (byoc_dnnl_module_get_function(module, "fuzz", &fn, &res) == 0) {
    if (fn(args, codes, n, res) != 0) abort();
  } else if (strncmp(byoc_get_last_error(), "dnnl", 4) != 0) {
    abort();
  }
done:
  for (i = 0; i < n; ++i) free(tensors[i].data);
  for (i = 0; i < nc; ++i) free(const_data[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  void* module = NULL;
  if (byoc_dnnl_module_create((const char*)data, size, &module) != 0) {
    if (strncmp(byoc_get_last_error(), "dnnl region ", 12) != 0) abort(); /* every error is located */
    return 0;
  }
  build_and_run(module);
  byoc_dnnl_module_destroy(module);
  return 0;
}

#ifdef BYOC_FUZZ_STANDALONE /* tokens of the format, which the standalone mutation loop inserts */
static const char* const fuzz_words[] = {
    " ", ",", ":", "[", "]", "{", "}", "\"", "0", "1", "2", "3", "-1", "1e9", "2147483648", "0.5", "null",
    "\"input\"", "\"const\"", "\"kernel\"", "\"nn.conv2d\"", "\"nn.dense\"", "\"add\"", "\"concatenate\"",
    "\"nn.max_pool2d\"", "\"nn.softmax\"", "\"reshape\"", "\"sum\"", "\"relu\"", "\"NHWC\"", "\"HWIO\"",
    "\"groups\"", "\"post_ops\"", "\"bias\"", "\"axis\"", "\"shape\"", "\"inputs\"", "\"heads\""};
#define BYOC_FUZZ_WORDS fuzz_words
#endif
#include "byoc/fuzz_main.h"
