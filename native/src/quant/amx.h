/*
 * amx.h: AMX-INT8 tiles for the prompt matmuls of Q8_0 and Q4_0 weights (docs/kernels.md, "AMX").
 *
 * One call computes 16 weight rows x 16 tokens, every result bitwise what vec_dot gives: per block
 * of 32 values one TDPBSSD forms the 256 exact int32 block sums, and the epilogue applies the
 * canonical per-lane sequence to each (acc[b % 16] = fmaf((float)isum_b, d_x*d_y, acc[b % 16]),
 * then the tree over 16 lanes). Roles: the tokens are A (16 Q8_0 activation rows, 32 bytes of
 * block b each, loaded in place with the scratch's row stride), the weights are B (repacked once per
 * 16 rows into the VNNI layout B[k][4n + i] = value 4k + i of row n, Q4_0 nibbles minus 8 as int8),
 * so the repack is paid once per row chunk and shared by all of a prompt's token tiles.
 *
 * The tile instructions are reached through runner_amx_isa, a table of six operations with two
 * implementations: the hardware's (amx_hw_amx.c, intrinsics, built only where the compiler has
 * -mamx-tile -mamx-int8) and a scalar emulation of exactly those instructions' semantics
 * (amx_emul.c), so the whole algorithm runs and is tested on any AVX-512 CPU. The driver
 * (amx_avx512.c: repack, tile loop, epilogue) is the same code for both.
 *
 * The process decides once (runner_amx_state_get, runner.h) whether prompt matmuls use AMX: only
 * when the CPU (capped by RUNNER_CPU_MAX) has AMX-TILE and AMX-INT8, the OS granted the tile state
 * (Linux arch_prctl), and a built-in self-check on a fixed problem gave bitwise the vec_dot results.
 * RUNNER_AMX=off keeps it off; RUNNER_AMX=emulate runs the emulation instead (for tests only: it is
 * far slower than the VNNI kernels).
 */
#ifndef RUNNER_QUANT_AMX_H
#define RUNNER_QUANT_AMX_H

#include <stddef.h>
#include <stdint.h>

#include "runner.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RUNNER_AMX_ROWS 16   /* weight rows per call */
#define RUNNER_AMX_TOKENS 16 /* tokens per call */

/* The 64-byte memory operand of LDTILECFG (Intel SDM vol. 2, LDTILECFG), palette 1: 8 tiles. */
typedef struct runner_amx_tilecfg {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16]; /* bytes per row of tile i */
    uint8_t rows[16];   /* rows of tile i */
} runner_amx_tilecfg;

/*
 * The tile instructions the driver uses. Tiles are named by register number (0..7); the driver's
 * plan is two sets s = 0, 1 of C = tmm s (16 x 16 int32), A = tmm 2+s (16 x 32 bytes) and
 * B = tmm 4+s (8 x 64 bytes), alternated between blocks so one block's store can overlap the next
 * block's loads and dot product.
 */
typedef struct runner_amx_isa {
    const char *name;
    void (*loadconfig)(const runner_amx_tilecfg *cfg);    /* LDTILECFG */
    void (*release)(void);                                /* TILERELEASE */
    void (*zero)(int t);                                  /* TILEZERO tmm t */
    void (*load)(int t, const void *base, size_t stride); /* TILELOADD tmm t, [base + stride * row] */
    void (*store)(int t, void *base, size_t stride);      /* TILESTORED [base + stride * row], tmm t */
    void (*dpbssd)(int s);                                /* TDPBSSD tmm s, tmm 2+s, tmm 4+s (s = 0, 1) */
} runner_amx_isa;

/* amx_emul.c: the instructions' semantics in C (state per thread, as the hardware's). */
extern const runner_amx_isa runner_amx_isa_emulated;
/* Deliberately wrong emulations, for the self-check's tests: A read as unsigned bytes (TDPBUSD's
 * rule), and each pair of products saturated to int16 (wrong only for extreme inputs). */
extern const runner_amx_isa runner_amx_isa_emulated_unsigned;
extern const runner_amx_isa runner_amx_isa_emulated_saturating;
/* How many emulated instructions on this thread had operands the hardware faults on (an invalid
 * configuration, an unconfigured tile, mismatched shapes); each did nothing. */
uint64_t runner_amx_emulated_faults(void);

/* amx_hw_amx.c (only where RUNNER_HAVE_AMX): the intrinsics, and Linux's permission request. */
extern const runner_amx_isa runner_amx_isa_hardware;
/* 1 when the kernel granted this process the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA), else 0; other systems: 0. Idempotent. */
int runner_amx_request_permission(void);

/* amx_avx512.c (x86-64 builds): the driver. Workspace bytes per thread for rows of n values. */
size_t runner_amx_workspace_bytes_avx512(int64_t n);
/* RUNNER_AMX_ROWS weight rows x + r*bx of n values into ws: int8 values in the B layout, scales as floats. */
void runner_amx_pack_q8_0_avx512(int64_t n, const void *x, size_t bx, void *ws);
void runner_amx_pack_q4_0_avx512(int64_t n, const void *x, size_t bx, void *ws);
/* The packed rows against RUNNER_AMX_TOKENS Q8_0 rows y + c*by: out[c*ldo + r] = dot(row r, token c). */
void runner_amx_tile_avx512(const runner_amx_isa *isa, int64_t n, void *ws, const void *y, size_t by, float *out, size_t ldo);

/* ---- amx.c: what the engine calls --------------------------------------------------------------- */

typedef void (*runner_amx_pack_fn)(int64_t n, const void *x, size_t bx, void *ws);

/* The ISA the prompt matmuls use in this process (the hardware's, or the emulation under
 * RUNNER_AMX=emulate), or NULL when AMX is not in use (runner_amx_state_get says why). */
const runner_amx_isa *runner_amx_isa_in_use(void);
/* The packer of a weight type with an AMX tile in this build (Q8_0, Q4_0), else NULL. */
runner_amx_pack_fn runner_amx_pack_for(int32_t type);
/* Per-thread workspace bytes for rows of n values (a multiple of 64; 0 in builds without the driver). */
size_t runner_amx_workspace_bytes(int64_t n);
/* One call of the driver (counted by runner_amx_tiles). ws: 64-byte aligned, packed by the type's packer. */
void runner_amx_tile(const runner_amx_isa *isa, int64_t n, void *ws, const void *y, size_t by, float *out, size_t ldo);
/* 1 when `isa` gives, on a fixed problem (16 rows x 16 tokens x 640 values of Q8_0 and of Q4_0
 * with extreme quants and scales of every sign and size), bitwise the results of the scalar
 * vec_dot and of the variant `cpu` picks; else 0. Needs the driver's CPU features (AVX-512). */
int runner_amx_selfcheck(const runner_amx_isa *isa, runner_cpu_mask cpu);
/* For the test hooks: "emulated", "emulated-unsigned", "emulated-saturating", or "hardware" (only
 * once the process has the permission and the CPU has AMX-INT8: anything else would fault). NULL
 * otherwise. */
const runner_amx_isa *runner_amx_isa_named(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* RUNNER_QUANT_AMX_H */
