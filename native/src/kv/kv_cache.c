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
    free(kv->blocks);
    memset(kv, 0, sizeof *kv);
}

/* Blocks of a sliding-window layer's ring: the window before a batch's earliest query and the batch
 * itself (llama.cpp sizes its SWA cache n_swa + n_ubatch, padded); 0 when that is not smaller than
 * the context's blocks (a ring would save nothing). */
static int32_t ring_blocks_of(const runner_kv_shape *sh, int32_t n_blocks) {
    if (!sh->swa || sh->n_swa <= 0) return 0;
    const int64_t need = (int64_t)sh->n_swa - 1 + sh->n_batch;
    const int64_t blocks = (need + RUNNER_ATTN_BLOCK - 1) / RUNNER_ATTN_BLOCK;
    return blocks < n_blocks ? (int32_t)blocks : 0;
}

runner_status runner_kv_cache_create(runner_kv_cache *kv, const runner_kv_shape *sh, char *err, int32_t err_len) {
    memset(kv, 0, sizeof *kv);
    const int32_t n_ctx = sh->n_ctx, n_layer = sh->n_layer;
    const size_t elem = sh->type == RUNNER_KV_F16 ? 2 : 4, n_kv = (size_t)sh->n_head_kv * (size_t)sh->head_dim;
    const int32_t n_blocks = (int32_t)(((int64_t)n_ctx + RUNNER_ATTN_BLOCK - 1) / RUNNER_ATTN_BLOCK);
    const int32_t ring_blocks = ring_blocks_of(sh, n_blocks);
    /* Blocks over every layer that has attention, as allocated and as a flat cache would have them. */
    size_t blocks_total = 0, flat_total = 0;
    int32_t n_attn = 0, n_ring = 0;
    for (int32_t l = 0; l < n_layer; l++) {
        if (sh->attn_removed[l]) continue;
        const int ring = ring_blocks > 0 && sh->swa[l];
        n_attn++;
        n_ring += ring;
        blocks_total += (size_t)(ring ? ring_blocks : n_blocks);
        flat_total += (size_t)n_blocks;
    }
    size_t per_block = 0, need = 0, flat = 0; /* bytes of one block of positions, K and V */
    const int fits = runner_mul_ok((size_t)RUNNER_ATTN_BLOCK * 2 * elem, n_kv, &per_block) && runner_mul_ok(per_block, blocks_total, &need) &&
                     runner_mul_ok(per_block, flat_total, &flat);
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
    kv->type = sh->type;
    kv->elem_bytes = elem;
    kv->row_values = n_kv;
    kv->n_head_kv = sh->n_head_kv;
    kv->head_dim = sh->head_dim;
    kv->n_blocks = n_blocks;
    kv->ring_blocks = n_ring > 0 ? ring_blocks : 0;
    kv->n_ring = n_ring;
    kv->n_swa = sh->n_swa;
    kv->flat_bytes = flat;
    kv->k = calloc((size_t)n_layer, sizeof(void *));
    kv->v = calloc((size_t)n_layer, sizeof(void *));
    kv->blocks = calloc((size_t)n_layer, sizeof(int32_t));
    int allocated = kv->k && kv->v && kv->blocks;
    for (int32_t l = 0; allocated && l < n_layer; l++) {
        kv->blocks[l] = ring_blocks > 0 && sh->swa[l] ? ring_blocks : n_blocks;
        if (sh->attn_removed[l]) continue; /* no attention, no KV cache */
        const size_t values = (size_t)kv->blocks[l] * RUNNER_ATTN_BLOCK * n_kv;
        kv->k[l] = runner_alloc_array(values, elem);
        kv->v[l] = runner_alloc_array(values, elem);
        allocated = kv->k[l] && kv->v[l];
        kv->bytes += 2 * values * elem;
    }
    if (!allocated) {
        runner_kv_cache_free(kv);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "cannot allocate a KV cache of %zu bytes for %d positions", need, n_ctx);
    }
    return RUNNER_OK;
}

int32_t runner_kv_cache_min_keep(const runner_kv_cache *kv) {
    /* The query at n_keep reads (n_keep - n_swa, n_keep): all of them must be at or above ring_lo. */
    return kv->ring_lo > 0 ? kv->ring_lo + kv->n_swa - 1 : 0;
}

void runner_kv_cache_reserve(runner_kv_cache *kv, int32_t end) {
    if (kv->n_ring == 0) return;
    const int32_t gone = end - kv->ring_blocks * RUNNER_ATTN_BLOCK; /* slots of positions below it are rewritten */
    if (gone > kv->ring_lo) kv->ring_lo = gone;
}

runner_status runner_kv_cache_truncate(runner_kv_cache *kv, int32_t n_keep, char *err, int32_t err_len) {
    if (n_keep < 0 || n_keep > kv->n_past)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "kv truncate: n_keep %d is outside [0, n_past %d]", n_keep,
                           kv->n_past);
    const int32_t min_keep = runner_kv_cache_min_keep(kv);
    if (n_keep > 0 && n_keep < min_keep)
        return runner_fail(err, err_len, RUNNER_ERR_KV_EVICTED,
                           "kv truncate to %d positions: the sliding-window ring (%d positions) no longer holds positions below %d, which the "
                           "next token's window of %d needs; keep 0 or at least %d positions, or use the flat cache (--swa-full)",
                           n_keep, kv->ring_blocks * RUNNER_ATTN_BLOCK, kv->ring_lo, kv->n_swa, min_keep);
    kv->n_past = n_keep;
    if (n_keep == 0) kv->ring_lo = 0;
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

void runner_kv_cache_move(const runner_kv_cache *kv, int32_t layer, int32_t dst, int32_t src, int32_t n) {
    const size_t e = kv->elem_bytes, hd = (size_t)kv->head_dim;
    /* Ascending: dst < src, so a position is read before anything is written over it. */
    for (int32_t g = 0; g < kv->n_head_kv; g++)
        for (int32_t i = 0; i < n; i++) {
            const int32_t from = src + i, to = dst + i;
            const uint8_t *kf = runner_kv_k_block(kv, layer, g, from / RUNNER_ATTN_BLOCK);
            uint8_t *kt = (uint8_t *)(uintptr_t)runner_kv_k_block(kv, layer, g, to / RUNNER_ATTN_BLOCK);
            for (size_t d = 0; d < hd; d++)
                memcpy(kt + (d * RUNNER_ATTN_BLOCK + (size_t)(to % RUNNER_ATTN_BLOCK)) * e,
                       kf + (d * RUNNER_ATTN_BLOCK + (size_t)(from % RUNNER_ATTN_BLOCK)) * e, e);
            memcpy((void *)(uintptr_t)runner_kv_v_row(kv, layer, g, to), runner_kv_v_row(kv, layer, g, from), hd * e);
        }
}

void runner_kv_cache_read_k(const runner_kv_cache *kv, int32_t layer, int32_t pos, float *k) {
    const int32_t hd = kv->head_dim, in_block = pos % RUNNER_ATTN_BLOCK;
    for (int32_t g = 0; g < kv->n_head_kv; g++) {
        const void *kb = runner_kv_k_block(kv, layer, g, pos / RUNNER_ATTN_BLOCK);
        for (int32_t d = 0; d < hd; d++) {
            const size_t at = (size_t)d * RUNNER_ATTN_BLOCK + in_block;
            k[(size_t)g * hd + d] = kv->type == RUNNER_KV_F16 ? runner_fp16_to_fp32(((const uint16_t *)kb)[at]) : ((const float *)kb)[at];
        }
    }
}

void runner_kv_cache_write_k(const runner_kv_cache *kv, int32_t layer, int32_t pos, const float *k) {
    const int32_t hd = kv->head_dim, in_block = pos % RUNNER_ATTN_BLOCK;
    for (int32_t g = 0; g < kv->n_head_kv; g++) {
        void *kb = (void *)(uintptr_t)runner_kv_k_block(kv, layer, g, pos / RUNNER_ATTN_BLOCK);
        for (int32_t d = 0; d < hd; d++) {
            const size_t at = (size_t)d * RUNNER_ATTN_BLOCK + in_block;
            if (kv->type == RUNNER_KV_F16) ((uint16_t *)kb)[at] = runner_fp32_to_fp16(k[(size_t)g * hd + d]);
            else ((float *)kb)[at] = k[(size_t)g * hd + d];
        }
    }
}
