/* Fuzz target over the ExampleJSON runtime: create a module from arbitrary bytes and, when the
 * result is small, run every subgraph on deterministic inputs. Malformed text must fail with a
 * message; nothing may crash, leak, or trip ASan/UBSan.
 *
 * Built three ways (see tests/test_target_fuzz.py and FORMAT.md "Fuzzing"):
 *   libFuzzer:   clang -fsanitize=fuzzer,address,undefined ... fuzz_parser.c <runtime sources>
 *   standalone:  cc -DBYOC_FUZZ_STANDALONE -fsanitize=address,undefined ...: runs files given on the command
 *                line (regressions), or `--mutate SECONDS SEED FILE...`, a deterministic mutation loop
 *                for machines without libFuzzer. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examplejson.h"

#define MAX_RUN_WORK 2e5
#define MAX_RUN_ARG_BYTES ((size_t)1 << 22)
#define MAX_ARGS 64

static void run_subgraph(void* module, const char* symbol) {
  int32_t n_in = examplejson_module_num_inputs(module, symbol);
  int32_t n_out = examplejson_module_num_outputs(module, symbol);
  int32_t n = n_in + n_out, i;
  DLTensor tensors[MAX_ARGS];
  ByocValue args[MAX_ARGS];
  int32_t codes[MAX_ARGS];
  ByocPackedFunc fn = NULL;
  void* res = NULL;
  size_t total = 0;
  if (n_in < 0 || n_out < 0 || n > MAX_ARGS) return;
  memset(tensors, 0, sizeof(tensors));
  for (i = 0; i < n; ++i) {
    ExampleJsonTensorInfo info;
    int64_t numel = 1, k;
    int32_t d;
    if (examplejson_module_tensor_info(module, symbol, i >= n_in, i >= n_in ? i - n_in : i, &info) != 0) goto done;
    for (d = 0; d < info.ndim; ++d) numel *= info.shape[d];
    total += (size_t)numel * sizeof(float);
    if (total > MAX_RUN_ARG_BYTES) goto done;
    tensors[i].data = malloc((size_t)numel * sizeof(float));
    if (tensors[i].data == NULL) goto done;
    for (k = 0; k < numel; ++k) ((float*)tensors[i].data)[k] = (float)((k * 7) % 13 - 6) * 0.25f;
    tensors[i].ndim = info.ndim;
    tensors[i].shape = (int64_t*)(uintptr_t)info.shape;
    tensors[i].dtype = info.dtype;
    tensors[i].device.device_type = kDLCPU;
    args[i].v_handle = &tensors[i];
    codes[i] = BYOC_ARG_DLTENSOR;
  }
  if (examplejson_module_get_function(module, symbol, &fn, &res) == 0) {
    if (fn(args, codes, n, res) != 0) abort(); /* arguments match the signature: a failure is a bug */
  }
done:
  for (i = 0; i < n; ++i) free(tensors[i].data);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  void* module = NULL;
  int32_t i;
  if (examplejson_module_create((const char*)data, size, &module) != 0) {
    if (strncmp(byoc_get_last_error(), "examplejson: ", 13) != 0) abort(); /* every error is located */
    return 0;
  }
  if (examplejson_module_work(module) <= MAX_RUN_WORK) {
    for (i = 0; i < examplejson_module_num_subgraphs(module); ++i) {
      run_subgraph(module, examplejson_module_subgraph_name(module, i));
    }
  }
  examplejson_module_destroy(module);
  return 0;
}

#ifdef BYOC_FUZZ_STANDALONE /* tokens of the format, which the standalone mutation loop inserts */
static const char* const fuzz_words[] = {
    " ", "\n", "\t", "\r\n", ":", "-", "0", "1", "2", "-1", "2147483647", "2147483648", "99999999999",
    "input", "const", "output", "inputs:", "shape:", "dtype:", "data:", "float32", "int32", "AAAAAA==", "====",
    "add", "sub", "mul", "nn.dense", "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.softmax", "reshape",
    "nn.bias_add", "clip", "strides:", "padding:", "dilation:", "groups:", "pool_size:", "ceil_mode:", "axis:",
    "a_min:", "a_max:", "alpha:", "count_include_pad:", "nan", "inf", "#", "subgraph_0"};
#define BYOC_FUZZ_WORDS fuzz_words
#endif
#include "byoc/fuzz_main.h"
