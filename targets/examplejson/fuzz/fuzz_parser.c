/* Fuzz target over the ExampleJSON runtime: create a module from arbitrary bytes and, when the
 * result is small, run every subgraph on deterministic inputs. Malformed text must fail with a
 * message; nothing may crash, leak, or trip ASan/UBSan.
 *
 * Built three ways (see tests/test_examplejson_fuzz.py and FORMAT.md "Fuzzing"):
 *   libFuzzer:   clang -fsanitize=fuzzer,address,undefined ... fuzz_parser.c <runtime sources>
 *   standalone:  cc -DEJ_FUZZ_STANDALONE -fsanitize=address,undefined ...: runs files given on the command
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

#ifdef EJ_FUZZ_STANDALONE
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
    " ", "\n", "\t", "\r\n", ":", "-", "0", "1", "2", "-1", "2147483647", "2147483648", "99999999999",
    "input", "const", "output", "inputs:", "shape:", "dtype:", "data:", "float32", "int32", "AAAAAA==", "====",
    "add", "sub", "mul", "nn.dense", "nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.softmax", "reshape",
    "nn.bias_add", "clip", "strides:", "padding:", "dilation:", "groups:", "pool_size:", "ceil_mode:", "axis:",
    "a_min:", "a_max:", "alpha:", "count_include_pad:", "nan", "inf", "#", "subgraph_0"};

/* One mutation of buf[0..len) into out (capacity cap); returns the new length. */
static size_t mutate(const unsigned char* buf, size_t len, unsigned char* out, size_t cap) {
  size_t pos = len ? (size_t)(next_rand() % (len + 1)) : 0, n, span;
  const char* w;
  switch (next_rand() % 6) {
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
    case 4: /* duplicate a span */
      span = (size_t)(next_rand() % 64);
      if (pos + span > len) span = len - pos;
      if (len + span > cap) span = 0;
      memcpy(out, buf, pos + span);
      memcpy(out + pos + span, buf + pos, len - pos);
      return len + span;
    default: /* truncate */
      memcpy(out, buf, pos);
      return pos;
  }
}

int main(int argc, char** argv) {
  int i;
  if (argc >= 4 && strcmp(argv[1], "--mutate") == 0) {
    double seconds = atof(argv[2]);
    unsigned long long execs = 0;
    int nseeds = argc - 4;
    unsigned char** seeds = (unsigned char**)calloc((size_t)nseeds + 1, sizeof(unsigned char*));
    size_t* lens = (size_t*)calloc((size_t)nseeds + 1, sizeof(size_t));
    size_t cap = 1 << 20;
    unsigned char* cur = (unsigned char*)malloc(cap);
    unsigned char* next = (unsigned char*)malloc(cap);
    clock_t start = clock();
    rng_state = strtoull(argv[3], NULL, 10) | 1u;
    for (i = 0; i < nseeds; ++i) {
      seeds[i] = read_file(argv[4 + i], &lens[i]);
      if (seeds[i] == NULL || lens[i] > cap / 2) {
        fprintf(stderr, "fuzz: cannot use seed %s\n", argv[4 + i]);
        return 2;
      }
    }
    while ((double)(clock() - start) / CLOCKS_PER_SEC < seconds && nseeds > 0) {
      int s = (int)(next_rand() % (uint64_t)nseeds), k, rounds = 1 + (int)(next_rand() % 8);
      size_t len = lens[s];
      memcpy(cur, seeds[s], len);
      for (k = 0; k < rounds; ++k) {
        unsigned char* t;
        len = mutate(cur, len, next, cap / 2);
        t = cur, cur = next, next = t;
        LLVMFuzzerTestOneInput(cur, len);
        ++execs;
      }
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
