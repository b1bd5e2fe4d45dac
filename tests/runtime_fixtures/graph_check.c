/* Test driver for the graph executor without a model: creates a graph from files with stub kernels
 * named like graph_model.c's.
 *   graph_check GRAPH PARAMS            -> prints "ok inputs=I outputs=O workspace=W" or the error (exit 1)
 *   graph_check --prefixes GRAPH PARAMS -> every proper prefix of GRAPH, then of PARAMS, must be rejected
 *                                          with a message; prints "rejected=N", exit 1 on any acceptance
 *   graph_check --mutate N GRAPH PARAMS -> N seeded random byte edits of each: every create either fails
 *                                          with a message or gives a graph that runs (stub kernels);
 *                                          prints "accepted=A rejected=R" (ASan/UBSan catch the rest) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/graph_executor.h"

static int32_t stub(const ByocValue* args, const int32_t* codes, int32_t n, void* res) {
  (void)args;
  (void)codes;
  (void)n;
  (void)res;
  return 0;
}

static const ByocFuncEntry kFuncs[] = {
    {"k_add", stub, NULL}, {"k_bias_add", stub, NULL}, {"k_relu", stub, NULL}, {"k_split2", stub, NULL}};

static unsigned char* slurp(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  unsigned char* buf;
  long n;
  if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fprintf(stderr, "graph_check: cannot read %s\n", path);
    exit(2);
  }
  buf = (unsigned char*)malloc((size_t)n + 1);
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "graph_check: cannot read %s\n", path);
    exit(2);
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static int create(const unsigned char* json, size_t jlen, const unsigned char* params, size_t plen,
                  ByocGraph** g) {
  byoc_clear_last_error();
  return byoc_graph_create((const char*)json, jlen, params, plen, kFuncs, 4, g);
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) { /* xorshift64: deterministic, so a failure reproduces */
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

/* One random edit: overwrite 1-3 bytes (often with JSON-significant characters), or delete a span. */
static size_t mutate(unsigned char* buf, size_t len) {
  static const char interesting[] = "{}[],:\"-0123456789e.\\ ntfu";
  size_t k, edits = 1 + next_rand() % 3;
  if (len == 0) return 0;
  if (next_rand() % 4 == 0) {
    size_t at = next_rand() % len, n = 1 + next_rand() % 16;
    if (n > len - at) n = len - at;
    memmove(buf + at, buf + at + n, len - at - n);
    return len - n;
  }
  for (k = 0; k < edits; ++k) {
    size_t at = next_rand() % len;
    buf[at] = next_rand() % 2 ? (unsigned char)interesting[next_rand() % (sizeof(interesting) - 1)]
                              : (unsigned char)next_rand();
  }
  return len;
}

static int run_stubbed(ByocGraph* g) {
  void* in[64];
  void* out[64];
  int32_t i, n_in = byoc_graph_num_inputs(g), n_out = byoc_graph_num_outputs(g), rc = 0;
  ByocTensorInfo info;
  if (n_in > 64 || n_out > 64) return 0;
  for (i = 0; i < n_in; ++i) {
    byoc_graph_input_info(g, i, &info);
    in[i] = calloc((size_t)byoc_shape_numel(info.ndim, info.shape) * byoc_dtype_bytes(info.dtype) + 1, 1);
  }
  for (i = 0; i < n_out; ++i) {
    byoc_graph_output_info(g, i, &info);
    out[i] = calloc((size_t)byoc_shape_numel(info.ndim, info.shape) * byoc_dtype_bytes(info.dtype) + 1, 1);
  }
  rc = byoc_graph_run(g, in, out);
  for (i = 0; i < n_in; ++i) free(in[i]);
  for (i = 0; i < n_out; ++i) free(out[i]);
  return rc;
}

static int fuzz(long n, const unsigned char* json, size_t jlen, const unsigned char* params, size_t plen) {
  long i, accepted = 0, rejected = 0;
  int bad = 0;
  for (i = 0; i < 2 * n; ++i) {
    int on_json = i < n;
    size_t len = on_json ? jlen : plen;
    unsigned char* copy = (unsigned char*)malloc(len ? len : 1);
    ByocGraph* g = NULL;
    if (copy == NULL) return 2;
    memcpy(copy, on_json ? json : params, len);
    len = mutate(copy, len);
    if (create(on_json ? copy : json, on_json ? len : jlen, on_json ? params : copy, on_json ? plen : len, &g) == 0) {
      ++accepted;
      if (run_stubbed(g) != 0) {
        printf("an accepted graph failed to run: %s\n", byoc_get_last_error());
        bad = 1;
      }
      byoc_graph_destroy(g);
    } else if (byoc_get_last_error()[0] == '\0' || g != NULL) {
      printf("rejected without a message\n");
      bad = 1;
    } else {
      ++rejected;
    }
    free(copy);
  }
  printf("accepted=%ld rejected=%ld\n", accepted, rejected);
  return bad;
}

int main(int argc, char** argv) {
  int prefixes = argc == 4 && strcmp(argv[1], "--prefixes") == 0;
  size_t jlen, plen, cut;
  unsigned char *json, *params;
  ByocGraph* g = NULL;
  long rejected = 0;
  int bad = 0;
  if (argc == 5 && strcmp(argv[1], "--mutate") == 0) {
    int rc;
    json = slurp(argv[3], &jlen);
    params = slurp(argv[4], &plen);
    rc = fuzz(atol(argv[2]), json, jlen, params, plen);
    free(json);
    free(params);
    return rc;
  }
  if (argc != 3 && !prefixes) {
    fprintf(stderr, "usage: graph_check [--prefixes | --mutate N] GRAPH PARAMS\n");
    return 2;
  }
  json = slurp(argv[argc - 2], &jlen);
  params = slurp(argv[argc - 1], &plen);
  if (!prefixes) {
    if (create(json, jlen, params, plen, &g) != 0) {
      printf("error: %s\n", byoc_get_last_error());
      bad = 1;
    } else {
      printf("ok inputs=%d outputs=%d workspace=%llu\n", (int)byoc_graph_num_inputs(g),
             (int)byoc_graph_num_outputs(g), (unsigned long long)byoc_graph_workspace_bytes(g));
      byoc_graph_destroy(g);
    }
  } else {
    for (cut = 0; cut < jlen + plen; ++cut) {
      /* the prefix is copied to its own buffer so ASan sees any read past its end */
      int in_json = cut < jlen;
      size_t n = in_json ? cut : cut - jlen;
      unsigned char* copy = (unsigned char*)malloc(n ? n : 1);
      if (copy == NULL) return 2;
      memcpy(copy, in_json ? json : params, n);
      if (create(in_json ? copy : json, in_json ? n : jlen, in_json ? params : copy, in_json ? plen : n, &g) == 0) {
        printf("accepted a %s truncated to %lu bytes\n", in_json ? "graph" : "params blob", (unsigned long)n);
        byoc_graph_destroy(g);
        bad = 1;
      } else if (byoc_get_last_error()[0] == '\0' || g != NULL) {
        printf("rejected a prefix without a message\n");
        bad = 1;
      } else {
        ++rejected;
      }
      free(copy);
    }
    printf("rejected=%ld\n", rejected);
  }
  free(json);
  free(params);
  return bad;
}
