/*
 * The AMX instructions of runner_amx_isa on the hardware (compiled with -mamx-tile -mamx-int8, only
 * where the compiler has them: native/CMakeLists.txt), and Linux's permission request. Nothing here
 * runs unless amx.c found AMX-TILE and AMX-INT8 in the CPU mask and the kernel granted the tile
 * state; the self-check then holds these against the vec_dot kernels before any matmul uses them.
 *
 * The intrinsics take tile numbers as immediates, hence the switches. The compiler barriers keep
 * the buffers a tile instruction reads or writes ordered with it: GCC's intrinsics are asm
 * statements that do not declare the memory they touch.
 */
#include <immintrin.h>

#include "quant/amx.h"

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

#define BARRIER() __asm__ __volatile__("" ::: "memory")

int runner_amx_request_permission(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    /* Linux 5.16+ keeps the 8 KiB tile state out of every thread's signal frame until a process
     * asks for it; the first tile instruction without the permission would end with SIGILL. */
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return 0;
    unsigned long granted = 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &granted) != 0) return 0;
    return (int)((granted >> XFEATURE_XTILEDATA) & 1u);
#else
    return 0; /* no request mechanism this file knows: leave AMX off */
#endif
}

static void hw_loadconfig(const runner_amx_tilecfg *cfg) {
    BARRIER();
    _tile_loadconfig(cfg);
}

static void hw_release(void) {
    _tile_release();
}

#define TILE_SWITCH(t, OP)     \
    switch (t) {               \
    case 0: OP(0); break;      \
    case 1: OP(1); break;      \
    case 2: OP(2); break;      \
    case 3: OP(3); break;      \
    case 4: OP(4); break;      \
    case 5: OP(5); break;      \
    case 6: OP(6); break;      \
    case 7: OP(7); break;      \
    default: break;            \
    }

static void hw_zero(int t) {
#define ZERO(N) _tile_zero(N)
    TILE_SWITCH(t, ZERO)
#undef ZERO
}

static void hw_load(int t, const void *base, size_t stride) {
    BARRIER();
#define LOAD(N) _tile_loadd(N, base, (long)stride)
    TILE_SWITCH(t, LOAD)
#undef LOAD
}

static void hw_store(int t, void *base, size_t stride) {
#define STORE(N) _tile_stored(N, base, (long)stride)
    TILE_SWITCH(t, STORE)
#undef STORE
    BARRIER();
}

static void hw_dpbssd(int s) {
    if (s == 0) _tile_dpbssd(0, 2, 4);
    else if (s == 1) _tile_dpbssd(1, 3, 5);
}

const runner_amx_isa runner_amx_isa_hardware = {"hardware", hw_loadconfig, hw_release, hw_zero, hw_load, hw_store, hw_dpbssd};
