/*
 * A STREAM-like read-bandwidth probe: THREADS threads each sum their share of a buffer far larger
 * than the caches (default 1 GiB), the best of REPS passes counts. Decode streams every weight once
 * per token, so this is the ceiling a decode kernel is measured against (scripts/bench.ts prints
 * each engine's decode GB/s as a share of it).
 *
 *   membw THREADS [MIB] [REPS]     prints {"threads":T,"mib":M,"readGBs":X}
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const uint8_t *p;
    size_t n;
    double sink;
    pthread_barrier_t *start;
} job;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Four independent 256-bit accumulators keep several loads in flight per core. */
__attribute__((target("avx2"))) static void *reader(void *arg) {
    job *j = arg;
    pthread_barrier_wait(j->start);
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i + 128 <= j->n; i += 128) {
        a = _mm256_xor_si256(a, _mm256_load_si256((const __m256i *)(j->p + i)));
        b = _mm256_xor_si256(b, _mm256_load_si256((const __m256i *)(j->p + i + 32)));
        c = _mm256_xor_si256(c, _mm256_load_si256((const __m256i *)(j->p + i + 64)));
        d = _mm256_xor_si256(d, _mm256_load_si256((const __m256i *)(j->p + i + 96)));
    }
    a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    j->sink = (double)_mm256_extract_epi64(a, 0);
    pthread_barrier_wait(j->start);
    return NULL;
}

int main(int argc, char **argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : 1;
    const size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 1024;
    const int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (threads < 1 || threads > 256 || mib < 64 || reps < 1) {
        fprintf(stderr, "usage: %s THREADS [MIB>=64] [REPS]\n", argv[0]);
        return 2;
    }
    const size_t bytes = mib << 20;
    uint8_t *buf = aligned_alloc(4096, bytes);
    if (!buf) return 1;
    memset(buf, 1, bytes); /* fault every page in before timing */
    double best = 0;
    for (int r = 0; r < reps; r++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        pthread_t tid[256];
        job jobs[256];
        const size_t share = (bytes / (size_t)threads) & ~(size_t)127;
        for (int t = 0; t < threads; t++) {
            jobs[t] = (job){buf + (size_t)t * share, share, 0, &start};
            pthread_create(&tid[t], NULL, reader, &jobs[t]);
        }
        pthread_barrier_wait(&start);
        const double t0 = now_s();
        pthread_barrier_wait(&start);
        const double dt = now_s() - t0;
        for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
        pthread_barrier_destroy(&start);
        const double gbs = (double)share * threads / dt / 1e9;
        if (gbs > best) best = gbs;
    }
    printf("{\"threads\":%d,\"mib\":%zu,\"readGBs\":%.2f}\n", threads, mib, best);
    free(buf);
    return 0;
}
