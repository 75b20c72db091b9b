/*
 * Matmul groups: weights that share one input. A group normalises (optionally) and quantizes each
 * token's input once per activation type, then computes ranges of output rows of all its weights in
 * one pool loop: every output element is one vec_dot (or a register tile bitwise equal to it), so
 * results do not depend on how rows or tokens were grouped.
 */
#include "ops/matmul.h"

#include "ops/norm.h"
#include "quant/amx.h"

/* The AMX tile covers one prompt row claim, and its tokens fit the row buffers of group_dot_task. */
_Static_assert(RUNNER_ROW_TILE == RUNNER_AMX_ROWS, "a prompt's row claim is one AMX tile of rows");
_Static_assert(RUNNER_AMX_TOKENS <= RUNNER_TILE_MAX && RUNNER_AMX_ROWS <= RUNNER_ROW_CHUNK_DECODE, "AMX results fit vt");

const uint8_t *runner_act_row(const runner_matmul_group *g, int slot, int32_t t) {
    const runner_scratch *s = &g->ctx->s;
    if (g->slot_type[slot] == RUNNER_TYPE_F32) return (const uint8_t *)(g->in + (size_t)t * g->n_in);
    return s->act_q + ((size_t)slot * g->ctx->params.n_batch + (size_t)t) * s->act_q_row_bytes;
}

/* Where a scratch row of row_bytes holding n values of `type` can also hold them packed by `pack`:
 * past its own bytes, 64-byte aligned; 0 when there is no room. */
size_t runner_pack_offset(int32_t type, int64_t n, const runner_act_pack *pack, size_t row_bytes) {
    size_t q_bytes = 0;
    if (runner_type_row_bytes(runner_type_traits_get(type), n, &q_bytes) != 0 || q_bytes == 0) return 0;
    const size_t off = (q_bytes + 63) & ~(size_t)63;
    return off + pack->bytes(n) <= row_bytes ? off : 0;
}

/* Where the slot's activation rows also get `pack` (the first asked for wins; NULL: nothing to do).
 * A weight whose kernels want another layout, or find no room, runs on the plain rows. */
void runner_group_want_pack(runner_matmul_group *g, int s, const runner_act_pack *pack) {
    if (!pack || g->slot_pack[s] || g->slot_type[s] == RUNNER_TYPE_F32) return;
    const size_t off = runner_pack_offset(g->slot_type[s], g->n_in, pack, g->ctx->s.act_q_row_bytes);
    if (!off) return;
    g->slot_pack[s] = pack;
    g->slot_pack_off[s] = off;
}

/* The packed row of slot s for token t where the slot was packed in `pack` (NULL otherwise). */
const uint8_t *runner_packed_row(const runner_matmul_group *g, int s, int32_t t, const runner_act_pack *pack) {
    return pack && pack == g->slot_pack[s] ? runner_act_row(g, s, t) + g->slot_pack_off[s] : NULL;
}

/* Task 1: (optional norm) and quantize each token's input once per activation type. */
static void group_prepare_task(void *arg, int64_t t0, int64_t t1, int ith) {
    (void)ith;
    runner_matmul_group *g = arg;
    const runner_model *m = g->ctx->model;
    for (int64_t t = t0; t < t1; t++) {
        float *row = (float *)g->in + (size_t)t * g->n_in;
        if (g->norm_src) runner_rmsnorm_row(g->norm_src + (size_t)t * g->n_in, g->norm_w, row, g->n_in, m->cfg.norm_eps);
        for (int s = 0; s < g->n_slots; s++) {
            if (g->slot_type[s] == RUNNER_TYPE_F32) continue;
            uint8_t *q = (uint8_t *)runner_act_row(g, s, (int32_t)t);
            m->act_from_float[g->slot_type[s]](row, q, g->n_in);
            if (g->slot_pack[s]) g->slot_pack[s]->pack(q, q + g->slot_pack_off[s], g->n_in);
        }
    }
}

/* Rows [rt, re) of weight i for token t, from v: scaled, then stored or added to the output. */
static void store_rows(const runner_matmul_group *g, int i, int32_t t, int64_t rt, int64_t re, float *v) {
    float *o = g->out[i] + (size_t)t * g->w[i]->ne[1];
    const float sc = g->scale[i];
    if (sc != 1.0f)
        for (int64_t r = rt; r < re; r++) v[r - rt] = v[r - rt] * sc;
    for (int64_t r = rt; r < re; r++) o[r] = g->accumulate[i] ? o[r] + v[r - rt] : v[r - rt];
}

/* The AMX packer for weight w where this process uses AMX tiles (quant/amx.h) and w can take them:
 * Q8_0 or Q4_0 on the AVX-512 kernels the self-check held the tiles to, a prompt of at least one
 * tile of tokens, rows that fit the workspace. NULL otherwise. */
static runner_amx_pack_fn amx_pack_of(const runner_matmul_group *g, const runner_weight *w) {
    const runner_scratch *s = &g->ctx->s;
    if (!s->amx_isa || g->n_tok < RUNNER_AMX_TOKENS || w->variant != RUNNER_KERNEL_AVX512) return NULL;
    const size_t need = runner_amx_workspace_bytes(w->ne[0]);
    return need && need <= s->amx_bytes ? runner_amx_pack_for(w->traits->type) : NULL;
}

/* Rows [rt, rt + RUNNER_AMX_ROWS) of weight i, repacked once into ws, against the tokens 16 at a time
 * from the first; returns the first token left for the other kernels. Each value is bitwise vec_dot's. */
static int32_t amx_rows(const runner_matmul_group *g, int i, int64_t rt, runner_amx_pack_fn pack, uint8_t *ws,
                        float vt[][RUNNER_ROW_CHUNK_DECODE]) {
    const runner_weight *w = g->w[i];
    const int slot = g->slot[i];
    pack(w->ne[0], w->data + (size_t)rt * w->row_bytes, w->row_bytes, ws);
    int32_t t = 0;
    for (; g->n_tok - t >= RUNNER_AMX_TOKENS; t += RUNNER_AMX_TOKENS) {
        const uint8_t *y0 = runner_act_row(g, slot, t);
        const size_t by = (size_t)(runner_act_row(g, slot, t + 1) - y0);
        runner_amx_tile(g->ctx->s.amx_isa, w->ne[0], ws, y0, by, vt[0], RUNNER_ROW_CHUNK_DECODE);
        for (int c = 0; c < RUNNER_AMX_TOKENS; c++) store_rows(g, i, t + c, rt, rt + RUNNER_AMX_ROWS, vt[c]);
    }
    return t;
}

/* Task 2: a range of output rows of the group's weights, concatenated. */
static void group_dot_task(void *arg, int64_t r0, int64_t r1, int ith) {
    runner_matmul_group *g = arg;
    int64_t base = 0;
    for (int i = 0; i < g->n_w && r0 < r1; i++) {
        const runner_weight *w = g->w[i];
        const int64_t rows = w->ne[1];
        int64_t a = r0 - base, b = r1 - base;
        base += rows;
        if (b <= 0 || a >= rows) continue;
        if (a < 0) a = 0;
        if (b > rows) b = rows;
        const runner_type_traits *tt = w->traits;
        const int slot = g->slot[i];
        /* A few tokens (a decode group's step) on the decode kernels' packed rows, the weight row
         * unpacked once for all of them. */
        const runner_act_pack *mvp = tt->mv_pack[w->variant];
        const runner_vec_dot_mvn_fn mvn = g->n_tok > 1 && mvp && mvp == g->slot_pack[slot] ? tt->vec_dot_mvn[w->variant] : NULL;
        const int64_t chunk = g->n_tok == 1 || mvn ? RUNNER_ROW_CHUNK_DECODE : RUNNER_ROW_TILE;
        const runner_act_pack *pack = tt->tile_pack[w->variant];
        /* a tile whose activation layout the slot was not packed in (another weight's took it) is skipped */
        const int packed_ok = !(pack && pack != g->slot_pack[slot]);
        const runner_vec_dot_tile_fn tile = packed_ok ? tt->vec_dot_tile[w->variant] : NULL;
        const runner_vec_dot_tile_few_fn few = packed_ok ? tt->vec_dot_tile_few[w->variant] : NULL;
        const size_t tile_off = pack ? g->slot_pack_off[slot] : 0;
        const int tr = tile ? tt->tile_rows[w->variant] : 0, tc = tile ? tt->tile_cols[w->variant] : 0;
        const runner_amx_pack_fn amx = amx_pack_of(g, w);
        uint8_t *amx_ws = amx ? g->ctx->s.amx + (size_t)ith * g->ctx->s.amx_bytes : NULL;
        float v[RUNNER_ROW_CHUNK_DECODE], vt[RUNNER_TILE_MAX][RUNNER_ROW_CHUNK_DECODE];
        for (int64_t rt = a; rt < b; rt += chunk) {
            const int64_t re = rt + chunk < b ? rt + chunk : b, nr = re - rt, nr_tiled = tile ? nr - nr % tr : 0;
            const uint8_t *x = w->data + (size_t)rt * w->row_bytes;
            /* Whole AMX tiles first (16 rows x 16 tokens); a short row claim and the last tokens go on below. */
            int32_t t = amx && nr == RUNNER_AMX_ROWS ? amx_rows(g, i, rt, amx, amx_ws, vt) : 0;
            for (; mvn && t < g->n_tok; t += RUNNER_MVN_MAX) {
                const int nc = g->n_tok - t < RUNNER_MVN_MAX ? (int)(g->n_tok - t) : RUNNER_MVN_MAX;
                const uint8_t *y0 = runner_packed_row(g, slot, t, mvp);
                const size_t by = nc > 1 ? (size_t)(runner_packed_row(g, slot, t + 1, mvp) - y0) : 0;
                for (int64_t r = 0; r < nr; r++) {
                    float q[RUNNER_MVN_MAX];
                    mvn(w->ne[0], q, x + (size_t)r * w->row_bytes, y0, by, nc);
                    for (int c = 0; c < nc; c++) vt[c][r] = q[c];
                }
                for (int c = 0; c < nc; c++) store_rows(g, i, t + c, rt, re, vt[c]);
            }
            /* Tokens tc at a time through the register tile, rows tr at a time (the rows past the
             * last whole tile per token through vec_dot); fewer than tc left, at least two, through
             * the same tile on just those where the type has it. Every value is still bitwise one
             * vec_dot (the kernel table's contract). */
            while (tile && g->n_tok > 1 && (g->n_tok - t >= tc || (few && g->n_tok - t >= 2))) {
                const int nc = g->n_tok - t >= tc ? tc : (int)(g->n_tok - t);
                const uint8_t *y0 = runner_act_row(g, slot, t);
                const size_t by = (size_t)(runner_act_row(g, slot, t + 1) - y0);
                for (int64_t r = 0; r < nr_tiled; r += tr) {
                    float q[RUNNER_TILE_MAX];
                    const uint8_t *xr = x + (size_t)r * w->row_bytes;
                    if (nc == tc) tile(w->ne[0], q, xr, w->row_bytes, y0 + tile_off, by);
                    else few(w->ne[0], q, xr, w->row_bytes, y0 + tile_off, by, nc);
                    for (int c = 0; c < nc; c++)
                        for (int k = 0; k < tr; k++) vt[c][r + k] = q[tr * c + k];
                }
                for (int64_t r = nr_tiled; r < nr; r++)
                    for (int c = 0; c < nc; c++) tt->vec_dot[w->variant](w->ne[0], &vt[c][r], x + (size_t)r * w->row_bytes, runner_act_row(g, slot, t + c));
                for (int c = 0; c < nc; c++) store_rows(g, i, t + c, rt, re, vt[c]);
                t += nc;
            }
            for (; t < g->n_tok; t++) {
                runner_vec_dot_rows_packed(tt, w->variant, w->ne[0], v, x, w->row_bytes, nr, runner_act_row(g, slot, t),
                                           g->n_tok == 1 ? runner_packed_row(g, slot, t, tt->mv_pack[w->variant]) : NULL);
                store_rows(g, i, t, rt, re, v);
            }
        }
    }
}

void runner_group_add_scaled(runner_matmul_group *g, const runner_weight *w, float *out, int accumulate, float scale) {
    const int i = g->n_w++;
    g->w[i] = w;
    g->out[i] = out;
    g->accumulate[i] = accumulate;
    g->scale[i] = scale;
    const int32_t type = w->traits->vec_dot_type;
    int s = 0;
    while (s < g->n_slots && g->slot_type[s] != type) s++;
    if (s == g->n_slots) g->slot_type[g->n_slots++] = type;
    g->slot[i] = s;
    /* the slot's packed layout: the decode kernels' for one token or a few (where a kernel takes a
     * few at once), the tile's for a batch that can use it */
    const runner_type_traits *tt = w->traits;
    const int v = w->variant;
    const int few_mv = g->n_tok > 1 && g->n_tok < tt->tile_cols[v] && tt->vec_dot_mvn[v];
    const int tiled = g->n_tok >= tt->tile_cols[v] || (g->n_tok >= 2 && tt->vec_dot_tile_few[v]);
    runner_group_want_pack(g, s, g->n_tok == 1 || few_mv ? tt->mv_pack[v] : tiled ? tt->tile_pack[v] : NULL);
}

/* An activation slot of this type without a weight of the group (MoE: the experts' input). */
int runner_group_slot(runner_matmul_group *g, int32_t type) {
    int s = 0;
    while (s < g->n_slots && g->slot_type[s] != type) s++;
    if (s == g->n_slots) g->slot_type[g->n_slots++] = type;
    return s;
}

int64_t runner_token_chunk(const runner_context *ctx, int64_t n) {
    const int64_t parts = 4 * (int64_t)ctx->params.n_threads;
    return n < parts ? 1 : (n + parts - 1) / parts;
}

void runner_group_add(runner_matmul_group *g, const runner_weight *w, float *out, int accumulate) {
    runner_group_add_scaled(g, w, out, accumulate, 1.0f);
}

void runner_group_run(runner_matmul_group *g) {
    int64_t rows = 0;
    for (int i = 0; i < g->n_w; i++) rows += g->w[i]->ne[1];
    runner_pool_for(g->ctx->pool, g->n_tok, runner_token_chunk(g->ctx, g->n_tok), group_prepare_task, g);
    /* decode-sized claims for one token or a few (a decode group's step), tile-sized for a prompt */
    runner_pool_for(g->ctx->pool, rows, g->n_tok < RUNNER_TILE_COLS_MAX ? RUNNER_ROW_CHUNK_DECODE : RUNNER_ROW_TILE, group_dot_task, g);
}
