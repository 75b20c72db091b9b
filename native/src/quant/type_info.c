/*
 * The weight-type table as data for the public API (runner.h, "weight types"): what each type is,
 * which kernel variants this build has and this CPU runs, and row conversion through the scalar
 * references. The kernels themselves stay internal (quant/quant.h).
 */
#include <string.h>

#include "core/status.h"
#include "quant/quant.h"

static void fill_info(const runner_type_traits *t, runner_type_info *out) {
    const runner_cpu_mask cpu = runner_cpu_features();
    memset(out, 0, sizeof *out);
    out->type = t->type;
    out->name = t->name;
    out->block_size = t->block_size;
    out->type_size = (uint64_t)t->type_size;
    out->vec_dot_type = t->vec_dot_type;
    out->has_quantize_ref = t->from_float_ref != NULL;
    for (int v = 0; v < RUNNER_KERNEL_COUNT; v++) {
        const runner_kernel_variant kv = (runner_kernel_variant)v;
        const int dot = runner_kernel_vec_dot_usable(t, kv, cpu);
        /* vec_dot2 and the tiles need what vec_dot of the same variant needs */
        if (dot) out->vec_dot_variants |= 1u << v;
        if (dot && t->vec_dot2[v]) out->vec_dot2_variants |= 1u << v;
        if (dot && t->vec_dot_tile[v]) out->vec_dot_tile_variants |= 1u << v;
        if (runner_kernel_from_float_usable(t, kv, cpu)) out->from_float_variants |= 1u << v;
        out->tile_rows[v] = t->tile_rows[v];
        out->tile_cols[v] = t->tile_cols[v];
    }
    const runner_kernel_variant vd = runner_kernel_pick_vec_dot(t, cpu), ff = runner_kernel_pick_from_float(t, cpu);
    out->picked_vec_dot = t->vec_dot[vd] ? (int32_t)vd : -1;
    out->picked_from_float = t->from_float[ff] ? (int32_t)ff : -1;
}

int32_t runner_type_count(void) {
    int32_t count = 0;
    runner_type_traits_all(&count);
    return count;
}

runner_status runner_type_info_at(int32_t index, runner_type_info *out) {
    int32_t count = 0;
    const runner_type_traits *const *all = runner_type_traits_all(&count);
    if (index < 0 || index >= count) return RUNNER_ERR_INVALID_ARGUMENT;
    fill_info(all[index], out);
    return RUNNER_OK;
}

runner_status runner_type_info_of(int32_t type, runner_type_info *out) {
    const runner_type_traits *t = runner_type_traits_get(type);
    if (!t) return RUNNER_ERR_UNSUPPORTED;
    fill_info(t, out);
    return RUNNER_OK;
}

int runner_type_row_size(int32_t type, int64_t n, uint64_t *bytes) {
    const runner_type_traits *t = runner_type_traits_get(type);
    if (!t) return -3;
    size_t b = 0;
    const int rc = runner_type_row_bytes(t, n, &b);
    if (rc == 0) *bytes = (uint64_t)b;
    return rc;
}

/* The type, and n values of it taking exactly `bytes`; else a message naming what is wrong. */
static runner_status check_row(const runner_type_traits *t, int32_t type, int64_t n, uint64_t bytes, const char *fn, char *err,
                               int32_t err_len) {
    if (!t) return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "%s: type %d is not a type the engine implements", fn, type);
    size_t want = 0;
    if (runner_type_row_bytes(t, n, &want) != 0)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "%s: n = %lld is not a non-negative multiple of %s's block size %lld", fn,
                           (long long)n, t->name, (long long)t->block_size);
    if ((uint64_t)want != bytes)
        return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "%s: %llu bytes given; %lld values of %s take %zu", fn,
                           (unsigned long long)bytes, (long long)n, t->name, want);
    return RUNNER_OK;
}

runner_status runner_quantize_row_ref(int32_t type, const float *x, int64_t n, void *out, uint64_t out_bytes, char *err,
                                      int32_t err_len) {
    const runner_type_traits *t = runner_type_traits_get(type);
    runner_status st = check_row(t, type, n, out_bytes, "quantize", err, err_len);
    if (st != RUNNER_OK) return st;
    if (!t->from_float_ref) return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "quantize: %s has no weight quantizer", t->name);
    if (n > 0) t->from_float_ref(x, out, n);
    return RUNNER_OK;
}

runner_status runner_dequantize_row(int32_t type, const void *x, uint64_t x_bytes, int64_t n, float *out, char *err,
                                    int32_t err_len) {
    const runner_type_traits *t = runner_type_traits_get(type);
    runner_status st = check_row(t, type, n, x_bytes, "dequantize", err, err_len);
    if (st != RUNNER_OK) return st;
    if (n > 0) t->to_float(x, out, n);
    return RUNNER_OK;
}
