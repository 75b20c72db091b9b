/*
 * The AMX instructions the driver uses, emulated in C from their definitions (Intel SDM vol. 2:
 * LDTILECFG, TILERELEASE, TILEZERO, TILELOADD, TILESTORED, TDPBSSD; palette 1: 8 tiles of at most
 * 16 rows of 64 bytes). The state is per thread, as the hardware's is. Every operand the hardware
 * would fault on (#GP or #UD) is counted (runner_amx_emulated_faults) and the instruction does
 * nothing, so a driver bug that would crash on real tiles shows up here as wrong results and a
 * fault count, not as silence.
 *
 * This is what lets the AMX algorithm be tested bitwise on CPUs without AMX; it is slow (scalar
 * byte products), so the engine uses it only under RUNNER_AMX=emulate, for tests.
 */
#include <stddef.h>
#include <string.h>

#include "quant/amx.h"

/* LDTILECFG reads this struct as the hardware lays it out. */
_Static_assert(sizeof(runner_amx_tilecfg) == 64, "tile config is 64 bytes");
_Static_assert(offsetof(runner_amx_tilecfg, colsb) == 16 && offsetof(runner_amx_tilecfg, rows) == 48, "tile config layout");

#define TILES 8
#define MAX_ROWS 16
#define MAX_COLSB 64

typedef struct emu_state {
    int configured;
    runner_amx_tilecfg cfg;
    uint8_t t[TILES][MAX_ROWS][MAX_COLSB];
    uint64_t faults;
} emu_state;

static _Thread_local emu_state emu;

uint64_t runner_amx_emulated_faults(void) {
    return emu.faults;
}

static void fault(void) {
    emu.faults++;
}

static void init_state(void) {
    emu.configured = 0;
    memset(&emu.cfg, 0, sizeof emu.cfg);
    memset(emu.t, 0, sizeof emu.t);
}

/* The checks LDTILECFG makes (#GP otherwise); on success every tile is zeroed. */
static void emu_loadconfig(const runner_amx_tilecfg *cfg) {
    if (cfg->palette_id == 0) {
        init_state();
        return;
    }
    int ok = cfg->palette_id == 1 && cfg->start_row == 0;
    for (int i = 0; i < 14; i++) ok = ok && cfg->reserved[i] == 0;
    for (int i = 0; i < 16; i++) {
        const int rows = cfg->rows[i], colsb = cfg->colsb[i];
        if (i >= TILES) ok = ok && rows == 0 && colsb == 0;
        else ok = ok && rows <= MAX_ROWS && colsb <= MAX_COLSB && (rows == 0) == (colsb == 0);
    }
    if (!ok) {
        fault();
        return;
    }
    emu.cfg = *cfg;
    emu.configured = 1;
    memset(emu.t, 0, sizeof emu.t);
}

static void emu_release(void) {
    init_state();
}

/* A tile an instruction may name: tiles configured and this one given a shape (#UD otherwise). */
static int usable(int t) {
    return emu.configured && t >= 0 && t < TILES && emu.cfg.rows[t] != 0;
}

/* Rows and bytes past a tile's shape read as zero after every write to it (zero_upper_rows and the
 * zeroing tail of write_row_and_zero in the SDM's pseudocode). */
static void zero_outside(int t) {
    const int rows = emu.cfg.rows[t], colsb = emu.cfg.colsb[t];
    for (int r = 0; r < MAX_ROWS; r++) {
        if (r >= rows) memset(emu.t[t][r], 0, MAX_COLSB);
        else memset(emu.t[t][r] + colsb, 0, (size_t)(MAX_COLSB - colsb));
    }
}

static void emu_zero(int t) {
    if (!usable(t)) {
        fault();
        return;
    }
    memset(emu.t[t], 0, sizeof emu.t[t]);
}

static void emu_load(int t, const void *base, size_t stride) {
    if (!usable(t)) {
        fault();
        return;
    }
    const uint8_t *p = base;
    for (int r = 0; r < emu.cfg.rows[t]; r++) memcpy(emu.t[t][r], p + (size_t)r * stride, emu.cfg.colsb[t]);
    zero_outside(t);
}

static void emu_store(int t, void *base, size_t stride) {
    if (!usable(t)) {
        fault();
        return;
    }
    uint8_t *p = base;
    for (int r = 0; r < emu.cfg.rows[t]; r++) memcpy(p + (size_t)r * stride, emu.t[t][r], emu.cfg.colsb[t]);
}

typedef enum dot_rule { DOT_SIGNED, DOT_A_UNSIGNED, DOT_PAIRS_SATURATED } dot_rule;

static int32_t sat16(int32_t v) {
    return v < -32768 ? -32768 : v > 32767 ? 32767 : v;
}

/*
 * TDPBSSD c, a, b: for m < c.rows, n < c.colsb / 4:
 *   c[m].dword[n] += sum_{k < a.colsb / 4} sum_{i < 4} sext(a[m].byte[4k + i]) * sext(b[k].byte[4n + i])
 * in 32-bit arithmetic that wraps (no saturation). #UD unless the shapes agree: c.rows = a.rows,
 * a.colsb / 4 = b.rows, c.colsb = b.colsb, all column counts multiples of 4, three distinct tiles.
 * `rule` selects the deliberately wrong forms the self-check's tests inject.
 */
static void emu_dot(int c, int a, int b, dot_rule rule) {
    if (!usable(c) || !usable(a) || !usable(b) || c == a || c == b || a == b) {
        fault();
        return;
    }
    const int rows = emu.cfg.rows[c], n_cols = emu.cfg.colsb[c] / 4, k_words = emu.cfg.colsb[a] / 4;
    if (emu.cfg.colsb[c] % 4 || emu.cfg.colsb[a] % 4 || emu.cfg.colsb[b] % 4 || emu.cfg.rows[a] != rows ||
        emu.cfg.rows[b] != k_words || emu.cfg.colsb[b] != emu.cfg.colsb[c]) {
        fault();
        return;
    }
    for (int m = 0; m < rows; m++) {
        for (int n = 0; n < n_cols; n++) {
            uint32_t acc;
            memcpy(&acc, &emu.t[c][m][4 * n], sizeof acc);
            for (int k = 0; k < k_words; k++) {
                int32_t p[4];
                for (int i = 0; i < 4; i++) {
                    const uint8_t ab = emu.t[a][m][4 * k + i];
                    const int32_t av = rule == DOT_A_UNSIGNED ? (int32_t)ab : (int32_t)(int8_t)ab;
                    p[i] = av * (int32_t)(int8_t)emu.t[b][k][4 * n + i];
                }
                if (rule == DOT_PAIRS_SATURATED) acc += (uint32_t)(sat16(p[0] + p[1]) + sat16(p[2] + p[3]));
                else acc += (uint32_t)p[0] + (uint32_t)p[1] + (uint32_t)p[2] + (uint32_t)p[3];
            }
            memcpy(&emu.t[c][m][4 * n], &acc, sizeof acc);
        }
    }
    zero_outside(c);
}

static void emu_dpbssd(int s) {
    emu_dot(s, 2 + s, 4 + s, DOT_SIGNED);
}

static void emu_dpbssd_unsigned(int s) {
    emu_dot(s, 2 + s, 4 + s, DOT_A_UNSIGNED);
}

static void emu_dpbssd_saturating(int s) {
    emu_dot(s, 2 + s, 4 + s, DOT_PAIRS_SATURATED);
}

const runner_amx_isa runner_amx_isa_emulated = {"emulated", emu_loadconfig, emu_release, emu_zero, emu_load, emu_store, emu_dpbssd};
const runner_amx_isa runner_amx_isa_emulated_unsigned = {"emulated-unsigned", emu_loadconfig, emu_release, emu_zero, emu_load, emu_store,
                                                         emu_dpbssd_unsigned};
const runner_amx_isa runner_amx_isa_emulated_saturating = {"emulated-saturating", emu_loadconfig, emu_release, emu_zero, emu_load, emu_store,
                                                           emu_dpbssd_saturating};
