/*
 * The AMX driver (amx.h): 16 weight rows of Q8_0 or Q4_0 repacked once, then 16 tokens at a time
 * against them, one TDPBSSD per block of 32 values, through a runner_amx_isa (the hardware's or the
 * emulation: this file is the same for both, which is what the emulated tests exercise). Compiled
 * with AVX-512 for the epilogue; runs only where the CPU has AVX-512 F/BW/VL (amx.c checks).
 *
 * Bitwise vec_dot (docs/kernels.md, "Canonical orders"), per (row r, token m):
 *   isum_b   = C[m][r] of block b's TDPBSSD: sum_j y_m[j] * x_r[j], exact in int32 (|isum| <= 2^19)
 *   acc[b % 16][m][r] = fmaf((float)isum_b, d_x[r] * d_y[m], acc[b % 16][m][r])     (acc from +0)
 *   then the tree over the 16 lanes: for w in 8, 4, 2, 1: acc[l] = acc[l] + acc[l + w]
 * d_x * d_y is the product of two halves, exact in float, so its operand order does not matter;
 * VCVTDQ2PS of an int32 below 2^24 is exact, and VFMADD is fmaf. Lanes a short row never reaches
 * stay +0 and enter the tree as they do in the scalar reference.
 *
 * Workspace (64-byte aligned, runner_amx_workspace_bytes_avx512):
 *   acc  [16 lanes][16 tokens][16 rows] float     16 KiB
 *   c    [2 sets][16 tokens][16 rows] int32       2 KiB, the C tiles stored
 *   dx   [nb][16 rows] float                      the weights' scales
 *   b    [nb][8][64] int8                         B tiles: b[k][4r + i] = value 4k + i of row r
 */
#include <immintrin.h>

#include "quant/amx.h"
#include "quant/quant_impl.h"

#define LANES RUNNER_BLOCK_LANES
#define OUTS (RUNNER_AMX_TOKENS * RUNNER_AMX_ROWS) /* 256 results per call */
#define OFF_C ((size_t)LANES * OUTS * sizeof(float))
#define OFF_DX (OFF_C + 2 * (size_t)OUTS * sizeof(int32_t))
#define DX_BYTES ((size_t)RUNNER_AMX_ROWS * sizeof(float)) /* per block */
#define B_BYTES ((size_t)QK * RUNNER_AMX_ROWS)             /* per block: 8 rows of 64 bytes */
#define OFF_B(nb) (OFF_DX + (size_t)(nb) * DX_BYTES)

size_t runner_amx_workspace_bytes_avx512(int64_t n) {
    if (n <= 0 || n % QK) return 0;
    const uint64_t nb = (uint64_t)(n / QK);
    if (nb > (SIZE_MAX - OFF_DX) / (DX_BYTES + B_BYTES)) return 0;
    return OFF_B(nb) + (size_t)nb * B_BYTES; /* every part a multiple of 64 bytes */
}

/* Row r's 32 values of one block (as int8) into the B tile of that block: dword k to b[k][4r]. */
static void put_row(uint8_t *bt, int r, const int8_t v[QK]) {
    for (int k = 0; k < QK / 4; k++) memcpy(bt + 64 * k + 4 * r, v + 4 * k, 4);
}

void runner_amx_pack_q8_0_avx512(int64_t n, const void *vx, size_t bx, void *ws) {
    const int64_t nb = n / QK;
    float *dx = (float *)(void *)((uint8_t *)ws + OFF_DX);
    uint8_t *bt = (uint8_t *)ws + OFF_B(nb);
    for (int r = 0; r < RUNNER_AMX_ROWS; r++) {
        const uint8_t *x = (const uint8_t *)vx + (size_t)r * bx; /* each row read front to back */
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = x + (size_t)b * Q8_0_BYTES;
            int8_t v[QK];
            memcpy(v, blk + Q8_0_QS, QK);
            put_row(bt + (size_t)b * B_BYTES, r, v);
            dx[b * RUNNER_AMX_ROWS + r] = _cvtsh_ss(rd_u16(blk));
        }
    }
}

void runner_amx_pack_q4_0_avx512(int64_t n, const void *vx, size_t bx, void *ws) {
    const int64_t nb = n / QK;
    float *dx = (float *)(void *)((uint8_t *)ws + OFF_DX);
    uint8_t *bt = (uint8_t *)ws + OFF_B(nb);
    for (int r = 0; r < RUNNER_AMX_ROWS; r++) {
        const uint8_t *x = (const uint8_t *)vx + (size_t)r * bx;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = x + (size_t)b * Q4_0_BYTES;
            int8_t v[QK];
            for (int j = 0; j < QK / 2; j++) {
                v[j] = (int8_t)((blk[Q4_0_QS + j] & 15) - 8); /* values 0..15: low nibbles */
                v[j + QK / 2] = (int8_t)((blk[Q4_0_QS + j] >> 4) - 8);
            }
            put_row(bt + (size_t)b * B_BYTES, r, v);
            dx[b * RUNNER_AMX_ROWS + r] = _cvtsh_ss(rd_u16(blk));
        }
    }
}

/* The palette-1 shapes of the two tile sets (amx.h): C 16 x 64 bytes, A 16 x 32, B 8 x 64. */
static runner_amx_tilecfg tile_config(void) {
    runner_amx_tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette_id = 1;
    for (int s = 0; s < 2; s++) {
        cfg.rows[s] = RUNNER_AMX_TOKENS;
        cfg.colsb[s] = RUNNER_AMX_ROWS * 4;
        cfg.rows[2 + s] = RUNNER_AMX_TOKENS;
        cfg.colsb[2 + s] = QK;
        cfg.rows[4 + s] = QK / 4;
        cfg.colsb[4 + s] = RUNNER_AMX_ROWS * 4;
    }
    return cfg;
}

void runner_amx_tile_avx512(const runner_amx_isa *isa, int64_t n, void *ws, const void *vy, size_t by, float *out, size_t ldo) {
    const int64_t nb = n / QK;
    uint8_t *w = ws;
    float *acc = (float *)(void *)w;
    int32_t *cbuf = (int32_t *)(void *)(w + OFF_C);
    const float *dx = (const float *)(const void *)(w + OFF_DX);
    const uint8_t *bt = w + OFF_B(nb);
    const uint8_t *y = vy;
    for (size_t i = 0; i < (size_t)LANES * OUTS; i += 16) _mm512_store_ps(acc + i, _mm512_setzero_ps());

    const runner_amx_tilecfg cfg = tile_config();
    isa->loadconfig(&cfg);
    for (int64_t b = 0; b < nb; b++) {
        const int s = (int)(b & 1);
        const uint8_t *yb = y + (size_t)b * Q8_0_BYTES;
        int32_t *c = cbuf + (size_t)s * OUTS;
        isa->zero(s);
        isa->load(2 + s, yb + Q8_0_QS, by); /* A: the 16 tokens' quants of block b, in place */
        isa->load(4 + s, bt + (size_t)b * B_BYTES, 64);
        isa->dpbssd(s);
        isa->store(s, c, 64);

        /* the tokens' scales: scalar loads packed for one VCVTPH2PS (a gather is slower, kernels.md) */
        uint16_t h[RUNNER_AMX_TOKENS];
        for (int m = 0; m < RUNNER_AMX_TOKENS; m++) h[m] = rd_u16(yb + (size_t)m * by);
        _Alignas(64) float dy[RUNNER_AMX_TOKENS];
        _mm512_store_ps(dy, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)h)));
        const __m512 vdx = _mm512_load_ps(dx + (size_t)b * RUNNER_AMX_ROWS);
        float *lane = acc + (size_t)(b % LANES) * OUTS;
        for (int m = 0; m < RUNNER_AMX_TOKENS; m++) {
            const __m512 d = _mm512_mul_ps(vdx, _mm512_set1_ps(dy[m]));
            const __m512 isum = _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(c + 16 * m)));
            _mm512_store_ps(lane + 16 * m, _mm512_fmadd_ps(isum, d, _mm512_load_ps(lane + 16 * m)));
        }
    }
    isa->release();

    for (int step = LANES / 2; step >= 1; step /= 2) {
        for (int l = 0; l < step; l++) {
            float *a = acc + (size_t)l * OUTS;
            const float *o = acc + (size_t)(l + step) * OUTS;
            for (int i = 0; i < OUTS; i += 16) _mm512_store_ps(a + i, _mm512_add_ps(_mm512_load_ps(a + i), _mm512_load_ps(o + i)));
        }
    }
    for (int m = 0; m < RUNNER_AMX_TOKENS; m++) _mm512_storeu_ps(out + (size_t)m * ldo, _mm512_load_ps(acc + 16 * m));
}
