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
#define RUNNER_ABI_VERSION 8

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


/* ---- status ---------------------------------------------------------------- */

typedef enum runner_status {
    RUNNER_OK = 0,
    RUNNER_ERR_INVALID_ARGUMENT = 1, /* a parameter out of range; the message names it */
    RUNNER_ERR_IO = 2,               /* a model file could not be opened or mapped */
    RUNNER_ERR_MODEL = 3,            /* the model's config or tensors are inconsistent or out of the file */
    RUNNER_ERR_NO_MEMORY = 4,        /* an allocation (sized with overflow checks) failed */
    RUNNER_ERR_UNSUPPORTED = 5,      /* a tensor type or feature this engine does not implement */
    RUNNER_ERR_CONTEXT_FULL = 6,     /* the tokens do not fit in the context */
    RUNNER_ERR_ABORTED = 7           /* the abort flag was raised */
} runner_status;

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

typedef enum runner_rope_type { RUNNER_ROPE_NORM = 0, RUNNER_ROPE_NEOX = 2 } runner_rope_type;

/* The gated FFN's activation: silu(gate) * up, or gelu(gate) * up with ggml's tanh GELU evaluated
 * through its F16 table (the input rounded to F16; x <= -10 gives 0, x >= 10 gives x). */
typedef enum runner_ffn_act { RUNNER_FFN_SILU = 0, RUNNER_FFN_GELU = 1 } runner_ffn_act;

#define RUNNER_MAX_EXPERTS 1024

/* The transformer's shape and numerics, built by src/lib/arch from metadata. */
typedef struct runner_model_config {
    int32_t n_vocab;
    int32_t n_embd;
    int32_t n_layer;
    int32_t n_head;
    int32_t n_head_kv;
    int32_t head_dim;
    int32_t n_ff;
    int32_t n_ctx_train;
    int32_t n_rot;           /* rope dimensions, <= head_dim */
    int32_t rope_type;       /* runner_rope_type */
    float rope_freq_base;
    float rope_freq_scale;   /* 1 / linear scaling factor */
    float norm_eps;
    /* Sublayers removed from blocks (llama.cpp's "deci" declaration: head_count 0 / feed_forward_length
     * 0 at that block). NULL: none; else n_layer flags. A removed sublayer's weights must be absent
     * (its pre-norm may stay), it gets no KV cache, and its branch adds nothing to the residual. */
    const uint8_t *attn_removed;
    const uint8_t *ffn_removed;
    /* Multipliers (granite); 0 means "not set": embedding 1, residual 1, attention 1/sqrt(head_dim), logits 1. */
    float embedding_scale; /* the token embedding is multiplied by it */
    float residual_scale;  /* each sublayer's output is multiplied by it before it joins the residual */
    float attention_scale; /* replaces 1/sqrt(head_dim) on the attention scores */
    float logit_scale;     /* logits are divided by it */
    /* gemma2/3 and mixtures of experts; 0 (or NULL) means "not used". */
    int32_t ffn_act;            /* runner_ffn_act */
    float query_scale;          /* the query is multiplied by it after rope (then the scores are not scaled again) */
    float attn_softcap;         /* scores = cap * tanh(scores / cap) before the softmax */
    float final_softcap;        /* logits = cap * tanh(logits / cap) */
    int32_t n_swa;              /* sliding window: on a flagged layer, query p sees key k only if p - k < n_swa */
    const uint8_t *swa_layers;  /* n_layer flags (NULL: none); needs n_swa > 0 */
    float rope_freq_base_swa;   /* rope on sliding-window layers (0: as the others) */
    float rope_freq_scale_swa;
    int32_t n_expert;           /* experts per MoE layer (0: dense FFN) */
    int32_t n_expert_used;      /* experts chosen per token: softmax over the router, top k, renormalised */
    int32_t n_ff_exp;           /* an expert's FFN width */
    /* phi3 longrope: cos and sin are multiplied by rope_attn_factor (0: 1); the long factors apply when
     * the context, padded to a multiple of 256 as llama.cpp pads it, exceeds n_ctx_orig (0: n_ctx_train). */
    float rope_attn_factor;
    int32_t n_ctx_orig;
} runner_model_config;

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

/* ---- contexts ------------------------------------------------------------------ */

typedef enum runner_kv_type { RUNNER_KV_F16 = 1, RUNNER_KV_F32 = 0 } runner_kv_type;

typedef struct runner_context_params {
    int32_t n_ctx;     /* KV cache positions */
    int32_t n_batch;   /* most tokens one forward step processes (scratch is sized for it) */
    int32_t n_threads; /* workers, including the calling thread */
    int32_t kv_type;   /* runner_kv_type */
} runner_context_params;

typedef struct runner_context runner_context;

runner_status runner_context_create(runner_model *model, const runner_context_params *params, runner_context **out,
                                    char *err, int32_t err_len);
void runner_context_free(runner_context *ctx);

/* Bytes of the KV cache (K and V, every layer that has attention). */
uint64_t runner_context_kv_bytes(const runner_context *ctx);

/* Positions [0, n) of the KV cache hold valid entries. */
int32_t runner_context_n_past(const runner_context *ctx);

/* Forget every position >= n_keep. */
runner_status runner_kv_truncate(runner_context *ctx, int32_t n_keep);

typedef enum runner_logits_mode { RUNNER_LOGITS_NONE = 0, RUNNER_LOGITS_LAST = 1, RUNNER_LOGITS_ALL = 2 } runner_logits_mode;

/*
 * Evaluate tokens[0..n) at positions [pos, pos + n), pos <= n_past (positions >= pos are
 * overwritten). logits receives n_vocab floats (LAST) or n * n_vocab (ALL). The result for a
 * position does not depend on n, on n_batch, on the thread count or on how a prompt was split over
 * calls: the determinism contract. `abort_flag` (may be NULL) is checked between layers.
 */
runner_status runner_decode(runner_context *ctx, const int32_t *tokens, int32_t n, int32_t pos, int32_t logits_mode,
                            float *logits, const volatile int32_t *abort_flag, char *err, int32_t err_len);

/* Read access to the last logits row computed (n_vocab floats), or NULL. */
const float *runner_context_logits(const runner_context *ctx);
int32_t runner_model_n_vocab(const runner_model *model);

/* ---- generation ----------------------------------------------------------------- */

struct runner_sampler_params; /* src/sample/sample.h */
struct runner_sample_result;

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
    const struct runner_sampler_params *sampling;
} runner_generate_params;

typedef struct runner_generate_stats {
    int32_t n_prompt;
    int32_t n_generated; /* tokens reported through the callback */
    int32_t finish;      /* runner_finish_reason */
    int32_t eog_token;   /* the end-of-generation token sampled, or -1 */
    double prompt_ms;
    double decode_ms;    /* sampling + evaluating generated tokens */
} runner_generate_stats;

/* Called once per generated token, on the generating thread; return nonzero to stop. */
typedef int (*runner_token_fn)(void *user, const struct runner_sample_result *result);

/*
 * Prompt processing, then sample / evaluate / sample ... entirely in native code: the per-token
 * path never waits on JavaScript. The abort flag is checked between tokens and between layers.
 */
runner_status runner_generate(runner_context *ctx, const runner_generate_params *params, runner_token_fn on_token,
                              void *user, const volatile int32_t *abort_flag, runner_generate_stats *stats, char *err,
                              int32_t err_len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RUNNER_H */
