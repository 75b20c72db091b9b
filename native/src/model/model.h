/* Internal layout of models and contexts, shared by the loader, the forward pass and generation. */
#ifndef RUNNER_MODEL_H
#define RUNNER_MODEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/threadpool.h"
#include "kv/kv_cache.h"
#include "quant/quant.h"
#include "runner.h"

struct runner_lora_pair;

/* A weight matrix bound in place in the mapped file: ne[0] = n_in (contiguous), ne[1] = n_out. */
typedef struct runner_weight {
    const uint8_t *data;             /* NULL when the tensor is absent */
    const runner_type_traits *traits;
    int64_t ne[4];
    size_t row_bytes;                /* bytes of one row of ne[0] values */
    runner_vec_dot_fn vec_dot;       /* the variant picked for this CPU */
    runner_kernel_variant variant;   /* which one it is (runner_vec_dot_rows needs it) */
    struct runner_lora_pair *lora; /* LoRA deltas added to this weight's projection, in order (NULL: none) */
} runner_weight;

/* One adapted weight's LoRA pair (model/lora.c): a [n_in, rank], b [rank, n_out], the effective scale
 * (scale * alpha / rank), and the next pair adapting the same weight. */
typedef struct runner_lora_pair {
    runner_weight a, b;
    float scale;
    struct runner_lora_pair *next;
} runner_lora_pair;

/* One attached adapter file: its mapping and its pairs (freed with the model). */
typedef struct runner_lora_file {
    void *base;
    size_t size;
    runner_lora_pair *pairs;
    struct runner_lora_file *next;
} runner_lora_file;

typedef struct runner_layer {
    runner_weight attn_norm, wq, wk, wv, wo;
    runner_weight ffn_norm, w_gate, w_up, w_down;
    runner_weight bq, bk, bv;         /* optional biases added after the Q/K/V projections */
    runner_weight q_norm, k_norm;     /* optional per-head RMS norms before rope */
    runner_weight attn_post_norm, ffn_post_norm; /* optional RMS norms of each sublayer's output (gemma) */
    runner_weight gate_inp;           /* MoE router [n_embd, n_expert] */
    /* MoE: one view per expert, whether the file fused them in a 3-D tensor or split them
     * (runner_layer_expert). n_expert entries each, or NULL for a dense layer. */
    runner_weight *exp_gate, *exp_up, *exp_down;
    uint8_t attn_removed; /* declared removed: no weights, no KV cache, the branch is skipped */
    uint8_t ffn_removed;
    uint8_t swa;          /* sliding-window layer: attends to the last n_swa positions, rope from the swa cache */
} runner_layer;

/* The multi-token-prediction head's own weights (runner.h RUNNER_ROLE_NEXTN_*): its block is
 * layers[n_layer - n_nextn], which the main pass does not run. Absent ones fall back to the model's. */
typedef struct runner_nextn {
    runner_weight eh_proj, embed, enorm, hnorm, head_norm, head;
} runner_nextn;

typedef struct runner_mapping {
    void *base;
    size_t size;
} runner_mapping;

struct runner_model {
    runner_model_config cfg;
    runner_mapping *maps;
    int32_t n_maps;
    runner_weight tok_embd, output_norm, output;
    runner_weight rope_long, rope_short; /* optional rope frequency factors (phi3 longrope) */
    runner_layer *layers;
    runner_nextn nextn;     /* cfg.n_nextn > 0 only */
    runner_weight *experts; /* n_layer * 3 * n_expert views (MoE only) */
    uint8_t *flags;         /* the config's LAYER_FLAGS fields, n_layer each; cfg's pointers point here */
    runner_cpu_mask cpu;
    /* Activation quantizer per vec_dot_type, picked for this CPU (indexed by ggml type id). */
    runner_from_float_fn act_from_float[64];
    runner_lora_file *loras;    /* attached adapters, first added first */
    int32_t lora_max_rank;      /* widest rank among them (contexts size their scratch by it) */
    atomic_int n_contexts;      /* live contexts: adapters may be added only while there are none */
};

/* Distinct activation types one group of matmuls (weights sharing an input) may need at once. */
#define RUNNER_ACT_SLOTS 3

/* Activations of one step, sized once for n_batch tokens. [n_tok][dim] row-major. */
typedef struct runner_scratch {
    float *x;       /* residual stream [n_batch][n_embd] */
    float *xn;      /* normed input of a sublayer [n_batch][max(n_embd, n_q)] */
    float *q;       /* [n_batch][n_head * head_dim] */
    float *k;       /* [n_batch][n_head_kv * head_dim] */
    float *v;       /* [n_batch][n_head_kv * head_dim] */
    float *att;     /* attention output [n_batch][n_head * head_dim] */
    float *gate;    /* [n_batch][n_ff] */
    float *up;      /* [n_batch][n_ff] */
    float *logits;  /* [n_batch][n_vocab] */
    float *lora_tmp; /* a x of one LoRA pair [n_batch][lora_max_rank] (NULL without adapters) */
    uint8_t *act_q; /* quantized activations: RUNNER_ACT_SLOTS x [n_batch][act_q_row_bytes] */
    size_t act_q_row_bytes;
    float *attn;    /* per thread: the tiled attention's workspace, attn_floats each (ops/attention.h) */
    size_t attn_floats;
    /* AMX prompt tiles (quant/amx.h), when the process uses them (else all NULL / 0): the ISA, and per
     * thread a workspace of amx_bytes for the repacked weight rows and the tile's accumulators. */
    const struct runner_amx_isa *amx_isa;
    uint8_t *amx;
    size_t amx_bytes;
    /* MoE (NULL for dense models): router probabilities, the choice per token, expert activations. */
    float *router;       /* [n_batch][n_expert] */
    int32_t *sel;        /* [n_batch][n_expert_used] chosen experts, best first */
    float *sel_w;        /* [n_batch][n_expert_used] their weights */
    float *exp_gate;     /* [n_batch * n_expert_used][n_ff_exp] */
    float *exp_up;       /* [n_batch * n_expert_used][n_ff_exp] */
    float *exp_out;      /* [n_batch * n_expert_used][n_embd] */
    uint8_t *exp_act_q;  /* quantized hidden rows for the down projections [n_batch * n_expert_used][act_q_row_bytes] */
    int32_t *exp_items;  /* (token * n_expert_used + slot) grouped by expert [n_batch * n_expert_used] */
} runner_scratch;

struct runner_context {
    runner_model *model;
    runner_context_params params;
    runner_pool *pool;
    runner_kv_cache kv;
    runner_scratch s;
    /* Rope angles: [n_ctx][n_rot/2] cos and sin, computed once per context as ggml does. */
    float *rope_cos;
    float *rope_sin;
    /* The same for sliding-window layers when their rope base or scale differs (else NULL). */
    float *rope_cos_swa;
    float *rope_sin_swa;
    /* The last logits row computed (runner_context_logits), or NULL. */
    const float *last_logits;
};

/* Consecutive tokens [t0, t0 + n) of a step that continue one sequence: the context whose KV cache
 * and rope tables they use, from position pos. A plain decode is one segment; a decode group's step
 * (model/group.c) is one per member. */
typedef struct runner_segment {
    runner_context *seq;
    int32_t t0, n, pos;
    int32_t rope_off; /* rope angles at position + rope_off (the MTP head's slot p is rotated as p + 1) */
} runner_segment;

/* One forward step's tokens and where they go; the argument of its per-token and per-head tasks.
 * ctx is where the step computes (scratch, pool); each token's KV cache and position come from its
 * segment. */
typedef struct runner_step {
    runner_context *ctx;
    const int32_t *tokens;
    int32_t n_tok;
    int32_t layer;
    const runner_segment *segs;
    int32_t n_segs;
    const int32_t *seg_of; /* per token, its segment (NULL: every token is in segs[0]) */
} runner_step;

static inline const runner_segment *runner_step_segment(const runner_step *st, int64_t t) {
    return &st->segs[st->seg_of ? st->seg_of[t] : 0];
}

#endif
