/* parallel.c - the runtime's thread pool (byoc/parallel.h; docs/runtime-abi.md, "Threads inside a run").
 *
 * One pool per library (every model library links its own runtime): num_threads - 1 workers, started at
 * the first parallel call that has more than one task and more than one thread, stopped when the library
 * is unloaded (a destructor joins them: their code is about to be unmapped) and forgotten in a child
 * after fork (it has none of them). A job is published by one atomic word, `state` (its generation and
 * whether it is open); a worker joins by counting itself in `in_job` and then finding the state unchanged,
 * claims tasks (its own share of neighbouring tasks first, then the others' from their far ends: byoc_share), and
 * leaves by counting itself out; the caller claims tasks too, closes
 * the job and returns once every worker that joined has left, so no worker ever reads a job that has been
 * replaced. Neither side takes a lock while the other is spinning: kernels of one run follow each other
 * within microseconds, and a mutex handed between two threads (or a condition variable) puts one of them to
 * sleep and costs a wake-up of some 10-50 us on a VM, more than many small kernels take (int8 MobileNetV2
 * makes some 80 parallel calls in 3 ms). Workers spin for a while before they sleep on a condition variable,
 * the caller likewise before it sleeps waiting for the last worker to leave; a sleeper is announced in an
 * atomic counter, so that the other side takes the mutex only to wake one. Shared fields are read and
 * written with __atomic builtins or under the mutex (ThreadSanitizer-clean). */
#if !defined(BYOC_FREESTANDING) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif

#include "byoc/parallel.h"

#include "byoc/runtime.h"

#if defined(BYOC_FREESTANDING) || !(defined(__GNUC__) || defined(__clang__))
/* ---- no threads: every parallel call is a loop on the caller ----------------------------------- */

int32_t byoc_get_num_threads(void) { return 1; }

int32_t byoc_set_num_threads(int32_t n) {
  if (n < 0) {
    byoc_set_last_error("byoc_set_num_threads: %d threads; give 1 or more (0: the default)", (int)n);
    return -1;
  }
  return 0;
}

static int32_t byoc_run_serially(int32_t n_tasks, byoc_task_fn fn, void* ctx) {
  int32_t t;
  for (t = 0; t < n_tasks; ++t) fn(t, n_tasks, ctx);
  return 0;
}

static int32_t byoc_chunks_serially(int32_t n_chunks, byoc_chunk_fn fn, void* ctx) {
  int32_t c;
  for (c = 0; c < n_chunks; ++c) fn(c, 0, ctx);
  return 0;
}

#define BYOC_POOL_RUN byoc_run_serially
#define BYOC_POOL_CHUNKS(n_chunks, n_slots, fn, ctx) ((void)(n_slots), byoc_chunks_serially(n_chunks, fn, ctx))

#else
/* ---- hosted: pthreads ------------------------------------------------------------------------------ */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYOC_POOL_MAX_WORKERS 255 /* num_threads is clamped to 256 */
#define BYOC_SPIN_ROUNDS 4000 /* some 50-200 us of polling before a worker (or the waiting caller) sleeps */

typedef struct {
  pthread_t threads[BYOC_POOL_MAX_WORKERS];
  int32_t n_workers; /* started (under lock) */
  int32_t stop;      /* atomic: workers return */
  /* the job: written by the caller before `state` opens it, read by workers that joined it */
  byoc_task_fn fn;
  void* ctx;
  int32_t n_tasks;
  uint32_t state;    /* atomic: generation << 1 | 1 while the job is open (workers poll it) */
  int32_t in_job;    /* atomic: workers inside the job */
  int32_t sleepers;  /* atomic: workers asleep on g_wake (or about to be) */
  int32_t waiting;   /* atomic: the caller asleep on g_left (or about to be) */
  int32_t busy;      /* atomic: a caller owns the pool */
  byoc_chunk_fn chunk_fn; /* byoc_parallel_chunks' job (fn unused): the participant is the slot */
  int32_t n_parts;   /* participants of the job: the caller (0) and workers 1 .. n_parts - 1 */
} byoc_pool;

/* A participant's share of the job's tasks, [begin, end) packed as begin | end << 32 in one atomic word: its
 * owner takes tasks from the front, a participant done with its own share takes them from the back. Each share is
 * a run of neighbouring tasks, so neighbouring tasks (whose outputs may share cache lines) run on one thread, one
 * after the other, and a thread's outputs of one kernel sit where its next kernel's share reads them; a thief
 * works at the far end of the owner's run. On a line of its own: the owner claims without contention. */
typedef struct {
  uint64_t range;
  char pad[64 - sizeof(uint64_t)];
} byoc_share;

static byoc_pool g_pool;
static byoc_share g_shares[BYOC_POOL_MAX_WORKERS + 1] __attribute__((aligned(64)));
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake = PTHREAD_COND_INITIALIZER; /* workers: a new state, or stop */
static pthread_cond_t g_left = PTHREAD_COND_INITIALIZER; /* the caller: the last worker left the job */
static int32_t g_num_threads; /* atomic: 0 = not decided yet */
static __thread int32_t t_in_task; /* this thread runs a task: nested calls run serially */

/* The profiling build's accounting (-DBYOC_POOL_STATS; byoc/parallel.h, bench/pool_balance.py): per parallel call
 * that reaches the workers, in a slot kept by the call's place in a period (a model run's calls), the caller's time in
 * tasks, its wait for the workers after them, the workers' time in tasks and how late they joined. Workers add theirs
 * before they leave the job; the caller reads after all have left. Nanoseconds, in atomic counters. Without the
 * macro the hooks below are empty and compile away. */
#ifdef BYOC_POOL_STATS
#include <time.h>
#define BYOC_STATS_SLOTS 1024
static int64_t g_stats[BYOC_STATS_SLOTS][BYOC_POOL_STAT_FIELDS];
static int64_t g_stats_calls, g_stats_period = 1;
static int64_t g_stats_opened; /* atomic: when the current job opened (ns) */
static int32_t g_stats_slot;   /* atomic: the current job's slot */

static int64_t byoc_stats_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void byoc_stats_add(int32_t field, int64_t value) {
  __atomic_add_fetch(&g_stats[__atomic_load_n(&g_stats_slot, __ATOMIC_RELAXED)][field], value, __ATOMIC_RELAXED);
}

/* The caller, before it opens a job: the job's slot, counted; returns the time. */
static int64_t byoc_stats_open(int32_t n_tasks, byoc_task_fn fn, byoc_chunk_fn chunk_fn) {
  const int64_t now = byoc_stats_now();
  const int32_t slot = (int32_t)(g_stats_calls++ % g_stats_period % BYOC_STATS_SLOTS);
  __atomic_store_n(&g_stats_slot, slot, __ATOMIC_RELAXED);
  __atomic_store_n(&g_stats_opened, now, __ATOMIC_RELAXED);
  byoc_stats_add(BYOC_POOL_STAT_CALLS, 1);
  byoc_stats_add(BYOC_POOL_STAT_TASKS, n_tasks);
  __atomic_store_n(&g_stats[slot][BYOC_POOL_STAT_FUNCTION],
                   chunk_fn != NULL ? (int64_t)(intptr_t)chunk_fn : (int64_t)(intptr_t)fn, __ATOMIC_RELAXED);
  return now;
}

/* The caller, back from waiting: its time in tasks (opened .. done) and its wait (done .. now). */
static void byoc_stats_close(int64_t opened, int64_t done) {
  byoc_stats_add(BYOC_POOL_STAT_CALLER_NS, done - opened);
  byoc_stats_add(BYOC_POOL_STAT_WAIT_NS, byoc_stats_now() - done);
}

/* A worker joining the job: how late; returns the time. */
static int64_t byoc_stats_join(void) {
  const int64_t now = byoc_stats_now();
  byoc_stats_add(BYOC_POOL_STAT_JOIN_NS, now - __atomic_load_n(&g_stats_opened, __ATOMIC_RELAXED));
  return now;
}

static void byoc_stats_leave(int64_t joined) { byoc_stats_add(BYOC_POOL_STAT_WORKER_NS, byoc_stats_now() - joined); }

void byoc_pool_stats_reset(int32_t period) {
  memset(g_stats, 0, sizeof g_stats);
  g_stats_calls = 0;
  g_stats_period = period >= 1 ? period : 1;
}

int64_t byoc_pool_stats_read(int32_t index, int64_t* out) {
  int32_t f;
  if (out != NULL && index >= 0 && index < BYOC_STATS_SLOTS && index < g_stats_period)
    for (f = 0; f < BYOC_POOL_STAT_FIELDS; ++f) out[f] = __atomic_load_n(&g_stats[index][f], __ATOMIC_RELAXED);
  return g_stats_calls;
}
#else
static int64_t byoc_stats_now(void) { return 0; }
static int64_t byoc_stats_open(int32_t n_tasks, byoc_task_fn fn, byoc_chunk_fn chunk_fn) {
  (void)n_tasks;
  (void)fn;
  (void)chunk_fn;
  return 0;
}
static void byoc_stats_close(int64_t opened, int64_t done) {
  (void)opened;
  (void)done;
}
static int64_t byoc_stats_join(void) { return 0; }
static void byoc_stats_leave(int64_t joined) { (void)joined; }
#endif

static void byoc_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* A task of share `s` (its first, or with `from_back` its last), or -1 once the share is empty. */
static int32_t byoc_take(int32_t s, int from_back) {
  uint64_t now = __atomic_load_n(&g_shares[s].range, __ATOMIC_RELAXED);
  for (;;) {
    const uint32_t begin = (uint32_t)now, end = (uint32_t)(now >> 32);
    if (begin >= end) return -1;
    if (__atomic_compare_exchange_n(&g_shares[s].range, &now, from_back ? now - ((uint64_t)1 << 32) : now + 1u, 1,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return (int32_t)(from_back ? end - 1u : begin);
  }
}

/* Participant `me` runs its own share from the front, then the others' from their backs, until none is left. */
static void byoc_run_tasks(int32_t me) {
  const int32_t parts = g_pool.n_parts, n_tasks = g_pool.n_tasks;
  int32_t t, k;
  t_in_task = 1;
  for (k = 0; k < parts; ++k)
    while ((t = byoc_take((me + k) % parts, k > 0)) >= 0) {
      if (g_pool.chunk_fn != NULL)
        g_pool.chunk_fn(t, me, g_pool.ctx);
      else
        g_pool.fn(t, n_tasks, g_pool.ctx);
    }
  t_in_task = 0;
}

/* The pool's state once it differs from `seen`, or once the pool stops (a worker started late may first look
 * after the stop changed the state): spun for, then slept for. The sleeper counts itself in `sleepers` before
 * its last look at the state and `stop`, and the caller looks at `sleepers` after it changed them (all
 * sequentially consistent), so either the worker sees the change or the caller wakes it. */
static uint32_t byoc_next_state(uint32_t seen) {
  uint32_t now;
  int32_t spin;
  for (spin = 0; spin < BYOC_SPIN_ROUNDS; ++spin) {
    now = __atomic_load_n(&g_pool.state, __ATOMIC_ACQUIRE);
    if (now != seen || __atomic_load_n(&g_pool.stop, __ATOMIC_ACQUIRE)) return now;
    byoc_pause();
  }
  pthread_mutex_lock(&g_lock);
  __atomic_add_fetch(&g_pool.sleepers, 1, __ATOMIC_SEQ_CST);
  while ((now = __atomic_load_n(&g_pool.state, __ATOMIC_SEQ_CST)) == seen &&
         !__atomic_load_n(&g_pool.stop, __ATOMIC_SEQ_CST))
    pthread_cond_wait(&g_wake, &g_lock);
  __atomic_sub_fetch(&g_pool.sleepers, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g_lock);
  return now;
}

/* A new state: sleeping workers are woken (the mutex only when one sleeps). */
static void byoc_set_state(uint32_t state) {
  __atomic_store_n(&g_pool.state, state, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&g_pool.sleepers, __ATOMIC_SEQ_CST) > 0) {
    pthread_mutex_lock(&g_lock);
    pthread_cond_broadcast(&g_wake);
    pthread_mutex_unlock(&g_lock);
  }
}

/* A worker leaves the job: the last one out wakes the caller if it sleeps (the same handshake as above). */
static void byoc_leave_job(void) {
  if (__atomic_sub_fetch(&g_pool.in_job, 1, __ATOMIC_SEQ_CST) == 0 &&
      __atomic_load_n(&g_pool.waiting, __ATOMIC_SEQ_CST)) {
    pthread_mutex_lock(&g_lock);
    pthread_cond_signal(&g_left);
    pthread_mutex_unlock(&g_lock);
  }
}

static void* byoc_worker(void* arg) {
  const int32_t me = (int32_t)(intptr_t)arg; /* its participant number: workers are 1 .. n_workers */
  /* as if it had seen the current generation closed: a worker started during a job joins it */
  uint32_t seen = __atomic_load_n(&g_pool.state, __ATOMIC_ACQUIRE) & ~1u;
  for (;;) {
    seen = byoc_next_state(seen);
    if (__atomic_load_n(&g_pool.stop, __ATOMIC_ACQUIRE)) return NULL;
    if (!(seen & 1u)) continue; /* a job closed: wait for the next one */
    /* counted in first, then the job still open: the caller, which closes it before it counts, waits for us */
    __atomic_add_fetch(&g_pool.in_job, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&g_pool.state, __ATOMIC_SEQ_CST) == seen && me < g_pool.n_parts) {
      const int64_t joined = byoc_stats_join();
      byoc_run_tasks(me);
      byoc_stats_leave(joined);
    }
    byoc_leave_job();
  }
}

/* The caller, after closing the job: back once no worker is inside it (spun for, then slept for). */
static void byoc_wait_workers(void) {
  int32_t spin;
  for (spin = 0; spin < BYOC_SPIN_ROUNDS; ++spin) {
    if (__atomic_load_n(&g_pool.in_job, __ATOMIC_SEQ_CST) == 0) return;
    byoc_pause();
  }
  pthread_mutex_lock(&g_lock);
  __atomic_store_n(&g_pool.waiting, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&g_pool.in_job, __ATOMIC_SEQ_CST) > 0) pthread_cond_wait(&g_left, &g_lock);
  __atomic_store_n(&g_pool.waiting, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g_lock);
}

/* Stops and joins every worker (the caller owns the pool, or nobody can use it any more). */
static void byoc_pool_stop(void) {
  int32_t i, n;
  pthread_mutex_lock(&g_lock);
  n = g_pool.n_workers;
  pthread_mutex_unlock(&g_lock);
  __atomic_store_n(&g_pool.stop, 1, __ATOMIC_SEQ_CST);
  byoc_set_state(__atomic_load_n(&g_pool.state, __ATOMIC_RELAXED) + 2u); /* a closed generation: all look */
  for (i = 0; i < n; ++i) pthread_join(g_pool.threads[i], NULL);
  pthread_mutex_lock(&g_lock);
  g_pool.n_workers = 0;
  pthread_mutex_unlock(&g_lock);
  __atomic_store_n(&g_pool.stop, 0, __ATOMIC_RELEASE);
}

/* The library is being unloaded (dlclose) or the process exits: join the workers first. */
__attribute__((destructor)) static void byoc_pool_unload(void) {
  if (g_pool.n_workers > 0) byoc_pool_stop();
}

/* A child of fork has only the forking thread: the parent's workers do not exist here. */
static void byoc_pool_after_fork_child(void) {
  pthread_mutex_init(&g_lock, NULL);
  pthread_cond_init(&g_wake, NULL);
  pthread_cond_init(&g_left, NULL);
  g_pool.n_workers = 0;
  g_pool.stop = 0;
  g_pool.state &= ~1u;
  g_pool.in_job = 0;
  g_pool.sleepers = 0;
  g_pool.waiting = 0;
  __atomic_store_n(&g_pool.busy, 0, __ATOMIC_RELAXED);
  t_in_task = 0;
}

static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static void byoc_register_atfork(void) { pthread_atfork(NULL, NULL, byoc_pool_after_fork_child); }

/* Workers up to `wanted` (the caller owns the pool). Fewer start if the system refuses threads. */
static void byoc_pool_grow(int32_t wanted) {
  pthread_once(&g_atfork_once, byoc_register_atfork);
  if (g_pool.n_workers > wanted) byoc_pool_stop();
  pthread_mutex_lock(&g_lock);
  while (g_pool.n_workers < wanted &&
         pthread_create(&g_pool.threads[g_pool.n_workers], NULL, byoc_worker, (void*)(intptr_t)(g_pool.n_workers + 1)) ==
             0)
    ++g_pool.n_workers;
  pthread_mutex_unlock(&g_lock);
}

/* A job of n_tasks tasks on at most max_parts participants (fn(task, n_tasks, ctx), or with chunk_fn
 * chunk_fn(task, participant, ctx)); the caller's share is the first. */
static int32_t byoc_pool_job(int32_t n_tasks, int32_t max_parts, byoc_task_fn fn, byoc_chunk_fn chunk_fn, void* ctx) {
  const int32_t threads = byoc_get_num_threads();
  int32_t t, s, parts, expected = 0;
  uint32_t open;
  int64_t opened, done; /* (the profiling build's accounting) */
  if (n_tasks <= 1 || threads <= 1 || max_parts <= 1 || t_in_task ||
      !__atomic_compare_exchange_n(&g_pool.busy, &expected, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    for (t = 0; t < n_tasks; ++t) /* alone, nested, or the pool is taken */
      if (chunk_fn != NULL)
        chunk_fn(t, 0, ctx);
      else
        fn(t, n_tasks, ctx);
    return 0;
  }
  if (g_pool.n_workers != threads - 1) byoc_pool_grow(threads - 1);
  parts = g_pool.n_workers + 1; /* (fewer workers than asked if the system refused threads) */
  if (parts > max_parts) parts = max_parts;
  if (parts > n_tasks) parts = n_tasks;
  g_pool.fn = fn; /* no worker is inside a job: the last caller waited for them all to leave */
  g_pool.chunk_fn = chunk_fn;
  g_pool.ctx = ctx;
  g_pool.n_tasks = n_tasks;
  g_pool.n_parts = parts;
  for (s = 0; s < parts; ++s) /* shares as even as whole tasks allow */
    __atomic_store_n(&g_shares[s].range,
                     (uint64_t)(uint32_t)((int64_t)n_tasks * s / parts) |
                         (uint64_t)(uint32_t)((int64_t)n_tasks * (s + 1) / parts) << 32,
                     __ATOMIC_RELAXED);
  open = (__atomic_load_n(&g_pool.state, __ATOMIC_RELAXED) | 1u) + 2u; /* the next generation, open */
  opened = byoc_stats_open(n_tasks, fn, chunk_fn);
  byoc_set_state(open);
  byoc_run_tasks(0);
  done = byoc_stats_now();
  byoc_set_state(open & ~1u);
  byoc_wait_workers();
  byoc_stats_close(opened, done);
  __atomic_store_n(&g_pool.busy, 0, __ATOMIC_RELEASE);
  return 0;
}

static int32_t byoc_pool_run(int32_t n_tasks, byoc_task_fn fn, void* ctx) {
  return byoc_pool_job(n_tasks, n_tasks, fn, NULL, ctx);
}

#define BYOC_POOL_RUN byoc_pool_run
#define BYOC_POOL_CHUNKS(n_chunks, n_slots, fn, ctx) byoc_pool_job(n_chunks, n_slots, NULL, fn, ctx)

/* CPUs of the cgroup's quota (cgroup v2 cpu.max, v1 cfs_quota_us / cfs_period_us), 0 if unlimited. */
static int32_t byoc_cgroup_cpus(void) {
  long long quota = -1, period = 0;
  char text[64];
  FILE* f = fopen("/sys/fs/cgroup/cpu.max", "r");
  if (f != NULL) {
    if (fgets(text, sizeof text, f) != NULL && strncmp(text, "max", 3) != 0 &&
        sscanf(text, "%lld %lld", &quota, &period) != 2)
      quota = -1;
    fclose(f);
  } else if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "r")) != NULL) {
    if (fscanf(f, "%lld", &quota) != 1) quota = -1;
    fclose(f);
    if ((f = fopen("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "r")) != NULL) {
      if (fscanf(f, "%lld", &period) != 1) period = 0;
      fclose(f);
    }
  }
  if (quota <= 0 || period <= 0) return 0;
  return (int32_t)((quota + period - 1) / period);
}

static int32_t byoc_default_threads(void) {
  const char* env = getenv("BYOC_NUM_THREADS");
  int32_t n = 1, quota;
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = (int32_t)CPU_COUNT(&set);
#endif
  if (env != NULL && *env != '\0') {
    char* end;
    const long v = strtol(env, &end, 10);
    if (*end == '\0' && v >= 1) return v > BYOC_POOL_MAX_WORKERS + 1 ? BYOC_POOL_MAX_WORKERS + 1 : (int32_t)v;
    /* a malformed value is ignored: the default below */
  }
  quota = byoc_cgroup_cpus();
  if (quota > 0 && quota < n) n = quota;
  return n < 1 ? 1 : n;
}

int32_t byoc_get_num_threads(void) {
  int32_t n = __atomic_load_n(&g_num_threads, __ATOMIC_RELAXED);
  if (n == 0) {
    n = byoc_default_threads();
    __atomic_store_n(&g_num_threads, n, __ATOMIC_RELAXED);
  }
  return n;
}

int32_t byoc_set_num_threads(int32_t n) {
  if (n < 0) {
    byoc_set_last_error("byoc_set_num_threads: %d threads; give 1 or more (0: the default)", (int)n);
    return -1;
  }
  if (n > BYOC_POOL_MAX_WORKERS + 1) n = BYOC_POOL_MAX_WORKERS + 1;
  __atomic_store_n(&g_num_threads, n, __ATOMIC_RELAXED);
  return 0;
}
#endif

int32_t byoc_parallel_for(int32_t n_tasks, byoc_task_fn fn, void* ctx) {
  if (n_tasks < 0 || fn == NULL) {
    byoc_set_last_error("byoc_parallel_for: %d tasks, function %s", (int)n_tasks, fn == NULL ? "NULL" : "given");
    return -1;
  }
  return BYOC_POOL_RUN(n_tasks, fn, ctx);
}

/* byoc_parallel_chunks: the pool's participants are the slots (hosted), or every chunk on slot 0 (serial). */
int32_t byoc_parallel_chunks(int32_t n_chunks, int32_t n_slots, byoc_chunk_fn fn, void* ctx) {
  if (n_chunks < 0 || n_slots < 1 || fn == NULL) {
    byoc_set_last_error("byoc_parallel_chunks: %d chunks on %d slots, function %s", (int)n_chunks, (int)n_slots,
                        fn == NULL ? "NULL" : "given");
    return -1;
  }
  return BYOC_POOL_CHUNKS(n_chunks, n_slots, fn, ctx);
}
