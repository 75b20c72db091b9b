/*
 * The model config's one description (runner.h RUNNER_MODEL_CONFIG_FIELDS) as data, and the range
 * checks the engine applies to a config before it sizes anything by it.
 */
#include "model/config.h"

#include <math.h>
#include <stddef.h>

#include "core/status.h"

#define RUNNER_CFG_KIND_I32 RUNNER_CFG_I32
#define RUNNER_CFG_KIND_F32 RUNNER_CFG_F32
#define RUNNER_CFG_KIND_LAYER_FLAGS RUNNER_CFG_LAYER_FLAGS
#define RUNNER_CFG_PRESENCE_REQUIRED 1
#define RUNNER_CFG_PRESENCE_OPTIONAL 0

static const runner_config_field config_fields[] = {
#define RUNNER_CFG_FIELD_(kind, name, presence, doc) \
    {#name, RUNNER_CFG_KIND_##kind, #kind, RUNNER_CFG_PRESENCE_##presence, (uint32_t)offsetof(runner_model_config, name), doc},
    RUNNER_MODEL_CONFIG_FIELDS(RUNNER_CFG_FIELD_)
#undef RUNNER_CFG_FIELD_
};

static const runner_config_enum_value config_enums[] = {
#define RUNNER_CFG_ENUM_VALUE_(field, constant, name, value, doc) {#field, #name, value, doc},
    RUNNER_MODEL_CONFIG_ENUMS(RUNNER_CFG_ENUM_VALUE_)
#undef RUNNER_CFG_ENUM_VALUE_
};

const runner_config_field *runner_model_config_fields(int32_t *count) {
    *count = (int32_t)(sizeof config_fields / sizeof config_fields[0]);
    return config_fields;
}

const runner_config_enum_value *runner_model_config_enum_values(int32_t *count) {
    *count = (int32_t)(sizeof config_enums / sizeof config_enums[0]);
    return config_enums;
}

runner_status runner_model_config_check(const runner_model_config *c, char *err, int32_t err_len) {
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
    NEED(isfinite(c->rope_ext_factor) && c->rope_ext_factor >= 0, "rope_ext_factor %g out of range", (double)c->rope_ext_factor);
    /* The ramp's ends are logs of n_ctx_orig / beta: a zero or negative beta has none. */
    NEED(c->rope_ext_factor == 0 || (isfinite(c->rope_beta_fast) && c->rope_beta_fast > 0 && isfinite(c->rope_beta_slow) && c->rope_beta_slow > 0),
         "rope_beta_fast %g and rope_beta_slow %g must be positive with YaRN (rope_ext_factor %g)", (double)c->rope_beta_fast,
         (double)c->rope_beta_slow, (double)c->rope_ext_factor);
    /* One NextN block, as llama.cpp's qwen35 runs it; the main pass keeps at least one block. */
    NEED(c->n_nextn >= 0 && c->n_nextn <= 1 && c->n_nextn < c->n_layer, "n_nextn %d out of range [0, 1] (and below n_layer %d)", c->n_nextn,
         c->n_layer);
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
