/*
 * LoRA adapters (runner.h runner_model_add_lora): an adapter file is mapped read-only, its pairs are
 * checked against the weights they adapt (defence in depth: src/lib/lora checked names, shapes and
 * types first) and bound in place like the model's own weights, with the matmul kernel this CPU runs
 * picked for each. A fused weight (phi3's attn_qkv, ffn_gate_up) gets one pair per view it is bound
 * as: the same a, and b's rows split as the weight's are, so each view's delta is the fused delta's
 * rows, computed in the same order. The forward pass (model/forward.c) adds the deltas.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/status.h"
#include "model/bind.h"
#include "model/lora.h"
#include "model/model.h"

/* The weights a pair of this role adapts and the rows of b each takes (fused roles: several). */
static int adapted_views(runner_model *m, const runner_lora_pair_desc *d, runner_weight **views, int64_t *rows) {
    runner_layer *L = d->layer >= 0 && d->layer < m->cfg.n_layer ? &m->layers[d->layer] : NULL;
    switch (d->role) {
    case RUNNER_ROLE_OUTPUT:
        if (d->layer != -1) return 0;
        views[0] = &m->output;
        break;
    case RUNNER_ROLE_ATTN_Q:
    case RUNNER_ROLE_ATTN_K:
    case RUNNER_ROLE_ATTN_V:
    case RUNNER_ROLE_ATTN_OUT:
    case RUNNER_ROLE_FFN_GATE:
    case RUNNER_ROLE_FFN_UP:
    case RUNNER_ROLE_FFN_DOWN:
        if (!L) return 0;
        views[0] = runner_model_weight_slot(m, d->role, d->layer);
        break;
    case RUNNER_ROLE_ATTN_QKV:
        if (!L) return 0;
        views[0] = &L->wq, views[1] = &L->wk, views[2] = &L->wv;
        break;
    case RUNNER_ROLE_FFN_GATE_UP:
        if (!L) return 0;
        views[0] = &L->w_gate, views[1] = &L->w_up;
        break;
    default: return 0;
    }
    int n = 0;
    while (n < 3 && views[n]) {
        rows[n] = views[n]->ne[1];
        n++;
    }
    return n;
}

/* Bind one tensor of the adapter file as a weight view [ne0, ne1] at rows [row0, row0 + ne1) of it. */
static runner_status bind_part(runner_model *m, const runner_lora_file *f, runner_weight *w, const char *what, const runner_lora_pair_desc *d,
                               int32_t type, const int64_t *ne, uint64_t offset, uint64_t size, int64_t row0, int64_t rows, char *err,
                               int32_t err_len) {
    const char *role = runner_tensor_role_name(d->role);
    const runner_type_traits *tt = runner_type_traits_get(type);
    if (!tt)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "LoRA %s of %s (layer %d): ggml type %d is not supported", what, role,
                           d->layer, type);
    if (ne[0] < 1 || ne[1] < 1 || ne[0] % tt->block_size != 0)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "LoRA %s of %s (layer %d): shape [%lld, %lld] is not whole %s blocks", what, role,
                           d->layer, (long long)ne[0], (long long)ne[1], tt->name);
    const size_t row_bytes = (size_t)(ne[0] / tt->block_size) * tt->type_size;
    size_t total = 0;
    if (!runner_mul_ok(row_bytes, (size_t)ne[1], &total) || total != size)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "LoRA %s of %s (layer %d): %llu bytes, expected %zu", what, role, d->layer,
                           (unsigned long long)size, total);
    if (offset > f->size || size > f->size - offset)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "LoRA %s of %s (layer %d): bytes [%llu, +%llu) lie outside its file of %zu bytes",
                           what, role, d->layer, (unsigned long long)offset, (unsigned long long)size, f->size);
    w->data = (const uint8_t *)f->base + offset + (size_t)row0 * row_bytes;
    w->traits = tt;
    w->ne[0] = ne[0];
    w->ne[1] = rows;
    w->ne[2] = w->ne[3] = 1;
    w->row_bytes = row_bytes;
    w->lora = NULL;
    return runner_weight_setup_kernel(m, w, role, d->layer, err, err_len);
}

/* Check pair d against the weights it adapts and bind it as one pair per view (out: up to 3). */
static runner_status bind_pair(runner_model *m, const runner_lora_file *f, const runner_lora_pair_desc *d, float alpha, float scale,
                               runner_lora_pair *out, int *n_out, char *err, int32_t err_len) {
    runner_weight *views[3] = {NULL, NULL, NULL};
    int64_t rows[3] = {0, 0, 0};
    const char *role = d->role >= 0 && d->role < RUNNER_ROLE_COUNT ? runner_tensor_role_name(d->role) : "?";
    const int n = adapted_views(m, d, views, rows);
    if (n == 0)
        return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "LoRA on %s (role %d, layer %d) is not supported", role, d->role, d->layer);
    int64_t n_out_rows = 0;
    for (int k = 0; k < n; k++) {
        if (!views[k]->data)
            return runner_fail(err, err_len, RUNNER_ERR_MODEL, "LoRA on %s (layer %d): the model has no such weight", role, d->layer);
        if (views[k]->ne[0] != views[0]->ne[0])
            return runner_fail(err, err_len, RUNNER_ERR_INTERNAL, "LoRA on %s (layer %d): views of different widths", role, d->layer);
        n_out_rows += rows[k];
    }
    const int64_t rank = d->a_ne[1];
    if (d->a_ne[0] != views[0]->ne[0] || d->b_ne[1] != n_out_rows || d->b_ne[0] != rank)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL,
                           "LoRA on %s (layer %d): lora_a [%lld, %lld] and lora_b [%lld, %lld] do not fit the weight [%lld, %lld]", role,
                           d->layer, (long long)d->a_ne[0], (long long)d->a_ne[1], (long long)d->b_ne[0], (long long)d->b_ne[1],
                           (long long)views[0]->ne[0], (long long)n_out_rows);
    if (rank < 1 || rank > 65536)
        return runner_fail(err, err_len, RUNNER_ERR_MODEL, "LoRA on %s (layer %d): rank %lld out of range [1, 65536]", role, d->layer,
                           (long long)rank);
    /* llama.cpp's llama_adapter_lora_weight::get_scale, in float. */
    const float s = alpha != 0.0f ? scale * alpha / (float)rank : scale;
    int64_t row0 = 0;
    for (int k = 0; k < n; k++) {
        runner_lora_pair *p = &out[k];
        runner_status st = bind_part(m, f, &p->a, "lora_a", d, d->a_type, d->a_ne, d->a_offset, d->a_size, 0, d->a_ne[1], err, err_len);
        if (st == RUNNER_OK)
            st = bind_part(m, f, &p->b, "lora_b", d, d->b_type, d->b_ne, d->b_offset, d->b_size, row0, rows[k], err, err_len);
        if (st != RUNNER_OK) return st;
        p->scale = s;
        p->next = NULL;
        row0 += rows[k];
    }
    *n_out = n;
    return RUNNER_OK;
}

static void free_file(runner_lora_file *f) {
    if (f->base) munmap(f->base, f->size);
    free(f->pairs);
    free(f);
}

void runner_model_free_loras(runner_model *m) {
    for (runner_lora_file *f = m->loras, *next; f; f = next) {
        next = f->next;
        free_file(f);
    }
    m->loras = NULL;
}

runner_status runner_model_add_lora(runner_model *m, const char *path, const runner_lora_pair_desc *pairs, int32_t n_pairs, float alpha,
                                    float scale, char *err, int32_t err_len) {
    if (!m || !path || !pairs || n_pairs < 1 || n_pairs > 1 << 20)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "LoRA: no pairs (%d)", n_pairs);
    if (!(alpha == alpha) || !(scale == scale) || alpha > 1e30f || alpha < -1e30f || scale > 1e30f || scale < -1e30f)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "LoRA: alpha and scale must be finite");
    if (atomic_load(&m->n_contexts) > 0)
        return runner_fail(err, err_len, RUNNER_ERR_BUSY, "LoRA: adapters are added before the model's first context");
    runner_lora_file *f = calloc(1, sizeof *f);
    if (!f) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        const int e = errno;
        if (fd >= 0) close(fd);
        free(f);
        return runner_fail(err, err_len, RUNNER_ERR_IO, "cannot open the adapter %s: %s", path, strerror(e));
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        free(f);
        return runner_fail(err, err_len, RUNNER_ERR_IO, "cannot map the adapter %s: %s", path, strerror(errno));
    }
    f->base = base;
    f->size = (size_t)st.st_size;
    f->pairs = calloc((size_t)n_pairs * 3, sizeof *f->pairs);
    if (!f->pairs) {
        free_file(f);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    }
    /* Bind every pair first; link them into the weights only when all passed (nothing half-attached). */
    int32_t n_bound = 0;
    int32_t max_rank = m->lora_max_rank;
    for (int32_t i = 0; i < n_pairs; i++) {
        int n = 0;
        runner_status s = bind_pair(m, f, &pairs[i], alpha, scale, f->pairs + n_bound, &n, err, err_len);
        if (s != RUNNER_OK) {
            free_file(f);
            return s;
        }
        if (pairs[i].a_ne[1] > max_rank) max_rank = (int32_t)pairs[i].a_ne[1];
        n_bound += n;
    }
    /* A weight adapted twice by one file would add its delta twice: refused by name. */
    for (int32_t i = 0; i < n_pairs; i++)
        for (int32_t j = 0; j < i; j++)
            if (pairs[i].role == pairs[j].role && pairs[i].layer == pairs[j].layer) {
                free_file(f);
                return runner_fail(err, err_len, RUNNER_ERR_MODEL, "LoRA on %s (layer %d) is given twice", runner_tensor_role_name(pairs[i].role),
                                   pairs[i].layer);
            }
    int32_t k = 0;
    for (int32_t i = 0; i < n_pairs; i++) {
        runner_weight *views[3] = {NULL, NULL, NULL};
        int64_t rows[3];
        const int n = adapted_views(m, &pairs[i], views, rows);
        for (int v = 0; v < n; v++, k++) {
            /* Appended last: deltas are added in the order adapters were attached. */
            runner_lora_pair **at = &views[v]->lora;
            while (*at) at = &(*at)->next;
            *at = &f->pairs[k];
        }
    }
    runner_lora_file **tail = &m->loras;
    while (*tail) tail = &(*tail)->next;
    *tail = f;
    m->lora_max_rank = max_rank;
    return RUNNER_OK;
}
