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

/* How long an idle worker spins before it sleeps: covers the gap between two matmuls and between
 * two tokens (sampling, a JS callback), short enough not to burn a core between requests. */
#define SPIN_NS 2000000LL

/* The loop being run. Two slots, by generation parity, so that a worker still reading the previous
 * loop's description never sees it change under it (see claim()). */
typedef struct loop_desc {
    runner_pool_fn fn;
    void *arg;
    int64_t n;
    int64_t chunk;
} loop_desc;

struct runner_pool {
    int n_threads;
    pthread_t *threads;
    loop_desc loops[2];
    /* (generation << 32) | next chunk index: one atomic word, so a claim can only succeed for the
     * loop it read the description of. */
    _Atomic uint64_t state;
    _Atomic int64_t done;  /* items finished in the current loop */
    _Atomic int stop;
    _Atomic int sleepers;
    _Atomic int idle;
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

/* Claim and run chunks of the loop of generation `gen` until none is left. */
static void work(runner_pool *pool, uint32_t gen, int ith) {
    const loop_desc *d = &pool->loops[gen & 1];
    const runner_pool_fn fn = d->fn;
    void *const arg = d->arg;
    const int64_t n = d->n, chunk = d->chunk;
    const uint64_t n_chunks = (uint64_t)((n + chunk - 1) / chunk);
    uint64_t s = atomic_load_explicit(&pool->state, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(s >> 32) != gen) return;
        const uint64_t idx = s & 0xffffffffu;
        if (idx >= n_chunks) return;
        if (!atomic_compare_exchange_weak_explicit(&pool->state, &s, s + 1, memory_order_acq_rel, memory_order_acquire)) continue;
        const int64_t begin = (int64_t)idx * chunk;
        const int64_t end = begin + chunk < n ? begin + chunk : n;
        fn(arg, begin, end, ith);
        atomic_fetch_add_explicit(&pool->done, end - begin, memory_order_release);
        s = atomic_load_explicit(&pool->state, memory_order_acquire);
    }
}

static void *worker_main(void *p) {
    struct worker_arg wa = *(struct worker_arg *)p;
    free(p);
    runner_pool *pool = wa.pool;
    uint32_t seen = 0;
    for (;;) {
        int64_t deadline = now_ns() + SPIN_NS;
        int spins = 0;
        uint32_t gen;
        while ((gen = (uint32_t)(atomic_load_explicit(&pool->state, memory_order_acquire) >> 32)) == seen &&
               !atomic_load_explicit(&pool->stop, memory_order_acquire)) {
            cpu_relax();
            if (++spins < 256) continue;
            spins = 0;
            if (!atomic_load_explicit(&pool->idle, memory_order_relaxed) && now_ns() < deadline) continue;
            pthread_mutex_lock(&pool->mutex);
            atomic_fetch_add(&pool->sleepers, 1);
            while ((uint32_t)(atomic_load(&pool->state) >> 32) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->wake, &pool->mutex);
            atomic_fetch_sub(&pool->sleepers, 1);
            pthread_mutex_unlock(&pool->mutex);
            deadline = now_ns() + SPIN_NS;
        }
        if (atomic_load_explicit(&pool->stop, memory_order_acquire)) return NULL;
        seen = gen;
        work(pool, gen, wa.ith);
    }
}

runner_pool *runner_pool_create(int n_threads) {
    if (n_threads < 1 || n_threads > 256) return NULL;
    runner_pool *pool = calloc(1, sizeof *pool);
    if (!pool) return NULL;
    pool->n_threads = 1;
    pthread_mutex_init(&pool->mutex, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pool->threads = calloc((size_t)n_threads, sizeof(pthread_t));
    if (!pool->threads) {
        runner_pool_free(pool);
        return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
        struct worker_arg *wa = malloc(sizeof *wa);
        if (!wa || (wa->pool = pool, wa->ith = i, pthread_create(&pool->threads[i], NULL, worker_main, wa) != 0)) {
            free(wa);
            runner_pool_free(pool);
            return NULL;
        }
        pool->n_threads = i + 1;
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

void runner_pool_for(runner_pool *pool, int64_t n, int64_t chunk, runner_pool_fn fn, void *arg) {
    if (n <= 0) return;
    if (chunk < 1) chunk = 1;
    if (pool->n_threads == 1 || n <= chunk) {
        fn(arg, 0, n, 0);
        return;
    }
    const uint32_t gen = (uint32_t)(atomic_load_explicit(&pool->state, memory_order_relaxed) >> 32) + 1;
    pool->loops[gen & 1] = (loop_desc){.fn = fn, .arg = arg, .n = n, .chunk = chunk};
    atomic_store_explicit(&pool->done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->idle, 0, memory_order_relaxed);
    /* seq_cst publish, then the sleeper check: either we see a sleeper and wake it, or it sees the
     * new generation under the mutex and does not sleep. */
    atomic_store(&pool->state, (uint64_t)gen << 32);
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->mutex);
        pthread_cond_broadcast(&pool->wake);
        pthread_mutex_unlock(&pool->mutex);
    }
    work(pool, gen, 0);
    while (atomic_load_explicit(&pool->done, memory_order_acquire) < n) cpu_relax();
}

void runner_pool_idle(runner_pool *pool) {
    atomic_store_explicit(&pool->idle, 1, memory_order_relaxed);
}
