/*
 * Loading a model: map the files read-only (weights are used in place, never copied), bind every
 * tensor by role, check the model is complete, and touch every page once so the first token does
 * not pay for page faults.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cpu_cap.h"
#include "core/status.h"
#include "model/bind.h"
#include "model/config.h"
#include "model/lora.h"
#include "model/model.h"
#include "model/roles.h"
#include "ops/activation.h"

static runner_status map_file(const char *path, runner_mapping *out, char *err, int32_t err_len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return runner_fail(err, err_len, RUNNER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return runner_fail(err, err_len, RUNNER_ERR_IO, "cannot stat %s or it is empty", path);
    }
    void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED) return runner_fail(err, err_len, RUNNER_ERR_IO, "cannot map %s: %s", path, strerror(errno));
    out->base = base;
    out->size = (size_t)st.st_size;
    return RUNNER_OK;
}

/* Touch every page of every tensor once, so the first token does not pay for page faults, and so
 * a load can report progress. Reads only; the mapping stays shared with the page cache. */
static runner_status prefault(runner_model *m, const runner_tensor_desc *tensors, int32_t n, runner_progress_fn progress,
                              void *user, char *err, int32_t err_len) {
    uint64_t total = 0, done = 0, next_report = 0;
    for (int32_t i = 0; i < n; i++) total += tensors[i].size;
    volatile uint8_t sink = 0;
    for (int32_t i = 0; i < n; i++) {
        const uint8_t *p = (const uint8_t *)m->maps[tensors[i].file].base + tensors[i].offset;
        for (uint64_t off = 0; off < tensors[i].size; off += 4096) sink ^= p[off];
        done += tensors[i].size;
        if (progress && (done >= next_report || i == n - 1)) {
            if (progress(user, done, total) != 0)
                return runner_fail(err, err_len, RUNNER_ERR_ABORTED, "model load cancelled");
            next_report = done + (64u << 20);
        }
    }
    (void)sink;
    return RUNNER_OK;
}

/* The caller's per-block flag arrays are not kept: every LAYER_FLAGS field of the config (walked from
 * runner.h's table, so a new one needs no code here) is copied into the model, n_layer flags each
 * (0 or 1; a NULL array gives zeros), and m->cfg points at the copies: the forward pass may read
 * c->field[l] for any of them. */
static runner_status keep_layer_flags(runner_model *m, const runner_model_config *config, char *err, int32_t err_len) {
    int32_t count = 0, n_flags = 0;
    const runner_config_field *fields = runner_model_config_fields(&count);
    for (int32_t i = 0; i < count; i++) n_flags += fields[i].kind == RUNNER_CFG_LAYER_FLAGS;
    m->flags = calloc((size_t)n_flags * (size_t)config->n_layer, 1);
    if (!m->flags) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    uint8_t *next = m->flags;
    for (int32_t i = 0; i < count; i++) {
        if (fields[i].kind != RUNNER_CFG_LAYER_FLAGS) continue;
        const uint8_t *src;
        memcpy(&src, (const char *)config + fields[i].offset, sizeof src);
        for (int32_t l = 0; l < config->n_layer; l++) next[l] = src ? src[l] != 0 : 0;
        const uint8_t *kept = next;
        memcpy((char *)&m->cfg + fields[i].offset, &kept, sizeof kept);
        next += config->n_layer;
    }
    return RUNNER_OK;
}

void runner_model_free(runner_model *m) {
    if (!m) return;
    runner_model_free_loras(m);
    for (int32_t i = 0; i < m->n_maps; i++)
        if (m->maps[i].base) munmap(m->maps[i].base, m->maps[i].size);
    free(m->maps);
    free(m->layers);
    free(m->experts);
    free(m->flags);
    free(m);
}

runner_status runner_model_load(const runner_model_config *config, const char *const *paths, int32_t n_paths,
                                const runner_tensor_desc *tensors, int32_t n_tensors, runner_progress_fn progress,
                                void *progress_user, runner_model **out, char *err, int32_t err_len) {
    *out = NULL;
    if (!config || !paths || n_paths < 1 || n_paths > 4096 || !tensors || n_tensors < 1)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "model load: no files or no tensors");
    runner_status st = runner_model_config_check(config, err, err_len);
    if (st != RUNNER_OK) return st;
    runner_model *m = calloc(1, sizeof *m);
    if (!m) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    m->cfg = *config;
    m->cpu = runner_cpu_features_capped();
    if (config->ffn_act == RUNNER_FFN_GELU) runner_gelu_table_init();
    m->maps = calloc((size_t)n_paths, sizeof *m->maps);
    m->layers = calloc((size_t)config->n_layer, sizeof *m->layers);
    if (!m->maps || !m->layers) {
        runner_model_free(m);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
    }
    if (config->n_expert > 0) {
        m->experts = calloc((size_t)config->n_layer * 3 * (size_t)config->n_expert, sizeof *m->experts);
        if (!m->experts) {
            runner_model_free(m);
            return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "out of memory");
        }
    }
    for (int32_t l = 0; l < config->n_layer; l++) {
        m->layers[l].attn_removed = config->attn_removed ? (config->attn_removed[l] != 0) : 0;
        m->layers[l].ffn_removed = config->ffn_removed ? (config->ffn_removed[l] != 0) : 0;
        m->layers[l].swa = config->swa_layers ? (config->swa_layers[l] != 0) : 0;
        if (m->experts) {
            runner_weight *e = m->experts + (size_t)l * 3 * (size_t)config->n_expert;
            m->layers[l].exp_gate = e;
            m->layers[l].exp_up = e + config->n_expert;
            m->layers[l].exp_down = e + 2 * (size_t)config->n_expert;
        }
    }
    st = keep_layer_flags(m, config, err, err_len);
    if (st != RUNNER_OK) {
        runner_model_free(m);
        return st;
    }
    for (int32_t i = 0; i < n_paths; i++) {
        st = map_file(paths[i], &m->maps[i], err, err_len);
        if (st != RUNNER_OK) {
            runner_model_free(m);
            return st;
        }
        m->n_maps = i + 1;
    }
    for (int32_t i = 0; i < n_tensors && st == RUNNER_OK; i++) st = runner_model_bind_tensor(m, &tensors[i], i, err, err_len);
    if (st == RUNNER_OK) st = runner_model_bind_tied_head(m, err, err_len);
    if (st == RUNNER_OK) st = runner_model_check_complete(m, err, err_len);
    if (st == RUNNER_OK) st = prefault(m, tensors, n_tensors, progress, progress_user, err, err_len);
    if (st != RUNNER_OK) {
        runner_model_free(m);
        return st;
    }
    *out = m;
    return RUNNER_OK;
}

int32_t runner_model_n_vocab(const runner_model *m) {
    return m->cfg.n_vocab;
}

int32_t runner_model_n_embd(const runner_model *m) {
    return m->cfg.n_embd;
}
