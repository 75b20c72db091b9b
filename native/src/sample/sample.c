/*
 * sample.c: the sampler chain documented in sample.h and docs/sampling.md.
 *
 * Cost per token: O(n_vocab) passes plus a sort of the kept prefix only; the vocabulary is never
 * sorted unless the cuts keep all of it. top-k, top-p and min-p each keep a prefix of the ranking
 * (logit desc, id asc), and the draw walks the survivors in id order, so the sampler only needs to
 * know how long the prefix is:
 *  - small top-k (<= HEAP_MAX_K): a bounded heap in one pass over the logits;
 *  - larger top-k, and top-p without top-k: a histogram of the logits by distance below the maximum
 *    (with the probability mass per bucket for top-p) says which buckets hold the prefix; those
 *    entries are collected in id order and radix-sorted by logit (stable, so ties stay in id order).
 * Measured at n_vocab 150000 on the build machine: see docs/sampling.md.
 */
#include "runner.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/rng.h"

/* Histogram of live logits by distance below the maximum: bucket floor((lmax - l) * 64), the last
 * bucket holding everything 64 nats or more below (weight < e^-64 each). */
#define N_BUCKETS 4096
#define BUCKETS_PER_NAT 64.0
/* Up to this k, top-k is one pass with a heap of k; above it, histogram + radix sort is cheaper. */
#define HEAP_MAX_K 256
/* Above this many survivors the draw scans the vocabulary in id order instead of sorting them by id. */
#define SCAN_MIN_KEEP 2048

typedef struct cand {
    float l; /* logit after bias and penalties */
    int32_t id;
} cand;

struct runner_sampler {
    int32_t n_vocab;
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
    float repeat_penalty;
    float presence_penalty;
    float frequency_penalty;
    int32_t logprobs;
    int32_t n_top_logprobs;
    runner_rng rng;

    float *work;   /* [n_vocab] logits after steps 1-2, excluded entries -inf */
    cand *cands;   /* [n_vocab] selection heap / kept prefix */
    cand *tmp;     /* [n_vocab] radix sort buffer */
    double *w;     /* [n_vocab] weights exp((l - lmax) / T) of the draw, in the order summed */
    int32_t *bucket_count; /* [N_BUCKETS] */
    double *bucket_mass;   /* [N_BUCKETS] */

    int32_t *bias_tokens; /* [n_bias] */
    float *bias_values;   /* [n_bias] */
    int32_t n_bias;

    uint8_t *exempt; /* [n_vocab] 1: penalties never touch it; NULL when there is none */

    /* Penalty window: a ring of the last `ring_cap` accepted tokens and, per token, how often it
     * occurs in the ring. Both NULL when penalties are off. */
    int32_t *ring;   /* [ring_cap] */
    int32_t *counts; /* [n_vocab] */
    int32_t ring_cap;
    int32_t ring_head; /* next slot to write */
    int32_t ring_size;
};

/* ---- allocation ----------------------------------------------------------------------------- */

static void *alloc_array(size_t count, size_t elem) {
    if (count == 0) count = 1; /* a valid pointer even for empty arrays */
    if (count > SIZE_MAX / elem) return NULL;
    return malloc(count * elem);
}

void runner_sampler_free(runner_sampler *s) {
    if (s == NULL) return;
    free(s->work);
    free(s->cands);
    free(s->tmp);
    free(s->w);
    free(s->bucket_count);
    free(s->bucket_mass);
    free(s->bias_tokens);
    free(s->bias_values);
    free(s->exempt);
    free(s->ring);
    free(s->counts);
    free(s);
}

/* ---- validation ------------------------------------------------------------------------------ */

static void set_err(char *err, int32_t err_len, const char *msg) {
    if (err == NULL || err_len <= 0) return;
    snprintf(err, (size_t)err_len, "%s", msg);
}

static int is_finite_f(float x) {
    return isfinite(x) != 0;
}

/* Writes the reason into err and returns 0 when params are unusable. %.9g prints a float so that it
 * reads back to the same value. */
static int validate_params(const runner_sampler_params *p, int32_t n_vocab, char *err, int32_t err_len) {
    char msg[256];
    if (n_vocab <= 0) {
        snprintf(msg, sizeof msg, "n_vocab = %d: must be at least 1", (int)n_vocab);
        goto bad;
    }
    if (!is_finite_f(p->temperature) || p->temperature < 0.0f) {
        snprintf(msg, sizeof msg, "temperature = %.9g: must be finite and >= 0 (0: greedy)", (double)p->temperature);
        goto bad;
    }
    if (p->top_k < 0) {
        snprintf(msg, sizeof msg, "top_k = %d: must be >= 0 (0: off)", (int)p->top_k);
        goto bad;
    }
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f)) { /* also refuses NaN */
        snprintf(msg, sizeof msg, "top_p = %.9g: must be in (0, 1] (1: off)", (double)p->top_p);
        goto bad;
    }
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f)) {
        snprintf(msg, sizeof msg, "min_p = %.9g: must be in [0, 1] (0: off)", (double)p->min_p);
        goto bad;
    }
    if (!is_finite_f(p->repeat_penalty) || !(p->repeat_penalty > 0.0f)) {
        snprintf(msg, sizeof msg, "repeat_penalty = %.9g: must be finite and > 0 (1: off)", (double)p->repeat_penalty);
        goto bad;
    }
    if (!is_finite_f(p->presence_penalty)) {
        snprintf(msg, sizeof msg, "presence_penalty = %.9g: must be finite (0: off)", (double)p->presence_penalty);
        goto bad;
    }
    if (!is_finite_f(p->frequency_penalty)) {
        snprintf(msg, sizeof msg, "frequency_penalty = %.9g: must be finite (0: off)", (double)p->frequency_penalty);
        goto bad;
    }
    if (p->penalty_last_n < 0 || p->penalty_last_n > RUNNER_MAX_PENALTY_LAST_N) {
        snprintf(msg, sizeof msg, "penalty_last_n = %d: must be in [0, %d] (0: off)", (int)p->penalty_last_n,
                 (int)RUNNER_MAX_PENALTY_LAST_N);
        goto bad;
    }
    if (p->n_top_logprobs < 0 || p->n_top_logprobs > RUNNER_MAX_TOP_LOGPROBS) {
        snprintf(msg, sizeof msg, "n_top_logprobs = %d: must be in [0, %d]", (int)p->n_top_logprobs,
                 (int)RUNNER_MAX_TOP_LOGPROBS);
        goto bad;
    }
    if (p->n_top_logprobs > 0 && p->logprobs == 0) {
        snprintf(msg, sizeof msg, "n_top_logprobs = %d needs logprobs to be on", (int)p->n_top_logprobs);
        goto bad;
    }
    if (p->n_bias < 0 || (p->n_bias > 0 && (p->bias_tokens == NULL || p->bias_values == NULL))) {
        snprintf(msg, sizeof msg, "n_bias = %d: must be >= 0, with bias_tokens and bias_values given when > 0",
                 (int)p->n_bias);
        goto bad;
    }
    for (int32_t i = 0; i < p->n_bias; ++i) {
        const int32_t t = p->bias_tokens[i];
        const float v = p->bias_values[i];
        if (t < 0 || t >= n_vocab) {
            snprintf(msg, sizeof msg, "logit_bias[%d] token = %d: must be in [0, %d)", (int)i, (int)t, (int)n_vocab);
            goto bad;
        }
        if (!(is_finite_f(v) || (isinf(v) && v < 0.0f))) {
            snprintf(msg, sizeof msg, "logit_bias[%d] (token %d) = %.9g: must be finite or -inf (bans the token)",
                     (int)i, (int)t, (double)v);
            goto bad;
        }
    }
    if (p->n_exempt < 0 || (p->n_exempt > 0 && p->exempt_tokens == NULL)) {
        snprintf(msg, sizeof msg, "n_exempt = %d: must be >= 0, with exempt_tokens given when > 0", (int)p->n_exempt);
        goto bad;
    }
    for (int32_t i = 0; i < p->n_exempt; ++i) {
        const int32_t t = p->exempt_tokens[i];
        if (t < 0 || t >= n_vocab) {
            snprintf(msg, sizeof msg, "exempt_tokens[%d] = %d: must be in [0, %d)", (int)i, (int)t, (int)n_vocab);
            goto bad;
        }
    }
    return 1;
bad:
    set_err(err, err_len, msg);
    return 0;
}

runner_status runner_sampler_create(const runner_sampler_params *params, int32_t n_vocab, runner_sampler **out, char *err, int32_t err_len) {
    *out = NULL;
    if (params == NULL) {
        set_err(err, err_len, "params is NULL");
        return RUNNER_ERR_INVALID_ARGUMENT;
    }
    if (!validate_params(params, n_vocab, err, err_len)) return RUNNER_ERR_INVALID_ARGUMENT;

    runner_sampler *s = (runner_sampler *)calloc(1, sizeof *s);
    if (s == NULL) goto oom;
    s->n_vocab = n_vocab;
    s->temperature = params->temperature;
    s->top_k = params->top_k;
    s->top_p = params->top_p;
    s->min_p = params->min_p;
    s->repeat_penalty = params->repeat_penalty;
    s->presence_penalty = params->presence_penalty;
    s->frequency_penalty = params->frequency_penalty;
    s->logprobs = params->logprobs != 0;
    s->n_top_logprobs = params->n_top_logprobs;
    runner_rng_seed(&s->rng, params->seed);

    const size_t nv = (size_t)n_vocab;
    s->work = (float *)alloc_array(nv, sizeof *s->work);
    s->cands = (cand *)alloc_array(nv, sizeof *s->cands);
    s->tmp = (cand *)alloc_array(nv, sizeof *s->tmp);
    s->w = (double *)alloc_array(nv, sizeof *s->w);
    s->bucket_count = (int32_t *)alloc_array(N_BUCKETS, sizeof *s->bucket_count);
    s->bucket_mass = (double *)alloc_array(N_BUCKETS, sizeof *s->bucket_mass);
    if (s->work == NULL || s->cands == NULL || s->tmp == NULL || s->w == NULL || s->bucket_count == NULL ||
        s->bucket_mass == NULL) {
        goto oom;
    }

    /* Logit bias: refuse a token listed twice rather than pick a rule (sum? last wins?) silently.
     * `work` serves as the "seen" mark here; sample() overwrites it entirely. */
    s->n_bias = params->n_bias;
    s->bias_tokens = (int32_t *)alloc_array((size_t)s->n_bias, sizeof *s->bias_tokens);
    s->bias_values = (float *)alloc_array((size_t)s->n_bias, sizeof *s->bias_values);
    if (s->bias_tokens == NULL || s->bias_values == NULL) goto oom;
    for (int32_t i = 0; i < s->n_bias; ++i) s->work[params->bias_tokens[i]] = 0.0f;
    for (int32_t i = 0; i < s->n_bias; ++i) {
        const int32_t t = params->bias_tokens[i];
        if (s->work[t] != 0.0f) {
            char msg[128];
            snprintf(msg, sizeof msg, "logit_bias lists token %d more than once", (int)t);
            set_err(err, err_len, msg);
            runner_sampler_free(s);
            return RUNNER_ERR_INVALID_ARGUMENT;
        }
        s->work[t] = 1.0f;
        s->bias_tokens[i] = t;
        s->bias_values[i] = params->bias_values[i];
    }

    const int penalties_on = params->penalty_last_n > 0 &&
                             (params->repeat_penalty != 1.0f || params->presence_penalty != 0.0f ||
                              params->frequency_penalty != 0.0f);
    if (penalties_on) {
        s->ring_cap = params->penalty_last_n;
        s->ring = (int32_t *)alloc_array((size_t)s->ring_cap, sizeof *s->ring);
        s->counts = (int32_t *)calloc(nv, sizeof *s->counts);
        if (s->ring == NULL || s->counts == NULL) goto oom;
        if (params->n_exempt > 0) {
            s->exempt = (uint8_t *)calloc(nv, 1);
            if (s->exempt == NULL) goto oom;
            for (int32_t i = 0; i < params->n_exempt; ++i) s->exempt[params->exempt_tokens[i]] = 1;
        }
    }
    *out = s;
    return RUNNER_OK;

oom:
    {
        char msg[160];
        snprintf(msg, sizeof msg, "out of memory allocating sampler scratch for n_vocab = %d, penalty_last_n = %d",
                 (int)n_vocab, (int)params->penalty_last_n);
        set_err(err, err_len, msg);
    }
    runner_sampler_free(s);
    return RUNNER_ERR_NO_MEMORY;
}

int32_t runner_sampler_n_vocab(const runner_sampler *s) {
    return s == NULL ? 0 : s->n_vocab;
}

/* ---- penalty history ------------------------------------------------------------------------- */

int runner_sampler_accept(runner_sampler *s, int32_t token) {
    if (s == NULL || token < 0 || token >= s->n_vocab) return -1;
    if (s->ring == NULL) return 0;
    if (s->ring_size == s->ring_cap) {
        s->counts[s->ring[s->ring_head]] -= 1; /* the oldest token leaves the window */
    } else {
        s->ring_size += 1;
    }
    s->ring[s->ring_head] = token;
    s->counts[token] += 1;
    s->ring_head = s->ring_head + 1 == s->ring_cap ? 0 : s->ring_head + 1;
    return 0;
}

/* llama.cpp's llama_sampler_penalties_apply, once per distinct token of the window, in float:
 *   l = l <= 0 ? l * repeat : l / repeat;   l -= count * frequency + presence.
 * Each distinct token is visited once by negating its count after use, then restoring: O(window),
 * no extra memory. */
static void apply_penalties(runner_sampler *s) {
    if (s->ring == NULL) return;
    for (int32_t i = 0; i < s->ring_size; ++i) {
        const int32_t t = s->ring[i];
        const int32_t c = s->counts[t];
        if (c <= 0) continue; /* already applied */
        s->counts[t] = -c;
        if (s->exempt != NULL && s->exempt[t]) continue;
        float l = s->work[t];
        if (l <= 0.0f) {
            l *= s->repeat_penalty;
        } else {
            l /= s->repeat_penalty;
        }
        const float sub = (float)c * s->frequency_penalty + s->presence_penalty;
        s->work[t] = l - sub;
    }
    for (int32_t i = 0; i < s->ring_size; ++i) {
        const int32_t t = s->ring[i];
        if (s->counts[t] < 0) s->counts[t] = -s->counts[t];
    }
}

/* ---- ranking --------------------------------------------------------------------------------- */

/* The ranking every cut uses: logit desc, then id asc. A total order, so the kept prefix does not
 * depend on how it was computed. */
static int ranks_before(cand a, cand b) {
    return a.l > b.l || (a.l == b.l && a.id < b.id);
}

/* Heap with the lowest-ranked element at the root. */
static void heap_sift_down_rank(cand *h, int32_t n, int32_t i) {
    for (;;) {
        const int32_t l = 2 * i + 1;
        const int32_t r = l + 1;
        int32_t worst = i;
        if (l < n && ranks_before(h[worst], h[l])) worst = l;
        if (r < n && ranks_before(h[worst], h[r])) worst = r;
        if (worst == i) return;
        const cand tmp = h[i];
        h[i] = h[worst];
        h[worst] = tmp;
        i = worst;
    }
}

static void heap_sift_up_rank(cand *h, int32_t i) {
    while (i > 0) {
        const int32_t parent = (i - 1) / 2;
        if (!ranks_before(h[parent], h[i])) return;
        const cand tmp = h[i];
        h[i] = h[parent];
        h[parent] = tmp;
        i = parent;
    }
}

/* cands[0..result) = the `m` best-ranked non-excluded entries of work, best first. One pass over
 * the vocabulary with a heap of m: O(n_vocab) comparisons plus O(log m) per entry that displaces
 * the current m-th, then a heap sort of the m. */
static int32_t select_top(runner_sampler *s, int32_t m) {
    cand *h = s->cands;
    int32_t n = 0;
    const float *work = s->work;
    const int32_t nv = s->n_vocab;
    int32_t id = 0;
    for (; id < nv && n < m; ++id) {
        if (work[id] == -INFINITY) continue;
        h[n].l = work[id];
        h[n].id = id;
        heap_sift_up_rank(h, n);
        n += 1;
    }
    if (n == 0) return 0;
    /* Ids only grow, so an entry outranks the root iff its logit is strictly larger. */
    for (; id < nv; ++id) {
        const float l = work[id];
        if (l > h[0].l) {
            h[0].l = l;
            h[0].id = id;
            heap_sift_down_rank(h, n, 0);
        }
    }
    for (int32_t end = n - 1; end > 0; --end) {
        const cand tmp = h[0];
        h[0] = h[end];
        h[end] = tmp;
        heap_sift_down_rank(h, end, 0);
    }
    return n;
}


/* Sort key: ascending key order = descending logit. -0 is keyed as +0 because the ranking compares
 * floats (-0 == +0, tie broken by id). */
static uint32_t rank_key(float l) {
    if (l == 0.0f) l = 0.0f;
    uint32_t u;
    memcpy(&u, &l, sizeof u);
    u = (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u); /* ascending in l */
    return ~u;
}

/* Stable LSD radix sort of c[0..n) by rank_key, 4 passes of 8 bits through tmp; input in id order,
 * so the output is in ranking order (logit desc, id asc). */
static void radix_sort_rank(cand *c, cand *tmp, int32_t n) {
    cand *src = c;
    cand *dst = tmp;
    for (unsigned shift = 0; shift < 32; shift += 8) {
        int32_t count[257] = {0};
        for (int32_t i = 0; i < n; ++i) count[((rank_key(src[i].l) >> shift) & 0xFFu) + 1] += 1;
        for (int32_t d = 0; d < 256; ++d) count[d + 1] += count[d];
        for (int32_t i = 0; i < n; ++i) dst[count[(rank_key(src[i].l) >> shift) & 0xFFu]++] = src[i];
        cand *t = src;
        src = dst;
        dst = t;
    }
    /* 4 passes: the result is back in c. */
}

static int32_t bucket_of(double lmax, float l) {
    const double d = (lmax - (double)l) * BUCKETS_PER_NAT; /* >= 0, and monotone in l */
    return d < (double)(N_BUCKETS - 1) ? (int32_t)d : N_BUCKETS - 1;
}

/* One pass: entries per bucket, and (with_mass) z = sum of exp(l - lmax) in id order plus the same
 * mass per bucket; n_minp = live entries with l >= min_l. */
static void histogram(runner_sampler *s, double lmax, int with_mass, double min_l, double *z, int32_t *n_minp) {
    memset(s->bucket_count, 0, N_BUCKETS * sizeof *s->bucket_count);
    if (with_mass) memset(s->bucket_mass, 0, N_BUCKETS * sizeof *s->bucket_mass);
    double sum = 0.0;
    int32_t nm = 0;
    for (int32_t id = 0; id < s->n_vocab; ++id) {
        const float l = s->work[id];
        if (l == -INFINITY) continue;
        const int32_t b = bucket_of(lmax, l);
        s->bucket_count[b] += 1;
        if (with_mass) {
            const double e = exp((double)l - lmax);
            sum += e;
            s->bucket_mass[b] += e;
        }
        if ((double)l >= min_l) nm += 1;
    }
    *z = sum;
    *n_minp = nm;
}

/* cands[0..result) = every live entry in buckets 0..b_stop, in ranking order. */
static int32_t collect_sorted(runner_sampler *s, double lmax, int32_t b_stop) {
    int32_t n = 0;
    for (int32_t id = 0; id < s->n_vocab; ++id) {
        const float l = s->work[id];
        if (l == -INFINITY || bucket_of(lmax, l) > b_stop) continue;
        s->cands[n].l = l;
        s->cands[n].id = id;
        n += 1;
    }
    radix_sort_rank(s->cands, s->tmp, n);
    return n;
}

/* Heap sort of c[0..n) by id ascending (max-heap on id). In place, no allocation. */
static void sift_down_id(cand *h, int32_t n, int32_t i) {
    for (;;) {
        const int32_t l = 2 * i + 1;
        const int32_t r = l + 1;
        int32_t big = i;
        if (l < n && h[l].id > h[big].id) big = l;
        if (r < n && h[r].id > h[big].id) big = r;
        if (big == i) return;
        const cand tmp = h[i];
        h[i] = h[big];
        h[big] = tmp;
        i = big;
    }
}

static void sort_by_id(cand *c, int32_t n) {
    for (int32_t i = n / 2 - 1; i >= 0; --i) sift_down_id(c, n, i);
    for (int32_t end = n - 1; end > 0; --end) {
        const cand tmp = c[0];
        c[0] = c[end];
        c[end] = tmp;
        sift_down_id(c, end, 0);
    }
}

/* ---- the draw and log-probabilities ---------------------------------------------------------- */

/* The first j, in the given (ascending id) order, where the running sum of w exceeds u * total;
 * u is the generator's next uniform. A zero weight is never chosen. */
static int32_t draw_index(runner_sampler *s, const double *w, int32_t n, double total) {
    const double target = runner_rng_uniform(&s->rng) * total;
    double run = 0.0;
    int32_t last_positive = -1;
    for (int32_t j = 0; j < n; ++j) {
        if (w[j] > 0.0) last_positive = j;
        run += w[j];
        if (run > target) return j;
    }
    return last_positive; /* rounding left target at the total: the last entry that can be chosen */
}

/* Draw among the survivors: every live entry ranked at or above `last` (the prefix's last entry),
 * or, with last == NULL, every live entry with l >= min_l. Weights exp((l - lmax) / T) in double,
 * summed in ascending id order. `kept` (n_keep entries, any order) is the survivors when the
 * caller has them; small sets are sorted by id, large ones are found by scanning the vocabulary. */
static int32_t draw(runner_sampler *s, double lmax, cand *kept, int32_t n_keep, const cand *last, double min_l) {
    const double temp = (double)s->temperature;
    double *w = s->w;
    double total = 0.0;
    if (kept != NULL && n_keep <= SCAN_MIN_KEEP) {
        sort_by_id(kept, n_keep);
        for (int32_t j = 0; j < n_keep; ++j) {
            w[j] = exp(((double)kept[j].l - lmax) / temp);
            total += w[j];
        }
        return kept[draw_index(s, w, n_keep, total)].id;
    }
    const cand bound = last != NULL ? *last : (cand){0.0f, 0};
    for (int32_t id = 0; id < s->n_vocab; ++id) {
        const float l = s->work[id];
        int in;
        if (l == -INFINITY) {
            in = 0;
        } else if (last != NULL) {
            in = l > bound.l || (l == bound.l && id <= bound.id);
        } else {
            in = (double)l >= min_l;
        }
        w[id] = in ? exp(((double)l - lmax) / temp) : 0.0;
        total += w[id]; /* adding 0.0 leaves the sum unchanged: same total as a compact survivor list */
    }
    return draw_index(s, w, s->n_vocab, total);
}

static void fill_logprobs(const runner_sampler *s, double lmax, runner_sample_result *out, int32_t token) {
    /* log-softmax over every live entry: log p_i = (l_i - lmax) - log(sum_j exp(l_j - lmax)), in
     * double, summed in id order. The top list is gathered in the same pass: insertion into a sorted
     * array of at most RUNNER_MAX_TOP_LOGPROBS, ties kept in id order (strict compare). */
    const int32_t want = s->n_top_logprobs;
    int32_t n_top = 0;
    double sum = 0.0;
    for (int32_t id = 0; id < s->n_vocab; ++id) {
        const float l = s->work[id];
        if (l == -INFINITY) continue;
        sum += exp((double)l - lmax);
        if (want > 0 && (n_top < want || l > s->work[out->top_tokens[n_top - 1]])) {
            int32_t pos = n_top < want ? n_top : want - 1;
            while (pos > 0 && l > s->work[out->top_tokens[pos - 1]]) {
                out->top_tokens[pos] = out->top_tokens[pos - 1];
                pos -= 1;
            }
            out->top_tokens[pos] = id;
            if (n_top < want) n_top += 1;
        }
    }
    const double log_sum = log(sum);
    out->logprob = (float)(((double)s->work[token] - lmax) - log_sum);
    out->n_top = n_top;
    for (int32_t i = 0; i < n_top; ++i) {
        out->top_logprobs[i] = (float)(((double)s->work[out->top_tokens[i]] - lmax) - log_sum);
    }
}

/* ---- the chain ------------------------------------------------------------------------------- */

/* top-k, top-p, min-p, temperature and the draw. The kept set is the ranking's prefix of length
 * n_keep = min(n_topk, n_topp, n_minp), n_topp computed over the top-k set (llama.cpp's order:
 * top-k, then top-p, then min-p; min-p is relative to the maximum, which every cut keeps). */
static int32_t sample_stochastic(runner_sampler *s, double lmax, int32_t n_live) {
    const int topk_on = s->top_k > 0 && s->top_k < n_live;
    const int topp_on = s->top_p < 1.0f;
    /* min-p: p_i >= min_p * p_max  <=>  l_i >= lmax + log(min_p), compared in double. */
    const double min_l = s->min_p > 0.0f ? lmax + log((double)s->min_p) : -INFINITY;
    const double top_p = (double)s->top_p;
    cand *c = s->cands;

    if (!topk_on && !topp_on) return draw(s, lmax, NULL, 0, NULL, min_l);

    int32_t n_keep;
    if (topk_on) {
        const int32_t k = s->top_k;
        if (k <= HEAP_MAX_K) {
            select_top(s, k);
        } else {
            double z_unused;
            int32_t n_minp_unused;
            histogram(s, lmax, 0, -INFINITY, &z_unused, &n_minp_unused);
            int32_t b_stop = 0;
            for (int32_t seen = 0; b_stop < N_BUCKETS; ++b_stop) {
                seen += s->bucket_count[b_stop];
                if (seen >= k) break;
            }
            collect_sorted(s, lmax, b_stop); /* >= k entries, the best k first */
        }
        int32_t n_minp = 0;
        while (n_minp < k && (double)c[n_minp].l >= min_l) n_minp += 1;
        n_keep = n_minp;
        if (topp_on) {
            double zk = 0.0;
            for (int32_t j = 0; j < k; ++j) zk += exp((double)c[j].l - lmax);
            double cum = 0.0;
            for (int32_t j = 0; j < n_minp; ++j) {
                cum += exp((double)c[j].l - lmax) / zk;
                if (cum >= top_p) {
                    n_keep = j + 1;
                    break;
                }
            }
        }
    } else {
        /* top-p over the whole vocabulary. The histogram's mass per bucket says how far down the
         * ranking the cumulative probability reaches top_p (or min-p ends the prefix); only those
         * buckets are sorted. The cut itself is decided by the cumulative sum in ranking order. */
        double z;
        int32_t n_minp;
        histogram(s, lmax, 1, min_l, &z, &n_minp);
        int32_t b_stop = 0;
        double mass = 0.0;
        for (int32_t seen = 0; b_stop < N_BUCKETS - 1; ++b_stop) {
            seen += s->bucket_count[b_stop];
            mass += s->bucket_mass[b_stop];
            if (mass / z >= top_p || seen >= n_minp) break;
        }
        int32_t have = collect_sorted(s, lmax, b_stop);
        n_keep = 0;
        double cum = 0.0;
        int32_t j = 0;
        for (;;) {
            const int32_t lim = have < n_minp ? have : n_minp;
            for (; j < lim; ++j) {
                cum += exp((double)c[j].l - lmax) / z;
                if (cum >= top_p) {
                    n_keep = j + 1;
                    break;
                }
            }
            if (n_keep > 0) break;
            if (have >= n_minp || b_stop == N_BUCKETS - 1) {
                n_keep = lim; /* min-p (or the vocabulary) ends the prefix before top_p is reached */
                break;
            }
            /* The bucket sums (another summation order) reached top_p one rounding early: take the
             * rest. The first `have` entries come back in the same order. */
            b_stop = N_BUCKETS - 1;
            have = collect_sorted(s, lmax, b_stop);
        }
    }
    return draw(s, lmax, c, n_keep, &c[n_keep - 1], min_l);
}

int32_t runner_sampler_sample(runner_sampler *s, const float *logits, runner_sample_result *out) {
    return runner_sampler_sample_masked(s, logits, NULL, out);
}

int32_t runner_sampler_sample_masked(runner_sampler *s, const float *logits, const uint32_t *allowed, runner_sample_result *out) {
    if (out != NULL) {
        out->token = RUNNER_SAMPLE_INVALID;
        out->logprob = NAN;
        out->n_top = 0;
        out->forced = 0;
    }
    if (s == NULL || logits == NULL) return RUNNER_SAMPLE_INVALID;

    const int32_t nv = s->n_vocab;
    float *work = s->work;

    /* 1. bias, 2. penalties, on a copy (logits is the caller's). */
    memcpy(work, logits, (size_t)nv * sizeof *work);
    /* 0. the grammar's mask: what it excludes is gone before bias and penalties. */
    if (allowed != NULL)
        for (int32_t id = 0; id < nv; ++id)
            if (!((allowed[id >> 5] >> (id & 31)) & 1u)) work[id] = -INFINITY;
    for (int32_t i = 0; i < s->n_bias; ++i) work[s->bias_tokens[i]] += s->bias_values[i];
    apply_penalties(s);

    /* Exclude what is not finite; find the maximum (first on ties: greedy's lowest id). */
    int32_t n_live = 0;
    int32_t argmax = -1;
    float fmax = -INFINITY;
    for (int32_t id = 0; id < nv; ++id) {
        const float l = work[id];
        if (!isfinite(l)) {
            work[id] = -INFINITY;
            continue;
        }
        n_live += 1;
        if (argmax < 0 || l > fmax) {
            fmax = l;
            argmax = id;
        }
    }
    if (n_live == 0) {
        if (out != NULL) out->token = RUNNER_SAMPLE_NONE;
        return RUNNER_SAMPLE_NONE;
    }
    const double lmax = (double)fmax;

    const int32_t token = s->temperature == 0.0f ? argmax : sample_stochastic(s, lmax, n_live);
    if (out != NULL) {
        out->token = token;
        if (s->logprobs) fill_logprobs(s, lmax, out, token);
    }
    return token;
}
