/* Matmul groups (ops/matmul.c): the weights of one step that read the same input. */
#ifndef RUNNER_OPS_MATMUL_H
#define RUNNER_OPS_MATMUL_H

#include "model/model.h"

#define RUNNER_GROUP_MAX 3
/* Rows per claimed chunk: a prompt step visits a tile of rows against every token; a single-token
 * step takes longer runs so the two-row kernel streams two distant rows (runner_vec_dot_rows). */
#define RUNNER_ROW_TILE 16
#define RUNNER_ROW_CHUNK_DECODE 64
/* Fewer tokens than this are decode-shaped (one token, or a decode group's few): decode-sized row claims. */
#define RUNNER_TILE_COLS_MAX 8

typedef struct runner_matmul_group {
    runner_context *ctx;
    int32_t n_tok;
    const float *in;            /* [n_tok][n_in] */
    int64_t n_in;
    int n_w;
    const runner_weight *w[RUNNER_GROUP_MAX];
    float *out[RUNNER_GROUP_MAX];      /* [n_tok][w->ne[1]] */
    int accumulate[RUNNER_GROUP_MAX];  /* add into out (residual) instead of storing */
    float scale[RUNNER_GROUP_MAX];     /* multiply each result by this first (1: none) */
    int slot[RUNNER_GROUP_MAX];        /* which activation slot holds this weight's input */
    int32_t slot_type[RUNNER_ACT_SLOTS];
    int n_slots;
    /* The packed layout some weight's kernels read a slot in (NULL: none; runner_act_pack), written by
     * the prepare task into the same scratch row at slot_pack_off, past the slot's own bytes. */
    const runner_act_pack *slot_pack[RUNNER_ACT_SLOTS];
    size_t slot_pack_off[RUNNER_ACT_SLOTS];
    /* optional pre-step per token before quantizing: RMS norm of src with weight */
    const float *norm_src;      /* [n_tok][n_in] or NULL */
    const float *norm_w;
} runner_matmul_group;

/* Add weight w to the group: its results go to out ([n_tok][w->ne[1]]), stored or (accumulate) added,
 * each multiplied by scale first (1: none). */
void runner_group_add_scaled(runner_matmul_group *g, const runner_weight *w, float *out, int accumulate, float scale);
void runner_group_add(runner_matmul_group *g, const runner_weight *w, float *out, int accumulate);
/* An activation slot of this type without a weight of the group (MoE: the experts' input). */
int runner_group_slot(runner_matmul_group *g, int32_t type);
/* Where the slot's activation rows also get `pack` (the first asked for wins; NULL: nothing to do). */
void runner_group_want_pack(runner_matmul_group *g, int s, const runner_act_pack *pack);
/* Prepare (norm, quantize) every token's input, then every output row of every weight. */
void runner_group_run(runner_matmul_group *g);

/* Token t's activation row in slot `slot` (the input itself for F32). */
const uint8_t *runner_act_row(const runner_matmul_group *g, int slot, int32_t t);
/* The packed row of slot s for token t where the slot was packed in `pack` (NULL otherwise). */
const uint8_t *runner_packed_row(const runner_matmul_group *g, int s, int32_t t, const runner_act_pack *pack);
/* Where a scratch row of row_bytes holding n values of `type` can also hold them packed by `pack`:
 * past its own bytes, 64-byte aligned; 0 when there is no room. */
size_t runner_pack_offset(int32_t type, int64_t n, const runner_act_pack *pack, size_t row_bytes);
/* Tokens per claimed chunk of a per-token loop over n tokens. */
int64_t runner_token_chunk(const runner_context *ctx, int64_t n);

#endif
