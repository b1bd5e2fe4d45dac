/* Fuzz target over the dnnl runtime module: create a module from arbitrary bytes (the JSON parser and
 * its checks) and, when the graph is small, bind zero-filled constants of the right sizes, build the
 * oneDNN primitives and run the region once. Malformed text must fail with a message naming the
 * region ("dnnl region ..."); nothing may crash, leak, or trip ASan/UBSan.
 *
 * Built two ways (tests/test_dnnl_fuzz.py):
 *   libFuzzer:   clang -fsanitize=fuzzer,address,undefined ... fuzz_parser.c <runtime sources> -ldnnl
 *   standalone:  cc -DBD_FUZZ_STANDALONE -fsanitize=address,undefined ...: runs the files given on the
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

#ifdef BD_FUZZ_STANDALONE
#include <time.h>

static unsigned char* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  unsigned char* buf;
  long n;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (unsigned char*)malloc(n > 0 ? (size_t)n : 1);
  *len = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
  fclose(f);
  return buf;
}

static uint64_t rng_state;
static uint64_t next_rand(void) { /* xorshift64*: deterministic for a seed */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static const char* const kWords[] = {
    " ", ",", ":", "[", "]", "{", "}", "\"", "0", "1", "2", "3", "-1", "1e9", "2147483648", "0.5", "null",
    "\"input\"", "\"const\"", "\"kernel\"", "\"nn.conv2d\"", "\"nn.dense\"", "\"add\"", "\"concatenate\"",
    "\"nn.max_pool2d\"", "\"nn.softmax\"", "\"reshape\"", "\"sum\"", "\"relu\"", "\"NHWC\"", "\"HWIO\"",
    "\"groups\"", "\"post_ops\"", "\"bias\"", "\"axis\"", "\"shape\"", "\"inputs\"", "\"heads\""};

static size_t mutate(const unsigned char* buf, size_t len, unsigned char* out, size_t cap) {
  size_t pos = len ? (size_t)(next_rand() % (len + 1)) : 0, n, span;
  const char* w;
  switch (next_rand() % 5) {
    case 0: /* overwrite a byte */
      memcpy(out, buf, len);
      if (len) out[pos % len] = (unsigned char)next_rand();
      return len;
    case 1: /* delete a span */
      span = (size_t)(next_rand() % 16);
      if (pos + span > len) span = len - pos;
      memcpy(out, buf, pos);
      memcpy(out + pos, buf + pos + span, len - pos - span);
      return len - span;
    case 2: /* insert a word */
    case 3:
      w = kWords[next_rand() % (sizeof(kWords) / sizeof(kWords[0]))];
      n = strlen(w);
      if (len + n > cap) n = 0;
      memcpy(out, buf, pos);
      memcpy(out + pos, w, n);
      memcpy(out + pos + n, buf + pos, len - pos);
      return len + n;
    default: /* truncate */
      memcpy(out, buf, pos);
      return pos;
  }
}

int main(int argc, char** argv) {
  int i;
  if (argc >= 4 && strcmp(argv[1], "--mutate") == 0) {
    double seconds = atof(argv[2]);
    int nseeds = argc - 4;
    unsigned char** seeds = (unsigned char**)calloc((size_t)nseeds, sizeof(*seeds));
    size_t* lens = (size_t*)calloc((size_t)nseeds, sizeof(*lens));
    size_t cap = 1 << 16;
    unsigned char *cur = (unsigned char*)malloc(cap), *next = (unsigned char*)malloc(cap);
    unsigned long long execs = 0;
    clock_t start = clock();
    rng_state = (uint64_t)strtoull(argv[3], NULL, 10) | 1u;
    for (i = 0; i < nseeds; ++i) seeds[i] = read_file(argv[4 + i], &lens[i]);
    while ((double)(clock() - start) / CLOCKS_PER_SEC < seconds && nseeds > 0) {
      int s = (int)(next_rand() % (uint64_t)nseeds), k, depth = 1 + (int)(next_rand() % 4);
      size_t len = lens[s] < cap ? lens[s] : cap;
      if (seeds[s] == NULL) continue;
      memcpy(cur, seeds[s], len);
      for (k = 0; k < depth; ++k) {
        unsigned char* t;
        len = mutate(cur, len, next, cap);
        t = cur, cur = next, next = t;
      }
      LLVMFuzzerTestOneInput(cur, len);
      ++execs;
    }
    printf("executions=%llu crashes=0\n", execs);
    for (i = 0; i < nseeds; ++i) free(seeds[i]);
    free(seeds), free(lens), free(cur), free(next);
    return 0;
  }
  for (i = 1; i < argc; ++i) {
    size_t len = 0;
    unsigned char* buf = read_file(argv[i], &len);
    if (buf == NULL) {
      fprintf(stderr, "fuzz: cannot read %s\n", argv[i]);
      return 2;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
  }
  printf("ran %d inputs\n", argc - 1);
  return 0;
}
#endif
