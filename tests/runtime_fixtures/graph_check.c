/* Test driver for the graph executor without a model: creates a graph from files with stub kernels
 * named like graph_model.c's.
 *   graph_check GRAPH PARAMS            -> prints "ok inputs=I outputs=O workspace=W" or the error (exit 1)
 *   graph_check --prefixes GRAPH PARAMS -> every proper prefix of GRAPH, then of PARAMS, must be rejected
 *                                          with a message; prints "rejected=N", exit 1 on any acceptance */
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

int main(int argc, char** argv) {
  int prefixes = argc == 4 && strcmp(argv[1], "--prefixes") == 0;
  size_t jlen, plen, cut;
  unsigned char *json, *params;
  ByocGraph* g = NULL;
  long rejected = 0;
  int bad = 0;
  if (argc != 3 && !prefixes) {
    fprintf(stderr, "usage: graph_check [--prefixes] GRAPH PARAMS\n");
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
