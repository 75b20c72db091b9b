/*
 * Completeness: after binding, every block has exactly the weights its declared sublayers need
 * (a removed sublayer none but its pre-norm), and the tied head gets its kernel.
 */
#include "model/check.h"

#include "core/status.h"

runner_status runner_model_check_complete(runner_model *m, char *err, int32_t err_len) {
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
            if (!removed && !ws[j]->data)
                return runner_fail(err, err_len, RUNNER_ERR_MODEL, "tensor blk.%d.%s is missing", i, runner_tensor_role_name(roles[j]));
        }
        if (l->attn_removed && (l->bq.data || l->bk.data || l->bv.data || l->q_norm.data || l->k_norm.data))
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: attention biases or q/k norms are present but its attention is declared removed", i);
        if ((l->q_norm.data != NULL) != (l->k_norm.data != NULL))
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: attn_q_norm and attn_k_norm come together", i);
        /* Post-norms (gemma): on every sublayer a block has, or on none; a removed sublayer has none. */
        if (l->attn_removed && l->attn_post_norm.data)
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: attn_post_norm is present but its attention is declared removed", i);
        if (l->ffn_removed && l->ffn_post_norm.data)
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "block %d: ffn_post_norm is present but its FFN is declared removed", i);
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
