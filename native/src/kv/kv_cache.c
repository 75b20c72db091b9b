#include "kv/kv_cache.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/status.h"
#include "quant/quant.h"

/* Bytes of physical memory, or 0 when unknown. */
static uint64_t physical_memory(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

void runner_kv_cache_free(runner_kv_cache *kv) {
    for (int32_t l = 0; l < kv->n_layer; l++) {
        if (kv->k) free(kv->k[l]);
        if (kv->v) free(kv->v[l]);
    }
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

runner_status runner_kv_cache_create(runner_kv_cache *kv, int32_t n_layer, const uint8_t *attn_removed, int32_t n_head_kv,
                                     int32_t head_dim, int32_t n_ctx, int32_t type, char *err, int32_t err_len) {
    memset(kv, 0, sizeof *kv);
    const size_t elem = type == RUNNER_KV_F16 ? 2 : 4, n_kv = (size_t)n_head_kv * (size_t)head_dim;
    const int32_t n_blocks = (int32_t)(((int64_t)n_ctx + RUNNER_ATTN_BLOCK - 1) / RUNNER_ATTN_BLOCK);
    size_t kv_row; /* values per layer for each of K and V, positions padded to whole blocks */
    const int ok = runner_mul_ok((size_t)n_blocks * RUNNER_ATTN_BLOCK, n_kv, &kv_row);
    int32_t n_attn = 0;
    for (int32_t l = 0; l < n_layer; l++) n_attn += !attn_removed[l];
    size_t per_layer = 0, need = 0;
    const int fits = ok && runner_mul_ok(kv_row, 2 * elem, &per_layer) && runner_mul_ok(per_layer, (size_t)n_attn, &need);
    const uint64_t mem = physical_memory();
    if (!fits)
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY,
                           "a context of %d positions needs a KV cache of more than %zu bytes (%d layers x K and V x %zu values per position)",
                           n_ctx, SIZE_MAX, n_attn, n_kv);
    if (mem > 0 && (uint64_t)need > mem)
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY,
                           "a context of %d positions needs %zu bytes (%.1f GiB) of KV cache (%d layers x K and V x %zu values x %zu bytes per "
                           "position), more than this machine's %llu bytes (%.1f GiB) of memory",
                           n_ctx, need, (double)need / 1073741824.0, n_attn, n_kv, elem, (unsigned long long)mem, (double)mem / 1073741824.0);
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->type = type;
    kv->elem_bytes = elem;
    kv->row_values = n_kv;
    kv->n_head_kv = n_head_kv;
    kv->head_dim = head_dim;
    kv->n_blocks = n_blocks;
    kv->k = calloc((size_t)n_layer, sizeof(void *));
    kv->v = calloc((size_t)n_layer, sizeof(void *));
    int allocated = kv->k && kv->v;
    for (int32_t l = 0; allocated && l < n_layer; l++) {
        if (attn_removed[l]) continue; /* no attention, no KV cache */
        kv->k[l] = runner_alloc_array(kv_row, elem);
        kv->v[l] = runner_alloc_array(kv_row, elem);
        allocated = kv->k[l] && kv->v[l];
        kv->bytes += 2 * kv_row * elem;
    }
    if (!allocated) {
        runner_kv_cache_free(kv);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "cannot allocate a KV cache of %zu bytes for %d positions", need, n_ctx);
    }
    return RUNNER_OK;
}

runner_status runner_kv_cache_truncate(runner_kv_cache *kv, int32_t n_keep, char *err, int32_t err_len) {
    if (n_keep < 0 || n_keep > kv->n_past)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "kv truncate: n_keep %d is outside [0, n_past %d]", n_keep,
                           kv->n_past);
    kv->n_past = n_keep;
    return RUNNER_OK;
}

void runner_kv_cache_store(const runner_kv_cache *kv, int32_t layer, int32_t pos, const float *k, const float *v) {
    const int32_t hd = kv->head_dim, b = pos / RUNNER_ATTN_BLOCK, in_block = pos % RUNNER_ATTN_BLOCK;
    for (int32_t g = 0; g < kv->n_head_kv; g++) {
        const float *kg = k + (size_t)g * hd, *vg = v + (size_t)g * hd;
        uint8_t *kb = (uint8_t *)(uintptr_t)runner_kv_k_block(kv, layer, g, b), *vr = (uint8_t *)(uintptr_t)runner_kv_v_row(kv, layer, g, pos);
        if (kv->type == RUNNER_KV_F16) {
            uint16_t *kc = (uint16_t *)(void *)kb, *vc = (uint16_t *)(void *)vr;
            for (int32_t d = 0; d < hd; d++) {
                kc[(size_t)d * RUNNER_ATTN_BLOCK + in_block] = runner_fp32_to_fp16(kg[d]);
                vc[d] = runner_fp32_to_fp16(vg[d]);
            }
        } else {
            float *kc = (float *)(void *)kb;
            for (int32_t d = 0; d < hd; d++) kc[(size_t)d * RUNNER_ATTN_BLOCK + in_block] = kg[d];
            memcpy(vr, vg, (size_t)hd * sizeof(float));
        }
    }
}
