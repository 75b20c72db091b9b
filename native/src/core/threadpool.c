#include "core/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* How long an idle worker spins before it sleeps. Long enough to cover the gap between two
 * tokens' matmuls (sampling, a JS callback), short enough not to burn a core between requests. */
#define SPIN_NS 2000000LL

struct runner_pool {
    int n_threads;
    pthread_t *threads;

    _Atomic uint64_t generation; /* bumped once per task */
    _Atomic int pending;         /* workers (other than 0) still running the current task */
    _Atomic int stop;
    _Atomic int sleepers;        /* workers waiting on the condition variable */
    _Atomic int idle;            /* set by runner_pool_idle: skip spinning, sleep at once */

    runner_pool_fn fn;
    void *arg;

    pthread_mutex_t mutex;
    pthread_cond_t wake;
};

struct worker_arg {
    runner_pool *pool;
    int ith;
};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *worker_main(void *p) {
    struct worker_arg wa = *(struct worker_arg *)p;
    free(p);
    runner_pool *pool = wa.pool;
    uint64_t seen = 0;
    for (;;) {
        /* Spin for the next generation, then sleep. */
        int64_t deadline = now_ns() + SPIN_NS;
        uint64_t gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&pool->stop, memory_order_acquire)) {
            cpu_relax();
            if (++spins < 1024) continue;
            spins = 0;
            if (!atomic_load_explicit(&pool->idle, memory_order_relaxed) && now_ns() < deadline) continue;
            pthread_mutex_lock(&pool->mutex);
            atomic_fetch_add(&pool->sleepers, 1);
            while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop)) {
                pthread_cond_wait(&pool->wake, &pool->mutex);
            }
            atomic_fetch_sub(&pool->sleepers, 1);
            pthread_mutex_unlock(&pool->mutex);
            deadline = now_ns() + SPIN_NS;
        }
        if (atomic_load_explicit(&pool->stop, memory_order_acquire)) return NULL;
        seen = gen;
        pool->fn(pool->arg, wa.ith, pool->n_threads);
        atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_release);
    }
}

runner_pool *runner_pool_create(int n_threads) {
    if (n_threads < 1 || n_threads > 256) return NULL;
    runner_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->n_threads = n_threads;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pool->threads = calloc((size_t)n_threads, sizeof(pthread_t));
    if (!pool->threads) {
        runner_pool_free(pool);
        return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
        struct worker_arg *wa = malloc(sizeof *wa);
        if (!wa) {
            pool->n_threads = i;
            runner_pool_free(pool);
            return NULL;
        }
        wa->pool = pool;
        wa->ith = i;
        if (pthread_create(&pool->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            pool->n_threads = i;
            runner_pool_free(pool);
            return NULL;
        }
    }
    return pool;
}

void runner_pool_free(runner_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mutex);
    atomic_store(&pool->stop, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);
    for (int i = 1; i < pool->n_threads; i++) pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->wake);
    pthread_mutex_destroy(&pool->mutex);
    free(pool->threads);
    free(pool);
}

int runner_pool_size(const runner_pool *pool) {
    return pool->n_threads;
}

void runner_pool_run(runner_pool *pool, runner_pool_fn fn, void *arg) {
    if (pool->n_threads == 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->idle, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->pending, pool->n_threads - 1, memory_order_relaxed);
    /* seq_cst on both sides (here and the sleeper's increment then re-check under the mutex):
     * either we see the sleeper and wake it, or it sees the new generation and does not sleep. */
    atomic_fetch_add(&pool->generation, 1);
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->mutex);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->mutex);
    }
    fn(arg, 0, pool->n_threads);
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0) cpu_relax();
}

void runner_pool_idle(runner_pool *pool) {
    atomic_store_explicit(&pool->idle, 1, memory_order_relaxed);
}
