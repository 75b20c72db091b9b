/*
 * Decode groups (runner.h): generations on several contexts of one model meet at each decode step,
 * and one of them (the leader) evaluates every waiting member's next token in one forward pass,
 * a segment per member (runner_forward_segments), on the group's own pool and scratch.
 *
 * A step starts when every member in its decode phase has arrived, or when the first arrival has
 * waited wait_us (a member busy elsewhere, in a slow grammar step or its callback, joins the next
 * one). Each member's entry lives on its own stack until the leader marks it done.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "model/forward.h"
#include "model/group.h"
#include "model/model.h"

typedef struct group_entry {
    runner_context *ctx;
    int32_t token, pos;
    runner_status status;
    int done;
    char err[256];
} group_entry;

struct runner_group {
    runner_context *compute; /* scratch and pool of the steps; its own KV cache is never used */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int32_t max_members, members, running;
    int32_t wait_us;
    group_entry **pending; /* arrived for the next step */
    int32_t n_pending;
    group_entry **taken;   /* the running step's entries (the leader's, while running) */
    group_entry **valid;   /* those of them that passed the checks, in segment order */
    int32_t *tokens, *seg_of;
    runner_segment *segs;
    runner_group_stats stats;
};

runner_status runner_group_create(runner_model *model, int32_t n_threads, int32_t max_members, int32_t wait_us, runner_group **out,
                                  char *err, int32_t err_len) {
    *out = NULL;
    if (max_members < 1 || max_members > 4096)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "group: max_members %d out of range [1, 4096]", max_members);
    if (wait_us < 0 || wait_us > 1000000)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "group: wait_us %d out of range [0, 1000000]", wait_us);
    runner_group *g = calloc(1, sizeof *g);
    if (!g) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "group: out of memory");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* The smallest cache (one block): the steps use the members' caches. */
    const runner_context_params cp = {.n_ctx = 1, .n_batch = max_members, .n_threads = n_threads, .kv_type = RUNNER_KV_F16};
    runner_status st = runner_context_create(model, &cp, &g->compute, err, err_len);
    if (st != RUNNER_OK) {
        runner_group_free(g);
        return st;
    }
    g->max_members = max_members;
    g->wait_us = wait_us;
    g->pending = calloc((size_t)max_members, sizeof *g->pending);
    g->taken = calloc((size_t)max_members, sizeof *g->taken);
    g->valid = calloc((size_t)max_members, sizeof *g->valid);
    g->tokens = calloc((size_t)max_members, sizeof *g->tokens);
    g->seg_of = calloc((size_t)max_members, sizeof *g->seg_of);
    g->segs = calloc((size_t)max_members, sizeof *g->segs);
    if (!g->pending || !g->taken || !g->valid || !g->tokens || !g->seg_of || !g->segs) {
        runner_group_free(g);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "group: out of memory");
    }
    *out = g;
    return RUNNER_OK;
}

void runner_group_free(runner_group *g) {
    if (!g) return;
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    runner_context_free(g->compute);
    free(g->pending);
    free(g->taken);
    free(g->valid);
    free(g->tokens);
    free(g->seg_of);
    free(g->segs);
    free(g);
}

void runner_group_stats_get(runner_group *g, runner_group_stats *out) {
    pthread_mutex_lock(&g->mu);
    *out = g->stats;
    pthread_mutex_unlock(&g->mu);
}

const runner_model *runner_group_model(const runner_group *g) {
    return g->compute->model;
}

int runner_group_enter(runner_group *g) {
    pthread_mutex_lock(&g->mu);
    const int joined = g->members < g->max_members;
    if (joined) g->members++;
    pthread_mutex_unlock(&g->mu);
    return joined;
}

void runner_group_leave(runner_group *g) {
    pthread_mutex_lock(&g->mu);
    g->members--;
    if (g->members == 0 && !g->running) runner_pool_idle(g->compute->pool);
    pthread_cond_broadcast(&g->cv); /* the members left waiting may now be all there is */
    pthread_mutex_unlock(&g->mu);
}

/* The leader's step over the n entries taken (the lock is not held). */
static int32_t run_step(runner_group *g, int32_t n) {
    const int32_t n_vocab = g->compute->model->cfg.n_vocab;
    group_entry **batch = g->valid;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        group_entry *e = g->taken[i];
        /* the checks runner_decode makes of one token */
        if (e->pos < 0 || e->pos > e->ctx->kv.n_past || e->pos >= e->ctx->params.n_ctx || e->token < 0 || e->token >= n_vocab) {
            e->status = runner_fail(e->err, (int32_t)sizeof e->err, RUNNER_ERR_INVALID_ARGUMENT,
                                    "group step: token %d at position %d (cached %d, context %d)", e->token, e->pos, e->ctx->kv.n_past,
                                    e->ctx->params.n_ctx);
            continue;
        }
        runner_kv_cache_reserve(&e->ctx->kv, e->pos + 1);
        g->tokens[m] = e->token;
        g->seg_of[m] = m;
        g->segs[m] = (runner_segment){.seq = e->ctx, .t0 = m, .n = 1, .pos = e->pos};
        batch[m++] = e;
    }
    if (m == 0) return 0;
    char err[256] = {0};
    const runner_status st =
        runner_forward_segments(g->compute, g->tokens, m, g->segs, m, g->seg_of, RUNNER_LOGITS_ALL, NULL, err, (int32_t)sizeof err);
    for (int32_t i = 0; i < m; i++) {
        group_entry *e = batch[i];
        e->status = st;
        if (st != RUNNER_OK) {
            /* as runner_decode leaves a context whose step failed: the position not evaluated */
            memcpy(e->err, err, sizeof e->err);
            e->ctx->kv.n_past = e->pos;
            e->ctx->last_logits = NULL;
            continue;
        }
        /* The member's own logits row, as its runner_decode would leave it. */
        memcpy(e->ctx->s.logits, g->compute->s.logits + (size_t)i * n_vocab, (size_t)n_vocab * sizeof(float));
        e->ctx->last_logits = e->ctx->s.logits;
        e->ctx->kv.n_past = e->pos + 1;
    }
    return st == RUNNER_OK ? m : 0;
}

/* The condition variable waits on the monotonic clock (runner_group_create), so a clock step cannot
 * stretch a wait. */
static void deadline_after(struct timespec *t, int32_t us) {
    clock_gettime(CLOCK_MONOTONIC, t);
    t->tv_nsec += (long)us * 1000L;
    while (t->tv_nsec >= 1000000000L) t->tv_sec++, t->tv_nsec -= 1000000000L;
}

runner_status runner_group_decode(runner_group *g, runner_context *ctx, int32_t token, int32_t pos, char *err, int32_t err_len) {
    group_entry e = {.ctx = ctx, .token = token, .pos = pos, .status = RUNNER_OK, .done = 0};
    pthread_mutex_lock(&g->mu);
    g->pending[g->n_pending++] = &e;
    struct timespec until;
    deadline_after(&until, g->wait_us);
    int timed_out = 0;
    while (!e.done) {
        if (!g->running && e.done == 0 && (g->n_pending >= g->members || timed_out)) {
            /* Lead: take every waiting entry, run the step without the lock. */
            const int32_t n = g->n_pending;
            memcpy(g->taken, g->pending, (size_t)n * sizeof *g->taken);
            g->n_pending = 0;
            g->running = 1;
            pthread_mutex_unlock(&g->mu);
            const int32_t evaluated = run_step(g, n);
            pthread_mutex_lock(&g->mu);
            if (evaluated > 0) g->stats.steps++, g->stats.tokens += (uint64_t)evaluated;
            for (int32_t i = 0; i < n; i++) g->taken[i]->done = 1;
            g->running = 0;
            pthread_cond_broadcast(&g->cv);
            continue;
        }
        if (g->running) {
            /* A step is running without this entry: the wait for the others starts when it ends,
             * or the entries that came during it would go on alone while the step's own members
             * are still sampling (two half batches taking turns). */
            while (g->running) pthread_cond_wait(&g->cv, &g->mu);
            deadline_after(&until, g->wait_us);
            timed_out = 0;
            continue;
        }
        if (pthread_cond_timedwait(&g->cv, &g->mu, &until) == ETIMEDOUT) timed_out = 1;
    }
    pthread_mutex_unlock(&g->mu);
    if (e.status != RUNNER_OK) runner_fail(err, err_len, e.status, "%s", e.err);
    return e.status;
}
