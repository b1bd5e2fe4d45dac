/* The thread pool alone (byoc/parallel.h) under ThreadSanitizer: many short jobs from two caller threads
 * at once (one of them gets the pool, the other runs serially), nested calls, chunks on slots, thread
 * counts above the core count, a change of the count between jobs (up, and down and up again: workers stopped
 * before they first ran) and a fork after the pool started.
 * Every task writes its own cell; the check is that each cell was written exactly once per job. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "byoc/parallel.h"

#define TASKS 37
#define JOBS 300

typedef struct {
  int hits[TASKS];
  int nested[TASKS][3];
} cells;

static void nested_task(int32_t task, int32_t n_tasks, void* ctx) {
  int* row = (int*)ctx;
  (void)n_tasks;
  row[task] += 1;
}

static void task(int32_t t, int32_t n_tasks, void* ctx) {
  cells* c = (cells*)ctx;
  (void)n_tasks;
  c->hits[t] += 1;
  if (t % 5 == 0) byoc_parallel_for(3, nested_task, c->nested[t]); /* serial: inside a task */
}

typedef struct {
  int busy[8]; /* per slot: a chunk runs on it */
  int done[TASKS];
  int overlap;
} slots;

static void chunk(int32_t c, int32_t slot, void* ctx) {
  slots* s = (slots*)ctx;
  if (s->busy[slot]++ != 0) s->overlap = 1; /* a race TSan would report as well */
  s->done[c] += 1;
  s->busy[slot]--;
}

static int one_round(void) {
  cells c = {{0}, {{0}}};
  slots s = {{0}, {0}, 0};
  int t, j;
  for (j = 0; j < JOBS; ++j) {
    if (byoc_parallel_for(TASKS, task, &c) != 0) return 1;
    if (byoc_parallel_chunks(TASKS, 3, chunk, &s) != 0) return 1;
  }
  for (t = 0; t < TASKS; ++t) {
    if (c.hits[t] != JOBS || s.done[t] != JOBS) return 1;
    if (t % 5 == 0 && (c.nested[t][0] != JOBS || c.nested[t][2] != JOBS)) return 1;
  }
  return s.overlap;
}

static void* caller(void* arg) {
  *(int*)arg = one_round();
  return NULL;
}

int main(void) {
  static const int counts[] = {1, 2, 3, 8};
  int i, failed = 0;
  for (i = 0; i < 4; ++i) {
    pthread_t other;
    int a = 0, b = 0;
    byoc_set_num_threads(counts[i]);
    pthread_create(&other, NULL, caller, &b);
    a = one_round();
    pthread_join(other, NULL);
    if (a || b) {
      fprintf(stderr, "pool_stress: wrong results at %d threads\n", counts[i]);
      failed = 1;
    }
  }
  for (i = 0; i < 40; ++i) { /* the pool shrinks and grows between jobs: workers stopped right after they started */
    static const int cycle[] = {8, 2, 5, 1};
    cells c = {{0}, {{0}}};
    int t;
    byoc_set_num_threads(cycle[i % 4]);
    for (t = 0; t < 3; ++t) byoc_parallel_for(TASKS, task, &c);
    for (t = 0; t < TASKS; ++t) failed |= c.hits[t] != 3;
  }
  byoc_set_num_threads(8);
  {
    const pid_t pid = fork(); /* the pool has 7 workers now; the child has none of them */
    int status = 0;
    if (pid == 0) _exit(one_round());
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "pool_stress: the pool failed in a child after fork\n");
      failed = 1;
    }
  }
  if (byoc_parallel_for(-1, task, NULL) == 0 || byoc_set_num_threads(-2) == 0) failed = 1;
  if (!failed) printf("pool_stress: ok\n");
  return failed;
}
