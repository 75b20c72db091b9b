/*
 * The KV cache of a context, per layer that has attention, in F16 or F32, allocated once at context
 * creation (kv/kv_cache.c), laid out for the tiled attention (ops/attn_tile.h) of one KV head at a time:
 *   K: [n_head_kv][n_blocks][head_dim][RUNNER_ATTN_BLOCK]  each block of positions transposed, so a
 *      block's scores are one FMA per dimension over 32 keys;
 *   V: [n_head_kv][n_blocks * RUNNER_ATTN_BLOCK][head_dim]  a head's values contiguous.
 * Positions are padded up to whole blocks; the padding is never read as a key (it is masked).
 */
#ifndef RUNNER_KV_CACHE_H
#define RUNNER_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "ops/attn_tile.h"
#include "runner.h"

typedef struct runner_kv_cache {
    void **k;           /* per layer, as above; NULL where the attention is removed */
    void **v;
    int32_t n_layer;
    int32_t n_ctx;
    int32_t type;       /* runner_kv_type */
    size_t elem_bytes;  /* 2 (F16) or 4 (F32) */
    size_t row_values;  /* n_head_kv * head_dim: one position of one layer */
    int32_t n_head_kv;
    int32_t head_dim;
    int32_t n_blocks;   /* ceil(n_ctx / RUNNER_ATTN_BLOCK) */
    uint64_t bytes;     /* K and V over every layer that has attention */
    int32_t n_past;     /* positions [0, n_past) hold valid entries */
} runner_kv_cache;

/* Size and allocate the cache for n_ctx positions; layers with attn_removed[l] != 0 get none.
 * Refuses, before allocating anything, a cache larger than this machine's memory, naming the figures. */
runner_status runner_kv_cache_create(runner_kv_cache *kv, int32_t n_layer, const uint8_t *attn_removed, int32_t n_head_kv,
                                     int32_t head_dim, int32_t n_ctx, int32_t type, char *err, int32_t err_len);
void runner_kv_cache_free(runner_kv_cache *kv);

/* Forget every position >= n_keep (n_keep in [0, n_past], else refused naming both). */
runner_status runner_kv_cache_truncate(runner_kv_cache *kv, int32_t n_keep, char *err, int32_t err_len);

/* Store one position's K and V rows (row_values floats each, head after head) of a layer, rounded to
 * F16 for an F16 cache. */
void runner_kv_cache_store(const runner_kv_cache *kv, int32_t layer, int32_t pos, const float *k, const float *v);

/* Block b of KV head g's transposed K ([head_dim][RUNNER_ATTN_BLOCK] elements), and position j's V row. */
static inline const void *runner_kv_k_block(const runner_kv_cache *kv, int32_t layer, int32_t g, int32_t b) {
    return (const uint8_t *)kv->k[layer] +
           (((size_t)g * (size_t)kv->n_blocks + (size_t)b) * (size_t)kv->head_dim * RUNNER_ATTN_BLOCK) * kv->elem_bytes;
}
static inline const void *runner_kv_v_row(const runner_kv_cache *kv, int32_t layer, int32_t g, int32_t j) {
    return (const uint8_t *)kv->v[layer] +
           (((size_t)g * (size_t)kv->n_blocks * RUNNER_ATTN_BLOCK + (size_t)j) * (size_t)kv->head_dim) * kv->elem_bytes;
}

#endif
