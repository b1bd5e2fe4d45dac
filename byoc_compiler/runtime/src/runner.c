/* Standalone runner: links with one model (which defines byoc_model_desc), reads inputs from .npy,
 * runs (optionally repeatedly, printing the median time), writes outputs as .npy.
 *   runner [--repeat N] [--out DIR] [--inputs DIR | in0.npy in1.npy ...] [--graph FILE] [--params FILE] */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "byoc/graph_executor.h"
#include "byoc/runtime.h"
#include "npy.h"

#define MAX_PATH 4096

static const char* g_usage =
    "usage: runner [--repeat N] [--out DIR] [--inputs DIR | in0.npy in1.npy ...] [--graph FILE] [--params FILE]\n";

static int fail_usage(const char* why, const char* arg) {
  fprintf(stderr, "runner: %s%s%s\n%s", why, arg ? ": " : "", arg ? arg : "", g_usage);
  return 2;
}

static int fail(const char* what) {
  fprintf(stderr, "runner: %s: %s\n", what, byoc_get_last_error());
  return 1;
}

static int read_file(const char* path, unsigned char** out, size_t* out_len) {
  FILE* f = fopen(path, "rb");
  unsigned char* buf = NULL;
  size_t len = 0, cap = 0;
  if (f == NULL) {
    byoc_set_last_error("cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  for (;;) {
    size_t got;
    if (len == cap) {
      unsigned char* grown;
      cap = cap ? cap * 2 : 65536;
      grown = (unsigned char*)realloc(buf, cap);
      if (grown == NULL) {
        free(buf);
        fclose(f);
        byoc_set_last_error("out of memory reading '%s'", path);
        return -1;
      }
      buf = grown;
    }
    got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    free(buf);
    fclose(f);
    byoc_set_last_error("cannot read '%s'", path);
    return -1;
  }
  fclose(f);
  *out = buf;
  *out_len = len;
  return 0;
}

static int tensor_bytes(const ByocTensorInfo* t, size_t* out) {
  int64_t n = byoc_shape_numel(t->ndim, t->shape);
  size_t elem = byoc_dtype_bytes(t->dtype);
  if (n < 0 || elem == 0 || (uint64_t)n > (uint64_t)SIZE_MAX / elem) return -1;
  *out = (size_t)n * elem;
  return 0;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const ByocModelDesc* desc = byoc_model_desc();
  const char* out_dir = ".";
  const char* in_dir = NULL;
  const char* graph_path = NULL;
  const char* params_path = NULL;
  const char** files = (const char**)calloc((size_t)argc, sizeof(char*));
  unsigned char *graph_text = NULL, *params_blob = NULL;
  size_t graph_len = 0, params_len = 0;
  void** inputs = NULL;
  void** outputs = NULL;
  double* times = NULL;
  long repeat = 1;
  int n_files = 0, i, rc = 1, inited = 0;
  char path[MAX_PATH], what[300];

  if (files == NULL) return fail("startup");
  for (i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(g_usage, stdout);
      free(files);
      return 0;
    } else if (strcmp(a, "--repeat") == 0 || strcmp(a, "--out") == 0 || strcmp(a, "--inputs") == 0 ||
               strcmp(a, "--graph") == 0 || strcmp(a, "--params") == 0) {
      if (i + 1 >= argc) {
        free(files);
        return fail_usage("missing value after", a);
      }
      if (strcmp(a, "--repeat") == 0) {
        char* end;
        errno = 0;
        repeat = strtol(argv[i + 1], &end, 10);
        if (errno != 0 || *end != '\0' || end == argv[i + 1] || repeat < 1 || repeat > 1000000) {
          free(files);
          return fail_usage("--repeat needs an integer in 1..1000000, got", argv[i + 1]);
        }
      } else if (strcmp(a, "--out") == 0) {
        out_dir = argv[i + 1];
      } else if (strcmp(a, "--inputs") == 0) {
        in_dir = argv[i + 1];
      } else if (strcmp(a, "--graph") == 0) {
        graph_path = argv[i + 1];
      } else {
        params_path = argv[i + 1];
      }
      ++i;
    } else if (strncmp(a, "--", 2) == 0) {
      free(files);
      return fail_usage("unknown option", a);
    } else {
      files[n_files++] = a;
    }
  }
  if (desc == NULL) {
    free(files);
    fprintf(stderr, "runner: the model has no descriptor (byoc_model_desc returned NULL)\n");
    return 1;
  }
  if (in_dir != NULL && n_files > 0) {
    free(files);
    return fail_usage("give input files or --inputs DIR, not both", NULL);
  }
  if (in_dir == NULL && n_files != desc->num_inputs) {
    free(files);
    fprintf(stderr, "runner: model '%s' takes %d input(s)", desc->name ? desc->name : "?", (int)desc->num_inputs);
    for (i = 0; i < desc->num_inputs; ++i) {
      fprintf(stderr, "%s'%s'", i ? ", " : ": ", desc->inputs[i].name ? desc->inputs[i].name : "");
    }
    fprintf(stderr, "; %d .npy file(s) given\n%s", n_files, g_usage);
    return 2;
  }
  if (graph_path != NULL || params_path != NULL) {
    if (desc->executor == NULL || strcmp(desc->executor, "graph") != 0) {
      free(files);
      fprintf(stderr, "runner: --graph/--params need a model built with executor=\"graph\" (this one is \"%s\")\n",
              desc->executor ? desc->executor : "?");
      return 2;
    }
    if (graph_path != NULL && read_file(graph_path, &graph_text, &graph_len) != 0) goto error_graph;
    if (params_path != NULL && read_file(params_path, &params_blob, &params_len) != 0) goto error_graph;
    /* an empty params file means "no params": keep a non-NULL pointer so the override applies */
    byoc_graph_set_override((const char*)graph_text, graph_len,
                            params_path != NULL ? (params_blob ? params_blob : (const unsigned char*)"") : NULL,
                            params_len, desc);
  }

  inputs = (void**)calloc((size_t)desc->num_inputs + 1, sizeof(void*));
  outputs = (void**)calloc((size_t)desc->num_outputs + 1, sizeof(void*));
  times = (double*)calloc((size_t)repeat, sizeof(double));
  if (inputs == NULL || outputs == NULL || times == NULL) {
    byoc_set_last_error("out of memory");
    rc = fail("startup");
    goto done;
  }
  for (i = 0; i < desc->num_inputs; ++i) {
    const ByocTensorInfo* t = &desc->inputs[i];
    const char* name = t->name != NULL ? t->name : "";
    size_t nbytes;
    const char* file = files[i];
    snprintf(what, sizeof(what), "input %d '%.200s'", i, name);
    if (tensor_bytes(t, &nbytes) != 0) {
      fprintf(stderr, "runner: %s: the descriptor's shape/dtype is invalid\n", what);
      goto done;
    }
    if (in_dir != NULL) {
      if (strchr(name, '/') != NULL || name[0] == '.' || name[0] == '\0') {
        fprintf(stderr, "runner: %s: this name cannot be a file name; give the input files in order\n", what);
        goto done;
      }
      if (snprintf(path, sizeof(path), "%s/%s.npy", in_dir, name) >= (int)sizeof(path)) {
        fprintf(stderr, "runner: %s: path too long\n", what);
        goto done;
      }
      file = path;
    }
    inputs[i] = malloc(nbytes ? nbytes : 1);
    if (inputs[i] == NULL) {
      fprintf(stderr, "runner: %s: out of memory\n", what);
      goto done;
    }
    if (byoc_npy_read(file, what, t, inputs[i], nbytes) != 0) {
      fprintf(stderr, "runner: %s\n", byoc_get_last_error());
      goto done;
    }
  }
  for (i = 0; i < desc->num_outputs; ++i) {
    size_t nbytes;
    if (tensor_bytes(&desc->outputs[i], &nbytes) != 0 || (outputs[i] = malloc(nbytes ? nbytes : 1)) == NULL) {
      fprintf(stderr, "runner: output %d: invalid shape/dtype or out of memory\n", i);
      goto done;
    }
  }
  if (desc->init() != 0) {
    rc = fail("model init failed");
    goto done;
  }
  inited = 1;
  for (i = 0; i < repeat; ++i) {
    double t0 = now_ms();
    if (desc->run((void* const*)inputs, (void* const*)outputs) != 0) {
      rc = fail("model run failed");
      goto done;
    }
    times[i] = now_ms() - t0;
  }
  for (i = 0; i < desc->num_outputs; ++i) {
    size_t nbytes;
    tensor_bytes(&desc->outputs[i], &nbytes);
    if (snprintf(path, sizeof(path), "%s/out%d.npy", out_dir, i) >= (int)sizeof(path)) {
      fprintf(stderr, "runner: output path too long\n");
      goto done;
    }
    if (byoc_npy_write(path, &desc->outputs[i], outputs[i], nbytes) != 0) {
      rc = fail("writing outputs");
      goto done;
    }
  }
  if (repeat > 1) {
    qsort(times, (size_t)repeat, sizeof(double), cmp_double);
    printf("median_ms=%.6f\n", repeat % 2 ? times[repeat / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2]));
  }
  rc = 0;
  goto done;
error_graph:
  rc = fail("--graph/--params");
done:
  if (inited && desc->deinit != NULL) desc->deinit();
  byoc_graph_clear_override();
  for (i = 0; inputs != NULL && i < desc->num_inputs; ++i) free(inputs[i]);
  for (i = 0; outputs != NULL && i < desc->num_outputs; ++i) free(outputs[i]);
  free(inputs);
  free(outputs);
  free(times);
  free(files);
  free(graph_text);
  free(params_blob);
  return rc;
}
