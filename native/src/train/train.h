/* The trainer's state, shared by its passes (train.c) and its lifecycle and optimizer (trainer.c). */
#ifndef RUNNER_TRAIN_H
#define RUNNER_TRAIN_H

#include <stdint.h>

#include "core/threadpool.h"
#include "model/model.h"

/* The weights of a block a pair may adapt, in a fixed order; the head is its own slot. */
/* T_QKV and T_GATE_UP: one pair on a fused weight (phi3), b's rows split as the weight's views are. */
enum { T_Q, T_K, T_V, T_O, T_GATE, T_UP, T_DOWN, T_QKV, T_GATE_UP, T_PER_LAYER };

typedef struct train_pair {
    const runner_weight *w;
    int64_t n_in, n_out;
    int64_t off;   /* a at p[off .. off + rank * n_in), b right after (n_out x rank) */
    int32_t index; /* in the order the targets were given (dropout streams) */
    double *u;     /* a (mask o x) of the current layer's tokens [n_ctx][rank] */
} train_pair;

/* One block's activations for the tokens of a sample (recomputed for the backward). */
typedef struct layer_acts {
    double *xa, *inv_a;           /* attention input (normed, or x itself) and the norm's 1/rms */
    double *q_lin, *k_lin;        /* q and k after bias, before their norms (only with q/k norms) */
    double *inv_q, *inv_k;        /* those norms' 1/rms, per token and segment */
    double *q, *k, *v;            /* as attention reads them (normed, rotated, q scaled) */
    double *lse;                  /* per head and query: log-sum-exp of its scores */
    double *att;                  /* attention output (input of attn_output) */
    double *o, *inv_po;           /* a sublayer's output before its post-norm, and that norm's 1/rms */
    double *x_mid;                /* residual between attention and FFN */
    double *xf, *inv_f;           /* FFN input */
    double *gate, *up, *h;        /* pre-activation gate and up, and act(gate) * up */
    double *o_f, *inv_pf;         /* the FFN output before its post-norm */
    /* mixture of experts (NULL for dense models): router logits and gradient [n][n_expert], the choice
     * and its weights [n][k], and per (token, slot) item the expert's gate, up, act(gate) * up and output */
    double *router, *drouter, *sel_w, *eg, *eu, *eh, *eo;
    int32_t *sel;
} layer_acts;

struct runner_trainer {
    runner_model *m;
    runner_pool *pool;
    int32_t n_ctx, rank, n_pairs;
    double s;        /* the pairs' scale alpha / rank, as the forward pass computes it (in float) */
    double dropout;  /* PEFT's lora_dropout on each pair's input */
    train_pair *pairs;
    int32_t *slot;   /* [(n_layer) * T_PER_LAYER + 1]: pair index or -1; the last entry is the head */
    int64_t n_params;
    double *p, *g, *m1, *m2;
    int64_t steps;
    /* the sample being computed */
    int32_t n;
    const int32_t *tokens;
    uint64_t seed;
    int use_dropout;
    int32_t tok0; /* the first token of the head chunk being computed (dropout masks) */
    double *layer_in; /* [n_layer][n_ctx][n_embd]: each block's input rows */
    layer_acts a;
    double *x, *dx, *dtmp, *dq, *dk, *dv, *dff, *dff2, *dnorm; /* working rows */
    double *mx, *mo, *mg, *mu, *mh; /* one expert's rows, gathered (MoE only) */
    double *fused;                  /* a fused pair's delta or gradient rows [n][n_out] (fused targets only) */
    double *xn_out, *inv_out, *logits, *rope_cos, *rope_sin, *rope_cos_swa, *rope_sin_swa;
    float *wbuf; /* one weight dequantized */
    size_t wbuf_floats;
};

/* Rows of logits the head computes at once. */
#define RUNNER_TRAIN_HEAD_ROWS 64

/* Index into slot[] of a block's weight (layer >= 0) or the head (layer -1). */
static inline size_t runner_train_slot(const runner_model_config *c, int32_t layer, int slot) {
    return layer < 0 ? (size_t)c->n_layer * T_PER_LAYER : (size_t)layer * T_PER_LAYER + (size_t)slot;
}

/* cos and sin of each position's rope angles, scale * p * base^(-2i / n_rot) / factors[i] (longrope;
 * NULL: 1), times mscale (longrope's attn_factor), in double. */
void runner_train_rope_table(double *cs, double *sn, int32_t n_ctx, int32_t n_rot, double base, double scale, const float *factors,
                             double mscale);

#endif
