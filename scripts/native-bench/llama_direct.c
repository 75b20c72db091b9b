/*
 * llama.cpp driven directly from C, for the fair comparison in scripts/bench.ts: the libllama that
 * node-llama-cpp ships, one persistent ggml thread pool (spinning between graphs, as llama-bench
 * uses it), no Node host in between. Measures what the runner worker measures, on the same ids:
 *   pp: DEPTH tokens already in the cache (not timed), then PP tokens at position DEPTH in batches of
 *       512 (batch and ubatch 512), logits of the last;
 *   tg: the DEPTH tokens kept and an 8-token prompt (not timed), then TG + 1 greedy tokens; the time covers
 *       evaluating TG generated tokens and picking each next one (argmax over the logits).
 * FLASH is llama.cpp's flash attention: off, on or auto (its default; on for CPU).
 * Prints one line "BENCH_RESULT {json}" on stdout.
 *
 *   llama_direct MODEL THREADS PP TG N_CTX BACKEND_DIR [FLASH [DEPTH]]
 *
 * Built by scripts/bench.ts against the headers of node-llama-cpp's bundled llama.cpp source.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"

#define N_BATCH 512
#define WARM_PROMPT 8
#define WARM_GEN 4
#define TG_PROMPT 8

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/* A field of /proc/self/status in MiB (VmRSS, RssAnon, RssFile), or -1. */
static double status_mib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    double kib = -1;
    const size_t n = strlen(field);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            kib = atof(line + n + 1);
            break;
        }
    }
    fclose(f);
    return kib < 0 ? -1 : kib / 1024.0;
}

static bool no_progress(float progress, void *user) {
    (void)progress;
    (void)user;
    return true;
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* The same deterministic ids as the runner worker (scripts/bench.ts promptIds). */
static llama_token prompt_id(int i, int n_vocab) {
    const int m = (n_vocab < 512 ? n_vocab : 512) - 3;
    return 3 + (llama_token)(((long long)i * 7919 + 13) % m);
}

/* ids[0..n) at positions pos0.., in batches of N_BATCH; logits of the last token only. */
static int decode(struct llama_context *ctx, const llama_token *ids, int n, int pos0) {
    for (int off = 0; off < n; off += N_BATCH) {
        const int m = n - off < N_BATCH ? n - off : N_BATCH;
        struct llama_batch b = llama_batch_init(m, 0, 1);
        for (int i = 0; i < m; i++) {
            b.token[i] = ids[off + i];
            b.pos[i] = pos0 + off + i;
            b.n_seq_id[i] = 1;
            b.seq_id[i][0] = 0;
            b.logits[i] = off + i == n - 1;
        }
        b.n_tokens = m;
        const int rc = llama_decode(ctx, b);
        llama_batch_free(b);
        if (rc) return rc;
    }
    return 0;
}

static llama_token argmax(struct llama_context *ctx, int n_vocab) {
    const float *logits = llama_get_logits_ith(ctx, -1);
    int best = 0;
    for (int i = 1; i < n_vocab; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* Evaluate `prompt` at pos0, then n greedy tokens; returns ms spent after the first token came out. */
static double generate(struct llama_context *ctx, const llama_token *prompt, int n_prompt, int pos0, int n, int n_vocab,
                       llama_token *out) {
    if (decode(ctx, prompt, n_prompt, pos0)) return -1;
    llama_token t = argmax(ctx, n_vocab);
    out[0] = t;
    const double t0 = now_ms();
    for (int i = 1; i < n; i++) {
        if (decode(ctx, &t, 1, pos0 + n_prompt + i - 1)) return -1;
        t = argmax(ctx, n_vocab);
        out[i] = t;
    }
    return now_ms() - t0;
}

int main(int argc, char **argv) {
    if (argc < 7 || argc > 9) {
        fprintf(stderr, "usage: %s MODEL THREADS PP TG N_CTX BACKEND_DIR [off|on|auto [DEPTH]]\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    const int threads = atoi(argv[2]), pp = atoi(argv[3]), tg = atoi(argv[4]), n_ctx = atoi(argv[5]);
    const char *flash = argc > 7 ? argv[7] : "off";
    const int depth = argc > 8 ? atoi(argv[8]) : 0;
    const enum llama_flash_attn_type fa = strcmp(flash, "on") == 0     ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                                          : strcmp(flash, "auto") == 0 ? LLAMA_FLASH_ATTN_TYPE_AUTO
                                                                       : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(argv[6]);
    ggml_backend_dev_t cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu_dev) {
        fprintf(stderr, "no CPU backend in %s\n", argv[6]);
        return 1;
    }
    ggml_backend_reg_t cpu_reg = ggml_backend_dev_backend_reg(cpu_dev);
    typedef struct ggml_threadpool *(*threadpool_new_fn)(struct ggml_threadpool_params *);
    typedef void (*threadpool_free_fn)(struct ggml_threadpool *);
    threadpool_new_fn tp_new = (threadpool_new_fn)ggml_backend_reg_get_proc_address(cpu_reg, "ggml_threadpool_new");
    threadpool_free_fn tp_free = (threadpool_free_fn)ggml_backend_reg_get_proc_address(cpu_reg, "ggml_threadpool_free");
    llama_backend_init();
    const double base_rss = status_mib("VmRSS");

    const double t_load = now_ms();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.progress_callback = no_progress;
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", path);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = N_BATCH;
    cp.n_ubatch = N_BATCH;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = fa;
    cp.type_k = GGML_TYPE_F16;
    cp.type_v = GGML_TYPE_F16;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
    struct ggml_threadpool *tp = tp_new ? tp_new(&tpp) : NULL;
    if (!tp) {
        fprintf(stderr, "cannot create a thread pool of %d\n", threads);
        return 1;
    }
    llama_attach_threadpool(ctx, tp, NULL);
    const double load_ms = now_ms() - t_load;

    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    /* ids: the depth's tokens, then the prompt's (the runner worker's promptIds(depth + pp)) */
    const int n_ids = depth + (pp > TG_PROMPT ? pp : TG_PROMPT);
    llama_token *ids = malloc(sizeof *ids * (size_t)n_ids);
    llama_token *gen = malloc(sizeof *gen * (size_t)(tg + 1 > WARM_GEN ? tg + 1 : WARM_GEN));
    for (int i = 0; i < n_ids; i++) ids[i] = prompt_id(i, n_vocab);

    if (generate(ctx, ids, WARM_PROMPT, 0, WARM_GEN, n_vocab, gen) < 0) return 1;
    llama_memory_clear(llama_get_memory(ctx), true);

    if (depth > 0 && decode(ctx, ids, depth, 0)) return 1;
    const double c0 = cpu_ms(), w0 = now_ms();
    const double t_pp = now_ms();
    if (decode(ctx, ids + depth, pp, depth)) {
        fprintf(stderr, "pp decode failed\n");
        return 1;
    }
    const double pp_ms = now_ms() - t_pp;
    /* keep the depth, drop pp's tokens (as the runner worker truncates to the depth) */
    if (!llama_memory_seq_rm(llama_get_memory(ctx), 0, depth, -1)) {
        fprintf(stderr, "cannot drop pp's tokens from the cache\n");
        return 1;
    }
    const double tg_ms = generate(ctx, ids + depth, TG_PROMPT, depth, tg + 1, n_vocab, gen);
    if (tg_ms < 0) return 1;
    const double cores = (cpu_ms() - c0) / (now_ms() - w0);
    const double rss_anon = status_mib("RssAnon"), rss_file = status_mib("RssFile");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);

    printf("BENCH_RESULT {\"engine\":\"llama.cpp-c\",\"threads\":%d,\"loadMs\":%.3f,\"ppTokens\":%d,\"ppMs\":%.3f,\"tgTokens\":%d,\"tgMs\":%.3f,"
           "\"baseRssMiB\":%.1f,\"peakRssMiB\":%.1f,\"anonRssMiB\":%.1f,\"fileRssMiB\":%.1f,\"coresUsed\":%.3f,\"firstTokens\":[",
           threads, load_ms, pp, pp_ms, tg, tg_ms, base_rss, ru.ru_maxrss / 1024.0, rss_anon, rss_file, cores);
    for (int i = 0; i < 16 && i <= tg; i++) printf("%s%d", i ? "," : "", gen[i]);
    printf("],\"notes\":{\"threadpool\":\"persistent\",\"flashAttention\":\"%s\",\"depth\":%d}}\n", flash, depth);

    llama_free(ctx);
    tp_free(tp);
    llama_model_free(model);
    llama_backend_free();
    free(ids);
    free(gen);
    return 0;
}
