/*
 * Binding tensors by role: each descriptor's extent and type are checked against its file, and its
 * shape against the rules of model/roles.c (defence in depth: TypeScript checked them too); then it
 * becomes a view in place in the mapped file, with the matmul kernel this CPU runs picked for it.
 * Fused tensors (phi3's attn_qkv and ffn_gate_up, 3-D expert tensors) are bound as one view per
 * weight they stand for.
 */
#include "model/bind.h"

#include <stdint.h>

#include "core/alloc.h"
#include "core/status.h"
#include "model/roles.h"

runner_weight *runner_model_weight_slot(runner_model *m, int32_t role, int32_t layer) {
    switch (role) {
    case RUNNER_ROLE_TOKEN_EMBD: return &m->tok_embd;
    case RUNNER_ROLE_OUTPUT_NORM: return &m->output_norm;
    case RUNNER_ROLE_OUTPUT: return &m->output;
    case RUNNER_ROLE_ROPE_FACTORS_LONG: return &m->rope_long;
    case RUNNER_ROLE_ROPE_FACTORS_SHORT: return &m->rope_short;
    default: break;
    }
    runner_nextn *nx = &m->nextn;
    switch (role) {
    case RUNNER_ROLE_NEXTN_EH_PROJ: return &nx->eh_proj;
    case RUNNER_ROLE_NEXTN_EMBED_TOKENS: return &nx->embed;
    case RUNNER_ROLE_NEXTN_ENORM: return &nx->enorm;
    case RUNNER_ROLE_NEXTN_HNORM: return &nx->hnorm;
    case RUNNER_ROLE_NEXTN_SHARED_HEAD_NORM: return &nx->head_norm;
    case RUNNER_ROLE_NEXTN_SHARED_HEAD_HEAD: return &nx->head;
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
runner_status runner_weight_setup_kernel(runner_model *m, runner_weight *w, const char *name, int32_t layer, char *err, int32_t err_len) {
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
    const char *name = runner_tensor_role_name(t->role);
    if (c->n_expert < 1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): expert weights in a model without experts", name, t->layer);
    const int fused = t->expert < 0;
    if (!fused && t->expert >= c->n_expert)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): expert %d out of range [0, %d)", name, t->layer,
                           t->expert, c->n_expert);
    int64_t ne0, ne1;
    runner_role_shape(c, t->role, &ne0, &ne1);
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
    if (!runner_mul_ok(row_bytes, (size_t)ne1, &per_expert) || !runner_mul_ok(per_expert, (size_t)ne2, &total) || total != t->size)
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
        runner_status st = runner_weight_setup_kernel(m, w, name, t->layer, err, err_len);
        if (st != RUNNER_OK) return st;
    }
    return RUNNER_OK;
}

runner_status runner_model_bind_tensor(runner_model *m, const runner_tensor_desc *t, int32_t index, char *err,
                                        int32_t err_len) {
    const runner_model_config *c = &m->cfg;
    if (t->role < 0 || t->role >= RUNNER_ROLE_COUNT)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %d: unknown role %d", index, t->role);
    const char *name = runner_tensor_role_name(t->role);
    if (runner_role_is_per_layer(t->role) ? (t->layer < 0 || t->layer >= c->n_layer) : t->layer != -1)
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
    /* The NextN head's weights belong to its block alone: elsewhere they would never be read. */
    const int is_nextn = t->role >= RUNNER_ROLE_NEXTN_EH_PROJ && t->role <= RUNNER_ROLE_NEXTN_SHARED_HEAD_HEAD;
    if (is_nextn && (c->n_nextn < 1 || t->layer != c->n_layer - c->n_nextn))
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): NextN weights belong to block %d of a model with n_nextn > 0 (n_nextn %d)",
                           name, t->layer, c->n_layer - c->n_nextn, c->n_nextn);
    const int is_exps = t->role >= RUNNER_ROLE_FFN_GATE_EXPS && t->role <= RUNNER_ROLE_FFN_DOWN_EXPS;
    if (is_exps) return bind_experts(m, t, map, tt, err, err_len);
    if (t->expert != -1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): expert index %d on a tensor that is not an expert's", name,
                           t->layer, t->expert);
    int64_t want0, want1;
    runner_role_shape(c, t->role, &want0, &want1);
    /* Vectors read as F32 in place: norms and biases. */
    const int is_vector = runner_role_is_vector(t->role);
    if (t->role == RUNNER_ROLE_FFN_GATE_INP && c->n_expert < 1)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor ffn_gate_inp (layer %d): a router in a model without experts", t->layer);
    int64_t got1 = t->n_dims >= 2 ? t->ne[1] : 1;
    for (int d = 2; d < t->n_dims; d++)
        if (t->ne[d] != 1) got1 = -1;
    if (t->n_dims < 1 || t->n_dims > 4 || !runner_role_shape_ok(c, t->role, t->ne[0], got1))
        return runner_fail(err, err_len, RUNNER_ERR_MODEL,
                           "tensor %s (layer %d): shape [%lld, %lld] does not match the config, expected [%lld, %lld]",
                           name, t->layer, (long long)t->ne[0], (long long)(t->n_dims >= 2 ? t->ne[1] : 1),
                           (long long)want0, (long long)want1);
    const int64_t ne0 = t->ne[0], ne1 = got1;
    if (is_vector && t->type != RUNNER_TYPE_F32)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "tensor %s (layer %d): norm and bias vectors must be F32, got %s",
                           name, t->layer, tt->name);
    if (ne0 % tt->block_size != 0)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor %s (layer %d): ne0 %lld is not a multiple of %s's block %lld",
                           name, t->layer, (long long)ne0, tt->name, (long long)tt->block_size);
    size_t row_bytes = (size_t)(ne0 / tt->block_size) * tt->type_size, total;
    if (!runner_mul_ok(row_bytes, (size_t)ne1, &total) || total != t->size)
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
        slots[0] = runner_model_weight_slot(m, t->role, t->layer);
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
        if (!is_vector && t->role != RUNNER_ROLE_TOKEN_EMBD && t->role != RUNNER_ROLE_NEXTN_EMBED_TOKENS) {
            runner_status st = runner_weight_setup_kernel(m, slots[k], name, t->layer, err, err_len);
            if (st != RUNNER_OK) return st;
        }
    }
    return RUNNER_OK;
}

runner_status runner_model_bind_tied_head(runner_model *m, char *err, int32_t err_len) {
    if (m->output.data || !m->tok_embd.data) return RUNNER_OK;
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
    return RUNNER_OK;
}
