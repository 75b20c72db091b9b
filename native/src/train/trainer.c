/*
 * The trainer's lifecycle, parameters and optimizer (runner.h "LoRA training"): which weights carry a
 * pair, the buffers a sample of n_ctx tokens needs (allocated once), the parameter, gradient and
 * moment vectors, and the AdamW / SGD step. Parameters are kept in double (the master copy; the
 * adapter file rounds them to F32), so a checkpoint of the four vectors resumes bit for bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "model/bind.h"
#include "runner.h"
#include "train/train.h"

/* Roles a pair may adapt here, and their slot in a block (the head: the model-wide slot). */
static int slot_of(int32_t role) {
    switch (role) {
    case RUNNER_ROLE_ATTN_Q: return T_Q;
    case RUNNER_ROLE_ATTN_K: return T_K;
    case RUNNER_ROLE_ATTN_V: return T_V;
    case RUNNER_ROLE_ATTN_OUT: return T_O;
    case RUNNER_ROLE_FFN_GATE: return T_GATE;
    case RUNNER_ROLE_FFN_UP: return T_UP;
    case RUNNER_ROLE_FFN_DOWN: return T_DOWN;
    case RUNNER_ROLE_ATTN_QKV: return T_QKV;
    case RUNNER_ROLE_FFN_GATE_UP: return T_GATE_UP;
    case RUNNER_ROLE_OUTPUT: return T_PER_LAYER;
    default: return -1;
    }
}

void runner_trainer_free(runner_trainer *t) {
    if (!t) return;
    runner_pool_free(t->pool);
    for (int32_t i = 0; t->pairs && i < t->n_pairs; i++) free(t->pairs[i].u);
    free(t->pairs);
    free(t->slot);
    double **bufs[] = {&t->p, &t->g, &t->m1, &t->m2, &t->layer_in, &t->x, &t->dx, &t->dtmp, &t->dq, &t->dk, &t->dv, &t->dff, &t->dff2,
                       &t->dnorm, &t->xn_out, &t->inv_out, &t->logits, &t->rope_cos, &t->rope_sin, &t->rope_cos_swa, &t->rope_sin_swa,
                       &t->a.xa, &t->a.inv_a, &t->a.q_lin, &t->a.k_lin, &t->a.inv_q, &t->a.inv_k, &t->a.q, &t->a.k, &t->a.v,
                       &t->a.lse, &t->a.att, &t->a.o, &t->a.inv_po, &t->a.x_mid, &t->a.xf, &t->a.inv_f, &t->a.gate, &t->a.up,
                       &t->a.h, &t->a.o_f, &t->a.inv_pf, &t->a.router, &t->a.drouter, &t->a.sel_w, &t->a.eg, &t->a.eu, &t->a.eh,
                       &t->a.eo, &t->mx, &t->mo, &t->mg, &t->mu, &t->mh, &t->fused};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(*bufs[i]);
    free(t->wbuf);
    free(t->a.sel);
    free(t);
}

static size_t max_sz(size_t a, size_t b) {
    return a > b ? a : b;
}

static void widest(size_t *floats, const runner_weight *w) {
    if (w->data) *floats = max_sz(*floats, (size_t)w->ne[0] * (size_t)w->ne[1]);
}

runner_status runner_trainer_create(runner_model *m, const runner_trainer_params *p, runner_trainer **out, char *err, int32_t err_len) {
    *out = NULL;
    const runner_model_config *c = &m->cfg;
    if (m->loras)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "the model has LoRA adapters attached; train on the base model alone");
    /* The trainer's double-precision rope table has no YaRN ramp: training through it would differ from inference. */
    if (c->rope_ext_factor != 0.0f)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "YaRN rope scaling (rope_ext_factor %g) is not implemented by the LoRA trainer",
                           (double)c->rope_ext_factor);
    /* The passes walk every block; a NextN block is not part of the model's own forward. */
    if (c->n_nextn > 0)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "training a LoRA on a model with a NextN (MTP) head is not supported");
    if (p->rank < 1 || p->rank > 512)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "rank %d out of range [1, 512]", p->rank);
    if (p->n_ctx < 2 || p->n_ctx > 1 << 16)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "n_ctx %d out of range [2, 65536]", p->n_ctx);
    if (!(p->dropout >= 0.0f && p->dropout < 1.0f))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "dropout %g must be in [0, 1)", (double)p->dropout);
    if (!isfinite(p->alpha)) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "alpha must be finite");
    if (p->n_threads < 1 || p->n_threads > 256)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "n_threads %d out of range [1, 256]", p->n_threads);
    if (p->n_targets < 1 || !p->roles || !p->layers)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "no weights to train (n_targets %d)", p->n_targets);
    runner_trainer *t = calloc(1, sizeof *t);
    if (!t) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "no memory for the trainer");
    t->m = m;
    t->n_ctx = p->n_ctx;
    t->rank = p->rank;
    t->dropout = p->dropout;
    /* The forward pass's scale at user scale 1 (model/lora.c), so training sees what inference will. */
    t->s = (double)(p->alpha != 0.0f ? 1.0f * p->alpha / (float)p->rank : 1.0f);
    const size_t n_slots = (size_t)c->n_layer * T_PER_LAYER + 1;
    t->slot = malloc(n_slots * sizeof *t->slot);
    t->pairs = calloc((size_t)p->n_targets, sizeof *t->pairs);
    if (!t->slot || !t->pairs) {
        runner_trainer_free(t);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "no memory for %d targets", p->n_targets);
    }
    for (size_t i = 0; i < n_slots; i++) t->slot[i] = -1;
    const size_t n = (size_t)p->n_ctx, d = (size_t)c->n_embd;
    int any_fused = 0;
    for (int32_t i = 0; i < p->n_targets; i++) {
        const int s = slot_of(p->roles[i]);
        const int32_t layer = s == T_PER_LAYER ? -1 : p->layers[i];
        const char *name = p->roles[i] >= 0 && p->roles[i] < RUNNER_ROLE_COUNT ? runner_tensor_role_name(p->roles[i]) : "?";
        runner_status st = RUNNER_OK;
        const runner_weight *w = NULL;
        if (s < 0) st = runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "training a LoRA on %s is not supported", name);
        else if (layer >= c->n_layer || (s != T_PER_LAYER && layer < 0))
            st = runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "target %d: layer %d out of range", i, p->layers[i]);
        else {
            /* a fused weight is bound as views (wq/wk/wv, w_gate/w_up): the pair's first view stands for it */
            w = s == T_PER_LAYER ? &m->output
                : s == T_QKV     ? &m->layers[layer].wq
                : s == T_GATE_UP ? &m->layers[layer].w_gate
                                 : runner_model_weight_slot(m, p->roles[i], layer);
            if (!w || !w->data) st = runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "%s of layer %d is not in the model", name, layer);
            else if ((s == T_QKV && t->slot[runner_train_slot(c, layer, T_Q)] >= 0) || (s == T_Q && t->slot[runner_train_slot(c, layer, T_QKV)] >= 0))
                st = runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "layer %d: attn_qkv and attn_q are the same rows", layer);
            else if (t->slot[runner_train_slot(c, layer, s)] >= 0)
                st = runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "%s of layer %d is given twice", name, layer);
        }
        if (st != RUNNER_OK) {
            runner_trainer_free(t);
            return st;
        }
        t->slot[runner_train_slot(c, layer, s)] = i;
        train_pair *pr = &t->pairs[i];
        pr->w = w;
        pr->n_in = w->ne[0];
        pr->n_out = s == T_QKV ? (int64_t)c->n_head * c->head_dim + 2 * (int64_t)c->n_head_kv * c->head_dim
                    : s == T_GATE_UP ? 2 * (int64_t)c->n_ff
                                     : w->ne[1];
        any_fused |= s == T_QKV || s == T_GATE_UP;
        pr->index = i;
        pr->off = t->n_params;
        t->n_params += (int64_t)p->rank * (pr->n_in + pr->n_out);
        pr->u = runner_alloc_array(n * (size_t)p->rank, sizeof(double));
        t->n_pairs = i + 1;
        if (!pr->u) {
            runner_trainer_free(t);
            return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "no memory for target %d", i);
        }
    }
    const size_t nq = (size_t)c->n_head * c->head_dim, nkv = (size_t)c->n_head_kv * c->head_dim, ff = (size_t)c->n_ff;
    size_t wf = d;
    widest(&wf, &m->output);
    int any_qk_norm = 0, any_swa = 0;
    for (int32_t l = 0; l < c->n_layer; l++) {
        const runner_layer *L = &m->layers[l];
        const runner_weight *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t k = 0; k < 7; k++) widest(&wf, ws[k]);
        widest(&wf, &L->gate_inp);
        if (L->exp_gate) {
            widest(&wf, &L->exp_gate[0]);
            widest(&wf, &L->exp_up[0]);
            widest(&wf, &L->exp_down[0]);
        }
        any_qk_norm |= L->q_norm.data != NULL;
        any_swa |= L->swa;
    }
    t->wbuf_floats = wf;
    t->wbuf = runner_alloc_array(wf, sizeof(float));
    const size_t V = (size_t)c->n_vocab, half = (size_t)c->n_rot / 2, np = (size_t)t->n_params;
    const int moe = c->n_expert > 0;
    const size_t ne = moe ? (size_t)c->n_expert : 0, nk = moe ? (size_t)c->n_expert_used : 0, ffe = moe ? (size_t)c->n_ff_exp : 0;
    struct {
        double **buf;
        size_t n;
    } want[] = {
        {&t->p, np}, {&t->g, np}, {&t->m1, np}, {&t->m2, np}, {&t->layer_in, (size_t)c->n_layer * n * d}, {&t->x, n * d}, {&t->dx, n * d},
        {&t->dtmp, n * d}, {&t->dq, n * nq}, {&t->dk, n * nkv}, {&t->dv, n * nkv}, {&t->dff, n * max_sz(ff, nq)},
        {&t->dff2, n * max_sz(ff, nq)}, {&t->dnorm, n * max_sz(d, nq)}, {&t->xn_out, n * d}, {&t->inv_out, n}, {&t->logits, (n < RUNNER_TRAIN_HEAD_ROWS ? n : RUNNER_TRAIN_HEAD_ROWS) * V},
        {&t->rope_cos, n * half}, {&t->rope_sin, n * half}, {&t->a.xa, n * d}, {&t->a.inv_a, n}, {&t->a.q_lin, any_qk_norm ? n * nq : 1},
        {&t->a.k_lin, any_qk_norm ? n * nkv : 1}, {&t->a.inv_q, n * (size_t)c->n_head}, {&t->a.inv_k, n * (size_t)c->n_head_kv},
        {&t->a.q, n * nq}, {&t->a.k, n * nkv}, {&t->a.v, n * nkv}, {&t->a.lse, n * (size_t)c->n_head}, {&t->a.att, n * nq},
        {&t->a.o, n * d}, {&t->a.inv_po, n}, {&t->a.x_mid, n * d}, {&t->a.xf, n * d}, {&t->a.inv_f, n}, {&t->a.gate, n * ff},
        {&t->a.up, n * ff}, {&t->a.h, n * ff}, {&t->a.o_f, n * d}, {&t->a.inv_pf, n},
        /* MoE: one entry each when dense */
        {&t->a.router, n * ne}, {&t->a.drouter, n * ne}, {&t->a.sel_w, n * nk}, {&t->a.eg, n * nk * ffe}, {&t->a.eu, n * nk * ffe},
        {&t->a.eh, n * nk * ffe}, {&t->a.eo, n * nk * d}, {&t->mx, moe ? n * d : 1}, {&t->mo, moe ? n * d : 1},
        {&t->mg, moe ? n * max_sz(ffe, 2 * nk) : 1}, {&t->mu, n * ffe}, {&t->mh, n * ffe},
        {&t->fused, any_fused ? n * max_sz(nq + 2 * nkv, 2 * ff) : 1},
    };
    t->a.sel = runner_alloc_array(n * (nk ? nk : 1), sizeof(int32_t));
    int ok = t->wbuf != NULL && t->a.sel != NULL;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        *want[i].buf = runner_alloc_array(want[i].n ? want[i].n : 1, sizeof(double));
        ok = ok && *want[i].buf;
    }
    const double base_swa = c->rope_freq_base_swa > 0 ? c->rope_freq_base_swa : c->rope_freq_base;
    const double scale_swa = c->rope_freq_scale_swa > 0 ? c->rope_freq_scale_swa : c->rope_freq_scale;
    if (ok && any_swa && (base_swa != c->rope_freq_base || scale_swa != c->rope_freq_scale)) {
        t->rope_cos_swa = runner_alloc_array(n * half, sizeof(double));
        t->rope_sin_swa = runner_alloc_array(n * half, sizeof(double));
        ok = t->rope_cos_swa && t->rope_sin_swa;
        if (ok) runner_train_rope_table(t->rope_cos_swa, t->rope_sin_swa, p->n_ctx, c->n_rot, base_swa, scale_swa, NULL, 1.0);
    }
    if (ok) t->pool = runner_pool_create(p->n_threads);
    if (!ok || !t->pool) {
        runner_trainer_free(t);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "no memory for a trainer of %d tokens per sample", p->n_ctx);
    }
    /* longrope as a context of n_ctx positions picks it (model/context.c): the long factors when n_ctx
     * padded to 256 exceeds n_ctx_orig; cos and sin times attn_factor */
    const int64_t padded = ((int64_t)p->n_ctx + 255) / 256 * 256;
    const int32_t orig = c->n_ctx_orig > 0 ? c->n_ctx_orig : c->n_ctx_train;
    const runner_weight *fw = padded > orig && m->rope_long.data ? &m->rope_long : m->rope_short.data ? &m->rope_short : m->rope_long.data ? &m->rope_long : NULL;
    runner_train_rope_table(t->rope_cos, t->rope_sin, p->n_ctx, c->n_rot, c->rope_freq_base, c->rope_freq_scale, fw ? (const float *)fw->data : NULL,
                            c->rope_attn_factor > 0.0f ? (double)c->rope_attn_factor : 1.0);
    memset(t->p, 0, sizeof(double) * np);
    memset(t->g, 0, sizeof(double) * np);
    memset(t->m1, 0, sizeof(double) * np);
    memset(t->m2, 0, sizeof(double) * np);
    *out = t;
    return RUNNER_OK;
}

int64_t runner_trainer_n_params(const runner_trainer *t) {
    return t->n_params;
}

static double *vector_of(runner_trainer *t, int32_t what) {
    switch (what) {
    case RUNNER_TRAIN_PARAMS: return t->p;
    case RUNNER_TRAIN_GRADS: return t->g;
    case RUNNER_TRAIN_MOMENT1: return t->m1;
    case RUNNER_TRAIN_MOMENT2: return t->m2;
    default: return NULL;
    }
}

runner_status runner_trainer_get(runner_trainer *t, int32_t what, double *out, int64_t n, char *err, int32_t err_len) {
    const double *v = vector_of(t, what);
    if (!v || n != t->n_params)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "vector %d of %lld values: the trainer has %lld parameters", what,
                           (long long)n, (long long)t->n_params);
    memcpy(out, v, sizeof(double) * (size_t)n);
    return RUNNER_OK;
}

runner_status runner_trainer_set(runner_trainer *t, int32_t what, const double *in, int64_t n, char *err, int32_t err_len) {
    double *v = vector_of(t, what);
    if (!v || n != t->n_params)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "vector %d of %lld values: the trainer has %lld parameters", what,
                           (long long)n, (long long)t->n_params);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(in[i])) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "value %lld of vector %d is not finite", (long long)i, what);
    memcpy(v, in, sizeof(double) * (size_t)n);
    return RUNNER_OK;
}

int64_t runner_trainer_steps(const runner_trainer *t) {
    return t->steps;
}

void runner_trainer_set_steps(runner_trainer *t, int64_t steps) {
    t->steps = steps < 0 ? 0 : steps;
}

runner_status runner_trainer_optimize(runner_trainer *t, const runner_optimizer_params *o, double *grad_norm, char *err, int32_t err_len) {
    const int adam = o->kind == RUNNER_OPTIMIZER_ADAMW;
    if (!adam && o->kind != RUNNER_OPTIMIZER_SGD) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "optimizer kind %d", o->kind);
    if (!(o->lr >= 0 && isfinite(o->lr)) || !(o->grad_scale > 0 && isfinite(o->grad_scale)) || !(o->max_grad_norm >= 0) ||
        (adam && !(o->beta1 >= 0 && o->beta1 < 1 && o->beta2 >= 0 && o->beta2 < 1 && o->eps > 0 && o->weight_decay >= 0)))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT,
                           "optimizer: lr %g, grad_scale %g, max_grad_norm %g, betas %g %g, eps %g, weight_decay %g out of range", o->lr,
                           o->grad_scale, o->max_grad_norm, o->beta1, o->beta2, o->eps, o->weight_decay);
    const int64_t n = t->n_params;
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) {
        t->g[i] *= o->grad_scale;
        ss += t->g[i] * t->g[i];
    }
    const double norm = sqrt(ss);
    *grad_norm = norm;
    if (!isfinite(norm)) return runner_fail(err, err_len, RUNNER_ERR_INTERNAL, "the gradient is not finite (norm %g): lower the learning rate", norm);
    /* torch.nn.utils.clip_grad_norm_: scale by max / (norm + 1e-6) when the norm is above max */
    const double clip = o->max_grad_norm > 0 && norm > o->max_grad_norm ? o->max_grad_norm / (norm + 1e-6) : 1.0;
    if (adam) {
        t->steps++;
        const double bc1 = 1.0 - pow(o->beta1, (double)t->steps), bc2 = sqrt(1.0 - pow(o->beta2, (double)t->steps));
        for (int64_t i = 0; i < n; i++) {
            const double g = t->g[i] * clip;
            t->p[i] *= 1.0 - o->lr * o->weight_decay; /* torch.optim.AdamW: decoupled weight decay first */
            t->m1[i] = o->beta1 * t->m1[i] + (1.0 - o->beta1) * g;
            t->m2[i] = o->beta2 * t->m2[i] + (1.0 - o->beta2) * g * g;
            t->p[i] -= (o->lr / bc1) * t->m1[i] / (sqrt(t->m2[i]) / bc2 + o->eps);
        }
    } else {
        t->steps++;
        for (int64_t i = 0; i < n; i++) t->p[i] -= o->lr * t->g[i] * clip;
    }
    memset(t->g, 0, sizeof(double) * (size_t)n);
    return RUNNER_OK;
}
