/*
 * LoRA training (runner.h "LoRA training"; `runner train-lora`, docs/lora.md): the loss of a sample
 * and its gradient with respect to every LoRA parameter, and the optimizer step.
 *
 * The base is frozen and read in place in whatever type it has; each weight is dequantized to F32
 * rows when a pass needs it (QLoRA-style: gradients flow through the dequantized weights). The
 * training forward and backward run in double: it is the reference the gradients are defined by
 * (finite differences of this loss check them), and its loss equals the inference pass's within
 * float rounding. Every family feature of the dense forward pass has its backward here: RMS norms
 * (pre, post, q/k per head or whole), biases, rope (both pairings; NoPE layers), grouped-query
 * attention with soft-caps and sliding windows, SiLU and GELU gates, the granite and gemma scales,
 * the final soft-cap. Mixtures of experts and fused projections are refused by name.
 *
 * Memory is bounded by recomputation: the forward keeps only each layer's input rows; the backward
 * recomputes one layer's activations from them before differentiating it. Determinism: every value
 * is computed by one thread in one fixed order (matmul outputs split by rows, input gradients by
 * tokens, reductions over tokens in ascending order on one thread), so the loss, the gradients and
 * the trained adapter are the same bits for any thread count.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "core/threadpool.h"
#include "model/model.h"
#include "runner.h"
#include "train/train.h"

/* ---- small helpers ---------------------------------------------------------------------------- */

static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Dropout's keep factor for element i of token t of pair k's input: 0 or 1 / (1 - p), a pure function
 * of the seed, so the backward's recomputation draws the same masks. */
static double keep(const runner_trainer *t, int32_t k, int64_t tok, int64_t i) {
    if (!t->use_dropout) return 1.0;
    tok += t->tok0; /* the head runs in chunks: the mask belongs to the token, not its place in a chunk */
    const uint64_t h = splitmix(t->seed ^ splitmix(((uint64_t)k << 40) ^ ((uint64_t)tok << 20) ^ (uint64_t)i));
    return (double)(h >> 11) * 0x1.0p-53 < t->dropout ? 0.0 : 1.0 / (1.0 - t->dropout);
}

static const train_pair *pair_at(const runner_trainer *t, int32_t layer, int slot) {
    const int32_t i = t->slot[runner_train_slot(&t->m->cfg, layer, slot)];
    return i < 0 ? NULL : &t->pairs[i];
}

/* ---- matmuls: double activations, F32-dequantized weights -------------------------------------- */

typedef struct mm_args {
    runner_trainer *t;
    const runner_weight *w;
    const double *x; /* [n][n_in] */
    double *y;       /* [n][n_out] */
    int32_t n;
    double scale;
    int accumulate;
} mm_args;

static void deq_task(void *arg, int64_t r0, int64_t r1, int ith) {
    (void)ith;
    mm_args *a = arg;
    const int64_t n_in = a->w->ne[0];
    for (int64_t r = r0; r < r1; r++) a->w->traits->to_float(a->w->data + (size_t)r * a->w->row_bytes, a->t->wbuf + (size_t)r * n_in, n_in);
}

static void dequantize(runner_trainer *t, const runner_weight *w) {
    mm_args a = {.t = t, .w = w};
    runner_pool_for(t->pool, w->ne[1], 64, deq_task, &a);
}

/* y[t][o] (=|+=) scale * W_o . x[t]: split by output rows; each dot in ascending i on one thread. */
static void fwd_task(void *arg, int64_t o0, int64_t o1, int ith) {
    (void)ith;
    mm_args *a = arg;
    const int64_t n_in = a->w->ne[0], n_out = a->w->ne[1];
    for (int64_t o = o0; o < o1; o++) {
        const float *row = a->t->wbuf + (size_t)o * n_in;
        for (int32_t tk = 0; tk < a->n; tk++) {
            const double *x = a->x + (size_t)tk * n_in;
            double acc = 0.0;
            for (int64_t i = 0; i < n_in; i++) acc += (double)row[i] * x[i];
            double *y = a->y + (size_t)tk * n_out + o;
            *y = a->accumulate ? *y + a->scale * acc : a->scale * acc;
        }
    }
}

static void mm_fwd(runner_trainer *t, const runner_weight *w, const double *x, double *y, int32_t n, double scale, int accumulate) {
    dequantize(t, w);
    mm_args a = {.t = t, .w = w, .x = x, .y = y, .n = n, .scale = scale, .accumulate = accumulate};
    runner_pool_for(t->pool, w->ne[1], 16, fwd_task, &a);
}

/* dx[t] += W^T dy[t]: split by tokens; each dx row sums over o in ascending order on one thread. */
static void bwd_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    mm_args *a = arg;
    const int64_t n_in = a->w->ne[0], n_out = a->w->ne[1];
    for (int64_t tk = t0; tk < t1; tk++) {
        const double *dy = a->x + (size_t)tk * n_out;
        double *dx = a->y + (size_t)tk * n_in;
        for (int64_t o = 0; o < n_out; o++) {
            const double gy = dy[o];
            if (gy == 0.0) continue;
            const float *row = a->t->wbuf + (size_t)o * n_in;
            for (int64_t i = 0; i < n_in; i++) dx[i] += gy * (double)row[i];
        }
    }
}

static void mm_bwd(runner_trainer *t, const runner_weight *w, const double *dy, double *dx, int32_t n) {
    dequantize(t, w);
    mm_args a = {.t = t, .w = w, .x = dy, .y = dx, .n = n};
    runner_pool_for(t->pool, n, 1, bwd_task, &a);
}

/* ---- LoRA pairs ----------------------------------------------------------------------------------- */

/* u = a (mask o x); y += s b u (the forward pass's order: a x first, then b, scaled, added). */
static void lora_fwd(runner_trainer *t, train_pair *pr, const double *x, double *y, int32_t n, double yscale) {
    const int32_t r = t->rank;
    const double *A = t->p + pr->off, *B = A + (size_t)r * pr->n_in;
    for (int32_t tk = 0; tk < n; tk++) {
        const double *xt = x + (size_t)tk * pr->n_in;
        double *u = pr->u + (size_t)tk * r;
        for (int32_t k = 0; k < r; k++) {
            double acc = 0.0;
            const double *ak = A + (size_t)k * pr->n_in;
            for (int64_t i = 0; i < pr->n_in; i++) acc += ak[i] * (xt[i] * keep(t, pr->index, tk, i));
            u[k] = acc;
        }
        double *yt = y + (size_t)tk * pr->n_out;
        for (int64_t o = 0; o < pr->n_out; o++) {
            double acc = 0.0;
            const double *bo = B + (size_t)o * r;
            for (int32_t k = 0; k < r; k++) acc += bo[k] * u[k];
            yt[o] += yscale * t->s * acc;
        }
    }
}

/* Given dy of y = ... + s b a (mask o x): gradients of a and b (summed over tokens in order), dx += a^T gu o mask. */
static void lora_bwd(runner_trainer *t, const train_pair *pr, const double *x, const double *dy, double *dx, int32_t n) {
    const int32_t r = t->rank;
    const double *A = t->p + pr->off, *B = A + (size_t)r * pr->n_in;
    double *gA = t->g + pr->off, *gB = gA + (size_t)r * pr->n_in;
    double gu[512];
    for (int32_t tk = 0; tk < n; tk++) {
        const double *dyt = dy + (size_t)tk * pr->n_out, *u = pr->u + (size_t)tk * r, *xt = x + (size_t)tk * pr->n_in;
        for (int32_t k = 0; k < r; k++) gu[k] = 0.0;
        for (int64_t o = 0; o < pr->n_out; o++) {
            const double d = t->s * dyt[o];
            if (d == 0.0) continue;
            const double *bo = B + (size_t)o * r;
            double *gbo = gB + (size_t)o * r;
            for (int32_t k = 0; k < r; k++) {
                gu[k] += d * bo[k];
                gbo[k] += d * u[k];
            }
        }
        double *dxt = dx + (size_t)tk * pr->n_in;
        for (int64_t i = 0; i < pr->n_in; i++) {
            const double mk = keep(t, pr->index, tk, i);
            if (mk == 0.0) continue;
            const double xi = xt[i] * mk;
            double back = 0.0;
            for (int32_t k = 0; k < r; k++) {
                gA[(size_t)k * pr->n_in + i] += gu[k] * xi;
                back += A[(size_t)k * pr->n_in + i] * gu[k];
            }
            dxt[i] += back * mk;
        }
    }
}

/* A projection: y = scale * W x, plus its pair's delta (scaled alike) where the weight is trained. */
static void project(runner_trainer *t, const runner_weight *w, const train_pair *pr, const double *x, double *y, int32_t n, double scale,
                    int accumulate) {
    mm_fwd(t, w, x, y, n, scale, accumulate);
    if (pr) lora_fwd(t, (train_pair *)pr, x, y, n, scale);
}

static void project_bwd(runner_trainer *t, const runner_weight *w, const train_pair *pr, const double *x, const double *dy, double *dx,
                        int32_t n) {
    mm_bwd(t, w, dy, dx, n);
    if (pr) lora_bwd(t, pr, x, dy, dx, n);
}

/* A fused pair's delta, split over the views it spans: rows [0, w0) to y0, [w0, w0 + w1) to y1, the
 * rest to y2 (NULL when there are two). */
static void fused_fwd(runner_trainer *t, const train_pair *pr, const double *x, double *y0, int64_t w0, double *y1, int64_t w1, double *y2) {
    const int32_t n = t->n;
    const int64_t w2 = pr->n_out - w0 - w1;
    memset(t->fused, 0, sizeof(double) * (size_t)n * pr->n_out);
    lora_fwd(t, (train_pair *)pr, x, t->fused, n, 1.0);
    for (int32_t tk = 0; tk < n; tk++) {
        const double *f = t->fused + (size_t)tk * pr->n_out;
        for (int64_t i = 0; i < w0; i++) y0[tk * w0 + i] += f[i];
        for (int64_t i = 0; i < w1; i++) y1[tk * w1 + i] += f[w0 + i];
        for (int64_t i = 0; y2 && i < w2; i++) y2[tk * w2 + i] += f[w0 + w1 + i];
    }
}

/* Its backward: the views' gradients side by side, then the pair's. */
static void fused_bwd(runner_trainer *t, const train_pair *pr, const double *x, const double *d0, int64_t w0, const double *d1, int64_t w1,
                      const double *d2, double *dx) {
    const int32_t n = t->n;
    const int64_t w2 = pr->n_out - w0 - w1;
    for (int32_t tk = 0; tk < n; tk++) {
        double *f = t->fused + (size_t)tk * pr->n_out;
        memcpy(f, d0 + tk * w0, sizeof(double) * (size_t)w0);
        memcpy(f + w0, d1 + tk * w1, sizeof(double) * (size_t)w1);
        if (d2) memcpy(f + w0 + w1, d2 + tk * w2, sizeof(double) * (size_t)w2);
    }
    lora_bwd(t, pr, x, t->fused, dx, n);
}

/* ---- norms, activations, rope ------------------------------------------------------------------- */

/* y = x / rms(x) * w per segment of `len` values (rows of `width`); inv receives each 1/rms. */
static void rms_fwd(const double *x, const float *w, double *y, double *inv, int32_t n, int64_t width, int64_t len, float eps) {
    const int64_t segs = width / len;
    for (int64_t r = 0; r < (int64_t)n * segs; r++) {
        const double *xs = x + (size_t)r * len;
        double ss = 0.0;
        for (int64_t i = 0; i < len; i++) ss += xs[i] * xs[i];
        const double iv = 1.0 / sqrt(ss / (double)len + (double)eps);
        inv[r] = iv;
        double *ys = y + (size_t)r * len;
        for (int64_t i = 0; i < len; i++) ys[i] = xs[i] * iv * (double)w[i];
    }
}

/* dx (=|+=) the gradient through rms_fwd: inv g - x inv^3 (g . x) / len, g = dy o w. */
static void rms_bwd(const double *x, const float *w, const double *inv, const double *dy, double *dx, int32_t n, int64_t width, int64_t len,
                    int accumulate) {
    const int64_t segs = width / len;
    for (int64_t r = 0; r < (int64_t)n * segs; r++) {
        const double *xs = x + (size_t)r * len, *ds = dy + (size_t)r * len;
        const double iv = inv[r];
        double dot = 0.0;
        for (int64_t i = 0; i < len; i++) dot += ds[i] * (double)w[i] * xs[i];
        const double c = iv * iv * iv * dot / (double)len;
        double *out = dx + (size_t)r * len;
        for (int64_t i = 0; i < len; i++) {
            const double v = iv * ds[i] * (double)w[i] - xs[i] * c;
            out[i] = accumulate ? out[i] + v : v;
        }
    }
}

static const double GELU_C = 0.79788456080286535588; /* sqrt(2 / pi) */

static double act_fwd(int32_t kind, double g) {
    if (kind == RUNNER_FFN_GELU) return 0.5 * g * (1.0 + tanh(GELU_C * (g + 0.044715 * g * g * g)));
    return g / (1.0 + exp(-g));
}

static double act_grad(int32_t kind, double g) {
    if (kind == RUNNER_FFN_GELU) {
        const double th = tanh(GELU_C * (g + 0.044715 * g * g * g));
        return 0.5 * (1.0 + th) + 0.5 * g * (1.0 - th * th) * GELU_C * (1.0 + 3.0 * 0.044715 * g * g);
    }
    const double sg = 1.0 / (1.0 + exp(-g));
    return sg * (1.0 + g * (1.0 - sg));
}

void runner_train_rope_table(double *cs, double *sn, int32_t n_ctx, int32_t n_rot, double base, double scale, const float *factors,
                             double mscale) {
    const int32_t half = n_rot / 2;
    for (int32_t p = 0; p < n_ctx; p++)
        for (int32_t i = 0; i < half; i++) {
            const double th = scale * ((double)p * pow(base, -2.0 * i / (double)n_rot)) / (factors ? (double)factors[i] : 1.0);
            cs[(size_t)p * half + i] = cos(th) * mscale;
            sn[(size_t)p * half + i] = sin(th) * mscale;
        }
}

/* Rotate (sign 1) or rotate back (sign -1, the backward of a rotation) each head's first n_rot values. */
static void rope_rows(double *x, int32_t n, int32_t n_heads, int32_t hd, int32_t n_rot, int neox, const double *cs, const double *sn,
                      double sign) {
    const int32_t half = n_rot / 2;
    for (int32_t tk = 0; tk < n; tk++)
        for (int32_t h = 0; h < n_heads; h++) {
            double *v = x + ((size_t)tk * n_heads + h) * hd;
            for (int32_t i = 0; i < half; i++) {
                const double c = cs[(size_t)tk * half + i], s = sign * sn[(size_t)tk * half + i];
                const int32_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
                const double a = v[i0], b = v[i1];
                v[i0] = a * c - b * s;
                v[i1] = a * s + b * c;
            }
        }
}

/* ---- attention ------------------------------------------------------------------------------------ */

typedef struct att_args {
    runner_trainer *t;
    int32_t layer;
    const double *dout; /* backward: d att */
} att_args;

static double kq_scale(const runner_model_config *c) {
    return c->attention_scale > 0.0f ? (double)c->attention_scale : c->query_scale > 0.0f ? 1.0 : 1.0 / sqrt((double)c->head_dim);
}

static int32_t first_key(const runner_trainer *t, int32_t layer, int32_t p) {
    const runner_model_config *c = &t->m->cfg;
    return t->m->layers[layer].swa && p - c->n_swa + 1 > 0 ? p - c->n_swa + 1 : 0;
}

/* The raw score q . k, soft-capped where the config says, as the scale then multiplies it. */
static double score(const runner_model_config *c, const double *q, const double *k, double *dcap) {
    double r = 0.0;
    for (int32_t i = 0; i < c->head_dim; i++) r += q[i] * k[i];
    if (c->attn_softcap > 0.0f) {
        const double th = tanh(r / (double)c->attn_softcap);
        if (dcap) *dcap = 1.0 - th * th;
        return (double)c->attn_softcap * th;
    }
    if (dcap) *dcap = 1.0;
    return r;
}

/* Forward, split by heads: lse and the output rows of head h for every query. */
static void att_fwd_task(void *arg, int64_t h0, int64_t h1, int ith) {
    (void)ith;
    att_args *a = arg;
    runner_trainer *t = a->t;
    const runner_model_config *c = &t->m->cfg;
    const int32_t hd = c->head_dim, n = t->n, g = c->n_head / c->n_head_kv;
    const size_t nq = (size_t)c->n_head * hd, nkv = (size_t)c->n_head_kv * hd;
    const double sc = kq_scale(c);
    double *sbuf = t->dtmp + (size_t)h0 * n; /* one row of scores per head */
    for (int64_t h = h0; h < h1; h++) {
        const int64_t kvh = h / g;
        for (int32_t p = 0; p < n; p++) {
            const double *q = t->a.q + (size_t)p * nq + (size_t)h * hd;
            const int32_t j0 = first_key(t, a->layer, p);
            double mx = -INFINITY;
            for (int32_t j = j0; j <= p; j++) {
                sbuf[j] = sc * score(c, q, t->a.k + (size_t)j * nkv + (size_t)kvh * hd, NULL);
                if (sbuf[j] > mx) mx = sbuf[j];
            }
            double sum = 0.0;
            for (int32_t j = j0; j <= p; j++) sum += exp(sbuf[j] - mx);
            const double lse = mx + log(sum);
            t->a.lse[(size_t)h * n + p] = lse;
            double *o = t->a.att + (size_t)p * nq + (size_t)h * hd;
            for (int32_t i = 0; i < hd; i++) o[i] = 0.0;
            for (int32_t j = j0; j <= p; j++) {
                const double w = exp(sbuf[j] - lse);
                const double *v = t->a.v + (size_t)j * nkv + (size_t)kvh * hd;
                for (int32_t i = 0; i < hd; i++) o[i] += w * v[i];
            }
        }
    }
}

/* Backward, split by kv heads (the heads sharing one key and value row accumulate into them in
 * ascending head and query order on one thread). */
static void att_bwd_task(void *arg, int64_t g0, int64_t g1, int ith) {
    (void)ith;
    att_args *a = arg;
    runner_trainer *t = a->t;
    const runner_model_config *c = &t->m->cfg;
    const int32_t hd = c->head_dim, n = t->n, grp = c->n_head / c->n_head_kv;
    const size_t nq = (size_t)c->n_head * hd, nkv = (size_t)c->n_head_kv * hd;
    const double sc = kq_scale(c);
    for (int64_t kvh = g0; kvh < g1; kvh++)
        for (int64_t h = kvh * grp; h < (kvh + 1) * grp; h++)
            for (int32_t p = 0; p < n; p++) {
                const double *q = t->a.q + (size_t)p * nq + (size_t)h * hd;
                const double *dout = a->dout + (size_t)p * nq + (size_t)h * hd;
                const double *out = t->a.att + (size_t)p * nq + (size_t)h * hd;
                double *dq = t->dq + (size_t)p * nq + (size_t)h * hd;
                const double lse = t->a.lse[(size_t)h * n + p];
                double dot_o = 0.0;
                for (int32_t i = 0; i < hd; i++) dot_o += dout[i] * out[i];
                for (int32_t j = first_key(t, a->layer, p); j <= p; j++) {
                    const double *k = t->a.k + (size_t)j * nkv + (size_t)kvh * hd, *v = t->a.v + (size_t)j * nkv + (size_t)kvh * hd;
                    double dcap;
                    const double w = exp(sc * score(c, q, k, &dcap) - lse);
                    double dp = 0.0;
                    for (int32_t i = 0; i < hd; i++) dp += dout[i] * v[i];
                    const double ds = w * (dp - dot_o) * sc * dcap;
                    double *dk = t->dk + (size_t)j * nkv + (size_t)kvh * hd, *dv = t->dv + (size_t)j * nkv + (size_t)kvh * hd;
                    for (int32_t i = 0; i < hd; i++) {
                        dq[i] += ds * k[i];
                        dk[i] += ds * q[i];
                        dv[i] += w * dout[i];
                    }
                }
            }
}

/* ---- mixture of experts ------------------------------------------------------------------------ */

/* The (token, slot) items routed to expert e, in token order; returns how many. */
static int32_t items_of(const runner_trainer *t, int32_t e, int32_t *items) {
    const int32_t k = t->m->cfg.n_expert_used;
    int32_t n = 0;
    for (int32_t i = 0; i < t->n * k; i++)
        if (t->a.sel[i] == e) items[n++] = i;
    return n;
}

/* x += sum_j w_j expert_j(xf): the router's softmax, the top k (ties to the lower index), their
 * weights renormalised, each chosen expert's SwiGLU/GELU FFN (the forward pass's model/moe.c). */
static void moe_fwd(runner_trainer *t, const runner_layer *L, double *x) {
    const runner_model_config *c = &t->m->cfg;
    layer_acts *a = &t->a;
    const int32_t n = t->n, d = c->n_embd, ne = c->n_expert, k = c->n_expert_used, ff = c->n_ff_exp;
    mm_fwd(t, &L->gate_inp, a->xf, a->router, n, 1.0, 0);
    for (int32_t tk = 0; tk < n; tk++) {
        const double *z = a->router + (size_t)tk * ne;
        double mx = -INFINITY, p[RUNNER_MAX_EXPERTS];
        for (int32_t e = 0; e < ne; e++) mx = z[e] > mx ? z[e] : mx;
        double sum = 0.0;
        for (int32_t e = 0; e < ne; e++) sum += (p[e] = exp(z[e] - mx));
        int32_t *sel = a->sel + (size_t)tk * k;
        double *w = a->sel_w + (size_t)tk * k, wsum = 0.0;
        for (int32_t j = 0; j < k; j++) {
            int32_t best = -1;
            for (int32_t e = 0; e < ne; e++) {
                int taken = 0;
                for (int32_t q = 0; q < j; q++) taken |= sel[q] == e;
                if (!taken && (best < 0 || p[e] > p[best])) best = e;
            }
            sel[j] = best;
            wsum += (w[j] = p[best] / sum);
        }
        for (int32_t j = 0; j < k; j++) w[j] /= wsum;
    }
    int32_t *items = (int32_t *)t->mg; /* n * k ints fit in n * ff doubles */
    int32_t *idx = items + (size_t)n * k;
    for (int32_t e = 0; e < ne; e++) {
        const int32_t m = items_of(t, e, items);
        if (m == 0) continue;
        for (int32_t i = 0; i < m; i++) {
            idx[i] = items[i];
            memcpy(t->mx + (size_t)i * d, a->xf + (size_t)(items[i] / k) * d, sizeof(double) * (size_t)d);
        }
        double *g = a->eg, *u = a->eu, *h = a->eh, *o = a->eo;
        mm_fwd(t, &L->exp_gate[e], t->mx, t->mu, m, 1.0, 0);
        for (int32_t i = 0; i < m; i++) memcpy(g + (size_t)idx[i] * ff, t->mu + (size_t)i * ff, sizeof(double) * (size_t)ff);
        mm_fwd(t, &L->exp_up[e], t->mx, t->mu, m, 1.0, 0);
        for (int32_t i = 0; i < m; i++) {
            double *gi = g + (size_t)idx[i] * ff, *ui = u + (size_t)idx[i] * ff, *hi = h + (size_t)idx[i] * ff;
            memcpy(ui, t->mu + (size_t)i * ff, sizeof(double) * (size_t)ff);
            for (int32_t f = 0; f < ff; f++) hi[f] = act_fwd(c->ffn_act, gi[f]) * ui[f];
            memcpy(t->mh + (size_t)i * ff, hi, sizeof(double) * (size_t)ff);
        }
        mm_fwd(t, &L->exp_down[e], t->mh, t->mo, m, 1.0, 0);
        for (int32_t i = 0; i < m; i++) memcpy(o + (size_t)idx[i] * d, t->mo + (size_t)i * d, sizeof(double) * (size_t)d);
    }
    for (int32_t tk = 0; tk < n; tk++)
        for (int32_t j = 0; j < k; j++) {
            const double w = a->sel_w[(size_t)tk * k + j];
            const double *o = a->eo + ((size_t)tk * k + j) * d;
            for (int32_t i = 0; i < d; i++) x[(size_t)tk * d + i] += w * o[i];
        }
}

/* Given dx (of the block's output), dxf += the gradient through the experts and the router. The
 * choice is piecewise constant; the weights are a softmax over the chosen logits. */
static void moe_bwd(runner_trainer *t, const runner_layer *L, const double *dx, double *dxf) {
    const runner_model_config *c = &t->m->cfg;
    layer_acts *a = &t->a;
    const int32_t n = t->n, d = c->n_embd, ne = c->n_expert, k = c->n_expert_used, ff = c->n_ff_exp;
    memset(a->drouter, 0, sizeof(double) * (size_t)n * ne);
    for (int32_t tk = 0; tk < n; tk++) {
        const double *w = a->sel_w + (size_t)tk * k, *dy = dx + (size_t)tk * d;
        double dw[RUNNER_MAX_EXPERTS], mean = 0.0;
        for (int32_t j = 0; j < k; j++) {
            const double *o = a->eo + ((size_t)tk * k + j) * d;
            double acc = 0.0;
            for (int32_t i = 0; i < d; i++) acc += dy[i] * o[i];
            dw[j] = acc;
            mean += w[j] * acc;
        }
        for (int32_t j = 0; j < k; j++) a->drouter[(size_t)tk * ne + a->sel[(size_t)tk * k + j]] += w[j] * (dw[j] - mean);
    }
    int32_t *items = (int32_t *)t->mg;
    for (int32_t e = 0; e < ne; e++) {
        const int32_t m = items_of(t, e, items);
        if (m == 0) continue;
        for (int32_t i = 0; i < m; i++) { /* d of the expert's output: its weight times dy */
            const int32_t tk = items[i] / k;
            const double w = a->sel_w[items[i]];
            for (int32_t q = 0; q < d; q++) t->mo[(size_t)i * d + q] = w * dx[(size_t)tk * d + q];
        }
        memset(t->mh, 0, sizeof(double) * (size_t)m * ff);
        mm_bwd(t, &L->exp_down[e], t->mo, t->mh, m); /* d h */
        for (int32_t i = 0; i < m; i++) {
            const double *g = a->eg + (size_t)items[i] * ff, *u = a->eu + (size_t)items[i] * ff;
            double *dh = t->mh + (size_t)i * ff, *du = t->mu + (size_t)i * ff;
            for (int32_t f = 0; f < ff; f++) {
                du[f] = dh[f] * act_fwd(c->ffn_act, g[f]);
                dh[f] = dh[f] * u[f] * act_grad(c->ffn_act, g[f]); /* now d gate */
            }
        }
        memset(t->mx, 0, sizeof(double) * (size_t)m * d);
        mm_bwd(t, &L->exp_gate[e], t->mh, t->mx, m);
        mm_bwd(t, &L->exp_up[e], t->mu, t->mx, m);
        for (int32_t i = 0; i < m; i++) {
            double *out = dxf + (size_t)(items[i] / k) * d;
            for (int32_t q = 0; q < d; q++) out[q] += t->mx[(size_t)i * d + q];
        }
    }
    mm_bwd(t, &L->gate_inp, a->drouter, dxf, n);
}

/* ---- one block ---------------------------------------------------------------------------------- */

static const float *fdata(const runner_weight *w) {
    return (const float *)w->data;
}

static int has_rope(const runner_trainer *t, int32_t l) {
    return !(t->m->cfg.nope_layers && t->m->cfg.nope_layers[l]);
}

static void rope_of(const runner_trainer *t, int32_t l, const double **cs, const double **sn) {
    const int swa = t->m->layers[l].swa && t->rope_cos_swa;
    *cs = swa ? t->rope_cos_swa : t->rope_cos;
    *sn = swa ? t->rope_sin_swa : t->rope_sin;
}

/* x (the block's input rows) -> x (its output), keeping what the backward needs in t->a. */
static void block_fwd(runner_trainer *t, int32_t l, double *x) {
    const runner_model_config *c = &t->m->cfg;
    const runner_layer *L = &t->m->layers[l];
    const int32_t n = t->n, d = c->n_embd, hd = c->head_dim;
    const size_t nq = (size_t)c->n_head * hd, nkv = (size_t)c->n_head_kv * hd;
    const double rs = c->residual_scale > 0.0f ? (double)c->residual_scale : 1.0;
    layer_acts *a = &t->a;
    if (!L->attn_removed) {
        if (L->attn_norm.data) rms_fwd(x, fdata(&L->attn_norm), a->xa, a->inv_a, n, d, d, c->norm_eps);
        else memcpy(a->xa, x, sizeof(double) * (size_t)n * d);
        project(t, &L->wq, pair_at(t, l, T_Q), a->xa, a->q, n, 1.0, 0);
        project(t, &L->wk, pair_at(t, l, T_K), a->xa, a->k, n, 1.0, 0);
        project(t, &L->wv, pair_at(t, l, T_V), a->xa, a->v, n, 1.0, 0);
        const train_pair *qkv = pair_at(t, l, T_QKV);
        if (qkv) fused_fwd(t, qkv, a->xa, a->q, (int64_t)nq, a->k, (int64_t)nkv, a->v);
        for (int32_t tk = 0; tk < n; tk++) {
            if (L->bq.data) for (size_t i = 0; i < nq; i++) a->q[tk * nq + i] += (double)fdata(&L->bq)[i];
            if (L->bk.data) for (size_t i = 0; i < nkv; i++) a->k[tk * nkv + i] += (double)fdata(&L->bk)[i];
            if (L->bv.data) for (size_t i = 0; i < nkv; i++) a->v[tk * nkv + i] += (double)fdata(&L->bv)[i];
        }
        if (L->q_norm.data) {
            memcpy(a->q_lin, a->q, sizeof(double) * n * nq);
            memcpy(a->k_lin, a->k, sizeof(double) * n * nkv);
            rms_fwd(a->q_lin, fdata(&L->q_norm), a->q, a->inv_q, n, (int64_t)nq, L->q_norm.ne[0], c->norm_eps);
            rms_fwd(a->k_lin, fdata(&L->k_norm), a->k, a->inv_k, n, (int64_t)nkv, L->k_norm.ne[0], c->norm_eps);
        }
        if (has_rope(t, l)) {
            const double *cs, *sn;
            rope_of(t, l, &cs, &sn);
            rope_rows(a->q, n, c->n_head, hd, c->n_rot, c->rope_type == RUNNER_ROPE_NEOX, cs, sn, 1.0);
            rope_rows(a->k, n, c->n_head_kv, hd, c->n_rot, c->rope_type == RUNNER_ROPE_NEOX, cs, sn, 1.0);
        }
        if (c->query_scale > 0.0f) for (size_t i = 0; i < (size_t)n * nq; i++) a->q[i] *= (double)c->query_scale;
        att_args aa = {.t = t, .layer = l};
        runner_pool_for(t->pool, c->n_head, 1, att_fwd_task, &aa);
        if (L->attn_post_norm.data) {
            project(t, &L->wo, pair_at(t, l, T_O), a->att, a->o, n, 1.0, 0);
            rms_fwd(a->o, fdata(&L->attn_post_norm), t->dtmp, a->inv_po, n, d, d, c->norm_eps);
            for (size_t i = 0; i < (size_t)n * d; i++) x[i] += t->dtmp[i];
        } else {
            project(t, &L->wo, pair_at(t, l, T_O), a->att, x, n, rs, 1);
        }
    }
    memcpy(a->x_mid, x, sizeof(double) * (size_t)n * d);
    if (!L->ffn_removed && c->n_expert > 0) {
        rms_fwd(x, fdata(&L->ffn_norm), a->xf, a->inv_f, n, d, d, c->norm_eps);
        moe_fwd(t, L, x);
    } else if (!L->ffn_removed) {
        if (L->ffn_norm.data) rms_fwd(x, fdata(&L->ffn_norm), a->xf, a->inv_f, n, d, d, c->norm_eps);
        else memcpy(a->xf, x, sizeof(double) * (size_t)n * d);
        project(t, &L->w_gate, pair_at(t, l, T_GATE), a->xf, a->gate, n, 1.0, 0);
        project(t, &L->w_up, pair_at(t, l, T_UP), a->xf, a->up, n, 1.0, 0);
        const train_pair *gu = pair_at(t, l, T_GATE_UP);
        if (gu) fused_fwd(t, gu, a->xf, a->gate, c->n_ff, a->up, c->n_ff, NULL);
        for (size_t i = 0; i < (size_t)n * c->n_ff; i++) a->h[i] = act_fwd(c->ffn_act, a->gate[i]) * a->up[i];
        if (L->ffn_post_norm.data) {
            project(t, &L->w_down, pair_at(t, l, T_DOWN), a->h, a->o_f, n, 1.0, 0);
            rms_fwd(a->o_f, fdata(&L->ffn_post_norm), t->dtmp, a->inv_pf, n, d, d, c->norm_eps);
            for (size_t i = 0; i < (size_t)n * d; i++) x[i] += t->dtmp[i];
        } else {
            project(t, &L->w_down, pair_at(t, l, T_DOWN), a->h, x, n, rs, 1);
        }
    }
}

/* dx: the gradient of the block's output rows in, of its input rows out (x_in: those rows). */
static void block_bwd(runner_trainer *t, int32_t l, const double *x_in, double *dx) {
    const runner_model_config *c = &t->m->cfg;
    const runner_layer *L = &t->m->layers[l];
    const int32_t n = t->n, d = c->n_embd, hd = c->head_dim;
    const size_t nq = (size_t)c->n_head * hd, nkv = (size_t)c->n_head_kv * hd, nd = (size_t)n * d;
    const double rs = c->residual_scale > 0.0f ? (double)c->residual_scale : 1.0;
    layer_acts *a = &t->a;
    if (!L->ffn_removed && c->n_expert > 0) {
        double *dxf = t->dtmp;
        memset(dxf, 0, sizeof(double) * nd);
        moe_bwd(t, L, dx, dxf);
        rms_bwd(a->x_mid, fdata(&L->ffn_norm), a->inv_f, dxf, dx, n, d, d, 1);
    } else if (!L->ffn_removed) {
        double *dout = t->dnorm; /* d of the FFN's output projection */
        if (L->ffn_post_norm.data) rms_bwd(a->o_f, fdata(&L->ffn_post_norm), a->inv_pf, dx, dout, n, d, d, 0);
        else for (size_t i = 0; i < nd; i++) dout[i] = rs * dx[i];
        double *dh = t->dff;
        memset(dh, 0, sizeof(double) * (size_t)n * c->n_ff);
        project_bwd(t, &L->w_down, pair_at(t, l, T_DOWN), a->h, dout, dh, n);
        double *dup = t->dff2;
        for (size_t i = 0; i < (size_t)n * c->n_ff; i++) {
            dup[i] = dh[i] * act_fwd(c->ffn_act, a->gate[i]);
            dh[i] = dh[i] * a->up[i] * act_grad(c->ffn_act, a->gate[i]); /* now d gate */
        }
        double *dxf = t->dtmp;
        memset(dxf, 0, sizeof(double) * nd);
        project_bwd(t, &L->w_gate, pair_at(t, l, T_GATE), a->xf, dh, dxf, n);
        project_bwd(t, &L->w_up, pair_at(t, l, T_UP), a->xf, dup, dxf, n);
        const train_pair *gu = pair_at(t, l, T_GATE_UP);
        if (gu) fused_bwd(t, gu, a->xf, dh, c->n_ff, dup, c->n_ff, NULL, dxf);
        if (L->ffn_norm.data) rms_bwd(a->x_mid, fdata(&L->ffn_norm), a->inv_f, dxf, dx, n, d, d, 1);
        else for (size_t i = 0; i < nd; i++) dx[i] += dxf[i];
    }
    if (!L->attn_removed) {
        double *dout = t->dnorm;
        if (L->attn_post_norm.data) rms_bwd(a->o, fdata(&L->attn_post_norm), a->inv_po, dx, dout, n, d, d, 0);
        else for (size_t i = 0; i < nd; i++) dout[i] = rs * dx[i];
        double *datt = t->dff; /* n x nq fits: dff holds n x max(n_ff, nq) */
        memset(datt, 0, sizeof(double) * (size_t)n * nq);
        project_bwd(t, &L->wo, pair_at(t, l, T_O), a->att, dout, datt, n);
        memset(t->dq, 0, sizeof(double) * (size_t)n * nq);
        memset(t->dk, 0, sizeof(double) * (size_t)n * nkv);
        memset(t->dv, 0, sizeof(double) * (size_t)n * nkv);
        att_args aa = {.t = t, .layer = l, .dout = datt};
        runner_pool_for(t->pool, c->n_head_kv, 1, att_bwd_task, &aa);
        if (c->query_scale > 0.0f) for (size_t i = 0; i < (size_t)n * nq; i++) t->dq[i] *= (double)c->query_scale;
        if (has_rope(t, l)) {
            const double *cs, *sn;
            rope_of(t, l, &cs, &sn);
            rope_rows(t->dq, n, c->n_head, hd, c->n_rot, c->rope_type == RUNNER_ROPE_NEOX, cs, sn, -1.0);
            rope_rows(t->dk, n, c->n_head_kv, hd, c->n_rot, c->rope_type == RUNNER_ROPE_NEOX, cs, sn, -1.0);
        }
        double *dq = t->dq, *dk = t->dk;
        if (L->q_norm.data) {
            /* through the q/k norms into the pre-norm rows (dff2 and dout are free here) */
            rms_bwd(a->q_lin, fdata(&L->q_norm), a->inv_q, t->dq, t->dff2, n, (int64_t)nq, L->q_norm.ne[0], 0);
            rms_bwd(a->k_lin, fdata(&L->k_norm), a->inv_k, t->dk, t->dnorm, n, (int64_t)nkv, L->k_norm.ne[0], 0);
            dq = t->dff2;
            dk = t->dnorm;
        }
        double *dxa = t->dtmp;
        memset(dxa, 0, sizeof(double) * nd);
        project_bwd(t, &L->wq, pair_at(t, l, T_Q), a->xa, dq, dxa, n);
        project_bwd(t, &L->wk, pair_at(t, l, T_K), a->xa, dk, dxa, n);
        project_bwd(t, &L->wv, pair_at(t, l, T_V), a->xa, t->dv, dxa, n);
        const train_pair *qkv = pair_at(t, l, T_QKV);
        if (qkv) fused_bwd(t, qkv, a->xa, dq, (int64_t)nq, dk, (int64_t)nkv, t->dv, dxa);
        if (L->attn_norm.data) rms_bwd(x_in, fdata(&L->attn_norm), a->inv_a, dxa, dx, n, d, d, 1);
        else for (size_t i = 0; i < nd; i++) dx[i] += dxa[i];
    }
}

/* ---- the sample --------------------------------------------------------------------------------- */

runner_status runner_trainer_sample(runner_trainer *t, const int32_t *tokens, const uint8_t *scored, int32_t n, int32_t grad,
                                    uint64_t dropout_seed, double *loss_sum, int32_t *n_scored, const volatile int32_t *abort_flag,
                                    char *err, int32_t err_len) {
    const runner_model *m = t->m;
    const runner_model_config *c = &m->cfg;
    if (!tokens || !scored || n < 2 || n > t->n_ctx)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "a sample has %d tokens; it must have 2 to %d (the trainer's n_ctx)", n,
                           t->n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "token %d at %d is not in the vocabulary (%d)", tokens[i], i, c->n_vocab);
    t->n = n;
    t->tokens = tokens;
    t->seed = dropout_seed;
    t->use_dropout = grad && t->dropout > 0.0;
    const int32_t d = c->n_embd;
    const size_t nd = (size_t)n * d;
    /* embeddings */
    float *row = t->wbuf;
    for (int32_t tk = 0; tk < n; tk++) {
        m->tok_embd.traits->to_float(m->tok_embd.data + (size_t)tokens[tk] * m->tok_embd.row_bytes, row, d);
        for (int32_t i = 0; i < d; i++)
            t->x[(size_t)tk * d + i] = c->embedding_scale > 0.0f ? (double)(row[i] * c->embedding_scale) : (double)row[i];
    }
    for (int32_t l = 0; l < c->n_layer; l++) {
        if (abort_flag && *abort_flag) return runner_fail(err, err_len, RUNNER_ERR_ABORTED, "aborted at layer %d", l);
        memcpy(t->layer_in + (size_t)l * t->n_ctx * d, t->x, sizeof(double) * nd);
        block_fwd(t, l, t->x);
    }
    /* The head, RUNNER_TRAIN_HEAD_ROWS rows at a time (the logits of a whole sample would not fit for a
     * large vocabulary), each chunk's backward right after it; tokens stay in ascending order, so the
     * sums are those of one pass over all rows. */
    rms_fwd(t->x, fdata(&m->output_norm), t->xn_out, t->inv_out, n, d, d, c->norm_eps);
    const train_pair *head = pair_at(t, -1, 0);
    const int64_t V = c->n_vocab;
    const double ls = c->logit_scale > 0.0f ? 1.0 / (double)c->logit_scale : 1.0, cap = (double)c->final_softcap;
    double loss = 0.0;
    int32_t count = 0;
    if (grad) memset(t->dtmp, 0, sizeof(double) * nd);
    for (int32_t c0 = 0; c0 + 1 < n; c0 += RUNNER_TRAIN_HEAD_ROWS) {
        const int32_t nc = n - 1 - c0 < RUNNER_TRAIN_HEAD_ROWS ? n - 1 - c0 : RUNNER_TRAIN_HEAD_ROWS;
        int any = 0;
        for (int32_t r = 0; r < nc; r++) any |= scored[c0 + r + 1];
        if (!any) continue;
        t->tok0 = c0;
        project(t, &m->output, head, t->xn_out + (size_t)c0 * d, t->logits, nc, 1.0, 0);
        for (int32_t r = 0; r < nc; r++) {
            const int32_t tk = c0 + r;
            double *z = t->logits + (size_t)r * V;
            if (!scored[tk + 1]) {
                for (int64_t v = 0; v < V; v++) z[v] = 0.0; /* no gradient from this row */
                continue;
            }
            double mx = -INFINITY;
            for (int64_t v = 0; v < V; v++) {
                const double pre = z[v] * ls;
                z[v] = cap > 0.0 ? cap * tanh(pre / cap) : pre;
                if (z[v] > mx) mx = z[v];
            }
            double sum = 0.0;
            for (int64_t v = 0; v < V; v++) sum += exp(z[v] - mx);
            const double lse = mx + log(sum);
            loss += lse - z[tokens[tk + 1]];
            count++;
            /* d loss / d (W xn): softmax - onehot, back through the soft-cap and the logit scale */
            for (int64_t v = 0; v < V; v++) {
                const double pz = exp(z[v] - lse) - (v == tokens[tk + 1] ? 1.0 : 0.0);
                const double dcap = cap > 0.0 ? 1.0 - (z[v] / cap) * (z[v] / cap) : 1.0;
                z[v] = pz * dcap * ls;
            }
        }
        if (grad) project_bwd(t, &m->output, head, t->xn_out + (size_t)c0 * d, t->logits, t->dtmp + (size_t)c0 * d, nc);
        t->tok0 = 0;
    }
    *loss_sum = loss;
    *n_scored = count;
    if (!grad) return RUNNER_OK;
    rms_bwd(t->x, fdata(&m->output_norm), t->inv_out, t->dtmp, t->dx, n, d, d, 0);
    for (int32_t l = c->n_layer - 1; l >= 0; l--) {
        if (abort_flag && *abort_flag) return runner_fail(err, err_len, RUNNER_ERR_ABORTED, "aborted at layer %d of the backward pass", l);
        const double *x_in = t->layer_in + (size_t)l * t->n_ctx * d;
        memcpy(t->x, x_in, sizeof(double) * nd);
        block_fwd(t, l, t->x); /* recompute this block's activations */
        block_bwd(t, l, x_in, t->dx);
    }
    return RUNNER_OK;
}
