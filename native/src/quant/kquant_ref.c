/*
 * The helpers of ggml-quants.c that the K-quant reference quantizers share (make_qx_quants,
 * make_q3_quants, make_qkx2_quants), rewritten from reading them: the same float operations in the
 * same order (C's left-to-right evaluation of `w*x*l` included), built with -ffp-contract=off as
 * ggml's baseline x86-64 build is without FMA, so the bytes written are ggml's
 * (test/native/kquant-ggml.test.ts checks them against libggml-base itself).
 * No importance matrix: llama.cpp's quantize without --imatrix calls the *_ref quantizers.
 */
#include "quant/kquant.h"

#define GROUP_MAX_EPS 1e-15f
#define KMAX(a, b) ((a) > (b) ? (a) : (b))
#define KMIN(a, b) ((a) < (b) ? (a) : (b))

/* The value of largest magnitude (the first one on ties), and that magnitude in *amax. */
static float signed_absmax(int n, const float *x, float *amax) {
    float max = 0;
    *amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > *amax) {
            *amax = ax;
            max = x[i];
        }
    }
    return max;
}

/* make_qx_quants with no weights (qw NULL): rmse_type 1 weighs by x^2. */
float runner_k_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type) {
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = -nmax / max;
    if (rmse_type == 0) {
        for (int i = 0; i < n; ++i) {
            const int l = k_nearest_int(iscale * x[i]);
            L[i] = (int8_t)(nmax + KMAX(-nmax, KMIN(nmax - 1, l)));
        }
        return 1 / iscale;
    }
    int return_early = 0;
    if (rmse_type < 0) {
        rmse_type = -rmse_type;
        return_early = 1;
    }
#define QX_W(i) (rmse_type == 1 ? x[i] * x[i] : rmse_type == 2 ? 1 : rmse_type == 3 ? fabsf(x[i]) : sqrtf(fabsf(x[i])))
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = k_nearest_int(iscale * x[i]);
        l = KMAX(-nmax, KMIN(nmax - 1, l));
        L[i] = (int8_t)(l + nmax);
        const float w = QX_W(i);
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            int l = k_nearest_int(iscale * x[i]);
            l = KMAX(-nmax, KMIN(nmax - 1, l));
            const float w = QX_W(i);
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) {
                const int l = k_nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + KMAX(-nmax, KMIN(nmax - 1, l)));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
#undef QX_W
    return scale;
}

/* make_q3_quants with do_rmse = true (the only way quantize_row_q3_K_ref calls it). */
float runner_k_make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = signed_absmax(n, x, &amax);
    if (amax < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    const float iscale = -nmax / max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = k_nearest_int(iscale * x[i]);
        l = KMAX(-nmax, KMIN(nmax - 1, l));
        L[i] = (int8_t)l;
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                int new_l = k_nearest_int(x[i] * sl2 / slx);
                new_l = KMAX(-nmax, KMIN(nmax - 1, new_l));
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float runner_k_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min, uint8_t *Laux,
                                float rmin, float rdelta, int nstep, int use_mad) {
    float min = x[0];
    float max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = k_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)KMAX(0, KMIN(nmax, l));
        float diff = scale * L[i] + min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        const float w = weights[i];
        best_error += w * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = k_nearest_int(iscale * (x[i] - min));
            l = KMAX(0, KMIN(nmax, l));
            Laux[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = use_mad ? fabsf(diff) : diff * diff;
                const float w = weights[i];
                cur_error += w * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}
