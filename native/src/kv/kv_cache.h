/*
 * The KV cache of a context: per layer that has attention, K and V as [n_ctx][n_head_kv][head_dim]
 * in F16 or F32, allocated once at context creation (kv/kv_cache.c).
 */
#ifndef RUNNER_KV_CACHE_H
#define RUNNER_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "runner.h"

typedef struct runner_kv_cache {
    void **k;           /* per layer: [n_ctx][n_head_kv][head_dim]; NULL where the attention is removed */
    void **v;
    int32_t n_layer;
    int32_t n_ctx;
    int32_t type;       /* runner_kv_type */
    size_t elem_bytes;  /* 2 (F16) or 4 (F32) */
    size_t row_values;  /* n_head_kv * head_dim: one position of one layer */
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

/* Store one position's K and V rows (row_values floats each) of a layer, rounded to F16 for an F16 cache. */
void runner_kv_cache_store(const runner_kv_cache *kv, int32_t layer, int32_t pos, const float *k, const float *v);

#endif
