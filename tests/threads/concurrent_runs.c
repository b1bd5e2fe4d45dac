/* Concurrency check of built models (tests/test_threads.py), meant to run under ThreadSanitizer.
 *
 *   concurrent_runs ITERATIONS LIB.so [LIB.so ...]
 *
 * For every library: dlopen it (RTLD_LOCAL), take byoc_model_desc(), compute reference outputs with one
 * instance run alone, then create two more instances. Then one thread per instance (two per library,
 * all started together) runs its instance ITERATIONS times and compares each result byte for byte with
 * the reference. Exit 0 when every run matched; 1 with a message otherwise. ThreadSanitizer reports any
 * data race between instances of one model or between different models, and in the thread pool every
 * library runs (BYOC_NUM_THREADS sets its size). At the end every library is closed while its pool's
 * workers still live (they must be joined before the library's code is unmapped). */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byoc/runtime.h"

#define MAX_LIBS 8
#define MAX_IO 64

typedef struct {
  const ByocModelDesc* desc;
  const char* (*last_error)(void); /* the library's own (its runtime copy is private: RTLD_LOCAL) */
  void* inputs[MAX_IO];
  void* expected[MAX_IO];
  size_t out_bytes[MAX_IO];
} Model;

typedef struct {
  const Model* model;
  void* instance;
  void* outputs[MAX_IO];
  long iterations;
  int failed;
  char why[256];
} Worker;

static pthread_barrier_t g_start;

static size_t info_bytes(const ByocTensorInfo* t) {
  int64_t n = byoc_shape_numel(t->ndim, t->shape);
  return n < 0 ? 0 : (size_t)n * byoc_dtype_bytes(t->dtype);
}

static void fill_input(const ByocTensorInfo* t, void* data, int salt) {
  size_t i, n = info_bytes(t) / (byoc_dtype_bytes(t->dtype) ? byoc_dtype_bytes(t->dtype) : 1);
  if (t->dtype.code == kDLFloat && t->dtype.bits == 32) {
    for (i = 0; i < n; ++i) ((float*)data)[i] = (float)((long)((i * 7 + (size_t)salt) % 13) - 6) * 0.25f;
  } else {
    memset(data, 0, info_bytes(t));
  }
}

static void* work(void* arg) {
  Worker* w = (Worker*)arg;
  const ByocModelDesc* d = w->model->desc;
  long it;
  int32_t k;
  pthread_barrier_wait(&g_start);
  for (it = 0; it < w->iterations && !w->failed; ++it) {
    for (k = 0; k < d->num_outputs; ++k) memset(w->outputs[k], 0xA5, w->model->out_bytes[k]);
    if (d->run_instance(w->instance, w->model->inputs, w->outputs) != 0) {
      snprintf(w->why, sizeof(w->why), "model %s: run %ld failed: %s", d->name, it, w->model->last_error());
      w->failed = 1;
    }
    for (k = 0; k < d->num_outputs && !w->failed; ++k) {
      if (memcmp(w->outputs[k], w->model->expected[k], w->model->out_bytes[k]) != 0) {
        snprintf(w->why, sizeof(w->why), "model %s: run %ld, output %d differs from the run alone", d->name, it,
                 (int)k);
        w->failed = 1;
      }
    }
  }
  return NULL;
}

static int load(const char* path, Model* m, int salt, void** handle) {
  void* lib = *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const ByocModelDesc* (*get_desc)(void);
  void* alone = NULL;
  int32_t k;
  if (lib == NULL) {
    fprintf(stderr, "concurrent_runs: %s\n", dlerror());
    return -1;
  }
  *(void**)(&get_desc) = dlsym(lib, "byoc_model_desc");
  *(void**)(&m->last_error) = dlsym(lib, "byoc_get_last_error");
  if (get_desc == NULL || m->last_error == NULL || (m->desc = get_desc()) == NULL || m->desc->create == NULL ||
      m->desc->num_inputs > MAX_IO || m->desc->num_outputs > MAX_IO) {
    fprintf(stderr, "concurrent_runs: %s has no model descriptor with instances\n", path);
    return -1;
  }
  for (k = 0; k < m->desc->num_inputs; ++k) {
    m->inputs[k] = malloc(info_bytes(&m->desc->inputs[k]) + 1);
    fill_input(&m->desc->inputs[k], m->inputs[k], salt + k);
  }
  for (k = 0; k < m->desc->num_outputs; ++k) {
    m->out_bytes[k] = info_bytes(&m->desc->outputs[k]);
    m->expected[k] = calloc(1, m->out_bytes[k] + 1);
  }
  if (m->desc->create(&alone) != 0 || m->desc->run_instance(alone, m->inputs, m->expected) != 0) {
    fprintf(stderr, "concurrent_runs: %s: %s\n", path, m->last_error());
    return -1;
  }
  m->desc->destroy(alone);
  return 0;
}

int main(int argc, char** argv) {
  Model models[MAX_LIBS];
  void* handles[MAX_LIBS];
  Worker workers[2 * MAX_LIBS];
  pthread_t threads[2 * MAX_LIBS];
  int n_libs = argc - 2, i, n = 0, failed = 0;
  long iterations = argc > 1 ? atol(argv[1]) : 0;
  int32_t k;
  if (n_libs < 1 || n_libs > MAX_LIBS || iterations < 1) {
    fprintf(stderr, "usage: concurrent_runs ITERATIONS LIB.so [LIB.so ...] (at most %d)\n", MAX_LIBS);
    return 2;
  }
  memset(models, 0, sizeof(models));
  memset(workers, 0, sizeof(workers));
  for (i = 0; i < n_libs; ++i) {
    if (load(argv[2 + i], &models[i], i, &handles[i]) != 0) return 1;
    for (k = 0; k < 2; ++k, ++n) {
      int32_t o;
      workers[n].model = &models[i];
      workers[n].iterations = iterations;
      for (o = 0; o < models[i].desc->num_outputs; ++o) workers[n].outputs[o] = malloc(models[i].out_bytes[o] + 1);
      if (models[i].desc->create(&workers[n].instance) != 0) {
        fprintf(stderr, "concurrent_runs: create failed: %s\n", models[i].last_error());
        return 1;
      }
    }
  }
  pthread_barrier_init(&g_start, NULL, (unsigned)n);
  for (i = 0; i < n; ++i) pthread_create(&threads[i], NULL, work, &workers[i]);
  for (i = 0; i < n; ++i) pthread_join(threads[i], NULL);
  for (i = 0; i < n; ++i) {
    int32_t o;
    if (workers[i].failed) {
      fprintf(stderr, "concurrent_runs: %s\n", workers[i].why);
      failed = 1;
    }
    workers[i].model->desc->destroy(workers[i].instance);
    for (o = 0; o < workers[i].model->desc->num_outputs; ++o) free(workers[i].outputs[o]);
  }
  pthread_barrier_destroy(&g_start);
  for (i = 0; i < n_libs; ++i) {
    for (k = 0; k < models[i].desc->num_inputs; ++k) free(models[i].inputs[k]);
    for (k = 0; k < models[i].desc->num_outputs; ++k) free(models[i].expected[k]);
    if (dlclose(handles[i]) != 0) {
      fprintf(stderr, "concurrent_runs: dlclose: %s\n", dlerror());
      failed = 1;
    }
  }
  if (!failed) printf("%d instances of %d models, %ld runs each: all equal to the runs alone\n", n, n_libs,
                      iterations);
  return failed;
}
