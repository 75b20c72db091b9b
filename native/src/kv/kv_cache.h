/*
 * The KV cache of a context, per layer that has attention, in F16 or F32, allocated once at context
 * creation (kv/kv_cache.c), laid out for the tiled attention (ops/attn_tile.h) of one KV head at a time:
 *   K: [n_head_kv][n_blocks][head_dim][RUNNER_ATTN_BLOCK]  each block of positions transposed, so a
 *      block's scores are one FMA per dimension over 32 keys;
 *   V: [n_head_kv][n_blocks * RUNNER_ATTN_BLOCK][head_dim]  a head's values contiguous.
 * Positions are padded up to whole blocks; the padding is never read as a key (it is masked).
 *
 * Sliding-window layers may hold a ring instead (issue #23): ring_blocks blocks (R = ring_blocks * 32
 * positions, at least n_swa - 1 + n_batch, so the earliest query of a batch still finds its whole
 * window after the batch's own keys are stored), position p in slot p mod R. Since R is a multiple of
 * the block, block b of positions is ring block b mod ring_blocks with the same in-block offsets: the
 * attention walks the same absolute blocks in the same order and reads the same values, so its
 * results are bitwise the flat cache's. Positions below ring_lo may have been overwritten; a truncate
 * that would need one of them is refused (RUNNER_ERR_KV_EVICTED).
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
    int32_t *blocks;    /* per layer, the blocks it holds: n_blocks, or ring_blocks on a ring layer */
    int32_t ring_blocks; /* blocks of a ring layer (0: no layer has a ring) */
    int32_t n_ring;     /* layers with a ring */
    int32_t n_swa;      /* the window the rings serve */
    int32_t ring_lo;    /* positions below it may have been overwritten in a ring */
    uint64_t bytes;     /* K and V over every layer that has attention, as allocated */
    uint64_t flat_bytes; /* what they would take without rings */
    int32_t n_past;     /* positions [0, n_past) hold valid entries */
} runner_kv_cache;

/* What the cache is for: n_ctx positions of n_layer layers; layers with attn_removed[l] != 0 get
 * none; a layer with swa[l] != 0 (swa may be NULL) gets a ring when one is smaller than the context. */
typedef struct runner_kv_shape {
    int32_t n_layer, n_head_kv, head_dim, n_ctx, type;
    const uint8_t *attn_removed;
    const uint8_t *swa;
    int32_t n_swa, n_batch;
} runner_kv_shape;

/* Size and allocate the cache. Refuses, before allocating anything, a cache larger than this
 * machine's memory, naming the figures. */
runner_status runner_kv_cache_create(runner_kv_cache *kv, const runner_kv_shape *shape, char *err, int32_t err_len);
void runner_kv_cache_free(runner_kv_cache *kv);

/* Forget every position >= n_keep (n_keep in [0, n_past], else refused naming both); refused with
 * RUNNER_ERR_KV_EVICTED when the next query's window (n_keep - n_swa, n_keep) reaches a position a ring
 * has overwritten. */
runner_status runner_kv_cache_truncate(runner_kv_cache *kv, int32_t n_keep, char *err, int32_t err_len);

/* The smallest n_keep > 0 a truncate accepts (0: any). */
int32_t runner_kv_cache_min_keep(const runner_kv_cache *kv);

/* Positions up to `end` (exclusive) are about to be written: in a ring they overwrite older ones. */
void runner_kv_cache_reserve(runner_kv_cache *kv, int32_t end);

/* Store one position's K and V rows (row_values floats each, head after head) of a layer, rounded to
 * F16 for an F16 cache. */
void runner_kv_cache_store(const runner_kv_cache *kv, int32_t layer, int32_t pos, const float *k, const float *v);

/* Move positions [src, src + n) of one flat layer to [dst, dst + n), dst < src (a context shift). */
void runner_kv_cache_move(const runner_kv_cache *kv, int32_t layer, int32_t dst, int32_t src, int32_t n);

/* One position's K row of a layer (row_values values, head after head) as floats, and back (rounded
 * to F16 for an F16 cache). */
void runner_kv_cache_read_k(const runner_kv_cache *kv, int32_t layer, int32_t pos, float *k);
void runner_kv_cache_write_k(const runner_kv_cache *kv, int32_t layer, int32_t pos, const float *k);

/* Block b of positions of KV head g's transposed K ([head_dim][RUNNER_ATTN_BLOCK] elements), and
 * position j's V row; on a ring layer, where they are in the ring (b mod its blocks). */
static inline const void *runner_kv_k_block(const runner_kv_cache *kv, int32_t layer, int32_t g, int32_t b) {
    const int32_t nb = kv->blocks[layer];
    return (const uint8_t *)kv->k[layer] + (((size_t)g * (size_t)nb + (size_t)(b % nb)) * (size_t)kv->head_dim * RUNNER_ATTN_BLOCK) * kv->elem_bytes;
}
static inline const void *runner_kv_v_row(const runner_kv_cache *kv, int32_t layer, int32_t g, int32_t j) {
    const int32_t nb = kv->blocks[layer];
    return (const uint8_t *)kv->v[layer] +
           (((size_t)g * (size_t)nb * RUNNER_ATTN_BLOCK + (size_t)(j % (nb * RUNNER_ATTN_BLOCK))) * (size_t)kv->head_dim) * kv->elem_bytes;
}

#endif
