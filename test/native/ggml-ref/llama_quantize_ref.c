/*
 * Test-time harness: runs llama.cpp's own quantizer (llama_model_quantize from node-llama-cpp's
 * libllama) on a GGUF file, so test/commands/quantize-mix.test.ts can compare runner quantize's
 * per-tensor type choices (and bytes) with llama.cpp's. Declares what it needs itself; only the
 * leading fields of llama_model_quantize_params are touched (nthread, ftype, then the bools
 * allow_requantize, quantize_output_tensor, only_copy, pure), which have kept their offsets across
 * llama.cpp versions; the rest keeps llama_model_quantize_default_params()'s values.
 *
 *   llama_quantize_ref <in.gguf> <out.gguf> <ftype> <pure 0|1> <quantize_output 0|1>
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct params_prefix {
    int32_t nthread;
    int32_t ftype;
    int32_t output_tensor_type;
    int32_t token_embedding_type;
    bool allow_requantize;
    bool quantize_output_tensor;
    bool only_copy;
    bool pure;
    unsigned char rest[1024]; /* room for every later field of any version */
};

struct params_prefix llama_model_quantize_default_params(void);
uint32_t llama_model_quantize(const char *fname_inp, const char *fname_out, const struct params_prefix *params);
void llama_backend_init(void);
void llama_log_set(void (*cb)(int level, const char *text, void *ud), void *ud);

static void quiet(int level, const char *text, void *ud) {
    (void)ud;
    if (level >= 4 || getenv("LLAMA_QUANTIZE_REF_VERBOSE")) fputs(text, stderr); /* GGML_LOG_LEVEL_ERROR = 4 */
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: llama_quantize_ref in.gguf out.gguf ftype pure quantize_output\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct params_prefix p = llama_model_quantize_default_params();
    p.nthread = 1;
    p.ftype = atoi(argv[3]);
    p.pure = atoi(argv[4]) != 0;
    p.quantize_output_tensor = atoi(argv[5]) != 0;
    const uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
    if (rc != 0) {
        fprintf(stderr, "llama_model_quantize failed: %u\n", rc);
        return 3;
    }
    return 0;
}
