/* Standalone runner: links with one model (which defines byoc_model_desc), reads inputs from .npy,
 * runs (optionally repeatedly, printing the median time), writes outputs as .npy.
 *   runner [--repeat N] [--out DIR] [--inputs DIR | in0.npy in1.npy ...] [--graph FILE] [--params FILE]
 *          [--dump DIR] [--profile] [--constants FILE] [--memory] [--threads N]
 * --repeat N > 1: one untimed run, then N timed ones, their median printed (median_ms=).
 * --threads N: threads a run may use (the runtime's pool; default BYOC_NUM_THREADS, else the usable cores).
 * --memory: after init prints "workspace_bytes=R allocated_bytes=A": what the build reported and what the
 * model's instance allocated (its descriptor's allocated_bytes query).
 * --constants FILE: the build's constants.bin, for a model built with constants="params" (given to the
 * model with byoc_set_constants before its init). Without it, a constants.bin beside the runner is given.
 * --dump DIR: the first run writes every step's outputs to DIR/stepNNNNN_outK.npy and DIR/index.json.
 * --profile: times every step of every run (after one untimed warm-up run) and prints, per step, the
 * median wall time, the median start within the run and the median thread CPU time (docs/debugging.md). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "byoc/graph_executor.h"
#include "byoc/parallel.h"
#include "byoc/runtime.h"
#include "npy.h"

#define MAX_PATH 4096

static const char* g_usage =
    "usage: runner [--repeat N] [--out DIR] [--inputs DIR | in0.npy in1.npy ...] [--graph FILE] [--params FILE]\n"
    "              [--dump DIR] [--profile] [--constants FILE] [--memory] [--threads N]\n";

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

/* CPU time of this thread: unlike wall time it leaves out the time other processes took the CPU, so on a
 * loaded machine per-step times still add up to the run. (Wall time where the clock does not exist.) */
static double cpu_ms(void) {
#ifdef CLOCK_THREAD_CPUTIME_ID
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
#endif
  return now_ms();
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}


/* ---- --dump: a node observer writing each step's outputs as .npy, listed in index.json ------- */
typedef struct {
  const char* dir;
  FILE* index;
  int failed;
  int32_t steps;
} Dump;

/* A JSON string: names come from graph.json (any text with --graph), so quote and escape them. */
static void json_string(FILE* f, const char* s) {
  fputc('"', f);
  for (; s != NULL && *s != '\0'; ++s) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      fputc('\\', f);
      fputc(c, f);
    } else if (c < 0x20) {
      fprintf(f, "\\u%04x", (unsigned)c);
    } else {
      fputc(c, f);
    }
  }
  fputc('"', f);
}

static void dump_exit(void* ctx, int32_t step, const char* name, int32_t num_outputs, const DLTensor* outputs) {
  Dump* d = (Dump*)ctx;
  int32_t k;
  char path[MAX_PATH];
  if (d->failed) return;
  fprintf(d->index, "%s\n  {\"step\": %d, \"name\": ", d->steps ? "," : "", (int)step);
  json_string(d->index, name);
  fprintf(d->index, ", \"outputs\": [");
  for (k = 0; k < num_outputs; ++k) {
    ByocTensorInfo info;
    int64_t n = byoc_shape_numel(outputs[k].ndim, outputs[k].shape);
    char file[64];
    snprintf(file, sizeof(file), "step%05d_out%d.npy", (int)step, (int)k);
    if (snprintf(path, sizeof(path), "%s/%s", d->dir, file) >= (int)sizeof(path) || n < 0) {
      byoc_set_last_error("--dump: path too long or bad shape at step %d", (int)step);
      d->failed = 1;
      return;
    }
    info.name = NULL;
    info.ndim = outputs[k].ndim;
    info.shape = outputs[k].shape;
    info.dtype = outputs[k].dtype;
    if (byoc_npy_write(path, &info, outputs[k].data, (size_t)n * byoc_dtype_bytes(info.dtype)) != 0) {
      d->failed = 1;
      return;
    }
    fprintf(d->index, "%s\"%s\"", k ? ", " : "", file);
  }
  fprintf(d->index, "]}");
  ++d->steps;
}

/* ---- --profile: clock_gettime around every step into arrays allocated before the timed runs -- */
typedef struct {
  int32_t max_steps, steps, overflow;
  double run_start, cpu_enter;
  double* start; /* [max_steps] of this run, ms since run_start */
  double* dur;   /* [max_steps] wall */
  double* cpu;   /* [max_steps] thread CPU time */
  const char** names;
} Profile;


static void count_exit(void* ctx, int32_t step, const char* name, int32_t num_outputs, const DLTensor* outputs) {
  Profile* p = (Profile*)ctx;
  (void)num_outputs;
  (void)outputs;
  (void)name;
  if (step + 1 > p->steps) p->steps = step + 1;
}

static void profile_enter(void* ctx, int32_t step, const char* name) {
  Profile* p = (Profile*)ctx;
  if (step < 0 || step >= p->max_steps) {
    p->overflow = 1;
    return;
  }
  p->names[step] = name;
  p->start[step] = now_ms() - p->run_start;
  p->cpu_enter = cpu_ms();
}

static void profile_exit(void* ctx, int32_t step, const char* name, int32_t num_outputs, const DLTensor* outputs) {
  Profile* p = (Profile*)ctx;
  (void)name;
  (void)num_outputs;
  (void)outputs;
  if (step < 0 || step >= p->max_steps) return;
  p->cpu[step] = cpu_ms() - p->cpu_enter;
  p->dur[step] = now_ms() - p->run_start - p->start[step];
  if (step + 1 > p->steps) p->steps = step + 1;
}

/* DIR/name for the directory the runner was started from (argv0's), when that file exists; else NULL. */
static const char* beside_runner(const char* argv0, const char* name, char* buf, size_t size) {
  const char* slash = strrchr(argv0, '/');
  int dir_len = slash == NULL ? 1 : (int)(slash - argv0);
  FILE* f;
  if (snprintf(buf, size, "%.*s/%s", dir_len, slash == NULL ? "." : argv0, name) >= (int)size) return NULL;
  f = fopen(buf, "rb");
  if (f == NULL) return NULL;
  fclose(f);
  return buf;
}

static double median_of(double* v, long n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
  const ByocModelDesc* desc = byoc_model_desc();
  const char* out_dir = ".";
  const char* in_dir = NULL;
  const char* graph_path = NULL;
  const char* params_path = NULL;
  const char* constants_path = NULL;
  unsigned char* constants = NULL;
  size_t constants_len = 0;
  const char* dump_dir = NULL;
  int profile = 0, memory = 0;
  Dump dump;
  Profile prof;
  ByocNodeObserver observer;
  double* step_start = NULL; /* [repeat][steps] */
  double* step_dur = NULL;
  double* step_cpu = NULL;
  double* run_cpu = NULL;
  const char** files = (const char**)calloc((size_t)argc, sizeof(char*));
  unsigned char *graph_text = NULL, *params_blob = NULL;
  size_t graph_len = 0, params_len = 0;
  void** inputs = NULL;
  void** outputs = NULL;
  double* times = NULL;
  long repeat = 1;
  int n_files = 0, i, rc = 1, inited = 0;
  char path[MAX_PATH], what[300];

  memset(&dump, 0, sizeof(dump));
  memset(&prof, 0, sizeof(prof));
  memset(&observer, 0, sizeof(observer));
  if (files == NULL) return fail("startup");
  for (i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(g_usage, stdout);
      free(files);
      return 0;
    } else if (strcmp(a, "--profile") == 0) {
      profile = 1;
    } else if (strcmp(a, "--memory") == 0) {
      memory = 1;
    } else if (strcmp(a, "--repeat") == 0 || strcmp(a, "--out") == 0 || strcmp(a, "--inputs") == 0 ||
               strcmp(a, "--graph") == 0 || strcmp(a, "--params") == 0 || strcmp(a, "--dump") == 0 ||
               strcmp(a, "--constants") == 0 || strcmp(a, "--threads") == 0) {
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
      } else if (strcmp(a, "--threads") == 0) {
        char* end;
        long threads;
        errno = 0;
        threads = strtol(argv[i + 1], &end, 10);
        if (errno != 0 || *end != '\0' || end == argv[i + 1] || threads < 1 || threads > 256) {
          free(files);
          return fail_usage("--threads needs an integer in 1..256, got", argv[i + 1]);
        }
        byoc_set_num_threads((int32_t)threads);
      } else if (strcmp(a, "--out") == 0) {
        out_dir = argv[i + 1];
      } else if (strcmp(a, "--inputs") == 0) {
        in_dir = argv[i + 1];
      } else if (strcmp(a, "--graph") == 0) {
        graph_path = argv[i + 1];
      } else if (strcmp(a, "--dump") == 0) {
        dump_dir = argv[i + 1];
      } else if (strcmp(a, "--constants") == 0) {
        constants_path = argv[i + 1];
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
  if (constants_path == NULL) constants_path = beside_runner(argv[0], "constants.bin", path, sizeof(path));
  if (constants_path != NULL) {
    if (read_file(constants_path, &constants, &constants_len) != 0) {
      rc = fail("--constants");
      goto done;
    }
    byoc_set_constants(constants, constants_len);
  }
  if (desc->init() != 0) {
    rc = fail("model init failed");
    goto done;
  }
  inited = 1;
  free(constants); /* init copied them */
  constants = NULL;
  byoc_set_constants(NULL, 0);
  if (memory) {
    printf("workspace_bytes=%llu allocated_bytes=", (unsigned long long)desc->workspace_bytes);
    if (desc->allocated_bytes != NULL) {
      printf("%llu\n", (unsigned long long)desc->allocated_bytes(NULL));
    } else {
      printf("unknown\n");
    }
  }
  if (dump_dir != NULL) {
    if (snprintf(path, sizeof(path), "%s/index.json", dump_dir) >= (int)sizeof(path) ||
        (dump.index = fopen(path, "w")) == NULL) {
      fprintf(stderr, "runner: --dump: cannot write '%s': %s\n", path, strerror(errno));
      goto done;
    }
    dump.dir = dump_dir;
    fputs("{\"model\": ", dump.index);
    json_string(dump.index, desc->name);
    fputs(", \"executor\": ", dump.index);
    json_string(dump.index, desc->executor);
    fputs(", \"steps\": [", dump.index);
    observer.exit = dump_exit;
    observer.ctx = &dump;
    byoc_set_node_observer(&observer);
    rc = desc->run((void* const*)inputs, (void* const*)outputs);
    byoc_set_node_observer(NULL);
    fprintf(dump.index, "\n]}\n");
    if (fclose(dump.index) != 0) dump.failed = 1;
    if (rc != 0) {
      rc = fail("model run failed");
      goto done;
    }
    rc = 1;
    if (dump.failed) {
      rc = fail("--dump");
      goto done;
    }
  }
  if (repeat > 1 && !profile && desc->run((void* const*)inputs, (void* const*)outputs) != 0) {
    /* timed runs: one untimed run first (--profile has its own), so that the median is of warm runs: a fresh
     * process's first run starts the pool's workers, faults its pages in and wakes an idle CPU */
    rc = fail("model run failed");
    goto done;
  }
  if (profile) {
    /* an untimed run counts the steps (and warms caches); the timed runs then allocate nothing */
    observer.enter = NULL;
    observer.exit = count_exit;
    observer.ctx = &prof;
    byoc_set_node_observer(&observer);
    if (desc->run((void* const*)inputs, (void* const*)outputs) != 0) {
      byoc_set_node_observer(NULL);
      rc = fail("model run failed");
      goto done;
    }
    byoc_set_node_observer(NULL);
    prof.max_steps = prof.steps > 0 ? prof.steps : 1;
    step_start = (double*)calloc((size_t)repeat * (size_t)prof.max_steps, sizeof(double));
    step_dur = (double*)calloc((size_t)repeat * (size_t)prof.max_steps, sizeof(double));
    step_cpu = (double*)calloc((size_t)repeat * (size_t)prof.max_steps, sizeof(double));
    run_cpu = (double*)calloc((size_t)repeat, sizeof(double));
    prof.names = (const char**)calloc((size_t)prof.max_steps, sizeof(char*));
    if (step_start == NULL || step_dur == NULL || step_cpu == NULL || run_cpu == NULL || prof.names == NULL) {
      fprintf(stderr, "runner: --profile: out of memory\n");
      goto done;
    }
    observer.enter = profile_enter;
    observer.exit = profile_exit;
  }
  for (i = 0; i < repeat; ++i) {
    double t0, c0 = 0.0;
    if (profile) {
      prof.start = step_start + (size_t)i * (size_t)prof.max_steps;
      prof.dur = step_dur + (size_t)i * (size_t)prof.max_steps;
      prof.cpu = step_cpu + (size_t)i * (size_t)prof.max_steps;
      byoc_set_node_observer(&observer);
      c0 = cpu_ms();
    }
    t0 = now_ms();
    prof.run_start = t0;
    if (desc->run((void* const*)inputs, (void* const*)outputs) != 0) {
      byoc_set_node_observer(NULL);
      rc = fail("model run failed");
      goto done;
    }
    times[i] = now_ms() - t0;
    if (profile) run_cpu[i] = cpu_ms() - c0;
    byoc_set_node_observer(NULL);
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
  if (repeat > 1 || profile) printf("median_ms=%.6f\n", median_of(times, repeat));
  if (profile) {
    /* one line per step: step, median duration, median start within the run (ms), function */
    long r;
    int32_t k;
    if (prof.overflow) fprintf(stderr, "runner: --profile: the model ran more steps than its first run\n");
    printf("median_cpu_ms=%.6f\n", median_of(run_cpu, repeat));
    printf("profile_steps=%d repeat=%ld\n", (int)prof.max_steps, repeat);
    /* step, median wall ms, median start within the run (wall ms), median thread CPU ms, function */
    for (k = 0; k < prof.max_steps; ++k) {
      double dur, start, cpu;
      for (r = 0; r < repeat; ++r) times[r] = step_dur[(size_t)r * (size_t)prof.max_steps + (size_t)k];
      dur = median_of(times, repeat);
      for (r = 0; r < repeat; ++r) times[r] = step_start[(size_t)r * (size_t)prof.max_steps + (size_t)k];
      start = median_of(times, repeat);
      for (r = 0; r < repeat; ++r) times[r] = step_cpu[(size_t)r * (size_t)prof.max_steps + (size_t)k];
      cpu = median_of(times, repeat);
      printf("step %d %.6f %.6f %.6f %s\n", (int)k, dur, start, cpu, prof.names[k] != NULL ? prof.names[k] : "?");
    }
  }
  rc = 0;
  goto done;
error_graph:
  rc = fail("--graph/--params");
done:
  if (inited && desc->deinit != NULL) desc->deinit();
  byoc_set_constants(NULL, 0);
  free(constants);
  byoc_graph_clear_override();
  for (i = 0; inputs != NULL && i < desc->num_inputs; ++i) free(inputs[i]);
  for (i = 0; outputs != NULL && i < desc->num_outputs; ++i) free(outputs[i]);
  free(inputs);
  free(outputs);
  free(times);
  free(step_start);
  free(step_dur);
  free(step_cpu);
  free(run_cpu);
  free((void*)prof.names);
  free(files);
  free(graph_text);
  free(params_blob);
  return rc;
}
