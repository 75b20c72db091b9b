/* Loading a model (mapping files, binding tensors by role) and creating contexts. */
#include "model/model.h"

#include "core/cpu_cap.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

runner_status runner_fail(char *err, int32_t err_len, runner_status status, const char *fmt, ...) {
    if (err && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, (size_t)err_len, fmt, ap);
        va_end(ap);
    }
    return status;
}

static const char *const role_names[RUNNER_ROLE_COUNT] = {
    "token_embd", "output_norm", "output",      "attn_norm",   "attn_q",      "attn_k",      "attn_v",
    "attn_output", "ffn_norm",   "ffn_gate",    "ffn_up",      "ffn_down",    "attn_q_bias", "attn_k_bias",
    "attn_v_bias", "attn_q_norm", "attn_k_norm", "attn_qkv",    "ffn_gate_up", "attn_post_norm", "ffn_post_norm",
    "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps", "rope_factors_long", "rope_factors_short",
};

const char *runner_tensor_role_name(int32_t role) {
    return role >= 0 && role < RUNNER_ROLE_COUNT ? role_names[role] : NULL;
}

static int role_is_per_layer(int32_t role) {
    return role >= RUNNER_ROLE_ATTN_NORM && role < RUNNER_ROLE_COUNT && role != RUNNER_ROLE_ROPE_FACTORS_LONG &&
           role != RUNNER_ROLE_ROPE_FACTORS_SHORT;
}

/* Multiply with overflow check; returns 0 on overflow. */
static int mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

static void *alloc_array(size_t count, size_t elem) {
    size_t bytes;
    if (!mul_ok(count, elem, &bytes) || bytes == 0) return NULL;
    /* 64-byte alignment for SIMD loads of activations. Not zeroed: every buffer is written before it
     * is read, and untouched pages then never become resident (a 512-token logits buffer of a
     * 32k vocabulary is 62 MiB that a decode-only run never touches). */
    size_t padded = (bytes + 63) & ~(size_t)63;
    if (padded < bytes) return NULL;
    return aligned_alloc(64, padded);
}

static runner_status check_config(const runner_model_config *c, char *err, int32_t err_len) {
#define NEED(cond, ...) \
    if (!(cond)) return runner_fail(err, err_len, RUNNER_ERR_MODEL, __VA_ARGS__)
    NEED(c->n_vocab > 0 && c->n_vocab <= (1 << 24), "n_vocab %d out of range", c->n_vocab);
    NEED(c->n_embd > 0 && c->n_embd <= (1 << 16), "n_embd %d out of range", c->n_embd);
    NEED(c->n_layer > 0 && c->n_layer <= RUNNER_MAX_LAYERS, "n_layer %d out of range", c->n_layer);
    NEED(c->n_head > 0 && c->n_head <= 1024, "n_head %d out of range", c->n_head);
    NEED(c->n_head_kv > 0 && c->n_head % c->n_head_kv == 0, "n_head %d is not a multiple of n_head_kv %d", c->n_head,
         c->n_head_kv);
    NEED(c->head_dim > 0 && c->head_dim <= 1024 && c->head_dim % 2 == 0, "head_dim %d out of range", c->head_dim);
    NEED(c->n_ff > 0 && c->n_ff <= (1 << 20), "n_ff %d out of range", c->n_ff);
    NEED(c->n_rot > 0 && c->n_rot <= c->head_dim && c->n_rot % 2 == 0, "n_rot %d must be even and <= head_dim %d",
         c->n_rot, c->head_dim);
    NEED(c->rope_type == RUNNER_ROPE_NORM || c->rope_type == RUNNER_ROPE_NEOX, "rope_type %d unknown", c->rope_type);
    NEED(isfinite(c->rope_freq_base) && c->rope_freq_base > 0, "rope_freq_base %g out of range",
         (double)c->rope_freq_base);
    NEED(isfinite(c->rope_freq_scale) && c->rope_freq_scale > 0, "rope_freq_scale %g out of range",
         (double)c->rope_freq_scale);
    NEED(isfinite(c->norm_eps) && c->norm_eps >= 0, "norm_eps %g out of range", (double)c->norm_eps);
    NEED(isfinite(c->embedding_scale) && isfinite(c->residual_scale) && isfinite(c->attention_scale) && isfinite(c->logit_scale) &&
             c->embedding_scale >= 0 && c->residual_scale >= 0 && c->attention_scale >= 0 && c->logit_scale >= 0,
         "a scale multiplier is negative or not finite");
    NEED(c->ffn_act == RUNNER_FFN_SILU || c->ffn_act == RUNNER_FFN_GELU, "ffn_act %d unknown", c->ffn_act);
    NEED(isfinite(c->query_scale) && isfinite(c->attn_softcap) && isfinite(c->final_softcap) && c->query_scale >= 0 &&
             c->attn_softcap >= 0 && c->final_softcap >= 0,
         "query_scale or a softcap is negative or not finite");
    NEED(c->n_swa >= 0, "n_swa %d is negative", c->n_swa);
    if (c->swa_layers)
        for (int32_t l = 0; l < c->n_layer; l++)
            NEED(!c->swa_layers[l] || c->n_swa > 0, "layer %d is a sliding-window layer but n_swa is %d", l, c->n_swa);
    NEED(isfinite(c->rope_freq_base_swa) && c->rope_freq_base_swa >= 0 && isfinite(c->rope_freq_scale_swa) && c->rope_freq_scale_swa >= 0,
         "rope_freq_base_swa %g or rope_freq_scale_swa %g out of range", (double)c->rope_freq_base_swa, (double)c->rope_freq_scale_swa);
    NEED(isfinite(c->rope_attn_factor) && c->rope_attn_factor >= 0, "rope_attn_factor %g out of range", (double)c->rope_attn_factor);
    NEED(c->n_ctx_orig >= 0, "n_ctx_orig %d is negative", c->n_ctx_orig);
    NEED(c->n_expert >= 0 && c->n_expert <= RUNNER_MAX_EXPERTS, "n_expert %d out of range [0, %d]", c->n_expert, RUNNER_MAX_EXPERTS);
    if (c->n_expert > 0) {
        NEED(c->n_expert_used >= 1 && c->n_expert_used <= c->n_expert, "n_expert_used %d must be in [1, n_expert %d]", c->n_expert_used,
             c->n_expert);
        NEED(c->n_ff_exp > 0 && c->n_ff_exp <= (1 << 20), "n_ff_exp %d out of range", c->n_ff_exp);
    } else {
        NEED(c->n_expert_used == 0, "n_expert_used %d without experts", c->n_expert_used);
    }
#undef NEED
    return RUNNER_OK;
}

/* The shape [ne0, ne1] each role must have under the config (ne1 = 1 for vectors). */
static void expected_shape(const runner_model_config *c, int32_t role, int64_t *ne0, int64_t *ne1) {
    const int64_t n_q = (int64_t)c->n_head * c->head_dim, n_kv = (int64_t)c->n_head_kv * c->head_dim;
    *ne1 = 1;
    switch (role) {
    case RUNNER_ROLE_TOKEN_EMBD:
    case RUNNER_ROLE_OUTPUT: *ne0 = c->n_embd; *ne1 = c->n_vocab; break;
    case RUNNER_ROLE_ATTN_Q: *ne0 = c->n_embd; *ne1 = n_q; break;
    case RUNNER_ROLE_ATTN_K:
    case RUNNER_ROLE_ATTN_V: *ne0 = c->n_embd; *ne1 = n_kv; break;
    case RUNNER_ROLE_ATTN_OUT: *ne0 = n_q; *ne1 = c->n_embd; break;
    case RUNNER_ROLE_FFN_GATE:
    case RUNNER_ROLE_FFN_UP: *ne0 = c->n_embd; *ne1 = c->n_ff; break;
    case RUNNER_ROLE_FFN_DOWN: *ne0 = c->n_ff; *ne1 = c->n_embd; break;
    case RUNNER_ROLE_ATTN_Q_BIAS: *ne0 = n_q; break;
    case RUNNER_ROLE_ATTN_K_BIAS:
    case RUNNER_ROLE_ATTN_V_BIAS: *ne0 = n_kv; break;
    case RUNNER_ROLE_ATTN_Q_NORM:
    case RUNNER_ROLE_ATTN_K_NORM: *ne0 = c->head_dim; break;
    case RUNNER_ROLE_ATTN_QKV: *ne0 = c->n_embd; *ne1 = n_q + 2 * n_kv; break;
    case RUNNER_ROLE_FFN_GATE_UP: *ne0 = c->n_embd; *ne1 = 2 * (int64_t)c->n_ff; break;
    case RUNNER_ROLE_FFN_GATE_INP: *ne0 = c->n_embd; *ne1 = c->n_expert; break;
    case RUNNER_ROLE_FFN_GATE_EXPS:
    case RUNNER_ROLE_FFN_UP_EXPS: *ne0 = c->n_embd; *ne1 = c->n_ff_exp; break;
    case RUNNER_ROLE_FFN_DOWN_EXPS: *ne0 = c->n_ff_exp; *ne1 = c->n_embd; break;
    case RUNNER_ROLE_ROPE_FACTORS_LONG:
    case RUNNER_ROLE_ROPE_FACTORS_SHORT: *ne0 = c->n_rot / 2; break;
    default: *ne0 = c->n_embd; break; /* norms */
    }
}

static runner_weight *slot_for(runner_model *m, int32_t role, int32_t layer) {
    switch (role) {
    case RUNNER_ROLE_TOKEN_EMBD: return &m->tok_embd;
    case RUNNER_ROLE_OUTPUT_NORM: return &m->output_norm;
    case RUNNER_ROLE_OUTPUT: return &m->output;
    case RUNNER_ROLE_ROPE_FACTORS_LONG: return &m->rope_long;
    case RUNNER_ROLE_ROPE_FACTORS_SHORT: return &m->rope_short;
    default: break;
    }
    runner_layer *l = &m->layers[layer];
    switch (role) {
    case RUNNER_ROLE_ATTN_NORM: return &l->attn_norm;
    case RUNNER_ROLE_ATTN_Q: return &l->wq;
    case RUNNER_ROLE_ATTN_K: return &l->wk;
    case RUNNER_ROLE_ATTN_V: return &l->wv;
    case RUNNER_ROLE_ATTN_OUT: return &l->wo;
    case RUNNER_ROLE_FFN_NORM: return &l->ffn_norm;
    case RUNNER_ROLE_FFN_GATE: return &l->w_gate;
    case RUNNER_ROLE_FFN_UP: return &l->w_up;
    case RUNNER_ROLE_FFN_DOWN: return &l->w_down;
    case RUNNER_ROLE_ATTN_Q_BIAS: return &l->bq;
    case RUNNER_ROLE_ATTN_K_BIAS: return &l->bk;
    case RUNNER_ROLE_ATTN_V_BIAS: return &l->bv;
    case RUNNER_ROLE_ATTN_Q_NORM: return &l->q_norm;
    case RUNNER_ROLE_ATTN_K_NORM: return &l->k_norm;
    case RUNNER_ROLE_ATTN_POST_NORM: return &l->attn_post_norm;
    case RUNNER_ROLE_FFN_POST_NORM: return &l->ffn_post_norm;
    case RUNNER_ROLE_FFN_GATE_INP: return &l->gate_inp;
    default: return NULL;
    }
}

/* Pick the matmul kernel of a bound weight and the quantizer of the activations it dots against. */
static runner_status setup_kernel(runner_model *m, runner_weight *w, const char *name, int32_t layer, char *err, int32_t err_len) {
    const runner_type_traits *tt = w->traits;
    runner_kernel_variant v = runner_kernel_pick_vec_dot(tt, m->cpu);
    w->vec_dot = tt->vec_dot[v];
    w->variant = v;
    if (!w->vec_dot)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "tensor %s (layer %d): no matmul kernel for %s", name, layer, tt->name);
    const runner_type_traits *act = runner_type_traits_get(tt->vec_dot_type);
    if (!act)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "tensor %s: activation type %d missing", name, tt->vec_dot_type);
    if (act->type != RUNNER_TYPE_F32) {
        runner_from_float_fn f = act->from_float[runner_kernel_pick_from_float(act, m->cpu)];
        if (!f) return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "tensor %s: no quantizer for activations of %s", name, act->name);
        m->act_from_float[act->type] = f;
    }
    return RUNNER_OK;
}

/* Expert weights: a fused 3-D tensor (expert -1, ne[2] = n_expert) bound as one view per expert, or
 * one expert's 2-D tensor (the legacy split layout). Either way the forward pass sees
 * layer->exp_{gate,up,down}[e]: one accessor. */
static runner_status bind_experts(runner_model *m, const runner_tensor_desc *t, const runner_mapping *map,
                                  const runner_type_traits *tt, char *err, int32_t err_len) {
    const runner_model_config *c = &m->cfg;
    const char *name = role_names[t->role];
    if (c->n_expert < 1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): expert weights in a model without experts", name, t->layer);
    const int fused = t->expert < 0;
    if (!fused && t->expert >= c->n_expert)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): expert %d out of range [0, %d)", name, t->layer,
                           t->expert, c->n_expert);
    int64_t ne0, ne1;
    expected_shape(c, t->role, &ne0, &ne1);
    const int64_t ne2 = fused ? c->n_expert : 1;
    const int64_t g1 = t->n_dims >= 2 ? t->ne[1] : 1, g2 = t->n_dims >= 3 ? t->ne[2] : 1, g3 = t->n_dims >= 4 ? t->ne[3] : 1;
    if (t->n_dims < 1 || t->n_dims > 4 || t->ne[0] != ne0 || g1 != ne1 || g2 != ne2 || g3 != 1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL,
                           "tensor %s (layer %d, expert %d): shape [%lld, %lld, %lld] does not match the config, expected [%lld, %lld, %lld]",
                           name, t->layer, t->expert, (long long)t->ne[0], (long long)g1, (long long)g2, (long long)ne0, (long long)ne1,
                           (long long)ne2);
    if (ne0 % tt->block_size != 0)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): ne0 %lld is not a multiple of %s's block %lld", name,
                           t->layer, (long long)ne0, tt->name, (long long)tt->block_size);
    const size_t row_bytes = (size_t)(ne0 / tt->block_size) * tt->type_size;
    size_t per_expert = 0, total = 0;
    if (!mul_ok(row_bytes, (size_t)ne1, &per_expert) || !mul_ok(per_expert, (size_t)ne2, &total) || total != t->size)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): %llu bytes, expected %zu", name, t->layer,
                           (unsigned long long)t->size, total);
    runner_layer *L = &m->layers[t->layer];
    runner_weight *arr = t->role == RUNNER_ROLE_FFN_GATE_EXPS ? L->exp_gate : t->role == RUNNER_ROLE_FFN_UP_EXPS ? L->exp_up : L->exp_down;
    const int32_t e0 = fused ? 0 : t->expert, e1 = fused ? c->n_expert : t->expert + 1;
    const uint8_t *base = (const uint8_t *)map->base + t->offset;
    for (int32_t e = e0; e < e1; e++) {
        runner_weight *w = &arr[e];
        if (w->data)
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d, expert %d) is given twice (or fused and split)", name,
                               t->layer, e);
        w->data = base + (size_t)(e - e0) * per_expert;
        w->traits = tt;
        w->ne[0] = ne0;
        w->ne[1] = ne1;
        w->ne[2] = w->ne[3] = 1;
        w->row_bytes = row_bytes;
        runner_status st = setup_kernel(m, w, name, t->layer, err, err_len);
        if (st != RUNNER_OK) return st;
    }
    return RUNNER_OK;
}

static runner_status bind_tensor(runner_model *m, const runner_tensor_desc *t, int32_t index, char *err,
                                 int32_t err_len) {
    const runner_model_config *c = &m->cfg;
    if (t->role < 0 || t->role >= RUNNER_ROLE_COUNT)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %d: unknown role %d", index, t->role);
    const char *name = role_names[t->role];
    if (role_is_per_layer(t->role) ? (t->layer < 0 || t->layer >= c->n_layer) : t->layer != -1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s: layer %d out of range", name, t->layer);
    if (t->file < 0 || t->file >= m->n_maps)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): file index %d out of range", name,
                           t->layer, t->file);
    const runner_mapping *map = &m->maps[t->file];
    if (t->offset > map->size || t->size > map->size - t->offset)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL,
                           "tensor %s (layer %d): bytes [%llu, +%llu) lie outside its file of %zu bytes", name,
                           t->layer, (unsigned long long)t->offset, (unsigned long long)t->size, map->size);
    const runner_type_traits *tt = runner_type_traits_get(t->type);
    if (!tt)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "tensor %s (layer %d): ggml type %d is not supported",
                           name, t->layer, t->type);
    const int is_exps = t->role >= RUNNER_ROLE_FFN_GATE_EXPS && t->role <= RUNNER_ROLE_FFN_DOWN_EXPS;
    if (is_exps) return bind_experts(m, t, map, tt, err, err_len);
    if (t->expert != -1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): expert index %d on a tensor that is not an expert's", name,
                           t->layer, t->expert);
    int64_t ne0, ne1;
    expected_shape(c, t->role, &ne0, &ne1);
    /* Vectors read as F32 in place: norms and biases. */
    int is_vector = t->role == RUNNER_ROLE_OUTPUT_NORM || t->role == RUNNER_ROLE_ATTN_NORM || t->role == RUNNER_ROLE_FFN_NORM ||
                    (t->role >= RUNNER_ROLE_ATTN_Q_BIAS && t->role <= RUNNER_ROLE_ATTN_K_NORM) ||
                    t->role == RUNNER_ROLE_ATTN_POST_NORM || t->role == RUNNER_ROLE_FFN_POST_NORM ||
                    t->role == RUNNER_ROLE_ROPE_FACTORS_LONG || t->role == RUNNER_ROLE_ROPE_FACTORS_SHORT;
    if (t->role == RUNNER_ROLE_FFN_GATE_INP && c->n_expert < 1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor ffn_gate_inp (layer %d): a router in a model without experts", t->layer);
    int64_t got1 = t->n_dims >= 2 ? t->ne[1] : 1;
    for (int d = 2; d < t->n_dims; d++)
        if (t->ne[d] != 1) got1 = -1;
    if (t->n_dims < 1 || t->n_dims > 4 || t->ne[0] != ne0 || got1 != ne1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL,
                           "tensor %s (layer %d): shape [%lld, %lld] does not match the config, expected [%lld, %lld]",
                           name, t->layer, (long long)t->ne[0], (long long)(t->n_dims >= 2 ? t->ne[1] : 1),
                           (long long)ne0, (long long)ne1);
    if (is_vector && t->type != RUNNER_TYPE_F32)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "tensor %s (layer %d): norm and bias vectors must be F32, got %s",
                           name, t->layer, tt->name);
    if (ne0 % tt->block_size != 0)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): ne0 %lld is not a multiple of %s's block %lld",
                           name, t->layer, (long long)ne0, tt->name, (long long)tt->block_size);
    size_t row_bytes = (size_t)(ne0 / tt->block_size) * tt->type_size, total;
    if (!mul_ok(row_bytes, (size_t)ne1, &total) || total != t->size)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): %llu bytes, expected %zu", name,
                           t->layer, (unsigned long long)t->size, row_bytes * (size_t)ne1);
    /* A fused tensor is bound as views: consecutive row ranges, one per weight it stands for. */
    runner_weight *slots[3] = {NULL, NULL, NULL};
    int64_t rows[3] = {ne1, 0, 0};
    const int64_t n_q = (int64_t)c->n_head * c->head_dim, n_kv = (int64_t)c->n_head_kv * c->head_dim;
    if (t->role == RUNNER_ROLE_ATTN_QKV) {
        runner_layer *L = &m->layers[t->layer];
        slots[0] = &L->wq, slots[1] = &L->wk, slots[2] = &L->wv;
        rows[0] = n_q, rows[1] = n_kv, rows[2] = n_kv;
    } else if (t->role == RUNNER_ROLE_FFN_GATE_UP) {
        runner_layer *L = &m->layers[t->layer];
        slots[0] = &L->w_gate, slots[1] = &L->w_up;
        rows[0] = rows[1] = c->n_ff;
    } else {
        slots[0] = slot_for(m, t->role, t->layer);
    }
    const uint8_t *base = (const uint8_t *)map->base + t->offset;
    for (int k = 0; k < 3 && slots[k]; k++) {
        runner_weight *w = slots[k];
        if (w->data)
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d) is given twice (or fused and separate)", name, t->layer);
        w->data = base;
        base += (size_t)rows[k] * row_bytes;
        w->traits = tt;
        w->ne[0] = ne0;
        w->ne[1] = rows[k];
        w->ne[2] = w->ne[3] = 1;
        w->row_bytes = row_bytes;
    }
    for (int k = 0; k < 3 && slots[k]; k++) {
        if (!is_vector && t->role != RUNNER_ROLE_TOKEN_EMBD) {
            runner_status st = setup_kernel(m, slots[k], name, t->layer, err, err_len);
            if (st != RUNNER_OK) return st;
        }
    }
    return RUNNER_OK;
}

static runner_status check_complete(runner_model *m, char *err, int32_t err_len) {
    if (!m->tok_embd.data) return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor token_embd is missing");
    if (!m->output_norm.data) return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor output_norm is missing");
    if (!m->output.data) {
        /* Tied embeddings: the head is token_embd, which then needs a matmul kernel. */
        m->output = m->tok_embd;
        m->output.variant = runner_kernel_pick_vec_dot(m->tok_embd.traits, m->cpu);
        m->output.vec_dot = m->tok_embd.traits->vec_dot[m->output.variant];
        const runner_type_traits *act = runner_type_traits_get(m->tok_embd.traits->vec_dot_type);
        if (!m->output.vec_dot || !act)
            return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "tied output: no matmul kernel for %s",
                               m->tok_embd.traits->name);
        if (act->type != RUNNER_TYPE_F32) {
            m->act_from_float[act->type] = act->from_float[runner_kernel_pick_from_float(act, m->cpu)];
            if (!m->act_from_float[act->type])
                return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "tied output: no quantizer for activations of %s", act->name);
        }
    }
    for (int32_t i = 0; i < m->cfg.n_layer; i++) {
        runner_layer *l = &m->layers[i];
        const runner_weight *ws[] = {&l->attn_norm, &l->wq, &l->wk, &l->wv, &l->wo, &l->ffn_norm, &l->w_gate, &l->w_up, &l->w_down};
        const int32_t roles[] = {RUNNER_ROLE_ATTN_NORM, RUNNER_ROLE_ATTN_Q, RUNNER_ROLE_ATTN_K, RUNNER_ROLE_ATTN_V, RUNNER_ROLE_ATTN_OUT,
                                 RUNNER_ROLE_FFN_NORM, RUNNER_ROLE_FFN_GATE, RUNNER_ROLE_FFN_UP, RUNNER_ROLE_FFN_DOWN};
        const int moe = m->cfg.n_expert > 0;
        for (size_t j = 0; j < sizeof ws / sizeof ws[0]; j++) {
            /* A removed sublayer keeps its pre-norm (optional) and must have none of its weights. A
             * mixture of experts has no dense gate/up/down: treated as removed here, checked below. */
            const int norm = j == 0 || j == 5;
            const int removed = j < 5 ? l->attn_removed : (l->ffn_removed || (moe && !norm));
            if (removed && !norm && ws[j]->data)
                return runner_fail(err, err_len, RUNNER_ERR_MODEL,
                                   j >= 5 && moe && !l->ffn_removed ? "tensor blk.%d.%s: a dense FFN weight in a model with experts"
                                                                    : "tensor blk.%d.%s is present but its sublayer is declared removed",
                                   i, role_names[roles[j]]);
            if (!removed && !ws[j]->data)
                return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.%s is missing", i, role_names[roles[j]]);
        }
        if (l->attn_removed && (l->bq.data || l->bk.data || l->bv.data || l->q_norm.data || l->k_norm.data))
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: attention biases or q/k norms are present but its attention is declared removed", i);
        if ((l->q_norm.data != NULL) != (l->k_norm.data != NULL))
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: attn_q_norm and attn_k_norm come together", i);
        if (m->layers[0].attn_post_norm.data == NULL ? (l->attn_post_norm.data || l->ffn_post_norm.data)
                                                     : (!l->attn_post_norm.data || !l->ffn_post_norm.data))
            return runner_fail(err, err_len, RUNNER_ERR_MODEL,
                               "block %d: attn_post_norm and ffn_post_norm are in every block or in none", i);
        if (l->attn_removed && l->attn_post_norm.data)
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: attn_post_norm is present but its attention is declared removed", i);
        if (moe) {
            const runner_weight *arrs[3] = {l->exp_gate, l->exp_up, l->exp_down};
            const int32_t roles3[3] = {RUNNER_ROLE_FFN_GATE_EXPS, RUNNER_ROLE_FFN_UP_EXPS, RUNNER_ROLE_FFN_DOWN_EXPS};
            if (l->ffn_removed) {
                if (l->gate_inp.data) return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.ffn_gate_inp is present but its sublayer is declared removed", i);
                for (int k = 0; k < 3; k++)
                    for (int32_t e = 0; e < m->cfg.n_expert; e++)
                        if (arrs[k][e].data)
                            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.%s is present but its sublayer is declared removed", i,
                                               role_names[roles3[k]]);
            } else {
                if (!l->gate_inp.data) return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.ffn_gate_inp is missing", i);
                for (int k = 0; k < 3; k++)
                    for (int32_t e = 0; e < m->cfg.n_expert; e++)
                        if (!arrs[k][e].data)
                            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.%s (expert %d) is missing", i, role_names[roles3[k]], e);
            }
        }
    }
    return RUNNER_OK;
}

static runner_status map_file(const char *path, runner_mapping *out, char *err, int32_t err_len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return runner_fail(err, err_len, RUNNER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return runner_fail(err, err_len, RUNNER_ERR_IO, "cannot stat %s or it is empty", path);
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED) return runner_fail(err, err_len, RUNNER_ERR_IO, "cannot map %s: %s", path, strerror(errno));
    out->base = base;
    out->size = (size_t)st.st_size;
    return RUNNER_OK;
}

/* Touch every page of every tensor once, so the first token does not pay for page faults, and so
 * a load can report progress. Reads only; the mapping stays shared with the page cache. */
static runner_status prefault(runner_model *m, const runner_tensor_desc *tensors, int32_t n, runner_progress_fn progress,
                              void *user, char *err, int32_t err_len) {
    uint64_t total = 0, done = 0, next_report = 0;
    for (int32_t i = 0; i < n; i++) total += tensors[i].size;
    volatile uint8_t sink = 0;
    for (int32_t i = 0; i < n; i++) {
        const uint8_t *p = (const uint8_t *)m->maps[tensors[i].file].base + tensors[i].offset;
        for (uint64_t off = 0; off < tensors[i].size; off += 4096) sink ^= p[off];
        done += tensors[i].size;
        if (progress && (done >= next_report || i == n - 1)) {
            if (progress(user, done, total) != 0)
                return runner_fail(err, err_len, RUNNER_ERR_ABORTED, "model load cancelled");
            next_report = done + (64u << 20);
        }
    }
    (void)sink;
    return RUNNER_OK;
}

void runner_model_free(runner_model *m) {
    if (!m) return;
    for (int32_t i = 0; i < m->n_maps; i++)
        if (m->maps[i].base) munmap(m->maps[i].base, m->maps[i].size);
    free(m->maps);
    free(m->layers);
    free(m->experts);
    free(m);
}

runner_status runner_model_load(const runner_model_config *config, const char *const *paths, int32_t n_paths,
                                const runner_tensor_desc *tensors, int32_t n_tensors, runner_progress_fn progress,
                                void *progress_user, runner_model **out, char *err, int32_t err_len) {
    *out = NULL;
    if (!config || !paths || n_paths < 1 || n_paths > 4096 || !tensors || n_tensors < 1)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "model load: no files or no tensors");
    runner_status st = check_config(config, err, err_len);
    if (st != RUNNER_OK) return st;
    runner_model *m = calloc(1, sizeof *m);
    if (!m) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    m->cfg = *config;
    m->cpu = runner_cpu_features_capped();
    if (config->ffn_act == RUNNER_FFN_GELU) runner_gelu_table_init();
    m->maps = calloc((size_t)n_paths, sizeof *m->maps);
    m->layers = calloc((size_t)config->n_layer, sizeof *m->layers);
    if (!m->maps || !m->layers) {
        runner_model_free(m);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    }
    if (config->n_expert > 0) {
        m->experts = calloc((size_t)config->n_layer * 3 * (size_t)config->n_expert, sizeof *m->experts);
        if (!m->experts) {
            runner_model_free(m);
            return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
        }
    }
    for (int32_t l = 0; l < config->n_layer; l++) {
        m->layers[l].attn_removed = config->attn_removed ? (config->attn_removed[l] != 0) : 0;
        m->layers[l].ffn_removed = config->ffn_removed ? (config->ffn_removed[l] != 0) : 0;
        m->layers[l].swa = config->swa_layers ? (config->swa_layers[l] != 0) : 0;
        if (m->experts) {
            runner_weight *e = m->experts + (size_t)l * 3 * (size_t)config->n_expert;
            m->layers[l].exp_gate = e;
            m->layers[l].exp_up = e + config->n_expert;
            m->layers[l].exp_down = e + 2 * (size_t)config->n_expert;
        }
    }
    m->cfg.attn_removed = NULL; /* the caller's arrays are not kept: the flags live in the layers */
    m->cfg.ffn_removed = NULL;
    m->cfg.swa_layers = NULL;
    for (int32_t i = 0; i < n_paths; i++) {
        st = map_file(paths[i], &m->maps[i], err, err_len);
        if (st != RUNNER_OK) {
            runner_model_free(m);
            return st;
        }
        m->n_maps = i + 1;
    }
    for (int32_t i = 0; i < n_tensors && st == RUNNER_OK; i++) st = bind_tensor(m, &tensors[i], i, err, err_len);
    if (st == RUNNER_OK) st = check_complete(m, err, err_len);
    if (st == RUNNER_OK) st = prefault(m, tensors, n_tensors, progress, progress_user, err, err_len);
    if (st != RUNNER_OK) {
        runner_model_free(m);
        return st;
    }
    *out = m;
    return RUNNER_OK;
}

int32_t runner_model_n_vocab(const runner_model *m) {
    return m->cfg.n_vocab;
}

/* ---- contexts ---------------------------------------------------------------------------- */

void runner_context_free(runner_context *ctx) {
    if (!ctx) return;
    if (ctx->pool) runner_pool_free(ctx->pool);
    for (int32_t l = 0; l < ctx->model->cfg.n_layer; l++) {
        if (ctx->k_cache) free(ctx->k_cache[l]);
        if (ctx->v_cache) free(ctx->v_cache[l]);
    }
    free(ctx->k_cache);
    free(ctx->v_cache);
    runner_scratch *s = &ctx->s;
    void *bufs[] = {s->x, s->xn, s->q, s->k, s->v, s->att, s->gate, s->up, s->logits, s->act_q, s->scores, s->qr,
                    s->router, s->sel, s->sel_w, s->exp_gate, s->exp_up, s->exp_out, s->exp_act_q, s->exp_items};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(ctx->rope_cos);
    free(ctx->rope_sin);
    free(ctx->rope_cos_swa);
    free(ctx->rope_sin_swa);
    free(ctx);
}

/* ggml's rope angles: theta_i = pos * base^(-2i/n_rot), formed by repeated multiplication in
 * float (ggml_rope_cache_init), then scaled by freq_scale; cos/sin in float. */
static void fill_rope_cache(runner_context *ctx, float base, float freq_scale, float *cos_out, float *sin_out) {
    const runner_model_config *c = &ctx->model->cfg;
    const int32_t half = c->n_rot / 2;
    const float theta_scale = powf(base, -2.0f / (float)c->n_rot);
    /* longrope (ggml_rope_cache_init with freq_factors): theta / factor, and cos, sin times attn_factor.
     * llama.cpp picks the long factors when its context (padded to 256) exceeds n_ctx_orig. */
    const runner_model *m = ctx->model;
    const int64_t padded = ((int64_t)ctx->params.n_ctx + 255) / 256 * 256;
    const int32_t orig = c->n_ctx_orig > 0 ? c->n_ctx_orig : c->n_ctx_train;
    const runner_weight *fw = padded > orig && m->rope_long.data ? &m->rope_long : m->rope_short.data ? &m->rope_short : m->rope_long.data ? &m->rope_long : NULL;
    const float *ff = fw ? (const float *)fw->data : NULL;
    const float mscale = c->rope_attn_factor > 0.0f ? c->rope_attn_factor : 1.0f;
    for (int32_t p = 0; p < ctx->params.n_ctx; p++) {
        float theta = (float)p;
        for (int32_t i = 0; i < half; i++) {
            const float t = freq_scale * (ff ? theta / ff[i] : theta);
            cos_out[(size_t)p * half + i] = cosf(t) * mscale;
            sin_out[(size_t)p * half + i] = sinf(t) * mscale;
            theta *= theta_scale;
        }
    }
}

/* Sliding-window layers need their own rope cache when their base or scale differs. */
static int swa_rope_differs(const runner_model_config *c) {
    const float base = c->rope_freq_base_swa > 0 ? c->rope_freq_base_swa : c->rope_freq_base;
    const float scale = c->rope_freq_scale_swa > 0 ? c->rope_freq_scale_swa : c->rope_freq_scale;
    return c->n_swa > 0 && (base != c->rope_freq_base || scale != c->rope_freq_scale);
}

/* Bytes of physical memory, or 0 when unknown. */
static uint64_t physical_memory(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

runner_status runner_context_create(runner_model *model, const runner_context_params *p, runner_context **out,
                                    char *err, int32_t err_len) {
    *out = NULL;
    const runner_model_config *c = &model->cfg;
    if (p->n_ctx < 1 || p->n_ctx > (1 << 24))
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "n_ctx %d out of range [1, 16777216]", p->n_ctx);
    if (p->n_batch < 1 || p->n_batch > 65536)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "n_batch %d out of range [1, 65536]", p->n_batch);
    if (p->n_threads < 1 || p->n_threads > 256)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "n_threads %d out of range [1, 256]", p->n_threads);
    if (p->kv_type != RUNNER_KV_F16 && p->kv_type != RUNNER_KV_F32)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "kv_type %d is not f16 (1) or f32 (0)", p->kv_type);
    runner_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    ctx->model = model;
    ctx->params = *p;
    ctx->kv_elem_bytes = p->kv_type == RUNNER_KV_F16 ? 2 : 4;

    const size_t nb = (size_t)p->n_batch, n_q = (size_t)c->n_head * c->head_dim,
                 n_kv = (size_t)c->n_head_kv * c->head_dim;
    size_t widest = (size_t)c->n_embd;
    if (n_q > widest) widest = n_q;
    if ((size_t)c->n_ff > widest) widest = (size_t)c->n_ff;
    if ((size_t)c->n_ff_exp > widest) widest = (size_t)c->n_ff_exp;
    size_t kv_row;
    int ok = mul_ok((size_t)p->n_ctx, n_kv, &kv_row);
    /* Refuse, before allocating anything, a KV cache this machine could never hold, naming the figure. */
    {
        int32_t n_attn = 0;
        for (int32_t l = 0; l < c->n_layer; l++) n_attn += !model->layers[l].attn_removed;
        size_t per_layer = 0, need = 0;
        const int fits = ok && mul_ok(kv_row, 2 * ctx->kv_elem_bytes, &per_layer) && mul_ok(per_layer, (size_t)n_attn, &need);
        const uint64_t mem = physical_memory();
        const size_t elem = ctx->kv_elem_bytes;
        if (!fits || (mem > 0 && (uint64_t)need > mem)) {
            free(ctx);
            if (!fits)
                return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY,
                                   "a context of %d positions needs a KV cache of more than %zu bytes (%d layers x K and V x %zu values per position)",
                                   p->n_ctx, SIZE_MAX, n_attn, n_kv);
            return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY,
                               "a context of %d positions needs %zu bytes (%.1f GiB) of KV cache (%d layers x K and V x %zu values x %zu bytes per "
                               "position), more than this machine's %llu bytes (%.1f GiB) of memory",
                               p->n_ctx, need, (double)need / 1073741824.0, n_attn, n_kv, elem, (unsigned long long)mem,
                               (double)mem / 1073741824.0);
        }
    }
    ctx->k_cache = calloc((size_t)c->n_layer, sizeof(void *));
    ctx->v_cache = calloc((size_t)c->n_layer, sizeof(void *));
    ok = ok && ctx->k_cache && ctx->v_cache;
    for (int32_t l = 0; ok && l < c->n_layer; l++) {
        if (model->layers[l].attn_removed) continue; /* no attention, no KV cache */
        ctx->k_cache[l] = alloc_array(kv_row, ctx->kv_elem_bytes);
        ctx->v_cache[l] = alloc_array(kv_row, ctx->kv_elem_bytes);
        ok = ctx->k_cache[l] && ctx->v_cache[l];
        ctx->kv_bytes += 2 * kv_row * ctx->kv_elem_bytes;
    }
    runner_scratch *s = &ctx->s;
    /* Quantized activation rows take at most 4 bytes per value (F32) plus block headers; 5 covers every type. */
    s->act_q_row_bytes = (widest * 5 + 63) & ~(size_t)63;
    if (ok) {
        s->x = alloc_array(nb, (size_t)c->n_embd * sizeof(float));
        s->xn = alloc_array(nb, widest * sizeof(float));
        s->q = alloc_array(nb, n_q * sizeof(float));
        s->k = alloc_array(nb, n_kv * sizeof(float));
        s->v = alloc_array(nb, n_kv * sizeof(float));
        s->att = alloc_array(nb, n_q * sizeof(float));
        s->gate = alloc_array(nb, (size_t)c->n_ff * sizeof(float));
        s->up = alloc_array(nb, (size_t)c->n_ff * sizeof(float));
        s->logits = alloc_array(nb, (size_t)c->n_vocab * sizeof(float));
        s->act_q = alloc_array(nb * RUNNER_ACT_SLOTS, s->act_q_row_bytes);
        s->scores = alloc_array((size_t)p->n_threads, (size_t)p->n_ctx * sizeof(float));
        s->qr = alloc_array((size_t)p->n_threads, (size_t)c->head_dim * sizeof(float));
        ctx->rope_cos = alloc_array((size_t)p->n_ctx, (size_t)(c->n_rot / 2) * sizeof(float));
        ctx->rope_sin = alloc_array((size_t)p->n_ctx, (size_t)(c->n_rot / 2) * sizeof(float));
        ok = s->x && s->xn && s->q && s->k && s->v && s->att && s->gate && s->up && s->logits && s->act_q &&
             s->scores && s->qr && ctx->rope_cos && ctx->rope_sin;
    }
    if (ok && swa_rope_differs(c)) {
        ctx->rope_cos_swa = alloc_array((size_t)p->n_ctx, (size_t)(c->n_rot / 2) * sizeof(float));
        ctx->rope_sin_swa = alloc_array((size_t)p->n_ctx, (size_t)(c->n_rot / 2) * sizeof(float));
        ok = ctx->rope_cos_swa && ctx->rope_sin_swa;
    }
    if (ok && c->n_expert > 0) {
        const size_t nk = nb * (size_t)c->n_expert_used;
        s->router = alloc_array(nb, (size_t)c->n_expert * sizeof(float));
        s->sel = alloc_array(nk, sizeof(int32_t));
        s->sel_w = alloc_array(nk, sizeof(float));
        s->exp_gate = alloc_array(nk, (size_t)c->n_ff_exp * sizeof(float));
        s->exp_up = alloc_array(nk, (size_t)c->n_ff_exp * sizeof(float));
        s->exp_out = alloc_array(nk, (size_t)c->n_embd * sizeof(float));
        s->exp_act_q = alloc_array(nk, s->act_q_row_bytes);
        s->exp_items = alloc_array(nk, sizeof(int32_t));
        ok = s->router && s->sel && s->sel_w && s->exp_gate && s->exp_up && s->exp_out && s->exp_act_q && s->exp_items;
    }
    if (!ok) {
        runner_context_free(ctx);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY,
                           "cannot allocate a context of %d positions and batch %d (KV cache and scratch)", p->n_ctx,
                           p->n_batch);
    }
    fill_rope_cache(ctx, c->rope_freq_base, c->rope_freq_scale, ctx->rope_cos, ctx->rope_sin);
    if (ctx->rope_cos_swa)
        fill_rope_cache(ctx, c->rope_freq_base_swa > 0 ? c->rope_freq_base_swa : c->rope_freq_base,
                        c->rope_freq_scale_swa > 0 ? c->rope_freq_scale_swa : c->rope_freq_scale, ctx->rope_cos_swa, ctx->rope_sin_swa);
    ctx->pool = runner_pool_create(p->n_threads);
    if (!ctx->pool) {
        runner_context_free(ctx);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "cannot start %d threads", p->n_threads);
    }
    *out = ctx;
    return RUNNER_OK;
}

uint64_t runner_context_kv_bytes(const runner_context *ctx) {
    return ctx->kv_bytes;
}

int32_t runner_context_n_past(const runner_context *ctx) {
    return ctx->n_past;
}

runner_status runner_kv_truncate(runner_context *ctx, int32_t n_keep) {
    if (n_keep < 0 || n_keep > ctx->n_past) return RUNNER_ERR_INVALID_ARGUMENT;
    ctx->n_past = n_keep;
    ctx->has_logits = 0;
    return RUNNER_OK;
}

const float *runner_context_logits(const runner_context *ctx) {
    return ctx->has_logits ? ctx->s.logits : NULL;
}

runner_status runner_decode(runner_context *ctx, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                            float *logits, const volatile int32_t *abort_flag, char *err, int32_t err_len) {
    const runner_model_config *c = &ctx->model->cfg;
    if (n < 1 || !tokens) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "decode: no tokens");
    if (pos < 0 || pos > ctx->n_past)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "decode: position %d is past the %d cached positions",
                           pos, ctx->n_past);
    if ((int64_t)pos + n > ctx->params.n_ctx)
        return runner_fail(err, err_len, RUNNER_ERR_CONTEXT_FULL,
                           "%d tokens at position %d do not fit in the context of %d positions", n, pos, ctx->params.n_ctx);
    if (logits_mode < RUNNER_LOGITS_NONE || logits_mode > RUNNER_LOGITS_ALL)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "decode: logits mode %d", logits_mode);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "token %d at index %d is outside the vocabulary of %d",
                               tokens[i], i, c->n_vocab);
    ctx->n_past = pos;
    ctx->has_logits = 0;
    for (int32_t done = 0; done < n;) {
        const int32_t chunk = n - done < ctx->params.n_batch ? n - done : ctx->params.n_batch;
        const int last_chunk = done + chunk == n;
        int32_t mode = logits_mode == RUNNER_LOGITS_ALL ? RUNNER_LOGITS_ALL
                       : (logits_mode == RUNNER_LOGITS_LAST && last_chunk) ? RUNNER_LOGITS_LAST
                                                                            : RUNNER_LOGITS_NONE;
        runner_status st = runner_forward(ctx, tokens + done, chunk, pos + done, mode, abort_flag, err, err_len);
        if (st != RUNNER_OK) return st;
        ctx->n_past = pos + done + chunk;
        if (logits && mode == RUNNER_LOGITS_ALL)
            memcpy(logits + (size_t)done * c->n_vocab, ctx->s.logits, (size_t)chunk * c->n_vocab * sizeof(float));
        else if (logits && mode == RUNNER_LOGITS_LAST)
            memcpy(logits, ctx->s.logits, (size_t)c->n_vocab * sizeof(float));
        done += chunk;
    }
    ctx->has_logits = logits_mode != RUNNER_LOGITS_NONE;
    return RUNNER_OK;
}
