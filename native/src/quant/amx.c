/*
 * Whether this process uses AMX for prompt matmuls, decided once (runner.h runner_amx_state), the
 * self-check that decision rests on, and the entry points the matmul calls (amx.h).
 *
 * The decision, in order (the first that applies):
 *   RUNNER_AMX=emulate           emulated (if the self-check passes on the emulation), or absent
 *                                where the driver cannot run (no AVX-512 F/BW/VL, or capped)
 *   no AMX-TILE + AMX-INT8       absent (RUNNER_CPU_MAX=avx2 or scalar removes them too)
 *   RUNNER_AMX=off (or unknown)  off
 *   no AMX code in this build    not-built
 *   arch_prctl refused           permission-denied
 *   self-check differs           selfcheck-failed
 *   otherwise                    active
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cpu_cap.h"
#include "quant/amx.h"
#include "quant/quant_impl.h"

#if defined(RUNNER_NO_X86_VARIANTS) || !(defined(__x86_64__) || defined(_M_X64))
#define HAVE_DRIVER 0
#define X86(fn) NULL
#else
#define HAVE_DRIVER 1
#define X86(fn) fn
#endif
#if HAVE_DRIVER && defined(RUNNER_HAVE_AMX)
#define HAVE_HARDWARE 1
#else
#define HAVE_HARDWARE 0
#endif

#define BIT(f) ((runner_cpu_mask)1 << (unsigned)(f))
/* What amx_avx512.c is compiled for (type_table.c's NEEDS_AVX512), and what the tiles need on top. */
#define NEEDS_DRIVER                                                                                      \
    (BIT(RUNNER_CPU_AVX2) | BIT(RUNNER_CPU_FMA) | BIT(RUNNER_CPU_F16C) | BIT(RUNNER_CPU_AVX512F) | BIT(RUNNER_CPU_AVX512BW) | \
     BIT(RUNNER_CPU_AVX512VL))
#define NEEDS_HARDWARE (NEEDS_DRIVER | BIT(RUNNER_CPU_AMX) | BIT(RUNNER_CPU_AMX_INT8))

static int has_all(runner_cpu_mask cpu, runner_cpu_mask needs) {
    return (cpu & needs) == needs;
}

/* ---- the driver's entry points ------------------------------------------------------------------ */

static const struct {
    int32_t type;
    runner_amx_pack_fn pack;
} packers[] = {
    {RUNNER_TYPE_Q8_0, X86(runner_amx_pack_q8_0_avx512)},
    {RUNNER_TYPE_Q4_0, X86(runner_amx_pack_q4_0_avx512)},
};

runner_amx_pack_fn runner_amx_pack_for(int32_t type) {
    for (size_t i = 0; i < sizeof packers / sizeof packers[0]; i++)
        if (packers[i].type == type) return packers[i].pack;
    return NULL;
}

size_t runner_amx_workspace_bytes(int64_t n) {
#if HAVE_DRIVER
    return runner_amx_workspace_bytes_avx512(n);
#else
    (void)n;
    return 0;
#endif
}

static _Atomic uint64_t tiles_done;

uint64_t runner_amx_tiles(void) {
    return atomic_load_explicit(&tiles_done, memory_order_relaxed);
}

void runner_amx_tile(const runner_amx_isa *isa, int64_t n, void *ws, const void *y, size_t by, float *out, size_t ldo) {
#if HAVE_DRIVER
    runner_amx_tile_avx512(isa, n, ws, y, by, out, ldo);
    atomic_fetch_add_explicit(&tiles_done, 1, memory_order_relaxed);
#else
    (void)isa, (void)n, (void)ws, (void)y, (void)by, (void)out, (void)ldo;
#endif
}

/* ---- the self-check ----------------------------------------------------------------------------- */

#define CHECK_BLOCKS 20 /* 640 values: lanes wrap (b % 16) and four of them get a second block */

static uint64_t next_u64(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Any finite half: every sign, subnormals, zeros and scales up to 65504 (NaN payloads are not part
 * of the kernels' contract, so no NaN or infinity). */
static uint16_t finite_half(uint64_t *s) {
    const uint16_t h = (uint16_t)next_u64(s);
    return (h & 0x7c00) == 0x7c00 ? (uint16_t)(h & 0xbfff) : h;
}

/* The quant byte j of row (or token) i: rows 0-2 extreme (all lowest, all highest, alternating),
 * the rest random. `lo`/`hi` are the type's extreme bytes (Q8_0 0x80/0x7f, Q4_0 0x00/0xff). */
static uint8_t quant_byte(int i, int j, uint8_t lo, uint8_t hi, uint64_t *s) {
    if (i == 0) return lo;
    if (i == 1) return hi;
    if (i == 2) return j % 2 ? lo : hi;
    return (uint8_t)next_u64(s);
}

static void fill_blocks(uint8_t *rows, size_t stride, size_t block_bytes, uint8_t lo, uint8_t hi, uint64_t *s) {
    for (int i = 0; i < 16; i++) {
        for (int b = 0; b < CHECK_BLOCKS; b++) {
            uint8_t *blk = rows + (size_t)i * stride + (size_t)b * block_bytes;
            wr_u16(blk, finite_half(s));
            for (size_t j = 2; j < block_bytes; j++) blk[j] = quant_byte(i, (int)j, lo, hi, s);
        }
    }
}

static int same_bits(float a, float b) {
    return f32_bits(a) == f32_bits(b);
}

static int check_type(const runner_amx_isa *isa, int32_t type, runner_cpu_mask cpu) {
    const runner_type_traits *t = runner_type_traits_get(type);
    const runner_amx_pack_fn pack = runner_amx_pack_for(type);
    if (!t || !pack) return 0;
    const int64_t n = CHECK_BLOCKS * QK;
    const size_t bx = CHECK_BLOCKS * t->type_size;
    const size_t by = CHECK_BLOCKS * Q8_0_BYTES + 6; /* rows apart by more than their bytes, unaligned */
    const size_t ws_bytes = runner_amx_workspace_bytes(n);
    uint8_t *x = malloc(16 * bx), *y = malloc(16 * by);
    void *ws = runner_alloc_array(1, ws_bytes);
    int ok = x && y && ws;
    if (ok) {
        uint64_t s = 0x9e3779b97f4a7c15u ^ (uint64_t)type;
        const int q8 = type == RUNNER_TYPE_Q8_0;
        memset(y, 0xa5, 16 * by); /* the bytes between rows: defined, never read */
        fill_blocks(x, bx, t->type_size, q8 ? 0x80 : 0x00, q8 ? 0x7f : 0xff, &s);
        fill_blocks(y, by, Q8_0_BYTES, 0x80, 0x7f, &s);
        float out[RUNNER_AMX_TOKENS * RUNNER_AMX_ROWS];
        const uint64_t faults = runner_amx_emulated_faults();
        pack(n, x, bx, ws);
        runner_amx_tile_avx512(isa, n, ws, y, by, out, RUNNER_AMX_ROWS);
        ok = runner_amx_emulated_faults() == faults;
        const runner_kernel_variant picked = runner_kernel_pick_vec_dot(t, cpu);
        for (int c = 0; c < RUNNER_AMX_TOKENS && ok; c++) {
            for (int r = 0; r < RUNNER_AMX_ROWS && ok; r++) {
                float ref = 0.0f, fast = 0.0f;
                t->vec_dot[RUNNER_KERNEL_SCALAR](n, &ref, x + r * bx, y + c * by);
                t->vec_dot[picked](n, &fast, x + r * bx, y + c * by);
                const float got = out[c * RUNNER_AMX_ROWS + r];
                ok = same_bits(got, ref) && same_bits(got, fast);
            }
        }
    }
    free(x);
    free(y);
    free(ws);
    return ok;
}

int runner_amx_selfcheck(const runner_amx_isa *isa, runner_cpu_mask cpu) {
    if (!isa || !HAVE_DRIVER || !has_all(cpu, NEEDS_DRIVER)) return 0;
    return check_type(isa, RUNNER_TYPE_Q8_0, cpu) && check_type(isa, RUNNER_TYPE_Q4_0, cpu);
}

/* ---- the process's decision --------------------------------------------------------------------- */

static pthread_once_t decided = PTHREAD_ONCE_INIT;
static runner_amx_state state = RUNNER_AMX_ABSENT;
static const runner_amx_isa *in_use;
static int permission; /* the OS granted the tile state: the hardware ISA may run (test hooks) */

static void decide(void) {
    const runner_cpu_mask cpu = runner_cpu_features_capped();
    const char *mode = getenv("RUNNER_AMX");
    const int emulate = mode && strcmp(mode, "emulate") == 0;
    const int automatic = !mode || !*mode || strcmp(mode, "auto") == 0;
    if (emulate) {
        if (!HAVE_DRIVER || !has_all(cpu, NEEDS_DRIVER)) return; /* absent: the driver cannot run here */
        const int ok = runner_amx_selfcheck(&runner_amx_isa_emulated, cpu);
        state = ok ? RUNNER_AMX_EMULATED : RUNNER_AMX_SELFCHECK_FAILED;
        in_use = ok ? &runner_amx_isa_emulated : NULL;
        return;
    }
    if (!has_all(cpu, NEEDS_HARDWARE)) return;
    if (!automatic) {
        state = RUNNER_AMX_OFF;
        return;
    }
#if HAVE_HARDWARE
    permission = runner_amx_request_permission();
    if (!permission) {
        state = RUNNER_AMX_PERMISSION_DENIED;
        return;
    }
    const int ok = runner_amx_selfcheck(&runner_amx_isa_hardware, cpu);
    state = ok ? RUNNER_AMX_ACTIVE : RUNNER_AMX_SELFCHECK_FAILED;
    in_use = ok ? &runner_amx_isa_hardware : NULL;
#else
    state = RUNNER_AMX_NOT_BUILT;
#endif
}

runner_amx_state runner_amx_state_get(void) {
    pthread_once(&decided, decide);
    return state;
}

const runner_amx_isa *runner_amx_isa_in_use(void) {
    pthread_once(&decided, decide);
    return in_use;
}

static const char *const state_names[RUNNER_AMX_STATE_COUNT] = {
    [RUNNER_AMX_ABSENT] = "absent",
    [RUNNER_AMX_OFF] = "off",
    [RUNNER_AMX_NOT_BUILT] = "not-built",
    [RUNNER_AMX_PERMISSION_DENIED] = "permission-denied",
    [RUNNER_AMX_SELFCHECK_FAILED] = "selfcheck-failed",
    [RUNNER_AMX_ACTIVE] = "active",
    [RUNNER_AMX_EMULATED] = "emulated",
};

const char *runner_amx_state_name(int s) {
    return s < 0 || s >= RUNNER_AMX_STATE_COUNT ? NULL : state_names[s];
}

const runner_amx_isa *runner_amx_isa_named(const char *name) {
    pthread_once(&decided, decide);
    if (!name || !HAVE_DRIVER || !has_all(runner_cpu_features(), NEEDS_DRIVER)) return NULL;
    static const runner_amx_isa *const emulations[] = {&runner_amx_isa_emulated, &runner_amx_isa_emulated_unsigned,
                                                       &runner_amx_isa_emulated_saturating};
    for (size_t i = 0; i < sizeof emulations / sizeof emulations[0]; i++)
        if (strcmp(name, emulations[i]->name) == 0) return emulations[i];
#if HAVE_HARDWARE
    if (strcmp(name, runner_amx_isa_hardware.name) == 0 && permission && has_all(runner_cpu_features(), NEEDS_HARDWARE))
        return &runner_amx_isa_hardware;
#endif
    return NULL;
}
