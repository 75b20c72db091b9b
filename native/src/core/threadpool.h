/*
 * A persistent pool of worker threads with dynamic chunked loops. The thread that calls
 * runner_pool_for is worker 0, so a pool of n threads creates n - 1 pthreads, once.
 *
 * Work is a range [0, n) cut into chunks that threads claim from an atomic counter. The caller
 * never waits for a worker to wake up: a worker that is slow to get a core (ENGINE.md measured
 * wake-ups of milliseconds on these VMs, the cause of llama.cpp's poor 2-thread figures under Node)
 * simply finds less work left. Each item is computed entirely by whichever thread claims it, with
 * the same code, so results never depend on the thread count or on who ran what.
 *
 * Between loops the workers spin on the counter for a bounded time, then sleep on a condition
 * variable; no thread is created per token or per layer.
 */
#ifndef RUNNER_THREADPOOL_H
#define RUNNER_THREADPOOL_H

#include <stdint.h>

typedef struct runner_pool runner_pool;

/* fn(arg, begin, end, ith): process items [begin, end); ith identifies the thread (for scratch). */
typedef void (*runner_pool_fn)(void *arg, int64_t begin, int64_t end, int ith);

/* NULL when a thread or the memory could not be had. n_threads in [1, 256]. */
runner_pool *runner_pool_create(int n_threads);
void runner_pool_free(runner_pool *pool);
int runner_pool_size(const runner_pool *pool);

/* Run fn over [0, n) in chunks of `chunk` items; returns when every item is done. Not reentrant. */
void runner_pool_for(runner_pool *pool, int64_t n, int64_t chunk, runner_pool_fn fn, void *arg);

/* Let the workers sleep now instead of spinning out their window (end of a generation). */
void runner_pool_idle(runner_pool *pool);

#endif
