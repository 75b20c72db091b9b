/*
 * What each tensor role is: its name, the shape it must have under the config, whether it is an F32
 * vector read in place, and which roles a block must (or must not) have. The one place that says what
 * a valid model's weights look like; model/bind.c does the binding itself. TypeScript's tables
 * (src/lib/arch) say the same for each family; this is the engine's own check (defence in depth).
 */
#include "model/roles.h"

#include "core/status.h"

static const char *const role_names[RUNNER_ROLE_COUNT] = {
    "token_embd", "output_norm", "output",      "attn_norm",   "attn_q",      "attn_k",      "attn_v",
    "attn_output", "ffn_norm",   "ffn_gate",    "ffn_up",      "ffn_down",    "attn_q_bias", "attn_k_bias",
    "attn_v_bias", "attn_q_norm", "attn_k_norm", "attn_qkv",    "ffn_gate_up", "attn_post_norm", "ffn_post_norm",
    "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps", "rope_factors_long", "rope_factors_short",
    "nextn_eh_proj", "nextn_embed_tokens", "nextn_enorm", "nextn_hnorm", "nextn_shared_head_norm", "nextn_shared_head_head",
};

const char *runner_tensor_role_name(int32_t role) {
    return role >= 0 && role < RUNNER_ROLE_COUNT ? role_names[role] : NULL;
}

int runner_role_is_per_layer(int32_t role) {
    return role >= RUNNER_ROLE_ATTN_NORM && role < RUNNER_ROLE_COUNT && role != RUNNER_ROLE_ROPE_FACTORS_LONG &&
           role != RUNNER_ROLE_ROPE_FACTORS_SHORT;
}

void runner_role_shape(const runner_model_config *c, int32_t role, int64_t *ne0, int64_t *ne1) {
    const int64_t n_q = (int64_t)c->n_head * c->head_dim, n_kv = (int64_t)c->n_head_kv * c->head_dim;
    *ne1 = 1;
    switch (role) {
    case RUNNER_ROLE_TOKEN_EMBD:
    case RUNNER_ROLE_OUTPUT:
    case RUNNER_ROLE_NEXTN_EMBED_TOKENS:
    case RUNNER_ROLE_NEXTN_SHARED_HEAD_HEAD: *ne0 = c->n_embd; *ne1 = c->n_vocab; break;
    case RUNNER_ROLE_NEXTN_EH_PROJ: *ne0 = 2 * (int64_t)c->n_embd; *ne1 = c->n_embd; break;
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

int runner_role_is_vector(int32_t role) {
    return role == RUNNER_ROLE_OUTPUT_NORM || role == RUNNER_ROLE_ATTN_NORM || role == RUNNER_ROLE_FFN_NORM ||
           (role >= RUNNER_ROLE_ATTN_Q_BIAS && role <= RUNNER_ROLE_ATTN_K_NORM) || role == RUNNER_ROLE_ATTN_POST_NORM ||
           role == RUNNER_ROLE_FFN_POST_NORM || role == RUNNER_ROLE_ROPE_FACTORS_LONG || role == RUNNER_ROLE_ROPE_FACTORS_SHORT ||
           role == RUNNER_ROLE_NEXTN_ENORM || role == RUNNER_ROLE_NEXTN_HNORM || role == RUNNER_ROLE_NEXTN_SHARED_HEAD_NORM;
}

int runner_role_shape_ok(const runner_model_config *c, int32_t role, int64_t ne0, int64_t ne1) {
    int64_t want0, want1;
    runner_role_shape(c, role, &want0, &want1);
    if (ne0 == want0 && ne1 == want1) return 1;
    /* Q and K norms are per head [head_dim] (qwen3, gemma3) or over the whole projection (olmo2); the
     * forward pass reads which from the weight's width. */
    const int64_t whole = role == RUNNER_ROLE_ATTN_Q_NORM   ? (int64_t)c->n_head * c->head_dim
                          : role == RUNNER_ROLE_ATTN_K_NORM ? (int64_t)c->n_head_kv * c->head_dim
                                                            : -1;
    return ne0 == whole && ne1 == 1;
}

runner_status runner_model_check_complete(runner_model *m, char *err, int32_t err_len) {
    if (!m->tok_embd.data) return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor token_embd is missing");
    if (!m->output_norm.data) return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor output_norm is missing");
    /* The NextN head needs its projection and both input norms (llama.cpp's qwen35 asserts the same);
     * embed, head norm and head fall back to the model's own. Its block is checked below as any other. */
    const runner_nextn *nx = &m->nextn;
    const runner_weight *need[] = {&nx->eh_proj, &nx->enorm, &nx->hnorm};
    const int32_t need_roles[] = {RUNNER_ROLE_NEXTN_EH_PROJ, RUNNER_ROLE_NEXTN_ENORM, RUNNER_ROLE_NEXTN_HNORM};
    for (size_t j = 0; m->cfg.n_nextn > 0 && j < sizeof need / sizeof need[0]; j++)
        if (!need[j]->data)
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.%s is missing", m->cfg.n_layer - m->cfg.n_nextn,
                               runner_tensor_role_name(need_roles[j]));
    int post_norms = 0;
    for (int32_t i = 0; i < m->cfg.n_layer; i++) post_norms |= m->layers[i].attn_post_norm.data || m->layers[i].ffn_post_norm.data;
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
                                   i, runner_tensor_role_name(roles[j]));
            /* A pre-norm may be absent where its sublayer has a post-norm instead (olmo2 norms each
             * sublayer's output, not its input); a mixture of experts always has one. */
            const runner_weight *post = j == 0 ? &l->attn_post_norm : &l->ffn_post_norm;
            const int norm_optional = norm && post->data && !(j == 5 && moe);
            if (!removed && !ws[j]->data && !norm_optional)
                return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.%s is missing", i, runner_tensor_role_name(roles[j]));
        }
        if (l->attn_removed && (l->bq.data || l->bk.data || l->bv.data || l->q_norm.data || l->k_norm.data))
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: attention biases or q/k norms are present but its attention is declared removed", i);
        if ((l->q_norm.data != NULL) != (l->k_norm.data != NULL))
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: attn_q_norm and attn_k_norm come together", i);
        /* Post-norms (gemma, olmo2): on every sublayer a block has, or on none. A removed sublayer may
         * still carry its post-norm, as its pre-norm (runner 0.1's remove-sublayer kept it): the
         * forward pass skips the sublayer, so neither is used. */
        const int missing_attn_post = post_norms && !l->attn_removed && !l->attn_post_norm.data;
        if (missing_attn_post || (post_norms && !l->ffn_removed && !l->ffn_post_norm.data))
            return runner_fail(err, err_len, RUNNER_ERR_MODEL,
                               "block %d: %s is missing (attn_post_norm and ffn_post_norm are in every block that has that sublayer, or in none)",
                               i, missing_attn_post ? "attn_post_norm" : "ffn_post_norm");
        if (moe) {
            const runner_weight *arrs[3] = {l->exp_gate, l->exp_up, l->exp_down};
            const int32_t roles3[3] = {RUNNER_ROLE_FFN_GATE_EXPS, RUNNER_ROLE_FFN_UP_EXPS, RUNNER_ROLE_FFN_DOWN_EXPS};
            if (l->ffn_removed) {
                if (l->gate_inp.data) return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.ffn_gate_inp is present but its sublayer is declared removed", i);
                for (int k = 0; k < 3; k++)
                    for (int32_t e = 0; e < m->cfg.n_expert; e++)
                        if (arrs[k][e].data)
                            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.%s is present but its sublayer is declared removed", i,
                                               runner_tensor_role_name(roles3[k]));
            } else {
                if (!l->gate_inp.data) return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.ffn_gate_inp is missing", i);
                for (int k = 0; k < 3; k++)
                    for (int32_t e = 0; e < m->cfg.n_expert; e++)
                        if (!arrs[k][e].data)
                            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.%s (expert %d) is missing", i, runner_tensor_role_name(roles3[k]), e);
            }
        }
    }
    return RUNNER_OK;
}
