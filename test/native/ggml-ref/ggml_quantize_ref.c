/*
 * Test-time harness around llama.cpp's own libggml-base (shipped by node-llama-cpp): it runs ggml's
 * quantizers and dequantizers on data piped in, so test/native/kquant-ggml.test.ts can compare our
 * bytes and floats with ggml's. Compiled by the test into a temporary folder; it declares the few
 * prototypes it needs itself (no ggml headers are installed).
 *
 *   chunk <type id> <n_per_row> <nrows>   stdin: f32 rows        stdout: ggml_quantize_chunk(type, ..., imatrix NULL)
 *   row   <symbol> <out bytes> <n>        stdin: n f32           stdout: symbol(x, y, n)   (e.g. quantize_row_q8_K_ref)
 *   deq   <symbol> <in bytes> <n>         stdin: the bytes       stdout: n f32 from symbol(x, y, n) (e.g. dequantize_row_q4_K)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ggml_quantize_chunk(int type, const float *src, void *dst, int64_t start, int64_t nrows, int64_t n_per_row, const float *imatrix);
size_t ggml_row_size(int type, int64_t ne);

static void *read_all(size_t n) {
    uint8_t *buf = calloc(n ? n : 1, 1);
    size_t got = 0;
    while (got < n) {
        size_t r = fread(buf + got, 1, n - got, stdin);
        if (r == 0) {
            fprintf(stderr, "short input: %zu of %zu bytes\n", got, n);
            exit(2);
        }
        got += r;
    }
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: chunk|row|deq ...\n");
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "chunk") == 0) {
        const int type = atoi(argv[2]);
        const int64_t n_per_row = atoll(argv[3]), nrows = atoll(argv[4]);
        float *src = read_all((size_t)(n_per_row * nrows) * sizeof(float));
        const size_t bytes = ggml_row_size(type, n_per_row) * (size_t)nrows;
        void *dst = calloc(bytes ? bytes : 1, 1);
        const size_t wrote = ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, NULL);
        if (wrote != bytes) {
            fprintf(stderr, "ggml_quantize_chunk wrote %zu bytes, expected %zu\n", wrote, bytes);
            return 3;
        }
        fwrite(dst, 1, bytes, stdout);
        return 0;
    }
    void *fn = dlsym(RTLD_DEFAULT, argv[2]);
    if (!fn) {
        fprintf(stderr, "no symbol %s\n", argv[2]);
        return 4;
    }
    const size_t bytes = (size_t)atoll(argv[3]);
    const int64_t n = atoll(argv[4]);
    if (strcmp(mode, "row") == 0) {
        float *src = read_all((size_t)n * sizeof(float));
        void *dst = calloc(bytes ? bytes : 1, 1);
        ((void (*)(const float *, void *, int64_t))fn)(src, dst, n);
        fwrite(dst, 1, bytes, stdout);
        return 0;
    }
    if (strcmp(mode, "deq") == 0) {
        void *src = read_all(bytes);
        float *dst = calloc((size_t)n ? (size_t)n : 1, sizeof(float));
        ((void (*)(const void *, float *, int64_t))fn)(src, dst, n);
        fwrite(dst, sizeof(float), (size_t)n, stdout);
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
