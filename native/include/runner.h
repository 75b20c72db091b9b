/*
 * runner.h: the engine's whole C API (C11). The Node addon (native/addon/) calls
 * nothing else, so everything the TypeScript side can reach is declared here.
 *
 * Conventions every later addition follows:
 *  - Plain C types only: fixed-width integers, const char *, opaque handles.
 *  - Functions never abort, exit or print; failures come back as a status code
 *    plus a message naming the thing that was refused (ARCHITECTURE.md, rules 7 and 13).
 *  - Bump RUNNER_ABI_VERSION whenever a declaration here changes meaning, and the
 *    matching constant in src/lib/engine/addon.ts, so a stale build is refused by name.
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ------------------------------------------------------------ */

/* Version of this C API; the TypeScript loader refuses an addon built against another. */
#define RUNNER_ABI_VERSION 20

/* The package version (package.json "version", injected by CMake), e.g. "0.1.0". Static storage. */
const char *runner_version(void);

/* RUNNER_ABI_VERSION as compiled into this build. */
int runner_abi_version(void);

/* ---- CPU features -------------------------------------------------------- */

/*
 * Instruction-set features the kernels may dispatch on. Detected at run time
 * (cpuid plus the OS's XCR0 state on x86), never assumed from compile flags.
 * Each value is a bit index into the mask that runner_cpu_features() returns;
 * runner_cpu_feature_name() gives the stable snake_case name the addon exports.
 * Append new features before RUNNER_CPU_FEATURE_COUNT; never renumber.
 */
typedef enum runner_cpu_feature {
    RUNNER_CPU_SSE4_2 = 0,
    RUNNER_CPU_AVX2,
    RUNNER_CPU_FMA,
    RUNNER_CPU_F16C,
    RUNNER_CPU_AVX512F,
    RUNNER_CPU_AVX512BW,
    RUNNER_CPU_AVX512VL,
    RUNNER_CPU_AVX512_VNNI,
    RUNNER_CPU_AVX_VNNI,
    RUNNER_CPU_AMX, /* AMX-TILE: tile registers usable (CPU and OS state) */
    RUNNER_CPU_AMX_INT8,
    RUNNER_CPU_AMX_BF16,
    RUNNER_CPU_NEON,
    RUNNER_CPU_FEATURE_COUNT
} runner_cpu_feature;

typedef uint64_t runner_cpu_mask;

/*
 * Bit i set <=> feature i is usable by this process. On Linux, AMX additionally
 * needs a one-time arch_prctl(ARCH_REQ_XCOMP_PERM) before the first tile
 * instruction; this call reports CPU+OS support and requests nothing.
 */
runner_cpu_mask runner_cpu_features(void);

/* Stable name of a feature ("sse4_2", "avx512_vnni", ...), or NULL when out of range. */
const char *runner_cpu_feature_name(int feature);

static inline int runner_cpu_has(runner_cpu_mask mask, runner_cpu_feature feature) {
    return (unsigned)feature < (unsigned)RUNNER_CPU_FEATURE_COUNT && ((mask >> (unsigned)feature) & 1u) != 0;
}

/*
 * AMX-INT8 tiles for prompt matmuls (Q8_0 and Q4_0 weights; docs/kernels.md, "AMX"). Decided once
 * per process, on the first call of any function below or the first context: in use only when the
 * CPU mask (capped by RUNNER_CPU_MAX) has AMX-TILE and AMX-INT8, the OS granted the tile state,
 * and a built-in self-check gave bitwise the vec_dot kernels' results, so AMX never changes a logit.
 * RUNNER_AMX=off keeps it off; RUNNER_AMX=emulate runs the algorithm on a scalar emulation of the
 * tile instructions instead (for tests only: slow). Append; never renumber.
 */
typedef enum runner_amx_state {
    RUNNER_AMX_ABSENT = 0,            /* the CPU (or OS, or the RUNNER_CPU_MAX cap) lacks AMX-INT8 */
    RUNNER_AMX_OFF = 1,               /* present, RUNNER_AMX=off */
    RUNNER_AMX_NOT_BUILT = 2,         /* present, this build has no AMX code (compiler or target) */
    RUNNER_AMX_PERMISSION_DENIED = 3, /* present, the OS refused the tile state (Linux arch_prctl) */
    RUNNER_AMX_SELFCHECK_FAILED = 4,  /* present, the self-check found a difference: not used */
    RUNNER_AMX_ACTIVE = 5,            /* prompt matmuls of Q8_0 and Q4_0 weights use AMX */
    RUNNER_AMX_EMULATED = 6,          /* RUNNER_AMX=emulate: the same algorithm on emulated tiles */
    RUNNER_AMX_STATE_COUNT
} runner_amx_state;

runner_amx_state runner_amx_state_get(void);
/* Stable name of a state ("absent", "off", "not-built", "permission-denied", "selfcheck-failed",
 * "active", "emulated"), or NULL when out of range. */
const char *runner_amx_state_name(int state);
/* 16-row x 16-token tiles the prompt matmuls have computed with AMX (active or emulated) so far in
 * this process. */
uint64_t runner_amx_tiles(void);


/* ---- status ---------------------------------------------------------------- */

/*
 * Every status a call can return, with the stable code name the seam reports it under (the
 * TypeScript side maps each name to an exit code: src/lib/errors.ts; a test checks the two lists
 * agree). X(constant, value, code name, meaning). The last two are reported by the Node binding
 * about its handles; the engine itself never returns them. Append; never renumber.
 */
#define RUNNER_STATUS_LIST(X) \
    X(RUNNER_OK, 0, "ENGINE_OK", "success") \
    X(RUNNER_ERR_INVALID_ARGUMENT, 1, "ENGINE_INVALID_ARGUMENT", "a parameter out of range; the message names it") \
    X(RUNNER_ERR_IO, 2, "ENGINE_IO", "a model file could not be opened or mapped") \
    X(RUNNER_ERR_MODEL, 3, "ENGINE_BAD_MODEL", "the model's config or tensors are inconsistent or out of the file") \
    X(RUNNER_ERR_NO_MEMORY, 4, "ENGINE_NO_MEMORY", "an allocation failed, or a size would not fit in memory") \
    X(RUNNER_ERR_UNSUPPORTED, 5, "ENGINE_UNSUPPORTED", "a tensor type or feature this engine does not implement") \
    X(RUNNER_ERR_CONTEXT_FULL, 6, "ENGINE_CONTEXT_FULL", "the tokens do not fit in the context") \
    X(RUNNER_ERR_ABORTED, 7, "ENGINE_ABORTED", "the abort flag was raised") \
    X(RUNNER_ERR_INTERNAL, 8, "ENGINE_INTERNAL", "an unexpected failure (a bug); the message says where") \
    X(RUNNER_ERR_BUSY, 9, "ENGINE_BUSY", "a context is in use by another call") \
    X(RUNNER_ERR_DISPOSED, 10, "ENGINE_DISPOSED", "a model or context was used after it was disposed") \
    X(RUNNER_ERR_KV_EVICTED, 11, "ENGINE_KV_EVICTED", "a truncate or rewind needs positions a sliding-window ring has overwritten")

typedef enum runner_status {
#define RUNNER_STATUS_ENUM_(constant, value, code, doc) constant = value,
    RUNNER_STATUS_LIST(RUNNER_STATUS_ENUM_)
#undef RUNNER_STATUS_ENUM_
    RUNNER_STATUS_COUNT
} runner_status;

/* The stable code name of a status ("ENGINE_NO_MEMORY"), or NULL when out of range. */
const char *runner_status_code(int32_t status);

/* ---- models ------------------------------------------------------------------ */

/*
 * What each weight is for. TypeScript (src/lib/arch) maps tensor names to roles; the engine never
 * parses names or metadata. Append new roles before RUNNER_ROLE_COUNT; never renumber.
 */
typedef enum runner_tensor_role {
    RUNNER_ROLE_TOKEN_EMBD = 0, /* [n_embd, n_vocab] */
    RUNNER_ROLE_OUTPUT_NORM,    /* [n_embd] */
    RUNNER_ROLE_OUTPUT,         /* [n_embd, n_vocab]; absent: tied to token_embd */
    RUNNER_ROLE_ATTN_NORM,      /* per layer [n_embd] */
    RUNNER_ROLE_ATTN_Q,         /* per layer [n_embd, n_head * head_dim] */
    RUNNER_ROLE_ATTN_K,         /* per layer [n_embd, n_head_kv * head_dim] */
    RUNNER_ROLE_ATTN_V,         /* per layer [n_embd, n_head_kv * head_dim] */
    RUNNER_ROLE_ATTN_OUT,       /* per layer [n_head * head_dim, n_embd] */
    RUNNER_ROLE_FFN_NORM,       /* per layer [n_embd] */
    RUNNER_ROLE_FFN_GATE,       /* per layer [n_embd, n_ff] */
    RUNNER_ROLE_FFN_UP,         /* per layer [n_embd, n_ff] */
    RUNNER_ROLE_FFN_DOWN,       /* per layer [n_ff, n_embd] */
    RUNNER_ROLE_ATTN_Q_BIAS,    /* per layer [n_head * head_dim], optional (qwen2) */
    RUNNER_ROLE_ATTN_K_BIAS,    /* per layer [n_head_kv * head_dim], optional */
    RUNNER_ROLE_ATTN_V_BIAS,    /* per layer [n_head_kv * head_dim], optional */
    RUNNER_ROLE_ATTN_Q_NORM,    /* per layer [head_dim], optional: RMS norm of each query head before rope (qwen3) */
    RUNNER_ROLE_ATTN_K_NORM,    /* per layer [head_dim], optional: the same for each key head */
    RUNNER_ROLE_ATTN_QKV,       /* per layer [n_embd, n_q + 2 n_kv]: Q, K and V rows fused (phi3), instead of attn_q/k/v */
    RUNNER_ROLE_FFN_GATE_UP,    /* per layer [n_embd, 2 n_ff]: gate rows then up rows fused (phi3), instead of ffn_gate/up */
    RUNNER_ROLE_ATTN_POST_NORM, /* per layer [n_embd], optional: RMS norm of the attention output before the residual add (gemma2/3) */
    RUNNER_ROLE_FFN_POST_NORM,  /* per layer [n_embd], optional: the same for the FFN output; comes with attn_post_norm */
    RUNNER_ROLE_FFN_GATE_INP,   /* per layer [n_embd, n_expert]: the router of a mixture of experts */
    /* Expert weights, instead of ffn_gate/up/down when n_expert > 0. Either fused 3-D (expert = -1:
     * [n_embd, n_ff_exp, n_expert], ne[2] the expert) or one 2-D tensor per expert (expert = e). */
    RUNNER_ROLE_FFN_GATE_EXPS,  /* [n_embd, n_ff_exp(, n_expert)] */
    RUNNER_ROLE_FFN_UP_EXPS,    /* [n_embd, n_ff_exp(, n_expert)] */
    RUNNER_ROLE_FFN_DOWN_EXPS,  /* [n_ff_exp, n_embd(, n_expert)] */
    RUNNER_ROLE_ROPE_FACTORS_LONG,  /* model-wide [n_rot / 2], optional (phi3 longrope): rope frequencies divided by these */
    RUNNER_ROLE_ROPE_FACTORS_SHORT, /* model-wide [n_rot / 2]: the same for contexts up to n_ctx_orig */
    /* The multi-token-prediction (NextN) head, on block n_layer - n_nextn only (llama.cpp's blk.N.nextn.*):
     * x = eh_proj (enorm(embed(t)) ++ hnorm(h)), then that block, then the head. */
    RUNNER_ROLE_NEXTN_EH_PROJ,          /* [2 n_embd, n_embd] */
    RUNNER_ROLE_NEXTN_EMBED_TOKENS,     /* [n_embd, n_vocab], optional: else token_embd */
    RUNNER_ROLE_NEXTN_ENORM,            /* [n_embd]: RMS norm of the token's embedding */
    RUNNER_ROLE_NEXTN_HNORM,            /* [n_embd]: RMS norm of the target's hidden state */
    RUNNER_ROLE_NEXTN_SHARED_HEAD_NORM, /* [n_embd], optional: else output_norm */
    RUNNER_ROLE_NEXTN_SHARED_HEAD_HEAD, /* [n_embd, n_vocab], optional: else output */
    RUNNER_ROLE_COUNT
} runner_tensor_role;

#define RUNNER_MAX_LAYERS 1024

/* Stable name of a role ("attn_q"), or NULL when out of range; TypeScript checks its table against these. */
const char *runner_tensor_role_name(int32_t role);

/* One weight: where its bytes are (file index into the paths given to runner_model_load). */
typedef struct runner_tensor_desc {
    int32_t role;     /* runner_tensor_role */
    int32_t layer;    /* block index, or -1 for model-wide tensors */
    int32_t type;     /* ggml type id */
    int32_t n_dims;
    int64_t ne[4];    /* ggml order: ne[0] is the contiguous dimension */
    int32_t file;
    uint64_t offset;  /* absolute byte offset in that file */
    uint64_t size;    /* bytes */
    int32_t expert;   /* expert index of a split expert tensor (ffn_*_exps roles), else -1 */
} runner_tensor_desc;

#define RUNNER_MAX_EXPERTS 1024

/*
 * The model config: the transformer's shape and numerics, built by src/lib/arch from metadata. Each
 * field is declared once, here: X(kind, name, presence, doc). This list generates the struct, the
 * engine's field table (runner_model_config_fields, which the addon walks to read a config from
 * JavaScript under these names), and the TypeScript description (scripts/gen-native-tables.mjs
 * parses these lines). Kinds: I32 (int32_t), F32 (float), LAYER_FLAGS (const uint8_t *: n_layer
 * flags, NULL = all 0). REQUIRED fields must be given; an OPTIONAL one absent is 0 (or NULL), which
 * means "not set". One field per line; the doc is one string literal without quotes inside.
 */
#define RUNNER_MODEL_CONFIG_FIELDS(X) \
    X(I32, n_vocab, REQUIRED, "tokens in the vocabulary") \
    X(I32, n_embd, REQUIRED, "width of the residual stream") \
    X(I32, n_layer, REQUIRED, "blocks") \
    X(I32, n_head, REQUIRED, "query heads") \
    X(I32, n_head_kv, REQUIRED, "key and value heads; n_head is a multiple of it") \
    X(I32, head_dim, REQUIRED, "values per head") \
    X(I32, n_ff, REQUIRED, "width of the dense FFN") \
    X(I32, n_ctx_train, REQUIRED, "context length the model was trained for") \
    X(I32, n_rot, REQUIRED, "rope dimensions, even and at most head_dim") \
    X(I32, rope_type, REQUIRED, "rope pairing (RUNNER_MODEL_CONFIG_ENUMS)") \
    X(F32, rope_freq_base, REQUIRED, "rope base frequency") \
    X(F32, rope_freq_scale, REQUIRED, "1 / linear rope scaling factor") \
    X(F32, norm_eps, REQUIRED, "epsilon of the RMS norms") \
    X(LAYER_FLAGS, attn_removed, REQUIRED, "blocks whose attention is removed: no weights but the pre-norm, no KV cache, adds nothing") \
    X(LAYER_FLAGS, ffn_removed, REQUIRED, "blocks whose FFN is removed (as attn_removed)") \
    X(F32, embedding_scale, OPTIONAL, "the token embedding is multiplied by it (granite, gemma)") \
    X(F32, residual_scale, OPTIONAL, "each sublayer output is multiplied by it before the residual add (granite)") \
    X(F32, attention_scale, OPTIONAL, "replaces 1/sqrt(head_dim) on the attention scores (granite)") \
    X(F32, logit_scale, OPTIONAL, "logits are divided by it (granite)") \
    X(I32, ffn_act, OPTIONAL, "the gated FFN activation (RUNNER_MODEL_CONFIG_ENUMS)") \
    X(F32, query_scale, OPTIONAL, "the query is multiplied by it after rope; the scores are then not scaled again (gemma, phi3)") \
    X(F32, attn_softcap, OPTIONAL, "scores = cap * tanh(scores / cap) before the softmax (gemma2)") \
    X(F32, final_softcap, OPTIONAL, "logits = cap * tanh(logits / cap) (gemma2, gemma3)") \
    X(I32, n_swa, OPTIONAL, "sliding window: on a flagged layer query p sees key k only if p - k < n_swa") \
    X(LAYER_FLAGS, swa_layers, OPTIONAL, "sliding-window layers; needs n_swa > 0") \
    X(F32, rope_freq_base_swa, OPTIONAL, "rope base on sliding-window layers (0: as the others)") \
    X(F32, rope_freq_scale_swa, OPTIONAL, "rope scale on sliding-window layers (0: as the others)") \
    X(I32, n_expert, OPTIONAL, "experts per MoE layer (0: dense FFN)") \
    X(I32, n_expert_used, OPTIONAL, "experts chosen per token: softmax over the router, top k, renormalised") \
    X(I32, n_ff_exp, OPTIONAL, "width of one expert FFN") \
    X(F32, rope_attn_factor, OPTIONAL, "cos and sin are multiplied by it (0: 1): llama.cpp's resolved yarn_attn_factor (phi3's longrope, rope.scaling.attn_factor)") \
    X(I32, n_ctx_orig, OPTIONAL, "the original context (0: n_ctx_train): longrope's long factors apply when the context padded to 256 exceeds it; YaRN's ramp is placed by it") \
    X(F32, rope_ext_factor, OPTIONAL, "YaRN (0: none): dimensions below the ramp mix back toward their unscaled angle by it, and cos and sin gain 1 + 0.1 ln(1 / freq_scale)") \
    X(F32, rope_beta_fast, OPTIONAL, "YaRN: the ramp's low end is the pair turning beta_fast times in n_ctx_orig; > 0 when rope_ext_factor is set") \
    X(F32, rope_beta_slow, OPTIONAL, "YaRN: the ramp's high end is the pair turning beta_slow times in n_ctx_orig; > 0 when rope_ext_factor is set") \
    X(LAYER_FLAGS, nope_layers, OPTIONAL, "blocks without rope (NoPE): their queries and keys are not rotated (smollm3)") \
    X(I32, n_nextn, OPTIONAL, "trailing blocks that form a multi-token-prediction head (0 or 1): the main pass runs n_layer - n_nextn blocks")

/* The values of the config's enumerated int fields: X(field, constant, name, value, doc). */
#define RUNNER_MODEL_CONFIG_ENUMS(X) \
    X(rope_type, RUNNER_ROPE_NORM, norm, 0, "rotate adjacent pairs (2i, 2i + 1)") \
    X(rope_type, RUNNER_ROPE_NEOX, neox, 2, "rotate i with i + n_rot / 2") \
    X(ffn_act, RUNNER_FFN_SILU, silu, 0, "silu(gate) * up") \
    X(ffn_act, RUNNER_FFN_GELU, gelu, 1, "gelu(gate) * up: ggml's tanh form through its F16 table (x <= -10 gives 0, x >= 10 gives x)")

enum {
#define RUNNER_CFG_ENUM_(field, constant, name, value, doc) constant = value,
    RUNNER_MODEL_CONFIG_ENUMS(RUNNER_CFG_ENUM_)
#undef RUNNER_CFG_ENUM_
};

#define RUNNER_CFG_CTYPE_I32 int32_t
#define RUNNER_CFG_CTYPE_F32 float
#define RUNNER_CFG_CTYPE_LAYER_FLAGS const uint8_t *

typedef struct runner_model_config {
#define RUNNER_CFG_MEMBER_(kind, name, presence, doc) RUNNER_CFG_CTYPE_##kind name;
    RUNNER_MODEL_CONFIG_FIELDS(RUNNER_CFG_MEMBER_)
#undef RUNNER_CFG_MEMBER_
} runner_model_config;

typedef enum runner_config_kind { RUNNER_CFG_I32 = 0, RUNNER_CFG_F32 = 1, RUNNER_CFG_LAYER_FLAGS = 2 } runner_config_kind;

/* One config field as data. */
typedef struct runner_config_field {
    const char *name;     /* the C member name, which is also the JavaScript key ("n_ctx_train") */
    int32_t kind;         /* runner_config_kind */
    const char *kind_name; /* as written in the list: "I32", "F32", "LAYER_FLAGS" */
    int32_t required;     /* 1: REQUIRED, 0: OPTIONAL */
    uint32_t offset;      /* offsetof(runner_model_config, name) */
    const char *doc;
} runner_config_field;

/* One value of an enumerated field. */
typedef struct runner_config_enum_value {
    const char *field; /* "rope_type" */
    const char *name;  /* "neox" */
    int32_t value;
    const char *doc;
} runner_config_enum_value;

/* The fields in declaration order (static storage); *count receives how many. */
const runner_config_field *runner_model_config_fields(int32_t *count);
/* The enum values in declaration order (static storage); *count receives how many. */
const runner_config_enum_value *runner_model_config_enum_values(int32_t *count);

typedef struct runner_model runner_model;

/* Progress of the load (bytes of weights made resident so far); return nonzero to cancel. */
typedef int (*runner_progress_fn)(void *user, uint64_t done, uint64_t total);

/*
 * Map the files read-only and bind every tensor in place (no copy). Checks again, before use,
 * that each tensor's extent lies inside its file and that its shape and type fit its role and the
 * config. `err` receives a message naming the tensor or field on failure.
 */
runner_status runner_model_load(const runner_model_config *config, const char *const *paths, int32_t n_paths,
                                const runner_tensor_desc *tensors, int32_t n_tensors, runner_progress_fn progress,
                                void *progress_user, runner_model **out, char *err, int32_t err_len);
void runner_model_free(runner_model *model);

/*
 * LoRA adapters (llama.cpp's GGUF LoRA format, docs/lora.md): one pair per adapted weight, a = lora_a
 * [n_in, rank] and b = lora_b [rank, n_out] in ggml order, both in the adapter's own file. The
 * adapted weight's projection becomes W x + s * (b (a x)) in that order of operations (llama.cpp's
 * build_lora_mm), with s = scale * alpha / rank, or scale where alpha is 0. Roles that can carry a
 * pair: attn_q/k/v/output, ffn_gate/up/down, output, and the fused attn_qkv / ffn_gate_up (b's rows
 * split as the weight's are).
 */
typedef struct runner_lora_pair_desc {
    int32_t role;  /* runner_tensor_role of the adapted weight */
    int32_t layer; /* its block, or -1 for output */
    int32_t a_type, b_type;   /* ggml type ids */
    int64_t a_ne[2], b_ne[2]; /* ggml order */
    uint64_t a_offset, a_size, b_offset, b_size; /* absolute byte extents in the adapter's file */
} runner_lora_pair_desc;

/*
 * Map an adapter file read-only and attach its pairs to the model, after any added before (their
 * deltas are added in that order). Only before the model's first context exists (contexts size
 * their scratch for the adapters): RUNNER_ERR_BUSY after. Every pair is checked against the weight
 * it adapts (present, n_in, n_out, the rank agreeing, extents inside the file, byte sizes), naming
 * the tensor; nothing is attached when one fails. The model owns the mapping from then on.
 */
runner_status runner_model_add_lora(runner_model *model, const char *path, const runner_lora_pair_desc *pairs, int32_t n_pairs,
                                    float alpha, float scale, char *err, int32_t err_len);

/*
 * Merge a pair into rows of its weight, dequantized to F32 (`runner quantize --merge-lora`): w is
 * rows x n_in (row o is output o), b the same rows of lora_b (rows x rank), a all of lora_a
 * (rank x n_in), all F32. w[o] += s * sum_r b[o][r] a[r] with s as runner_model_add_lora computes it;
 * the sum over r in double, ascending, added in double and rounded to float once, row by row (the
 * bytes do not depend on how rows are chunked).
 */
runner_status runner_lora_merge_rows(float *w, int64_t rows, int64_t n_in, const float *a, const float *b, int64_t rank, float alpha,
                                     float scale, char *err, int32_t err_len);

/* ---- LoRA training (runner train-lora; docs/lora.md) ------------------------------------------- */

/*
 * A trainer holds one LoRA pair per target weight (rank x n_in a, n_out x rank b: PEFT's lora_A and
 * lora_B weights, row-major), their gradients and the optimizer's moments, all in double, over a
 * frozen base model read in place (any weight type: gradients flow through the dequantized rows).
 * The loss and every gradient are computed in double by one fixed order of operations, so they are
 * the same bits for any n_threads. Refused by name: a model with adapters attached, experts,
 * longrope factors, targets other than attn_q/k/v/output, ffn_gate/up/down and output.
 */
typedef struct runner_trainer runner_trainer;

typedef struct runner_trainer_params {
    int32_t n_ctx;     /* most tokens of one sample */
    int32_t rank;      /* 1 .. 512 */
    float alpha;       /* the pairs' scale is alpha / rank (alpha 0: 1), as runner_model_add_lora applies it at scale 1 */
    float dropout;     /* PEFT's lora_dropout on each pair's input, in [0, 1) */
    int32_t n_threads;
    const int32_t *roles;  /* n_targets runner_tensor_role values */
    const int32_t *layers; /* their blocks (ignored for output) */
    int32_t n_targets;
} runner_trainer_params;

runner_status runner_trainer_create(runner_model *model, const runner_trainer_params *params, runner_trainer **out, char *err,
                                    int32_t err_len);
void runner_trainer_free(runner_trainer *trainer);
/* Parameters of all pairs: for each target in order, a then b. */
int64_t runner_trainer_n_params(const runner_trainer *trainer);

typedef enum runner_train_vector {
    RUNNER_TRAIN_PARAMS = 0,
    RUNNER_TRAIN_GRADS = 1,   /* accumulated since the last optimizer step */
    RUNNER_TRAIN_MOMENT1 = 2, /* AdamW's first moment */
    RUNNER_TRAIN_MOMENT2 = 3  /* and second */
} runner_train_vector;

/* Copy a vector out or in (n = runner_trainer_n_params); set refuses non-finite values. */
runner_status runner_trainer_get(runner_trainer *trainer, int32_t what, double *out, int64_t n, char *err, int32_t err_len);
runner_status runner_trainer_set(runner_trainer *trainer, int32_t what, const double *in, int64_t n, char *err, int32_t err_len);
/* Optimizer steps taken (AdamW's bias correction counts them); set when resuming. */
int64_t runner_trainer_steps(const runner_trainer *trainer);
void runner_trainer_set_steps(runner_trainer *trainer, int64_t steps);

/*
 * One sample from position 0: *loss_sum = the summed cross-entropy (nats) of tokens[i + 1] after
 * tokens[0..i] over every i with scored[i + 1] != 0, *n_scored how many. With grad, the gradient of
 * loss_sum is added to the accumulated gradients, with dropout masks drawn from dropout_seed (without
 * grad there is no dropout: evaluation). 2 <= n <= n_ctx.
 */
runner_status runner_trainer_sample(runner_trainer *trainer, const int32_t *tokens, const uint8_t *scored, int32_t n, int32_t grad,
                                    uint64_t dropout_seed, double *loss_sum, int32_t *n_scored, const volatile int32_t *abort_flag,
                                    char *err, int32_t err_len);

typedef enum runner_optimizer_kind { RUNNER_OPTIMIZER_ADAMW = 0, RUNNER_OPTIMIZER_SGD = 1 } runner_optimizer_kind;

typedef struct runner_optimizer_params {
    int32_t kind;
    double lr, beta1, beta2, eps, weight_decay;
    double grad_scale;    /* the accumulated gradients are multiplied by it first (1 / tokens scored) */
    double max_grad_norm; /* clip the global norm to it as torch's clip_grad_norm_ does (0: no clipping) */
} runner_optimizer_params;

/* One step on the accumulated gradients (torch.optim.AdamW's or plain SGD's update), then they are
 * zeroed. *grad_norm: their global norm after grad_scale, before clipping. */
runner_status runner_trainer_optimize(runner_trainer *trainer, const runner_optimizer_params *params, double *grad_norm, char *err,
                                      int32_t err_len);

/* ---- contexts ------------------------------------------------------------------ */

typedef enum runner_kv_type { RUNNER_KV_F16 = 1, RUNNER_KV_F32 = 0 } runner_kv_type;

/* Which blocks a context runs, and so holds a KV cache for. */
typedef enum runner_context_blocks {
    RUNNER_CONTEXT_MODEL = 0, /* the model's own pass (every block but a NextN one): decode, generate */
    RUNNER_CONTEXT_MTP = 1    /* only the NextN block: an MTP draft's context (RUNNER_DRAFT_MTP); decode refuses it */
} runner_context_blocks;

typedef struct runner_context_params {
    int32_t n_ctx;     /* KV cache positions */
    int32_t n_batch;   /* most tokens one forward step processes (scratch is sized for it) */
    int32_t n_threads; /* workers, including the calling thread */
    int32_t kv_type;   /* runner_kv_type */
    int32_t blocks;    /* runner_context_blocks (0: the model's) */
    /* Nonzero: sliding-window layers keep every position (llama.cpp's --swa-full). Zero: each keeps a
     * ring of the positions its window can still reach (n_swa - 1 + n_batch, in whole 32-position
     * blocks), with bitwise the same results; truncating below what the ring holds is refused
     * (RUNNER_ERR_KV_EVICTED; runner_kv_min_keep). */
    int32_t swa_full;
} runner_context_params;

typedef struct runner_context runner_context;

runner_status runner_context_create(runner_model *model, const runner_context_params *params, runner_context **out,
                                    char *err, int32_t err_len);
void runner_context_free(runner_context *ctx);

/*
 * A decode group: generations on several contexts of one model that step their next tokens together,
 * one forward pass (one read of the weights) for all of them. A generation joins by naming the group
 * in runner_generate_params after its prompt is evaluated; each step waits (at most wait_us) for the
 * other members to reach theirs, then one of them runs the step for all. Each sequence's logits are
 * bitwise those of decoding it alone: the group changes speed, never results. The group's own pool
 * (n_threads) and scratch (max_members tokens) compute the steps; a generation past max_members
 * members decodes alone.
 */
typedef struct runner_group runner_group;

runner_status runner_group_create(runner_model *model, int32_t n_threads, int32_t max_members, int32_t wait_us, runner_group **out,
                                  char *err, int32_t err_len);
/* Only once no generation uses the group. */
void runner_group_free(runner_group *group);

typedef struct runner_group_stats {
    uint64_t steps;  /* forward steps the group ran */
    uint64_t tokens; /* tokens in them (tokens / steps: the mean batch) */
} runner_group_stats;
void runner_group_stats_get(runner_group *group, runner_group_stats *out);

/* Bytes of the KV cache (K and V, every layer that has attention). */
uint64_t runner_context_kv_bytes(const runner_context *ctx);

/* The KV cache's layout and what the sliding-window rings save. */
typedef struct runner_kv_info {
    uint64_t bytes;         /* as allocated (runner_context_kv_bytes) */
    uint64_t flat_bytes;    /* the same layers with every position (swa_full) */
    int32_t ring_layers;    /* layers holding a ring */
    int32_t ring_positions; /* positions each ring holds (0: none) */
} runner_kv_info;
void runner_context_kv_info(const runner_context *ctx, runner_kv_info *out);

/* The smallest n_keep > 0 runner_kv_truncate accepts now (0: any): below it the next token's window
 * would reach positions a ring has overwritten. */
int32_t runner_kv_min_keep(const runner_context *ctx);

/* Positions [0, n) of the KV cache hold valid entries. */
int32_t runner_context_n_past(const runner_context *ctx);

/* Forget every position >= n_keep; n_keep outside [0, n_past] is refused, the message naming both;
 * 0 < n_keep < runner_kv_min_keep is refused with RUNNER_ERR_KV_EVICTED. */
runner_status runner_kv_truncate(runner_context *ctx, int32_t n_keep, char *err, int32_t err_len);

/*
 * Context shift (llama.cpp's --context-shift): forget positions [n_keep, n_keep + n_discard) and move
 * the later ones down by n_discard, each cached key rotated by -n_discard as llama.cpp's K-shift does
 * (in the cache's precision); n_past drops by n_discard and the last logits stay. Refused with
 * RUNNER_ERR_UNSUPPORTED, naming why, where the result would not be what evaluating at the new
 * positions means: sliding-window rings (swa_full keeps them flat), a rope attention factor (a second
 * rotation scales twice), longrope factors (not built). runner_kv_can_shift answers without shifting.
 */
runner_status runner_kv_can_shift(const runner_context *ctx, char *err, int32_t err_len);
runner_status runner_kv_shift(runner_context *ctx, int32_t n_keep, int32_t n_discard, char *err, int32_t err_len);

/* What a decode writes out. EMBD is llama.cpp's "embeddings" (no pooling): the hidden state of
 * every token after the output norm, before the LM head, which is not run. */
typedef enum runner_logits_mode {
    RUNNER_LOGITS_NONE = 0,
    RUNNER_LOGITS_LAST = 1,
    RUNNER_LOGITS_ALL = 2,
    RUNNER_LOGITS_EMBD = 3
} runner_logits_mode;

/*
 * Evaluate tokens[0..n) at positions [pos, pos + n), pos <= n_past (positions >= pos are
 * overwritten; a pos < n_past is a truncate to pos first, refused as runner_kv_truncate refuses it). logits receives n_vocab floats (LAST), n * n_vocab (ALL) or n * n_embd (EMBD: row i
 * is token i's output-normed hidden state; the KV cache is written as by any other mode). The result
 * for a position does not depend on n, on n_batch, on the thread count or on how a prompt was split
 * over calls: the determinism contract. `abort_flag` (may be NULL) is checked between layers.
 */
runner_status runner_decode(runner_context *ctx, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                            float *logits, const volatile int32_t *abort_flag, char *err, int32_t err_len);

/* The logits row of the last token the last decode evaluated with logits (n_vocab floats; after an
 * ALL decode, the row of its last token), or NULL (none yet, after a truncate or an EMBD decode). Valid until the
 * next decode or generate on the context. */
const float *runner_context_logits(const runner_context *ctx);
int32_t runner_model_n_vocab(const runner_model *model);
/* Width of an EMBD row (the residual stream). */
int32_t runner_model_n_embd(const runner_model *model);

/* ---- sampling --------------------------------------------------------------------- */

/*
 * Choosing the next token from a row of logits, in native code (it touches every vocabulary entry on
 * every token). One sampler per generation; not thread-safe. Every buffer is allocated at create
 * (sized by n_vocab, overflow-checked): accept and sample never allocate.
 *
 * Order of the chain (docs/sampling.md has the formulas; the order is fixed, so the same seed and
 * inputs give the same tokens on every machine):
 *   1. logit bias (added), 2. repeat / presence / frequency penalties over the last
 *   `penalty_last_n` accepted tokens (exempt tokens untouched), then every logit that is not finite
 *   (NaN, +inf, -inf) is excluded: it is never chosen and has probability 0.
 *   3. if temperature == 0: greedy argmax (ties: lowest id), else 4. top-k, 5. top-p, 6. min-p,
 *   7. temperature, 8. softmax over the survivors in double and one draw from the generator
 *   (src/sample/rng.h, SplitMix64-seeded xoshiro256**): the first survivor, in ascending id order,
 *   where the running sum of weights exceeds u * (sum of all survivor weights).
 * Steps 4-6 each keep a prefix of the survivors ranked by (logit desc, id asc), so ties at a cut
 * keep the lower ids. top-p and min-p use probabilities before temperature, as llama.cpp's default
 * chain (top-k, top-p, min-p, then temperature) does.
 * Reported log-probabilities (on request) are log-softmax over the whole vocabulary of the logits
 * after steps 1-2 (before truncation and temperature): what the model assigned, as OpenAI's
 * `logprobs` means. Excluded tokens have logprob -inf and never appear in the top list.
 */

#define RUNNER_MAX_TOP_LOGPROBS 20
/* Upper bound of penalty_last_n: the window is a ring of int32 allocated at create. */
#define RUNNER_MAX_PENALTY_LAST_N (1 << 24)

/* Return values of runner_sampler_sample besides a token id. */
#define RUNNER_SAMPLE_NONE (-1)    /* every logit excluded (banned or not finite) */
#define RUNNER_SAMPLE_INVALID (-2) /* s or logits is NULL */

typedef struct runner_sampler_params {
    float temperature;        /* finite, >= 0; 0: greedy */
    int32_t top_k;            /* >= 0; 0: off */
    float top_p;              /* (0, 1]; 1: off */
    float min_p;              /* [0, 1]; 0: off */
    float repeat_penalty;     /* finite, > 0; 1: off (llama.cpp's rule: positive logits divided, others multiplied) */
    float presence_penalty;   /* finite; 0: off */
    float frequency_penalty;  /* finite; 0: off */
    int32_t penalty_last_n;   /* 0..RUNNER_MAX_PENALTY_LAST_N accepted tokens the penalties look at; 0: off */
    uint64_t seed;            /* every value is valid, 0 included */
    int32_t logprobs;         /* nonzero: fill out->logprob and the top list (costs one exp per vocab entry) */
    int32_t n_top_logprobs;   /* 0..RUNNER_MAX_TOP_LOGPROBS; > 0 needs logprobs */
    const int32_t *bias_tokens; /* n_bias distinct token ids in [0, n_vocab) ... */
    const float *bias_values;   /* ... and what to add to their logits: finite, or -INFINITY (bans) */
    int32_t n_bias;
    const int32_t *exempt_tokens; /* tokens penalties never touch (end-of-generation), in [0, n_vocab) */
    int32_t n_exempt;
} runner_sampler_params;

typedef struct runner_sample_result {
    int32_t token;                                   /* as returned */
    float logprob;                                   /* of `token` (see above); NaN unless params.logprobs */
    int32_t n_top;                                   /* entries filled below, sorted by logprob desc, ties by id */
    int32_t forced;                                  /* 1: the grammar allowed only this token; no draw was made */
    int32_t top_tokens[RUNNER_MAX_TOP_LOGPROBS];
    float top_logprobs[RUNNER_MAX_TOP_LOGPROBS];
} runner_sample_result;

typedef struct runner_sampler runner_sampler;

/* Copies what it needs from params (arrays included) into *out. RUNNER_ERR_INVALID_ARGUMENT on bad
 * params, RUNNER_ERR_NO_MEMORY when its scratch cannot be allocated; `err` (if not NULL and err_len > 0)
 * then holds a NUL-terminated message naming the parameter and its value. */
runner_status runner_sampler_create(const runner_sampler_params *params, int32_t n_vocab, runner_sampler **out, char *err,
                                    int32_t err_len);
void runner_sampler_free(runner_sampler *s);

int32_t runner_sampler_n_vocab(const runner_sampler *s);

/* Record a token in the penalty history (prompt tokens and generated ones). Returns 0, or -1 when
 * s is NULL or token is outside [0, n_vocab) (the history is then unchanged). */
int runner_sampler_accept(runner_sampler *s, int32_t token);

/* Pick a token from logits[0..n_vocab) (not modified). Returns the token, RUNNER_SAMPLE_NONE if
 * every logit is excluded, RUNNER_SAMPLE_INVALID if s or logits is NULL; out (may be NULL) gets
 * the same token. Does not record the token: call runner_sampler_accept with it. With
 * temperature > 0 every call that returns a token consumes exactly one draw of the generator;
 * greedy consumes none. */
int32_t runner_sampler_sample(runner_sampler *s, const float *logits, runner_sample_result *out);

/* As runner_sampler_sample, with only the tokens whose bit is set in allowed[(n_vocab + 31) / 32]
 * eligible: the others are excluded before step 1 (bias, penalties and the cuts never see them).
 * allowed == NULL: no mask. Returns RUNNER_SAMPLE_NONE when the mask leaves no finite logit. */
int32_t runner_sampler_sample_masked(runner_sampler *s, const float *logits, const uint32_t *allowed, runner_sample_result *out);

/* ---- constrained decoding --------------------------------------------------------- */

/*
 * A grammar program (written by src/lib/grammar/lower.ts; src/lib/grammar/program.ts has the layout)
 * runs as a pushdown automaton over UTF-8 bytes. Masks are exact: a token is allowed iff its bytes
 * extend the text so far to a prefix of some document of the grammar; tokens without bytes (control
 * tokens) are never allowed; end of text is allowed iff runner_matcher_is_complete. Grammars and
 * tries are immutable once created (shareable across threads); a matcher is one document's state
 * and is not thread-safe. A matcher keeps pointers to its grammar and trie: free it first.
 */
typedef struct runner_grammar runner_grammar;
typedef struct runner_token_trie runner_token_trie;
typedef struct runner_matcher runner_matcher;

/* Validates the program (every index, every bound) and copies it. */
runner_status runner_grammar_create(const int32_t *program, int64_t n_words, runner_grammar **out, char *err, int32_t err_len);
void runner_grammar_free(runner_grammar *g);
/* Token i's bytes are bytes[offsets[i] .. offsets[i + 1]) (offsets has n_vocab + 1 entries from 0). */
runner_status runner_token_trie_create(const uint8_t *bytes, const int64_t *offsets, int32_t n_vocab, runner_token_trie **out, char *err,
                                       int32_t err_len);
void runner_token_trie_free(runner_token_trie *t);
/* trie may be NULL for a matcher fed only bytes (accept_bytes). */
runner_status runner_matcher_create(const runner_grammar *g, const runner_token_trie *t, runner_matcher **out, char *err, int32_t err_len);
void runner_matcher_free(runner_matcher *m);
/* Back to the start of a document. */
runner_status runner_matcher_reset(runner_matcher *m, char *err, int32_t err_len);
int32_t runner_matcher_n_vocab(const runner_matcher *m);
/* The bytes so far are a whole document (end of text allowed). */
int runner_matcher_is_complete(const runner_matcher *m);
/* allowed[(n_vocab + 31) / 32] gets bit i set iff token i is allowed; *n_allowed the count and *only
 * the token when exactly one is allowed, else -1 (each may be NULL). */
runner_status runner_matcher_fill_mask(runner_matcher *m, uint32_t *allowed, int32_t *n_allowed, int32_t *only, char *err, int32_t err_len);
/* Advance by a token: RUNNER_ERR_INVALID_ARGUMENT (state unchanged) if it is not allowed. */
runner_status runner_matcher_accept_token(runner_matcher *m, int32_t token, char *err, int32_t err_len);
/* Advance by bytes: *dead_at = the index of the first byte no document allows (state unchanged), or -1. */
runner_status runner_matcher_accept_bytes(runner_matcher *m, const uint8_t *bytes, int64_t n, int64_t *dead_at, char *err, int32_t err_len);

/* ---- speculative decoding ------------------------------------------------------- */

/*
 * A draft source proposes tokens that may follow a sequence; the generation evaluates them with its
 * last token in one forward step and walks the rows: each position is sampled by the target's own
 * sampler (the same draws, mask and penalties as without drafts), and the walk continues only while
 * the sampled token is the drafted one. So the tokens, log-probabilities and finish are exactly
 * those of plain decoding (the determinism contract makes every row bitwise the row a one-token
 * step gives); drafts change speed only.
 */
typedef enum runner_draft_kind {
    RUNNER_DRAFT_LOOKUP = 1, /* n-gram match in the sequence so far (prompt lookup): no weights */
    RUNNER_DRAFT_MODEL = 2,  /* a smaller model's greedy continuation, in its own context */
    /* The target's own multi-token-prediction (NextN) head (model config n_nextn > 0), greedy: for a
     * position p whose hidden state h_p (after the output norm, as llama.cpp's h_nextn) the target
     * computed, and the token t at p + 1, the head's block runs on
     * eh_proj (enorm(embed(t)) ++ hnorm(h_p)) at KV slot p, rope at p + 1, and its head gives the
     * draft for p + 2; further drafts feed the block's own output (after the head's norm) back as h. draft_ctx is a context
     * of the target's model (blocks RUNNER_CONTEXT_MTP) with n_ctx at least the target's + 1, whose
     * KV cache holds the block's keys for every position the target evaluated while generating with this draft. */
    RUNNER_DRAFT_MTP = 3
} runner_draft_kind;

typedef struct runner_draft_params {
    int32_t kind;      /* runner_draft_kind */
    int32_t n_max;     /* most tokens drafted per step, 1..RUNNER_DRAFT_MAX */
    int32_t ngram_min; /* LOOKUP: the shortest suffix matched, 1..ngram_max */
    int32_t ngram_max; /* LOOKUP: the longest suffix matched (tried first), ..RUNNER_DRAFT_NGRAM_MAX */
    float p_min;       /* MODEL, MTP: drafting stops at a token the draft gives less probability, [0, 1] */
} runner_draft_params;

#define RUNNER_DRAFT_MAX 64
#define RUNNER_DRAFT_NGRAM_MAX 16

typedef struct runner_draft runner_draft;

/* draft_ctx: the draft model's context (MODEL; for MTP a context of the target's model; NULL for LOOKUP), used by the draft alone
 * until runner_draft_free (it is not freed by it); its model must have a vocabulary the target
 * accepts: ids it proposes at or beyond the target's n_vocab end a draft. */
runner_status runner_draft_create(const runner_draft_params *params, runner_context *draft_ctx, runner_draft **out, char *err,
                                  int32_t err_len);
void runner_draft_free(runner_draft *draft);

/* ---- generation ----------------------------------------------------------------- */

typedef enum runner_finish_reason {
    RUNNER_FINISH_LENGTH = 0,  /* max_tokens reached */
    RUNNER_FINISH_EOG = 1,     /* an end-of-generation token was sampled (not reported as a token) */
    RUNNER_FINISH_ABORTED = 2, /* the abort flag was raised */
    RUNNER_FINISH_STOPPED = 3, /* the token callback asked to stop */
    RUNNER_FINISH_CONTEXT = 4  /* the context is full */
} runner_finish_reason;

typedef struct runner_generate_params {
    const int32_t *prompt; /* evaluated at positions [pos, pos + n_prompt) before the first draw */
    int32_t n_prompt;      /* >= 1 */
    int32_t pos;           /* <= n_past */
    const int32_t *history; /* tokens before pos that the penalties should see (may be NULL) */
    int32_t n_history;
    int32_t max_tokens;    /* >= 0 */
    const int32_t *eog_tokens;
    int32_t n_eog;
    const runner_sampler_params *sampling;
    /* Constrained decoding (may be NULL): each draw is masked by it and each token advances it;
     * end-of-generation tokens are allowed exactly when it is complete, and a complete document
     * with no other continuation ends the generation (finish EOG, eog_token -1 if none was drawn).
     * A step with exactly one allowed token takes it without a draw (sample result `forced`). */
    runner_matcher *matcher;
    /* Decode group (may be NULL): the generated tokens are evaluated in its steps, beside the other
     * members'; a context of another model is refused. */
    runner_group *group;
    /* Speculative decoding (may be NULL): drafts verified as above. A draft needs the whole
     * sequence: `prefix` holds the tokens at positions [0, pos) (n_prefix == pos). Generations with
     * a draft do not join a decode group (their verify step is their batch). */
    runner_draft *draft;
    const int32_t *prefix;
    int32_t n_prefix;
    /* Context shift (0: off): when a generated token finds the context full, the first shift_keep
     * positions stay (at most n_ctx - 4, as llama.cpp's server caps n_keep), half of the rest after
     * them is discarded (llama.cpp's n_discard = (n_past - n_keep) / 2) by runner_kv_shift, and the
     * generation goes on; finish CONTEXT only where nothing can go. A context runner_kv_can_shift
     * refuses is refused at the start. */
    int32_t context_shift;
    int32_t shift_keep;
} runner_generate_params;

typedef struct runner_generate_stats {
    int32_t n_prompt;
    int32_t n_generated; /* tokens reported through the callback */
    int32_t finish;      /* runner_finish_reason */
    int32_t eog_token;   /* the end-of-generation token sampled, or -1 */
    double prompt_ms;
    double decode_ms;    /* sampling + evaluating generated tokens */
    int32_t n_forced;    /* generated tokens the grammar forced (no draw) */
    double mask_ms;      /* computing grammar masks */
    int32_t n_draft_steps;  /* verify steps that carried at least one drafted token */
    int32_t n_drafted;      /* drafted tokens evaluated */
    int32_t n_accepted;     /* drafted tokens the target sampled (acceptance: n_accepted / n_drafted) */
    double draft_ms;        /* proposing drafts (part of decode_ms) */
    int32_t n_shifts;    /* context shifts made */
    int32_t n_discarded; /* positions they discarded: [shift_keep, shift_keep + n_discarded) of the sequence */
} runner_generate_stats;

/* Called once per generated token, on the generating thread; return nonzero to stop. */
typedef int (*runner_token_fn)(void *user, const runner_sample_result *result);

/*
 * Prompt processing, then sample / evaluate / sample ... entirely in native code: the per-token
 * path never waits on JavaScript. The abort flag is checked between tokens and between layers.
 */
runner_status runner_generate(runner_context *ctx, const runner_generate_params *params, runner_token_fn on_token,
                              void *user, const volatile int32_t *abort_flag, runner_generate_stats *stats, char *err,
                              int32_t err_len);

/* ---- weight types ----------------------------------------------------------------- */

/* Kernel variants, slowest first; each type's SIMD variants are bitwise its scalar reference, and
 * the engine picks one at run time from runner_cpu_features(). Append; never renumber. */
typedef enum runner_kernel_variant {
    RUNNER_KERNEL_SCALAR = 0,
    RUNNER_KERNEL_AVX2 = 1,   /* AVX2 + FMA + F16C */
    RUNNER_KERNEL_AVX512 = 2, /* AVX-512 F/BW/VL(/DQ), and VNNI where the kernel uses it */
    RUNNER_KERNEL_COUNT
} runner_kernel_variant;

/* Stable lower-case name of a variant ("scalar", "avx2", "avx512"), or NULL when out of range. */
const char *runner_kernel_variant_name(int variant);

/* One entry of the engine's weight-type table as data, for this CPU (runner_cpu_features(), not
 * capped by RUNNER_CPU_MAX). Variant sets are bit masks: bit v set <=> this build has variant v of
 * that kernel and this CPU can run it. */
typedef struct runner_type_info {
    int32_t type;              /* ggml type id */
    const char *name;          /* ggml's name, "Q4_0" (static storage) */
    int64_t block_size;        /* values per block */
    uint64_t type_size;        /* bytes per block */
    int32_t vec_dot_type;      /* the type activations are quantized to before a dot with this type */
    int32_t has_quantize_ref;  /* runner_quantize_row_ref can write it */
    uint32_t vec_dot_variants;      /* one weight row against one activation row */
    uint32_t vec_dot2_variants;     /* two weight rows sharing the activation's work */
    uint32_t vec_dot_tile_variants; /* register tiles of prompt matmuls, of tile_rows x tile_cols */
    uint32_t from_float_variants;   /* activation quantizers */
    uint8_t tile_rows[RUNNER_KERNEL_COUNT];
    uint8_t tile_cols[RUNNER_KERNEL_COUNT];
    int32_t picked_vec_dot;    /* the variant the engine uses on this CPU, or -1 when the type has none */
    int32_t picked_from_float; /* likewise for the activation quantizer */
} runner_type_info;

/* Entries of the table, in type-id order. */
int32_t runner_type_count(void);
/* Entry `index` (0 .. runner_type_count() - 1): RUNNER_OK, or RUNNER_ERR_INVALID_ARGUMENT. */
runner_status runner_type_info_at(int32_t index, runner_type_info *out);
/* The entry of a ggml type id: RUNNER_OK, or RUNNER_ERR_UNSUPPORTED when the engine lacks it. */
runner_status runner_type_info_of(int32_t type, runner_type_info *out);

/* Bytes n values of the type take: 0 and *bytes set; -1 when n is negative or not a multiple of
 * the block size, -2 when the size overflows, -3 when the engine does not implement the type. */
int runner_type_row_size(int32_t type, int64_t n, uint64_t *bytes);

/* Quantize n floats as WEIGHTS of the type (llama.cpp's quantize_row_*_ref bytes, F16/BF16 ggml's
 * row conversion, F32 a copy) into out (out_bytes = runner_type_row_size). */
runner_status runner_quantize_row_ref(int32_t type, const float *x, int64_t n, void *out, uint64_t out_bytes, char *err,
                                      int32_t err_len);
/* Dequantize n values of the type (x_bytes = runner_type_row_size) into out[0..n). */
runner_status runner_dequantize_row(int32_t type, const void *x, uint64_t x_bytes, int64_t n, float *out, char *err,
                                    int32_t err_len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RUNNER_H */
