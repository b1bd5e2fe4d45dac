/* ej_check FILE...: loads each ExampleJSON file with the runtime (parse + validate + allocate) and prints
 * every subgraph's signature, or the located error. Exit 0 when all load, 1 otherwise.
 * Build: cc -std=c99 -Itargets/examplejson/runtime -Ibyoc_compiler/runtime/include \
 *          targets/examplejson/tools/ej_check.c targets/examplejson/runtime/ej_*.c \
 *          byoc_compiler/runtime/src/runtime.c -lm -o ej_check */
#include <stdio.h>

#include "examplejson.h"

static void print_side(void* m, const char* symbol, int32_t is_output, int32_t n) {
  int32_t i;
  char buf[160];
  for (i = 0; i < n; ++i) {
    ExampleJsonTensorInfo info;
    if (examplejson_module_tensor_info(m, symbol, is_output, i, &info) != 0) return;
    printf("%s%s", i ? ", " : "", byoc_shape_str(info.ndim, info.shape, buf, sizeof(buf)));
  }
}

int main(int argc, char** argv) {
  int i, status = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: ej_check FILE...\n");
    return 2;
  }
  for (i = 1; i < argc; ++i) {
    void* m = NULL;
    int32_t s;
    if (examplejson_module_load_file(argv[i], &m) != 0) {
      fprintf(stderr, "%s\n", byoc_get_last_error());
      status = 1;
      continue;
    }
    for (s = 0; s < examplejson_module_num_subgraphs(m); ++s) {
      const char* name = examplejson_module_subgraph_name(m, s);
      printf("%s: %s(", argv[i], name);
      print_side(m, name, 0, examplejson_module_num_inputs(m, name));
      printf(") -> (");
      print_side(m, name, 1, examplejson_module_num_outputs(m, name));
      printf(")\n");
    }
    examplejson_module_destroy(m);
  }
  return status;
}
