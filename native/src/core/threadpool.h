/*
 * A persistent pool of worker threads. The thread that calls runner_pool_run is worker 0, so a
 * pool of n threads creates n - 1 pthreads, once. Between tasks the workers spin on an atomic
 * generation counter for a bounded time, then sleep on a condition variable: no thread is created
 * per token or per layer, and a task that follows another within the spin window starts in well
 * under a microsecond (ENGINE.md measured 0.3 µs for a spin barrier here, 40 µs and up for a wake).
 */
#ifndef RUNNER_THREADPOOL_H
#define RUNNER_THREADPOOL_H

#include <stdint.h>

typedef struct runner_pool runner_pool;

/* fn(arg, ith, nth): the same function on every worker, ith in [0, nth). */
typedef void (*runner_pool_fn)(void *arg, int ith, int nth);

/* NULL when a thread or the memory could not be had. n_threads in [1, 256]. */
runner_pool *runner_pool_create(int n_threads);
void runner_pool_free(runner_pool *pool);
int runner_pool_size(const runner_pool *pool);

/* Run fn on all workers and return when every one has finished. Not reentrant. */
void runner_pool_run(runner_pool *pool, runner_pool_fn fn, void *arg);

/* Let the workers sleep now instead of spinning out their window (end of a generation). */
void runner_pool_idle(runner_pool *pool);

/* Contiguous share [*begin, *end) of n items for worker ith of nth (the same split every time). */
static inline void runner_split(int64_t n, int ith, int nth, int64_t *begin, int64_t *end) {
    int64_t per = n / nth, extra = n % nth;
    *begin = ith * per + (ith < extra ? ith : extra);
    *end = *begin + per + (ith < extra ? 1 : 0);
}

#endif
