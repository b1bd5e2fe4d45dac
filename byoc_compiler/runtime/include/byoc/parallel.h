/* byoc/parallel.h - the runtime's thread pool, for kernels that split their work (docs/runtime-abi.md,
 * "Threads inside a run").
 *
 * A kernel splits its work into a number of tasks that depends on the shape only, never on the thread
 * count, so results are bit-identical for every thread count. The calling thread runs a share of the
 * tasks itself; workers spin briefly, then sleep. A call from inside a task (nested) runs its tasks
 * serially on the calling thread, and so does a call while another instance of the same library holds
 * the pool. Built with BYOC_FREESTANDING (no threads), every call is a serial loop over the tasks. */
#ifndef BYOC_PARALLEL_H_
#define BYOC_PARALLEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-thread scratch is planned for at most this many threads (the build option max_threads, passed to
 * every compile of a model as -DBYOC_MAX_THREADS=N; 1 in the freestanding profile). */
#if defined(BYOC_FREESTANDING)
#undef BYOC_MAX_THREADS
#define BYOC_MAX_THREADS 1
#elif !defined(BYOC_MAX_THREADS)
#define BYOC_MAX_THREADS 8
#endif

typedef void (*byoc_task_fn)(int32_t task, int32_t n_tasks, void* ctx);

/* Runs fn(task, n_tasks, ctx) once for every task in [0, n_tasks), in any order and on any thread of the
 * pool (the caller included; each thread starts on a run of neighbouring tasks of its own, so tasks that
 * write neighbouring outputs mostly run on one thread); returns when all have returned. 0, or -1 with the last error set
 * (n_tasks < 0 or fn NULL). */
int32_t byoc_parallel_for(int32_t n_tasks, byoc_task_fn fn, void* ctx);

/* For kernels with per-thread scratch: fn(chunk, slot, ctx) for every chunk in [0, n_chunks), with
 * slot in [0, n_slots) and no two chunks running at once on one slot (so slot indexes a scratch
 * area); n_slots is what the scratch was planned for (at most BYOC_MAX_THREADS). Each thread takes a
 * run of neighbouring chunks first, then helps the others from their far ends; a chunk's result must
 * not depend on its slot. 0, or -1 with the last error set. */
typedef void (*byoc_chunk_fn)(int32_t chunk, int32_t slot, void* ctx);
int32_t byoc_parallel_chunks(int32_t n_chunks, int32_t n_slots, byoc_chunk_fn fn, void* ctx);

/* Threads a parallel call may use (the caller included), in this library: set by
 * byoc_set_num_threads, else the environment variable BYOC_NUM_THREADS, else the cores this process
 * may run on (its affinity mask, and its cgroup's CPU quota where there is one). 1 when freestanding. */
int32_t byoc_get_num_threads(void);
/* n >= 1 (0: back to the default above). Takes effect at the next parallel call; call it between
 * runs, not while a run of this library is in progress. Returns 0, or -1 with the last error set. */
int32_t byoc_set_num_threads(int32_t n);

#if defined(BYOC_POOL_STATS) && !defined(BYOC_FREESTANDING)
/* The profiling build (-DBYOC_POOL_STATS; bench/pool_balance.py): per parallel call that reaches the workers,
 * counters kept in a slot by the call's place in a period of `period` calls (a model run's), so that the same call
 * of every run adds up in one slot. Fields of a slot, nanoseconds summed over the calls: */
enum {
  BYOC_POOL_STAT_CALLS,     /* calls that landed in the slot */
  BYOC_POOL_STAT_TASKS,     /* their tasks */
  BYOC_POOL_STAT_CALLER_NS, /* the caller running tasks (its share, then the others' far ends) */
  BYOC_POOL_STAT_WAIT_NS,   /* the caller waiting for the workers' last tasks after that */
  BYOC_POOL_STAT_WORKER_NS, /* the workers running tasks, summed over workers */
  BYOC_POOL_STAT_JOIN_NS,   /* from the job's start to each worker's first task, summed over workers */
  BYOC_POOL_STAT_FUNCTION,  /* the address of the last call's task function (not a sum): which kernel it was */
  BYOC_POOL_STAT_FIELDS
};
/* Clears every slot; calls from now on land in slot (call number % period). Not during a run. */
void byoc_pool_stats_reset(int32_t period);
/* Copies slot `index`'s BYOC_POOL_STAT_FIELDS counters to out (when index < period and < 1024); returns the calls
 * counted since the reset. */
int64_t byoc_pool_stats_read(int32_t index, int64_t* out);
#endif

#ifdef __cplusplus
}
#endif

#endif /* BYOC_PARALLEL_H_ */
